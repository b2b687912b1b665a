// RollupAnswer: what the histogram tiers retention writes (db/internal/rollups.hpp) say of a
// distribution over a window — the merged rollup and the span its buckets cover. Readers add
// the raw values still kept to it for the answer over the whole window. A value type.
#pragma once

#include <cstddef>

#include "engine/analysis/rollup.hpp"
#include "engine/base/clock.hpp"

namespace perfscope::db {

struct RollupAnswer {
  analysis::Rollup rollup;
  TimestampNs from_ns = 0;  // the buckets merged: from the earliest start to the latest end
  TimestampNs to_ns = 0;
  std::size_t rows = 0;
  TimestampNs raw_before_ns = 0;  // retention's cutoff: the rolled-up values are all older
};

}  // namespace perfscope::db
