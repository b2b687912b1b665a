// What a request's head says before its body is read, checked by the HTTP session
// (http_session.cpp): whether its method changes state, its media type, whether it expects
// 100-continue, how its body is framed (RFC 9112 §6) and whether a WebSocket handshake is one
// this server takes (RFC 6455 §4.2.1). Pure functions over Beast's request types: included
// only by the transport's sources.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/http/message.hpp"
#include "server/net/net.hpp"

namespace perfscope::server::request_checks {

// Anything but GET, HEAD and OPTIONS.
bool changes_state(http::verb method);
// "Application/JSON; charset=utf-8" → "application/json".
std::string media_type(beast::string_view header);
// ASCII case-insensitive equality (header values).
bool iequals(std::string_view a, std::string_view b);
// Without leading and trailing spaces and tabs.
std::string_view trimmed(std::string_view s);
bool expects_continue(const http::request_parser<http::string_body>::value_type& head);
// How a request's body is framed: a transfer coding that does not end in chunked leaves the
// length unknown (400, then close); one this server cannot decode is 501; an expectation other
// than 100-continue is 417. None when the head is fine.
std::optional<HttpResponse> framing_error(const http::request_parser<http::string_body>::value_type& head);
// Version 13 (else 426 naming it) and a key of 16 bytes in base64. None when it is fine.
std::optional<HttpResponse> handshake_error(const http::request<http::string_body>& req);

}  // namespace perfscope::server::request_checks
