// Minimal line logging to stderr with a UTC timestamp. Safe from any thread (one write per
// line). Never logs secrets: callers pass only what may be shown.
#pragma once

#include <string_view>

namespace perfscope::server {

void log_info(std::string_view message);
void log_warn(std::string_view message);
void log_error(std::string_view message);

}  // namespace perfscope::server
