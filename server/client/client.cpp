#include "server/client/client.hpp"

#include <optional>

#include <nlohmann/json.hpp>

#include "server/wire/event_codec.hpp"
#include "server/net/net.hpp"
#include "server/net/read_buffer.hpp"

#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>

namespace perfscope::server {

Result<ServerUrl> parse_http_url(const std::string& url) {
  ServerUrl out;
  std::string rest;
  if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else if (url.rfind("https://", 0) == 0) {
    rest = url.substr(8);
    out.tls = true;
  } else {
    return Status::invalid_argument("server URL must start with http:// or https://: " + url, "server");
  }
  rest = rest.substr(0, rest.find('/'));
  auto colon = rest.rfind(':');
  out.host = colon == std::string::npos ? rest : rest.substr(0, colon);
  out.port = colon == std::string::npos ? (out.tls ? "443" : "80") : rest.substr(colon + 1);
  if (out.host.empty() || out.port.empty() || out.port.find_first_not_of("0123456789") != std::string::npos) {
    return Status::invalid_argument("server URL must look like http://host:port, got " + url, "server");
  }
  return out;
}

struct HttpPoster::Connection {
  net::io_context ioc;
  std::optional<net::ssl::context> tls_context;  // https:// servers only
  beast::tcp_stream plain{ioc};
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls;  // a fresh one per connection
  bool open = false;

  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : plain; }
  void close() {
    beast::error_code ignored;
    lowest().socket().close(ignored);
    open = false;
  }
};

namespace {
constexpr std::uint32_t kMaxAnswerHeaderBytes = 16 << 10;

// Runs one asynchronous operation to completion on `ioc` and returns its error. The stream's
// timeout (expires_after) applies to asynchronous operations only: a synchronous read from a
// peer that accepts and stays silent would wait for ever, and a scrape target that did so kept
// its thread, and the process, from stopping.
template <class Start>
beast::error_code run_one(net::io_context& ioc, Start start) {
  beast::error_code result = net::error::would_block;
  start([&result](beast::error_code ec, auto&&...) { result = ec; });
  ioc.restart();
  ioc.run();
  return result;
}
}  // namespace

HttpPoster::HttpPoster(ServerUrl url, std::chrono::milliseconds timeout)
    : url_(std::move(url)), timeout_(timeout), conn_(std::make_unique<Connection>()) {
  if (url_.tls) {
    conn_->tls_context.emplace(net::ssl::context::tls_client);
    beast::error_code ec;
    if (!url_.ca_file.empty() && url_.pinned_certificate.empty()) {
      conn_->tls_context->load_verify_file(url_.ca_file, ec);
      if (ec) setup_error_ = "cannot load the CA file " + url_.ca_file + ": " + ec.message();
    } else if (url_.pinned_certificate.empty()) {
      conn_->tls_context->set_default_verify_paths(ec);
    } else {
      // The certificate is the trust anchor itself, whether or not it is self-signed.
      conn_->tls_context->load_verify_file(url_.pinned_certificate, ec);
      X509_STORE_set_flags(SSL_CTX_get_cert_store(conn_->tls_context->native_handle()), X509_V_FLAG_PARTIAL_CHAIN);
    }
    if (ec && setup_error_.empty()) setup_error_ = "cannot load " + (url_.pinned_certificate.empty() ? std::string("the trust store") : url_.pinned_certificate) + ": " + ec.message();
    conn_->tls_context->set_verify_mode(net::ssl::verify_peer);
  }
}

HttpPoster::~HttpPoster() = default;

Result<HttpPoster::Response> HttpPoster::post(const std::string& target, const std::string& content_type,
                                              const std::string& body) {
  return guarded(true, target, content_type, body);
}

Result<HttpPoster::Response> HttpPoster::get(const std::string& target) { return guarded(false, target, {}, {}); }

// What the peer sends cannot end the caller's thread (a scrape target, say): an exception from
// the exchange (Beast's field storage, an allocation) is an error like any other.
Result<HttpPoster::Response> HttpPoster::guarded(bool is_post, const std::string& target, const std::string& content_type,
                                                 const std::string& body) {
  try {
    return exchange(is_post, target, content_type, body);
  } catch (const std::exception& e) {
    conn_->close();
    return Status::unavailable(std::string(is_post ? "POST " : "GET ") + url_.text() + target + " failed: " + e.what());
  }
}

Result<HttpPoster::Response> HttpPoster::exchange(bool is_post, const std::string& target,
                                                  const std::string& content_type, const std::string& body) {
  const char* method = is_post ? "POST " : "GET ";
  if (!setup_error_.empty()) return Status::unavailable(setup_error_);
  Connection& c = *conn_;
  const std::string where = url_.text();
  for (int attempt = 0; attempt < 2; ++attempt) {  // a kept-alive connection may have been closed
    beast::error_code ec;
    if (!c.open) {
      tcp::resolver resolver(c.ioc);
      tcp::resolver::results_type endpoints;
      // Within the timeout too: a name server that does not answer would hold the thread.
      net::steady_timer resolve_deadline(c.ioc, timeout_);
      resolve_deadline.async_wait([&resolver](beast::error_code e) {
        if (!e) resolver.cancel();
      });
      ec = run_one(c.ioc, [&](auto handler) {
        resolver.async_resolve(url_.host, url_.port, [&endpoints, &resolve_deadline, handler](beast::error_code e,
                                                                                            tcp::resolver::results_type r) {
          endpoints = std::move(r);
          resolve_deadline.cancel();
          handler(e);
        });
      });
      if (ec) return Status::unavailable("cannot resolve " + url_.host + ": " + ec.message());
      if (url_.tls) c.tls = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(c.ioc, *c.tls_context);
      c.lowest().expires_after(timeout_);
      ec = run_one(c.ioc, [&](auto handler) { c.lowest().async_connect(endpoints, handler); });
      if (ec) return Status::unavailable("cannot connect to " + where + ": " + ec.message());
      if (url_.tls) {
        SSL_set_tlsext_host_name(c.tls->native_handle(), url_.host.c_str());  // SNI
        if (url_.pinned_certificate.empty()) c.tls->set_verify_callback(net::ssl::host_name_verification(url_.host));
        c.lowest().expires_after(timeout_);
        ec = run_one(c.ioc, [&](auto handler) { c.tls->async_handshake(net::ssl::stream_base::client, handler); });
        if (ec) {
          c.close();
          return Status::unavailable("TLS with " + where + " failed: " + ec.message());
        }
      }
      c.open = true;
    }
    http::request<http::string_body> req(is_post ? http::verb::post : http::verb::get, target, 11);
    req.set(http::field::host, url_.host);
    if (is_post) req.set(http::field::content_type, content_type);
    if (!token_.empty()) req.set(http::field::authorization, "Bearer " + token_);
    if (!accept_.empty()) req.set(http::field::accept, accept_);
    req.keep_alive(true);
    if (is_post) {
      req.body() = body;
      req.prepare_payload();
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(body_limit_);
    parser.header_limit(kMaxAnswerHeaderBytes);
    // Bounded like the server's own (read_buffer.hpp): a scrape target's endless chunk line or
    // trailer could otherwise end the process.
    beast::flat_buffer buffer(read_buffer_bytes(kMaxAnswerHeaderBytes));
    // The whole exchange within the timeout, however the peer trickles or stalls.
    auto exchange_on = [&](auto& stream) {
      ec = run_one(c.ioc, [&](auto handler) { http::async_write(stream, req, handler); });
      if (!ec) ec = run_one(c.ioc, [&](auto handler) { http::async_read(stream, buffer, parser, handler); });
    };
    c.lowest().expires_after(timeout_);
    if (c.tls) exchange_on(*c.tls);
    else exchange_on(c.plain);
    if (ec == http::error::body_limit) {
      c.close();
      return Status::unavailable(method + where + target + " failed: the body exceeds the limit of " +
                                 std::to_string(body_limit_) + " bytes (body limit)");
    }
    if (ec) {
      c.close();
      // A kept-alive connection the peer closed is retried once; a peer that let the time
      // run out is not (the timeout bounds the whole exchange).
      if (attempt == 0 && ec != beast::error::timeout) continue;
      return Status::unavailable(method + where + target + " failed: " + ec.message());
    }
    auto res = parser.release();
    if (!res.keep_alive()) c.close();
    std::string answered_type(res[http::field::content_type]);
    return Response{res.result_int(), std::move(res.body()), std::move(answered_type)};
  }
  return Status::unavailable(method + where + target + " failed");
}

Result<std::unique_ptr<EventClient>> EventClient::create(ClientOptions options) {
  auto hp = parse_http_url(options.url);
  if (!hp.ok()) return hp.status();
  std::unique_ptr<EventClient> c(new EventClient(std::move(options), std::move(*hp)));
  c->thread_ = std::thread([p = c.get()] { p->run(); });
  return c;
}

EventClient::EventClient(ClientOptions options, ServerUrl url)
    : options_(std::move(options)), poster_(std::move(url), options_.timeout) {
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
