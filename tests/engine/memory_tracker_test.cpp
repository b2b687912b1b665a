#include "engine/memory_tracker.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace perfscope
