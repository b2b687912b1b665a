#include "server/http/http_session.hpp"

#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <optional>
#include <stop_token>
#include <vector>

#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>

#include "engine/base/cancellation.hpp"
#include "server/http/compression.hpp"
#include "server/http/log.hpp"
#include "server/http/request_checks.hpp"
#include "server/http/spooled_body.hpp"
#include "server/net/read_buffer.hpp"
#include "server/http/websocket_session.hpp"

namespace perfscope::server {
namespace {

using namespace request_checks;  // the head checks this session makes

using TlsStream = beast::ssl_stream<beast::tcp_stream>;
constexpr std::size_t kGzipMinBytes = 1024;  // smaller bodies are not worth compressing
constexpr std::size_t kSpoolBlockBytes = 64 * 1024;  // read from a spooled body per write
constexpr std::size_t kBodyReadBytes = 64 * 1024;  // the most Beast reads at once into a buffer
constexpr std::uint64_t kMinSpooledProgress = 16 * 1024;  // bytes a reader takes per request timeout at least
// The dashboard's pages: scripts, styles and data from this server only (its charts' inline
// style attributes aside), never framed.
constexpr const char* kDashboardPolicy =
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

}  // namespace

// One connection over `Stream`: beast::tcp_stream, or TlsStream.
template <class Stream>
class HttpSession : public std::enable_shared_from_this<HttpSession<Stream>> {
 public:
  template <class... Args>
  HttpSession(const SessionContext& ctx, std::shared_ptr<void> slot, Args&&... stream_args)
      : stream_(std::forward<Args>(stream_args)...),
        buffer_(read_buffer_bytes(ctx.config.max_header_bytes)),  // a longer line or trailer: 400
        ctx_(ctx),
        slot_(std::move(slot)) {}
  void run();

 private:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;
  auto& lowest() { return beast::get_lowest_layer(stream_); }
  void on_handshake(beast::error_code ec, std::size_t bytes_used);
  void do_read();
  void on_header(beast::error_code ec, std::size_t bytes);
  void on_read(beast::error_code ec, std::size_t bytes);
  void send(HttpResponse response);
  // A spooled body (spooled_body.hpp), block by block from its file (read on the io thread: the
  // file was just written, so a block is in the page cache and its read a copy). A reader is
  // cut off once it has taken nothing for the request timeout; a slow one that keeps reading
  // is not, however long the body: see watch_spooled_progress.
  void send_spooled(std::shared_ptr<http::response<http::buffer_body>> res, std::shared_ptr<const SpooledBody> body);
  void on_spooled_write(beast::error_code ec, std::size_t bytes);
  // The stream's own timeout cannot tell a slow reader from a gone one: the kernel wakes a
  // blocked writer only when about a third of the send buffer (megabytes, autotuned) has
  // drained, which a client reading 30 KB/s takes longer than the timeout to do. So a timer
  // reckons the bytes the client has taken (written to the socket less its unsent bytes,
  // SIOCOUTQ) a few times per timeout, and closes the connection when they grew by less than
  // kMinSpooledProgress in a whole timeout: a stalled client goes, and so does one that keeps
  // a connection and its spool by taking a few bytes now and then.
  void watch_spooled_progress(std::uint64_t generation);
  // Answers a long request on the worker pool (cancellable: it stops when its client leaves).
  void run_on_workers(HttpRequest request, bool cancellable);
  // While a query runs on the worker pool: watches the connection for its client leaving (the
  // read side at end of stream, or reset) and then stops `departure`, which cancels the work
  // (engine/base/cancellation.hpp). The watch ends when the answer is sent.
  void watch_for_departure(std::stop_source departure);
  void on_write(bool keep_alive, beast::error_code ec, std::size_t bytes);
  void do_close();
  // Answers once and closes without reading a body: for requests refused on their headers.
  void refuse(const http::request_parser<http::string_body>::value_type& head, HttpResponse response);

  Stream stream_;
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
  struct SpooledWrite {  // alive while a spooled body is being written
    std::shared_ptr<http::response<http::buffer_body>> response;
    std::shared_ptr<const SpooledBody> body;
    std::optional<http::response_serializer<http::buffer_body>> serializer;
    std::uint64_t offset = 0;
    std::vector<char> block;
    std::optional<net::steady_timer> watchdog;
    std::uint64_t written = 0;   // bytes of completed writes, headers included
    std::uint64_t taken_at_progress = 0;  // what the client had taken at the last progress
    std::chrono::steady_clock::time_point last_progress;
  };
  std::optional<SpooledWrite> spooled_;
  // The request being answered, for the access log (only kept while it is on).
  struct Access {
    std::string method = "-", target = "-";
    int status = 0;
    std::uint64_t bytes = 0;
    std::chrono::steady_clock::time_point read;  // when the request was in
  };
  std::optional<Access> access_;
  void note_request(std::string_view method, std::string_view target);
  void log_response(bool completed);
  std::uint64_t spooled_generation_ = 0;  // tells a stale watchdog wake from the current body's
  bool watching_ = false;  // watch_for_departure's wait is pending
};

template <class Stream>
void HttpSession<Stream>::run() {
  if constexpr (kTls) {
    // The handshake within the header timeout: a client that connects and says nothing is
    // cut off like a slow one.
    net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      self->lowest().expires_after(self->ctx_.config.header_timeout);
      self->stream_.async_handshake(net::ssl::stream_base::server, self->buffer_.data(),
                                    beast::bind_front_handler(&HttpSession::on_handshake, self));
    });
  } else {
    net::dispatch(stream_.get_executor(), beast::bind_front_handler(&HttpSession::do_read, this->shared_from_this()));
  }
}

template <class Stream>
void HttpSession<Stream>::on_handshake(beast::error_code ec, std::size_t bytes_used) {
  if (ec) return;  // not TLS, or it gave up: nothing to answer over a stream that never formed
  buffer_.consume(bytes_used);
  do_read();
}

template <class Stream>
void HttpSession<Stream>::do_read() {
  // A kept-alive connection waits for its next request with a small buffer again.
  if (buffer_.size() == 0 && buffer_.capacity() > kBodyReadBytes / 8) buffer_.shrink_to_fit();
  parser_.emplace();
  parser_->body_limit(ctx_.config.max_body_bytes);
  parser_->header_limit(static_cast<std::uint32_t>(ctx_.config.max_header_bytes));
  // Headers (or the next request on a kept-alive connection) within the header timeout; the
  // body then within the request timeout.
  lowest().expires_after(ctx_.config.header_timeout);
  http::async_read_header(stream_, buffer_, *parser_,
                          beast::bind_front_handler(&HttpSession::on_header, this->shared_from_this()));
}

template <class Stream>
void HttpSession<Stream>::on_header(beast::error_code ec, std::size_t bytes) {
  if (ec) return on_read(ec, bytes);
  // Credentials are checked on the headers, before a body is read: an unauthorized client
  // cannot make the server take in megabytes.
  const auto& head = parser_->get();
  // RFC 9112 §3.2: an HTTP/1.1 request without Host, or with more than one, is answered 400
  // (two Hosts are how a request names one server to a proxy and another to us).
  const std::size_t hosts = head.count(http::field::host);
  if (hosts > 1 || (hosts == 0 && head.version() >= 11)) {
    return refuse(head, error_response(400, "bad_request",
                                       hosts > 1 ? "the request has more than one Host header"
                                                 : "an HTTP/1.1 request must have a Host header",
                                       "Host"));
  }
  const auto host = head[http::field::host];
  const std::string_view host_view(host.data(), host.size());
  // DNS rebinding: a Host that does not name this server is refused before anything else.
  if (!ctx_.hosts.allows(host_view)) {
    ++ctx_.load.refused_hosts;
    return refuse(head, error_response(403, "host_not_allowed",
                               "the Host header '" + std::string(host.data(), std::min<std::size_t>(host.size(), 256)) +
                                   "' does not name this server (a page may have rebound its name to this address); "
                                   "reach it as localhost or 127.0.0.1, or allow the name with --allowed-host",
                               "Host"));
  }
  if (auto framing = framing_error(head)) return refuse(head, std::move(*framing));
  const auto origin = head[http::field::origin];
  const std::string_view origin_view(origin.data(), origin.size());
  // Cross-site writes: a page on another origin can POST here without a preflight (a no-cors
  // request) and can open a WebSocket (browsers apply no CORS to those); the browser names
  // the page in Origin, so a write or an upgrade from a foreign page is refused here.
  if ((changes_state(head.method()) || websocket::is_upgrade(head)) &&
      !origin_may_act(origin_view, host_view, kTls, ctx_.config.cors_origins)) {
    ++ctx_.load.refused_origins;
    return refuse(head, error_response(403, "origin_not_allowed",
                                       "requests that change state or open a WebSocket are refused from the page at '" +
                                           std::string(origin_view.substr(0, 256)) +
                                           "'; allow it with --cors-allow-origin",
                                       "Origin"));
  }
  cors_origin_ = cors_allows(ctx_.config.cors_origins, std::string_view(origin.data(), origin.size()))
                     ? std::string(origin.data(), origin.size())
                     : std::string();
  HttpRequest target;
  if (parse_target(std::string_view(head.target().data(), head.target().size()), target)) {
    // Browsers cannot put headers on a WebSocket upgrade: there the token may come as a parameter.
    const bool upgrade = websocket::is_upgrade(head);
    auto token = target.query.find("access_token");
    const std::string_view query_token = upgrade && token != target.query.end() ? std::string_view(token->second) : "";
    const auto authorization = head[http::field::authorization];
    if (auto denied = ctx_.access.check(std::string(head.method_string()), target.path,
                                        std::string_view(authorization.data(), authorization.size()), query_token)) {
      return refuse(head, std::move(*denied));
    }
  }
  lowest().expires_after(ctx_.config.request_timeout);
  // Beast reads a body in pieces as large as the buffer's free room (at least 512 bytes, at
  // most 64 KiB). The buffer is sized for headers, so a 1 MB ingest body took 1,800 reads and
  // as many timer updates, a third of ingest's CPU (issue 44): room up to the buffer's limit
  // first (48 KiB with the default header limit). reserve() past the limit would raise it, and
  // the limit is what bounds trailers and chunk-size lines.
  const auto length = parser_->content_length();
  if ((length && *length > 4096) || parser_->chunked()) buffer_.reserve(std::min(kBodyReadBytes, buffer_.max_size()));
  // A client that asked to hear it may send its body now (RFC 9110 §10.1.1): curl waits a
  // second for this before sending any body over 1 MiB.
  if (expects_continue(head) && head.version() >= 11 && !websocket::is_upgrade(head)) {
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    return net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                            [self = this->shared_from_this()](beast::error_code write_ec, std::size_t) {
                              if (write_ec) return self->do_close();
                              http::async_read(self->stream_, self->buffer_, *self->parser_,
                                               beast::bind_front_handler(&HttpSession::on_read, self));
                            });
  }
  http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&HttpSession::on_read, this->shared_from_this()));
}

template <class Stream>
void HttpSession<Stream>::note_request(std::string_view method, std::string_view target) {
  if (!access_log_enabled()) return;
  access_.emplace();
  access_->method = std::string(method);
  access_->target = std::string(target);
  access_->read = std::chrono::steady_clock::now();
}

template <class Stream>
void HttpSession<Stream>::log_response(bool completed) {
  if (!access_) return;
  beast::error_code ec;
  const auto remote = lowest().socket().remote_endpoint(ec);
  const std::string address = ec ? std::string() : remote.address().to_string();
  log_access({address, access_->method, access_->target, access_->status, access_->bytes,
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - access_->read).count(),
              completed});
  access_.reset();
}

template <class Stream>
void HttpSession<Stream>::refuse(const http::request_parser<http::string_body>::value_type& head, HttpResponse response) {
  note_request(std::string_view(head.method_string().data(), head.method_string().size()),
               std::string_view(head.target().data(), head.target().size()));
  request_version_ = head.version();
  request_keep_alive_ = false;  // the body, if any, is left unread
  head_request_ = head.method() == http::verb::head;
  send(std::move(response));
}

template <class Stream>
void HttpSession<Stream>::on_read(beast::error_code ec, std::size_t) {
  if (ec == http::error::end_of_stream) return do_close();
  if (ec && ec != beast::error::timeout && ec != net::error::operation_aborted) {
    // What was read of the request line, when anything was.
    const auto& head = parser_->get();
    note_request(head.method_string().empty() ? std::string_view("-")
                                              : std::string_view(head.method_string().data(), head.method_string().size()),
                 head.target().empty() ? std::string_view("-") : std::string_view(head.target().data(), head.target().size()));
  }
  if (ec == http::error::body_limit || ec == http::error::header_limit) {
    request_keep_alive_ = false;
    const bool body = ec == http::error::body_limit;
    return send(error_response(body ? 413 : 431, body ? "payload_too_large" : "header_too_large",
                               body ? "request body exceeds " + std::to_string(ctx_.config.max_body_bytes) + " bytes"
                                    : "request headers exceed " + std::to_string(ctx_.config.max_header_bytes) + " bytes"));
  }
  if (ec == beast::error::timeout || ec == net::error::operation_aborted) return do_close();
  if (ec) {
    // A malformed request: answer once, then close (the stream's framing is lost).
    if (ec.category() == http::make_error_code(http::error::bad_target).category()) {
      request_keep_alive_ = false;
      return send(error_response(400, "bad_request", "malformed HTTP request: " + ec.message()));
    }
    return do_close();
  }

  http::request<http::string_body> req = parser_->release();
  note_request(std::string_view(req.method_string().data(), req.method_string().size()),
               std::string_view(req.target().data(), req.target().size()));
  request_version_ = req.version();
  request_keep_alive_ = req.keep_alive() && ++requests_ < ctx_.config.max_requests_per_connection;
  head_request_ = req.method() == http::verb::head;

  HttpRequest request;
  if (!parse_target(std::string_view(req.target().data(), req.target().size()), request)) {
    return send(error_response(400, "bad_request", "request target must be an absolute path", "target"));
  }
  request.method = std::string(req.method_string());

  if (websocket::is_upgrade(req)) {
    // What the WebSocket handshake would refuse in plain text, refused here as JSON.
    if (auto refused = handshake_error(req)) {
      request_keep_alive_ = false;
      return send(std::move(*refused));
    }
    WebSocketSession::Role role;
    if (request.path == "/api/v1/stream") {
      role = WebSocketSession::Role::kStream;
    } else if (request.path == "/api/v1/ingest") {
      role = WebSocketSession::Role::kIngest;
    } else {
      return send(error_response(404, "not_found", "no WebSocket endpoint at " + request.path));
    }
    lowest().expires_never();
    if (access_) {  // the upgrade is logged as it is handed over (the stream is logged by nothing else)
      access_->status = 101;
      log_response(true);
    }
    return start_websocket_session(std::move(stream_), ctx_, role, std::move(slot_), std::move(req));
  }
  request.accept = std::string(req[http::field::accept]);
  request.accept_encoding = std::string(req[http::field::accept_encoding]);
  request.content_type = media_type(req[http::field::content_type]);
  request.content_encoding = media_type(req[http::field::content_encoding]);
  request.if_none_match = std::string(req[http::field::if_none_match]);
  request.body = std::move(req.body());

  if (request.method == "OPTIONS" && !cors_origin_.empty()) {  // a CORS preflight from an allowed origin
    HttpResponse preflight;
    preflight.status = 204;
    preflight.headers = {{"Access-Control-Allow-Methods", "GET, HEAD, POST"},
                         {"Access-Control-Allow-Headers", "Authorization, Content-Type, Content-Encoding"},
                         {"Access-Control-Max-Age", "600"}};
    return send(std::move(preflight));
  }
  if (request.path == "/api/v1/stream" || request.path == "/api/v1/ingest") {
    return send(error_response(426, "upgrade_required", request.path + " is a WebSocket endpoint"));
  }
  const RequestHandler::Dispatch dispatch = ctx_.handler.dispatch(request.path);
  if (dispatch == RequestHandler::Dispatch::kNotMine) {
    if (request.method == "GET" || request.method == "HEAD") {
      if (auto r = ctx_.assets.serve(request)) return send(std::move(*r));
    }
    return send(error_response(404, "not_found", "no such path: " + request.path));
  }
  if (dispatch == RequestHandler::Dispatch::kInline) return send(ctx_.handler.handle(request));

  run_on_workers(std::move(request), !changes_state(req.method()));
}

// Everything else may block on SQLite or analysis: run it on the worker pool and come back to
// this connection's strand to write — unless the pool is already backed up, then say so at
// once rather than queue without bound. `cancellable`: a query, cancelled when its client leaves.
template <class Stream>
void HttpSession<Stream>::run_on_workers(HttpRequest request, bool cancellable) {
  if (ctx_.load.pending_requests.load() >= ctx_.config.max_pending_requests) {
    ++ctx_.load.refused_requests;
    HttpResponse busy = error_response(503, "overloaded", "the server is busy; retry later");
    busy.headers.emplace_back("Retry-After", "1");
    return send(std::move(busy));
  }
  ++ctx_.load.pending_requests;
  // Queries are cancelled when their client leaves; writes (ingest, A/B definitions) are not:
  // a producer may post a batch and close without waiting, and the batch must still be kept.
  std::stop_source departure;
  if (cancellable) watch_for_departure(departure);
  net::post(ctx_.workers, [self = this->shared_from_this(), request = std::move(request),
                           token = cancellable ? departure.get_token() : std::stop_token()]() mutable {
    const bool gzip_ok = accepts_gzip(request.accept_encoding);
    const CancelScope scope(std::move(token));
    handle_guarded(self->ctx_.handler, std::move(request), [self, gzip_ok](HttpResponse response) {
      --self->ctx_.load.pending_requests;
      if (gzip_ok && response.compressible && response.body.size() >= kGzipMinBytes) {
        if (auto z = gzip_compress(response.body)) {
          response.body = std::move(*z);
          response.headers.emplace_back("Content-Encoding", "gzip");
          response.headers.emplace_back("Vary", "Accept-Encoding");
        }
      }
      response.compressible = false;
      net::post(self->stream_.get_executor(), [self, response = std::move(response)]() mutable {
        self->send(std::move(response));
      });
    });
  });
}

template <class Stream>
void HttpSession<Stream>::watch_for_departure(std::stop_source departure) {
  watching_ = true;
  lowest().socket().async_wait(
      net::socket_base::wait_read, [self = this->shared_from_this(), departure](beast::error_code ec) mutable {
        if (!self->watching_) return;  // the answer came first (its send cancelled the wait)
        self->watching_ = false;
        if (ec) return;
        // Readable: either the client's next request (pipelined; it is still there) or the end
        // of its stream. Peeked, so nothing is taken from the next read. A client that half-
        // closes after its request counts as gone, as Go's server and nginx count it.
        char byte;
        const ssize_t n = ::recv(self->lowest().socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) departure.request_stop();
      });
}

template <class Stream>
void HttpSession<Stream>::send(HttpResponse r) {
  if (watching_) {
    watching_ = false;
    beast::error_code ignored;
    lowest().socket().cancel(ignored);  // ends watch_for_departure's wait; nothing else is pending
  }
  auto head = [&](auto& res) {
    res.set(http::field::server, "perfscope");
    if (r.status != 304) res.set(http::field::content_type, r.content_type);
    // Browsers take every body as the type it is sent as, and no page of this server may be
    // framed by another (clickjacking the dashboard's controls).
    res.set("X-Content-Type-Options", "nosniff");
    if (r.content_type.starts_with("text/html")) {
      res.set("X-Frame-Options", "DENY");
      res.set("Referrer-Policy", "no-referrer");
      res.set("Content-Security-Policy", kDashboardPolicy);  // a response's own policy replaces it below
    }
    for (auto& [name, value] : r.headers) res.set(name, value);
    if (!cors_origin_.empty()) {
      res.set(http::field::access_control_allow_origin, cors_origin_);
      res.set(http::field::access_control_expose_headers, "Retry-After, WWW-Authenticate, Content-Disposition");
      const auto vary = res[http::field::vary];
      res.set(http::field::vary, vary.empty() ? std::string("Origin") : std::string(vary) + ", Origin");
    }
    res.keep_alive(request_keep_alive_);
    // How long an idle connection stays open, so that a client closes it first instead of
    // sending its next request into the server's close (Node's and Apache's servers say it too).
    // Whole seconds, rounded down: never more than the server gives; below a second, unsaid.
    const auto idle_s = std::chrono::duration_cast<std::chrono::seconds>(ctx_.config.header_timeout).count();
    if (request_keep_alive_ && idle_s >= 1) res.set(http::field::keep_alive, "timeout=" + std::to_string(idle_s));
    // A HEAD response announces the GET body's length and sends no body.
    res.content_length(r.spooled ? r.spooled->size() : r.body.size());
  };
  const auto status = static_cast<http::status>(r.status);
  if (access_) {
    access_->status = r.status;
    access_->bytes = head_request_ ? 0 : r.spooled ? r.spooled->size() : r.body.size();
  }
  if (r.spooled && !head_request_) {
    auto res = std::make_shared<http::response<http::buffer_body>>(status, request_version_);
    head(*res);
    return send_spooled(std::move(res), std::move(r.spooled));
  }
  auto res = std::make_shared<http::response<http::string_body>>(status, request_version_);
  head(*res);
  if (!head_request_) res->body() = std::move(r.body);
  response_ = res;
  lowest().expires_after(ctx_.config.request_timeout);
  http::async_write(stream_, *response_,
                    beast::bind_front_handler(&HttpSession::on_write, this->shared_from_this(), res->keep_alive()));
}

template <class Stream>
void HttpSession<Stream>::send_spooled(std::shared_ptr<http::response<http::buffer_body>> res,
                                       std::shared_ptr<const SpooledBody> body) {
  SpooledWrite& w = spooled_.emplace();
  w.response = std::move(res);
  w.body = std::move(body);
  w.response->body().data = nullptr;
  w.response->body().more = true;
  w.serializer.emplace(*w.response);
  w.block.resize(kSpoolBlockBytes);
  w.watchdog.emplace(stream_.get_executor());
  w.last_progress = std::chrono::steady_clock::now();
  lowest().expires_never();  // the watchdog judges progress instead
  watch_spooled_progress(++spooled_generation_);
  http::async_write_header(stream_, *w.serializer,
                           beast::bind_front_handler(&HttpSession::on_spooled_write, this->shared_from_this()));
}

template <class Stream>
void HttpSession<Stream>::on_spooled_write(beast::error_code ec, std::size_t bytes) {
  if (ec == http::error::need_buffer) ec = {};  // the block went out; the serializer wants the next
  if (ec) return on_write(false, ec, 0);
  SpooledWrite& w = *spooled_;
  w.written += bytes;
  if (w.serializer->is_done()) return on_write(w.response->keep_alive(), ec, 0);
  const std::uint64_t size = w.body->size();
  std::size_t n = 0;
  if (w.offset < size) {
    const ssize_t got = ::pread(w.body->fd(), w.block.data(), std::min<std::uint64_t>(w.block.size(), size - w.offset),
                                static_cast<off_t>(w.offset));
    // The headers are out with the length: a body that cannot be read ends the connection, so
    // the client sees a short body, never a wrong one.
    if (got <= 0) return on_write(false, beast::error_code(errno, beast::system_category()), 0);
    n = static_cast<std::size_t>(got);
    w.offset += n;
  }
  auto& b = w.response->body();
  b.data = n ? w.block.data() : nullptr;
  b.size = n;
  b.more = w.offset < size;
  http::async_write(stream_, *w.serializer,
                    beast::bind_front_handler(&HttpSession::on_spooled_write, this->shared_from_this()));
}

template <class Stream>
void HttpSession<Stream>::watch_spooled_progress(std::uint64_t generation) {
  const auto timeout = ctx_.config.request_timeout;
  spooled_->watchdog->expires_after(
      std::max<std::chrono::steady_clock::duration>(timeout / 4, std::chrono::milliseconds(10)));
  spooled_->watchdog->async_wait([self = this->shared_from_this(), generation](beast::error_code ec) {
    if (ec || !self->spooled_ || generation != self->spooled_generation_) return;  // the body went out
    SpooledWrite& w = *self->spooled_;
    // Taken: written less still unsent (a write in progress is not counted yet, so this is low
    // by at most a block). Without SIOCOUTQ, the completed writes alone.
    int unsent = 0;
    if (::ioctl(self->lowest().socket().native_handle(), SIOCOUTQ, &unsent) != 0 || unsent < 0) unsent = 0;
    const std::uint64_t taken = w.written - std::min<std::uint64_t>(w.written, static_cast<std::uint64_t>(unsent));
    const auto now = std::chrono::steady_clock::now();
    if (taken >= w.taken_at_progress + kMinSpooledProgress) {
      w.taken_at_progress = taken;
      w.last_progress = now;
    } else if (now - w.last_progress >= self->ctx_.config.request_timeout) {
      // Closing fails the pending write, whose handler ends the session.
      beast::error_code ignored;
      self->lowest().socket().close(ignored);
      return;
    }
    self->watch_spooled_progress(generation);
  });
}

template <class Stream>
void HttpSession<Stream>::on_write(bool keep_alive, beast::error_code ec, std::size_t) {
  log_response(!ec);
  response_.reset();
  spooled_.reset();
  if (ec) return do_close();
  if (!keep_alive) return do_close();
  do_read();
}

template <class Stream>
void HttpSession<Stream>::do_close() {
  if constexpr (kTls) {
    // close_notify, then the TCP close; a peer that does not answer is cut off by the timeout.
    lowest().expires_after(ctx_.config.header_timeout);
    stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) {
      beast::error_code ignored;
      self->lowest().socket().close(ignored);
    });
  } else {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  }
}

void start_http_session(tcp::socket&& socket, const SessionContext& ctx, std::shared_ptr<void> slot) {
  if (ctx.tls) {
    std::make_shared<HttpSession<TlsStream>>(ctx, std::move(slot), std::move(socket), *ctx.tls)->run();
  } else {
    std::make_shared<HttpSession<beast::tcp_stream>>(ctx, std::move(slot), std::move(socket))->run();
  }
}

}  // namespace perfscope::server
