// The names of the metric families that more than one part of perfscope speaks of: the
// collector that publishes a family declares it under one of these names, and the analysis,
// the reports, the trace export and the alerts read it by the same constant. A family only its
// own collector mentions keeps its name in that collector's table. Prometheus conventions:
// base units, `_ratio` for 0–1, `_total` for counters (docs/metrics.md lists every family).
// tests/engine/collectors/metric_names_test.cpp holds each name to a family a collector declares.
#pragma once

namespace perfscope::metric_names {

// NVIDIA GPUs (engine/collectors/gpu_collector.cpp)
inline constexpr const char* kGpuUtilization = "gpu_utilization_ratio";
inline constexpr const char* kGpuMemoryTotal = "gpu_memory_total_bytes";
inline constexpr const char* kGpuMemoryUsed = "gpu_memory_used_bytes";
inline constexpr const char* kGpuPower = "gpu_power_watts";
inline constexpr const char* kGpuEnergy = "gpu_energy_joules_total";
inline constexpr const char* kGpuTemperature = "gpu_temperature_celsius";
inline constexpr const char* kGpuThrottle = "gpu_throttle_seconds_total";
inline constexpr const char* kGpuDramBandwidth = "gpu_dram_bandwidth_bytes_per_second";
inline constexpr const char* kGpuDramUtilization = "gpu_dram_bandwidth_utilization_ratio";
inline constexpr const char* kGpuTensorEstimate = "gpu_tensor_estimated_flops_per_second";
inline constexpr const char* kGpuXidErrors = "gpu_xid_errors_total";
// GPU processes (engine/collectors/gpu_process_reader.cpp); a process's page reads them back.
inline constexpr const char* kGpuProcessMemory = "gpu_process_memory_bytes";
inline constexpr const char* kGpuProcessUtilization = "gpu_process_utilization_ratio";
inline constexpr const char* kGpuProcessCpu = "gpu_process_cpu_seconds_total";
inline constexpr const char* kGpuProcessResidentMemory = "gpu_process_resident_memory_bytes";
inline constexpr const char* kGpuProcessAccountingUtilization = "gpu_process_accounting_utilization_ratio";
inline constexpr const char* kGpuProcessAccountingMaxMemory = "gpu_process_accounting_max_memory_bytes";
// Which Kubernetes pod and container holds a GPU (1 per holder), for joins in PromQL.
inline constexpr const char* kGpuPodInfo = "gpu_pod_info";
// The host (engine/collectors/host_collector.cpp)
inline constexpr const char* kHostCpu = "host_cpu_utilization_ratio";
inline constexpr const char* kHostMemoryUsed = "host_memory_used_bytes";
inline constexpr const char* kHostEnergy = "host_rapl_energy_joules_total";

// Every name above, for the test that holds each to a family a collector declares.
inline constexpr const char* kAll[] = {
    kGpuUtilization,
    kGpuMemoryTotal,
    kGpuMemoryUsed,
    kGpuPower,
    kGpuEnergy,
    kGpuTemperature,
    kGpuThrottle,
    kGpuDramBandwidth,
    kGpuDramUtilization,
    kGpuTensorEstimate,
    kGpuXidErrors,
    kGpuProcessMemory,
    kGpuProcessUtilization,
    kGpuProcessCpu,
    kGpuProcessResidentMemory,
    kGpuProcessAccountingUtilization,
    kGpuProcessAccountingMaxMemory,
    kGpuPodInfo,
    kHostCpu,
    kHostMemoryUsed,
    kHostEnergy,
};

}  // namespace perfscope::metric_names
