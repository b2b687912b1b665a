// The GPU collector's own parts, shared by its sources (gpu_collector.cpp: probing and the
// pass; gpu_gpm.cpp: GPM and NVLink traffic; gpu_topology.cpp: links and PCIe levels): one GPU
// as the collector keeps it, the GPM metric table and the helpers they use. Private to
// engine/collectors: nothing outside the GPU collector includes it.
//
// Thread-safety: as GpuCollector's (a Gpu is touched by the sampler's thread only).
#pragma once

#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/collectors/gpu_collector.hpp"
#include "engine/series/metric_names.hpp"

namespace perfscope {

namespace gpu_detail {

inline constexpr TimestampNs kGpmMinIntervalNs = 100'000'000;  // GPM needs samples ≥ 100 ms apart
inline constexpr TimestampNs kLostRetryNs = 5'000'000'000;
inline constexpr TimestampNs kEnergyIntervalNs = 10'000'000'000;

// GPM metric ids and what they become, recorded at a fixed resolution.
//
// NVML computes each GPM metric afresh as a double over the window between two samples, so
// every read carries a full 52-bit mantissa of which only the first few digits mean anything:
// the window's start and end are not aligned with the SM's own counters, and an H100 under a
// steady GEMM moved by tenths of a percent from read to read. Stored as given, those digits
// cost 6-8 bytes a sample, three quarters of a GPU's stored bytes (bench/RESULTS.md, issue 21).
// So they are recorded on a grid well below that noise and below what tools display
// (nvidia-smi prints integer percent and MB/s): a ratio to 0.0001 (0.01 percentage point),
// PCIe and NVLink traffic to 1 MB/s. The value seen live, exported and stored is the same one.
struct GpmMetricDef {
  unsigned id;
  const char* family;
  double scale;       // percent → ratio, MiB/s → bytes/s
  double resolution;  // the recorded value is a whole multiple of this
};
inline constexpr double kRatioResolution = 1e-4;
inline constexpr unsigned kGpmNvLinkFirstMetric = 62;  // NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC
inline constexpr double kTrafficResolution = 1e6;
inline constexpr GpmMetricDef kGpmMetrics[] = {
    {2, "gpu_sm_utilization_ratio", 0.01, kRatioResolution},
    {3, "gpu_sm_occupancy_ratio", 0.01, kRatioResolution},
    {5, "gpu_tensor_activity_ratio", 0.01, kRatioResolution},
    {10, metric_names::kGpuDramUtilization, 0.01, kRatioResolution},
    {11, "gpu_fp64_activity_ratio", 0.01, kRatioResolution},
    {12, "gpu_fp32_activity_ratio", 0.01, kRatioResolution},
    {13, "gpu_fp16_activity_ratio", 0.01, kRatioResolution},
    {20, "gpu_pcie_tx_bytes_per_second", 1048576.0, kTrafficResolution},
    {21, "gpu_pcie_rx_bytes_per_second", 1048576.0, kTrafficResolution},
    {60, "gpu_nvlink_rx_bytes_per_second", 1048576.0, kTrafficResolution},
    {61, "gpu_nvlink_tx_bytes_per_second", 1048576.0, kTrafficResolution},
};
// The two estimates derived from them: DRAM bytes/s to 1 GB/s (0.03 % of an H100's peak; the
// utilization they come from has steps of 0.01 % of it), tensor FLOP/s to 1 TFLOP/s (0.1 % of
// an H100's peak, for an estimate that reads ~6 % low).
inline constexpr double kDramBandwidthResolution = 1e9;
inline constexpr double kTensorFlopsResolution = 1e12;

// A whole multiple of `resolution`, computed as the store's scaled coding decodes it (N / 1/r
// for steps below one, N × r above), so the value goes to disk as the integer N.
inline double on_grid(double value, double resolution) {
  if (resolution < 1) {
    const double per_unit = std::round(1 / resolution);
    return std::round(value * per_unit) / per_unit;
  }
  return std::round(value / resolution) * resolution;
}

inline std::string text_of(const char* buf, std::size_t n) { return std::string(buf, strnlen(buf, n)); }

// A PCI bus id to compare: lower case, the domain without leading zeros ("0000:18:00.0" and
// "00000000:18:00.0" are one device).
inline std::string bus_key(std::string id) {
  for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::size_t colon = id.find(':');
  if (colon == std::string::npos) return id;
  const std::size_t nonzero = id.find_first_not_of('0');
  return (nonzero >= colon ? std::string("0") : id.substr(nonzero, colon - nonzero)) + id.substr(colon);
}

}  // namespace gpu_detail

struct GpuCollector::Gpu {
  unsigned index = 0;
  nvml::Device handle = nullptr;
  GpuDeviceInfo info;
  Labels labels;
  bool lost = false;
  TimestampNs retry_at = 0;
  int memory_version = 2;  // 2 (with reserved), 1, 0 (none)
  std::set<std::string> unsupported;
  unsigned slowdown_c = 0, shutdown_c = 0;
  unsigned long long prev_reasons = 0;
  bool have_reasons = false;
  TimestampNs prev_ns = 0;
  // Nanoseconds each reason was active: an integer sum (exact, and stored as a few bits a pass,
  // where a sum of doubles carries a full mantissa).
  std::array<std::int64_t, kReasons.size()> throttle_ns{};
  nvml::GpmSample gpm_prev = nullptr, gpm_cur = nullptr;
  // Active NVLink links and what is at their other end: another GPU's index, "nvswitch", or
  // "other" (read once at start, with the topology).
  std::vector<std::pair<unsigned, std::string>> nvlinks;
  TimestampNs gpm_prev_ns = 0;
  std::unique_ptr<nvml::GpmMetricsRequest> gpm_request;
  TimestampNs power_prev_ns = 0;
  std::optional<double> energy_since_processes_j;  // board energy since the processes were read
  bool compute_idle = false;  // this pass: SM and memory engines idle (utilization 0 and 0)
  TimestampNs processes_read_ns = 0;
  // MIG: on a GPU in MIG mode its processes are read per instance; an instance is found again
  // (after a lost GPU) by its parent's index and its slot.
  bool mig_mode = false;
  int mig_slot = -1;
  bool accounting = false;  // the driver keeps per-process accounting statistics
  double energy_j = -1;  // the newest energy reading
  TimestampNs energy_read_ns = 0;  // when the slow direct call last ran
  double sm_clock_hertz = 0;  // this pass's SM clock (0: unread), for the tensor estimate
};

}  // namespace perfscope
