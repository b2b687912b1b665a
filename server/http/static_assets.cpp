#include "server/http/static_assets.hpp"

#include <cstdio>

#include "server/http/compression.hpp"
#include "web/embedded_assets.hpp"

namespace perfscope::server {
namespace {

// FNV-1a, 64 bit: a content hash for ETags (collisions only cost a stale cache hit).
std::string content_etag(std::string_view data) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[24];
  std::snprintf(buf, sizeof buf, "\"%016llx\"", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

StaticAssets::StaticAssets() {
  for (const web::EmbeddedAsset& a : web::embedded_assets()) {
    Asset asset;
    asset.content_type = std::string(a.content_type);
    asset.body.assign(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size());
    asset.etag = content_etag(asset.body);
    if (auto z = gzip_compress(asset.body); z && z->size() < asset.body.size()) asset.gzipped = std::move(*z);
    assets_.emplace(std::string(a.url_path), std::move(asset));
  }
}

std::optional<HttpResponse> StaticAssets::serve(const HttpRequest& request) const {
  const std::string& path = request.path == "/" ? std::string("/index.html") : request.path;
  auto it = assets_.find(path);
  if (it == assets_.end()) return std::nullopt;
  const Asset& a = it->second;

  HttpResponse r;
  r.compressible = false;  // already decided here
  r.content_type = a.content_type;
  r.headers = {{"ETag", a.etag}, {"Cache-Control", "no-cache"}, {"Vary", "Accept-Encoding"}};
  if (!request.if_none_match.empty() &&
      (request.if_none_match == a.etag || request.if_none_match.find(a.etag) != std::string::npos)) {
    r.status = 304;
    return r;
  }
  if (!a.gzipped.empty() && accepts_gzip(request.accept_encoding)) {
    r.body = a.gzipped;
    r.headers.emplace_back("Content-Encoding", "gzip");
  } else {
    r.body = a.body;
  }
  return r;
}

}  // namespace perfscope::server
