// Each GPU against what it can do and what it should do over a window: its peaks (datasheet,
// NVML or configured), what the window achieved (the kernels' reported work, else GPM's
// figures; NVML's memory and power) and the checks against its --device-target.
//
// Pure functions over values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "db/event_reader.hpp"
#include "engine/analysis/device_targets.hpp"
#include "engine/analysis/roofline.hpp"
#include "engine/collectors/gpu_collector.hpp"
#include "server/service/series_summary.hpp"

namespace perfscope::service {

// The DRAM ceiling of a GPU: the config's figure when one was given, else NVML's (max memory
// clock × bus width), else the datasheet's; and which it was ("config", "nvml", "datasheet";
// empty with 0 when none is known).
struct DramCeiling {
  double bytes_per_second = 0;
  const char* source = "";
};
DramCeiling dram_ceiling(const GpuDeviceInfo& gpu);

struct DeviceEfficiency {
  GpuDeviceInfo gpu;
  DramCeiling dram;
  analysis::DeviceAchieved achieved;
  std::optional<analysis::DeviceTarget> target;  // the --device-target that matched, if any
  std::vector<analysis::TargetCheck> checks;
};

// Per GPU of `gpus`, in order. `worst_of_minimum` gets the lowest ratio of an achieved figure to
// its minimum over every check (the bottleneck rules' device_target_of_minimum_worst).
std::vector<DeviceEfficiency> device_efficiency(const std::vector<GpuDeviceInfo>& gpus,
                                                const std::vector<analysis::DeviceTarget>& targets,
                                                const std::vector<SeriesSummary>& gauges,
                                                const std::vector<db::KernelSummary>& kernels,
                                                std::optional<double>& worst_of_minimum);

// A kernel's place under the roofline of one GPU it ran on, or why it has none.
struct RooflinePlace {
  std::string device;
  std::string unavailable;  // why there is no place; empty when placed
  // When placed:
  std::string model;
  std::string dtype;
  double peak_tflops = 0;
  DramCeiling dram;
  std::string compute_source;  // where the compute peak came from ("datasheet", "config")
  analysis::Ceilings ceilings{};
  analysis::RooflinePoint point{};
};

// Per device the kernel reported work on (none when it reported no work): its roofline against
// that GPU's peak for the kernel's one dtype and its DRAM ceiling.
std::vector<RooflinePlace> kernel_roofline(const db::KernelSummary& kernel, const std::vector<GpuDeviceInfo>& gpus);

}  // namespace perfscope::service
