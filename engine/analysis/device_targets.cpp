#include "engine/analysis/device_targets.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace perfscope::analysis {

namespace {

bool contains_ignoring_case(std::string_view text, std::string_view part) {
  auto eq = [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b)); };
  return std::search(text.begin(), text.end(), part.begin(), part.end(), eq) != text.end();
}

std::string figure_text(double v, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g %s", v, unit);
  return buf;
}

// A rate that should reach a minimum and a target.
TargetCheck rate_check(std::string figure, const char* unit, const std::optional<Achieved>& achieved,
                       std::optional<double> minimum, std::optional<double> target, const std::string& advice) {
  TargetCheck c{std::move(figure), achieved, minimum, target, std::nullopt, {}, {}, {}, "not_measured", {}};
  if (!achieved) return c;
  const double v = achieved->value;
  if (target && *target > 0) c.efficiency = v / *target;
  if (minimum && *minimum > 0) c.of_minimum = v / *minimum;
  if (c.of_minimum && *c.of_minimum < kMinimumRatio) {
    c.status = "below_minimum";
    c.recommendation = "Achieved " + figure_text(v, unit) + " is below " + figure_text(kMinimumRatio * *minimum, unit) +
                       " (0.8 of the minimum " + figure_text(*minimum, unit) + "): " + advice;
  } else if ((target && v < *target) || (minimum && v < *minimum)) {
    c.status = "below_target";
  } else {
    c.status = "meets_target";
  }
  return c;
}

// A figure that should stay within a budget.
TargetCheck budget_check(std::string figure, const char* unit, double scale, const std::optional<Achieved>& achieved,
                         double budget, const std::string& advice) {
  TargetCheck c{std::move(figure), achieved, std::nullopt, std::nullopt, budget, {}, {}, {}, "not_measured", {}};
  if (!achieved) return c;
  c.of_budget = achieved->value / budget;
  if (*c.of_budget > 1) {
    c.status = "over_budget";
    c.recommendation = figure_text(achieved->value / scale, unit) + " is over the budget of " +
                       figure_text(budget / scale, unit) + ": " + advice;
  } else {
    c.status = "within_budget";
  }
  return c;
}

}  // namespace

const DeviceTarget* target_for(const std::vector<DeviceTarget>& targets, std::string_view index, std::string_view uuid,
                               std::string_view name) {
  for (const DeviceTarget& t : targets) {
    const std::string_view m = t.match;
    const bool digits = !m.empty() && std::all_of(m.begin(), m.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    if (m == "*" || (digits && m == index) || (m.starts_with("GPU-") && m == uuid) ||
        (!digits && !m.starts_with("GPU-") && contains_ignoring_case(name, m))) {
      return &t;
    }
  }
  return nullptr;
}

std::vector<TargetCheck> check_targets(const DeviceTarget& t, const DeviceAchieved& a) {
  std::vector<TargetCheck> out;
  if (t.min_tflops || t.target_tflops) {
    out.push_back(rate_check("tflops", "TFLOP/s", a.tflops, t.min_tflops, t.target_tflops,
                             "check that the heavy kernels run on tensor cores in a low-precision dtype (bf16/fp8, "
                             "dimensions multiples of 16), give each launch more work (larger batches, fused "
                             "kernels), and look at the roofline: memory-bound kernels cannot reach a compute target"));
  }
  if (t.min_gb_per_second || t.target_gb_per_second) {
    out.push_back(rate_check("gb_per_second", "GB/s", a.gb_per_second, t.min_gb_per_second, t.target_gb_per_second,
                             "coalesce memory accesses and use wide (128-bit) loads, fuse element-wise kernels so "
                             "data crosses DRAM once, and keep enough blocks in flight to hide latency"));
  }
  if (t.memory_budget_bytes) {
    out.push_back(budget_check("memory_bytes", "GiB", 1024.0 * 1024 * 1024, a.memory_peak_bytes, *t.memory_budget_bytes,
                               "lower the batch size or the KV-cache reservation, free cached allocator blocks, or "
                               "quantize weights"));
  }
  if (t.power_budget_watts) {
    out.push_back(budget_check("power_watts", "W", 1, a.power_avg_watts, *t.power_budget_watts,
                               "set a lower power limit or cap the SM clock, and compare latency: inference is "
                               "often memory-bound and loses little at a lower clock"));
  }
  return out;
}

}  // namespace perfscope::analysis
