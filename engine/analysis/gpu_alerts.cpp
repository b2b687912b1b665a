#include "engine/analysis/gpu_alerts.hpp"
#include "engine/series/metric_names.hpp"

#include <cstdio>

namespace perfscope {

std::vector<GpuAlert> GpuAlerts::observe(const SampleBatch& batch) {
  std::vector<GpuAlert> out;
  for (const auto& [id, value] : batch.values) {
    if (id >= watch_.size()) {
      watch_.resize(static_cast<std::size_t>(id) + 1, Watch::kUnknown);
      active_.resize(watch_.size(), false);
    }
    if (watch_[id] == Watch::kUnknown) {
      watch_[id] = Watch::kNone;
      if (auto snap = store_.snapshot(id)) {
        const SeriesKey& k = snap->key;
        if (k.name == metric_names::kGpuPower && power_target_) watch_[id] = Watch::kPower;
        if (k.name == "gpu_throttle_active") {
          for (const auto& [label, v] : k.labels) {
            if (label == "reason" && (v == "sw_thermal_slowdown" || v == "hw_thermal_slowdown" || v == "hw_slowdown")) {
              watch_[id] = Watch::kThermal;
            }
          }
        }
      }
    }
    if (watch_[id] == Watch::kNone) continue;
    const bool over = watch_[id] == Watch::kPower ? value > *power_target_ : value > 0;
    const bool rising = over && !active_[id];
    active_[id] = over;
    if (!rising) continue;
    auto snap = store_.snapshot(id);
    if (!snap) continue;
    GpuAlert a;
    a.ts_ns = batch.ts_ns;
    a.series = snap->key;
    a.value = value;
    std::string gpu, reason;
    for (const auto& [label, v] : snap->key.labels) {
      if (label == "gpu") gpu = v;
      if (label == "reason") reason = v;
    }
    char text[160];
    if (watch_[id] == Watch::kPower) {
      a.kind = "power_target";
      a.threshold = *power_target_;
      std::snprintf(text, sizeof text, "GPU %s draws %.0f W, above the %.0f W power target", gpu.c_str(), value,
                    *power_target_);
    } else {
      a.kind = "thermal_throttling";
      std::snprintf(text, sizeof text, "GPU %s is thermally throttled (%s)", gpu.c_str(), reason.c_str());
    }
    a.message = text;
    out.push_back(std::move(a));
  }
  if (!out.empty()) {
    std::lock_guard lock(mu_);
    for (const auto& a : out) kept_.push_back(a);
    while (kept_.size() > keep_) kept_.pop_front();
  }
  return out;
}

std::vector<GpuAlert> GpuAlerts::recent(TimestampNs from_ns, TimestampNs to_ns) const {
  std::lock_guard lock(mu_);
  std::vector<GpuAlert> out;
  for (const auto& a : kept_) {
    if (a.ts_ns >= from_ns && a.ts_ns <= to_ns) out.push_back(a);
  }
  return out;
}

}  // namespace perfscope
