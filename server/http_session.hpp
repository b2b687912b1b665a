// HttpSession: one HTTP/1.1 connection. Reads a request with a fresh parser (body and
// header limits, a read timeout), answers static assets and /healthz inline, runs API
// handlers on the worker pool and writes their response back on the connection's strand,
// and hands WebSocket upgrades of /api/v1/stream to a WebSocketSession.
//
// Thread-safety: strand-confined (the socket's executor is the connection's strand).
#pragma once

#include <memory>
#include <optional>

#include "server/session_context.hpp"

namespace perfscope::server {

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  // `slot` counts this connection against the cap until it closes.
  HttpSession(tcp::socket&& socket, const SessionContext& ctx, std::shared_ptr<void> slot);
  void run();

 private:
  void do_read();
  void on_header(beast::error_code ec, std::size_t bytes);
  void on_read(beast::error_code ec, std::size_t bytes);
  void send(ApiResponse response);
  void on_write(bool keep_alive, beast::error_code ec, std::size_t bytes);
  void do_close();

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  const SessionContext& ctx_;
  std::optional<http::request_parser<http::string_body>> parser_;
  unsigned request_version_ = 11;
  bool request_keep_alive_ = true;
  bool head_request_ = false;
  std::size_t requests_ = 0;
  std::string cors_origin_;  // the request's Origin when CORS allows it (echoed in the answer)
  std::shared_ptr<void> slot_;
  std::shared_ptr<http::response<http::string_body>> response_;  // alive while being written
};

}  // namespace perfscope::server
