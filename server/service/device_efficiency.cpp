#include "server/service/device_efficiency.hpp"

#include <algorithm>

#include "engine/series/metric_names.hpp"

namespace perfscope::service {

namespace an = perfscope::analysis;
using namespace perfscope::metric_names;

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

namespace {

RooflinePlace place_kernel(const std::string& device, const analysis::KernelWork& work,
                           const std::vector<std::string>& dtypes, const std::vector<GpuDeviceInfo>& gpus) {
  RooflinePlace p;
  p.device = device;
  auto unavailable = [&](std::string why) {
    p.unavailable = std::move(why);
    return p;
  };
  if (!work.arithmetic_intensity()) return unavailable("no execution of measurable duration reported both flops and bytes");
  auto gpu = std::find_if(gpus.begin(), gpus.end(), [&](const GpuDeviceInfo& d) { return d.index == device; });
  if (gpu == gpus.end()) return unavailable("device " + device + " is not a GPU this server reads through NVML");
  p.dram = dram_ceiling(*gpu);
  if (p.dram.bytes_per_second <= 0) {
    return unavailable("the peak DRAM bandwidth of " + gpu->name + " is unknown: give it with --gpu-peak");
  }
  if (dtypes.size() != 1) {
    return unavailable(dtypes.empty() ? "no dtype reported with the flops: the compute ceiling depends on it"
                                      : "flops in several dtypes: report each as a kernel of its own");
  }
  std::optional<double> peak = gpu->spec ? peak_tflops(*gpu->spec, dtypes[0]) : std::nullopt;
  if (!peak) return unavailable("no " + dtypes[0] + " peak known for " + gpu->name + ": give it with --gpu-peak");
  p.ceilings = analysis::Ceilings{*peak * 1e12, p.dram.bytes_per_second};
  const std::optional<analysis::RooflinePoint> placed = analysis::place_on_roofline(work, p.ceilings);
  if (!placed) return unavailable("no execution of measurable duration reported both flops and bytes");
  p.point = *placed;
  p.model = gpu->spec->model;
  p.dtype = dtypes[0];
  p.peak_tflops = *peak;
  p.compute_source = gpu->spec->source;
  return p;
}

}  // namespace

std::vector<RooflinePlace> kernel_roofline(const db::KernelSummary& kernel, const std::vector<GpuDeviceInfo>& gpus) {
  std::vector<RooflinePlace> out;
  if (kernel.work.empty()) return out;
  for (const auto& [device, work] : kernel.work_by_device) out.push_back(place_kernel(device, work, kernel.dtypes, gpus));
  return out;
}

}  // namespace perfscope::service
