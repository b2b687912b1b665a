#include "engine/collectors/gpu_collector.hpp"
#include "engine/collectors/gpu_device.hpp"
#include "engine/series/metric_names.hpp"

#include <cctype>
#include <map>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <unordered_map>

namespace perfscope {

using namespace gpu_detail;

GpuCollector::GpuCollector(GpuCollectorOptions options) : options_(std::move(options)) {
  auto lib = nvml::Library::load(options_.library_path);
  if (!lib.ok()) {
    sources_.push_back({"nvml", false, lib.status().message()});
    return;
  }
  lib_ = std::move(*lib);
  char buf[96] = {};
  if (lib_->api().system_driver_version && lib_->api().system_driver_version(buf, sizeof buf) == nvml::kSuccess) {
    driver_ = text_of(buf, sizeof buf);
  }
  std::memset(buf, 0, sizeof buf);
  if (lib_->api().system_nvml_version && lib_->api().system_nvml_version(buf, sizeof buf) == nvml::kSuccess) {
    nvml_version_ = text_of(buf, sizeof buf);
  }
  sources_.push_back({"nvml", true, lib_->path() + " (driver " + driver_ + ", NVML " + nvml_version_ + ")"});
  process_reader_ = std::make_unique<GpuProcessReader>(
      lib_->api(), GpuProcessOptions{options_.proc_root, options_.tracker, options_.process_series_limit, options_.pods});
  probe();
  if (options_.process_thread) process_worker_ = std::make_unique<GpuProcessWorker>(*process_reader_);
  // Xids are the whole GPU's (a MIG instance's carry its instance ids): the GPUs probed, not their instances.
  std::vector<XidWatcher::Gpu> whole;
  for (const auto& g : gpus_) {
    if (g->info.parent_uuid.empty()) whole.push_back({g->handle, g->info.index, g->info.uuid});
  }
  xids_ = std::make_unique<XidWatcher>(lib_->api(), std::move(whole));
  sources_.push_back({"xid", xids_->watching(), xids_->status()});
}

GpuCollector::~GpuCollector() {
  process_worker_.reset();  // joined before the library and the GPUs go
  xids_.reset();
  if (!lib_) return;
  for (auto& g : gpus_) {
    if (lib_->api().gpm_sample_free) {
      if (g->gpm_prev) lib_->api().gpm_sample_free(g->gpm_prev);
      if (g->gpm_cur) lib_->api().gpm_sample_free(g->gpm_cur);
    }
  }
}

void GpuCollector::probe() {
  const nvml::Api& a = lib_->api();
  unsigned count = 0;
  if (int rc = a.device_count(&count); rc != nvml::kSuccess) {
    sources_.push_back({"gpus", false, "nvmlDeviceGetCount: " + lib_->describe(rc)});
    return;
  }
  if (count == 0) sources_.push_back({"gpus", false, "NVML reports no GPU"});
  for (unsigned i = 0; i < count; ++i) {
    auto g = std::make_unique<Gpu>();
    g->index = i;
    g->info.index = std::to_string(i);
    if (int rc = a.device_by_index(i, &g->handle); rc != nvml::kSuccess) {
      sources_.push_back({"gpu" + g->info.index, false, "nvmlDeviceGetHandleByIndex: " + lib_->describe(rc)});
      continue;
    }
    identify(*g);
    unsigned current = 0, pending = 0;
    g->mig_mode = a.mig_mode && a.mig_mode(g->handle, &current, &pending) == nvml::kSuccess && current == 1;
    g->info.mig_mode = g->mig_mode;
    Gpu& parent = add_probed(std::move(g));
    if (parent.mig_mode) probe_mig_instances(parent);
  }
  topology_ = read_topology();
  std::lock_guard lock(mu_);
  for (const auto& g : gpus_) infos_.push_back(g->info);
}


std::vector<GpuLink> GpuCollector::topology() const { return topology_; }

// Each MIG instance of a GPU in MIG mode, as a device of its own: what NVML answers for an
// instance (name, uuid, memory, processes) is read from its handle; the rest is the parent's.
void GpuCollector::probe_mig_instances(const Gpu& parent) {
  const nvml::Api& a = lib_->api();
  unsigned slots = 0;
  if (!a.max_mig_devices || !a.mig_device_by_index || a.max_mig_devices(parent.handle, &slots) != nvml::kSuccess) {
    sources_.push_back({"gpu" + parent.info.index + " MIG", false, "MIG mode is on, but this NVML cannot list the instances"});
    return;
  }
  for (unsigned slot = 0; slot < slots; ++slot) {
    auto m = std::make_unique<Gpu>();
    if (a.mig_device_by_index(parent.handle, slot, &m->handle) != nvml::kSuccess) continue;  // an empty slot
    m->index = parent.index;
    m->mig_slot = static_cast<int>(slot);
    m->info.index = parent.info.index;
    identify(*m);
    unsigned id = 0;
    if (a.gpu_instance_id && a.gpu_instance_id(m->handle, &id) == nvml::kSuccess) m->info.gpu_instance_id = static_cast<int>(id);
    if (a.compute_instance_id && a.compute_instance_id(m->handle, &id) == nvml::kSuccess) {
      m->info.compute_instance_id = static_cast<int>(id);
    }
    m->info.parent_uuid = parent.info.uuid;
    m->info.pci_bus_id = parent.info.pci_bus_id;
    m->labels = {{"compute_instance", std::to_string(m->info.compute_instance_id)},
                 {"gpu", m->info.index},
                 {"gpu_instance", std::to_string(m->info.gpu_instance_id)},
                 {"uuid", m->info.uuid}};
    m->info.labels = m->labels;
    add_probed(std::move(m));
  }
}

// One trial pass finds the metrics a device does not support, so they are reported once at
// start instead of discovered sample by sample.
GpuCollector::Gpu& GpuCollector::add_probed(std::unique_ptr<Gpu> g) {
  std::vector<Reading> ignored;
  collect_gpu(*g, 0, ignored);  // time 0: leaves no interval state behind
  g->info.unsupported.assign(g->unsupported.begin(), g->unsupported.end());
  std::string detail = g->info.name + " " + g->info.uuid + (g->info.gpm ? ", GPM" : ", no GPM");
  if (g->mig_mode) detail += ", MIG mode (processes read per instance)";
  if (!g->unsupported.empty()) {
    detail += "; not supported:";
    for (const auto& m : g->unsupported) detail += " " + m;
  }
  const std::string name = g->mig_slot >= 0 ? "gpu" + g->info.index + " MIG " + std::to_string(g->info.gpu_instance_id) + "/" +
                                                   std::to_string(g->info.compute_instance_id)
                                             : "gpu" + g->info.index;
  sources_.push_back({name, true, detail});
  gpus_.push_back(std::move(g));
  return *gpus_.back();
}

void GpuCollector::identify(Gpu& g) {
  const nvml::Api& a = lib_->api();
  char buf[96] = {};
  if (a.device_name && a.device_name(g.handle, buf, sizeof buf) == nvml::kSuccess) g.info.name = text_of(buf, sizeof buf);
  g.info.spec = gpu_spec_for(g.info.name, options_.peaks);
  std::memset(buf, 0, sizeof buf);
  if (a.device_uuid && a.device_uuid(g.handle, buf, sizeof buf) == nvml::kSuccess) g.info.uuid = text_of(buf, sizeof buf);
  nvml::PciInfo pci{};
  if (a.device_pci_info && a.device_pci_info(g.handle, &pci) == nvml::kSuccess) {
    g.info.pci_bus_id = text_of(pci.bus_id, sizeof pci.bus_id);
  }
  g.labels = {{"gpu", g.info.index}, {"uuid", g.info.uuid}};
  g.info.labels = g.labels;
  unsigned v = 0;
  if (a.power_limit && a.power_limit(g.handle, &v) == nvml::kSuccess) g.info.power_limit_watts = v / 1000.0;
  if (a.max_clock && a.max_clock(g.handle, nvml::kClockSm, &v) == nvml::kSuccess) g.info.max_sm_clock_hertz = v * 1e6;
  if (a.max_clock && a.max_clock(g.handle, nvml::kClockMemory, &v) == nvml::kSuccess) g.info.max_memory_clock_hertz = v * 1e6;
  if (a.memory_bus_width && a.memory_bus_width(g.handle, &v) == nvml::kSuccess) g.info.memory_bus_width_bits = v;
  // Double data rate: two transfers per memory clock.
  g.info.peak_dram_bandwidth_bytes_per_second = g.info.max_memory_clock_hertz * g.info.memory_bus_width_bits / 8.0 * 2;
  if (a.temperature_threshold) {
    if (a.temperature_threshold(g.handle, 0, &v) == nvml::kSuccess) g.shutdown_c = v;
    if (a.temperature_threshold(g.handle, 1, &v) == nvml::kSuccess) g.slowdown_c = v;
  }
  int accounting = 0;
  g.accounting = a.accounting_mode && a.accounting_stats && a.accounting_mode(g.handle, &accounting) == nvml::kSuccess &&
                 accounting == 1;
  nvml::GpmSupport support{1, 0};
  if (a.gpm_query_support && a.gpm_sample_alloc && a.gpm_sample_get && a.gpm_metrics_get &&
      a.gpm_query_support(g.handle, &support) == nvml::kSuccess && support.is_supported_device &&
      a.gpm_sample_alloc(&g.gpm_prev) == nvml::kSuccess && a.gpm_sample_alloc(&g.gpm_cur) == nvml::kSuccess) {
    g.info.gpm = true;
    g.gpm_request = std::make_unique<nvml::GpmMetricsRequest>();
  }
}

std::vector<SourceStatus> GpuCollector::sources() const {
  std::vector<SourceStatus> out = sources_;
  if (const auto refused = process_reader_ ? process_reader_->series_refused() : 0; refused > 0) {
    out.push_back({"processes", true,
                   "the limit of " + std::to_string(options_.process_series_limit) +
                       " processes with series of their own was reached: later processes keep their lifetime records "
                       "(/api/v1/processes) without series (" + std::to_string(refused) + " process readings so far)"});
  }
  return out;
}

bool GpuCollector::check(Gpu& g, int rc, const char* metric) {
  if (rc == nvml::kSuccess) return true;
  if (rc == nvml::kGpuIsLost) {
    g.lost = true;
  } else {
    g.unsupported.insert(metric);  // not supported, no permission, or failing: left out
  }
  return false;
}

std::vector<MetricFamily> GpuCollector::families() const {
  using T = MetricType;
  std::vector<MetricFamily> f = {
      {"gpu_info", "", T::kGauge, "1 per GPU; labels carry name, PCI bus id, driver and NVML versions"},
      {"gpu_up", "", T::kGauge, "1 while the GPU answers, 0 once it is lost (re-probed every 5 s)"},
      {metric_names::kGpuUtilization, "ratio", T::kGauge, "Fraction of time one or more kernels ran (NVML utilization.gpu)"},
      {"gpu_memory_busy_ratio", "ratio", T::kGauge, "Fraction of time device memory was read or written (NVML utilization.memory; busy time, not bandwidth)"},
      {metric_names::kGpuMemoryTotal, "bytes", T::kGauge, "Device memory"},
      {metric_names::kGpuMemoryUsed, "bytes", T::kGauge, "Device memory used (v2: excluding reserved)"},
      {"gpu_memory_free_bytes", "bytes", T::kGauge, "Device memory free"},
      {"gpu_memory_reserved_bytes", "bytes", T::kGauge, "Device memory reserved by the driver (NVML v2)"},
      {metric_names::kGpuPower, "watts", T::kGauge, "Power draw, NVML's 1 s average"},
      {"gpu_power_instant_watts", "watts", T::kGauge, "Instantaneous power draw"},
      {"gpu_power_limit_watts", "watts", T::kGauge, "Enforced power limit"},
      {metric_names::kGpuEnergy, "joules", T::kCounter, "Energy since the driver loaded"},
      {metric_names::kGpuTemperature, "celsius", T::kGauge, "GPU core temperature"},
      {"gpu_memory_temperature_celsius", "celsius", T::kGauge, "HBM temperature"},
      {"gpu_thermal_state", "", T::kGauge, "0 nominal, 1 fair, 2 serious, 3 critical (from slowdown/shutdown thresholds and throttle reasons)"},
      {"gpu_clock_hertz", "hertz", T::kGauge, "Current clock (clock=sm|memory|graphics)"},
      {"gpu_throttle_active", "", T::kGauge, "1 while a clock-event reason holds clocks back (reason=…)"},
      {metric_names::kGpuThrottle, "seconds", T::kCounter, "Time clocks were held back, per reason"},
      {metric_names::kGpuProcessMemory, "bytes", T::kGauge, "Device memory of a compute process (pid as the host sees it)"},
      {metric_names::kGpuProcessUtilization, "ratio", T::kGauge,
       "A compute process's share of the GPU's SM, memory, encoder and decoder time (NVML's newest per-process sample; 0 when it reported none in 2 s)"},
      {metric_names::kGpuProcessCpu, "seconds", T::kCounter, "Host CPU time (user + system) of a GPU process"},
      {metric_names::kGpuProcessAccountingUtilization, "ratio", T::kGauge,
       "Driver accounting (where enabled): share of the process's lifetime with one of its kernels running"},
      {metric_names::kGpuProcessAccountingMaxMemory, "bytes", T::kGauge,
       "Driver accounting (where enabled): the most device memory the process has held"},
      {metric_names::kGpuProcessResidentMemory, "bytes", T::kGauge, "Host resident memory of a GPU process"},
      {"gpu_container_processes", "", T::kGauge, "GPU compute processes of a container (read from their cgroups)"},
      {"gpu_container_memory_bytes", "bytes", T::kGauge, "Device memory of a container's compute processes"},
      {"gpu_container_sm_utilization_ratio", "ratio", T::kGauge, "The SM shares of a container's processes, summed"},
      {metric_names::kGpuXidErrors, "", T::kCounter,
       "Xid errors the driver reported for the GPU since perfscope started, per Xid number (NVML critical-error events)"},
      {"gpu_xid_last_timestamp_seconds", "seconds", T::kGauge,
       "When the newest Xid of this number arrived (Unix time): for alerts that outlast gaps in scraping"},
      {metric_names::kGpuPodInfo, "", T::kGauge,
       "1 for each Kubernetes container holding the GPU (namespace, pod, container; --pod-resources-socket)"},
      {metric_names::kGpuDramBandwidth, "bytes_per_second", T::kGauge, "DRAM bandwidth: GPM utilization × peak"},
      {"gpu_nvlink_link_rx_bytes_per_second", "bytes_per_second", T::kGauge,
       "NVLink traffic received on one link (GPM; peer: the GPU at its other end, or nvswitch)"},
      {"gpu_nvlink_link_tx_bytes_per_second", "bytes_per_second", T::kGauge,
       "NVLink traffic sent on one link (GPM; peer: the GPU at its other end, or nvswitch)"},
      {"gpu_nvlink_peer_rx_bytes_per_second", "bytes_per_second", T::kGauge,
       "NVLink traffic received from one GPU over the links wired to it directly (not through NVSwitches)"},
      {"gpu_nvlink_peer_tx_bytes_per_second", "bytes_per_second", T::kGauge,
       "NVLink traffic sent to one GPU over the links wired to it directly (not through NVSwitches)"},
      {"gpu_dram_bandwidth_peak_bytes_per_second", "bytes_per_second", T::kGauge, "Peak DRAM bandwidth: max memory clock × bus width / 8 × 2"},
      {metric_names::kGpuTensorEstimate, "flops_per_second", T::kGauge,
       "Estimate: GPM tensor-pipe activity × the GPU's peak dense BF16/FP16 tensor FLOP/s × SM clock / max SM clock (known GPUs only)"},
  };
  for (const auto& m : kGpmMetrics) {
    const bool ratio = m.scale < 1;
    f.push_back({m.family, ratio ? "ratio" : "bytes_per_second", T::kGauge,
                 std::string("GPM metric ") + std::to_string(m.id) + (ratio ? " (percent as a ratio)" : " (MiB/s as bytes/s)")});
  }
  return f;
}

std::vector<GpuDeviceInfo> GpuCollector::devices() const {
  std::lock_guard lock(mu_);
  return infos_;
}

void GpuCollector::collect(TimestampNs now_ns, std::vector<Reading>& out) {
  // What the process worker read since the last pass, for GPUs still known.
  if (process_worker_) {
    for (GpuProcessResult& r : process_worker_->take()) {
      auto g = std::find_if(gpus_.begin(), gpus_.end(), [&](const auto& x) { return x->info.uuid == r.uuid; });
      if (g != gpus_.end()) apply(**g, std::move(r), out);
    }
  }
  collect_devices(now_ns, out);
  if (xids_) {
    for (const XidCount& x : xids_->counts()) {
      Labels l{{"gpu", x.gpu}, {"uuid", x.uuid}, {"xid", std::to_string(x.xid)}};
      sort_labels(l);
      out.push_back({SeriesKey(metric_names::kGpuXidErrors, l), x.count});
      out.push_back({SeriesKey("gpu_xid_last_timestamp_seconds", std::move(l)), static_cast<double>(x.last_ns) / 1e9});
    }
  }
  if (!process_jobs_.empty()) process_worker_->submit(std::exchange(process_jobs_, {}));
}

void GpuCollector::take_retired(std::vector<SeriesKey>& out) {
  for (SeriesKey& k : retired_) out.push_back(std::move(k));
  retired_.clear();
}

void GpuCollector::collect_devices(TimestampNs now_ns, std::vector<Reading>& out) {
  for (auto& g : gpus_) {
    if (g->lost) {
      if (now_ns < g->retry_at) {
        out.push_back({SeriesKey("gpu_up", g->labels), 0});
        continue;
      }
      nvml::Device handle = nullptr;
      nvml::Utilization u{};
      const nvml::Api& a = lib_->api();
      const bool found = a.device_by_index(g->index, &handle) == nvml::kSuccess &&
                         (g->mig_slot < 0 || (a.mig_device_by_index && a.mig_device_by_index(handle, static_cast<unsigned>(g->mig_slot), &handle) == nvml::kSuccess));
      if (!found || !a.utilization || a.utilization(handle, &u) == nvml::kGpuIsLost) {
        g->retry_at = now_ns + kLostRetryNs;
        out.push_back({SeriesKey("gpu_up", g->labels), 0});
        continue;
      }
      g->handle = handle;
      g->lost = false;
    }
    collect_gpu(*g, now_ns, out);
    if (g->lost) {
      g->retry_at = now_ns + kLostRetryNs;
      std::lock_guard lock(mu_);
      for (auto& info : infos_) {
        if (info.uuid == g->info.uuid) info.lost = true;
      }
    }
  }
}

namespace {

// A GPU's readings: its labels, and the ones a reading adds (clock, reason).
struct GpuReadings {
  const Labels& labels;
  std::vector<Reading>& out;
  void operator()(const char* family, double value, Labels extra = {}) const {
    Labels l = labels;
    for (auto& e : extra) l.push_back(std::move(e));
    out.push_back({SeriesKey(family, std::move(l)), value});
  }
};

}  // namespace

// Memory: v2 (with reserved) needs its version field; older drivers only have v1. False when
// the GPU was lost.
bool GpuCollector::collect_memory(Gpu& g, std::vector<Reading>& out) {
  const nvml::Api& a = lib_->api();
  const GpuReadings emit{g.labels, out};
  if (g.memory_version == 2) {
    nvml::MemoryV2 m{};
    m.version = nvml::kMemoryV2Version;
    int rc = a.memory_v2 ? a.memory_v2(g.handle, &m) : nvml::kFunctionNotFound;
    if (rc == nvml::kSuccess) {
      emit(metric_names::kGpuMemoryTotal, static_cast<double>(m.total));
      emit(metric_names::kGpuMemoryUsed, static_cast<double>(m.used));
      emit("gpu_memory_free_bytes", static_cast<double>(m.free));
      emit("gpu_memory_reserved_bytes", static_cast<double>(m.reserved));
      g.info.memory_total_bytes = static_cast<double>(m.total);
    } else if (rc == nvml::kGpuIsLost) {
      g.lost = true;
      return false;
    } else {
      g.memory_version = 1;
    }
  }
  if (g.memory_version == 1) {
    nvml::MemoryV1 m{};
    if (a.memory_v1 && check(g, a.memory_v1(g.handle, &m), "memory")) {
      emit(metric_names::kGpuMemoryTotal, static_cast<double>(m.total));
      emit(metric_names::kGpuMemoryUsed, static_cast<double>(m.used));
      emit("gpu_memory_free_bytes", static_cast<double>(m.free));
      g.info.memory_total_bytes = static_cast<double>(m.total);
    } else if (!a.memory_v1) {
      g.memory_version = 0;
      g.unsupported.insert("memory");
    }
  }

  return true;
}

// Power now, and the board's energy since the processes were last read.
void GpuCollector::collect_power(Gpu& g, TimestampNs now_ns, std::vector<Reading>& out) {
  const nvml::Api& a = lib_->api();
  const GpuReadings emit{g.labels, out};
  unsigned v = 0;
  if (a.power_usage && check(g, a.power_usage(g.handle, &v), "power")) {
    // The board's energy since the processes were last read, pass by pass, to split among them.
    if (g.power_prev_ns > 0 && now_ns > g.power_prev_ns) {
      const auto dt = std::min<TimestampNs>(now_ns - g.power_prev_ns, ProcessTracker::kMaxIntervalNs);
      g.energy_since_processes_j = g.energy_since_processes_j.value_or(0) + v / 1000.0 * static_cast<double>(dt) / 1e9;
    }
    g.power_prev_ns = now_ns;
    emit(metric_names::kGpuPower, v / 1000.0);
  }
  if (g.info.power_limit_watts > 0) emit("gpu_power_limit_watts", g.info.power_limit_watts);
}

// Temperatures, the instant power, the energy counter and the clocks; the core temperature
// for the thermal state, if read.
std::optional<unsigned> GpuCollector::collect_sensors(Gpu& g, TimestampNs now_ns, std::vector<Reading>& out) {
  const nvml::Api& a = lib_->api();
  const GpuReadings emit{g.labels, out};
  unsigned temp = 0;
  const bool have_temp = a.temperature && check(g, a.temperature(g.handle, 0, &temp), "temperature");
  if (have_temp) emit(metric_names::kGpuTemperature, temp);
  if (a.field_values) {
    nvml::FieldValue fv[2] = {};
    fv[0].field_id = nvml::kFieldMemoryTemperature;
    fv[1].field_id = nvml::kFieldPowerInstant;
    if (check(g, a.field_values(g.handle, 2, fv), "field_values")) {
      auto value_of = [](const nvml::FieldValue& f) -> double {
        switch (f.value_type) {
          case 0: return f.value.d;
          case 1: return f.value.ui;
          case 2: return static_cast<double>(f.value.ul);
          case 3: return static_cast<double>(f.value.ull);
          case 4: return static_cast<double>(f.value.sll);
          default: return f.value.si;
        }
      };
      if (fv[0].nvml_return == nvml::kSuccess) emit("gpu_memory_temperature_celsius", value_of(fv[0]));
      else g.unsupported.insert("memory_temperature");
      if (fv[1].nvml_return == nvml::kSuccess) emit("gpu_power_instant_watts", value_of(fv[1]) / 1000.0);
      else g.unsupported.insert("power_instant");
    }
  }
  // Energy is read at most every 10 s and repeated in between: on an H100 with driver 580 the
  // read costs ~4 ms of CPU (the direct call and field value 83 alike), forty times the rest
  // of a pass. A counter that moves every 10 s serves rate() over any longer window.
  if (a.total_energy && (g.energy_read_ns == 0 || now_ns - g.energy_read_ns >= kEnergyIntervalNs)) {
    unsigned long long mj = 0;
    if (check(g, a.total_energy(g.handle, &mj), "energy")) {
      g.energy_j = mj / 1000.0;
      g.energy_read_ns = now_ns == 0 ? 1 : now_ns;
    }
  }
  if (g.energy_j >= 0) emit(metric_names::kGpuEnergy, g.energy_j);
  unsigned v = 0;
  const std::pair<int, const char*> clocks[] = {{nvml::kClockSm, "sm"}, {nvml::kClockMemory, "memory"}, {nvml::kClockGraphics, "graphics"}};
  g.sm_clock_hertz = 0;
  for (const auto& [type, label] : clocks) {
    if (!a.clock || !check(g, a.clock(g.handle, type, &v), "clocks")) continue;
    emit("gpu_clock_hertz", v * 1e6, {{"clock", label}});
    if (type == nvml::kClockSm) g.sm_clock_hertz = v * 1e6;
  }

  return have_temp ? std::optional<unsigned>(temp) : std::nullopt;
}

// Throttling: reasons now, the time each was active over the last interval, and the thermal
// state from them and the temperature.
void GpuCollector::collect_throttling(Gpu& g, TimestampNs now_ns, std::optional<unsigned> temp, std::vector<Reading>& out) {
  const nvml::Api& a = lib_->api();
  const GpuReadings emit{g.labels, out};
  unsigned long long reasons = 0;
  const bool have_reasons = a.clock_event_reasons && check(g, a.clock_event_reasons(g.handle, &reasons), "clock_event_reasons");
  if (have_reasons) {
    const TimestampNs dt = g.prev_ns > 0 && now_ns > g.prev_ns ? now_ns - g.prev_ns : 0;
    for (std::size_t i = 0; i < kReasons.size(); ++i) {
      if (g.have_reasons && (g.prev_reasons & kReasons[i].first)) g.throttle_ns[i] += dt;
      emit("gpu_throttle_active", (reasons & kReasons[i].first) ? 1 : 0, {{"reason", kReasons[i].second}});
      emit(metric_names::kGpuThrottle, static_cast<double>(g.throttle_ns[i]) / 1e9, {{"reason", kReasons[i].second}});
    }
    g.prev_reasons = reasons;
    g.have_reasons = true;
  }
  g.prev_ns = now_ns;
  if (temp || have_reasons) {
    // 3 critical: within 5 °C of shutdown; 2 serious: thermal slowdown active or at the
    // slowdown threshold; 1 fair: within 10 °C of it; 0 nominal.
    const unsigned long long thermal = 0x8 | 0x20 | 0x40;
    int state = 0;
    const unsigned t = temp.value_or(0);
    if (g.shutdown_c > 0 && t + 5 >= g.shutdown_c) state = 3;
    else if ((reasons & thermal) || (g.slowdown_c > 0 && t >= g.slowdown_c)) state = 2;
    else if (g.slowdown_c > 0 && t + 10 >= g.slowdown_c) state = 1;
    emit("gpu_thermal_state", state);
  }

}

void GpuCollector::collect_gpu(Gpu& g, TimestampNs now_ns, std::vector<Reading>& out) {
  const nvml::Api& a = lib_->api();
  const GpuReadings emit{g.labels, out};
  auto emit_info = [&] {
    emit("gpu_info", 1, {{"name", g.info.name}, {"pci_bus_id", g.info.pci_bus_id}, {"driver_version", driver_},
                         {"nvml_version", nvml_version_}});
  };

  nvml::Utilization u{};
  g.compute_idle = false;
  if (a.utilization && check(g, a.utilization(g.handle, &u), "utilization")) {
    emit(metric_names::kGpuUtilization, u.gpu / 100.0);
    emit("gpu_memory_busy_ratio", u.memory / 100.0);
    g.compute_idle = u.gpu == 0 && u.memory == 0;
  }
  if (g.lost) return;
  emit("gpu_up", 1);
  emit_info();

  if (!collect_memory(g, out)) return;
  collect_power(g, now_ns, out);
  const std::optional<unsigned> temp = collect_sensors(g, now_ns, out);
  collect_throttling(g, now_ns, temp, out);
  collect_processes(g, now_ns, out);
  if (g.info.gpm) collect_gpm(g, now_ns, out);
  if (g.info.peak_dram_bandwidth_bytes_per_second > 0) {
    emit("gpu_dram_bandwidth_peak_bytes_per_second", g.info.peak_dram_bandwidth_bytes_per_second);
  }
}

void GpuCollector::collect_processes(Gpu& g, TimestampNs now_ns, std::vector<Reading>& out) {
  if (!lib_->api().compute_processes || g.mig_mode) return;  // in MIG mode each instance reads its own
  if (g.processes_read_ns > 0 && now_ns - g.processes_read_ns < options_.process_interval.count() * 1'000'000LL) return;
  g.processes_read_ns = now_ns;
  // Idle only when every engine a process can have a share of says so (a video engine the
  // driver cannot report counts as busy); the video engines are asked only on a pass that
  // reads the processes, right after the pass's other calls.
  const nvml::Api& a = lib_->api();
  unsigned enc = 0, dec = 0, period_us = 0;
  const bool engines_idle = g.compute_idle && a.encoder_utilization && a.decoder_utilization &&
                            a.encoder_utilization(g.handle, &enc, &period_us) == nvml::kSuccess && enc == 0 &&
                            a.decoder_utilization(g.handle, &dec, &period_us) == nvml::kSuccess && dec == 0;
  GpuProcessJob job{g.handle, g.labels, g.info.uuid, g.info.index, g.accounting, g.energy_since_processes_j, now_ns,
                    engines_idle};
  g.energy_since_processes_j.reset();
  // The probe pass and a collector without a worker read here; otherwise the worker reads and a
  // later pass emits what it read.
  if (process_worker_ && now_ns > 0) {
    process_jobs_.push_back(std::move(job));
    return;
  }
  apply(g, process_reader_->read(job), out);
}

void GpuCollector::apply(Gpu& g, GpuProcessResult result, std::vector<Reading>& out) {
  for (std::string& m : result.unsupported) g.unsupported.insert(std::move(m));
  for (SeriesKey& k : result.retired) retired_.push_back(std::move(k));
  if (result.lost) g.lost = true;
  for (Reading& r : result.readings) out.push_back(std::move(r));
}


}  // namespace perfscope
