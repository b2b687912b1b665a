// GpuCollector: every NVIDIA GPU through NVML (loaded at run time, nvml.hpp), one device per
// GPU labelled gpu="<index>", uuid="<uuid>". Per pass: utilization, memory (v2 with reserved,
// v1 fallback), power (average, instantaneous, limit) and energy, temperatures and a thermal
// state, clocks, clock-event (throttle) reasons with time spent in each, per-process memory,
// and on Hopper and newer the GPM metrics (SM utilization and occupancy, DRAM bandwidth
// utilization and bytes/s, tensor and FP activity, PCIe and NVLink bytes/s) from two samples
// at least 100 ms apart. Slow NVML calls (PCIe throughput) are never made.
//
// No library, no GPU, a function this GPU lacks: the collector reports it once as a source
// and emits nothing for it. A GPU that falls off the bus is marked lost (gpu_up 0) and
// re-probed every few seconds; nothing it returns can crash the sampler.
//
// Thread-safety: collect() from the sampler thread only; families(), sources() and devices()
// are safe from any thread.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <chrono>
#include <unordered_map>
#include <vector>

#include "engine/series/collector.hpp"
#include "engine/collectors/gpu_process_reader.hpp"
#include "engine/collectors/xid_watcher.hpp"
#include "engine/events/gpu_specs.hpp"
#include "engine/collectors/process_tracker.hpp"
#include "engine/collectors/nvml.hpp"

namespace perfscope {

struct GpuCollectorOptions {
  std::string library_path;  // empty: libnvidia-ml.so.1 from the system
  std::string proc_root = "/proc";  // where process names are looked up
  // Not owned; gets every pass's processes. It must outlive the collector: the process
  // thread feeds it until the collector is destroyed.
  ProcessTracker* tracker = nullptr;
  // Distinct processes (pid, command, container per GPU) given series of their own, for the
  // server's life: the series store keeps every series it was given. Later processes keep
  // their lifetime records (the tracker) but get no series.
  std::size_t process_series_limit = 2000;
  // How often the processes are read. NVML's per-process utilization call costs ~1.4 ms of CPU
  // with 10 processes on an H100 (the driver's own work) and its process list ~0.1 ms; the
  // driver keeps only its newest ~200 ms period of SM shares, so a read every 200 ms sees all of
  // the time and one every second a fifth of it.
  std::chrono::milliseconds process_interval{1000};
  // Read the processes on a thread of their own (the server does): the pass then emits the
  // readings of the previous read. Off: read inside the pass (tests, benchmarks of the call).
  bool process_thread = false;
  std::vector<GpuPeakOverride> peaks;  // --gpu-peak: figures over the table of known GPUs
  const PodDirectory* pods = nullptr;  // not owned, outlives the collector; Kubernetes holders of GPUs
};

// What /api/v1/devices shows for one GPU.
struct GpuDeviceInfo {
  std::string index, uuid, name, pci_bus_id;
  double memory_total_bytes = 0;
  double power_limit_watts = 0;
  double max_sm_clock_hertz = 0, max_memory_clock_hertz = 0;
  unsigned memory_bus_width_bits = 0;
  double peak_dram_bandwidth_bytes_per_second = 0;  // 0 when clock or bus width is unknown
  // NVLink: active links and NVML's common per-link rate (one direction); their product is the
  // GPU's link peak, what collectives' bus bandwidth is set against. 0: no NVLink, or unknown.
  unsigned nvlinks = 0;
  double nvlink_bytes_per_second_per_link = 0;
  double link_peak_bytes_per_second() const { return nvlinks * nvlink_bytes_per_second_per_link; }
  std::optional<GpuSpec> spec;  // peak figures, for GPUs of the table (gpu_specs.hpp)
  bool gpm = false;
  bool lost = false;
  std::vector<std::string> unsupported;  // metrics this GPU does not provide
  // MIG: a GPU in MIG mode is listed with mig_mode, and each of its instances after it as a
  // device of its own: its MIG uuid, the parent's uuid, its GPU and compute instance ids.
  bool mig_mode = false;
  std::string parent_uuid;                            // instances only
  int gpu_instance_id = -1, compute_instance_id = -1;  // instances only
  Labels labels;  // the labels of this device's series
};

// How two GPUs are connected, as `nvidia-smi topo -m` shows it: NVLink links between them
// ("NV18"), else their closest common PCIe ancestor: PIX (one PCIe switch), PXB (several),
// PHB (a host bridge), NODE (within a NUMA node), SYS (across the SMP interconnect).
struct GpuLink {
  std::string a, b;     // GPU indices, a < b
  unsigned nvlinks = 0;       // active NVLink links from a to b, directly or through NVSwitches
  bool via_nvswitch = false;  // some of them through NVSwitches
  std::string pcie;           // PIX, PXB, PHB, NODE, SYS; empty when NVML cannot say
  std::string label() const { return nvlinks ? "NV" + std::to_string(nvlinks) : pcie.empty() ? "?" : pcie; }
};

class GpuCollector final : public Collector {
 public:
  explicit GpuCollector(GpuCollectorOptions options = {});
  ~GpuCollector() override;

  std::string_view name() const override { return "nvidia"; }
  std::vector<MetricFamily> families() const override;
  std::vector<SourceStatus> sources() const override;
  void collect(TimestampNs now_ns, std::vector<Reading>& out) override;
  void take_retired(std::vector<SeriesKey>& out) override;

  std::vector<GpuDeviceInfo> devices() const;
  // Every pair of (whole) GPUs, read once at start.
  std::vector<GpuLink> topology() const;
  std::string driver_version() const { return driver_; }
  std::string nvml_version() const { return nvml_version_; }

  // Names of the clock-event reasons, by bit (reason labels).
  static constexpr std::array<std::pair<unsigned long long, const char*>, 9> kReasons = {{
      {0x1, "gpu_idle"},
      {0x2, "applications_clocks_setting"},
      {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},
      {0x10, "sync_boost"},
      {0x20, "sw_thermal_slowdown"},
      {0x40, "hw_thermal_slowdown"},
      {0x80, "hw_power_brake_slowdown"},
      {0x100, "display_clock_setting"},
  }};

 private:
  struct Gpu;
  void probe();
  void probe_mig_instances(const Gpu& parent);
  Gpu& add_probed(std::unique_ptr<Gpu> g);
  void identify(Gpu& g);
  // Every pair of whole GPUs; records each GPU's active links and their far ends too.
  std::vector<GpuLink> read_topology();
  void collect_gpu(Gpu& g, TimestampNs now_ns, std::vector<Reading>& out);
  bool collect_memory(Gpu& g, std::vector<Reading>& out);
  void collect_power(Gpu& g, TimestampNs now_ns, std::vector<Reading>& out);
  std::optional<unsigned> collect_sensors(Gpu& g, TimestampNs now_ns, std::vector<Reading>& out);
  void collect_throttling(Gpu& g, TimestampNs now_ns, std::optional<unsigned> temp, std::vector<Reading>& out);
  void collect_gpm(Gpu& g, TimestampNs now_ns, std::vector<Reading>& out);
  void collect_nvlinks(Gpu& g, const nvml::GpmMetricsRequest& req, unsigned first, std::vector<Reading>& out);
  void collect_devices(TimestampNs now_ns, std::vector<Reading>& out);
  // When due, the GPU's processes: read here, or queued for the worker.
  void collect_processes(Gpu& g, TimestampNs now_ns, std::vector<Reading>& out);
  void apply(Gpu& g, GpuProcessResult result, std::vector<Reading>& out);
  bool check(Gpu& g, int rc, const char* metric);

  const GpuCollectorOptions options_;
  std::unique_ptr<nvml::Library> lib_;
  std::vector<SourceStatus> sources_;
  std::string driver_, nvml_version_;
  std::vector<std::unique_ptr<Gpu>> gpus_;  // sampler thread; identity fields copied under mu_
  mutable std::mutex mu_;
  std::vector<GpuDeviceInfo> infos_;  // guarded by mu_
  std::vector<GpuLink> topology_;      // written once in the constructor
  std::unique_ptr<GpuProcessReader> process_reader_;  // null without NVML
  std::vector<GpuProcessJob> process_jobs_;            // sampler thread: this pass's jobs
  std::vector<SeriesKey> retired_;                     // sampler thread: series of ended processes
  std::unique_ptr<GpuProcessWorker> process_worker_;   // null: processes read in the pass
  std::unique_ptr<XidWatcher> xids_;                   // null without NVML
};

}  // namespace perfscope
