#include "server/service/device_efficiency.hpp"

#include <algorithm>

#include "server/service/series_names.hpp"

namespace perfscope::service {

namespace an = perfscope::analysis;
using namespace series_names;

DramCeiling dram_ceiling(const GpuDeviceInfo& d) {
  if (d.spec && d.spec->dram_from_config) return {d.spec->dram_bytes_per_second, "config"};
  if (d.peak_dram_bandwidth_bytes_per_second > 0) return {d.peak_dram_bandwidth_bytes_per_second, "nvml"};
  if (d.spec && d.spec->dram_bytes_per_second > 0) return {d.spec->dram_bytes_per_second, "datasheet"};
  return {};
}

std::vector<DeviceEfficiency> device_efficiency(const std::vector<GpuDeviceInfo>& gpus,
                                                const std::vector<an::DeviceTarget>& targets,
                                                const std::vector<SeriesSummary>& gauges,
                                                const std::vector<db::KernelSummary>& kernels,
                                                std::optional<double>& worst_of_minimum) {
  std::vector<DeviceEfficiency> out;
  for (const GpuDeviceInfo& d : gpus) {
    DeviceEfficiency& e = out.emplace_back(DeviceEfficiency{d, dram_ceiling(d), {}, {}, {}});
    an::KernelWork work;
    for (const db::KernelSummary& k : kernels) {
      if (auto it = k.work_by_device.find(d.index); it != k.work_by_device.end()) work.merge(it->second);
    }
    an::DeviceAchieved& a = e.achieved;
    constexpr const char* kKernelBasis = "work the kernels reported over the time of those executions";
    if (auto v = work.flops_per_second()) {
      a.tflops = an::Achieved{*v / 1e12, "kernels", kKernelBasis};
    } else if (const SeriesSummary* g = gauge_of(gauges, kGpuTensorEstimate, d.uuid)) {
      a.tflops = an::Achieved{g->avg / 1e12, "gpm_estimate",
                              "tensor-pipe activity × BF16 peak, mean over the window, idle time included (an estimate)"};
    }
    if (auto v = work.bytes_per_second()) {
      a.gb_per_second = an::Achieved{*v / 1e9, "kernels", kKernelBasis};
    } else if (const SeriesSummary* g = gauge_of(gauges, kGpuDramBandwidth, d.uuid)) {
      a.gb_per_second = an::Achieved{g->avg / 1e9, "gpm", "DRAM bandwidth utilization × peak, mean over the window, idle time included"};
    }
    if (const SeriesSummary* g = gauge_of(gauges, kGpuMemoryUsed, d.uuid)) {
      a.memory_peak_bytes = an::Achieved{g->peak, "nvml", "peak device memory used in the window"};
    }
    if (const SeriesSummary* g = gauge_of(gauges, kGpuPower, d.uuid)) {
      a.power_avg_watts = an::Achieved{g->avg, "nvml", "mean power draw over the window"};
    }
    if (const an::DeviceTarget* t = an::target_for(targets, d.index, d.uuid, d.name)) {
      e.target = *t;
      e.checks = an::check_targets(*t, a);
      for (const an::TargetCheck& c : e.checks) {
        if (c.of_minimum) worst_of_minimum = std::min(worst_of_minimum.value_or(*c.of_minimum), *c.of_minimum);
      }
    }
  }
  return out;
}

}  // namespace perfscope::service
