// Bottleneck detection as a table of rules held as data. Each rule names the inputs it needs
// (measured figures of the window, by key), its thresholds, a condition, and the
// recommendations to show when it fires. A rule whose inputs this machine does not measure
// (no GPU metrics, no kernel launch times, no SLA configured) is reported as not evaluated,
// with the missing inputs, instead of guessing.
//
// Input keys (all optional):
//   gpu_utilization_avg, gpu_dram_bandwidth_utilization_avg (ratios 0–1),
//   gpu_memory_used_ratio_peak, gpu_thermal_throttle_seconds, gpu_power_cap_throttle_seconds,
//   host_cpu_utilization_avg, kernel_count, kernel_max_ms, kernel_busy_ratio,
//   kernel_avg_gap_ms, kernel_short_share, kernel_host_wait_share, latency_p99_ms,
//   sla_target_ms, operator_cpu_fallback_share (the worst model's share of operator time on CPU
//   providers, among models with operators elsewhere), device_target_of_minimum_worst (the
//   lowest achieved ÷ minimum of any GPU's TFLOP/s or GB/s, with --device-target minimums). A rule may also read an input it does
//   not need when it is present.
// Subjects name what a figure is about (kernel_longest: the kernel of kernel_max_ms, and
// kernel_longest_device its device; kernel_gappiest_device: the device of kernel_busy_ratio),
// so advice can name it and fit the kind of device it ran on (a CPU producer gets no GPU advice).
//
// Pure functions over the table; safe from any thread.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace perfscope::analysis {

using Inputs = std::map<std::string, double, std::less<>>;
using Subjects = std::map<std::string, std::string, std::less<>>;

enum class Severity { kInfo, kWarning, kCritical };
std::string_view to_string(Severity s);

struct Rule {
  std::string id;
  std::string title;
  std::vector<std::string> needs;
  std::map<std::string, double> thresholds;
  // The severity when the rule fires, or nothing. Called only with every need present.
  std::function<std::optional<Severity>(const Inputs&, const std::map<std::string, double>&)> fires;
  std::vector<std::string> recommendations;
  // Inputs shown with the evidence when present, though the rule does not need them (who and
  // how much, beside the figures the rule decides on).
  std::vector<std::string> details = {};
  // The Subjects key naming what the evidence is about: the finding's subject, and what
  // "{subject}" in a recommendation becomes (absent: "the kernel").
  std::string subject = {};
  // The Subjects key of the device the subject ran on: a CPU device (is_cpu_device) takes
  // cpu_recommendations instead, where the rule has them.
  std::string subject_device = {};
  std::vector<std::string> cpu_recommendations = {};
};

struct Finding {
  std::string id, title;
  std::string status;  // "fired", "ok" or "not_evaluated"
  std::optional<Severity> severity;
  // not_evaluated: "why in words; not measured here: the inputs[; what to set]"
  std::string reason;
  std::string subject;                   // the kernel the evidence is about, where the rule names one
  std::string subject_device;            // and the device it ran on
  std::map<std::string, double> evidence;  // the inputs the rule read
  std::map<std::string, double> thresholds;
  std::vector<std::string> recommendations;  // when fired
};

const std::vector<Rule>& bottleneck_rules();
// Every rule, fired ones first (critical before warning), then ok, then not evaluated.
std::vector<Finding> detect_bottlenecks(const Inputs& inputs, const Subjects& subjects = {},
                                       const std::vector<Rule>& rules = bottleneck_rules());

}  // namespace perfscope::analysis
