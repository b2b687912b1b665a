// The C++ client library against the real server.
#include "server/client/client.hpp"

#include <gtest/gtest.h>

#include "engine/sdk/monitor.hpp"
#include "support/live_server.hpp"

namespace perfscope::server {
namespace {

using namespace perfscope::testing;

class ClientTest : public ServerTest {
 protected:
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::uint64_t kernel_count(const std::string& name) {
    json all = get("/api/v1/kernels").body_json();
    for (const json& k : all["kernels"]) {
      if (k["name"] == name) return k["count"];
    }
    return 0;
  }
};

TEST_F(ClientTest, MonitorSinkDeliversEverythingToTheServer) {
  ClientOptions o;
  o.url = url();
  o.batch_events = 20;  // this test server takes bodies up to 4 KiB
  auto client = EventClient::create(o);
  ASSERT_TRUE(client.ok()) << client.status().message();
  Monitor monitor;
  monitor.add_sink((*client)->sink());
  monitor.start();
  for (int i = 0; i < 3000; ++i) monitor.run_variant("conv", i % 2 ? "a" : "b", [] {}, 1);
  int buffer = 0;
  monitor.track_allocation(&buffer, 256, MemoryKind::kDevice, "scratch");
  InferenceEvent inf;
  inf.model = "resnet";
  inf.latency_ms = 4;
  ASSERT_TRUE(monitor.record_inference(inf).ok());
  monitor.stop();
  (*client)->flush();

  ClientStats s = (*client)->stats();
  EXPECT_EQ(s.events_sent, 3002u) << s.last_error;
  EXPECT_EQ(s.events_failed, 0u);
  EXPECT_EQ(kernel_count("conv"), 3000u);
  EXPECT_EQ(get("/api/v1/memory").body_json()["current_allocated_bytes"], 256);
  json kernels = get("/api/v1/kernels").body_json()["kernels"];
  EXPECT_EQ(kernels[0]["variants"], json({"a", "b"}));
}

TEST_F(ClientTest, RefusedBatchesAreCountedNotRetried) {
  ClientOptions options;
  options.url = url();
  auto client = EventClient::create(options);
  ASSERT_TRUE(client.ok());
  KernelEvent bad;  // no name: the server refuses the batch
  bad.start_ns = 1;
  bad.end_ns = 2;
  (*client)->send({bad});
  (*client)->flush();
  KernelEvent good = bad;
  good.name = "fine";
  (*client)->send({good});
  (*client)->flush();
  ClientStats s = (*client)->stats();
  EXPECT_EQ(s.events_failed, 1u);
  EXPECT_EQ(s.events_sent, 1u);
  EXPECT_NE(s.last_error.find("400"), std::string::npos) << s.last_error;
  EXPECT_EQ(kernel_count("fine"), 1u);
}

TEST(Client, UnreachableServerAndFullQueueAreCounted) {
  ClientOptions o;
  o.url = "http://127.0.0.1:1";  // nothing listens on port 1
  o.max_queued_events = 10;
  o.batch_events = 1000;
  o.flush_interval = std::chrono::hours(1);
  auto client = EventClient::create(o);
  ASSERT_TRUE(client.ok());
  KernelEvent k;
  k.name = "k";
  std::vector<Event> events(25, Event(k));
  (*client)->send(events);
  (*client)->flush();
  ClientStats s = (*client)->stats();
  EXPECT_EQ(s.events_dropped, 15u);
  EXPECT_EQ(s.events_failed, 10u);
  EXPECT_EQ(s.events_sent, 0u);
  ClientOptions other;
  other.url = "ftp://example";
  EXPECT_FALSE(EventClient::create(other).ok());
  EXPECT_FALSE(parse_http_url("http://host:port").ok());
  EXPECT_EQ(parse_http_url("http://localhost:8080/x")->port, "8080");
  EXPECT_EQ(parse_http_url("https://localhost/x")->port, "443");
  EXPECT_TRUE(parse_http_url("https://localhost/x")->tls);
  EXPECT_FALSE(parse_http_url("ftp://localhost").ok());
}

}  // namespace
}  // namespace perfscope::server
