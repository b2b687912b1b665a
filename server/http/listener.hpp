// Listener: accepts TCP connections and starts an HTTP session (plain or TLS) for each on its
// own strand.
// Thread-safety: strand-free (the acceptor is used from its handlers and from stop(), which
// the server posts to the same io_context before it stops running).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "engine/base/status.hpp"
#include "server/http/session_context.hpp"

namespace perfscope::server {

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(net::io_context& ioc, const SessionContext& ctx);
  Status open(const tcp::endpoint& endpoint);
  void start();
  void stop();
  tcp::endpoint local_endpoint() const;

 private:
  void do_accept();
  void on_accept(beast::error_code ec, tcp::socket socket);
  void accept_one(beast::error_code ec, tcp::socket socket);  // on_accept's work; may throw
  void refuse(tcp::socket socket, const std::string& message);

  // Open connections per client address (the cap per client: one client that keeps
  // reconnecting cannot take every slot). Shared with the connections' slots, which may
  // outlive the listener.
  struct PerClient {
    std::mutex mu;
    std::unordered_map<std::string, std::size_t> open;
  };
  std::shared_ptr<PerClient> per_client_ = std::make_shared<PerClient>();

  net::io_context& ioc_;
  tcp::acceptor acceptor_;
  const SessionContext& ctx_;
};

}  // namespace perfscope::server
