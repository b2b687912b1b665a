// Version and build facts, fixed at compile time.
#pragma once

#include <string_view>

namespace perfscope::server {

std::string_view version();
std::string_view build_type();
std::string_view compiler();

}  // namespace perfscope::server
