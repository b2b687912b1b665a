#include "server/websocket_session.hpp"

#include <nlohmann/json.hpp>

#include "server/subscription.hpp"

namespace perfscope::server {

using nlohmann::json;

WebSocketSession::WebSocketSession(tcp::socket&& socket, const SessionContext& ctx, Role role)
    : ws_(std::move(socket)), ctx_(ctx), role_(role), queue_(ctx.config.ws_send_queue_max) {}

WebSocketSession::~WebSocketSession() { ctx_.hub.leave(this); }

void WebSocketSession::run(http::request<http::string_body> upgrade) {
  beast::get_lowest_layer(ws_).expires_never();  // the websocket timeout takes over
  ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
  ws_.set_option(websocket::stream_base::decorator(
      [](websocket::response_type& res) { res.set(http::field::server, "perfscope"); }));
  // Ingest batches may be as large as an HTTP ingest body; stream clients only subscribe.
  ws_.read_message_max(role_ == Role::kIngest ? ctx_.config.max_body_bytes : ctx_.config.ws_max_message_bytes);
  ws_.async_accept(upgrade, beast::bind_front_handler(&WebSocketSession::on_accept, shared_from_this()));
}

void WebSocketSession::on_accept(beast::error_code ec) {
  if (ec) return;
  open_ = true;
  if (role_ == Role::kStream) {
    ctx_.hub.join(shared_from_this());
    send(json{{"type", "hello"}, {"sampling_interval_ms", ctx_.sampling_interval.count()},
              {"send_queue", ctx_.config.ws_send_queue_max}}
             .dump(),
         false);
  } else {
    send(json{{"type", "hello"}, {"max_in_flight", kMaxIngestInFlight}}.dump(), false);
  }
  do_read();
}

void WebSocketSession::do_read() {
  ws_.async_read(buffer_, beast::bind_front_handler(&WebSocketSession::on_read, shared_from_this()));
}

void WebSocketSession::on_read(beast::error_code ec, std::size_t) {
  if (ec) {
    // Closed by the peer, timed out, or an oversized message (Beast sends the close frame):
    // the session ends once its last handler lets go of it.
    open_ = false;
    return;
  }
  std::string text = beast::buffers_to_string(buffer_.data());
  buffer_.consume(buffer_.size());
  handle_message(std::move(text));
  if (role_ == Role::kIngest && ingest_in_flight_ >= kMaxIngestInFlight) {
    read_paused_ = true;  // resumed by on_ingested
    return;
  }
  do_read();
}

void WebSocketSession::handle_message(std::string text) {
  if (role_ == Role::kIngest) return handle_ingest(std::move(text));
  handle_subscribe(text);
}

void WebSocketSession::handle_ingest(std::string text) {
  const std::uint64_t seq = ++ingest_seq_;
  ++ingest_in_flight_;
  // Decoding and the commit happen off this strand; the ack comes back to it.
  net::post(ctx_.workers, [self = shared_from_this(), seq, text = std::move(text)]() mutable {
    ApiRequest request;
    request.method = "POST";
    request.path = "/api/v1/events";
    request.content_type = "application/json";
    request.body = std::move(text);
    self->ctx_.api.handle_async(std::move(request), [self, seq](ApiResponse response) {
      net::post(self->ws_.get_executor(),
                [self, seq, response = std::move(response)] { self->on_ingested(seq, response); });
    });
  });
}

void WebSocketSession::on_ingested(std::uint64_t seq, const ApiResponse& response) {
  --ingest_in_flight_;
  json body = json::parse(response.body, nullptr, false);
  json reply = {{"seq", seq}, {"status", response.status}};
  if (response.status == 200 && body.is_object()) {
    reply["type"] = "ack";
    reply["accepted"] = body.value("accepted", 0);
  } else {
    reply["type"] = "error";
    reply["error"] = body.is_object() && body.contains("error") ? body["error"] : json{{"message", response.body}};
  }
  send(reply.dump(), false);
  if (read_paused_ && open_) {
    read_paused_ = false;
    do_read();
  }
}

void WebSocketSession::handle_subscribe(const std::string& text) {
  auto reply_error = [&](std::string message, const char* field) {
    json err = {{"code", "invalid_argument"}, {"message", std::move(message)}};
    if (field) err["field"] = field;
    send(json{{"type", "error"}, {"error", err}}.dump(), false);
  };
  auto patterns = parse_subscription(text);
  if (!patterns.ok()) {
    const std::string& field = patterns.status().field();
    return reply_error(patterns.status().message(), field.empty() ? nullptr : field.c_str());
  }
  patterns_ = std::move(*patterns);
  match_cache_.clear();
  json echoed = json::array();
  for (const SeriesPattern& p : patterns_) echoed.push_back(p.text());
  send(json{{"type", "subscribed"}, {"patterns", echoed}}.dump(), false);
}

void WebSocketSession::deliver(std::shared_ptr<const PreparedBatch> batch) {
  net::post(ws_.get_executor(), [self = shared_from_this(), batch = std::move(batch)] { self->on_batch(batch); });
}

void WebSocketSession::deliver_text(std::shared_ptr<const std::string> text) {
  net::post(ws_.get_executor(), [self = shared_from_this(), text = std::move(text)] {
    if (self->role_ == Role::kStream) self->send(*text, true);
  });
}

bool WebSocketSession::matches(const StreamSeries& series) {
  auto [it, fresh] = match_cache_.try_emplace(&series, false);
  if (fresh) {
    for (const SeriesPattern& p : patterns_) {
      if (p.matches(series.key, series.canonical)) {
        it->second = true;
        break;
      }
    }
  }
  return it->second;
}

void WebSocketSession::on_batch(const std::shared_ptr<const PreparedBatch>& batch) {
  if (!open_ || patterns_.empty()) return;
  std::string text;
  for (std::size_t i = 0; i < batch->items.size(); ++i) {
    if (!matches(*batch->series[i])) continue;
    text += text.empty() ? "" : ",";
    text += batch->items[i];
  }
  if (text.empty()) return;
  // The dropped count is filled in when the message is built: the latest count at that time.
  send("{\"type\":\"samples\",\"ts_ns\":" + std::to_string(batch->ts_ns) + ",\"dropped\":" + std::to_string(queue_.dropped()) +
           ",\"samples\":[" + text + "]}",
       true);
}

void WebSocketSession::send(std::string text, bool droppable) {
  if (!open_) return;
  std::uint64_t before = queue_.dropped();
  queue_.push(std::make_shared<const std::string>(std::move(text)), droppable);
  if (queue_.dropped() != before) ctx_.hub.count_dropped(queue_.dropped() - before);
  if (!queue_.writing()) do_write();
}

void WebSocketSession::do_write() {
  if (queue_.empty()) {
    queue_.set_writing(false);
    if (close_pending_) do_close();
    return;
  }
  queue_.set_writing(true);
  ws_.text(true);
  ws_.async_write(net::buffer(*queue_.front()), beast::bind_front_handler(&WebSocketSession::on_write, shared_from_this()));
}

void WebSocketSession::on_write(beast::error_code ec, std::size_t) {
  queue_.pop_front();
  if (ec) {
    open_ = false;
    queue_.set_writing(false);
    queue_.clear();
    return;
  }
  do_write();
}

void WebSocketSession::close_going_away() {
  net::post(ws_.get_executor(), [self = shared_from_this()] {
    if (!self->open_) return;
    self->close_pending_ = true;
    if (!self->queue_.writing()) self->do_close();
  });
}

void WebSocketSession::do_close() {
  open_ = false;
  close_pending_ = false;
  queue_.clear();
  ws_.async_close(websocket::close_code::going_away, [self = shared_from_this()](beast::error_code) {});
}

}  // namespace perfscope::server
