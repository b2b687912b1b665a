// The compute processes of each GPU: NVML's process list and per-process utilization, who each
// process is (procfs: identity, container, CPU time, RSS), as readings and as ProcessTracker
// observations.
//
// NVML's per-process utilization call costs ~1.4 ms of driver time with 10 processes, its
// process list ~0.1 ms (bench/RESULTS.md), several times the rest of a sampler pass. So the GPU
// collector hands the reads to GpuProcessWorker, a thread of its own, and its pass only picks up
// the finished readings: the pass keeps its cost and period whatever the driver takes.
//
// Thread-safety: GpuProcessReader is used by one thread at a time (the worker's, or the
// collector's for its probe pass and in tests); GpuProcessWorker's methods are safe from any
// thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/series/collector.hpp"
#include "engine/collectors/nvml.hpp"
#include "engine/collectors/pod_directory.hpp"
#include "engine/collectors/process_identity.hpp"
#include "engine/collectors/process_tracker.hpp"

namespace perfscope {

// One GPU's processes to read, as the collector's pass saw the GPU.
struct GpuProcessJob {
  nvml::Device handle = nullptr;
  Labels labels;  // the GPU's series labels
  std::string uuid, index;
  bool accounting = false;
  std::optional<double> energy_j;  // board energy since the GPU's previous job (split by SM shares)
  TimestampNs now_ns = 0;          // 0: the probe pass (nothing is observed)
  // The pass saw every engine idle: each process's share is 0, known without the driver's
  // per-process call (~1.3 ms of CPU on an H100 or H200, most of the reader's cost).
  bool engines_idle = false;
};

struct GpuProcessResult {
  std::string uuid;
  std::vector<Reading> readings;
  std::vector<std::string> unsupported;  // calls the driver refused for this GPU
  std::vector<SeriesKey> retired;        // series of processes gone since the last read
  bool lost = false;                     // the GPU fell off the bus during the read
};

struct GpuProcessOptions {
  std::string proc_root = "/proc";
  ProcessTracker* tracker = nullptr;  // not owned; gets every read's processes
  std::size_t series_limit = 2000;     // distinct processes given series of their own
  const PodDirectory* pods = nullptr;  // not owned; Kubernetes names of GPUs and their processes
};

class GpuProcessReader {
 public:
  GpuProcessReader(const nvml::Api& api, GpuProcessOptions options);
  GpuProcessResult read(const GpuProcessJob& job);
  // Readings of processes left without series: the limit was reached.
  std::uint64_t series_refused() const { return series_refused_.load(std::memory_order_relaxed); }
  std::size_t series_limit() const { return options_.series_limit; }

 private:
  struct KnownProcess {
    ProcessIdentity identity;
    TimestampNs checked_ns = 0;  // when stat was last read
    std::uint64_t cpu_ticks = 0;
    std::uint64_t rss_bytes = 0;
  };
  struct PerGpu {
    std::unordered_map<unsigned, nvml::ProcessUtilizationSample> util;  // newest period's list, by pid
    unsigned long long util_last_seen_us = 0;
    TimestampNs util_read_ns = 0;  // when the driver was last asked (at most once a second)
    bool no_utilization = false;  // the driver refused the per-process utilization call
    // Kept between reads, sized by the longest list seen: one driver call per read.
    std::vector<nvml::ProcessInfo> process_buffer;
    std::vector<nvml::ProcessUtilizationSample> util_buffer;
    std::unordered_map<std::string, Labels> with_series;  // processes given readings last read, by label text
    std::set<Labels> pod_info;                            // the holders' info series last read
    // The per-container sums' label sets last read (retired when a container goes, or is
    // renamed: the kubelet's names arrive after the first read).
    std::set<Labels> container_sums;
  };
  // The GPU's pod-info readings for this read, retiring those of holders gone since the last.
  void read_pod_info(PerGpu& gpu, const GpuProcessJob& job, const std::vector<PodRef>& holders, GpuProcessResult& result);
  // Who a GPU process is and what it costs the host, cached by pid and re-read once a second,
  // its start time compared: a reused pid is a new process. Null when procfs does not show it.
  const KnownProcess* process_of(unsigned pid, TimestampNs now_ns);
  void add_process_series(const GpuProcessJob& job, const nvml::ProcessInfo& p, const nvml::ProcessUtilizationSample& shares,
                          bool utilization, const KnownProcess* who, Labels l,
                          std::unordered_map<std::string, Labels>& with_series, std::vector<Reading>& out);
  void read_utilization(PerGpu& gpu, nvml::Device handle, GpuProcessResult& result);

  const nvml::Api& api_;
  const GpuProcessOptions options_;
  std::unordered_map<std::string, PerGpu> gpus_;  // by uuid
  std::unordered_map<unsigned, KnownProcess> processes_;
  std::unordered_set<std::string> process_series_;  // label sets with series
  std::atomic<std::uint64_t> series_refused_{0};
};

// Runs a reader's jobs on a thread of its own. submit() queues a pass's jobs (a GPU whose
// previous job has not started yet keeps only the newer one); take() returns what finished.
class GpuProcessWorker {
 public:
  explicit GpuProcessWorker(GpuProcessReader& reader);
  ~GpuProcessWorker();
  GpuProcessWorker(const GpuProcessWorker&) = delete;
  GpuProcessWorker& operator=(const GpuProcessWorker&) = delete;

  void submit(std::vector<GpuProcessJob> jobs);
  std::vector<GpuProcessResult> take();

 private:
  void run();

  GpuProcessReader& reader_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::vector<GpuProcessJob> pending_;
  std::vector<GpuProcessResult> done_;
  bool stop_ = false;
  std::thread thread_;  // last: started once the rest is built
};

}  // namespace perfscope
