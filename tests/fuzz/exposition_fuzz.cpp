// libFuzzer target: a scrape's body, the Prometheus text format and OpenMetrics (the first
// byte picks which), through parse_exposition with small limits.
#include <cstdint>
#include <string_view>

#include "server/wire/exposition_parse.hpp"

using namespace perfscope::server;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool openmetrics = data[0] & 1;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  ExpositionLimits limits;
  limits.max_samples = 10'000;
  auto r = parse_exposition(text, openmetrics, limits);
  if (!r.ok()) return 0;
  std::size_t samples = 0;
  for (const ScrapedFamily& f : r->families) {
    samples += f.samples.size();
    for (const ScrapedSample& s : f.samples) {
      // Parsed label sets are sorted and free of duplicates and empty values.
      for (std::size_t i = 1; i < s.labels.size(); ++i) {
        if (!(s.labels[i - 1].first < s.labels[i].first)) __builtin_trap();
      }
      for (const auto& [k, v] : s.labels) {
        if (v.empty()) __builtin_trap();
      }
    }
  }
  if (samples != r->sample_count) __builtin_trap();
  return 0;
}
