// Device targets, as the monitoring design this product follows has them: per device, a
// minimum and a target for what it should achieve (TFLOP/s, DRAM bandwidth) and budgets it
// should stay within (memory, power). Set against what a window achieved, each figure gets its
// efficiency (achieved ÷ target), its ratio to the minimum or budget, a status, and a
// recommendation when a rate is below 0.8 of its minimum or a budget is exceeded.
//
// Value types and pure functions; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace perfscope::analysis {

// One --device-target: for the GPUs `match` selects ("*": all; digits: that GPU index;
// "GPU-…": that UUID; else a case-insensitive part of the NVML name, e.g. "H100").
struct DeviceTarget {
  std::string match;
  std::optional<double> min_tflops, target_tflops;
  std::optional<double> min_gb_per_second, target_gb_per_second;
  std::optional<double> memory_budget_bytes;  // peak memory used should stay within
  std::optional<double> power_budget_watts;   // mean power should stay within
  // No figure given (inline: the command-line parser checks it without the analysis library).
  bool empty() const {
    return !min_tflops && !target_tflops && !min_gb_per_second && !target_gb_per_second && !memory_budget_bytes &&
           !power_budget_watts;
  }
};

// The first target of `targets` that selects the GPU, or null.
const DeviceTarget* target_for(const std::vector<DeviceTarget>& targets, std::string_view index,
                               std::string_view uuid, std::string_view name);

// A figure measured over the window, with where it came from and over what time.
struct Achieved {
  double value = 0;
  std::string source;  // "kernels", "gpm_estimate", "gpm", "nvml"
  std::string basis;   // how it was measured, in words
};

struct DeviceAchieved {
  std::optional<Achieved> tflops, gb_per_second, memory_peak_bytes, power_avg_watts;
};

// Threshold under which a rate below its minimum gets a recommendation.
inline constexpr double kMinimumRatio = 0.8;

struct TargetCheck {
  std::string figure;  // "tflops", "gb_per_second", "memory_bytes", "power_watts"
  std::optional<Achieved> achieved;  // none: not measured here (status "not_measured")
  std::optional<double> minimum, target, budget;
  std::optional<double> efficiency;    // achieved ÷ target
  std::optional<double> of_minimum;    // achieved ÷ minimum
  std::optional<double> of_budget;     // achieved ÷ budget
  // "meets_target", "below_target", "below_minimum" (under kMinimumRatio of it),
  // "within_budget", "over_budget", "not_measured".
  std::string status;
  std::string recommendation;  // when below_minimum or over_budget
};

// One check per figure the target names.
std::vector<TargetCheck> check_targets(const DeviceTarget& target, const DeviceAchieved& achieved);

}  // namespace perfscope::analysis
