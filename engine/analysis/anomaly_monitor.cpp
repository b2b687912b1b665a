#include "engine/analysis/anomaly_monitor.hpp"

#include <algorithm>
#include <string_view>

namespace perfscope {

double anomaly_unit_floor(std::string_view family) {
  if (family.ends_with("_ratio")) return 0.02;                  // 2 percentage points
  if (family.ends_with("_bytes")) return 1024.0 * 1024.0;       // 1 MiB
  if (family.ends_with("_celsius")) return 2;
  if (family.ends_with("_watts")) return 5;
  if (family.ends_with("_hertz")) return 50e6;                  // 50 MHz
  if (family.ends_with("_seconds")) return 1e-3;
  return 0;
}

std::vector<Anomaly> AnomalyMonitor::observe(const SampleBatch& batch) {
  std::vector<Anomaly> found;
  for (const auto& [id, value] : batch.values) {
    if (id >= slots_.size()) slots_.resize(static_cast<std::size_t>(id) + 1);
    Slot& slot = slots_[id];
    if (!slot.decided) {
      // Gauges only: a counter's every sample is "new" by construction.
      auto snap = store_.snapshot(id);
      auto family = snap ? store_.family(snap->key.name) : std::nullopt;
      slot.decided = true;
      if (!family || family->type != MetricType::kCounter) {
        analysis::AnomalyDetector::Options options = options_;
        if (snap) options.min_absolute_deviation = std::max(options.min_absolute_deviation, anomaly_unit_floor(snap->key.name));
        slot.detector.emplace(options);
      }
    }
    if (!slot.detector) continue;
    const double center = slot.detector->center();
    if (auto score = slot.detector->observe(value)) {
      auto snap = store_.snapshot(id);
      if (!snap) continue;
      found.push_back({batch.ts_ns, snap->key, value, *score, center});
    }
  }
  kept_.add(found);
  return found;
}

std::vector<Anomaly> AnomalyMonitor::recent(TimestampNs from_ns, TimestampNs to_ns) const {
  return kept_.between(from_ns, to_ns);
}

}  // namespace perfscope
