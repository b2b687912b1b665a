// Run against run, kernel by kernel (what Holistic Trace Analysis' trace diff does, with
// statistics): executions, time and mean in each run, the change of the mean, a Mann–Whitney
// test of the two runs' durations with the p-values of every kernel present in both adjusted
// together (Benjamini–Hochberg), and a verdict; kernels of one run only are named as such.
// Rows come ordered by the time they moved (|total b − total a|), largest first.
//
// Pure functions; safe from any thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace perfscope::analysis {

struct RunCompareOptions {
  double alpha = 0.05;           // on the adjusted p-value
  double min_effect = 0.05;      // |mean change| below this is no change, however significant
  std::size_t min_samples = 5;   // executions in each run for a test
};

struct KernelDiff {
  std::string name;
  std::size_t count_a = 0, count_b = 0;
  double total_a_ms = 0, total_b_ms = 0;
  std::optional<double> mean_a_ms, mean_b_ms;
  std::optional<double> mean_change;  // mean b / mean a − 1
  std::optional<double> p_value, p_adjusted;
  // "slower" or "faster" (b against a), "unchanged", "insufficient_samples", "only_in_a", "only_in_b"
  std::string verdict;
  double moved_ms() const { return total_b_ms - total_a_ms; }
};

// Durations in milliseconds by kernel name, one map per run.
using KernelDurations = std::map<std::string, std::vector<double>>;

std::vector<KernelDiff> compare_kernels(const KernelDurations& a, const KernelDurations& b,
                                        const RunCompareOptions& options = {});

// The whole comparison in one word: "slower" or "faster" when significant changes moved the
// kernel time that way, else "unchanged".
std::string overall_verdict(const std::vector<KernelDiff>& diffs);

}  // namespace perfscope::analysis
