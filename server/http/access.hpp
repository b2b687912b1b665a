// Access control: bearer tokens with two scopes. `read` opens the dashboard's data, queries,
// reports, /metrics and the live stream; `write` adds ingest, A/B test creation and
// administration. /healthz and the dashboard's static files stay open (the page has to load
// to ask for a token). Tokens come from a file or the environment, are never logged, and are
// compared in constant time.
//
// Thread-safety: immutable after construction; every method is safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.hpp"
#include "server/http/message.hpp"

namespace perfscope::server {

enum class Scope { kNone = 0, kRead = 1, kWrite = 2 };
std::string_view to_string(Scope scope);

struct AccessToken {
  Scope scope = Scope::kRead;
  std::string secret;
};

inline constexpr std::size_t kMinTokenLength = 16;

// A token file: one `read <token>` or `write <token>` per line; blank lines and lines starting
// with `#` are skipped. Errors name the file and line, never the token.
Result<std::vector<AccessToken>> parse_token_file(std::string_view text, const std::string& path);
Result<std::vector<AccessToken>> load_token_file(const std::string& path);

// Creates `path` (mode 0600) with a fresh random read and write token, and `path`.read (mode
// 0644) holding the read token alone, for a scraper's credentials file. Fails if either exists.
Status create_token_file(const std::string& path);

// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(std::string_view host);

// DNS rebinding: which Host headers a request may carry. A page can rebind its own name to
// 127.0.0.1 and then talk to a loopback server same-origin, with no preflight; it cannot make
// the browser send a Host that names this machine. So a loopback listener answers only Host
// values naming it: loopback names and addresses, the listen address, and `allowed` (from
// --allowed-host; "*" allows any). A listener on another address checks only when names are
// given (it is reached by whatever names the network has; its tokens guard it).
class HostCheck {
 public:
  HostCheck(std::string listen_host, std::vector<std::string> allowed);
  bool active() const { return active_; }
  // `host` is the Host header as sent (name or address, with or without a port; empty when
  // absent: HTTP/1.0 clients, which no browser is).
  bool allows(std::string_view host) const;

 private:
  std::string listen_;
  std::vector<std::string> allowed_;  // lower-case
  bool active_ = false;
};

// The name part of a Host header: without the port, brackets of an IPv6 literal dropped,
// lower-case, without a trailing dot. Empty when the value is malformed (text after an IPv6
// literal's bracket other than a port, a port that is not digits): such a Host names nothing.
std::string host_name_of(std::string_view host);

// CORS: whether a page from `origin` may read the API's answers (`allowed` from
// --cors-allow-origin; "*" allows any origin).
bool cors_allows(const std::vector<std::string>& allowed, std::string_view origin);

// Cross-site request forgery. A browser sends Origin on every POST (even a `no-cors` one) and
// on every upgrade, and a page cannot forge it. same_origin: whether `origin` names `host`'s
// name, and its port where `host` has one (default ports filled in); http or https alike, as
// behind a proxy that ends TLS, so `tls` does not decide. origin_may_act: whether a request with
// `origin` may change state or open a WebSocket: no Origin (not a browser), the server's own
// page, or an origin allowed by --cors-allow-origin. On every listener, with or without tokens:
// a token in a page's storage would not stop a foreign page that the user's browser lets in.
bool same_origin(std::string_view origin, std::string_view host, bool tls);
bool origin_may_act(std::string_view origin, std::string_view host, bool tls, const std::vector<std::string>& cors);

class AccessControl {
 public:
  AccessControl() = default;  // no tokens: everything is open
  explicit AccessControl(std::vector<AccessToken> tokens) : tokens_(std::move(tokens)) {}

  bool enabled() const { return !tokens_.empty(); }
  std::size_t token_count() const { return tokens_.size(); }

  // The scope a request to `path` with `method` needs (WebSocket upgrades are GETs).
  static Scope required(std::string_view method, std::string_view path);
  // The scope the presented credential grants (kNone when it matches no token). Every token
  // is compared in full, so the time taken does not say how close a guess came.
  Scope granted(std::string_view presented) const;
  // nullopt when the request may proceed; otherwise the 401 or 403 to answer. `authorization`
  // is the Authorization header; `query_token` the access_token parameter (WebSocket
  // upgrades only: browsers cannot set headers on them).
  std::optional<HttpResponse> check(std::string_view method, std::string_view path, std::string_view authorization,
                                   std::string_view query_token) const;

 private:
  std::vector<AccessToken> tokens_;
};

}  // namespace perfscope::server
