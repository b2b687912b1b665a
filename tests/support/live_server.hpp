// A live perfscope server on an ephemeral loopback port for integration tests, with a
// small blocking HTTP and WebSocket client (Beast) to talk to it.
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "server/net/net.hpp"
#include "server/cli/serve.hpp"
#include "support/temp_dir.hpp"

namespace perfscope::testing {

namespace net = server::net;
namespace beast = server::beast;
namespace http = server::http;
namespace websocket = server::websocket;
using server::tcp;
using nlohmann::json;
using server::AppConfig;
using server::Server;

struct Reply {
  unsigned status = 0;
  std::map<std::string, std::string> headers;
  std::string body;
  json body_json() const { return json::parse(body); }
};

inline void set_receive_timeout(tcp::socket& socket, int seconds) {
  timeval tv{seconds, 0};
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AppConfig& config = config_;
    config.server.listen_host = "127.0.0.1";
    config.server.listen_port = 0;
    config.server.max_body_bytes = 4096;
    config.engine.sampling_interval = std::chrono::milliseconds(50);
    config.storage.data_dir = dir_.str();
    config.storage.commit_interval = std::chrono::milliseconds(100);
    server_ = std::make_unique<Server>(config);
    Status s = server_->start();
    ASSERT_TRUE(s.ok()) << s.message();
    port_ = server_->port();
    ASSERT_NE(port_, 0);
    thread_ = std::thread([this] { server_->run(false); });
  }

  void TearDown() override { stop(); }

  void stop() {
    if (!thread_.joinable()) return;
    server_->request_stop();
    thread_.join();
  }

  Reply request(http::verb verb, const std::string& target, std::map<std::string, std::string> headers = {},
                std::string body = {}) {
    net::io_context ioc;
    tcp::socket socket(ioc);
    socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port_));
    set_receive_timeout(socket, 10);
    http::request<http::string_body> req(verb, target, 11);
    req.set(http::field::host, "127.0.0.1");
    for (auto& [k, v] : headers) req.set(k, v);
    if (!body.empty()) {
      req.body() = body;
      req.prepare_payload();
    }
    http::write(socket, req);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 << 20);
    if (verb == http::verb::head) parser.skip(true);
    http::read(socket, buffer, parser);
    auto res = parser.release();
    Reply r;
    r.status = res.result_int();
    for (const auto& f : res) r.headers[std::string(f.name_string())] = std::string(f.value());
    r.body = res.body();
    return r;
  }
  Reply get(const std::string& target, std::map<std::string, std::string> headers = {}) {
    return request(http::verb::get, target, std::move(headers));
  }

  // Waits until the sampler has made a few passes, as seen through the API.
  void wait_for_passes(std::uint64_t n) {
    for (int i = 0; i < 200; ++i) {
      if (get("/api/v1/info").body_json()["sampler"]["passes"].get<std::uint64_t>() >= n) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    FAIL() << "sampler made fewer than " << n << " passes in 5 s";
  }

  TempDir dir_;
  AppConfig config_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
  std::uint16_t port_ = 0;
};

class StreamClient {
 public:
  explicit StreamClient(std::uint16_t port, const std::string& target = "/api/v1/stream") : ws_(ioc_) {
    ws_.next_layer().connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
    set_receive_timeout(ws_.next_layer(), 5);
    ws_.handshake("127.0.0.1", target);
  }
  void send(const std::string& text) { ws_.write(net::buffer(text)); }
  json read() {
    beast::flat_buffer buffer;
    ws_.read(buffer);
    return json::parse(beast::buffers_to_string(buffer.data()));
  }
  // Reads until a message of this type arrives.
  json read_type(const std::string& type) {
    for (int i = 0; i < 100; ++i) {
      json m = read();
      if (m["type"] == type) return m;
    }
    return json();
  }
  websocket::stream<tcp::socket>& ws() { return ws_; }

 private:
  net::io_context ioc_;
  websocket::stream<tcp::socket> ws_;
};


}  // namespace perfscope::testing
