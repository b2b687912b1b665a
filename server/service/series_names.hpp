// The series the analyses read, by the names the collectors publish them under (engine/
// gpu_collector.cpp, engine/collectors/host_collector.cpp): one home for the names on the analysis side.
#pragma once

namespace perfscope::service::series_names {

inline constexpr const char* kGpuUtilization = "gpu_utilization_ratio";
inline constexpr const char* kGpuDramUtilization = "gpu_dram_bandwidth_utilization_ratio";
inline constexpr const char* kGpuMemoryUsed = "gpu_memory_used_bytes";
inline constexpr const char* kGpuDramBandwidth = "gpu_dram_bandwidth_bytes_per_second";
inline constexpr const char* kGpuTensorEstimate = "gpu_tensor_estimated_flops_per_second";
inline constexpr const char* kGpuMemoryTotal = "gpu_memory_total_bytes";
inline constexpr const char* kGpuThrottle = "gpu_throttle_seconds_total";
inline constexpr const char* kGpuPower = "gpu_power_watts";
inline constexpr const char* kGpuEnergy = "gpu_energy_joules_total";
inline constexpr const char* kHostCpu = "host_cpu_utilization_ratio";
inline constexpr const char* kHostEnergy = "host_rapl_energy_joules_total";

}  // namespace perfscope::service::series_names
