// StaticAssets: the embedded dashboard served from memory, with content types, strong
// ETags (If-None-Match → 304) and gzip variants compressed once at start-up.
// Immutable after construction: safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>

#include "server/http/message.hpp"

namespace perfscope::server {

class StaticAssets {
 public:
  StaticAssets();  // reads web::embedded_assets()

  // The response for a GET of `path` ("/" means "/index.html"), or nullopt when unknown.
  std::optional<HttpResponse> serve(const HttpRequest& request) const;
  std::size_t size() const { return assets_.size(); }

 private:
  struct Asset {
    std::string content_type;
    std::string body;
    std::string gzipped;  // empty when compression does not pay
    std::string etag;
  };
  std::unordered_map<std::string, Asset> assets_;
};

}  // namespace perfscope::server
