// Importing traces other tools wrote: an ONNX Runtime profile (written by hand in the format
// onnxruntime's profiler writes; see tests/fixtures/onnxruntime/) becomes a run with its nodes'
// operator events and its model runs' inference events on the wall clock; malformed files are
// refused whole, naming the event and field.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "server/cli/trace_import.hpp"

namespace perfscope::server {
namespace {

using nlohmann::json;

json fixture() {
  std::ifstream in(std::string(PERFSCOPE_FIXTURES) + "/onnxruntime/handwritten_profile.json");
  std::stringstream s;
  s << in.rdbuf();
  return json::parse(s.str());
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
  refused(json::array({{{"cat", "Session"}, {"name", "session_initialization"}, {"ts", 0}, {"dur", 5}}}), "file");
  refused(json::object(), "file");
}

}  // namespace
}  // namespace perfscope::server
