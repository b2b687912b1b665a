// TimeRange: the closed interval [from_ns, to_ns] every reader's window queries take.
#pragma once

#include <cstdint>

#include "engine/base/clock.hpp"

namespace perfscope::db {

struct TimeRange {
  TimestampNs from_ns = 0;
  TimestampNs to_ns = INT64_MAX;
};

}  // namespace perfscope::db
