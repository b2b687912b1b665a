// Rollups: the histogram tiers that keep distributions once their raw rows are retired.
// Each retired value lands in three rows of `rollups` at once — its minute, its hour and its
// day — each an analysis::Rollup (exact count, sum, M2, min, max, and a log-linear histogram
// within 0.05 %). A window is answered by merging the fewest whole rows that cover it: days
// in the middle, hours and minutes at the edges (a month is ~200 rows, not 43,200). Because a
// value is in the rollups or raw, never both (retirement moves it in one transaction), an
// answer adds the raw values still kept to the rows it merged.
//
// Sources and keys (the field is '' except for inference):
//   kernel          kernel_series id                     duration in ms
//   inference       model \x1f version, field latency_ms | ttft_ms | tpot_ms | queue_ms | compute_ms
//   command_buffer  queue \x1f device                     submit → end in ms
//   series          series id                            the sample value
//
// Single-threaded objects; reads and writes run on the caller's connection (the writer's,
// inside its transaction, for writes).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "db/internal/sqlite.hpp"
#include "db/rollup_answer.hpp"
#include "db/time_range.hpp"
#include "engine/analysis/rollup.hpp"

namespace perfscope::db {

namespace rollup_source {
inline constexpr std::string_view kKernel = "kernel";
inline constexpr std::string_view kInference = "inference";
inline constexpr std::string_view kCommandBuffer = "command_buffer";
inline constexpr std::string_view kSeries = "series";
}  // namespace rollup_source

// Bucket widths of the tiers, largest first.
inline constexpr std::int64_t kRollupTiersNs[] = {86'400'000'000'000, 3'600'000'000'000, 60'000'000'000};
inline constexpr std::int64_t kRollupMinuteNs = 60'000'000'000;

// t rounded down to a multiple of width (towards −∞).
TimestampNs floor_to(TimestampNs t, std::int64_t width);

// Joins the parts of a two-part key.
std::string rollup_key(std::string_view first, std::string_view second);

// Retired values gathered per minute, written as minute, hour and day rows.
class RollupAccumulator {
 public:
  void add(std::string_view source, std::string_view key, std::string_view field, TimestampNs ts_ns, double value);
  std::size_t minutes() const { return minutes_.size(); }
  // Merges every bucket into its stored rows (read, merge, replace) in the caller's
  // transaction; returns the rows written.
  Result<std::size_t> write(Connection& conn);

 private:
  using BucketKey = std::tuple<std::string, std::string, std::string, TimestampNs>;  // source, key, field, start
  std::map<BucketKey, analysis::Rollup> minutes_;
};

// A stretch [from_ns, to_ns) covered by whole buckets of one tier.
struct TierSpan {
  std::int64_t tier_ns = 0;
  TimestampNs from_ns = 0;
  TimestampNs to_ns = 0;
};
// The fewest aligned spans covering [lo, hi) (both minute-aligned), largest tiers inside.
std::vector<TierSpan> cover_range(TimestampNs lo, TimestampNs hi);

// Merges the rows of `keys` whose buckets overlap `range` (a bucket counts whole); nullopt
// when none does.
Result<std::optional<RollupAnswer>> read_rollups(Connection& conn, std::string_view source,
                                                 const std::vector<std::string>& keys, std::string_view field,
                                                 const TimeRange& range);
// Merges the rows of every stored key of a source that starts with `prefix`.
Result<std::optional<RollupAnswer>> read_rollups_by_prefix(Connection& conn, std::string_view source,
                                                           std::string_view field, std::string_view prefix,
                                                           const TimeRange& range);
// The stored keys of a source that start with `prefix`.
Result<std::vector<std::string>> rollup_keys(Connection& conn, std::string_view source, std::string_view field,
                                             std::string_view prefix);

}  // namespace perfscope::db
