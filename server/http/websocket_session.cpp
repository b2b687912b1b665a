#include "server/http/websocket_session.hpp"

#include <unordered_map>
#include <vector>

#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <nlohmann/json.hpp>

#include "server/http/subscription.hpp"

namespace perfscope::server {

using nlohmann::json;

namespace {

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One WebSocket client over `Stream` (beast::tcp_stream or TlsStream).
template <class Stream>
class Session final : public WebSocketSession, public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(Stream&& stream, const SessionContext& ctx, Role role);
  ~Session() override;
  void hold(std::shared_ptr<void> slot) { slot_ = std::move(slot); }
  void run(http::request<http::string_body> upgrade);
  void deliver(std::shared_ptr<const PreparedBatch> batch) override;
  void deliver_text(std::shared_ptr<const std::string> text) override;
  void close_going_away() override;

 private:
  void on_accept(beast::error_code ec);
  void do_read();
  void on_read(beast::error_code ec, std::size_t bytes);
  void handle_message(std::string text);
  void handle_subscribe(const std::string& text);
  void handle_ingest(std::string text);
  void on_ingested(std::uint64_t seq, const HttpResponse& response);
  void on_batch(const std::shared_ptr<const PreparedBatch>& batch);
  bool matches(const StreamSeries& series);
  void send(std::string text, bool droppable);
  void do_write();
  void on_write(beast::error_code ec, std::size_t bytes);
  void do_close();
  // Back-pressure on the client: its next message is not read while its ingest batches await
  // their commit or its replies wait unread, so neither can grow without bound.
  bool reads_blocked() const {
    return (role_ == Role::kIngest && ingest_in_flight_ >= kMaxIngestInFlight) || queue_.replies_full();
  }
  void resume_reading();

  websocket::stream<Stream> ws_;
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

template <class Stream>
Session<Stream>::Session(Stream&& stream, const SessionContext& ctx, Role role)
    : ws_(std::move(stream)), ctx_(ctx), role_(role), queue_(ctx.config.ws_send_queue_max) {}

template <class Stream>
Session<Stream>::~Session() { ctx_.hub.leave(this); }

template <class Stream>
void Session<Stream>::run(http::request<http::string_body> upgrade) {
  beast::get_lowest_layer(ws_).expires_never();  // the websocket timeout takes over
  ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
  ws_.set_option(websocket::stream_base::decorator(
      [](websocket::response_type& res) { res.set(http::field::server, "perfscope"); }));
  // One bound for every client message, ingest batches included: a batch waits whole in memory
  // until its commit, up to kMaxIngestInFlight of them per client.
  ws_.read_message_max(ctx_.config.ws_max_message_bytes);
  ws_.async_accept(upgrade, beast::bind_front_handler(&Session::on_accept, this->shared_from_this()));
}

template <class Stream>
void Session<Stream>::on_accept(beast::error_code ec) {
  if (ec) return;
  open_ = true;
  if (role_ == Role::kStream) {
    ctx_.hub.join(this->shared_from_this());
    send(json{{"type", "hello"}, {"sampling_interval_ms", ctx_.sampling_interval.count()},
              {"send_queue", ctx_.config.ws_send_queue_max}}
             .dump(),
         false);
  } else {
    send(json{{"type", "hello"}, {"max_in_flight", kMaxIngestInFlight}}.dump(), false);
  }
  do_read();
}

template <class Stream>
void Session<Stream>::do_read() {
  ws_.async_read(buffer_, beast::bind_front_handler(&Session::on_read, this->shared_from_this()));
}

template <class Stream>
void Session<Stream>::on_read(beast::error_code ec, std::size_t) {
  if (ec) {
    // Closed by the peer, timed out, or an oversized message (Beast sends the close frame):
    // the session ends once its last handler lets go of it.
    open_ = false;
    return;
  }
  std::string text = beast::buffers_to_string(buffer_.data());
  buffer_.consume(buffer_.size());
  handle_message(std::move(text));
  if (reads_blocked()) {
    read_paused_ = true;  // resumed by on_ingested or on_write
    return;
  }
  do_read();
}

template <class Stream>
void Session<Stream>::resume_reading() {
  if (!read_paused_ || !open_ || reads_blocked()) return;
  read_paused_ = false;
  do_read();
}

template <class Stream>
void Session<Stream>::handle_message(std::string text) {
  if (role_ == Role::kIngest) return handle_ingest(std::move(text));
  handle_subscribe(text);
}

template <class Stream>
void Session<Stream>::handle_ingest(std::string text) {
  const std::uint64_t seq = ++ingest_seq_;
  ++ingest_in_flight_;
  // Decoding and the commit happen off this strand; the ack comes back to it.
  net::post(ctx_.workers, [self = this->shared_from_this(), seq, text = std::move(text)]() mutable {
    HttpRequest request;
    request.method = "POST";
    request.path = kIngestPath;
    request.content_type = "application/json";
    request.body = std::move(text);
    handle_guarded(self->ctx_.handler, std::move(request), [self, seq](HttpResponse response) {
      net::post(self->ws_.get_executor(),
                [self, seq, response = std::move(response)] { self->on_ingested(seq, response); });
    });
  });
}

template <class Stream>
void Session<Stream>::on_ingested(std::uint64_t seq, const HttpResponse& response) {
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
  resume_reading();
}

template <class Stream>
void Session<Stream>::handle_subscribe(const std::string& text) {
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

template <class Stream>
void Session<Stream>::deliver(std::shared_ptr<const PreparedBatch> batch) {
  net::post(ws_.get_executor(), [self = this->shared_from_this(), batch = std::move(batch)] { self->on_batch(batch); });
}

template <class Stream>
void Session<Stream>::deliver_text(std::shared_ptr<const std::string> text) {
  net::post(ws_.get_executor(), [self = this->shared_from_this(), text = std::move(text)] {
    if (self->role_ == Role::kStream) self->send(*text, true);
  });
}

template <class Stream>
bool Session<Stream>::matches(const StreamSeries& series) {
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

template <class Stream>
void Session<Stream>::on_batch(const std::shared_ptr<const PreparedBatch>& batch) {
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

template <class Stream>
void Session<Stream>::send(std::string text, bool droppable) {
  if (!open_) return;
  std::uint64_t before = queue_.dropped();
  queue_.push(std::make_shared<const std::string>(std::move(text)), droppable);
  if (queue_.dropped() != before) ctx_.hub.count_dropped(queue_.dropped() - before);
  if (!queue_.writing()) do_write();
}

template <class Stream>
void Session<Stream>::do_write() {
  if (queue_.empty()) {
    queue_.set_writing(false);
    if (close_pending_) do_close();
    return;
  }
  queue_.set_writing(true);
  ws_.text(true);
  ws_.async_write(net::buffer(*queue_.front()), beast::bind_front_handler(&Session::on_write, this->shared_from_this()));
}

template <class Stream>
void Session<Stream>::on_write(beast::error_code ec, std::size_t) {
  queue_.pop_front();
  if (ec) {
    open_ = false;
    queue_.set_writing(false);
    queue_.clear();
    return;
  }
  resume_reading();
  do_write();
}

template <class Stream>
void Session<Stream>::close_going_away() {
  net::post(ws_.get_executor(), [self = this->shared_from_this()] {
    if (!self->open_) return;
    self->close_pending_ = true;
    if (!self->queue_.writing()) self->do_close();
  });
}

template <class Stream>
void Session<Stream>::do_close() {
  open_ = false;
  close_pending_ = false;
  queue_.clear();
  ws_.async_close(websocket::close_code::going_away, [self = this->shared_from_this()](beast::error_code) {});
}

template <class Stream>
void start(Stream&& stream, const SessionContext& ctx, WebSocketSession::Role role, std::shared_ptr<void> slot,
           http::request<http::string_body> upgrade) {
  auto session = std::make_shared<Session<Stream>>(std::move(stream), ctx, role);
  session->hold(std::move(slot));
  session->run(std::move(upgrade));
}

}  // namespace

void start_websocket_session(beast::tcp_stream&& stream, const SessionContext& ctx, WebSocketSession::Role role,
                             std::shared_ptr<void> slot, http::request<http::string_body> upgrade) {
  start(std::move(stream), ctx, role, std::move(slot), std::move(upgrade));
}

void start_websocket_session(TlsStream&& stream, const SessionContext& ctx, WebSocketSession::Role role,
                             std::shared_ptr<void> slot, http::request<http::string_body> upgrade) {
  start(std::move(stream), ctx, role, std::move(slot), std::move(upgrade));
}

}  // namespace perfscope::server
