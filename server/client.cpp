#include "server/client.hpp"

#include <nlohmann/json.hpp>

#include "server/event_codec.hpp"
#include "server/net.hpp"

namespace perfscope::server {

Result<std::pair<std::string, std::string>> parse_http_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) return Status::invalid_argument("server URL must start with http://: " + url, "server");
  std::string rest = url.substr(scheme.size());
  rest = rest.substr(0, rest.find('/'));
  auto colon = rest.rfind(':');
  std::string host = colon == std::string::npos ? rest : rest.substr(0, colon);
  std::string port = colon == std::string::npos ? "80" : rest.substr(colon + 1);
  if (host.empty() || port.empty() || port.find_first_not_of("0123456789") != std::string::npos) {
    return Status::invalid_argument("server URL must look like http://host:port, got " + url, "server");
  }
  return std::make_pair(host, port);
}

struct HttpPoster::Connection {
  net::io_context ioc;
  beast::tcp_stream stream{ioc};
  bool open = false;
};

HttpPoster::HttpPoster(std::string host, std::string port, std::chrono::milliseconds timeout)
    : host_(std::move(host)), port_(std::move(port)), timeout_(timeout), conn_(std::make_unique<Connection>()) {}

HttpPoster::~HttpPoster() = default;

Result<HttpPoster::Response> HttpPoster::post(const std::string& target, const std::string& content_type,
                                              const std::string& body) {
  return exchange(true, target, content_type, body);
}

Result<HttpPoster::Response> HttpPoster::get(const std::string& target) { return exchange(false, target, {}, {}); }

Result<HttpPoster::Response> HttpPoster::exchange(bool is_post, const std::string& target,
                                                  const std::string& content_type, const std::string& body) {
  const char* method = is_post ? "POST " : "GET ";
  Connection& c = *conn_;
  const std::string where = "http://" + host_ + ":" + port_;
  for (int attempt = 0; attempt < 2; ++attempt) {  // a kept-alive connection may have been closed
    beast::error_code ec;
    if (!c.open) {
      tcp::resolver resolver(c.ioc);
      auto endpoints = resolver.resolve(host_, port_, ec);
      if (ec) return Status::unavailable("cannot resolve " + host_ + ": " + ec.message());
      c.stream.expires_after(timeout_);
      c.stream.connect(endpoints, ec);
      if (ec) return Status::unavailable("cannot connect to " + where + ": " + ec.message());
      c.open = true;
    }
    http::request<http::string_body> req(is_post ? http::verb::post : http::verb::get, target, 11);
    req.set(http::field::host, host_);
    if (is_post) req.set(http::field::content_type, content_type);
    if (!token_.empty()) req.set(http::field::authorization, "Bearer " + token_);
    req.keep_alive(true);
    if (is_post) {
      req.body() = body;
      req.prepare_payload();
    }
    c.stream.expires_after(timeout_);
    http::write(c.stream, req, ec);
    http::response_parser<http::string_body> parser;
    parser.body_limit(1ULL << 30);  // reports and traces can be large
    beast::flat_buffer buffer;
    if (!ec) http::read(c.stream, buffer, parser, ec);
    if (ec) {
      c.stream.socket().close(ec);
      c.open = false;
      if (attempt == 0) continue;
      return Status::unavailable(method + where + target + " failed: " + ec.message());
    }
    auto res = parser.release();
    if (!res.keep_alive()) {
      c.stream.socket().close(ec);
      c.open = false;
    }
    return Response{res.result_int(), std::move(res.body())};
  }
  return Status::unavailable(method + where + target + " failed");
}

Result<std::unique_ptr<EventClient>> EventClient::create(ClientOptions options) {
  auto hp = parse_http_url(options.url);
  if (!hp.ok()) return hp.status();
  std::unique_ptr<EventClient> c(new EventClient(std::move(options), hp->first, hp->second));
  c->thread_ = std::thread([p = c.get()] { p->run(); });
  return c;
}

EventClient::EventClient(ClientOptions options, std::string host, std::string port)
    : options_(std::move(options)), poster_(std::move(host), std::move(port), options_.timeout) {
  poster_.set_token(options_.token);
}

EventClient::~EventClient() {
  flush();
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void EventClient::send(std::vector<Event> events) {
  {
    std::lock_guard lock(mu_);
    for (Event& e : events) {
      if (queue_.size() >= options_.max_queued_events) {
        ++stats_.events_dropped;
        continue;
      }
      queue_.push_back(std::move(e));
      ++queued_total_;
    }
    if (queue_.size() < options_.batch_events) return;
  }
  wake_.notify_one();
}

void EventClient::flush() {
  std::unique_lock lock(mu_);
  const std::uint64_t target = queued_total_;
  flushing_ = true;
  wake_.notify_one();
  idle_.wait(lock, [&] { return settled_total_ >= target || stopping_; });
}

ClientStats EventClient::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

Monitor::Sink EventClient::sink() {
  return [this](const std::vector<Event>& events) { send(events); };
}

void EventClient::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait_for(lock, options_.flush_interval,
                   [&] { return stopping_ || flushing_ || queue_.size() >= options_.batch_events; });
    flushing_ = false;  // everything queued now is taken below, batch after batch
    if (queue_.empty()) {
      idle_.notify_all();
      if (stopping_) return;
      continue;
    }
    std::vector<Event> batch;
    const std::size_t n = std::min(queue_.size(), options_.batch_events);
    batch.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    lock.unlock();
    auto res = poster_.post("/api/v1/events", "application/x-ndjson", encode_ndjson(batch));
    lock.lock();
    if (res.ok() && res->status == 200) {
      stats_.events_sent += n;
      ++stats_.batches_sent;
    } else {
      stats_.events_failed += n;
      stats_.last_error = res.ok() ? "HTTP " + std::to_string(res->status) + ": " + res->body : res.status().message();
    }
    settled_total_ += n;
    idle_.notify_all();
    if (!queue_.empty() && settled_total_ < queued_total_) flushing_ = true;  // keep sending what is left
  }
}

}  // namespace perfscope::server
