// CardinalityGuard: bounds how many distinct values each dimension of reported events may
// take — kernel names, variants, streams, devices, models, operators, memory tags, tag keys,
// the values of each tag key and of all keys together, custom series — so a producer that puts a request id into a
// name cannot grow the server, the database and every view without bound.
//
// What happens at a cap:
//  - A new value of a dimension that only *labels* work (a kernel's name, a model, a tag
//    value, …) is folded into kOtherValue. The event itself is kept, so every total, count,
//    busy time and percentile stays right; only the identity of names beyond the cap is lost
//    (OpenTelemetry SDKs fold overflowing attribute sets the same way).
//  - A new tag key beyond its cap drops that tag from the event: keys must be label names, and
//    one key holding the values of many would mean nothing.
//  - A new custom series (metric name and labels) is refused, with the batch it came in: a
//    gauge merged with other gauges is a wrong number, not a coarser one (Prometheus fails a
//    scrape over its sample limit for the same reason). The status names the field and cap.
//
// Values count while they were seen within `window` (default 24 h), so names that stop
// appearing (last week's runs) make room again. Custom series count for the server's life:
// the series store keeps each in memory until the server stops. Counting starts when the
// guard is made (server start); what the database held before does not count.
//
// Thread-safety: every method is safe from any thread; apply() takes one mutex per batch.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/events/events.hpp"
#include "engine/base/status.hpp"

namespace perfscope {

// What a folded value becomes. Brackets keep it apart from any C++ or Python symbol.
inline constexpr std::string_view kOtherValue = "[other]";

enum class Dimension {
  kKernelName,
  kVariant,
  kStream,     // kernel streams and command-buffer queues
  kDevice,
  kModel,      // inference and operator models (and model versions)
  kOperator,   // operator names and types
  kMemoryTag,
  kTagKey,
  kTagValue,   // per tag key
  kSeries,     // custom series: metric name and labels
  kAllTagValues,  // tag values of all keys together: the key cap times the per-key cap is no bound
};
inline constexpr std::size_t kDimensionCount = 11;

// The dimension's name in options, /api/v1/info and /metrics ("kernel_name", …).
std::string_view dimension_name(Dimension d);
std::optional<Dimension> dimension_from(std::string_view name);

struct CardinalityLimits {
  // Distinct values allowed per dimension (0: no cap). kTagValue's applies to each key.
  // Custom series are fewer by default: each keeps a ring of recent samples in memory.
  std::array<std::size_t, kDimensionCount> limits = {
      10000,  // kernel_name
      1000,   // variant
      1000,   // stream
      256,    // device
      1000,   // model
      10000,  // operator
      10000,  // memory_tag
      1000,   // tag_key
      10000,  // tag_value (per key)
      1000,   // series
      100000,  // all_tag_values
  };
  std::chrono::seconds window{24 * 3600};

  std::size_t& operator[](Dimension d) { return limits[static_cast<std::size_t>(d)]; }
  std::size_t operator[](Dimension d) const { return limits[static_cast<std::size_t>(d)]; }
  // "kernel_name=20000,series=500": the named caps changed, the rest kept; a bad entry is
  // an invalid_argument naming it.
  Status parse(std::string_view text);
};

struct DimensionStats {
  Dimension dimension;
  std::size_t limit = 0;
  std::size_t distinct = 0;  // values counted now (kTagValue: of its fullest key)
  std::uint64_t folded = 0;  // values folded into kOtherValue (or tags dropped, kTagKey)
  std::uint64_t refused = 0;  // events refused (kSeries)
};

class CardinalityGuard {
 public:
  explicit CardinalityGuard(CardinalityLimits limits = {});

  // Folds what passes a cap in place. Refuses the whole batch (invalid_argument naming the
  // event's field; nothing counted, nothing changed) when it holds new custom series beyond
  // their cap. `now` is the wall time the window counts in. `folded`, when given, gets how
  // many values were folded or dropped.
  Status apply(std::vector<Event>& events, TimestampNs now, std::size_t* folded = nullptr);

  std::vector<DimensionStats> stats() const;
  const CardinalityLimits& limits() const { return limits_; }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // The values of one dimension (or of one tag key) and when each was last seen.
  class ValueSet {
   public:
    // True when `value` is counted (seen before, or new and under `limit`). Values unseen for
    // longer than `window` are swept out, at most once a minute, when the set is full.
    bool admit(std::string_view value, std::size_t limit, TimestampNs now, std::int64_t window_ns);
    bool contains(std::string_view value) const { return last_seen_.count(value) != 0; }
    void insert(std::string value, TimestampNs now) { last_seen_.emplace(std::move(value), now); }
    std::size_t size() const { return last_seen_.size(); }
    // Drops values unseen for longer than `window_ns`; returns how many.
    std::size_t sweep(TimestampNs now, std::int64_t window_ns);

   private:
    std::unordered_map<std::string, TimestampNs, Hash, std::equal_to<>> last_seen_;
    TimestampNs last_sweep_ = 0;
  };

  // Admits or folds one value of `d`; counts a fold.
  // The values of each dimension admitted earlier in the batch being applied (views into its
  // events): a batch's events mostly repeat their device, stream and variant, and admitting a
  // value again at the same `now` changes nothing, so it is not looked up again.
  using BatchAdmitted = std::array<std::string_view, kDimensionCount>;
  void check(Dimension d, std::string& value, TimestampNs now, std::size_t& folded, BatchAdmitted& admitted);
  void check_tags(Tags& tags, TimestampNs now, std::size_t& folded);
  // True when one more tag value fits under kAllTagValues' cap (after sweeping stale values
  // of every key, at most once a minute, when it is reached).
  bool room_for_tag_value(TimestampNs now);
  Status admit_series(const std::vector<Event>& events, TimestampNs now);
  ValueSet& set_of(Dimension d) { return sets_[static_cast<std::size_t>(d)]; }

  const CardinalityLimits limits_;
  const std::int64_t window_ns_;
  mutable std::mutex mu_;
  std::array<ValueSet, kDimensionCount> sets_;       // guarded by mu_; kTagValue's unused
  std::map<std::string, ValueSet, std::less<>> tag_values_;  // guarded by mu_; per tag key
  std::size_t all_tag_values_ = 0;     // guarded by mu_; the sum of tag_values_' sizes
  TimestampNs last_all_tag_sweep_ = 0;  // guarded by mu_
  std::array<std::uint64_t, kDimensionCount> folded_{};   // guarded by mu_
  std::array<std::uint64_t, kDimensionCount> refused_{};  // guarded by mu_
};

}  // namespace perfscope
