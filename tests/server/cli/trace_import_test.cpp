// Importing traces other tools wrote: an ONNX Runtime profile (one written by hand in the format
// onnxruntime's profiler writes, one recorded by onnxruntime; see tests/fixtures/onnxruntime/)
// becomes a run with its nodes' operator events and its model runs' inference events on the wall
// clock; a PyTorch profiler trace (recorded, tests/fixtures/pytorch/) becomes kernels and copies
// with their launch calls and top-level operators. Malformed files are refused whole, naming the
// event and field.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "engine/events/events.hpp"
#include "server/cli/trace_import.hpp"

namespace perfscope::server {
namespace {

using nlohmann::json;

json read_fixture(const std::string& path) {
  std::ifstream in(std::string(PERFSCOPE_FIXTURES) + "/" + path);
  std::stringstream s;
  s << in.rdbuf();
  return json::parse(s.str());
}

json fixture() { return read_fixture("onnxruntime/handwritten_profile.json"); }

std::vector<json> of_type(const TraceImport& r, const std::string& type) {
  std::vector<json> out;
  for (const json& e : r.events) {
    if (e["type"] == type) out.push_back(e);
  }
  return out;
}

TEST(TraceImport, OnnxRuntimeProfileBecomesARunOfOperatorsAndInferences) {
  const json doc = fixture();
  EXPECT_EQ(detect_trace_format(doc), "onnxruntime");
  EXPECT_EQ(detect_trace_format(json::object({{"type", "kernel"}})), "");
  EXPECT_EQ(detect_trace_format(json::array({{{"ph", "X"}}})), "");
  const TimestampNs end = 1'800'000'000'000'000'000;
  auto r = import_onnxruntime_profile(doc, "resnet-profile", "resnet", end);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->operators, 4u);   // fences, loading and initialization are no executions
  EXPECT_EQ(r->inferences, 2u);
  ASSERT_EQ(r->events.size(), 7u);
  // The run spans the profile: its last event (the second model_run, 45800 + 500 µs) ends at `end`.
  const json& run = r->events[0];
  EXPECT_EQ(run["type"], "run");
  EXPECT_EQ(run["end_ns"], end);
  EXPECT_EQ(run["start_ns"], end - 46'300'000);
  const json& conv = r->events[1];
  EXPECT_EQ(conv["type"], "operator");
  EXPECT_EQ(conv["op_type"], "Conv");
  EXPECT_EQ(conv["name"], "/conv1/Conv");
  EXPECT_EQ(conv["provider"], "CUDAExecutionProvider");
  EXPECT_DOUBLE_EQ(conv["duration_ms"].get<double>(), 0.12);
  EXPECT_EQ(conv["input_shapes"], json::parse("[[1,3,224,224],[64,3,7,7]]"));
  EXPECT_EQ(conv["ts_ns"], end - (46'300 - 45'332) * 1000);  // completion: 45212 + 120 µs
  EXPECT_EQ(conv["model"], "resnet");
  EXPECT_EQ(conv["tags"], json({{"run", "resnet-profile"}}));
  const json& nonzero = r->events[3];
  EXPECT_EQ(nonzero["provider"], "CPUExecutionProvider");
  const json& model_run = r->events[4];
  EXPECT_EQ(model_run["type"], "inference");
  EXPECT_DOUBLE_EQ(model_run["latency_ms"].get<double>(), 0.6);
}

TEST(TraceImport, MalformedProfilesAreRefusedWholeNamingTheEvent) {
  auto refused = [](json doc, const std::string& field) {
    auto r = import_onnxruntime_profile(doc, "r", "m", 1'000'000'000'000);
    ASSERT_FALSE(r.ok()) << doc.dump();
    EXPECT_EQ(r.status().field(), field) << r.status().message();
  };
  json doc = fixture();
  doc[3]["dur"] = "fast";
  refused(doc, "events[3].dur");
  doc = fixture();
  doc[5]["args"].erase("op_name");
  refused(doc, "events[5].args.op_name");
  doc = fixture();
  doc[3]["args"]["input_type_shape"] = json::parse(R"([{"float":[1,"x"]}])");
  refused(doc, "events[3].args.input_type_shape");
  doc = fixture();
  doc[0]["ts"] = -1;
  refused(doc, "events[0].ts");
  doc = fixture();
  doc[0]["ts"] = 4.7e19;  // beyond any wall clock (nanoseconds would overflow)
  refused(doc, "events[0].ts");
  doc = fixture();
  doc[3]["name"] = "_kernel_time";  // no node name: the server would refuse the operator
  refused(doc, "events[3].name");
  doc = fixture();
  doc[3]["args"]["input_type_shape"] = json::parse(R"([{"float":[1,-3]}])");
  refused(doc, "events[3].args.input_type_shape");
  refused(json::array({{{"cat", "Session"}, {"name", "session_initialization"}, {"ts", 0}, {"dur", 5}}}), "file");
  refused(json::object(), "file");
}

TEST(TraceImport, RecordedOnnxRuntimeProfileIsRead) {
  const json doc = read_fixture("onnxruntime/recorded_profile.json");
  auto r = import_trace(doc, {"small-profile", "small", 1'800'000'000'000'000'000});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->format, "onnxruntime");
  std::size_t nodes = 0, runs = 0;
  for (const json& e : doc) {
    nodes += e["cat"] == "Node" && e["name"].get<std::string>().ends_with("_kernel_time");
    runs += e["cat"] == "Session" && e["name"] == "model_run";
  }
  EXPECT_EQ(r->operators, nodes);
  EXPECT_EQ(r->inferences, runs);
  EXPECT_GT(nodes, 0u);
  for (const json& op : of_type(*r, "operator")) {
    EXPECT_EQ(op["provider"], "CPUExecutionProvider");  // the onnxruntime it was recorded with had only the CPU provider
    EXPECT_FALSE(op["op_type"].get<std::string>().empty());
  }
}

// What a PyTorch profiler trace holds, read straight from the document for the checks below.
struct TorchTrace {
  std::map<std::int64_t, json> calls;  // correlation → cuda_runtime / cuda_driver event
  std::vector<json> work, ops;
  std::int64_t base = 0;
};

TorchTrace torch_trace(const json& doc) {
  TorchTrace t;
  t.base = doc["baseTimeNanoseconds"];
  for (const json& e : doc["traceEvents"]) {
    const std::string cat = e.value("cat", "");
    if (cat == "cuda_runtime" || cat == "cuda_driver") t.calls[e["args"]["correlation"]] = e;
    if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") t.work.push_back(e);
    if (cat == "cpu_op") t.ops.push_back(e);
  }
  return t;
}

TEST(TraceImport, PyTorchProfilerTraceBecomesKernelsWithLaunchCallsAndOperators) {
  const json doc = read_fixture("pytorch/recorded_trace.json");
  EXPECT_EQ(detect_trace_format(doc), "pytorch");
  const TorchTrace t = torch_trace(doc);
  auto r = import_trace(doc, {"torch-run", "mlp", 0});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->format, "pytorch");
  const auto ns = [&](double us) { return t.base + static_cast<std::int64_t>(std::llround(us * 1000)); };

  // Every GPU activity is a kernel event on the wall clock, with the launch call of its correlation.
  const std::vector<json> kernels = of_type(*r, "kernel");
  ASSERT_EQ(kernels.size(), t.work.size());
  EXPECT_EQ(r->kernels + r->copies, t.work.size());
  std::size_t with_launch = 0;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const json& src = t.work[i];
    const json& k = kernels[i];
    EXPECT_EQ(k["name"], src["name"]);
    EXPECT_EQ(k["start_ns"], ns(src["ts"]));
    EXPECT_EQ(k["end_ns"], ns(src["ts"].get<double>() + src["dur"].get<double>()));
    EXPECT_EQ(k["stream"], std::to_string(src["args"]["stream"].get<int>()));
    EXPECT_EQ(k["tags"]["run"], "torch-run");
    auto call = t.calls.find(src["args"]["correlation"]);
    if (call != t.calls.end()) {
      ++with_launch;
      EXPECT_EQ(k["launch_start_ns"], ns(call->second["ts"]));
      EXPECT_EQ(k["tags"]["pid"], std::to_string(call->second["pid"].get<int>()));
    } else {
      EXPECT_FALSE(k.contains("launch_start_ns"));
    }
    if (src["cat"] == "kernel") {
      EXPECT_EQ(k["grid"], src["args"]["grid"]);
      EXPECT_EQ(k["block"], src["args"]["block"]);
      EXPECT_EQ(k["registers_per_thread"], src["args"]["registers per thread"]);
      EXPECT_EQ(k["shared_mem_bytes"], src["args"]["shared memory"]);
    } else {
      EXPECT_EQ(k["tags"]["op"], src["cat"] == "gpu_memset" ? "memset" : "memcpy");
      EXPECT_EQ(k["tags"]["bytes"], std::to_string(src["args"]["bytes"].get<std::uint64_t>()));
    }
  }
  EXPECT_EQ(r->with_launch, with_launch);
  EXPECT_GT(with_launch, 0u);

  // Operators: the ops no other op of their thread encloses, each once.
  std::size_t top_level = 0;
  for (const json& op : t.ops) {
    const double ts = op["ts"], end = ts + op["dur"].get<double>();
    const bool nested = std::any_of(t.ops.begin(), t.ops.end(), [&](const json& other) {
      const double ots = other["ts"], oend = ots + other["dur"].get<double>();
      return &other != &op && other["tid"] == op["tid"] && ots <= ts && end <= oend && (ots < ts || oend > end);
    });
    top_level += !nested;
  }
  const std::vector<json> ops = of_type(*r, "operator");
  EXPECT_EQ(ops.size(), top_level);
  EXPECT_EQ(r->operators, top_level);
  std::map<std::string, std::set<std::string>> providers;
  for (const json& op : ops) {
    providers[op["op_type"]].insert(op["provider"]);
    EXPECT_EQ(op["model"], "mlp");
    EXPECT_NE(op["op_type"], "aten::addmm");  // nested in aten::linear
  }
  EXPECT_EQ(providers["aten::linear"], std::set<std::string>{"CUDA"});
  EXPECT_EQ(providers["aten::ones"], std::set<std::string>{"host"});  // a CPU tensor: no GPU work
  const json& first_linear = *std::find_if(ops.begin(), ops.end(), [](const json& o) { return o["op_type"] == "aten::linear"; });
  EXPECT_EQ(first_linear["input_shapes"], json::parse("[[8,256],[512,256],[512]]"));

  // The run spans the trace's events.
  const json& run = r->events[0];
  EXPECT_EQ(run["type"], "run");
  EXPECT_EQ(run["name"], "torch-run");
  EXPECT_LE(run["start_ns"].get<std::int64_t>(), kernels.front()["start_ns"].get<std::int64_t>());
}

// A matrix product's kernel gets its op's work: 2·M·N·K FLOPs, the dtype of its matrices and
// the least traffic (operands read once, result written once), worked out here from the shapes
// the fixture's README gives; kernels of other ops get none.
TEST(TraceImport, MatrixProductKernelsCarryTheirOpsWork) {
  const json doc = read_fixture("pytorch/matmul_flops_trace.json");
  auto r = import_trace(doc, {"mm-run", "mm", 0});
  ASSERT_TRUE(r.ok()) << r.status().message();
  struct Work {
    double flops, bytes;
    const char* dtype;
  };
  const std::map<std::string, Work> expected = {
      {"nvjet_sm90_tst_64x8_64x16_2x4_h_bz_NNT", {2.0 * 256 * 512 * 128, 2.0 * (256 * 512 + 512 * 128 + 256 * 128), "bf16"}},
      {"nvjet_sm90_hsh_64x8_64x16_1x4_h_bz_bias_TNT", {2.0 * 32 * 512 * 64, 2.0 * (64 + 32 * 512 + 512 * 64 + 32 * 64), "fp16"}},
      {"nvjet_sm90_tst_64x8_64x16_1x4_h_bz_NNT", {2.0 * 4 * 64 * 32 * 16, 2.0 * 4 * (64 * 32 + 32 * 16 + 64 * 16), "bf16"}}};
  std::map<std::string, int> seen;
  std::size_t without = 0;
  for (const json& k : of_type(*r, "kernel")) {
    auto it = expected.find(k["name"]);
    if (it == expected.end()) {
      EXPECT_FALSE(k.contains("flops")) << k;  // the random-number kernels: no matrix product
      ++without;
      continue;
    }
    ++seen[it->first];
    EXPECT_DOUBLE_EQ(k["flops"].get<double>(), it->second.flops) << k;
    EXPECT_DOUBLE_EQ(k["bytes"].get<double>(), it->second.bytes) << k;
    EXPECT_EQ(k["dtype"], it->second.dtype) << k;
    KernelEvent e;
    e.name = "k";
    e.flops = k["flops"].get<double>();
    e.dtype = k["dtype"];
    EXPECT_TRUE(validate(e).ok());
  }
  EXPECT_EQ(seen, (std::map<std::string, int>{{expected.begin()->first, 3}, {std::next(expected.begin())->first, 3},
                                              {std::prev(expected.end())->first, 3}}));
  EXPECT_EQ(without, 7u);
  EXPECT_EQ(r->with_work, 9u);
}

TEST(TraceImport, LongNamesAreClippedAsTracedOnesAre) {
  json doc = read_fixture("pytorch/recorded_trace.json");
  const std::size_t kernel = [&] {
    for (std::size_t i = 0;; ++i) {
      if (doc["traceEvents"][i].value("cat", "") == "kernel") return i;
    }
  }();
  // 2000 bytes of two-byte characters: cut at a character boundary, marked with "...".
  std::string name;
  for (int i = 0; i < 1000; ++i) name += "\u00e9";
  doc["traceEvents"][kernel]["name"] = name;
  auto r = import_trace(doc, {"r", "m", 0});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const json k = of_type(*r, "kernel").front();
  const std::string got = k["name"];
  EXPECT_LE(got.size(), kMaxEventText);
  EXPECT_TRUE(got.ends_with("...")) << got.size();
  EXPECT_EQ(got.substr(0, got.size() - 3), name.substr(0, got.size() - 3));
  EXPECT_EQ((got.size() - 3) % 2, 0u);  // whole characters
  EXPECT_NO_THROW((void)k.dump());      // valid UTF-8
}

TEST(TraceImport, PyTorchTraceWithoutBaseTimeEndsAtTheFilesTime) {
  json doc = read_fixture("pytorch/recorded_trace.json");
  doc.erase("baseTimeNanoseconds");
  const TimestampNs end = 1'800'000'000'000'000'000;
  auto r = import_trace(doc, {"r", "m", end});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->events[0]["end_ns"], end);
  for (const json& e : r->events) {
    if (e["type"] == "kernel") {
      EXPECT_LE(e["end_ns"].get<TimestampNs>(), end);
    }
  }
}

TEST(TraceImport, MalformedPyTorchTracesAreRefusedWholeNamingTheEvent) {
  const json good = read_fixture("pytorch/recorded_trace.json");
  const auto index_of = [&](const std::string& cat) {
    const json& list = good["traceEvents"];
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (list[i].value("cat", "") == cat) return i;
    }
    return list.size();
  };
  auto refused = [](const json& doc, const std::string& field) {
    auto r = import_trace(doc, {"r", "m", 1'000'000'000'000});
    ASSERT_FALSE(r.ok()) << field;
    EXPECT_EQ(r.status().field(), field) << r.status().message();
  };
  const std::size_t kernel = index_of("kernel"), op = index_of("cpu_op"), call = index_of("cuda_runtime");
  json doc = good;
  doc["traceEvents"][kernel]["args"].erase("correlation");
  refused(doc, "traceEvents[" + std::to_string(kernel) + "].args.correlation");
  doc = good;
  doc["traceEvents"][op]["dur"] = "long";
  refused(doc, "traceEvents[" + std::to_string(op) + "].dur");
  doc = good;
  doc["traceEvents"][call]["ts"] = -5;
  refused(doc, "traceEvents[" + std::to_string(call) + "].ts");
  doc = good;
  doc["traceEvents"][op]["args"]["Input Dims"] = "8x256";
  refused(doc, "traceEvents[" + std::to_string(op) + "].args.Input Dims");
  doc = good;
  doc["baseTimeNanoseconds"] = -1;
  refused(doc, "baseTimeNanoseconds");
  doc = good;
  doc["traceEvents"][kernel]["name"] = "";
  refused(doc, "traceEvents[" + std::to_string(kernel) + "].name");
  doc = good;
  doc["traceEvents"][kernel]["dur"] = 1e12;  // longer than a day
  refused(doc, "traceEvents[" + std::to_string(kernel) + "].dur");
  doc = good;
  doc["traceEvents"][kernel] = "kernel";
  refused(doc, "traceEvents[" + std::to_string(kernel) + "].event");
  // Only metadata and annotations: nothing this reads.
  refused(json{{"traceEvents", json::array({{{"ph", "M"}, {"name", "process_name"}}, {{"cat", "user_annotation"}, {"ts", 1}, {"dur", 2}}})}},
          "file");
  refused(json{{"traceEvents", 5}}, "file");
}

}  // namespace
}  // namespace perfscope::server
