// GpuAlerts: the design documents' power target (SetPowerTarget) and thermal protection as
// alerts, and the driver's Xid errors. Fed every sampling pass; an alert fires when a GPU's
// power (1 s average) goes above the configured target, or when a thermal slowdown reason
// becomes active — once per excursion (on the rising edge), not once per sample — and each time
// a GPU's count of an Xid grows.
//
// Thread-safety: observe() from the sampler thread only; recent() from any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/base/recent_log.hpp"
#include "engine/series/series_store.hpp"

namespace perfscope {

// What NVIDIA's Xid catalogue says an Xid means (the common ones), or empty.
const char* xid_meaning(unsigned long long xid);

struct GpuAlert {
  TimestampNs ts_ns = 0;
  std::string kind;  // "power_target", "thermal_throttling" or "xid"
  SeriesKey series;  // the series that crossed
  double value = 0;
  double threshold = 0;
  std::string message;
};

class GpuAlerts {
 public:
  GpuAlerts(const SeriesStore& store, std::optional<double> power_target_watts, std::size_t keep = 1000)
      : store_(store), power_target_(power_target_watts), kept_(keep) {}

  std::vector<GpuAlert> observe(const SampleBatch& batch);
  std::vector<GpuAlert> recent(TimestampNs from_ns, TimestampNs to_ns) const;
  std::optional<double> power_target_watts() const { return power_target_; }

 private:
  enum class Watch : std::uint8_t { kUnknown, kNone, kPower, kThermal, kXid };
  const SeriesStore& store_;
  const std::optional<double> power_target_;
  std::vector<Watch> watch_;   // by SeriesId; sampler thread
  std::vector<bool> active_;   // by SeriesId; sampler thread
  std::vector<double> last_;   // by SeriesId: an Xid count's previous value; sampler thread
  RecentLog<GpuAlert> kept_;
};

}  // namespace perfscope
