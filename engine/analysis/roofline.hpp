// The work kernels report (KernelEvent::flops/bytes/dtype) as rates, and their place on a
// GPU's roofline: attainable FLOP/s at an arithmetic intensity I is min(peak FLOP/s of the
// dtype, I × peak DRAM bytes/s); below the ridge point (peak FLOP/s ÷ peak bytes/s) a kernel is
// memory-bound, above it compute-bound; its achieved FLOP/s over the attainable is how far it
// is from its ceiling.
//
// Rates are work over the time of the executions that reported it (the kernel's own time, not
// the wall clock). Value types and pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/events/events.hpp"

namespace perfscope::analysis {

struct KernelWork {
  double flops = 0, flops_ns = 0;  // FLOPs reported, and the time of the executions that did
  double bytes = 0, bytes_ns = 0;
  double paired_flops = 0, paired_bytes = 0, paired_ns = 0;  // executions that reported both

  // `count` executions of `series` (its flops/bytes are per execution) taking `total_ns`;
  // executions of no measurable time (start = end) are left out, work and time alike.
  void add(const KernelEvent& series, std::uint64_t count, std::int64_t total_ns);
  void merge(const KernelWork& other);
  bool empty() const { return flops_ns == 0 && bytes_ns == 0; }
  std::optional<double> flops_per_second() const;
  std::optional<double> bytes_per_second() const;
  std::optional<double> arithmetic_intensity() const;  // FLOP per byte, of the paired executions
};

// One dtype's compute ceiling and the DRAM ceiling of one GPU.
struct Ceilings {
  double flops_per_second = 0;
  double bytes_per_second = 0;
  double ridge() const { return flops_per_second / bytes_per_second; }  // FLOP per byte
  double attainable(double intensity) const;                           // FLOP/s
};

struct RooflinePoint {
  double intensity = 0;  // FLOP per byte
  double achieved_flops_per_second = 0;
  double attainable_flops_per_second = 0;
  double fraction_of_attainable = 0;
  double achieved_bytes_per_second = 0;
  double fraction_of_peak_bandwidth = 0;
  bool memory_bound = false;  // intensity below the ridge point
};

// None when no execution reported both FLOPs and bytes, or the ceilings are not positive.
std::optional<RooflinePoint> place_on_roofline(const KernelWork& work, const Ceilings& ceilings);

}  // namespace perfscope::analysis
