// Records as CUPTI gives them, for the tracing tests (tests/server/trace/): a
// kernel with its launch configuration, its runtime launch call, and a tag's value.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "server/trace/trace_records.hpp"

namespace perfscope::trace {

inline KernelRecord kernel(std::uint32_t correlation, std::uint64_t start, std::string name = "_Z11tiny_kernelPii") {
  KernelRecord k;
  k.name = std::move(name);
  k.correlation_id = correlation;
  k.device = 0;
  k.stream = 7;
  k.start_ns = start;
  k.end_ns = start + 1500;
  k.grid = {4, 1, 1};
  k.block = {256, 1, 1};
  k.registers_per_thread = 16;
  k.static_shared_bytes = 1024;
  k.dynamic_shared_bytes = 512;
  return k;
}

inline ApiRecord call(std::uint32_t correlation, std::uint64_t start) { return ApiRecord{correlation, 211, start, start + 3000, 42}; }

inline std::string tag(const Tags& tags, const std::string& key) {
  for (const auto& [k, v] : tags) {
    if (k == key) return v;
  }
  return "(absent)";
}

}  // namespace perfscope::trace
