#include "server/http/access.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <random>

#include <fstream>
#include <sstream>

namespace perfscope::server {

std::string_view to_string(Scope scope) {
  switch (scope) {
    case Scope::kRead: return "read";
    case Scope::kWrite: return "write";
    case Scope::kNone: break;
  }
  return "none";
}

Result<std::vector<AccessToken>> parse_token_file(std::string_view text, const std::string& path) {
  std::vector<AccessToken> out;
  std::size_t line_no = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;
    const std::size_t space = line.find_first_of(" \t");
    const std::string where = path + " line " + std::to_string(line_no);
    if (space == std::string_view::npos) return Status::invalid_argument(where + ": expected `read <token>` or `write <token>`");
    const std::string_view scope = line.substr(0, space);
    std::string_view secret = line.substr(space + 1);
    while (!secret.empty() && (secret.front() == ' ' || secret.front() == '\t')) secret.remove_prefix(1);
    AccessToken t;
    if (scope == "read") {
      t.scope = Scope::kRead;
    } else if (scope == "write") {
      t.scope = Scope::kWrite;
    } else {
      return Status::invalid_argument(where + ": the scope must be read or write");
    }
    if (secret.size() < kMinTokenLength || secret.find_first_of(" \t") != std::string_view::npos) {
      return Status::invalid_argument(where + ": a token must be at least " + std::to_string(kMinTokenLength) +
                                      " characters without spaces");
    }
    t.secret = std::string(secret);
    out.push_back(std::move(t));
  }
  if (out.empty()) return Status::invalid_argument(path + ": holds no token");
  return out;
}

Result<std::vector<AccessToken>> load_token_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::io_error("cannot read token file " + path);
  std::stringstream s;
  s << in.rdbuf();
  return parse_token_file(s.str(), path);
}

namespace {

std::string random_token() {
  std::random_device rd;  // getrandom(2) on Linux
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 8; ++i) {
    std::uint32_t v = rd();
    for (int j = 0; j < 8; ++j, v >>= 4) out += hex[v & 0xF];
  }
  return out;  // 256 bits
}

Status write_new_file(const std::string& path, const std::string& content, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return Status::io_error("cannot create " + path + ": " + std::strerror(errno));
  const bool ok = ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || !synced) return Status::io_error("cannot write " + path);
  return Status();
}

}  // namespace

Status create_token_file(const std::string& path) {
  const std::string read = random_token(), write = random_token();
  if (Status s = write_new_file(path, "# perfscope access tokens\nread " + read + "\nwrite " + write + "\n", 0600); !s.ok()) {
    return s;
  }
  return write_new_file(path + ".read", read + "\n", 0644);
}

bool is_loopback_host(std::string_view host) {
  if (host == "localhost") return true;
  const std::string h(host);
  in_addr v4{};
  if (::inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, h.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

namespace {
// A Host or origin authority split into its lower-case name and its port (empty when none);
// nullopt when malformed.
struct Authority {
  std::string name;
  std::string port;
};
std::optional<Authority> split_authority(std::string_view host) {
  std::string_view name = host, port;
  if (!name.empty() && name.front() == '[') {
    const std::size_t close = name.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    const std::string_view rest = name.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return std::nullopt;  // "[::1]evil": not a Host at all
    port = rest.empty() ? rest : rest.substr(1);
    name = name.substr(1, close - 1);
  } else if (const std::size_t colon = name.rfind(':'); colon != std::string_view::npos &&
                                                        name.find(':') == colon) {
    port = name.substr(colon + 1);  // one colon: host:port (two or more: a bare IPv6 address)
    name = name.substr(0, colon);
  }
  // A port that is not digits makes the whole value malformed: it names nothing.
  if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  Authority out{std::string(name), std::string(port)};
  for (char& c : out.name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!out.name.empty() && out.name.back() == '.') out.name.pop_back();
  return out;
}
}  // namespace

std::string host_name_of(std::string_view host) {
  auto a = split_authority(host);
  return a ? std::move(a->name) : std::string();
}

bool same_origin(std::string_view origin, std::string_view host, bool tls) {
  // The page's scheme may differ from this listener's: behind a proxy that ends TLS the page is
  // https:// and the server plain. Its name must be the Host's, and its port too where the Host
  // names one (a proxy that passes the public Host on often drops the port).
  std::string_view rest;
  std::string_view default_port;
  std::string lower(origin.substr(0, 8));
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.rfind("http://", 0) == 0) {
    rest = origin.substr(7);
    default_port = "80";
  } else if (lower.rfind("https://", 0) == 0) {
    rest = origin.substr(8);
    default_port = "443";
  } else {
    return false;  // "null" (a sandboxed page, a file) and other schemes are never this server
  }
  const auto from = split_authority(rest);
  const auto to = split_authority(host);
  if (!from || !to || from->name.empty() || from->name != to->name) return false;
  if (to->port.empty()) return true;
  const std::string_view page_port = from->port.empty() ? default_port : std::string_view(from->port);
  (void)tls;
  return page_port == to->port;
}

bool origin_may_act(std::string_view origin, std::string_view host, bool tls, const std::vector<std::string>& cors) {
  if (origin.empty()) return true;  // not a browser's cross-origin request: no ambient authority to abuse
  return same_origin(origin, host, tls) || cors_allows(cors, origin);
}

HostCheck::HostCheck(std::string listen_host, std::vector<std::string> allowed) : listen_(host_name_of(listen_host)) {
  bool any = false;
  for (const std::string& a : allowed) {
    if (a == "*") any = true;
    allowed_.push_back(host_name_of(a));
  }
  active_ = !any && (is_loopback_host(listen_) || !allowed_.empty());
}

bool HostCheck::allows(std::string_view host) const {
  if (!active_ || host.empty()) return true;
  const std::string name = host_name_of(host);
  // *.localhost is loopback by definition (RFC 6761), and browsers resolve it so.
  if (is_loopback_host(name) || name.ends_with(".localhost") || name == listen_) return true;
  return std::find(allowed_.begin(), allowed_.end(), name) != allowed_.end();
}

bool cors_allows(const std::vector<std::string>& allowed, std::string_view origin) {
  if (origin.empty()) return false;
  for (const std::string& a : allowed) {
    if (a == "*" || a == origin) return true;
  }
  return false;
}

Scope AccessControl::required(std::string_view method, std::string_view path) {
  if (path == "/healthz" || method == "OPTIONS") return Scope::kNone;  // CORS preflights carry no credentials
  const bool api = path.starts_with("/api/") || path == "/metrics";
  if (!api) return Scope::kNone;  // the dashboard's static files
  if (path == "/api/v1/ingest") return Scope::kWrite;
  if (method == "POST" || method == "PUT" || method == "DELETE" || method == "PATCH") return Scope::kWrite;
  return Scope::kRead;
}

Scope AccessControl::granted(std::string_view presented) const {
  Scope best = Scope::kNone;
  for (const AccessToken& t : tokens_) {
    // Constant time in the content: every byte of the longer string is visited.
    const std::size_t n = std::max(t.secret.size(), presented.size());
    unsigned diff = t.secret.size() == presented.size() ? 0u : 1u;
    for (std::size_t i = 0; i < n; ++i) {
      const unsigned char a = i < t.secret.size() ? static_cast<unsigned char>(t.secret[i]) : 0;
      const unsigned char b = i < presented.size() ? static_cast<unsigned char>(presented[i]) : 0;
      diff |= static_cast<unsigned>(a ^ b);
    }
    const Scope match = diff == 0 ? t.scope : Scope::kNone;
    if (static_cast<int>(match) > static_cast<int>(best)) best = match;
  }
  return best;
}

std::optional<HttpResponse> AccessControl::check(std::string_view method, std::string_view path,
                                                std::string_view authorization, std::string_view query_token) const {
  if (!enabled()) return std::nullopt;
  const Scope need = required(method, path);
  if (need == Scope::kNone) return std::nullopt;
  std::string_view presented = query_token;
  // The scheme is case-insensitive (RFC 9110 §11.1): Bearer, bearer and BEARER alike.
  if (authorization.size() > 7 && authorization[6] == ' ' &&
      std::equal(authorization.begin(), authorization.begin() + 6, "bearer",
                 [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; })) {
    presented = authorization.substr(7);
  }
  if (presented.empty()) {
    HttpResponse r = error_response(401, "unauthorized", "this server requires a token: send Authorization: Bearer <token>");
    r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"perfscope\"");
    return r;
  }
  const Scope have = granted(presented);
  if (have == Scope::kNone) {
    HttpResponse r = error_response(401, "unauthorized", "the token is not valid");
    r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"perfscope\", error=\"invalid_token\"");
    return r;
  }
  if (static_cast<int>(have) < static_cast<int>(need)) {
    HttpResponse r = error_response(403, "forbidden", std::string(path) + " needs a token with the " +
                                                         std::string(to_string(need)) + " scope");
    r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"perfscope\", error=\"insufficient_scope\", scope=\"" +
                                                   std::string(to_string(need)) + "\"");
    return r;
  }
  return std::nullopt;
}

}  // namespace perfscope::server
