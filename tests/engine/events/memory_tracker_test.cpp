#include "engine/events/memory_tracker.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace perfscope {
namespace {

MemoryEvent alloc(const char* addr, std::uint64_t size, MemoryKind kind = MemoryKind::kDevice, const char* device = "0") {
  MemoryEvent e;
  e.op = MemoryOp::kAlloc;
  e.address = addr;
  e.size_bytes = size;
  e.kind = kind;
  e.device = device;
  return e;
}

MemoryEvent free_of(const char* addr, const char* device = "0") {
  MemoryEvent e;
  e.op = MemoryOp::kFree;
  e.address = addr;
  e.device = device;
  return e;
}

TEST(MemoryTracker, CurrentPeakTotalAndCounts) {
  MemoryTracker t;
  auto a = alloc("a", 100), b = alloc("b", 300, MemoryKind::kHost), fa = free_of("a"), c = alloc("c", 50);
  t.apply(a);
  t.apply(b);
  t.apply(fa);
  EXPECT_EQ(fa.size_bytes, 100u) << "a free learns its size from the allocation";
  t.apply(c);
  MemoryStatistics s = t.statistics();
  EXPECT_EQ(s.all.current_bytes, 350u);
  EXPECT_EQ(s.all.peak_bytes, 400u);
  EXPECT_EQ(s.all.total_allocated_bytes, 450u);
  EXPECT_EQ(s.all.allocation_count, 3u);
  EXPECT_EQ(s.all.free_count, 1u);
  EXPECT_EQ(s.live_allocations, 2u);
  EXPECT_EQ(s.by_kind.at("host").current_bytes, 300u);
  EXPECT_EQ(s.by_kind.at("device").current_bytes, 50u);
  EXPECT_EQ(s.by_kind.at("device").peak_bytes, 100u);
  auto top = t.largest(1);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].address, "b");
}

// Each allocation is bounded (2^50 bytes, 1 PiB), but 16,384 of them reach 2^64: the sums hold
// at 2^64 - 1 instead of wrapping to a small figure (20,000 allocations read as 3.6 EiB).
TEST(MemoryTracker, ByteSumsHoldAtTheirBoundInsteadOfWrapping) {
  MemoryTracker t;
  constexpr std::uint64_t kPiB = std::uint64_t{1} << 50;
  for (int i = 0; i < 20000; ++i) {
    auto e = alloc(("p" + std::to_string(i)).c_str(), kPiB);
    t.apply(e);
  }
  auto last = alloc("last", 1);
  t.apply(last);
  MemoryStatistics s = t.statistics();
  EXPECT_EQ(s.all.current_bytes, UINT64_MAX);
  EXPECT_EQ(s.all.total_allocated_bytes, UINT64_MAX);
  EXPECT_EQ(s.all.peak_bytes, UINT64_MAX);
  EXPECT_EQ(s.all.allocation_count, 20001u);
  // Summed over devices too.
  MemoryStatistics both = s;
  merge_into(both, s);
  EXPECT_EQ(both.all.current_bytes, UINT64_MAX);
}

TEST(MemoryTracker, UnmatchedFreesAndReusedAddresses) {
  MemoryTracker t;
  auto f = free_of("nowhere");
  t.apply(f);
  EXPECT_EQ(f.size_bytes, 0u);
  EXPECT_EQ(t.statistics().unmatched_frees, 1u);
  auto a1 = alloc("x", 10), a2 = alloc("x", 20);  // the free of the first was never seen
  t.apply(a1);
  t.apply(a2);
  EXPECT_EQ(t.statistics().all.current_bytes, 20u);
  EXPECT_EQ(t.statistics().live_allocations, 1u);
}

TEST(MemoryTracker, DevicesAreSeparate) {
  MemoryTracker t;
  auto a = alloc("p", 10, MemoryKind::kDevice, "0"), b = alloc("p", 30, MemoryKind::kDevice, "1");
  t.apply(a);
  t.apply(b);
  EXPECT_EQ(t.statistics("0").all.current_bytes, 10u);
  EXPECT_EQ(t.statistics("1").all.current_bytes, 30u);
  EXPECT_EQ(t.statistics().all.current_bytes, 40u);
  auto f = free_of("p", "1");
  t.apply(f);
  EXPECT_EQ(f.size_bytes, 30u);
  EXPECT_EQ(t.statistics("0").all.current_bytes, 10u);
  EXPECT_EQ(t.devices(), (std::vector<std::string>{"0", "1"}));
}

MemoryEvent tagged(MemoryEvent e, const char* pid, const char* run, const char* tag = "") {
  e.tags = {{"pid", pid}, {"run", run}};
  e.tag = tag;
  return e;
}

TEST(MemoryTracker, ModuleStaticsAreApartFromAllocations) {
  MemoryTracker t;
  auto s1 = tagged(alloc("0x10", 4), "7", "r", "device_static");
  auto s2 = tagged(alloc("0x20", 4), "7", "r", "managed_static");
  auto a = tagged(alloc("0x30", 1000), "7", "r", "device");
  t.apply(s1);
  t.apply(s2);
  t.apply(a);
  MemoryStatistics s = t.statistics();
  EXPECT_EQ(s.all.current_bytes, 1000u) << "statics are not allocations";
  EXPECT_EQ(s.all.allocation_count, 1u);
  EXPECT_EQ(s.live_allocations, 1u);
  EXPECT_EQ(s.module_statics.current_bytes, 8u);
  EXPECT_EQ(s.module_statics.allocation_count, 2u);
  ASSERT_EQ(t.oldest(10).size(), 1u) << "statics are never leak suspects";
  EXPECT_EQ(t.oldest(10)[0].address, "0x30");
}

TEST(MemoryTracker, AddressesAreKeptPerProcess) {
  MemoryTracker t;
  auto a = tagged(alloc("0x7f00", 100), "11", "one"), b = tagged(alloc("0x7f00", 300), "12", "two");
  t.apply(a);
  t.apply(b);
  EXPECT_EQ(t.statistics().all.current_bytes, 400u) << "the same address in two processes is two allocations";
  auto f = tagged(free_of("0x7f00"), "12", "two");
  t.apply(f);
  EXPECT_EQ(f.size_bytes, 300u) << "the free is matched within its own process";
  EXPECT_EQ(t.statistics().all.current_bytes, 100u);
  EXPECT_EQ(t.statistics().unmatched_frees, 0u);
}

TEST(MemoryTracker, LiveOfRunListsWhatItsProcessesHold) {
  MemoryTracker t;
  auto a = tagged(alloc("1", 10), "5", "mine"), b = tagged(alloc("2", 20), "6", "other"),
       st = tagged(alloc("3", 4), "5", "mine", "device_static"), c = tagged(alloc("4", 30), "5", "mine");
  for (MemoryEvent* e : {&a, &b, &st, &c}) t.apply(*e);
  auto live = t.live_of_run("mine");
  ASSERT_EQ(live.size(), 3u) << "its allocations and its module statics";
  for (const auto& l : live) EXPECT_EQ(l.run, "mine");
  EXPECT_EQ(live.front().process, "5");
  EXPECT_TRUE(t.live_of_run("nobody").empty());
}

}  // namespace
}  // namespace perfscope
