#include "server/http/request_checks.hpp"

#include <algorithm>
#include <cctype>

namespace perfscope::server::request_checks {

bool changes_state(http::verb method) {
  return method != http::verb::get && method != http::verb::head && method != http::verb::options;
}

// "Application/JSON; charset=utf-8" → "application/json".
std::string media_type(beast::string_view header) {
  std::string out(header.substr(0, header.find(';')));
  while (!out.empty() && out.back() == ' ') out.pop_back();
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool expects_continue(const http::request_parser<http::string_body>::value_type& head) {
  const auto expect = head[http::field::expect];
  return iequals(trimmed(std::string_view(expect.data(), expect.size())), "100-continue");
}

// How a request's body is framed, checked before it is read (RFC 9112 §6): a transfer coding
// that does not end in chunked leaves the length unknown (400, then close: a proxy in front may
// have framed it otherwise); one this server cannot decode is 501; an expectation other than
// 100-continue is 417.
std::optional<HttpResponse> framing_error(const http::request_parser<http::string_body>::value_type& head) {
  const auto [first, end] = head.equal_range(http::field::transfer_encoding);
  for (auto it = first; it != end; ++it) {
    std::string_view codings(it->value().data(), it->value().size());
    std::string_view last;
    while (!codings.empty()) {
      const std::size_t comma = codings.find(',');
      last = trimmed(codings.substr(0, comma));
      codings = comma == std::string_view::npos ? std::string_view() : codings.substr(comma + 1);
      if (!last.empty() && !iequals(last, "chunked") && !codings.empty()) {
        return error_response(501, "not_implemented",
                              "transfer coding '" + std::string(last.substr(0, 64)) +
                                  "' is not supported; send Content-Encoding: gzip with chunked or a length",
                              "Transfer-Encoding");
      }
    }
    if (!iequals(last, "chunked")) {
      return error_response(400, "bad_request",
                            "Transfer-Encoding must end in chunked; the body's length is otherwise unknown",
                            "Transfer-Encoding");
    }
  }
  const auto expect = head[http::field::expect];
  if (!expect.empty() && !expects_continue(head)) {
    return error_response(417, "expectation_failed",
                          "only Expect: 100-continue is understood, not '" +
                              std::string(expect.substr(0, std::min<std::size_t>(expect.size(), 64))) + "'",
                          "Expect");
  }
  return std::nullopt;
}
// RFC 6455 §4.2.1: version 13 (else 426 naming it), a key of 16 bytes in base64.
std::optional<HttpResponse> handshake_error(const http::request<http::string_body>& req) {
  if (req.method() != http::verb::get) {
    return error_response(400, "bad_request", "a WebSocket handshake is a GET request", "method");
  }
  if (trimmed(std::string_view(req[http::field::sec_websocket_version])) != "13") {
    HttpResponse r = error_response(426, "upgrade_required", "this server speaks WebSocket version 13",
                                    "Sec-WebSocket-Version");
    r.headers.emplace_back("Sec-WebSocket-Version", "13");
    return r;
  }
  const std::string_view key = trimmed(std::string_view(req[http::field::sec_websocket_key]));
  const bool base64_16 = key.size() == 24 && key.substr(22) == "==" &&
                         std::all_of(key.begin(), key.begin() + 22, [](char c) {
                           return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/';
                         });
  if (!base64_16) {
    return error_response(400, "bad_request", "Sec-WebSocket-Key must be 16 bytes in base64 (24 characters)",
                          "Sec-WebSocket-Key");
  }
  return std::nullopt;
}

}  // namespace perfscope::server::request_checks
