// The WebSocket stream's subscription message, {"subscribe":["gpu_*", "host_cpu_ratio"]}:
// parsed into series patterns, or an error naming the field. Beast-free and stateless (the
// session applies the result), so it is tested and fuzzed on its own.
#pragma once

#include <string_view>
#include <vector>

#include "engine/series/series.hpp"

namespace perfscope::server {

Result<std::vector<SeriesPattern>> parse_subscription(std::string_view text);

}  // namespace perfscope::server
