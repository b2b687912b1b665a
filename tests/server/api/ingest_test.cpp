// Event ingest over HTTP against the real server, and the views that read it back.
#include <gtest/gtest.h>

#include "engine/base/clock.hpp"
#include "server/http/compression.hpp"
#include "support/live_server.hpp"

namespace perfscope::server {
namespace {

using namespace perfscope::testing;

class IngestTest : public ServerTest {
 protected:
  Reply post(const std::string& body, const std::string& type = "application/json",
             std::map<std::string, std::string> headers = {}) {
    headers["Content-Type"] = type;
    return request(http::verb::post, "/api/v1/events", std::move(headers), body);
  }
  // Rows per event table, as the API's own view sees them.
  json counts() {
    json k = get("/api/v1/kernels").body_json();
    json m = get("/api/v1/memory").body_json();
    json i = get("/api/v1/inference").body_json();
    std::uint64_t kernels = 0, requests = 0;
    for (const json& row : k["kernels"]) kernels += row["count"].get<std::uint64_t>();
    for (const json& row : i["models"]) requests += row["requests"].get<std::uint64_t>();
    return {{"kernels", kernels}, {"allocations", m["allocation_count"]}, {"requests", requests}};
  }
};

TEST_F(IngestTest, JsonBatchIsStoredAndQueryable) {
  Reply r = post(R"({"events":[
    {"type":"kernel","name":"gemm","variant":"tiled","start_ns":1000,"end_ns":3001000,"grid":[64,64],"block":[16,16]},
    {"type":"kernel","name":"gemm","variant":"naive","start_ns":5000000,"end_ns":10000000},
    {"type":"kernel","name":"relu","start_ns":20000000,"end_ns":21000000},
    {"type":"memory","op":"alloc","address":"0x1","size_bytes":4096,"tag":"weights","ts_ns":100},
    {"type":"memory","op":"alloc","address":"0x2","size_bytes":1024,"kind":"host","ts_ns":200},
    {"type":"memory","op":"free","address":"0x1","ts_ns":300},
    {"type":"inference","model":"llama","latency_ms":120,"ttft_ms":20,"output_tokens":50,"ts_ns":1000000000},
    {"type":"inference","model":"llama","latency_ms":80,"status":"error","ts_ns":3000000000},
    {"type":"command_buffer","id":"cb","queue":"q","enqueue_ns":1,"submit_ns":2,"start_ns":3,"end_ns":4},
    {"type":"operator","op_type":"MatMul","name":"fc","provider":"cpu","duration_ms":0.4},
    {"type":"sample","metric":"app_queue_depth","labels":{"queue":"in"},"value":7}
  ]})");
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(r.body_json(), json({{"accepted", 11}}));

  json kernels = get("/api/v1/kernels").body_json();
  ASSERT_EQ(kernels["kernels"].size(), 2u);
  const json& gemm = kernels["kernels"][0];  // longest total first
  EXPECT_EQ(gemm["name"], "gemm");
  EXPECT_EQ(gemm["count"], 2);
  EXPECT_DOUBLE_EQ(gemm["total_ms"].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(gemm["avg_ms"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(gemm["min_ms"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(gemm["max_ms"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(gemm["share"].get<double>(), 8.0 / 9.0);
  EXPECT_EQ(gemm["variants"], json({"naive", "tiled"}));
  ASSERT_EQ(gemm["launch_configs"].size(), 1u);
  EXPECT_EQ(gemm["launch_configs"][0]["grid"], json({64, 64, 1}));

  json records = get("/api/v1/kernels/gemm/records?limit=1").body_json();
  ASSERT_EQ(records["records"].size(), 1u);
  EXPECT_EQ(records["records"][0]["variant"], "naive") << "newest first";

  json memory = get("/api/v1/memory").body_json();
  EXPECT_EQ(memory["current_allocated_bytes"], 1024);
  EXPECT_EQ(memory["peak_allocated_bytes"], 5120);
  EXPECT_EQ(memory["total_allocated_bytes"], 5120);
  EXPECT_EQ(memory["allocation_count"], 2);
  EXPECT_EQ(memory["free_count"], 1);
  EXPECT_EQ(memory["by_kind"]["host"]["current_allocated_bytes"], 1024);
  EXPECT_EQ(memory["largest_live_allocations"][0]["address"], "0x2");
  EXPECT_EQ(memory["timeline"]["points"], json({{100, 4096.0}, {200, 5120.0}, {300, 1024.0}}));
  // A window that starts after the first allocation still counts it.
  EXPECT_EQ(get("/api/v1/memory?from=150&to=250").body_json()["timeline"]["points"], json({{200, 5120.0}}));
  EXPECT_EQ(get("/api/v1/memory?from=250&to=400").body_json()["timeline"]["points"], json({{300, 1024.0}}));

  json inference = get("/api/v1/inference").body_json();
  ASSERT_EQ(inference["models"].size(), 1u);
  const json& llama = inference["models"][0];
  EXPECT_EQ(llama["requests"], 2);
  EXPECT_EQ(llama["errors"], 1);
  EXPECT_DOUBLE_EQ(llama["error_rate"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(llama["span_seconds"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(llama["requests_per_second"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(llama["output_tokens_per_second"].get<double>(), 25.0);

  // Asked for, each model's latencies and its share within the objectives, from the requests.
  EXPECT_FALSE(llama.contains("latency_ms"));
  json detailed = get("/api/v1/inference?latency=true&sla_ms=1000").body_json();
  ASSERT_EQ(detailed["models"].size(), 1u);
  const json& d = detailed["models"][0];
  EXPECT_EQ(d["requests"], 2);
  EXPECT_EQ(d["latency_ms"], json({{"count", 2}, {"mean", 100.0}, {"p50", 80.0}, {"p90", 120.0}, {"p99", 120.0}, {"max", 120.0}}));
  EXPECT_EQ(d["ttft_ms"]["p50"], 20.0);
  EXPECT_NEAR(d["tpot_ms"]["p50"].get<double>(), 100.0 / 49, 1e-12);  // (120 − 20) / (50 − 1)
  EXPECT_DOUBLE_EQ(d["goodput_ratio"].get<double>(), 0.5) << "the failed request does not count, however fast";
  EXPECT_EQ(detailed["slo"], json({{"latency_ms", 1000.0}}));
  EXPECT_EQ(get("/api/v1/inference?latency=yes").body_json()["error"]["field"], "latency");
  EXPECT_EQ(get("/api/v1/inference?latency=true&sla_ms=-1").body_json()["error"]["field"], "sla_ms");

  json sample = get("/api/v1/series/query?name=app_queue_depth&from=0").body_json();
  ASSERT_EQ(sample["series"].size(), 1u);
  EXPECT_EQ(sample["series"][0]["labels"]["queue"], "in");
  EXPECT_EQ(sample["series"][0]["points"][0][1], 7.0);
}

TEST_F(IngestTest, NdjsonAndGzip) {
  std::string ndjson;
  for (int i = 0; i < 50; ++i) ndjson += R"({"type":"kernel","name":"k","duration_ms":0.5})" "\n";
  Reply plain = post(ndjson, "application/x-ndjson");
  EXPECT_EQ(plain.status, 200u) << plain.body;
  EXPECT_EQ(plain.body_json()["accepted"], 50);
  auto zipped = gzip_compress(ndjson);
  ASSERT_TRUE(zipped);
  Reply gz = post(*zipped, "application/x-ndjson", {{"Content-Encoding", "gzip"}});
  EXPECT_EQ(gz.status, 200u) << gz.body;
  EXPECT_EQ(counts()["kernels"], 100);
}

TEST_F(IngestTest, BadInputGetsItsStatusAndChangesNothing) {
  ASSERT_EQ(post(R"({"events":[{"type":"memory","op":"alloc","address":"a","size_bytes":10}]})").status, 200u);
  json before = counts();

  Reply bad_event = post(R"({"events":[{"type":"kernel","name":"ok","duration_ms":1},
                                      {"type":"kernel","name":"bad","start_ns":10,"end_ns":5}]})");
  EXPECT_EQ(bad_event.status, 400u);
  json err = bad_event.body_json()["error"];
  EXPECT_EQ(err["code"], "invalid_event");
  EXPECT_EQ(err["index"], 1);
  EXPECT_EQ(err["field"], "end_ns");

  EXPECT_EQ(post("{not json").status, 400u);
  EXPECT_EQ(post("\xff\xfe", "application/x-ndjson").status, 400u);
  EXPECT_EQ(post(R"({"events":[]})", "text/plain").status, 415u);
  EXPECT_EQ(post("garbage", "application/json", {{"Content-Encoding", "gzip"}}).status, 400u);
  EXPECT_EQ(post(R"({"events":[]})", "application/json", {{"Content-Encoding", "br"}}).status, 415u);

  // A gzip bomb: 1 MiB of zeros in ~1 KiB, against the 4 KiB limit of this test server.
  auto bomb = gzip_compress(std::string(1 << 20, '0'));
  ASSERT_TRUE(bomb);
  ASSERT_LT(bomb->size(), 4096u);
  Reply too_big = post(*bomb, "application/x-ndjson", {{"Content-Encoding", "gzip"}});
  EXPECT_EQ(too_big.status, 413u);

  Reply get_events = get("/api/v1/events");
  EXPECT_EQ(get_events.status, 405u);
  EXPECT_EQ(get_events.headers["Allow"], "POST");

  EXPECT_EQ(counts(), before);
}

TEST_F(IngestTest, QueriesValidateTheirParameters) {
  EXPECT_EQ(get("/api/v1/kernels?window=forever").body_json()["error"]["field"], "window");
  EXPECT_EQ(get("/api/v1/kernels/x/records?limit=0").body_json()["error"]["field"], "limit");
  EXPECT_EQ(get("/api/v1/memory?max_points=-1").body_json()["error"]["field"], "max_points");
  EXPECT_EQ(get("/api/v1/inference?from=10&to=5").body_json()["error"]["field"], "from");
  EXPECT_EQ(get("/api/v1/kernels?window=5m").status, 200u);
}

TEST_F(IngestTest, KernelNamesWithSlashesAndSpaces) {
  ASSERT_EQ(post(R"({"events":[{"type":"kernel","name":"void ns::gemm<float>(float*, int) /tile","duration_ms":1}]})")
                .status,
            200u);
  json r = get("/api/v1/kernels/void%20ns%3A%3Agemm%3Cfloat%3E(float*,%20int)%20%2Ftile/records").body_json();
  ASSERT_EQ(r["records"].size(), 1u) << r.dump();
  EXPECT_EQ(r["name"], "void ns::gemm<float>(float*, int) /tile");
}

TEST_F(IngestTest, AcknowledgedEventsSurviveARestart) {
  ASSERT_EQ(post(R"({"events":[{"type":"kernel","name":"persist","duration_ms":2},
                               {"type":"memory","op":"alloc","address":"m","size_bytes":64},
                               {"type":"inference","model":"m","latency_ms":3}]})")
                .status,
            200u);
  json before = counts();
  stop();
  server_ = std::make_unique<Server>(config_);
  ASSERT_TRUE(server_->start().ok());
  port_ = server_->port();
  thread_ = std::thread([this] { server_->run(false); });
  EXPECT_EQ(counts(), before);
  // The memory tracker was rebuilt from the stored events.
  EXPECT_EQ(get("/api/v1/memory").body_json()["current_allocated_bytes"], 64);
}

TEST_F(IngestTest, WebSocketIngestAcksEachMessageAfterCommit) {
  StreamClient producer(port_, "/api/v1/ingest");
  EXPECT_EQ(producer.read()["type"], "hello");
  producer.send(R"({"events":[{"type":"kernel","name":"ws","duration_ms":1},{"type":"kernel","name":"ws","duration_ms":2}]})");
  producer.send(R"({"events":[{"type":"kernel","name":"ws","start_ns":5,"end_ns":1}]})");
  producer.send(R"({"events":[{"type":"kernel","name":"ws","duration_ms":3}]})");
  std::map<std::uint64_t, json> replies;
  for (int i = 0; i < 3; ++i) {
    json m = producer.read();
    replies[m["seq"].get<std::uint64_t>()] = m;
  }
  EXPECT_EQ(replies[1]["type"], "ack");
  EXPECT_EQ(replies[1]["accepted"], 2);
  EXPECT_EQ(replies[2]["type"], "error");
  EXPECT_EQ(replies[2]["status"], 400);
  EXPECT_EQ(replies[2]["error"]["field"], "end_ns");
  EXPECT_EQ(replies[3]["type"], "ack");
  // Acked means committed: visible to the next query.
  EXPECT_EQ(counts()["kernels"], 3);
  EXPECT_EQ(get("/api/v1/ingest").status, 426u);
}

TEST_F(IngestTest, ConcurrentProducersLoseNothing) {
  constexpr int kThreads = 4, kRequests = 25, kPerRequest = 20;
  std::vector<std::thread> producers;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      for (int r = 0; r < kRequests; ++r) {
        std::string body;
        for (int e = 0; e < kPerRequest; ++e) {
          body += R"({"type":"kernel","name":"t)" + std::to_string(t) + R"(","duration_ms":1})" "\n";
        }
        if (post(body, "application/x-ndjson").status != 200) ++failures;
      }
    });
  }
  for (auto& p : producers) p.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(counts()["kernels"], kThreads * kRequests * kPerRequest);
  json kernels = get("/api/v1/kernels").body_json()["kernels"];
  ASSERT_EQ(kernels.size(), static_cast<std::size_t>(kThreads));
  for (const json& k : kernels) EXPECT_EQ(k["count"], kRequests * kPerRequest);
}

TEST_F(IngestTest, OperatorsAreSummarizedPerTypeAndNodeWithTheirCpuFallback) {
  // A model with two Conv nodes on the GPU provider and a Relu that fell back to the CPU, and a
  // second model in another run; times 1 s apart, within the default window.
  const std::int64_t t0 = now_ns() - 60'000'000'000;
  std::string body;
  int i = 0;
  auto op = [&](const char* type, const char* name, const char* provider, double ms, const char* model, const char* shapes,
                const char* run) {
    body += std::string(R"({"type":"operator","op_type":")") + type + R"(","name":")" + name + R"(","provider":")" +
            provider + R"(","duration_ms":)" + std::to_string(ms) + R"(,"model":")" + model + R"(","input_shapes":)" +
            shapes + R"(,"tags":{"run":")" + run + R"("},"ts_ns":)" + std::to_string(t0 + 1'000'000'000LL * i++) + "}\n";
  };
  op("Conv", "conv1", "CUDAExecutionProvider", 1, "resnet", "[[1,3,224,224]]", "a");
  op("Conv", "conv1", "CUDAExecutionProvider", 3, "resnet", "[[1,3,224,224]]", "a");
  op("Conv", "conv2", "CUDAExecutionProvider", 2, "resnet", "[[1,64,56,56]]", "a");
  op("Conv", "conv2", "CUDAExecutionProvider", 4, "resnet", "[[1,64,56,56]]", "a");
  op("Relu", "relu1", "CPUExecutionProvider", 0.5, "resnet", "[[1,64,56,56]]", "a");
  op("Relu", "relu1", "CPUExecutionProvider", 0.5, "resnet", "[[1,64,56,56]]", "a");
  op("MatMul", "mm", "CPUExecutionProvider", 12, "bert", "[[1,128,768],[768,768]]", "b");
  ASSERT_EQ(post(body, "application/x-ndjson").status, 200u);

  Reply r = get("/api/v1/operators?window=1h");
  ASSERT_EQ(r.status, 200u) << r.body;
  json doc = r.body_json();
  ASSERT_EQ(doc["models"].size(), 2u);
  const json& resnet = doc["models"][1];
  EXPECT_EQ(resnet["model"], "resnet");
  EXPECT_EQ(resnet["executions"], 6);
  EXPECT_DOUBLE_EQ(resnet["cpu_fallback_share"].get<double>(), 1.0 / 11.0);
  EXPECT_TRUE(doc["models"][0]["cpu_fallback_share"].is_null());  // bert ran on the CPU alone
  const json& conv = doc["op_types"][1];  // MatMul's 12 ms first
  EXPECT_EQ(conv["op_type"], "Conv");
  EXPECT_EQ(conv["count"], 4);
  EXPECT_DOUBLE_EQ(conv["mean_ms"].get<double>(), 2.5);
  EXPECT_EQ(conv["percentiles_ms"], json({{"p50", 2.0}, {"p90", 4.0}, {"p99", 4.0}}));
  EXPECT_DOUBLE_EQ(conv["share_of_model_time"].get<double>(), 10.0 / 11.0);
  EXPECT_EQ(conv["providers"], json({{"CUDAExecutionProvider", 4}}));
  EXPECT_EQ(conv["input_shapes"], json({{"1x3x224x224", 2}, {"1x64x56x56", 2}}));
  EXPECT_EQ(doc["method"], "nearest_rank");
  bool found = false;
  for (const json& n : doc["nodes"]) {
    if (n["name"] != "conv2") continue;
    found = true;
    EXPECT_EQ(n["op_type"], "Conv");
    EXPECT_DOUBLE_EQ(n["total_ms"].get<double>(), 6.0);
  }
  EXPECT_TRUE(found);

  // Filters: a model, a provider, a run; the linear convention and other percentiles.
  EXPECT_EQ(get("/api/v1/operators?window=1h&model=bert").body_json()["op_types"].size(), 1u);
  json cpu = get("/api/v1/operators?window=1h&provider=CPUExecutionProvider").body_json();
  EXPECT_EQ(cpu["op_types"].size(), 2u);  // MatMul and Relu
  // The events carry run=b as a tag, and no run of that name was reported: tag.run= selects
  // them, run= (a run perfscope knows) is refused as on every endpoint.
  EXPECT_EQ(get("/api/v1/operators?window=all&tag.run=b").body_json()["models"].size(), 1u);
  EXPECT_EQ(get("/api/v1/operators?run=b").status, 404u);
  json linear = get("/api/v1/operators?window=1h&model=resnet&method=linear&q=50").body_json();
  EXPECT_DOUBLE_EQ(linear["op_types"][0]["percentiles_ms"]["p50"].get<double>(), 2.5);

  // The analysis document: the operators section and the fallback rule, with the worst model's
  // share as evidence (1 ms of 11 on the CPU: under the 10 % line).
  json analysis = get("/api/v1/analysis?window=1h").body_json();
  EXPECT_EQ(analysis["operators"]["op_types"][0]["op_type"], "MatMul");
  EXPECT_DOUBLE_EQ(analysis["operators"]["models"][1]["cpu_fallback_share"].get<double>(), 1.0 / 11.0);
  bool rule = false;
  for (const json& f : analysis["bottlenecks"]) {
    if (f["id"] != "operators_cpu_fallback") continue;
    rule = true;
    EXPECT_EQ(f["status"], "ok") << f;
    EXPECT_DOUBLE_EQ(f["evidence"]["operator_cpu_fallback_share"].get<double>(), 1.0 / 11.0);
  }
  EXPECT_TRUE(rule);

  // Percentiles and A/B select operators by op type or node, narrowed by model and run.
  json p = get("/api/v1/percentiles?operator=Conv&model=resnet&window=1h&q=50,90").body_json();
  EXPECT_EQ(p["count"], 4);
  EXPECT_DOUBLE_EQ(p["percentiles"]["p50"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(p["percentiles"]["p90"].get<double>(), 4.0);
  EXPECT_EQ(get("/api/v1/percentiles?operator=conv2&window=1h").body_json()["count"], 2);
  EXPECT_EQ(get("/api/v1/percentiles?operator=Conv&tag.run=b&window=1h").body_json()["count"], 0);
  // An A/B side's "run" names a run perfscope knows (as run= does everywhere): refused until
  // run "a" is reported, then its tagged operators are selected.
  Reply ab = request(http::verb::post, "/api/v1/abtests", {{"Content-Type", "application/json"}},
                     R"({"name":"nodes","a":{"operator":"conv1","model":"resnet"},"b":{"operator":"conv2","run":"a"}})");
  ASSERT_EQ(ab.status, 201u) << ab.body;
  Reply unknown = get(ab.body_json()["url"].get<std::string>());
  EXPECT_EQ(unknown.status, 404u);
  EXPECT_EQ(unknown.body_json()["error"]["field"], "b.run");
  ASSERT_EQ(post(R"({"events":[{"type":"run","name":"a","command":["resnet-bench"],"start_ns":)" + std::to_string(t0) + "}]}")
                .status,
            200u);
  json result = get(ab.body_json()["url"].get<std::string>()).body_json();
  EXPECT_EQ(result["a"]["n"], 2);
  EXPECT_EQ(result["b"]["n"], 2);
  EXPECT_EQ(result["definition"]["a"], json({{"operator", "conv1"}, {"model", "resnet"}})) << result;

  // Bad parameters name themselves.
  for (const auto& [query, field] : {std::pair{"method=median", "method"}, std::pair{"q=101", "q"},
                                     std::pair{"window=forever", "window"}}) {
    Reply bad = get(std::string("/api/v1/operators?") + query);
    EXPECT_EQ(bad.status, 400u) << query;
    EXPECT_EQ(bad.body_json()["error"]["field"], field) << bad.body;
  }
}

TEST_F(IngestTest, KernelsReportingTheirWorkGetAchievedRates) {
  // 2·1024³ FLOPs in 1 ms and 4 ms (two sizes of work share no series), 12 MiB moved each time;
  // a third execution reports nothing and counts toward neither rate.
  const std::int64_t t = now_ns() - 1'000'000'000;
  const std::string flops = std::to_string(2.0 * 1024 * 1024 * 1024);
  std::string body;
  body += R"({"type":"kernel","name":"gemm_bf16","start_ns":)" + std::to_string(t) + R"(,"end_ns":)" + std::to_string(t + 1'000'000) +
          R"(,"flops":)" + flops + R"(,"bytes":12582912})" + "\n";
  body += R"({"type":"kernel","name":"gemm_bf16","start_ns":)" + std::to_string(t + 2'000'000) + R"(,"end_ns":)" +
          std::to_string(t + 6'000'000) + R"(,"flops":)" + flops + R"(,"bytes":12582912})" + "\n";
  body += R"({"type":"kernel","name":"gemm_bf16","start_ns":)" + std::to_string(t + 7'000'000) + R"(,"end_ns":)" +
          std::to_string(t + 17'000'000) + "}\n";
  ASSERT_EQ(post(body, "application/x-ndjson").status, 200u);
  json k = get("/api/v1/kernels?window=1m").body_json()["kernels"][0];
  ASSERT_EQ(k["name"], "gemm_bf16");
  EXPECT_NEAR(k["achieved_tflops"].get<double>(), 2 * 2.0 * 1024 * 1024 * 1024 / 5e-3 / 1e12, 1e-9);
  EXPECT_NEAR(k["achieved_gb_per_second"].get<double>(), 2 * 12582912.0 / 5e-3 / 1e9, 1e-9);
  EXPECT_NEAR(k["arithmetic_intensity"].get<double>(), 2.0 * 1024 * 1024 * 1024 / 12582912.0, 1e-9);
  json records = get("/api/v1/kernels/gemm_bf16/records?limit=3").body_json()["records"];
  ASSERT_EQ(records.size(), 3u);
  EXPECT_FALSE(records[0].contains("flops")) << records[0];  // newest first: the one without work
  EXPECT_EQ(records[1]["bytes"], 12582912);
  // Work is a non-negative number.
  Reply bad = post(R"({"type":"kernel","name":"k","duration_ms":1,"flops":-5})", "application/x-ndjson");
  EXPECT_EQ(bad.status, 400u);
  EXPECT_EQ(bad.body_json()["error"]["field"], "flops") << bad.body;
}

TEST_F(IngestTest, EnergyPerInferenceSharesTheGpusEnergyByComputeTime) {
  // A GPU's energy counter rising 600 J in the window, and two models: b computed twice as long
  // as a, so it takes two thirds of the energy.
  const std::int64_t t0 = now_ns() - 30'000'000'000;
  std::string body;
  for (int i = 0; i < 3; ++i) {
    const std::string at = std::to_string(t0 + i * 10'000'000'000LL);
    body += R"({"type":"sample","metric":"gpu_energy_joules_total","labels":{"gpu":"0","uuid":"GPU-t"},"value":)" +
            std::to_string(1000 + 300 * i) + R"(,"ts_ns":)" + at + "}\n";
    body += R"({"type":"sample","metric":"gpu_power_watts","labels":{"gpu":"0","uuid":"GPU-t"},"value":)" +
            std::to_string(20 + 10 * i) + R"(,"ts_ns":)" + at + "}\n";
    // The host's package and one of its parts: only packages count.
    body += R"({"type":"sample","metric":"host_rapl_energy_joules_total","labels":{"domain":"package-0"},"value":)" +
            std::to_string(50 + 45 * i) + R"(,"ts_ns":)" + at + "}\n";
    body += R"({"type":"sample","metric":"host_rapl_energy_joules_total","labels":{"domain":"core"},"value":)" +
            std::to_string(10 + 30 * i) + R"(,"ts_ns":)" + at + "}\n";
  }
  for (int i = 0; i < 10; ++i) {
    const std::string at = std::to_string(t0 + 1'000'000'000LL * (i + 1));
    body += R"({"type":"inference","model":"a","latency_ms":20,"compute_ms":10,"output_tokens":5,"ts_ns":)" + at + "}\n";
    body += R"({"type":"inference","model":"b","latency_ms":30,"compute_ms":20,"ts_ns":)" + at + "}\n";
  }
  ASSERT_EQ(post(body, "application/x-ndjson").status, 200u);
  json energy = get("/api/v1/analysis?window=1m").body_json()["energy"];
  ASSERT_EQ(energy["gpus"].size(), 1u) << energy;
  EXPECT_DOUBLE_EQ(energy["gpus"][0]["joules"].get<double>(), 600);
  EXPECT_DOUBLE_EQ(energy["gpus"][0]["avg_watts"].get<double>(), 30);
  EXPECT_DOUBLE_EQ(energy["gpus"][0]["peak_watts"].get<double>(), 40);
  // Requests were in flight only in the second before each full second from t0+1 s to t0+10 s:
  // of the readings (t0, t0+10 s, t0+20 s) only the one at t0+10 s, the last request's end.
  EXPECT_DOUBLE_EQ(energy["gpus"][0]["avg_watts_during_requests"].get<double>(), 30);
  EXPECT_DOUBLE_EQ(energy["gpus"][0]["peak_watts_during_requests"].get<double>(), 30);
  EXPECT_DOUBLE_EQ(energy["total_joules"].get<double>(), 600);
  ASSERT_EQ(energy["models"].size(), 2u);
  const json& a = energy["models"][0];
  EXPECT_EQ(a["model"], "a");
  EXPECT_EQ(a["attribution"], "proportional to compute time");
  EXPECT_NEAR(a["joules"].get<double>(), 200, 1e-9);
  EXPECT_NEAR(a["joules_per_inference"].get<double>(), 20, 1e-9);
  EXPECT_NEAR(a["joules_per_output_token"].get<double>(), 4, 1e-9);
  EXPECT_NEAR(a["inferences_per_second_per_watt"].get<double>(), 0.05, 1e-12);
  EXPECT_NEAR(energy["models"][1]["joules_per_inference"].get<double>(), 40, 1e-9);
  EXPECT_TRUE(energy["models"][1]["joules_per_output_token"].is_null());
  EXPECT_DOUBLE_EQ(energy["host_joules"].get<double>(), 90);
  EXPECT_NEAR(a["host_joules_per_inference"].get<double>(), 3, 1e-9);
  EXPECT_NE(energy["method"].get<std::string>().find("compute time"), std::string::npos);

  // An A/B of the two models gives energy per inference beside latency.
  Reply ab = request(http::verb::post, "/api/v1/abtests", {{"Content-Type", "application/json"}},
                     R"({"name":"energy","a":{"model":"a"},"b":{"model":"b"},"window":"1m"})");
  ASSERT_EQ(ab.status, 201u) << ab.body;
  json result = get(ab.body_json()["url"].get<std::string>()).body_json();
  ASSERT_TRUE(result.contains("energy")) << result;
  EXPECT_NEAR(result["energy"]["sides"][0]["joules_per_inference"].get<double>(), 20, 1e-9);
  EXPECT_NEAR(result["energy"]["sides"][1]["joules_per_inference"].get<double>(), 40, 1e-9);
  EXPECT_EQ(result["energy"]["sides"][1]["attribution"], json({"proportional to compute time"}));
  // Kernel sides have no energy of their own.
  Reply kernels = request(http::verb::post, "/api/v1/abtests", {{"Content-Type", "application/json"}},
                          R"({"name":"kernels","a":{"kernel":"x"},"b":{"kernel":"y"}})");
  ASSERT_EQ(kernels.status, 201u);
  EXPECT_FALSE(get(kernels.body_json()["url"].get<std::string>()).body_json().contains("energy"));
}

}  // namespace
}  // namespace perfscope::server
