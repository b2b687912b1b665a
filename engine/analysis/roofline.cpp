#include "engine/analysis/roofline.hpp"

#include <algorithm>

namespace perfscope::analysis {

void KernelWork::add(const KernelEvent& series, std::uint64_t count, std::int64_t total_ns) {
  if (total_ns <= 0) return;  // work done in no measurable time says nothing of a rate
  const double n = static_cast<double>(count), ns = static_cast<double>(total_ns);
  if (series.flops) {
    flops += *series.flops * n;
    flops_ns += ns;
  }
  if (series.bytes) {
    bytes += *series.bytes * n;
    bytes_ns += ns;
  }
  if (series.flops && series.bytes) {
    paired_flops += *series.flops * n;
    paired_bytes += *series.bytes * n;
    paired_ns += ns;
  }
}

void KernelWork::merge(const KernelWork& o) {
  flops += o.flops;
  flops_ns += o.flops_ns;
  bytes += o.bytes;
  bytes_ns += o.bytes_ns;
  paired_flops += o.paired_flops;
  paired_bytes += o.paired_bytes;
  paired_ns += o.paired_ns;
}

std::optional<double> KernelWork::flops_per_second() const {
  return flops_ns > 0 ? std::optional<double>(flops / (flops_ns / 1e9)) : std::nullopt;
}

std::optional<double> KernelWork::bytes_per_second() const {
  return bytes_ns > 0 ? std::optional<double>(bytes / (bytes_ns / 1e9)) : std::nullopt;
}

std::optional<double> KernelWork::arithmetic_intensity() const {
  return paired_bytes > 0 ? std::optional<double>(paired_flops / paired_bytes) : std::nullopt;
}

double Ceilings::attainable(double intensity) const {
  return std::min(flops_per_second, intensity * bytes_per_second);
}

std::optional<RooflinePoint> place_on_roofline(const KernelWork& work, const Ceilings& c) {
  if (work.paired_ns <= 0 || work.paired_bytes <= 0 || !(c.flops_per_second > 0) || !(c.bytes_per_second > 0)) {
    return std::nullopt;
  }
  RooflinePoint p;
  const double seconds = work.paired_ns / 1e9;
  p.intensity = work.paired_flops / work.paired_bytes;
  p.achieved_flops_per_second = work.paired_flops / seconds;
  p.attainable_flops_per_second = c.attainable(p.intensity);
  p.fraction_of_attainable = p.attainable_flops_per_second > 0 ? p.achieved_flops_per_second / p.attainable_flops_per_second : 0;
  p.achieved_bytes_per_second = work.paired_bytes / seconds;
  p.fraction_of_peak_bandwidth = p.achieved_bytes_per_second / c.bytes_per_second;
  p.memory_bound = p.intensity < c.ridge();
  return p;
}

}  // namespace perfscope::analysis
