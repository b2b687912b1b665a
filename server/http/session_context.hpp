// What every connection needs from the server, borrowed for the server's lifetime.
#pragma once

#include <atomic>

#include "server/http/access.hpp"
#include "server/http/config.hpp"
#include "server/http/request_handler.hpp"
#include "server/http/static_assets.hpp"
#include "server/http/stream_hub.hpp"
#include "server/net/net.hpp"

namespace perfscope::server {

// Live load figures shared by the listener and every session.
struct ServerLoad {
  std::atomic<std::size_t> connections{0};
  std::atomic<std::size_t> pending_requests{0};
  std::atomic<std::uint64_t> refused_connections{0};
  std::atomic<std::uint64_t> refused_requests{0};
  std::atomic<std::uint64_t> refused_hosts{0};  // Host headers that named no name of this server
  std::atomic<std::uint64_t> refused_origins{0};  // writes and upgrades from a foreign page
};

struct SessionContext {
  const ServerConfig& config;
  const RequestHandler& handler;  // the REST API
  const StaticAssets& assets;
  StreamHub& hub;
  net::thread_pool& workers;  // where blocking handlers run
  std::chrono::milliseconds sampling_interval;
  const AccessControl& access;
  const HostCheck& hosts;
  ServerLoad& load;
  net::ssl::context* tls = nullptr;  // set when the server speaks TLS
};

}  // namespace perfscope::server
