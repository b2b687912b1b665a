// libFuzzer target: the WebSocket stream's subscription messages, and matching the patterns
// they carry against series names.
#include <cstdint>
#include <string_view>

#include "server/http/subscription.hpp"

using namespace perfscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto patterns = server::parse_subscription(text);
  if (!patterns.ok()) return 0;
  const SeriesKey keys[] = {SeriesKey("gpu_utilization_ratio", {{"gpu", "0"}}), SeriesKey("host_cpu_ratio", {}),
                            SeriesKey(std::string(text.substr(0, 64)), {})};
  for (const SeriesPattern& p : *patterns) {
    for (const SeriesKey& k : keys) (void)p.matches(k, k.canonical());
  }
  return 0;
}
