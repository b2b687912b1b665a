// Server: perfscope's running process — sampler, database writer and reader, the HTTP and
// WebSocket front end — wired together and torn down in order:
//   stop accepting → close WebSockets (going away) → stop collectors → commit the last db
//   batch → let in-flight work drain → return from run(); a timer forces the stop if
//   draining stalls past shutdown_timeout.
// Beast-free header (pimpl) so main and tests compile quickly.
//
// Thread-safety: start() and run() from the owning thread; request_stop() from any thread.
#pragma once

#include <functional>

#include <cstdint>
#include <memory>

#include "engine/base/status.hpp"
#include "server/api/app_config.hpp"

namespace perfscope::server {

class Server {
 public:
  explicit Server(AppConfig config);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Opens the database, starts sampling and binds the listening socket.
  Status start();
  // The port actually bound (useful with port 0).
  std::uint16_t port() const;
  // Serves until request_stop() or, with handle_signals, SIGINT/SIGTERM; then shuts down.
  // `on_ready` runs once the signal handlers are in place, just before serving: a SIGTERM
  // from whoever waits for readiness is then always a graceful stop.
  void run(bool handle_signals, const std::function<void()>& on_ready = {});
  void request_stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace perfscope::server
