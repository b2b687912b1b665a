// MemoryTracker: live allocations and their statistics, from alloc/free events in arrival
// order — current, peak and total allocated bytes, allocation and free counts, by device and
// by kind, and the largest live allocations. A free carries no size of its own: apply()
// fills it in from the matching allocation. Addresses are keyed by process (the `pid` tag):
// two processes reuse the same virtual addresses. CUDA module statics are counted apart
// (module_statics), never as allocations.
//
// Thread-safety: every method is safe from any thread (one internal mutex).
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/events/events.hpp"

namespace perfscope {

struct MemoryCounters {
  std::uint64_t current_bytes = 0;
  std::uint64_t peak_bytes = 0;
  std::uint64_t total_allocated_bytes = 0;
  std::uint64_t allocation_count = 0;
  std::uint64_t free_count = 0;
};

// CUDA module statics: memory a module holds while it is loaded (CUPTI's device_static and
// managed_static records, reported as modules load lazily), not allocations a program made.
bool is_module_static(const MemoryEvent& event);

struct MemoryStatistics {
  MemoryCounters all;  // allocations only: module statics are apart
  std::map<std::string, MemoryCounters> by_kind;  // "device", "shared", "host"
  std::uint64_t live_allocations = 0;
  std::uint64_t unmatched_frees = 0;  // frees of addresses with no live allocation
  MemoryCounters module_statics;
};

// Adds one set of statistics into another (devices or monitors summed). Peaks add up to an
// upper bound, since devices peak at different times — what capacity planning needs.
void merge_into(MemoryStatistics& into, const MemoryStatistics& from);

struct LiveAllocation {
  std::string device;
  std::string address;
  std::uint64_t size_bytes = 0;
  MemoryKind kind = MemoryKind::kDevice;
  std::string tag;
  TimestampNs ts_ns = 0;
  std::string process;  // the pid tag, empty for in-process producers
  std::string run;      // the run tag, empty outside runs
};

class MemoryTracker {
 public:
  // Applies one event; for a free, sets size_bytes and kind from its allocation.
  void apply(MemoryEvent& event);
  void clear();

  // All devices together when device is empty.
  MemoryStatistics statistics(const std::string& device = {}) const;
  std::vector<LiveAllocation> largest(std::size_t n, const std::string& device = {}) const;
  // The n longest-lived allocations still live, oldest first.
  std::vector<LiveAllocation> oldest(std::size_t n, const std::string& device = {}) const;
  std::vector<std::string> devices() const;
  // Every live allocation of one run (what its processes still held when it ended).
  std::vector<LiveAllocation> live_of_run(const std::string& run) const;

 private:
  struct DeviceState {
    MemoryStatistics stats;
    std::unordered_map<std::string, LiveAllocation> live;     // by process and address
    std::unordered_map<std::string, LiveAllocation> statics;  // module statics, likewise
  };
  template <typename Less>
  std::vector<LiveAllocation> select_live(std::size_t n, const std::string& device, Less less) const;
  static void add(MemoryCounters& c, std::uint64_t bytes);
  static void remove(MemoryCounters& c, std::uint64_t bytes);

  mutable std::mutex mu_;
  std::map<std::string, DeviceState> devices_;  // guarded by mu_
};

}  // namespace perfscope
