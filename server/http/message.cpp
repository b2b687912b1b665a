#include "server/http/message.hpp"

#include <nlohmann/json.hpp>

namespace perfscope::server {

HttpResponse json_response(unsigned status, const nlohmann::json& body) {
  HttpResponse r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

HttpResponse error_response(unsigned status, std::string_view code, std::string_view message, std::string_view field) {
  nlohmann::json err = {{"code", code}, {"message", message}};
  if (!field.empty()) err["field"] = field;
  return json_response(status, {{"error", err}});
}

namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::string percent_decode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%' && i + 2 < text.size()) {
      int hi = hex_value(text[i + 1]), lo = hex_value(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += (plus_is_space && c == '+') ? ' ' : c;
  }
  return out;
}

bool parse_target(std::string_view target, HttpRequest& out) {
  if (target.empty() || target.front() != '/') return false;
  std::size_t q = target.find('?');
  out.path = percent_decode(target.substr(0, q), false);
  out.query.clear();
  if (q == std::string_view::npos) return true;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    std::size_t amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    if (!pair.empty()) {
      std::size_t eq = pair.find('=');
      std::string key = percent_decode(pair.substr(0, eq), true);
      std::string value = eq == std::string_view::npos ? "" : percent_decode(pair.substr(eq + 1), true);
      out.query[std::move(key)] = std::move(value);
    }
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return true;
}

}  // namespace perfscope::server
