// EventClient: a producer's link to a perfscope server. Events are queued (bounded: when the
// queue is full new events are dropped and counted) and posted as NDJSON batches to
// POST /api/v1/events by one background thread, which keeps its connection open between
// batches and reconnects when it breaks. A batch the server refuses or that cannot be sent
// is counted as failed (events_failed) and not retried, so a bad event cannot wedge the queue.
// Beast-free header: applications include it without Asio.
//
// Thread-safety: send(), flush() and stats() from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/events/events.hpp"
#include "engine/sdk/monitor.hpp"

namespace perfscope::server {

struct ClientOptions {
  std::string url = "http://127.0.0.1:8080";
  std::size_t max_queued_events = 200'000;
  std::size_t batch_events = 5'000;
  std::chrono::milliseconds flush_interval{200};
  std::chrono::milliseconds timeout{5000};
  std::string token;  // a write token when the server requires one (never logged)
};

struct ClientStats {
  std::uint64_t events_sent = 0;     // acknowledged by the server
  std::uint64_t events_dropped = 0;  // queue full
  std::uint64_t events_failed = 0;   // refused or not deliverable
  std::uint64_t batches_sent = 0;
  std::string last_error;
};

// Where a server is: host, port, and whether it speaks TLS.
struct ServerUrl {
  std::string host;
  std::string port;
  bool tls = false;
  // A PEM certificate to trust as it is — the server's own, read from its file — instead of
  // the trust store and the host name (`perfscope healthcheck` inside a container).
  std::string pinned_certificate;
  // PEM CA certificates to verify the server's chain with (its host name checked too), instead
  // of the system's trust store (a scrape target's ca_file).
  std::string ca_file;
  std::string text() const { return (tls ? "https://" : "http://") + host + ":" + port; }
};

// One kept-alive HTTP/1.1 connection for POSTs and GETs, reconnecting when the server closed it.
// Over TLS the server's certificate is verified against the system's trust store (OpenSSL's
// default paths; SSL_CERT_FILE names another bundle) and its host name, or against a pinned
// certificate alone.
// Not thread-safe: one owner thread.
class HttpPoster {
 public:
  struct Response {
    unsigned status = 0;
    std::string body;
    std::string content_type;
  };
  HttpPoster(ServerUrl url, std::chrono::milliseconds timeout);
  ~HttpPoster();
  HttpPoster(const HttpPoster&) = delete;
  HttpPoster& operator=(const HttpPoster&) = delete;
  // A transport failure is kUnavailable; any HTTP status is a Response.
  Result<Response> post(const std::string& target, const std::string& content_type, const std::string& body);
  Result<Response> get(const std::string& target);
  // Sent as `Authorization: Bearer …` with every request when not empty.
  void set_token(std::string token) { token_ = std::move(token); }
  // Sent as `Accept` with every request when not empty (a scrape asks for OpenMetrics first).
  void set_accept(std::string accept) { accept_ = std::move(accept); }
  // The largest response body read; a larger one fails the request (kUnavailable, "body limit").
  void set_body_limit(std::size_t bytes) { body_limit_ = bytes; }

 private:
  struct Connection;
  Result<Response> guarded(bool is_post, const std::string& target, const std::string& content_type,
                           const std::string& body);
  Result<Response> exchange(bool is_post, const std::string& target, const std::string& content_type,
                            const std::string& body);
  ServerUrl url_;
  std::string token_;
  std::string accept_;
  std::size_t body_limit_ = std::size_t{1} << 30;  // reports and traces can be large
  std::string setup_error_;  // the TLS trust could not be loaded
  std::chrono::milliseconds timeout_;
  std::unique_ptr<Connection> conn_;
};

class EventClient {
 public:
  // Fails on a URL it cannot use (http:// or https://host:port[/]).
  static Result<std::unique_ptr<EventClient>> create(ClientOptions options);
  ~EventClient();  // flushes, then stops
  EventClient(const EventClient&) = delete;
  EventClient& operator=(const EventClient&) = delete;

  void send(std::vector<Event> events);
  // Blocks until everything queued before the call has been posted (or has failed).
  void flush();
  ClientStats stats() const;
  // A Monitor sink that forwards every drained batch here.
  Monitor::Sink sink();

 private:
  EventClient(ClientOptions options, ServerUrl url);
  void run();

  const ClientOptions options_;
  HttpPoster poster_;  // background thread only

  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<Event> queue_;        // guarded by mu_
  std::uint64_t queued_total_ = 0;   // guarded by mu_: events ever queued
  std::uint64_t settled_total_ = 0;  // guarded by mu_: events sent or failed
  bool stopping_ = false;           // guarded by mu_
  bool flushing_ = false;           // guarded by mu_
  ClientStats stats_;               // guarded by mu_
  std::thread thread_;
};

// Splits "http://host:port/..." or "https://host:port/..." (port defaults 80 / 443).
Result<ServerUrl> parse_http_url(const std::string& url);

}  // namespace perfscope::server
