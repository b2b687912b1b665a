#include "engine/series/series_store.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace perfscope {
namespace {

TEST(SampleRing, KeepsTheNewestSamplesInOrder) {
  SampleRing ring(4);
  for (int i = 1; i <= 10; ++i) ring.push({i, i * 10.0});
  ASSERT_EQ(ring.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(ring.at(i).ts_ns, static_cast<TimestampNs>(7 + i));
  EXPECT_EQ(ring.lower_bound(8), 1u);
  EXPECT_EQ(ring.lower_bound(0), 0u);
  EXPECT_EQ(ring.lower_bound(11), 4u);
}

// Late and interleaved samples take their place; what the ring does not keep lies before the
// time from which it holds everything, so reads take that part from the database. Jittered,
// fully shuffled (most samples far back) and reversed.
TEST(SampleRing, HoldsEverySampleFromItsCompleteTimeOn) {
  std::mt19937 rng(7);
  for (const std::size_t capacity : {std::size_t{1000}, std::size_t{64}}) {
    for (const char* order : {"jittered", "shuffled", "reversed"}) {
      SampleRing ring(capacity);
      std::vector<TimestampNs> sent;
      for (int i = 0; i < 700; ++i) sent.push_back(1000 + 10 * (i / 2));  // equal times in pairs
      if (std::string(order) == "jittered") {
        for (std::size_t i = 0; i + 4 < sent.size(); ++i) std::swap(sent[i], sent[i + rng() % 5]);
      } else if (std::string(order) == "shuffled") {
        std::shuffle(sent.begin(), sent.end(), rng);
      } else {
        std::reverse(sent.begin(), sent.end());
      }
      std::vector<TimestampNs> refused;
      for (TimestampNs t : sent) {
        if (!ring.push({t, 1.0})) refused.push_back(t);
      }
      SCOPED_TRACE(std::string(order) + ", capacity " + std::to_string(capacity));
      for (std::size_t i = 1; i < ring.size(); ++i) ASSERT_LE(ring.at(i - 1).ts_ns, ring.at(i).ts_ns);
      ASSERT_TRUE(ring.complete_from());
      const TimestampNs from = *ring.complete_from();
      for (TimestampNs t : refused) EXPECT_LT(t, from);
      std::sort(sent.begin(), sent.end());
      const auto first = std::lower_bound(sent.begin(), sent.end(), from);
      EXPECT_EQ(static_cast<std::size_t>(sent.end() - first), ring.size() - ring.lower_bound(from));
      if (capacity >= sent.size() && std::string(order) == "jittered") {
        EXPECT_LE(refused.size(), 4u);  // only those sent before a later first sample
      }
    }
  }
}

// A ring grows as its series' samples come, but never past its capacity: what the store
// holds approaches its bound, which /api/v1/info reports beside it.
TEST(SeriesStore, TheRingsHoldAtMostTheirCapacity) {
  SeriesStore store(10000);
  const SeriesId a = store.intern(SeriesKey("a", {}));
  const SeriesId b = store.intern(SeriesKey("b", {}));
  EXPECT_EQ(store.held_bytes(), 0u);
  EXPECT_EQ(store.held_limit_bytes(), 2u * 10000 * sizeof(Sample));
  for (TimestampNs t = 1; t <= 3000; ++t) store.append(a, t, 1.0);
  EXPECT_GE(store.held_bytes(), 3000 * sizeof(Sample));
  EXPECT_LT(store.held_bytes(), 10000 * sizeof(Sample));
  for (TimestampNs t = 3001; t <= 25000; ++t) store.append(a, t, 1.0);
  EXPECT_EQ(store.held_bytes(), 10000 * sizeof(Sample));  // full, and no slack past it
  for (TimestampNs t = 1; t <= 25000; ++t) store.append(b, t, 1.0);
  EXPECT_EQ(store.held_bytes(), store.held_limit_bytes());
  store.release(SeriesKey("b", {}));
  EXPECT_EQ(store.held_bytes(), 10000 * sizeof(Sample));
}

TEST(SeriesStore, InternIsStablePerKey) {
  SeriesStore store(10);
  SeriesId a = store.intern(SeriesKey("m", {{"b", "2"}, {"a", "1"}}));
  SeriesId b = store.intern(SeriesKey("m", {{"a", "1"}, {"b", "2"}}));
  SeriesId c = store.intern(SeriesKey("m", {{"a", "1"}}));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(store.series_count(), 2u);
  EXPECT_EQ(store.find(R"(m{a="1",b="2"})"), a);
  EXPECT_FALSE(store.find("nope").has_value());
}

TEST(SeriesStore, ReadReturnsRangeAndOldestHeld) {
  SeriesStore store(5);
  SeriesId id = store.intern(SeriesKey("m", {}));
  for (int i = 0; i < 8; ++i) store.append(id, 100 + i, i);
  SeriesRange r = store.read(id, 104, 106);
  ASSERT_EQ(r.samples.size(), 3u);
  EXPECT_EQ(r.samples.front().ts_ns, 104);
  EXPECT_EQ(r.samples.back().value, 6);
  ASSERT_TRUE(r.complete_from.has_value());
  EXPECT_EQ(*r.complete_from, 103);  // 100..102 fell out of the 5-sample ring
  auto snap = store.snapshot(id);
  ASSERT_TRUE(snap && snap->latest);
  EXPECT_EQ(snap->latest->value, 7);
  EXPECT_EQ(snap->held, 5u);
}

TEST(SeriesStore, AReleasedSeriesKeepsItsIdAndFreesItsSamples) {
  SeriesStore store(5);
  const SeriesKey key("gpu_process_memory_bytes", {{"pid", "7"}});
  SeriesId id = store.intern(key);
  SeriesId other = store.intern(SeriesKey("m", {}));
  for (int i = 0; i < 8; ++i) {
    store.append(id, 100 + i, i);
    store.append(other, 100 + i, i);
  }
  store.release(key);
  store.release(SeriesKey("never_seen", {}));  // ignored
  EXPECT_EQ(store.snapshot(id)->held, 0u);
  EXPECT_FALSE(store.snapshot(id)->latest);
  EXPECT_FALSE(store.read(id, 0, 1000).complete_from);  // all of it from the database now
  EXPECT_EQ(store.snapshot(other)->held, 5u);
  EXPECT_EQ(store.intern(key), id);
  store.append(id, 200, 1);  // a sample after all: a new ring
  EXPECT_EQ(store.snapshot(id)->held, 1u);
}

TEST(SeriesStore, BatchAppendsEverySeriesAtOneTime) {
  SeriesStore store(10);
  SampleBatch batch{42, {{store.intern(SeriesKey("a", {})), 1.0}, {store.intern(SeriesKey("b", {})), 2.0}}};
  store.append(batch);
  for (const SeriesSnapshot& s : store.list()) {
    ASSERT_TRUE(s.latest);
    EXPECT_EQ(s.latest->ts_ns, 42);
  }
}

TEST(SeriesStore, ConcurrentWritersAndReadersAgree) {
  SeriesStore store(1000);
  SeriesId id = store.intern(SeriesKey("m", {}));
  std::thread writer([&] {
    for (int i = 0; i < 20000; ++i) store.append(id, i, i);
  });
  std::size_t reads = 0;
  while (reads < 2000) {
    SeriesRange r = store.read(id, 0, 1 << 30);
    for (std::size_t i = 1; i < r.samples.size(); ++i) ASSERT_LT(r.samples[i - 1].ts_ns, r.samples[i].ts_ns);
    ++reads;
  }
  writer.join();
  EXPECT_EQ(store.read(id, 0, 1 << 30).samples.size(), 1000u);
}

}  // namespace
}  // namespace perfscope
