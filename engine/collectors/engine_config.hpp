// EngineConfig: what the monitoring engine needs to know, mirroring the design documents'
// PerformanceMonitorConfig (sampling interval, history size, per-collector switches).
// A plain value, validated once at start-up by the server's configuration loader.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "engine/analysis/device_targets.hpp"
#include "engine/events/gpu_specs.hpp"

namespace perfscope {

// One Prometheus endpoint to scrape (`--scrape`): its series are stored as the exposition names
// them, labelled job, instance and `labels`.
struct ScrapeTarget {
  std::string url;  // http(s)://host:port/path
  std::string job;  // default: the URL's host
  std::vector<std::pair<std::string, std::string>> labels;
  std::chrono::milliseconds interval{15000};
  std::chrono::milliseconds timeout{10000};
  std::size_t sample_limit = 50'000;      // a larger scrape is refused whole
  std::size_t series_limit = 5'000;       // distinct series kept; newer ones are dropped
  std::size_t body_limit = 32 << 20;      // bytes of exposition read at most
  std::string token;                      // sent as a bearer token when not empty
  std::string ca_file;                    // https: CA certificates instead of the trust store
};

struct EngineConfig {
  std::chrono::milliseconds sampling_interval{100};
  std::size_t history_buffer_size = 10000;  // samples kept in memory per series
  bool enable_host_collector = true;
  bool enable_gpu_collector = true;
  // Where procfs and sysfs are read: the host's, mounted into a container (a node agent's
  // /host/proc and /host/sys, as node_exporter's --path.procfs and --path.sysfs).
  std::string procfs = "/proc";
  std::string sysfs = "/sys";
  std::string nvml_library;  // empty: the system's libnvidia-ml.so.1
  // The kubelet's PodResources socket (Kubernetes node agents): which pod holds which GPU.
  // Empty: not read.
  std::string pod_resources_socket;
  std::chrono::milliseconds pod_resources_interval{10000};
  std::size_t gpu_process_series_limit = 2000;  // processes given series of their own
  // How often GPU processes are read (on the collector's process thread): the driver lists each
  // process's SM share of its newest ~200 ms period only, so reads at 200 ms see all the time.
  std::chrono::milliseconds gpu_process_interval{200};
  double power_target_watts = 0;  // > 0: alert when a GPU's power goes above it
  std::vector<GpuPeakOverride> gpu_peaks;  // --gpu-peak
  std::vector<analysis::DeviceTarget> device_targets;  // --device-target, first match wins
  std::vector<ScrapeTarget> scrape_targets;
};

}  // namespace perfscope
