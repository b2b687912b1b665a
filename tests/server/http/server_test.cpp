// The real server on an ephemeral loopback port, driven by a real HTTP/WebSocket client.
#include <gtest/gtest.h>

#include <thread>

#include "db/sample_reader.hpp"
#include "support/live_server.hpp"

namespace perfscope::server {
namespace {

using namespace perfscope::testing;

TEST_F(ServerTest, HealthzAnswersOk) {
  Reply r = get("/healthz");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.headers["Content-Type"], "application/json");
  EXPECT_EQ(r.body_json(), json({{"status", "ok"}}));
}

TEST_F(ServerTest, InfoReportsVersionCollectorsAndEffectiveConfig) {
  // A pass made (its series hold history; a loaded CI machine once asked before the first),
  // and a read, so a reading connection is open.
  wait_for_passes(1);
  ASSERT_EQ(get("/api/v1/kernels").status, 200u);
  json info = get("/api/v1/info").body_json();
  EXPECT_EQ(info["name"], "perfscope");
  EXPECT_FALSE(info["version"].get<std::string>().empty());
  EXPECT_GE(info["uptime_seconds"].get<double>(), 0);
  EXPECT_EQ(info["config"]["sampling_interval_ms"], 50);
  EXPECT_EQ(info["config"]["history_buffer_size"], 10000);
  // The host collector, and the NVIDIA one, whose NVML source says whether this machine has it;
  // the scrape and kubelet collectors off (no target, no socket), with the options that turn them on.
  ASSERT_EQ(info["collectors"].size(), 4u);
  EXPECT_EQ(info["collectors"][0]["name"], "host");
  EXPECT_EQ(info["collectors"][1]["name"], "nvidia");
  EXPECT_EQ(info["collectors"][2]["name"], "scrape");
  EXPECT_EQ(info["collectors"][2]["enabled"], false);
  EXPECT_EQ(info["collectors"][2]["option"], "--scrape");
  EXPECT_TRUE(info["collectors"][2]["passes"].is_null());
  EXPECT_EQ(info["collectors"][3]["name"], "kubelet");
  EXPECT_EQ(info["collectors"][3]["enabled"], false);
  EXPECT_EQ(info["collectors"][3]["option"], "--pod-resources-socket");
  EXPECT_GT(info["collectors"][0]["passes"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(info["collectors"][1]["sources"][0]["name"], "nvml");
  EXPECT_FALSE(info["collectors"][1]["sources"][0]["detail"].get<std::string>().empty());
  EXPECT_EQ(info["config"]["enable_gpu_collector"], true);
  bool has_proc_stat = false;
  for (const json& s : info["collectors"][0]["sources"]) has_proc_stat |= s["name"] == "proc_stat" && s["available"] == true;
  EXPECT_TRUE(has_proc_stat);
  EXPECT_TRUE(info["runtime"].contains("database_writer"));
  // The heap's count and the writer's page cache against its bound; the readers' likewise.
  const json& memory = info["runtime"]["memory"];
  EXPECT_GT(memory["sqlite_writer_page_cache_limit_bytes"].get<std::uint64_t>(), 0u);
  EXPECT_LE(memory["sqlite_writer_page_cache_bytes"].get<std::uint64_t>(),
            memory["sqlite_writer_page_cache_limit_bytes"].get<std::uint64_t>());
  EXPECT_TRUE(memory.contains("heap_in_use_bytes")) << memory;
  // The reading connections (the read above opened one) within theirs.
  EXPECT_GT(memory["sqlite_reader_connections"].get<std::uint64_t>(), 0u) << memory;
  EXPECT_LE(memory["sqlite_reader_memory_bytes"].get<std::uint64_t>(),
            memory["sqlite_reader_page_cache_limit_bytes"].get<std::uint64_t>());
  // The series' in-memory history: the sampler's passes so far, within a full ring a series.
  EXPECT_GT(memory["series_history_bytes"].get<std::uint64_t>(), 0u) << memory;
  EXPECT_LE(memory["series_history_bytes"].get<std::uint64_t>(), memory["series_history_limit_bytes"].get<std::uint64_t>());
}

TEST_F(ServerTest, SeriesListsEveryLiveSeriesWithUnitAndLatestValue) {
  wait_for_passes(3);
  json list = get("/api/v1/series").body_json()["series"];
  bool found = false;
  for (const json& s : list) {
    if (s["name"] == "host_cpu_utilization_ratio" && s["labels"] == json({{"cpu", "total"}})) {
      found = true;
      EXPECT_EQ(s["unit"], "ratio");
      EXPECT_EQ(s["type"], "gauge");
      EXPECT_TRUE(s["live"].get<bool>());
      ASSERT_TRUE(s["latest"].is_object());
      double v = s["latest"]["value"];
      EXPECT_GE(v, 0.0);
      EXPECT_LE(v, 1.0);
    }
  }
  EXPECT_TRUE(found) << list.dump();
}

TEST_F(ServerTest, QueryReturnsSamplesAndDownsamplesLongRanges) {
  wait_for_passes(6);
  json raw = get("/api/v1/series/query?name=host_memory_total_bytes&from=now-1m").body_json();
  ASSERT_EQ(raw["series"].size(), 1u);
  const json& s = raw["series"][0];
  EXPECT_EQ(s["columns"], json({"ts_ns", "value"}));
  EXPECT_FALSE(s["downsampled"].get<bool>());
  ASSERT_GE(s["points"].size(), 5u);
  for (std::size_t i = 1; i < s["points"].size(); ++i) {
    EXPECT_LT(s["points"][i - 1][0].get<std::int64_t>(), s["points"][i][0].get<std::int64_t>());
  }

  json down = get("/api/v1/series/query?name=host_memory_total_bytes&from=now-1m&max_points=2").body_json();
  const json& d = down["series"][0];
  EXPECT_TRUE(d["downsampled"].get<bool>());
  EXPECT_EQ(d["columns"], json({"ts_ns", "min", "max", "avg", "count"}));
  EXPECT_LE(d["points"].size(), 2u);
  EXPECT_GE(d["points"].size(), 1u);

  json cores = get("/api/v1/series/query?name=host_cpu_utilization_ratio&cpu=total&from=now-1m").body_json();
  ASSERT_EQ(cores["series"].size(), 1u);
  EXPECT_EQ(cores["series"][0]["labels"]["cpu"], "total");
}

TEST_F(ServerTest, BadRequestsGetJsonErrorsNamingTheField) {
  // Each bad query is a 400 naming the field at fault.
  for (const auto& [target, field] : {std::pair{"/api/v1/series/query", "name"},
                                      std::pair{"/api/v1/series/query?name=x&max_points=0", "max_points"},
                                      std::pair{"/api/v1/series/query?name=x&from=yesterday", "from"},
                                      std::pair{"/api/v1/series/query?name=x&not-a-label=1", "not-a-label"}}) {
    Reply bad = get(target);
    EXPECT_EQ(bad.status, 400u) << target;
    EXPECT_EQ(bad.body_json()["error"]["field"], field) << target;
  }

  Reply unknown = get("/api/v1/nothing");
  EXPECT_EQ(unknown.status, 404u);
  EXPECT_EQ(unknown.body_json()["error"]["code"], "not_found");
  EXPECT_EQ(get("/no/such/page").status, 404u);

  Reply post = request(http::verb::post, "/api/v1/series", {}, "{}");
  EXPECT_EQ(post.status, 405u);
  EXPECT_EQ(post.headers["Allow"], "GET, HEAD");

  Reply too_big = request(http::verb::post, "/api/v1/series", {}, std::string(8192, 'x'));
  EXPECT_EQ(too_big.status, 413u);
  EXPECT_EQ(too_big.body_json()["error"]["code"], "payload_too_large");

  Reply plain_stream = get("/api/v1/stream");
  EXPECT_EQ(plain_stream.status, 426u);

  // The server is still fine.
  EXPECT_EQ(get("/healthz").status, 200u);
}

TEST_F(ServerTest, DashboardIsServedWithEtagAndGzip) {
  Reply page = get("/");
  EXPECT_EQ(page.status, 200u);
  EXPECT_EQ(page.headers["Content-Type"], "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("/vendor/uPlot.iife.min.js"), std::string::npos);
  const std::string etag = page.headers["ETag"];
  ASSERT_FALSE(etag.empty());
  EXPECT_EQ(get("/", {{"If-None-Match", etag}}).status, 304u);

  Reply zipped = get("/vendor/uPlot.iife.min.js", {{"Accept-Encoding", "gzip"}});
  EXPECT_EQ(zipped.status, 200u);
  EXPECT_EQ(zipped.headers["Content-Encoding"], "gzip");
  EXPECT_EQ(zipped.headers["Content-Type"], "text/javascript; charset=utf-8");

  Reply head = request(http::verb::head, "/app.js");
  EXPECT_EQ(head.status, 200u);
  EXPECT_TRUE(head.body.empty());
  EXPECT_NE(head.headers["Content-Length"], "0");
}

TEST_F(ServerTest, StreamPushesSubscribedSamplesWithinTwoSeconds) {
  StreamClient client(port_);
  EXPECT_EQ(client.read()["type"], "hello");
  auto t0 = std::chrono::steady_clock::now();
  client.send(R"({"subscribe":["host_cpu_utilization_ratio","process_*"]})");
  json ack = client.read_type("subscribed");
  EXPECT_EQ(ack["patterns"], json({"host_cpu_utilization_ratio", "process_*"}));

  json first = client.read_type("samples");
  auto elapsed = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(elapsed, std::chrono::seconds(2));
  ASSERT_FALSE(first["samples"].empty());
  for (const json& s : first["samples"]) {
    std::string name = s["name"];
    EXPECT_TRUE(name == "host_cpu_utilization_ratio" || name.rfind("process_", 0) == 0) << name;
    EXPECT_TRUE(s.contains("value"));
    EXPECT_TRUE(s.contains("series"));
  }
  json second = client.read_type("samples");
  EXPECT_GT(second["ts_ns"].get<std::int64_t>(), first["ts_ns"].get<std::int64_t>());
  EXPECT_EQ(second["dropped"], 0);
}

TEST_F(ServerTest, StreamAnswersBadSubscriptionsWithAnErrorAndStaysOpen) {
  StreamClient client(port_);
  client.read();  // hello
  client.send("not json");
  json e1 = client.read_type("error");
  EXPECT_EQ(e1["error"]["code"], "invalid_argument");
  client.send(R"({"subscribe":"host_*"})");
  EXPECT_EQ(client.read_type("error")["error"]["field"], "subscribe");
  client.send(R"({"subscribe":["host_load1"]})");
  json samples = client.read_type("samples");
  for (const json& s : samples["samples"]) EXPECT_EQ(s["name"], "host_load1");
}

TEST_F(ServerTest, WebSocketUpgradeElsewhereIs404) {
  EXPECT_THROW(StreamClient(port_, "/api/v1/elsewhere"), boost::system::system_error);
}

TEST_F(ServerTest, GracefulShutdownClosesStreamsAndCommitsTheLastBatch) {
  StreamClient client(port_);
  client.read();
  client.send(R"({"subscribe":["host_load1"]})");
  client.read_type("samples");
  wait_for_passes(5);
  std::uint64_t passes_seen = get("/api/v1/info").body_json()["sampler"]["passes"];

  // A client keeps reading, as browsers do, so the close handshake can complete.
  beast::error_code ec;
  std::thread stream_reader([&] {
    beast::flat_buffer buffer;
    while (!ec) client.ws().read(buffer, ec);
  });
  auto t0 = std::chrono::steady_clock::now();
  stop();  // returns once run() has finished shutting down
  stream_reader.join();
  // Draining finished on its own, well before the 5 s forced-stop timer.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4));
  EXPECT_EQ(ec, websocket::error::closed) << ec.message();
  EXPECT_EQ(client.ws().reason().code, websocket::close_code::going_away);

  // Every pass the sampler made is in the database: at least the passes seen before stop.
  auto reader = db::SampleReader::open(dir_.file("perfscope.db"));
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto series = (*reader)->list_series(false);
  ASSERT_TRUE(series.ok());
  std::int64_t rows = -1;
  for (const auto& s : *series) {
    if (s.key.name == "host_memory_total_bytes") rows = *(*reader)->count(s.db_id, 0, INT64_MAX);
  }
  EXPECT_GE(rows, static_cast<std::int64_t>(passes_seen));
}

TEST_F(ServerTest, HistorySurvivesARestart) {
  wait_for_passes(5);
  stop();
  // A new server on the same data directory: its memory is empty, the database is not.
  server_ = std::make_unique<Server>(config_);
  ASSERT_TRUE(server_->start().ok());
  port_ = server_->port();
  thread_ = std::thread([this] { server_->run(false); });
  json q = get("/api/v1/series/query?name=host_memory_total_bytes&from=0").body_json();
  ASSERT_EQ(q["series"].size(), 1u);
  EXPECT_GE(q["series"][0]["sources"]["database"].get<int>(), 5);
  EXPECT_GE(q["series"][0]["points"].size(), 5u);
}

TEST(ServerStop, AClientThatNeverAnswersTheCloseIsCutOffByTheTimer) {
  TempDir dir;
  AppConfig config;
  config.server.listen_port = 0;
  config.server.shutdown_timeout = std::chrono::milliseconds(300);
  config.storage.data_dir = dir.str();
  auto server = std::make_unique<Server>(config);
  ASSERT_TRUE(server->start().ok());
  std::thread run([&] { server->run(false); });
  StreamClient silent(server->port());  // connects, then never reads again
  silent.read();
  auto t0 = std::chrono::steady_clock::now();
  server->request_stop();
  run.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  server.reset();  // sessions still owned by queued handlers are destroyed safely
}

TEST(ServerStart, PortInUseIsAClearError) {
  perfscope::testing::TempDir dir;
  AppConfig config;
  config.server.listen_port = 0;
  config.storage.data_dir = dir.file("a");
  Server first(config);
  ASSERT_TRUE(first.start().ok());
  config.server.listen_port = first.port();
  config.storage.data_dir = dir.file("b");
  Server second(config);
  Status s = second.start();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(std::to_string(first.port())), std::string::npos) << s.message();
}

}  // namespace
}  // namespace perfscope::server
