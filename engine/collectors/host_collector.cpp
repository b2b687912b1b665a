#include "engine/collectors/host_collector.hpp"
#include "engine/series/metric_names.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace perfscope {
namespace fs = std::filesystem;

namespace {

// Calls fn(line) for every line of text.
template <typename Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    fn(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

// Splits on runs of spaces and tabs; at most `max` fields.
std::size_t split_fields(std::string_view line, std::string_view* fields, std::size_t max) {
  std::size_t n = 0;
  std::size_t i = 0;
  while (n < max) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size()) break;
    std::size_t j = line.find_first_of(" \t", i);
    if (j == std::string_view::npos) j = line.size();
    fields[n++] = line.substr(i, j - i);
    i = j;
  }
  return n;
}

double to_double(std::string_view field) { return parse_double(field).value_or(0); }

Reading reading(const char* name, Labels labels, double value) {
  return Reading{SeriesKey(name, std::move(labels)), value};
}

bool is_number(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Natural order for names with numbers ("cpu2" < "cpu10").
bool natural_less(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

std::vector<fs::path> sorted_entries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) out.push_back(it->path());
  std::sort(out.begin(), out.end(),
            [](const fs::path& a, const fs::path& b) { return natural_less(a.filename().string(), b.filename().string()); });
  return out;
}

std::string first_line(const std::string& path) {
  auto text = read_small_file(path);
  if (!text) return {};
  return std::string(trim(text->substr(0, text->find('\n'))));
}

}  // namespace

HostCollector::HostCollector(HostPaths paths)
    : paths_(std::move(paths)), clock_ticks_per_s_(::sysconf(_SC_CLK_TCK)), page_size_(::sysconf(_SC_PAGESIZE)) {
  if (clock_ticks_per_s_ <= 0) clock_ticks_per_s_ = 100;
  if (page_size_ <= 0) page_size_ = 4096;
  discover();
}

HostCollector::~HostCollector() = default;

void HostCollector::add_source(std::string source, const std::string& path, bool available, std::string why) {
  sources_.push_back(SourceStatus{std::move(source), available, available ? path : (why.empty() ? path + " not readable" : why)});
}

void HostCollector::discover() {
  const std::string proc = paths_.proc_root;
  const std::string self = proc + "/" + paths_.self_dir;
  auto open = [&](ProcFile& f, const char* source, const std::string& path) {
    f = ProcFile(path);
    bool ok = f.is_open() && f.read().has_value();
    add_source(source, path, ok);
  };
  open(stat_, "proc_stat", proc + "/stat");
  open(meminfo_, "meminfo", proc + "/meminfo");
  open(vmstat_, "vmstat", proc + "/vmstat");
  open(loadavg_, "loadavg", proc + "/loadavg");
  open(self_stat_, "process_stat", self + "/stat");
  open(self_status_, "process_status", self + "/status");

  // CPU frequency: absent on most VMs.
  const fs::path cpu_dir = fs::path(paths_.sys_root) / "devices/system/cpu";
  for (const fs::path& p : sorted_entries(cpu_dir)) {
    std::string name = p.filename().string();
    if (name.size() < 4 || name.rfind("cpu", 0) != 0 || !is_number(name.substr(3))) continue;
    ProcFile f((p / "cpufreq/scaling_cur_freq").string());
    if (f.is_open()) cpufreq_.emplace_back(name.substr(3), std::move(f));
  }
  add_source("cpufreq", cpu_dir.string(), !cpufreq_.empty(), "no cpufreq/scaling_cur_freq under " + cpu_dir.string());

  // Temperatures: hwmon first; thermal zones only when hwmon has none.
  const fs::path hwmon_dir = fs::path(paths_.sys_root) / "class/hwmon";
  for (const fs::path& hw : sorted_entries(hwmon_dir)) {
    std::string chip = first_line((hw / "name").string());
    if (chip.empty()) chip = hw.filename().string();
    for (const fs::path& f : sorted_entries(hw)) {
      std::string file = f.filename().string();
      const std::string suffix = "_input";
      if (file.rfind("temp", 0) != 0 || file.size() <= suffix.size() ||
          file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) {
        continue;
      }
      std::string stem = file.substr(0, file.size() - suffix.size());
      std::string label = first_line((hw / (stem + "_label")).string());
      ProcFile pf(f.string());
      if (pf.is_open()) temperatures_.push_back(Sensor{std::move(pf), chip, label.empty() ? stem : label});
    }
  }
  std::string temp_detail = hwmon_dir.string();
  if (temperatures_.empty()) {
    const fs::path thermal_dir = fs::path(paths_.sys_root) / "class/thermal";
    temp_detail = thermal_dir.string();
    for (const fs::path& z : sorted_entries(thermal_dir)) {
      std::string zone = z.filename().string();
      if (zone.rfind("thermal_zone", 0) != 0) continue;
      ProcFile pf((z / "temp").string());
      if (pf.is_open()) temperatures_.push_back(Sensor{std::move(pf), zone, first_line((z / "type").string())});
    }
  }
  add_source("temperature", temp_detail, !temperatures_.empty(), "no hwmon temp*_input or thermal_zone*/temp under " + paths_.sys_root + "/class");

  // RAPL energy counters; energy_uj is root-only on current kernels.
  const fs::path powercap = fs::path(paths_.sys_root) / "class/powercap";
  for (const fs::path& d : sorted_entries(powercap)) {
    if (d.filename().string().rfind("intel-rapl:", 0) != 0) continue;
    RaplDomain dom;
    dom.energy = ProcFile((d / "energy_uj").string());
    if (!dom.energy.is_open() || !dom.energy.read()) continue;
    dom.domain = first_line((d / "name").string());
    if (dom.domain.empty()) dom.domain = d.filename().string();
    dom.max_range_uj = parse_double(first_line((d / "max_energy_range_uj").string())).value_or(0);
    rapl_.push_back(std::move(dom));
  }
  add_source("rapl", powercap.string(), !rapl_.empty(), "no readable intel-rapl:*/energy_uj under " + powercap.string());

  // cgroup v2: "0::/path" in /proc/self/cgroup, files under the unified mount.
  std::string cg_path;
  if (auto text = read_small_file(self + "/cgroup")) {
    for_each_line(*text, [&](std::string_view line) {
      if (line.rfind("0::", 0) == 0) cg_path = std::string(line.substr(3));
    });
  }
  const std::string cg_dir = paths_.sys_root + "/fs/cgroup" + (cg_path == "/" ? "" : cg_path);
  cg_cpu_max_ = ProcFile(cg_dir + "/cpu.max");
  cg_cpu_stat_ = ProcFile(cg_dir + "/cpu.stat");
  cg_mem_current_ = ProcFile(cg_dir + "/memory.current");
  cg_mem_max_ = ProcFile(cg_dir + "/memory.max");
  bool cg_ok = cg_cpu_max_.is_open() || cg_mem_max_.is_open();
  add_source("cgroup_v2", cg_dir, cg_ok,
             cg_path.empty() ? "no cgroup v2 entry in " + self + "/cgroup"
                             : "no cpu.max or memory.max in " + cg_dir + " (not limited, or cgroup v1)");
}

std::vector<MetricFamily> HostCollector::families() const {
  using T = MetricType;
  return {
      {metric_names::kHostCpu, "ratio", T::kGauge, "Busy fraction of CPU time (cpu=\"total\" or a core), non-idle and non-iowait"},
      {"host_cpu_seconds_total", "seconds", T::kCounter,
       "CPU time of a core in a mode since boot (mode=user|nice|system|idle|iowait|irq|softirq|steal), as node_exporter's node_cpu_seconds_total; written once a second"},
      {"host_context_switches_total", "", T::kCounter, "Context switches since boot"},
      {"host_context_switches_per_second", "", T::kGauge, "Context switches per second over the last sampling interval"},
      {"host_interrupts_total", "", T::kCounter, "Interrupts serviced since boot"},
      {"host_interrupts_per_second", "", T::kGauge, "Interrupts per second over the last sampling interval"},
      {"host_load1", "", T::kGauge, "1-minute load average"},
      {"host_load5", "", T::kGauge, "5-minute load average"},
      {"host_load15", "", T::kGauge, "15-minute load average"},
      {"host_memory_total_bytes", "bytes", T::kGauge, "Physical memory (MemTotal)"},
      {"host_memory_available_bytes", "bytes", T::kGauge, "Memory available for new work (MemAvailable)"},
      {metric_names::kHostMemoryUsed, "bytes", T::kGauge, "MemTotal minus MemAvailable"},
      {"host_swap_total_bytes", "bytes", T::kGauge, "Swap space (SwapTotal)"},
      {"host_swap_used_bytes", "bytes", T::kGauge, "SwapTotal minus SwapFree"},
      {"host_page_faults_total", "", T::kCounter, "Page faults since boot (minor and major)"},
      {"host_major_page_faults_total", "", T::kCounter, "Major page faults since boot"},
      {"host_page_faults_per_second", "", T::kGauge, "Page faults per second over the last sampling interval"},
      {"host_cpu_frequency_hertz", "hertz", T::kGauge, "Current CPU core frequency (cpufreq scaling_cur_freq)"},
      {"host_temperature_celsius", "celsius", T::kGauge, "Sensor temperature (hwmon, else thermal zones)"},
      {metric_names::kHostEnergy, "joules", T::kCounter, "RAPL energy consumed by a power domain, wrap-corrected"},
      {"host_rapl_power_watts", "watts", T::kGauge, "RAPL power of a domain over the last sampling interval"},
      {"process_cpu_seconds_total", "seconds", T::kCounter, "CPU time (user and system) of the perfscope process"},
      {"process_cpu_utilization_ratio", "ratio", T::kGauge, "CPU time of the perfscope process per wall-clock second (1 = one full core)"},
      {"process_resident_memory_bytes", "bytes", T::kGauge, "Resident set size of the perfscope process"},
      {"process_virtual_memory_bytes", "bytes", T::kGauge, "Virtual memory size of the perfscope process"},
      {"process_threads", "", T::kGauge, "Threads of the perfscope process"},
      {"process_context_switches_total", "", T::kCounter, "Context switches of the perfscope process (kind=voluntary|involuntary)"},
      {"cgroup_cpu_limit_cores", "", T::kGauge, "cgroup v2 CPU quota in cores (cpu.max quota/period); absent when unlimited"},
      {"cgroup_cpu_usage_seconds_total", "seconds", T::kCounter, "cgroup v2 CPU usage (cpu.stat usage_usec)"},
      {"cgroup_cpu_throttled_seconds_total", "seconds", T::kCounter, "cgroup v2 time throttled (cpu.stat throttled_usec)"},
      {"cgroup_cpu_throttled_periods_total", "", T::kCounter, "cgroup v2 throttled periods (cpu.stat nr_throttled)"},
      {"cgroup_memory_usage_bytes", "bytes", T::kGauge, "cgroup v2 memory.current"},
      {"cgroup_memory_limit_bytes", "bytes", T::kGauge, "cgroup v2 memory.max; absent when unlimited"},
  };
}

bool HostCollector::rate(double current, double& previous, double dt_s, double& rate_out) {
  bool have = previous >= 0 && dt_s > 0 && current >= previous;
  if (have) rate_out = (current - previous) / dt_s;
  previous = current;
  return have;
}

void HostCollector::collect(TimestampNs now_ns, std::vector<Reading>& out) {
  double dt_s = prev_ns_ > 0 && now_ns > prev_ns_ ? static_cast<double>(now_ns - prev_ns_) / 1e9 : 0;
  prev_ns_ = now_ns;
  collect_stat(now_ns, dt_s, out);
  collect_meminfo(out);
  if (now_ns < next_slow_ns_) return;
  // Due again a second on, less a twentieth: a pass that comes a little early still reads.
  next_slow_ns_ = now_ns + kSlowInterval - kSlowInterval / 20;
  const double slow_dt_s = prev_slow_ns_ > 0 && now_ns > prev_slow_ns_ ? static_cast<double>(now_ns - prev_slow_ns_) / 1e9 : 0;
  prev_slow_ns_ = now_ns;
  collect_vmstat(slow_dt_s, out);
  collect_loadavg(out);
  collect_process(slow_dt_s, out);
  collect_cpufreq(out);
  collect_temperatures(out);
  collect_rapl(slow_dt_s, out);
  collect_cgroup(out);
}

void HostCollector::collect_stat(TimestampNs now_ns, double dt_s, std::vector<Reading>& out) {
  auto text = stat_.read();
  if (!text) return;
  // Per core and mode, the counters Prometheus users rate() over, once a second: eight a core
  // at every pass would be most of a many-core host's samples, and a scrape reads one value.
  const bool counters = now_ns >= next_cpu_counters_ns_;
  if (counters) next_cpu_counters_ns_ = now_ns + kCpuCounterInterval;
  static constexpr const char* kModes[] = {"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"};
  for_each_line(*text, [&](std::string_view line) {
    std::string_view f[12];
    std::size_t n = split_fields(line, f, 12);
    if (n == 0) return;
    if (f[0].rfind("cpu", 0) == 0 && n >= 5) {
      // user nice system idle iowait irq softirq steal guest guest_nice (ticks).
      unsigned long long v[10] = {};
      for (std::size_t i = 1; i < n && i <= 10; ++i) v[i - 1] = static_cast<unsigned long long>(parse_int(f[i]).value_or(0));
      unsigned long long total = 0;
      for (unsigned long long x : v) total += x;
      total -= v[8] + v[9];  // guest time is already counted in user/nice
      unsigned long long busy = total - v[3] - v[4];
      std::string cpu = f[0] == "cpu" ? "total" : std::string(f[0].substr(3));
      if (counters && cpu != "total" && clock_ticks_per_s_ > 0) {
        for (std::size_t m = 0; m < std::size(kModes) && m + 1 < n; ++m) {
          out.push_back(reading("host_cpu_seconds_total", {{"cpu", cpu}, {"mode", kModes[m]}},
                                static_cast<double>(v[m]) / static_cast<double>(clock_ticks_per_s_)));
        }
      }
      auto [it, fresh] = prev_cpu_.try_emplace(cpu);
      if (!fresh) {
        // Clamp negative deltas (hotplug, counter resets) to zero.
        double d_busy = busy >= it->second.busy ? static_cast<double>(busy - it->second.busy) : 0;
        double d_total = total >= it->second.total ? static_cast<double>(total - it->second.total) : 0;
        if (d_total > 0) {
          out.push_back(reading(metric_names::kHostCpu, {{"cpu", cpu}}, std::min(1.0, d_busy / d_total)));
        }
      }
      it->second = CpuTicks{busy, total};
    } else if (f[0] == "ctxt" && n >= 2) {
      double v = to_double(f[1]), r = 0;
      out.push_back(reading("host_context_switches_total", {}, v));
      if (rate(v, prev_ctxt_, dt_s, r)) out.push_back(reading("host_context_switches_per_second", {}, r));
    } else if (f[0] == "intr" && n >= 2) {
      double v = to_double(f[1]), r = 0;
      out.push_back(reading("host_interrupts_total", {}, v));
      if (rate(v, prev_intr_, dt_s, r)) out.push_back(reading("host_interrupts_per_second", {}, r));
    }
  });
}

void HostCollector::collect_meminfo(std::vector<Reading>& out) {
  auto text = meminfo_.read();
  if (!text) return;
  double total = -1, available = -1, swap_total = -1, swap_free = -1;
  for_each_line(*text, [&](std::string_view line) {
    std::string_view f[3];
    if (split_fields(line, f, 3) < 2) return;
    double bytes = to_double(f[1]) * 1024;  // values are in kB
    if (f[0] == "MemTotal:") total = bytes;
    else if (f[0] == "MemAvailable:") available = bytes;
    else if (f[0] == "SwapTotal:") swap_total = bytes;
    else if (f[0] == "SwapFree:") swap_free = bytes;
  });
  if (total >= 0) out.push_back(reading("host_memory_total_bytes", {}, total));
  if (available >= 0) out.push_back(reading("host_memory_available_bytes", {}, available));
  if (total >= 0 && available >= 0) out.push_back(reading(metric_names::kHostMemoryUsed, {}, std::max(0.0, total - available)));
  if (swap_total >= 0) out.push_back(reading("host_swap_total_bytes", {}, swap_total));
  if (swap_total >= 0 && swap_free >= 0) out.push_back(reading("host_swap_used_bytes", {}, std::max(0.0, swap_total - swap_free)));
}

void HostCollector::collect_vmstat(double dt_s, std::vector<Reading>& out) {
  auto text = vmstat_.read();
  if (!text) return;
  for_each_line(*text, [&](std::string_view line) {
    std::string_view f[2];
    if (split_fields(line, f, 2) < 2) return;
    if (f[0] == "pgfault") {
      double v = to_double(f[1]), r = 0;
      out.push_back(reading("host_page_faults_total", {}, v));
      if (rate(v, prev_pgfault_, dt_s, r)) out.push_back(reading("host_page_faults_per_second", {}, r));
    } else if (f[0] == "pgmajfault") {
      out.push_back(reading("host_major_page_faults_total", {}, to_double(f[1])));
    }
  });
}

void HostCollector::collect_loadavg(std::vector<Reading>& out) {
  auto text = loadavg_.read();
  if (!text) return;
  std::string_view f[3];
  if (split_fields(trim(*text), f, 3) < 3) return;
  out.push_back(reading("host_load1", {}, to_double(f[0])));
  out.push_back(reading("host_load5", {}, to_double(f[1])));
  out.push_back(reading("host_load15", {}, to_double(f[2])));
}

void HostCollector::collect_process(double dt_s, std::vector<Reading>& out) {
  if (auto text = self_stat_.read()) {
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    std::size_t paren = text->rfind(')');
    if (paren != std::string_view::npos) {
      std::string_view f[24];
      // f[0] is field 3 (state); utime=14, stime=15, num_threads=20, vsize=23, rss=24.
      if (split_fields(trim(text->substr(paren + 1)), f, 24) >= 22) {
        double cpu_s = (to_double(f[11]) + to_double(f[12])) / static_cast<double>(clock_ticks_per_s_);
        double r = 0;
        out.push_back(reading("process_cpu_seconds_total", {}, cpu_s));
        if (rate(cpu_s, prev_proc_cpu_s_, dt_s, r)) out.push_back(reading("process_cpu_utilization_ratio", {}, r));
        out.push_back(reading("process_threads", {}, to_double(f[17])));
        out.push_back(reading("process_virtual_memory_bytes", {}, to_double(f[20])));
        out.push_back(reading("process_resident_memory_bytes", {}, to_double(f[21]) * static_cast<double>(page_size_)));
      }
    }
  }
  if (auto text = self_status_.read()) {
    for_each_line(*text, [&](std::string_view line) {
      std::string_view f[2];
      if (split_fields(line, f, 2) < 2) return;
      if (f[0] == "voluntary_ctxt_switches:") {
        out.push_back(reading("process_context_switches_total", {{"kind", "voluntary"}}, to_double(f[1])));
      } else if (f[0] == "nonvoluntary_ctxt_switches:") {
        out.push_back(reading("process_context_switches_total", {{"kind", "involuntary"}}, to_double(f[1])));
      }
    });
  }
}

void HostCollector::collect_cpufreq(std::vector<Reading>& out) {
  for (auto& [cpu, file] : cpufreq_) {
    auto text = file.read();
    if (!text) continue;
    if (auto khz = parse_double(*text)) out.push_back(reading("host_cpu_frequency_hertz", {{"cpu", cpu}}, *khz * 1000));
  }
}

void HostCollector::collect_temperatures(std::vector<Reading>& out) {
  for (Sensor& s : temperatures_) {
    auto text = s.file.read();
    if (!text) continue;
    if (auto milli = parse_double(*text)) {
      out.push_back(reading("host_temperature_celsius", {{"chip", s.chip}, {"sensor", s.sensor}}, *milli / 1000));
    }
  }
}

void HostCollector::collect_rapl(double dt_s, std::vector<Reading>& out) {
  for (RaplDomain& d : rapl_) {
    auto text = d.energy.read();
    if (!text) continue;
    auto uj = parse_double(*text);
    if (!uj) continue;
    if (d.prev_uj >= 0) {
      double delta = *uj - d.prev_uj;
      if (delta < 0) delta = d.max_range_uj > 0 ? *uj + d.max_range_uj - d.prev_uj : 0;  // wrapped
      d.accumulated_j += delta / 1e6;
      if (dt_s > 0) out.push_back(reading("host_rapl_power_watts", {{"domain", d.domain}}, delta / 1e6 / dt_s));
    }
    d.prev_uj = *uj;
    out.push_back(reading(metric_names::kHostEnergy, {{"domain", d.domain}}, d.accumulated_j));
  }
}

void HostCollector::collect_cgroup(std::vector<Reading>& out) {
  if (auto text = cg_cpu_max_.read()) {
    std::string_view f[2];
    if (split_fields(trim(*text), f, 2) == 2 && f[0] != "max") {
      double quota = to_double(f[0]), period = to_double(f[1]);
      if (period > 0) out.push_back(reading("cgroup_cpu_limit_cores", {}, quota / period));
    }
  }
  if (auto text = cg_cpu_stat_.read()) {
    for_each_line(*text, [&](std::string_view line) {
      std::string_view f[2];
      if (split_fields(line, f, 2) < 2) return;
      if (f[0] == "usage_usec") out.push_back(reading("cgroup_cpu_usage_seconds_total", {}, to_double(f[1]) / 1e6));
      else if (f[0] == "throttled_usec") out.push_back(reading("cgroup_cpu_throttled_seconds_total", {}, to_double(f[1]) / 1e6));
      else if (f[0] == "nr_throttled") out.push_back(reading("cgroup_cpu_throttled_periods_total", {}, to_double(f[1])));
    });
  }
  if (auto text = cg_mem_current_.read()) {
    if (auto v = parse_double(*text)) out.push_back(reading("cgroup_memory_usage_bytes", {}, *v));
  }
  if (auto text = cg_mem_max_.read()) {
    if (auto v = parse_double(*text)) out.push_back(reading("cgroup_memory_limit_bytes", {}, *v));  // "max" → none
  }
}

}  // namespace perfscope
