#include "engine/events/memory_tracker.hpp"

#include <algorithm>

#include "engine/base/saturating.hpp"

namespace perfscope {

void merge_into(MemoryStatistics& into, const MemoryStatistics& from) {
  auto merge = [](MemoryCounters& a, const MemoryCounters& b) {
    // Byte sums hold at 2^64 - 1: bounded allocations add up past it (16,384 of 1 PiB).
    a.current_bytes = saturating_add(a.current_bytes, b.current_bytes);
    a.peak_bytes = saturating_add(a.peak_bytes, b.peak_bytes);
    a.total_allocated_bytes = saturating_add(a.total_allocated_bytes, b.total_allocated_bytes);
    a.allocation_count += b.allocation_count;
    a.free_count += b.free_count;
  };
  merge(into.all, from.all);
  for (const auto& [kind, c] : from.by_kind) merge(into.by_kind[kind], c);
  into.live_allocations += from.live_allocations;
  into.unmatched_frees += from.unmatched_frees;
  merge(into.module_statics, from.module_statics);
}

bool is_module_static(const MemoryEvent& event) {
  return event.tag == "device_static" || event.tag == "managed_static";
}

namespace {
// Where an allocation lives in the maps: its process and its address.
std::string live_key(std::string_view process, const std::string& address) {
  if (process.empty()) return address;
  std::string key(process);
  key += '/';
  key += address;
  return key;
}
}  // namespace

void MemoryTracker::add(MemoryCounters& c, std::uint64_t bytes) {
  c.current_bytes = saturating_add(c.current_bytes, bytes);
  c.total_allocated_bytes = saturating_add(c.total_allocated_bytes, bytes);
  c.peak_bytes = std::max(c.peak_bytes, c.current_bytes);
  ++c.allocation_count;
}

void MemoryTracker::remove(MemoryCounters& c, std::uint64_t bytes) {
  c.current_bytes -= std::min(c.current_bytes, bytes);
  ++c.free_count;
}

void MemoryTracker::apply(MemoryEvent& e) {
  std::lock_guard lock(mu_);
  DeviceState& d = devices_[e.device];
  const std::string_view process = tag_value(e.tags, "pid");
  const std::string key = live_key(process, e.address);
  // Module statics are kept apart: a map and counters of their own, nothing by kind.
  const bool module_static = is_module_static(e);
  auto& live = module_static ? d.statics : d.live;
  auto count = [&](MemoryKind kind, std::uint64_t bytes, bool allocated) {
    void (*change)(MemoryCounters&, std::uint64_t) = allocated ? &MemoryTracker::add : &MemoryTracker::remove;
    if (module_static) return change(d.stats.module_statics, bytes);
    change(d.stats.all, bytes);
    change(d.stats.by_kind[std::string(to_string(kind))], bytes);
  };
  if (e.op == MemoryOp::kAlloc) {
    // An allocation at a live address means its free was never reported: retire the old one.
    if (auto old = live.find(key); old != live.end()) {
      count(old->second.kind, old->second.size_bytes, false);
      live.erase(old);
    }
    count(e.kind, e.size_bytes, true);
    live[key] = LiveAllocation{e.device, e.address, e.size_bytes, e.kind, e.tag, e.ts_ns, std::string(process),
                               std::string(tag_value(e.tags, "run"))};
  } else {
    auto it = live.find(key);
    if (it == live.end()) {
      if (!module_static) ++d.stats.unmatched_frees;
      e.size_bytes = 0;
      return;
    }
    e.size_bytes = it->second.size_bytes;
    e.kind = it->second.kind;
    if (e.tag.empty()) e.tag = it->second.tag;
    count(e.kind, e.size_bytes, false);
    live.erase(it);
  }
  d.stats.live_allocations = d.live.size();
}

void MemoryTracker::clear() {
  std::lock_guard lock(mu_);
  devices_.clear();
}

MemoryStatistics MemoryTracker::statistics(const std::string& device) const {
  std::lock_guard lock(mu_);
  if (!device.empty()) {
    auto it = devices_.find(device);
    return it == devices_.end() ? MemoryStatistics{} : it->second.stats;
  }
  MemoryStatistics total;
  for (const auto& [name, d] : devices_) merge_into(total, d.stats);
  return total;
}

template <typename Less>
std::vector<LiveAllocation> MemoryTracker::select_live(std::size_t n, const std::string& device, Less less) const {
  std::lock_guard lock(mu_);
  std::vector<LiveAllocation> out;
  for (const auto& [name, d] : devices_) {
    if (!device.empty() && name != device) continue;
    for (const auto& [addr, a] : d.live) out.push_back(a);
  }
  if (out.size() > n) {
    std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n), out.end(), less);
    out.resize(n);
  } else {
    std::sort(out.begin(), out.end(), less);
  }
  return out;
}

std::vector<LiveAllocation> MemoryTracker::largest(std::size_t n, const std::string& device) const {
  return select_live(n, device, [](const LiveAllocation& a, const LiveAllocation& b) {
    return a.size_bytes != b.size_bytes ? a.size_bytes > b.size_bytes : a.ts_ns < b.ts_ns;
  });
}

std::vector<LiveAllocation> MemoryTracker::oldest(std::size_t n, const std::string& device) const {
  return select_live(n, device, [](const LiveAllocation& a, const LiveAllocation& b) {
    return a.ts_ns != b.ts_ns ? a.ts_ns < b.ts_ns : a.size_bytes > b.size_bytes;
  });
}

std::vector<LiveAllocation> MemoryTracker::live_of_run(const std::string& run) const {
  std::lock_guard lock(mu_);
  std::vector<LiveAllocation> out;
  for (const auto& [name, d] : devices_) {
    for (const auto* map : {&d.live, &d.statics}) {
      for (const auto& [key, a] : *map) {
        if (a.run == run) out.push_back(a);
      }
    }
  }
  // In allocation order, so the frees written for them are too.
  std::sort(out.begin(), out.end(), [](const LiveAllocation& a, const LiveAllocation& b) { return a.ts_ns < b.ts_ns; });
  return out;
}

std::vector<std::string> MemoryTracker::devices() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, d] : devices_) out.push_back(name);
  return out;
}

}  // namespace perfscope
