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

#include <boost/beast/ssl/ssl_stream.hpp>

#include "server/http/send_queue.hpp"
#include "server/http/session_context.hpp"

namespace perfscope::server {

// What the stream hub holds of a session; the sessions themselves (plain or TLS) live in
// websocket_session.cpp.
class WebSocketSession {
 public:
  enum class Role { kStream, kIngest };
  static constexpr std::size_t kMaxIngestInFlight = 8;

  virtual ~WebSocketSession() = default;
  virtual void deliver(std::shared_ptr<const PreparedBatch> batch) = 0;
  // A ready message for every stream client (droppable, like sample passes).
  virtual void deliver_text(std::shared_ptr<const std::string> text) = 0;
  virtual void close_going_away() = 0;
};

// Completes the upgrade whose HTTP request the HTTP session has read, over that session's
// stream. `slot` keeps the connection's place under the connection cap until the session ends.
void start_websocket_session(beast::tcp_stream&& stream, const SessionContext& ctx, WebSocketSession::Role role,
                             std::shared_ptr<void> slot, http::request<http::string_body> upgrade);
void start_websocket_session(beast::ssl_stream<beast::tcp_stream>&& stream, const SessionContext& ctx,
                             WebSocketSession::Role role, std::shared_ptr<void> slot,
                             http::request<http::string_body> upgrade);

}  // namespace perfscope::server
