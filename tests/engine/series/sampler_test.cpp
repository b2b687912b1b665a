#include "engine/series/sampler.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace perfscope {
namespace {

// A collector of the test's own: counts its passes and reports the count.
class CountingCollector final : public Collector {
 public:
  std::string_view name() const override { return "counting"; }
  std::vector<MetricFamily> families() const override {
    return {{"test_passes_total", "", MetricType::kCounter, "passes"}};
  }
  std::vector<SourceStatus> sources() const override { return {{"counter", true, "memory"}}; }
  void collect(TimestampNs, std::vector<Reading>& out) override {
    ++passes;
    out.push_back(Reading{SeriesKey("test_passes_total", {{"n", "a"}}), static_cast<double>(passes)});
    out.push_back(Reading{SeriesKey("test_passes_total", {{"n", "b"}}), static_cast<double>(passes) * 2});
  }
  int passes = 0;
};

TEST(Sampler, OnePassInternsAppendsAndNotifiesSinks) {
  SeriesStore store(100);
  Sampler sampler(store, std::chrono::milliseconds(100));
  sampler.add_collector(std::make_unique<CountingCollector>());
  std::shared_ptr<const SampleBatch> seen;
  sampler.add_sink([&](const std::shared_ptr<const SampleBatch>& b) { seen = b; });

  auto batch = sampler.sample_once();
  ASSERT_EQ(batch, seen);
  ASSERT_EQ(batch->values.size(), 2u);
  EXPECT_GT(batch->ts_ns, 0);
  EXPECT_EQ(store.series_count(), 2u);
  auto family = store.family("test_passes_total");
  ASSERT_TRUE(family.has_value());
  EXPECT_EQ(family->type, MetricType::kCounter);
  auto id = store.find(R"(test_passes_total{n="b"})");
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(store.snapshot(*id)->latest->value, 2.0);
}

TEST(Sampler, ThreadRunsPassesAtTheIntervalUntilStopped) {
  SeriesStore store(1000);
  Sampler sampler(store, std::chrono::milliseconds(10));
  sampler.add_collector(std::make_unique<CountingCollector>());
  std::atomic<int> batches{0};
  std::atomic<TimestampNs> last_ts{0};
  bool ordered = true;
  sampler.add_sink([&](const std::shared_ptr<const SampleBatch>& b) {
    if (b->ts_ns <= last_ts.load()) ordered = false;
    last_ts = b->ts_ns;
    ++batches;
  });
  sampler.start();
  while (batches.load() < 5) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  sampler.stop();
  int after_stop = batches.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(batches.load(), after_stop);
  EXPECT_TRUE(ordered);
  EXPECT_EQ(sampler.passes(), static_cast<std::uint64_t>(after_stop));
}

// A collector whose part of a pass takes at least `delay`.
class SlowCollector final : public Collector {
 public:
  explicit SlowCollector(std::chrono::milliseconds delay) : delay_(delay) {}
  std::string_view name() const override { return "slow"; }
  std::vector<MetricFamily> families() const override { return {}; }
  std::vector<SourceStatus> sources() const override { return {}; }
  void collect(TimestampNs, std::vector<Reading>&) override { std::this_thread::sleep_for(delay_); }

 private:
  std::chrono::milliseconds delay_;
};

TEST(Sampler, EachCollectorsPartOfAPassIsTimedOnItsOwn) {
  SeriesStore store(100);
  Sampler sampler(store, std::chrono::milliseconds(100));
  sampler.add_collector(std::make_unique<CountingCollector>());
  sampler.add_collector(std::make_unique<SlowCollector>(std::chrono::milliseconds(30)));
  EXPECT_EQ(sampler.collector_timings()[1].passes, 0u);
  sampler.sample_once();
  sampler.sample_once();
  const std::vector<CollectorTiming> t = sampler.collector_timings();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].name, "counting");
  EXPECT_EQ(t[1].name, "slow");
  EXPECT_EQ(t[0].passes, 2u);
  EXPECT_EQ(t[1].passes, 2u);
  EXPECT_GE(t[1].last_seconds, 0.030);
  EXPECT_GE(t[1].total_seconds, 0.060);
  EXPECT_GE(t[1].total_seconds, t[1].last_seconds);
  // The quick one is not charged with the slow one's time.
  EXPECT_LT(t[0].total_seconds, t[1].total_seconds);
}

}  // namespace
}  // namespace perfscope
