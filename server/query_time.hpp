// Time values in query parameters: integer nanoseconds since the Unix epoch, `now`, or a
// time relative to now (`now-5m`, `-30s`); durations with ns|us|ms|s|m|h|d units.
#pragma once

#include <string_view>

#include "engine/clock.hpp"
#include "engine/status.hpp"

namespace perfscope::server {

Result<std::int64_t> parse_duration_ns(std::string_view text, std::string_view field);
Result<TimestampNs> parse_time_ns(std::string_view text, TimestampNs now, std::string_view field);

}  // namespace perfscope::server
