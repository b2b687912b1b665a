// libFuzzer target: request targets (path and query string, percent-decoding) and the time
// window parameters every query endpoint reads (window, from, to).
#include <cstdint>
#include <string_view>

#include "server/http/message.hpp"
#include "server/service/query_time.hpp"

using namespace perfscope;
using namespace perfscope::server;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  HttpRequest request;
  if (!parse_target(text, request)) return 0;
  auto get = [&](const char* key) -> std::string_view {
    auto it = request.query.find(key);
    return it == request.query.end() ? std::string_view() : std::string_view(it->second);
  };
  const TimestampNs now = 1'700'000'000'000'000'000;
  auto w = parse_window(get("window"), get("from"), get("to"), now);
  if (w.ok() && !w->all && w->from_ns > w->to_ns) __builtin_trap();  // a window never runs backwards
  (void)parse_duration_ns(get("step"), "step");
  return 0;
}
