// libFuzzer target: the HTTP session as the network sees it. The whole server (Beast's parser,
// our limits and access checks, the HTTP and WebSocket sessions, every endpoint's handler and
// a small database) runs in this process on a loopback port; each input is one connection's
// bytes: pipelined requests, chunked bodies with extensions and trailers, upgrades followed by
// WebSocket frames. The connection's write side is then shut and its answer read until the
// server closes. A crash, a sanitizer report or a server that stops answering /api/v1/info is a
// finding, and so is an exception that escaped a connection's handler (counted in /api/v1/info).
// Loopback rather than an in-memory stream: the sessions are the ones users reach,
// unchanged, with nothing stubbed.
//
// Input: bytes as sent, except that "\xff\xfe" + 2-byte count + byte expands to that byte
// repeated count × 4 times (up to 256 KiB), so fields past every limit are in reach.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <thread>

#include "server/cli/serve.hpp"

using namespace perfscope;
using namespace perfscope::server;

namespace {

std::uint16_t g_port = 0;

int connect_loopback() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  timeval tv{2, 0};  // an answer within 2 s, or the connection is given up
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(g_port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `bytes`, shuts the write side, reads until the server closes; returns what came back.
std::string exchange(std::string_view bytes) {
  const int fd = connect_loopback();
  if (fd < 0) return {};
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server closed early (a refused request): fine
    sent += static_cast<std::size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string answer;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    if (answer.size() < (1 << 20)) answer.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return answer;
}

std::string expand(const std::uint8_t* data, std::size_t size) {
  std::string out;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0xFF && i + 4 < size && data[i + 1] == 0xFE) {
      const std::size_t count = (static_cast<std::size_t>(data[i + 2]) << 8 | data[i + 3]) * 4;
      out.append(count, static_cast<char>(data[i + 4]));
      i += 4;
    } else {
      out += static_cast<char>(data[i]);
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  static std::string dir = [] {
    char tmpl[] = "/tmp/perfscope-session-fuzz-XXXXXX";
    const char* made = ::mkdtemp(tmpl);
    if (!made) std::abort();
    return std::string(made);
  }();
  AppConfig config;
  config.server.listen_host = "127.0.0.1";
  config.server.listen_port = 0;
  config.server.max_body_bytes = 256 << 10;
  config.server.header_timeout = std::chrono::milliseconds(300);
  config.server.request_timeout = std::chrono::milliseconds(1000);
  config.server.shutdown_timeout = std::chrono::milliseconds(500);
  config.server.max_connections_per_client = 0;  // one client makes every connection here
  config.engine.enable_gpu_collector = false;
  config.engine.sampling_interval = std::chrono::milliseconds(250);
  config.storage.data_dir = dir;
  config.storage.commit_interval = std::chrono::milliseconds(50);
  // Lives until the process exits (reachable, so no leak is reported); stopped at exit.
  static Server* server = new Server(config);
  if (Status s = server->start(); !s.ok()) {
    std::fprintf(stderr, "session fuzz: the server did not start: %s\n", s.message().c_str());
    std::abort();
  }
  g_port = server->port();
  static std::thread serving([] { server->run(false); });
  std::atexit([] {
    server->request_stop();
    if (serving.joinable()) serving.join();
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static std::uint64_t runs = 0;
  (void)exchange(expand(data, size));
  // Every 64 inputs: is the server still serving, and did no exception escape a handler (the
  // io threads catch those and close the connection, so the process would not show them)?
  if (++runs % 64 == 0) {
    std::string info;
    // Three tries: on a machine with a fuzzer per core a healthy server can answer late.
    for (int attempt = 0; attempt < 3 && info.rfind("HTTP/1.1 200", 0) != 0; ++attempt) {
      info = exchange("GET /api/v1/info HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    }
    if (info.rfind("HTTP/1.1 200", 0) != 0) {
      std::fprintf(stderr, "session fuzz: the server no longer answers: %.200s\n", info.c_str());
      std::abort();
    }
    if (info.find("\"escaped_exceptions\":0") == std::string::npos) {
      std::fprintf(stderr, "session fuzz: an exception escaped a connection's handler (see the log above)\n");
      std::abort();
    }
  }
  return 0;
}
