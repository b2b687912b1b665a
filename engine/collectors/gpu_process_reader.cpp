#include "engine/collectors/gpu_process_reader.hpp"
#include "engine/base/thread_name.hpp"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <span>

#include "engine/collectors/proc_file.hpp"
#include "engine/series/metric_names.hpp"

namespace perfscope {

namespace {

double ticks_per_second() {
  static const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  return ticks;
}

// NVML's list calls, read with one call into a buffer kept from the last read; a second call
// only when the list outgrew it (the driver then says how long it is). The documented pattern
// — ask for the size, then read — makes every read two driver calls, and the per-process ones
// are among the dearest NVML has (bench/gpu_bench NvmlCall). `count` is what was read.
template <typename T, typename Call>
int read_list(std::vector<T>& buffer, unsigned& count, Call call) {
  if (buffer.empty()) buffer.resize(32);
  count = static_cast<unsigned>(buffer.size());
  int rc = call(buffer.data(), &count);
  if (rc == nvml::kInsufficientSize) {
    buffer.resize(count + 8);  // room for a few more appearing meanwhile
    count = static_cast<unsigned>(buffer.size());
    rc = call(buffer.data(), &count);
  }
  count = rc == nvml::kSuccess ? std::min<unsigned>(count, static_cast<unsigned>(buffer.size())) : 0;
  return rc;
}

}  // namespace

GpuProcessReader::GpuProcessReader(const nvml::Api& api, GpuProcessOptions options)
    : api_(api), options_(std::move(options)) {}

const GpuProcessReader::KnownProcess* GpuProcessReader::process_of(unsigned pid, TimestampNs now_ns) {
  constexpr TimestampNs kRecheckNs = 1'000'000'000;
  static const std::uint64_t page_bytes = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  auto it = processes_.find(pid);
  if (it != processes_.end() && now_ns - it->second.checked_ns < kRecheckNs) return &it->second;
  auto stat = read_small_file(options_.proc_root + "/" + std::to_string(pid) + "/stat");
  auto start = stat ? parse_stat_start_ticks(*stat) : std::nullopt;
  if (!start) {
    if (it != processes_.end()) processes_.erase(it);
    return nullptr;
  }
  if (it == processes_.end() || it->second.identity.start_ticks != *start) {
    auto identity = read_process_identity(options_.proc_root, static_cast<int>(pid), 1024);
    if (!identity.ok()) return nullptr;
    if (processes_.size() >= 4096) processes_.clear();  // gone processes are never asked for again
    it = processes_.insert_or_assign(pid, KnownProcess{std::move(*identity)}).first;
  }
  KnownProcess& k = it->second;
  if (auto usage = parse_stat_usage(*stat)) {
    k.cpu_ticks = usage->cpu_ticks;
    k.rss_bytes = usage->rss_pages * page_bytes;
  }
  k.checked_ns = now_ns;
  return &k;
}

constexpr TimestampNs kUtilizationIntervalNs = 1'000'000'000;

void GpuProcessReader::read_utilization(PerGpu& gpu, nvml::Device handle, GpuProcessResult& result) {
  if (!api_.process_utilization || gpu.no_utilization) return;
  unsigned count = 0;
  const int rc = read_list(gpu.util_buffer, count, [&](nvml::ProcessUtilizationSample* buffer, unsigned* n) {
    return api_.process_utilization(handle, buffer, n, gpu.util_last_seen_us);
  });
  if (rc == nvml::kNotFound || (rc == nvml::kSuccess && count == 0)) return;  // nothing newer
  if (rc == nvml::kGpuIsLost) {
    result.lost = true;
    return;
  }
  if (rc != nvml::kSuccess) {
    gpu.no_utilization = true;
    result.unsupported.push_back("process_utilization");
    return;
  }
  // The driver samples every ~200 ms and lists only the processes that used the GPU in that
  // period: the newest period's list replaces the last one, and a process missing from it was
  // at 0 (holding its older value would credit an intermittent process with its busy moments).
  const std::span<const nvml::ProcessUtilizationSample> samples(gpu.util_buffer.data(), count);
  unsigned long long newest = 0;
  for (const auto& s : samples) newest = std::max(newest, s.timestamp_us);
  gpu.util.clear();
  for (const auto& s : samples) {
    if (s.timestamp_us + 150'000 < newest) continue;  // an older period than the newest
    auto [it, fresh] = gpu.util.try_emplace(s.pid, s);
    if (!fresh && s.timestamp_us > it->second.timestamp_us) it->second = s;
  }
  gpu.util_last_seen_us = std::max(gpu.util_last_seen_us, newest);
}

namespace {
// Series kept per label set in several families: those read last time and not now are retired
// in each family (a container gone or renamed, a pod no longer holding the GPU); `now` is kept.
void retire_missing(std::set<Labels>& kept, std::set<Labels> now, std::initializer_list<const char*> families,
                    GpuProcessResult& result) {
  for (const Labels& old : kept) {
    if (now.contains(old)) continue;
    for (const char* family : families) result.retired.emplace_back(family, old);
  }
  kept = std::move(now);
}
constexpr std::initializer_list<const char*> kContainerSums = {"gpu_container_processes", "gpu_container_memory_bytes",
                                                              "gpu_container_sm_utilization_ratio"};

// Processes read last time (`before`) and gone now (`now`): their series get no more readings.
void retire_gone_processes(const std::unordered_map<std::string, Labels>& before,
                 const std::unordered_map<std::string, Labels>& now, GpuProcessResult& result) {
  for (const auto& [text, l] : before) {
    if (now.contains(text)) continue;
    for (const char* family : {metric_names::kGpuProcessMemory, metric_names::kGpuProcessAccountingUtilization,
                               metric_names::kGpuProcessAccountingMaxMemory, metric_names::kGpuProcessCpu,
                               metric_names::kGpuProcessResidentMemory}) {
      result.retired.emplace_back(family, l);
    }
    for (const char* engine : {"sm", "memory", "encoder", "decoder"}) {
      Labels e = l;
      e.emplace_back("engine", engine);
      sort_labels(e);
      result.retired.emplace_back(metric_names::kGpuProcessUtilization, std::move(e));
    }
  }
}

// A process's labels (the GPU's, pid, command — null: not visible —, and its container's),
// sorted; and its container's alone (container, and namespace and pod where the kubelet named them), empty
// outside a container.
std::pair<Labels, Labels> process_labels(const Labels& gpu_labels, unsigned pid, const std::string* command,
                                         const ContainerIdentity& container) {
  Labels l = gpu_labels;
  l.emplace_back("pid", std::to_string(pid));
  // A pid this procfs does not show lives in another pid namespace (or just ended).
  l.emplace_back("command", command ? *command : "[not visible]");
  Labels container_labels;
  if (command && container.in_container()) {
    container_labels.emplace_back("container", container.label());
    if (!container.pod_name.empty()) {
      container_labels.emplace_back("namespace", container.pod_namespace);
      container_labels.emplace_back("pod", container.pod_name);
    }
  }
  l.insert(l.end(), container_labels.begin(), container_labels.end());
  sort_labels(l);
  return {std::move(l), std::move(container_labels)};
}

struct ContainerSum {
  double memory = 0, sm = 0, processes = 0;
};

// Each container's processes, memory and SM share on the GPU; returns the label sets written.
std::set<Labels> add_container_sums(const Labels& gpu_labels, const std::map<Labels, ContainerSum>& containers,
                                    bool utilization, std::vector<Reading>& out) {
  std::set<Labels> written;
  for (const auto& [labels, sum] : containers) {
    Labels l = gpu_labels;
    l.insert(l.end(), labels.begin(), labels.end());
    sort_labels(l);
    written.insert(l);
    out.push_back({SeriesKey("gpu_container_processes", l), sum.processes});
    out.push_back({SeriesKey("gpu_container_memory_bytes", l), sum.memory});
    if (utilization) out.push_back({SeriesKey("gpu_container_sm_utilization_ratio", std::move(l)), sum.sm});
  }
  return written;
}

}  // namespace

GpuProcessResult GpuProcessReader::read(const GpuProcessJob& job) {
  GpuProcessResult result;
  result.uuid = job.uuid;
  PerGpu& gpu = gpus_[job.uuid];
  const TimestampNs now_ns = job.now_ns;
  // The probe pass (time 0) observes nothing.
  auto observe = [&](const std::vector<GpuProcessReading>& readings) {
    if (options_.tracker && now_ns > 0) options_.tracker->observe(now_ns, job.uuid, job.index, job.energy_j, readings);
  };
  unsigned count = 0;
  const int rc = read_list(gpu.process_buffer, count, [&](nvml::ProcessInfo* buffer, unsigned* n) {
    return api_.compute_processes(job.handle, n, buffer);
  });
  if (rc != nvml::kSuccess) {
    if (rc == nvml::kGpuIsLost) result.lost = true;
    else result.unsupported.push_back("processes");
    return result;
  }
  std::unordered_map<std::string, Labels> with_series;  // this read's
  auto retire_gone = [&] {
    retire_gone_processes(gpu.with_series, with_series, result);
    gpu.with_series = std::move(with_series);
  };
  const std::vector<PodRef> holders = options_.pods ? options_.pods->holders(job.uuid, job.index) : std::vector<PodRef>{};
  read_pod_info(gpu, job, holders, result);
  if (count == 0) {
    gpu.util.clear();
    retire_gone();
    retire_missing(gpu.container_sums, {}, kContainerSums, result);
    observe({});
    return result;
  }
  const std::span<const nvml::ProcessInfo> procs(gpu.process_buffer.data(), count);
  std::set<std::string> pod_uids;  // of the GPU's processes in pods: one pod's, or nobody's to name
  for (const nvml::ProcessInfo& p : procs) {
    if (const KnownProcess* who = process_of(p.pid, now_ns); who && !who->identity.container.pod_uid.empty()) {
      pod_uids.insert(who->identity.container.pod_uid);
    }
  }
  if (job.engines_idle) {
    gpu.util.clear();  // nobody used an engine: every share is 0
    gpu.util_read_ns = 0;
  } else if (gpu.util_read_ns == 0 || now_ns - gpu.util_read_ns >= kUtilizationIntervalNs) {
    // The driver's per-process call costs ~1.3 ms of CPU on an H100 (bench/RESULTS.md): asked at
    // most once a second, its shares held in between, while memory is read at every pass.
    read_utilization(gpu, job.handle, result);
    gpu.util_read_ns = now_ns;
  }
  const bool utilization = api_.process_utilization && !gpu.no_utilization;
  const auto now_us = static_cast<unsigned long long>(now_ns / 1000);
  std::set<unsigned> running;
  std::vector<GpuProcessReading> readings;
  std::map<Labels, ContainerSum> containers;  // by their labels: bounded by the containers, not the processes
  std::vector<Reading>& out = result.readings;
  for (const nvml::ProcessInfo& p : procs) {
    running.insert(p.pid);
    const KnownProcess* who = process_of(p.pid, now_ns);
    GpuProcessReading& reading = readings.emplace_back();
    reading.visible = who != nullptr;
    if (who) {
      reading.identity = who->identity;
      // A pod's process on a GPU one container holds is that container's (PodDirectory's rule).
      ContainerIdentity& c = reading.identity.container;
      if (auto holder = process_holder(holders, !c.pod_uid.empty(), pod_uids.size())) {
        c.pod_namespace = std::move(holder->namespace_name);
        c.pod_name = std::move(holder->pod);
        c.name = std::move(holder->container);
      }
      reading.cpu_seconds = static_cast<double>(who->cpu_ticks) / ticks_per_second();
      reading.rss_bytes = static_cast<double>(who->rss_bytes);
    } else {
      reading.identity.pid = static_cast<int>(p.pid);
    }
    if (p.used_gpu_memory != ~0ULL) reading.memory_bytes = static_cast<double>(p.used_gpu_memory);
    const ContainerIdentity& container = reading.identity.container;
    auto [l, container_labels] = process_labels(job.labels, p.pid, who ? &who->identity.command : nullptr, container);
    // A process absent from the newest period's list, or a list older than 2 s (nothing used the
    // GPU since, so the driver has nothing newer to list), is at 0.
    auto u = gpu.util.find(p.pid);
    const bool recent = utilization && u != gpu.util.end() && gpu.util_last_seen_us + 2'000'000 >= now_us;
    const nvml::ProcessUtilizationSample shares = recent ? u->second : nvml::ProcessUtilizationSample{};
    if (utilization) reading.sm_ratio = shares.sm / 100.0;
    if (!container_labels.empty()) {
      container_labels.emplace_back("runtime", container.runtime);
      ContainerSum& sum = containers[std::move(container_labels)];
      sum.memory += reading.memory_bytes;
      sum.sm += shares.sm / 100.0;
      sum.processes += 1;
    }
    add_process_series(job, p, shares, utilization, who, std::move(l), with_series, result.readings);
  }
  std::set<Labels> container_sums = add_container_sums(job.labels, containers, utilization, out);
  std::erase_if(gpu.util, [&](const auto& entry) { return !running.contains(entry.first); });
  retire_gone();
  retire_missing(gpu.container_sums, std::move(container_sums), kContainerSums, result);
  observe(readings);
  return result;
}


// The process's own series while under the series limit (the tracker records every process
// regardless): memory, engine shares, the driver's accounting where enabled, host CPU and RSS.
void GpuProcessReader::add_process_series(const GpuProcessJob& job, const nvml::ProcessInfo& p,
                                          const nvml::ProcessUtilizationSample& shares, bool utilization,
                                          const KnownProcess* who, Labels l,
                                          std::unordered_map<std::string, Labels>& with_series, std::vector<Reading>& out) {
  std::string identity = format_labels(l);
  if (!process_series_.contains(identity)) {
    if (process_series_.size() >= options_.series_limit) {
      series_refused_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    process_series_.insert(identity);
  }
  with_series.emplace(std::move(identity), l);
  if (p.used_gpu_memory != ~0ULL) {  // ~0: not available (e.g. without permission)
    out.push_back({SeriesKey(metric_names::kGpuProcessMemory, l), static_cast<double>(p.used_gpu_memory)});
  }
  if (utilization) {
    for (auto [engine, value] : {std::pair{"sm", shares.sm}, std::pair{"memory", shares.memory},
                                 std::pair{"encoder", shares.encoder}, std::pair{"decoder", shares.decoder}}) {
      Labels e = l;
      e.emplace_back("engine", engine);
      sort_labels(e);
      out.push_back({SeriesKey(metric_names::kGpuProcessUtilization, std::move(e)), value / 100.0});
    }
  }
  // Where an administrator enabled accounting, the driver's own figures over the process's life.
  if (nvml::AccountingStats stats{}; job.accounting && api_.accounting_stats(job.handle, p.pid, &stats) == nvml::kSuccess) {
    out.push_back({SeriesKey(metric_names::kGpuProcessAccountingUtilization, l), stats.gpu_utilization / 100.0});
    out.push_back({SeriesKey(metric_names::kGpuProcessAccountingMaxMemory, l), static_cast<double>(stats.max_memory_usage)});
  }
  if (who) {
    out.push_back({SeriesKey(metric_names::kGpuProcessCpu, l), static_cast<double>(who->cpu_ticks) / ticks_per_second()});
    out.push_back({SeriesKey(metric_names::kGpuProcessResidentMemory, std::move(l)), static_cast<double>(who->rss_bytes)});
  }
}

void GpuProcessReader::read_pod_info(PerGpu& gpu, const GpuProcessJob& job, const std::vector<PodRef>& holders,
                                     GpuProcessResult& result) {
  std::set<Labels> now;
  for (const PodRef& h : holders) {
    Labels l = job.labels;
    l.emplace_back("namespace", h.namespace_name);
    l.emplace_back("pod", h.pod);
    l.emplace_back("container", h.container);
    sort_labels(l);
    if (job.now_ns > 0) result.readings.push_back({SeriesKey(metric_names::kGpuPodInfo, l), 1.0});
    now.insert(std::move(l));
  }
  retire_missing(gpu.pod_info, std::move(now), {metric_names::kGpuPodInfo}, result);
}

GpuProcessWorker::GpuProcessWorker(GpuProcessReader& reader) : reader_(reader), thread_([this] { run(); }) {}

GpuProcessWorker::~GpuProcessWorker() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void GpuProcessWorker::submit(std::vector<GpuProcessJob> jobs) {
  {
    std::lock_guard lock(mu_);
    for (GpuProcessJob& job : jobs) {
      auto same = std::find_if(pending_.begin(), pending_.end(), [&](const GpuProcessJob& p) { return p.uuid == job.uuid; });
      if (same == pending_.end()) {
        pending_.push_back(std::move(job));
        continue;
      }
      // Not started yet: the newer job replaces it, carrying the board energy of both intervals.
      if (same->energy_j) job.energy_j = job.energy_j.value_or(0) + *same->energy_j;
      *same = std::move(job);
    }
  }
  wake_.notify_one();
}

std::vector<GpuProcessResult> GpuProcessWorker::take() {
  std::lock_guard lock(mu_);
  return std::exchange(done_, {});
}

void GpuProcessWorker::run() {
  name_this_thread("ps-gpu-procs");
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !pending_.empty(); });
    if (stop_) return;
    std::vector<GpuProcessJob> jobs = std::exchange(pending_, {});
    lock.unlock();
    std::vector<GpuProcessResult> results;
    for (const GpuProcessJob& job : jobs) results.push_back(reader_.read(job));
    lock.lock();
    for (GpuProcessResult& r : results) done_.push_back(std::move(r));
  }
}

}  // namespace perfscope
