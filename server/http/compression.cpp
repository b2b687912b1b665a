#include "server/http/compression.hpp"

#include <zlib.h>

#include <cctype>

namespace perfscope::server {

std::optional<std::string> gzip_compress(std::string_view data) {
  z_stream zs{};
  // windowBits 15 + 16 selects the gzip wrapper.
  if (deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return std::nullopt;
  std::string out;
  out.resize(deflateBound(&zs, static_cast<uLong>(data.size())));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  std::size_t produced = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return std::nullopt;
  out.resize(produced);
  return out;
}

InflateError gzip_decompress(std::string_view data, std::size_t max_bytes, std::string& out) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return InflateError::kMalformed;
  out.clear();
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  char chunk[64 * 1024];
  InflateError result = InflateError::kNone;
  for (;;) {
    zs.next_out = reinterpret_cast<Bytef*>(chunk);
    zs.avail_out = sizeof chunk;
    int rc = inflate(&zs, Z_NO_FLUSH);
    std::size_t produced = sizeof chunk - zs.avail_out;
    if (out.size() + produced > max_bytes) {
      result = InflateError::kTooLarge;
      break;
    }
    out.append(chunk, produced);
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members are legal; anything else after the end is not.
      if (zs.avail_in == 0) break;
      if (inflateReset(&zs) != Z_OK) {
        result = InflateError::kMalformed;
        break;
      }
      continue;
    }
    if (rc != Z_OK || (zs.avail_in == 0 && produced == 0)) {
      result = InflateError::kMalformed;  // corrupt data, or the stream ended early
      break;
    }
  }
  inflateEnd(&zs);
  if (result != InflateError::kNone) out.clear();
  return result;
}

bool accepts_gzip(std::string_view header) {
  // Tokens are comma-separated, each optionally with ";q=…"; q=0 means "not acceptable".
  while (!header.empty()) {
    std::size_t comma = header.find(',');
    std::string_view token = header.substr(0, comma);
    while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
    std::size_t semi = token.find(';');
    std::string_view coding = token.substr(0, semi);
    while (!coding.empty() && coding.back() == ' ') coding.remove_suffix(1);
    bool is_gzip = coding.size() == 4 && std::tolower(coding[0]) == 'g' && std::tolower(coding[1]) == 'z' &&
                   std::tolower(coding[2]) == 'i' && std::tolower(coding[3]) == 'p';
    if (is_gzip || coding == "*") {
      bool zero_q = false;
      if (semi != std::string_view::npos) {
        std::string_view params = token.substr(semi + 1);
        std::size_t qpos = params.find("q=");
        if (qpos != std::string_view::npos) {
          std::string_view q = params.substr(qpos + 2);
          zero_q = !q.empty() && q[0] == '0' && q.find_first_of("123456789") == std::string_view::npos;
        }
      }
      if (!zero_q) return true;
    }
    if (comma == std::string_view::npos) break;
    header.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace perfscope::server
