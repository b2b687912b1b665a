// What every connection needs from the server, borrowed for the server's lifetime.
#pragma once

#include "server/access.hpp"
#include "server/api.hpp"
#include "server/config.hpp"
#include "server/net.hpp"
#include "server/static_assets.hpp"
#include "server/stream_hub.hpp"

namespace perfscope::server {

struct SessionContext {
  const ServerConfig& config;
  const Api& api;
  const StaticAssets& assets;
  StreamHub& hub;
  net::thread_pool& workers;  // where blocking handlers run
  std::chrono::milliseconds sampling_interval;
  const AccessControl& access;
};

}  // namespace perfscope::server
