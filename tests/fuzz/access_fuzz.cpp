// libFuzzer target: the HTTP Host and authorization path, as a request's head meets it before
// any body is read: the Host check (DNS rebinding), the request target, the scope the path
// needs and the bearer-token check, and the token file. Input: newline-separated fields —
// Host, method, target, Authorization, then the token file's text.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/http/access.hpp"

using namespace perfscope;
using namespace perfscope::server;

namespace {

std::string_view next_field(std::string_view& rest) {
  const std::size_t nl = rest.find('\n');
  const std::string_view field = rest.substr(0, nl);
  rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
  return field;
}

// Whether `host` is a name followed by nothing or by ":digits" (brackets around an IPv6
// literal): the only shapes a browser sends, and so the only ones a loopback server may accept.
bool well_formed(std::string_view host) {
  std::string_view port;
  if (host.front() == '[') {
    const std::size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    const std::string_view rest = host.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return false;
    port = rest.empty() ? rest : rest.substr(1);
  } else if (host.find(':') != std::string_view::npos && host.find(':') == host.rfind(':')) {
    port = host.substr(host.find(':') + 1);
  }
  for (char c : port) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

void check_hosts(std::string_view host) {
  static const HostCheck loopback("127.0.0.1", {});
  static const HostCheck named("::1", {"perfscope.lab"});
  if (host.empty()) return;
  for (const HostCheck* check : {&loopback, &named}) {
    if (!check->allows(host)) continue;
    const std::string name = host_name_of(host);
    const bool ours = is_loopback_host(name) || name.ends_with(".localhost") || name == "perfscope.lab";
    if (!ours || !well_formed(host)) std::abort();  // a name that is not this server's got through
  }
}

void check_access(std::string_view method, std::string_view target, std::string_view authorization) {
  static const AccessControl tokens({{Scope::kRead, "read-token-0123456789"}, {Scope::kWrite, "write-token-0123456789"}});
  HttpRequest request;
  if (!parse_target(target, request)) return;
  const Scope need = AccessControl::required(method, request.path);
  const auto denied = tokens.check(method, request.path, authorization, {});
  if (denied && denied->status != 401 && denied->status != 403) std::abort();
  if (!denied && need != Scope::kNone) {
    // Let through: the credential must be a token of at least the needed scope.
    const std::string_view presented = authorization.size() > 7 ? authorization.substr(7) : std::string_view{};
    const Scope have = tokens.granted(presented);
    if (static_cast<int>(have) < static_cast<int>(need)) std::abort();
  }
  // Every API path and /metrics needs a credential, whatever its spelling after decoding.
  if ((request.path.starts_with("/api/") || request.path == "/metrics") && method != "OPTIONS" &&
      need == Scope::kNone) {
    std::abort();
  }
}

void check_token_file(std::string_view text) {
  auto parsed = parse_token_file(text, "fuzz");
  if (!parsed.ok()) return;
  const AccessControl control(*parsed);
  for (const AccessToken& t : *parsed) {
    if (t.secret.size() < kMinTokenLength) std::abort();
    if (control.granted(t.secret) == Scope::kNone) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  const std::string_view host = next_field(rest);
  const std::string_view method = next_field(rest);
  const std::string_view target = next_field(rest);
  const std::string_view authorization = next_field(rest);
  check_hosts(host);
  check_access(method, target, authorization);
  check_token_file(rest);
  return 0;
}
