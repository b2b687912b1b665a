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
  // Materiality of the whole run: significant kernels must together move at least this share
  // of the larger run's kernel time (a 0.155 ms move out of 6,278 ms is no verdict on a run)...
  double min_run_share = 0.01;
  // ...and the wall time counts when it moved by at least this share and this many seconds
  // (one number per run, so no test: only a change too large to be start-up noise).
  double min_wall_change = 0.25;
  double min_wall_delta_s = 0.5;
};

// What the runs' totals say beside the kernels.
struct RunTotals {
  double kernel_ms_a = 0, kernel_ms_b = 0;
  std::optional<double> wall_s_a, wall_s_b;
};

struct RunVerdict {
  std::string verdict;  // "slower", "faster", "unchanged", or "mixed" (kernels and wall time disagree)
  std::string reason;   // which figures decided it, with their size
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

// The whole comparison in one word, from two parts: the kernels (significant changes whose
// summed move is material: at least min_run_share of the larger run's kernel time) and the
// wall time (a change of at least min_wall_change and min_wall_delta_s). "unchanged" when
// neither moved, the one that moved when only one did or both agree, "mixed" otherwise.
RunVerdict overall_verdict(const std::vector<KernelDiff>& diffs, const RunTotals& totals,
                           const RunCompareOptions& options = {});

}  // namespace perfscope::analysis
