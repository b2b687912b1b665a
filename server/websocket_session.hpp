// WebSocketSession: one WebSocket client, in one of two roles.
//  - Stream (/api/v1/stream): the client sends {"subscribe":["pattern",…]}; the session then
//    sends one message per sampling pass with the samples its patterns match.
//  - Ingest (/api/v1/ingest): each client message is a batch of events ({"events":[…]});
//    each is answered, after its database commit, with {"type":"ack","seq":n,"accepted":N}
//    or {"type":"error","seq":n,"error":{…}} (seq counts the client's messages from 1).
//    At most kMaxIngestInFlight batches are pending per client: beyond that the session
//    stops reading until acks go out (back-pressure through TCP).
// Writes go one at a time from a BOUNDED queue: when a slow client lets it fill, the stalest
// sample message is dropped and counted, and the count is reported in the next message sent
// ("dropped"). Acks and error replies are never dropped.
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
  enum class Role { kStream, kIngest };
  static constexpr std::size_t kMaxIngestInFlight = 8;

  WebSocketSession(tcp::socket&& socket, const SessionContext& ctx, Role role);
  ~WebSocketSession();
  // Keeps `slot` (the connection's place under the connection cap) until the session ends.
  void hold(std::shared_ptr<void> slot) { slot_ = std::move(slot); }

  // Completes the upgrade whose HTTP request the HTTP session has read.
  void run(http::request<http::string_body> upgrade);
  void deliver(std::shared_ptr<const PreparedBatch> batch);
  // A ready message for every stream client (droppable, like sample passes).
  void deliver_text(std::shared_ptr<const std::string> text);
  void close_going_away();

 private:
  void on_accept(beast::error_code ec);
  void do_read();
  void on_read(beast::error_code ec, std::size_t bytes);
  void handle_message(std::string text);
  void handle_subscribe(const std::string& text);
  void handle_ingest(std::string text);
  void on_ingested(std::uint64_t seq, const ApiResponse& response);
  void on_batch(const std::shared_ptr<const PreparedBatch>& batch);
  bool matches(const StreamSeries& series);
  void send(std::string text, bool droppable);
  void do_write();
  void on_write(beast::error_code ec, std::size_t bytes);
  void do_close();

  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer buffer_;
  const SessionContext& ctx_;
  const Role role_;
  SendQueue queue_;
  std::uint64_t ingest_seq_ = 0;       // client messages received (ingest role)
  std::size_t ingest_in_flight_ = 0;   // batches awaiting their commit
  bool read_paused_ = false;           // reading stopped for back-pressure
  bool open_ = false;
  bool close_pending_ = false;
  std::vector<SeriesPattern> patterns_;
  std::unordered_map<const StreamSeries*, bool> match_cache_;  // cleared on re-subscribe
  std::shared_ptr<void> slot_;
};

}  // namespace perfscope::server
