#include "engine/analysis/run_compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "engine/analysis/ab_test.hpp"

namespace perfscope::analysis {

std::vector<KernelDiff> compare_kernels(const KernelDurations& a, const KernelDurations& b,
                                        const RunCompareOptions& options) {
  std::vector<KernelDiff> out;
  auto fill = [](KernelDiff& d, const std::vector<double>& v, bool first) {
    const double total = std::accumulate(v.begin(), v.end(), 0.0);
    std::optional<double> mean = v.empty() ? std::nullopt : std::optional<double>(total / static_cast<double>(v.size()));
    (first ? d.count_a : d.count_b) = v.size();
    (first ? d.total_a_ms : d.total_b_ms) = total;
    (first ? d.mean_a_ms : d.mean_b_ms) = mean;
  };
  auto names = [&] {
    std::vector<std::string> all;
    for (const auto& [name, v] : a) all.push_back(name);
    for (const auto& [name, v] : b) {
      if (!a.contains(name)) all.push_back(name);
    }
    return all;
  }();
  std::vector<std::size_t> tested;  // rows with a p-value, for the adjustment
  std::vector<double> p_values;
  for (const std::string& name : names) {
    KernelDiff d;
    d.name = name;
    static const std::vector<double> kNone;
    const auto ia = a.find(name), ib = b.find(name);
    const std::vector<double>& va = ia == a.end() ? kNone : ia->second;
    const std::vector<double>& vb = ib == b.end() ? kNone : ib->second;
    fill(d, va, true);
    fill(d, vb, false);
    if (va.empty()) {
      d.verdict = "only_in_b";
    } else if (vb.empty()) {
      d.verdict = "only_in_a";
    } else {
      if (*d.mean_a_ms > 0) d.mean_change = *d.mean_b_ms / *d.mean_a_ms - 1;
      if (va.size() < options.min_samples || vb.size() < options.min_samples) {
        d.verdict = "insufficient_samples";
      } else {
        d.p_value = mann_whitney_u(va, vb).p_value;
        tested.push_back(out.size());
        p_values.push_back(*d.p_value);
      }
    }
    out.push_back(std::move(d));
  }
  const std::vector<double> adjusted = benjamini_hochberg(p_values);
  for (std::size_t i = 0; i < tested.size(); ++i) {
    KernelDiff& d = out[tested[i]];
    d.p_adjusted = adjusted[i];
    const bool significant = adjusted[i] < options.alpha;
    const double change = d.mean_change.value_or(0);
    if (!significant || std::fabs(change) < options.min_effect) {
      d.verdict = "unchanged";
    } else {
      d.verdict = change > 0 ? "slower" : "faster";
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const KernelDiff& x, const KernelDiff& y) {
    return std::fabs(x.moved_ms()) > std::fabs(y.moved_ms());
  });
  return out;
}

RunVerdict overall_verdict(const std::vector<KernelDiff>& diffs, const RunTotals& totals,
                           const RunCompareOptions& options) {
  double moved = 0;
  bool any = false;
  for (const KernelDiff& d : diffs) {
    if (d.verdict != "slower" && d.verdict != "faster") continue;
    any = true;
    moved += d.moved_ms();
  }
  const double base_ms = std::max(totals.kernel_ms_a, totals.kernel_ms_b);
  const double share = base_ms > 0 ? moved / base_ms : 0;
  const int kernels = !any || std::fabs(share) < options.min_run_share ? 0 : (moved > 0 ? 1 : -1);
  int wall = 0;
  double wall_change = 0;
  if (totals.wall_s_a && totals.wall_s_b && *totals.wall_s_a > 0) {
    wall_change = *totals.wall_s_b / *totals.wall_s_a - 1;
    const double delta = *totals.wall_s_b - *totals.wall_s_a;
    if (std::fabs(wall_change) >= options.min_wall_change && std::fabs(delta) >= options.min_wall_delta_s) {
      wall = delta > 0 ? 1 : -1;
    }
  }
  auto word = [](int sign) { return sign > 0 ? "slower" : sign < 0 ? "faster" : "unchanged"; };
  char wall_text[96] = "not known for both runs";
  if (totals.wall_s_a && totals.wall_s_b) {
    std::snprintf(wall_text, sizeof wall_text, "%.3f s → %.3f s, %+.1f%%", *totals.wall_s_a, *totals.wall_s_b,
                  wall_change * 100);
  }
  char buf[384];
  std::snprintf(buf, sizeof buf,
                "kernels %s (significant changes moved %+.3f ms, %+.2f%% of the run's kernel time; material from "
                "%.2f%%); wall time %s (%s; material from %.0f%% and %.1f s)",
                word(kernels), moved, share * 100, options.min_run_share * 100, word(wall), wall_text,
                options.min_wall_change * 100, options.min_wall_delta_s);
  RunVerdict out;
  out.reason = buf;
  if (kernels == 0 && wall == 0) out.verdict = "unchanged";
  else if (kernels == 0 || wall == 0 || kernels == wall) out.verdict = word(kernels != 0 ? kernels : wall);
  else out.verdict = "mixed";
  return out;
}

}  // namespace perfscope::analysis
