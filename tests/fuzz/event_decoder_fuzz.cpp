// libFuzzer target: the ingest body decoders — JSON {"events":[…]}, NDJSON, and either one
// gzip-compressed as a client may send it. The first byte picks the form. Every decoded event
// must pass validation, and a decoded batch must survive the wire round trip.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/http/compression.hpp"
#include "server/wire/event_codec.hpp"

using namespace perfscope;
using namespace perfscope::server;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const int form = data[0] % 4;
  std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string inflated;
  if (form >= 2) {
    if (gzip_decompress(body, 1 << 20, inflated) != InflateError::kNone) return 0;
    body = inflated;
  }
  const TimestampNs now = 1'700'000'000'000'000'000;
  DecodeResult r = form % 2 == 0 ? decode_json_events(body, now) : decode_ndjson_events(body, now);
  if (r.error) return 0;
  for (const Event& e : r.events) {
    if (!validate(e).ok()) std::abort();
  }
  DecodeResult again = decode_ndjson_events(encode_ndjson(r.events), now);
  if (again.error || again.events.size() != r.events.size()) std::abort();
  return 0;
}
