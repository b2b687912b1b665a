// WebSocketSession: one client of /api/v1/stream. The client sends
// {"subscribe":["pattern",…]}; the session then sends one message per sampling pass with the
// samples its patterns match. Writes go one at a time from a BOUNDED queue: when a slow
// client lets it fill, the stalest sample message is dropped and counted, and the count is
// reported in the next message sent ("dropped").
//
// Thread-safety: strand-confined; deliver() and close_going_away() may be called from any
// thread (they post onto the strand).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "server/send_queue.hpp"
#include "server/session_context.hpp"

namespace perfscope::server {

class WebSocketSession : public std::enable_shared_from_this<WebSocketSession> {
 public:
  WebSocketSession(tcp::socket&& socket, const SessionContext& ctx);
  ~WebSocketSession();

  // Completes the upgrade whose HTTP request the HTTP session has read.
  void run(http::request<http::string_body> upgrade);
  void deliver(std::shared_ptr<const PreparedBatch> batch);
  void close_going_away();

 private:
  void on_accept(beast::error_code ec);
  void do_read();
  void on_read(beast::error_code ec, std::size_t bytes);
  void handle_message(const std::string& text);
  void on_batch(const std::shared_ptr<const PreparedBatch>& batch);
  bool matches(const StreamSeries& series);
  void send(std::string text, bool droppable);
  void do_write();
  void on_write(beast::error_code ec, std::size_t bytes);
  void do_close();

  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer buffer_;
  const SessionContext& ctx_;
  SendQueue queue_;
  bool open_ = false;
  bool close_pending_ = false;
  std::vector<SeriesPattern> patterns_;
  std::unordered_map<const StreamSeries*, bool> match_cache_;  // cleared on re-subscribe
};

}  // namespace perfscope::server
