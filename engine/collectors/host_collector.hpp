// HostCollector: host and own-process metrics from procfs and sysfs — CPU utilization
// (total and per core), context switches, interrupts, load, memory, swap, page faults,
// this process's CPU/RSS/VMS/threads, CPU frequency, temperatures, RAPL power and energy,
// and cgroup v2 CPU and memory limits.
//
// Sources are discovered once at construction; what the machine lacks is reported by
// sources() and skipped afterwards. The roots are parameters so tests can point the
// collector at captured fixture trees. collect() is single-threaded (the sampler's).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/series/collector.hpp"
#include "engine/collectors/proc_file.hpp"

namespace perfscope {

struct HostPaths {
  std::string proc_root = "/proc";
  std::string sys_root = "/sys";
  // Which process the process_* metrics describe, relative to proc_root.
  std::string self_dir = "self";
};

class HostCollector final : public Collector {
 public:
  explicit HostCollector(HostPaths paths = {});
  ~HostCollector() override;

  std::string_view name() const override { return "host"; }
  std::vector<MetricFamily> families() const override;
  std::vector<SourceStatus> sources() const override { return sources_; }
  void collect(TimestampNs now_ns, std::vector<Reading>& out) override;

 private:
  // Previous values of cumulative counters, to turn them into rates.
  struct CpuTicks {
    unsigned long long busy = 0;
    unsigned long long total = 0;
  };
  struct Sensor {
    ProcFile file;
    std::string chip;
    std::string sensor;
  };
  struct RaplDomain {
    ProcFile energy;
    std::string domain;
    double max_range_uj = 0;
    double prev_uj = -1;
    double accumulated_j = 0;
  };

  void discover();
  void collect_stat(TimestampNs now_ns, double dt_s, std::vector<Reading>& out);
  void collect_meminfo(std::vector<Reading>& out);
  void collect_vmstat(double dt_s, std::vector<Reading>& out);
  void collect_loadavg(std::vector<Reading>& out);
  void collect_process(double dt_s, std::vector<Reading>& out);
  void collect_cpufreq(std::vector<Reading>& out);
  void collect_temperatures(std::vector<Reading>& out);
  void collect_rapl(double dt_s, std::vector<Reading>& out);
  void collect_cgroup(std::vector<Reading>& out);
  void add_source(std::string name, const std::string& path, bool available, std::string why = {});
  // A counter's per-second rate from its previous value; false (no rate) on the first pass
  // or when the counter went backwards (reset or wrap).
  static bool rate(double current, double& previous, double dt_s, double& rate_out);

  HostPaths paths_;
  std::vector<SourceStatus> sources_;
  long clock_ticks_per_s_;
  long page_size_;
  TimestampNs prev_ns_ = 0;

  ProcFile stat_, meminfo_, vmstat_, loadavg_, self_stat_, self_status_;
  std::map<std::string, CpuTicks> prev_cpu_;
  static constexpr TimestampNs kCpuCounterInterval = 1'000'000'000;
  TimestampNs next_cpu_counters_ns_ = 0;  // host_cpu_seconds_total is written again from then
  // What changes slowly (paging, load average, this process, frequencies, temperatures, RAPL,
  // the cgroup) is read once a second, not at every pass: at 100 ms the files cost more CPU
  // than the GPU's readings (bench/RESULTS.md), and the kernel updates the load average every 5 s.
  static constexpr TimestampNs kSlowInterval = 1'000'000'000;
  TimestampNs prev_slow_ns_ = 0, next_slow_ns_ = 0;
  double prev_ctxt_ = -1, prev_intr_ = -1, prev_pgfault_ = -1, prev_proc_cpu_s_ = -1;

  std::vector<std::pair<std::string, ProcFile>> cpufreq_;  // cpu label, scaling_cur_freq
  std::vector<Sensor> temperatures_;
  std::vector<RaplDomain> rapl_;
  ProcFile cg_cpu_max_, cg_cpu_stat_, cg_mem_current_, cg_mem_max_;
};

}  // namespace perfscope
