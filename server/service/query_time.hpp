// Time values in query parameters: integer nanoseconds since the Unix epoch, `now`, or a
// time relative to now (`now-5m`, `-30s`); durations with ns|us|ms|s|m|h|d units.
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/base/clock.hpp"
#include "engine/base/status.hpp"

namespace perfscope::server {

Result<std::int64_t> parse_duration_ns(std::string_view text, std::string_view field);
Result<TimestampNs> parse_time_ns(std::string_view text, TimestampNs now, std::string_view field);

struct TimeWindow {
  TimestampNs from_ns = 0;
  TimestampNs to_ns = INT64_MAX;
  bool all = true;  // window=all without from/to: everything recorded
};
// `window=all|<duration>` (default all), overridden by explicit `from`/`to`. Looked up in
// the given parameter values (empty when absent).
Result<TimeWindow> parse_window(std::string_view window, std::string_view from, std::string_view to, TimestampNs now);

}  // namespace perfscope::server
