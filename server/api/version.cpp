#include "server/api/version.hpp"

namespace perfscope::server {

std::string_view version() { return PERFSCOPE_VERSION; }
std::string_view build_type() { return PERFSCOPE_BUILD_TYPE; }
std::string_view compiler() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "gcc " __VERSION__;
#else
  return "unknown";
#endif
}

}  // namespace perfscope::server
