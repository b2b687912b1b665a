// HttpRequest / HttpResponse: HTTP requests and responses as plain values, so the handlers
// compile and test without Beast and run on worker threads. http_session converts.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace perfscope::server {

class SpooledBody;  // spooled_body.hpp

struct HttpRequest {
  std::string method;  // "GET", "POST", …
  std::string path;    // percent-decoded, without the query
  std::map<std::string, std::string> query;  // decoded; a repeated key keeps the last value
  std::string accept;  // the Accept header, as sent
  std::string accept_encoding;
  std::string if_none_match;
  std::string content_type;      // without parameters, lower-case ("application/json")
  std::string content_encoding;  // "gzip" or empty
  std::string body;
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  // Set instead of `body` for large exports: the body is in this file and is sent from it
  // (never transparently gzipped: the handler has already compressed it if it should be).
  std::shared_ptr<const SpooledBody> spooled;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
  bool compressible = true;  // gzip when the client accepts it and it is worth it
};

HttpResponse json_response(unsigned status, const nlohmann::json& body);
// {"error":{"code":…,"message":…,"field":…}} — field only when one input field is at fault.
HttpResponse error_response(unsigned status, std::string_view code, std::string_view message,
                           std::string_view field = {});

// Splits a request target into a decoded path and query parameters; nullopt-like failure
// is reported as an empty path (the caller answers 400).
bool parse_target(std::string_view target, HttpRequest& out);
std::string percent_decode(std::string_view text, bool plus_is_space);

}  // namespace perfscope::server
