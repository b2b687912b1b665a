// GpuAlerts: the design documents' power target (SetPowerTarget) and thermal protection as
// alerts. Fed every sampling pass; an alert fires when a GPU's power (1 s average) goes above
// the configured target, or when a thermal slowdown reason becomes active — once per
// excursion (on the rising edge), not once per sample.
//
// Thread-safety: observe() from the sampler thread only; recent() from any thread.
#pragma once

#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/series/series_store.hpp"

namespace perfscope {

struct GpuAlert {
  TimestampNs ts_ns = 0;
  std::string kind;  // "power_target" or "thermal_throttling"
  SeriesKey series;  // the series that crossed
  double value = 0;
  double threshold = 0;
  std::string message;
};

class GpuAlerts {
 public:
  GpuAlerts(const SeriesStore& store, std::optional<double> power_target_watts, std::size_t keep = 1000)
      : store_(store), power_target_(power_target_watts), keep_(keep) {}

  std::vector<GpuAlert> observe(const SampleBatch& batch);
  std::vector<GpuAlert> recent(TimestampNs from_ns, TimestampNs to_ns) const;
  std::optional<double> power_target_watts() const { return power_target_; }

 private:
  enum class Watch : std::uint8_t { kUnknown, kNone, kPower, kThermal };
  const SeriesStore& store_;
  const std::optional<double> power_target_;
  const std::size_t keep_;
  std::vector<Watch> watch_;   // by SeriesId; sampler thread
  std::vector<bool> active_;   // by SeriesId; sampler thread
  mutable std::mutex mu_;
  std::deque<GpuAlert> kept_;  // guarded by mu_
};

}  // namespace perfscope
