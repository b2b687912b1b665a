// gzip (RFC 1952) through zlib, for responses to clients that send Accept-Encoding: gzip.
// Stateless; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace perfscope::server {

std::optional<std::string> gzip_compress(std::string_view data);

enum class InflateError { kNone, kMalformed, kTooLarge };
// Decompresses a gzip body, stopping as soon as the output would exceed max_bytes (so a
// small "gzip bomb" never allocates more than the limit).
InflateError gzip_decompress(std::string_view data, std::size_t max_bytes, std::string& out);
// True when an Accept-Encoding header value allows gzip (q=0 excluded).
bool accepts_gzip(std::string_view accept_encoding);

}  // namespace perfscope::server
