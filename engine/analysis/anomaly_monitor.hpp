// AnomalyMonitor: one streaming AnomalyDetector per sampled gauge (counters are skipped), fed every sampling pass
// (O(1) per point), and the most recent anomalies kept for queries.
//
// Thread-safety: observe() from the sampler thread only; recent() from any thread.
#pragma once

#include <string_view>
#include <vector>

#include "engine/analysis/change_points.hpp"
#include "engine/base/recent_log.hpp"
#include "engine/series/series_store.hpp"

namespace perfscope {

struct Anomaly {
  TimestampNs ts_ns = 0;
  SeriesKey key;
  double value = 0;
  double score = 0;   // robust z-score
  double center = 0;  // what the series was running at
};

// The smallest change that matters in a family's unit, by the suffix of its name (Prometheus'
// naming): 2 percentage points of a _ratio, 1 MiB of _bytes, 2 °C, 5 W, 50 MHz, 1 ms; 0 for
// other units. Each series' detector takes it as its min_absolute_deviation.
double anomaly_unit_floor(std::string_view family);

class AnomalyMonitor {
 public:
  explicit AnomalyMonitor(const SeriesStore& store, std::size_t keep = 1000,
                          analysis::AnomalyDetector::Options options = {})
      : store_(store), options_(options), kept_(keep) {}

  // Scores one pass; returns the anomalies it found (also kept for recent()).
  std::vector<Anomaly> observe(const SampleBatch& batch);
  // Kept anomalies in [from, to], oldest first.
  std::vector<Anomaly> recent(TimestampNs from_ns, TimestampNs to_ns) const;

 private:
  const SeriesStore& store_;
  const analysis::AnomalyDetector::Options options_;
  struct Slot {
    bool decided = false;
    std::optional<analysis::AnomalyDetector> detector;  // none: not scored (counters)
  };
  std::vector<Slot> slots_;  // by SeriesId; sampler thread only
  RecentLog<Anomaly> kept_;
};

}  // namespace perfscope
