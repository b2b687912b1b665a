#include "engine/collectors/host_collector.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

namespace perfscope {
namespace {
namespace fs = std::filesystem;

// A private copy of a fixture tree, so tests can rewrite files (resets, wraps, removals).
class FixtureTree {
 public:
  explicit FixtureTree(const std::string& name) {
    root_ = fs::temp_directory_path() / ("perfscope-fixture-" + std::to_string(::getpid()) + "-" + name + "-" +
                                         std::to_string(counter_++));
    fs::remove_all(root_);
    fs::copy(fs::path(PERFSCOPE_FIXTURES) / name, root_, fs::copy_options::recursive);
  }
  ~FixtureTree() { fs::remove_all(root_); }
  HostPaths paths() const { return HostPaths{(root_ / "proc").string(), (root_ / "sys").string(), "self"}; }
  fs::path path(const std::string& rel) const { return root_ / rel; }
  // Rewrites in place (same inode), as the kernel's files change under an open descriptor.
  void write(const std::string& rel, const std::string& text) const {
    std::ofstream out(root_ / rel, std::ios::trunc);
    out << text;
  }
  void copy_over(const std::string& from_rel, const std::string& to_rel) const {
    std::ifstream in(root_ / from_rel);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    write(to_rel, text);
  }

 private:
  static inline int counter_ = 0;
  fs::path root_;
};

using ReadingMap = std::map<std::string, double>;

ReadingMap collect(HostCollector& c, TimestampNs ts) {
  std::vector<Reading> out;
  c.collect(ts, out);
  ReadingMap m;
  for (const Reading& r : out) {
    EXPECT_TRUE(m.emplace(r.key.canonical(), r.value).second) << "duplicate " << r.key.canonical();
  }
  return m;
}

const SourceStatus* source(const HostCollector& c, const std::string& name) {
  static std::vector<SourceStatus> keep;
  keep = c.sources();
  for (const SourceStatus& s : keep) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// Independent reading of a meminfo field (kB) from the fixture text.
double meminfo_kb(const fs::path& file, const std::string& field) {
  std::ifstream in(file);
  std::string key;
  double value = -1;
  std::string unit;
  while (in >> key >> value) {
    std::getline(in, unit);
    if (key == field + ":") return value;
  }
  return -1;
}

constexpr TimestampNs kSecond = 1'000'000'000;

TEST(HostCollector, CapturedVmProcfsGivesLevelsOnFirstPassAndRatesOnSecond) {
  FixtureTree tree("vm");
  HostCollector c(tree.paths());
  ReadingMap first = collect(c, 10 * kSecond);

  EXPECT_EQ(first.count(R"(host_cpu_utilization_ratio{cpu="total"})"), 0u) << "a ratio needs two passes";
  EXPECT_EQ(first.count("host_context_switches_per_second"), 0u);
  double total = meminfo_kb(tree.path("proc/meminfo"), "MemTotal") * 1024;
  double avail = meminfo_kb(tree.path("proc/meminfo"), "MemAvailable") * 1024;
  ASSERT_GT(total, 0);
  EXPECT_EQ(first.at("host_memory_total_bytes"), total);
  EXPECT_EQ(first.at("host_memory_available_bytes"), avail);
  EXPECT_EQ(first.at("host_memory_used_bytes"), total - avail);
  EXPECT_EQ(first.at("host_swap_total_bytes"), meminfo_kb(tree.path("proc/meminfo"), "SwapTotal") * 1024);
  EXPECT_TRUE(first.count("host_load1") && first.count("host_load5") && first.count("host_load15"));
  EXPECT_TRUE(first.count("host_page_faults_total") && first.count("host_major_page_faults_total"));
  // self/stat of the captured process: 408 resident pages, 3133440 bytes virtual, 1 thread.
  EXPECT_EQ(first.at("process_resident_memory_bytes"), 408.0 * static_cast<double>(::sysconf(_SC_PAGESIZE)));
  EXPECT_EQ(first.at("process_virtual_memory_bytes"), 3133440.0);
  EXPECT_EQ(first.at("process_threads"), 1.0);
  EXPECT_TRUE(first.count(R"(process_context_switches_total{kind="voluntary"})"));
  EXPECT_TRUE(first.count(R"(process_context_switches_total{kind="involuntary"})"));

  tree.copy_over("proc/stat.next", "proc/stat");
  tree.copy_over("proc/vmstat.next", "proc/vmstat");
  ReadingMap second = collect(c, 11 * kSecond);
  // From the two captures: cpu total busy 12854 -> 12855 of 151631 -> 151833 ticks.
  EXPECT_DOUBLE_EQ(second.at(R"(host_cpu_utilization_ratio{cpu="total"})"), 1.0 / 202.0);
  EXPECT_TRUE(second.count(R"(host_cpu_utilization_ratio{cpu="0"})"));
  EXPECT_TRUE(second.count(R"(host_cpu_utilization_ratio{cpu="1"})"));
  double ctxt_rate = second.at("host_context_switches_total") - first.at("host_context_switches_total");
  EXPECT_DOUBLE_EQ(second.at("host_context_switches_per_second"), ctxt_rate);  // dt = 1 s
  EXPECT_GE(second.at("host_page_faults_per_second"), 0);
  EXPECT_TRUE(second.count("host_interrupts_per_second"));

  // The VM has none of these: reported once as unavailable, never an error.
  for (const char* name : {"cpufreq", "temperature", "rapl", "cgroup_v2"}) {
    const SourceStatus* s = source(c, name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_FALSE(s->available) << name;
    EXPECT_FALSE(s->detail.empty()) << name;
  }
  EXPECT_TRUE(source(c, "proc_stat")->available);
}

TEST(HostCollector, CpuSecondsPerCoreAndModeOnceASecond) {
  FixtureTree tree("vm");
  HostCollector c(tree.paths());
  const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  ReadingMap first = collect(c, kSecond);
  // cpu0's line of the fixture, field by field: user nice system idle iowait irq softirq steal.
  std::ifstream stat(tree.path("proc/stat"));
  std::map<std::string, std::vector<double>> ticks;
  for (std::string line; std::getline(stat, line);) {
    std::istringstream fields(line);
    std::string name;
    fields >> name;
    for (double t; fields >> t;) ticks[name].push_back(t);
  }
  const char* modes[] = {"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"};
  for (const std::string cpu : {"0", "1"}) {
    for (std::size_t m = 0; m < 8; ++m) {
      const std::string key = "host_cpu_seconds_total{cpu=\"" + cpu + "\",mode=\"" + modes[m] + "\"}";
      ASSERT_TRUE(first.count(key)) << key;
      EXPECT_DOUBLE_EQ(first.at(key), ticks.at("cpu" + cpu).at(m) / hz) << key;
    }
  }
  EXPECT_FALSE(first.count(R"(host_cpu_seconds_total{cpu="total",mode="user"})"));  // sum by (mode) gives it
  // Not again within the second; again once it has passed.
  EXPECT_FALSE(collect(c, kSecond + kSecond / 10).count(R"(host_cpu_seconds_total{cpu="0",mode="user"})"));
  EXPECT_TRUE(collect(c, 2 * kSecond).count(R"(host_cpu_seconds_total{cpu="0",mode="user"})"));
}

TEST(HostCollector, CounterResetsNeverGiveNegativeRatesOrRatiosAboveOne) {
  FixtureTree tree("vm");
  HostCollector c(tree.paths());
  collect(c, 1 * kSecond);
  // Counters going backwards (hotplug, reset): ticks and ctxt lower than before.
  tree.write("proc/stat",
             "cpu  10 0 10 100 0 0 0 0 0 0\ncpu0 5 0 5 50 0 0 0 0 0 0\ncpu1 5 0 5 50 0 0 0 0 0 0\n"
             "intr 5\nctxt 7\nbtime 1\n");
  ReadingMap after_reset = collect(c, 2 * kSecond);
  EXPECT_EQ(after_reset.count("host_context_switches_per_second"), 0u);
  EXPECT_EQ(after_reset.count("host_interrupts_per_second"), 0u);
  EXPECT_EQ(after_reset.at("host_context_switches_total"), 7);
  for (const auto& [k, v] : after_reset) {
    if (k.rfind("host_cpu_utilization_ratio", 0) == 0) {
      EXPECT_GE(v, 0) << k;
      EXPECT_LE(v, 1) << k;
    }
  }
  // And the pass after the reset measures from the new base.
  tree.write("proc/stat", "cpu  20 0 10 110 0 0 0 0 0 0\ncpu0 10 0 5 55 0 0 0 0 0 0\ncpu1 10 0 5 55 0 0 0 0 0 0\n"
                          "intr 15\nctxt 17\n");
  ReadingMap next = collect(c, 3 * kSecond);
  EXPECT_DOUBLE_EQ(next.at(R"(host_cpu_utilization_ratio{cpu="total"})"), 10.0 / 20.0);
  EXPECT_DOUBLE_EQ(next.at("host_context_switches_per_second"), 10);
}

TEST(HostCollector, MissingFilesAreUnavailableAndTheRestStillWorks) {
  FixtureTree tree("vm");
  fs::remove(tree.path("proc/vmstat"));
  fs::remove(tree.path("proc/loadavg"));
  HostCollector c(tree.paths());
  ReadingMap m = collect(c, kSecond);
  EXPECT_FALSE(source(c, "vmstat")->available);
  EXPECT_FALSE(source(c, "loadavg")->available);
  EXPECT_EQ(m.count("host_page_faults_total"), 0u);
  EXPECT_EQ(m.count("host_load1"), 0u);
  EXPECT_TRUE(m.count("host_memory_total_bytes"));

  // A file that vanishes after start-up is skipped, not fatal.
  FixtureTree empty("vm");
  fs::remove_all(empty.path("proc"));
  HostCollector none(empty.paths());
  EXPECT_TRUE(collect(none, kSecond).empty());
}

// CPU and memory at every pass; what changes slowly once a second, its rates over that second.
TEST(HostCollector, SlowFilesAreReadOnceASecondNotAtEveryPass) {
  FixtureTree tree("vm");
  HostCollector c(tree.paths());
  const TimestampNs step = kSecond / 10;
  int load_reads = 0, cpu_reads = 0;
  for (int pass = 0; pass <= 20; ++pass) {
    ReadingMap m = collect(c, kSecond + pass * step);
    load_reads += static_cast<int>(m.count("host_load1"));
    cpu_reads += static_cast<int>(m.count("host_memory_total_bytes"));
  }
  EXPECT_EQ(cpu_reads, 21);
  EXPECT_EQ(load_reads, 3) << "at 1.0 s, 2.0 s and 3.0 s of the passes 1.0 s … 3.0 s";
}

TEST(HostCollector, ProcessNameWithSpacesAndParenthesesParses) {
  FixtureTree tree("vm");
  tree.write("proc/self/stat",
             "77 (my (odd) name) S 1 77 77 0 -1 4194560 500 0 0 0 250 50 0 0 20 0 9 0 100 123456789 1000 "
             "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n");
  HostCollector c(tree.paths());
  ReadingMap m = collect(c, kSecond);
  EXPECT_EQ(m.at("process_threads"), 9);
  EXPECT_EQ(m.at("process_virtual_memory_bytes"), 123456789);
  EXPECT_DOUBLE_EQ(m.at("process_cpu_seconds_total"), 300.0 / static_cast<double>(::sysconf(_SC_CLK_TCK)));
}

TEST(HostCollector, CapturedCgroupV2WithoutLimits) {
  FixtureTree tree("container");
  HostCollector c(tree.paths());
  ASSERT_TRUE(source(c, "cgroup_v2")->available) << source(c, "cgroup_v2")->detail;
  ReadingMap m = collect(c, kSecond);
  EXPECT_DOUBLE_EQ(m.at("cgroup_cpu_usage_seconds_total"), 0.015309);
  EXPECT_EQ(m.at("cgroup_memory_usage_bytes"), 4980736);
  EXPECT_EQ(m.count("cgroup_memory_limit_bytes"), 0u) << "memory.max is 'max': no limit";
  EXPECT_EQ(m.count("cgroup_cpu_limit_cores"), 0u) << "no cpu.max file";
}

TEST(HostCollector, CgroupV2Limits) {
  FixtureTree tree("container");
  const std::string dir = "sys/fs/cgroup/process_api/8961249401810289314a9d338dd893a7/";
  tree.write(dir + "cpu.max", "150000 100000\n");
  tree.write(dir + "memory.max", "1073741824\n");
  tree.write(dir + "cpu.stat", "usage_usec 2000000\nuser_usec 1\nsystem_usec 1\nnr_periods 10\nnr_throttled 3\nthrottled_usec 250000\n");
  HostCollector c(tree.paths());
  ReadingMap m = collect(c, kSecond);
  EXPECT_DOUBLE_EQ(m.at("cgroup_cpu_limit_cores"), 1.5);
  EXPECT_EQ(m.at("cgroup_memory_limit_bytes"), 1073741824);
  EXPECT_EQ(m.at("cgroup_cpu_throttled_periods_total"), 3);
  EXPECT_DOUBLE_EQ(m.at("cgroup_cpu_throttled_seconds_total"), 0.25);
  EXPECT_DOUBLE_EQ(m.at("cgroup_cpu_usage_seconds_total"), 2.0);

  tree.write(dir + "cpu.max", "max 100000\n");
  EXPECT_EQ(collect(c, 2 * kSecond).count("cgroup_cpu_limit_cores"), 0u) << "quota 'max' means unlimited";
}

TEST(HostCollector, SensorsRaplAndCpufreq) {
  FixtureTree tree("vm");
  fs::copy(fs::path(PERFSCOPE_FIXTURES) / "sensors/sys", tree.path("sys"),
           fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  HostCollector c(tree.paths());
  for (const char* name : {"cpufreq", "temperature", "rapl"}) EXPECT_TRUE(source(c, name)->available) << name;

  ReadingMap first = collect(c, 1 * kSecond);
  EXPECT_EQ(first.at(R"(host_cpu_frequency_hertz{cpu="0"})"), 2.4e9);
  EXPECT_EQ(first.at(R"(host_cpu_frequency_hertz{cpu="1"})"), 3.1e9);
  // hwmon wins over thermal zones; labels come from temp*_label, else the file stem.
  EXPECT_EQ(first.at(R"(host_temperature_celsius{chip="coretemp",sensor="Package id 0"})"), 45.0);
  EXPECT_EQ(first.at(R"(host_temperature_celsius{chip="coretemp",sensor="Core 0"})"), 43.0);
  EXPECT_EQ(first.at(R"(host_temperature_celsius{chip="nvme",sensor="temp1"})"), 38.85);
  EXPECT_EQ(first.count(R"(host_temperature_celsius{chip="thermal_zone0",sensor="x86_pkg_temp"})"), 0u);
  EXPECT_EQ(first.at(R"(host_rapl_energy_joules_total{domain="package-0"})"), 0.0);
  EXPECT_EQ(first.count(R"(host_rapl_power_watts{domain="package-0"})"), 0u);

  // The package counter wraps: 262143000000 -> 1000000 with range 262143328850 µJ.
  const std::string pkg = "sys/class/powercap/intel-rapl:0/energy_uj";
  tree.write(pkg, "1000000\n");
  tree.write("sys/class/powercap/intel-rapl:0:0/energy_uj", "6000000\n");
  ReadingMap second = collect(c, 3 * kSecond);
  double wrapped_j = (1000000.0 + 262143328850.0 - 262143000000.0) / 1e6;  // 1.32885 J
  EXPECT_DOUBLE_EQ(second.at(R"(host_rapl_energy_joules_total{domain="package-0"})"), wrapped_j);
  EXPECT_DOUBLE_EQ(second.at(R"(host_rapl_power_watts{domain="package-0"})"), wrapped_j / 2);
  EXPECT_DOUBLE_EQ(second.at(R"(host_rapl_power_watts{domain="core"})"), 5.0 / 2);
}

TEST(HostCollector, ThermalZonesWhenNoHwmon) {
  FixtureTree tree("vm");
  fs::create_directories(tree.path("sys/class/thermal/thermal_zone3"));
  tree.write("sys/class/thermal/thermal_zone3/type", "acpitz\n");
  tree.write("sys/class/thermal/thermal_zone3/temp", "27800\n");
  HostCollector c(tree.paths());
  EXPECT_EQ(collect(c, kSecond).at(R"(host_temperature_celsius{chip="thermal_zone3",sensor="acpitz"})"), 27.8);
}

TEST(HostCollector, EveryEmittedSeriesIsADeclaredFamily) {
  FixtureTree tree("container");
  fs::copy(fs::path(PERFSCOPE_FIXTURES) / "sensors/sys", tree.path("sys"),
           fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  HostCollector c(tree.paths());
  std::map<std::string, MetricFamily> families;
  for (const MetricFamily& f : c.families()) {
    EXPECT_TRUE(is_valid_metric_name(f.name)) << f.name;
    // Prometheus conventions: counters end in _total, gauges never do.
    bool total = f.name.size() > 6 && f.name.compare(f.name.size() - 6, 6, "_total") == 0;
    EXPECT_EQ(total, f.type == MetricType::kCounter) << f.name;
    families[f.name] = f;
  }
  std::vector<Reading> out;
  c.collect(kSecond, out);
  c.collect(2 * kSecond, out);
  for (const Reading& r : out) EXPECT_TRUE(families.count(r.key.name)) << r.key.name;
}

}  // namespace
}  // namespace perfscope
