// Wall-clock time in nanoseconds since the Unix epoch: the one timestamp unit of perfscope.
#pragma once

#include <chrono>
#include <cstdint>

namespace perfscope {

using TimestampNs = std::int64_t;

inline TimestampNs now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace perfscope
