#include "engine/events/cardinality.hpp"

#include <gtest/gtest.h>

namespace perfscope {
namespace {

constexpr TimestampNs kHour = 3600'000'000'000;

KernelEvent kernel(std::string name, Tags tags = {}) {
  KernelEvent k;
  k.name = std::move(name);
  k.start_ns = 1;
  k.end_ns = 2;
  k.tags = std::move(tags);
  return k;
}

SampleEvent sample(std::string metric, Labels labels = {}) {
  SampleEvent s;
  s.metric = std::move(metric);
  s.labels = std::move(labels);
  s.value = 1;
  return s;
}

CardinalityLimits limits_of(std::string_view text) {
  CardinalityLimits l;
  EXPECT_TRUE(l.parse(text).ok()) << text;
  return l;
}

TEST(Cardinality, NamesPastTheCapFoldIntoOtherAndEventsAreKept) {
  CardinalityGuard guard(limits_of("kernel_name=3"));
  std::vector<Event> batch;
  for (int i = 0; i < 5; ++i) batch.push_back(kernel("k" + std::to_string(i)));
  batch.push_back(kernel("k1"));  // known: kept under its name
  std::size_t folded = 0;
  ASSERT_TRUE(guard.apply(batch, kHour, &folded).ok());
  ASSERT_EQ(batch.size(), 6u);
  EXPECT_EQ(std::get<KernelEvent>(batch[0]).name, "k0");
  EXPECT_EQ(std::get<KernelEvent>(batch[2]).name, "k2");
  EXPECT_EQ(std::get<KernelEvent>(batch[3]).name, kOtherValue);
  EXPECT_EQ(std::get<KernelEvent>(batch[4]).name, kOtherValue);
  EXPECT_EQ(std::get<KernelEvent>(batch[5]).name, "k1");
  EXPECT_EQ(folded, 2u);
  const auto stats = guard.stats();
  const DimensionStats& names = stats[static_cast<std::size_t>(Dimension::kKernelName)];
  EXPECT_EQ(names.distinct, 3u);
  EXPECT_EQ(names.limit, 3u);
  EXPECT_EQ(names.folded, 2u);
}

TEST(Cardinality, TagValuesAreCappedPerKeyAndNewKeysPastTheCapAreDropped) {
  CardinalityGuard guard(limits_of("tag_value=2,tag_key=2"));
  std::vector<Event> batch = {
      kernel("k", {{"req", "1"}, {"run", "a"}}),
      kernel("k", {{"req", "2"}, {"run", "a"}}),
      kernel("k", {{"req", "3"}, {"run", "b"}}),  // req=3 folds; run has room for b
      kernel("k", {{"extra", "x"}, {"run", "a"}}),  // a third key: dropped
  };
  ASSERT_TRUE(guard.apply(batch, kHour).ok());
  EXPECT_EQ(std::get<KernelEvent>(batch[2]).tags, (Tags{{"req", std::string(kOtherValue)}, {"run", "b"}}));
  EXPECT_EQ(std::get<KernelEvent>(batch[3]).tags, (Tags{{"run", "a"}}));
  const auto stats = guard.stats();
  EXPECT_EQ(stats[static_cast<std::size_t>(Dimension::kTagValue)].folded, 1u);
  EXPECT_EQ(stats[static_cast<std::size_t>(Dimension::kTagKey)].folded, 1u);
  EXPECT_EQ(stats[static_cast<std::size_t>(Dimension::kTagKey)].distinct, 2u);
}

TEST(Cardinality, TagValuesOfAllKeysTogetherHaveTheirOwnCap) {
  // Each key is under its own cap; together they pass all_tag_values (the key cap times the
  // per-key cap would otherwise be the only bound: 10^7 by default).
  CardinalityLimits limits = limits_of("tag_value=10,all_tag_values=4");
  limits.window = std::chrono::hours(1);
  CardinalityGuard guard(limits);
  std::vector<Event> batch = {
      kernel("k", {{"a", "1"}, {"b", "1"}}),
      kernel("k", {{"a", "2"}, {"c", "1"}}),
      kernel("k", {{"d", "1"}}),              // a fifth value: folded
      kernel("k", {{"a", "1"}, {"c", "1"}}),  // known values stay
  };
  std::size_t folded = 0;
  ASSERT_TRUE(guard.apply(batch, kHour, &folded).ok());
  EXPECT_EQ(std::get<KernelEvent>(batch[2]).tags, (Tags{{"d", std::string(kOtherValue)}}));
  EXPECT_EQ(std::get<KernelEvent>(batch[3]).tags, (Tags{{"a", "1"}, {"c", "1"}}));
  EXPECT_EQ(folded, 1u);
  auto stats = guard.stats();
  const DimensionStats& all = stats[static_cast<std::size_t>(Dimension::kAllTagValues)];
  EXPECT_EQ(all.distinct, 4u);
  EXPECT_EQ(all.limit, 4u);
  EXPECT_EQ(all.folded, 1u);
  EXPECT_EQ(stats[static_cast<std::size_t>(Dimension::kTagValue)].folded, 0u);

  // Values unseen for the window make room across keys: b=1 and a=2 were last seen an hour ago.
  std::vector<Event> later = {kernel("k", {{"a", "1"}, {"c", "1"}})};
  ASSERT_TRUE(guard.apply(later, 2 * kHour - 1).ok());
  std::vector<Event> next = {kernel("k", {{"e", "1"}, {"e2", "2"}, {"e3", "3"}})};
  ASSERT_TRUE(guard.apply(next, 2 * kHour + 1).ok());
  EXPECT_EQ(std::get<KernelEvent>(next[0]).tags, (Tags{{"e", "1"}, {"e2", "2"}, {"e3", std::string(kOtherValue)}}));
  stats = guard.stats();
  EXPECT_EQ(stats[static_cast<std::size_t>(Dimension::kAllTagValues)].distinct, 4u);
}

TEST(Cardinality, ARunNameCountsAsTheValueOfItsRunTag) {
  CardinalityGuard guard(limits_of("tag_value=1"));
  RunEvent r1, r2;
  r1.name = "first";
  r2.name = "second";
  std::vector<Event> batch = {kernel("k", {{"run", "first"}}), r1, r2, kernel("k", {{"run", "second"}})};
  ASSERT_TRUE(guard.apply(batch, kHour).ok());
  EXPECT_EQ(std::get<RunEvent>(batch[1]).name, "first");
  EXPECT_EQ(std::get<RunEvent>(batch[2]).name, kOtherValue);
  EXPECT_EQ(std::get<KernelEvent>(batch[3]).tags.front().second, kOtherValue);
}

TEST(Cardinality, NewCustomSeriesPastTheCapRefuseTheBatchAndChangeNothing) {
  CardinalityGuard guard(limits_of("series=2,kernel_name=1"));
  std::vector<Event> first = {sample("queue_depth", {{"pool", "a"}}), sample("queue_depth", {{"pool", "a"}})};
  ASSERT_TRUE(guard.apply(first, kHour).ok());

  std::vector<Event> batch = {kernel("k0"), kernel("k1"), sample("queue_depth", {{"pool", "b"}}),
                              sample("queue_depth", {{"pool", "c"}})};
  const Status s = guard.apply(batch, kHour);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "metric");
  EXPECT_NE(s.message().find("event 3"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("cap of 2"), std::string::npos) << s.message();
  EXPECT_EQ(std::get<KernelEvent>(batch[1]).name, "k1");  // untouched: nothing was applied
  auto stats = guard.stats();
  EXPECT_EQ(stats[static_cast<std::size_t>(Dimension::kSeries)].refused, 1u);
  EXPECT_EQ(stats[static_cast<std::size_t>(Dimension::kSeries)].distinct, 1u);
  EXPECT_EQ(stats[static_cast<std::size_t>(Dimension::kKernelName)].distinct, 0u);

  // Known series and one new one within the cap pass.
  std::vector<Event> ok = {sample("queue_depth", {{"pool", "a"}}), sample("queue_depth", {{"pool", "b"}})};
  EXPECT_TRUE(guard.apply(ok, kHour).ok());
  EXPECT_EQ(guard.stats()[static_cast<std::size_t>(Dimension::kSeries)].distinct, 2u);
}

TEST(Cardinality, ValuesUnseenForTheWindowMakeRoom) {
  CardinalityLimits limits = limits_of("kernel_name=2");
  limits.window = std::chrono::hours(1);
  CardinalityGuard guard(limits);
  std::vector<Event> day1 = {kernel("old"), kernel("kept")};
  ASSERT_TRUE(guard.apply(day1, kHour).ok());
  std::vector<Event> later = {kernel("kept")};
  ASSERT_TRUE(guard.apply(later, kHour + kHour / 2).ok());
  std::vector<Event> next = {kernel("new")};
  ASSERT_TRUE(guard.apply(next, 2 * kHour + 1).ok());
  EXPECT_EQ(std::get<KernelEvent>(next[0]).name, "new");  // "old" was unseen for over an hour
  std::vector<Event> again = {kernel("old")};
  ASSERT_TRUE(guard.apply(again, 2 * kHour + 2).ok());
  EXPECT_EQ(std::get<KernelEvent>(again[0]).name, kOtherValue);  // full, and the last sweep was just now
}

TEST(Cardinality, ZeroMeansNoCap) {
  CardinalityGuard guard(limits_of("kernel_name=0"));
  std::vector<Event> batch;
  for (int i = 0; i < 20000; ++i) batch.push_back(kernel("k" + std::to_string(i)));
  ASSERT_TRUE(guard.apply(batch, kHour).ok());
  EXPECT_EQ(std::get<KernelEvent>(batch.back()).name, "k19999");
  EXPECT_EQ(guard.stats()[static_cast<std::size_t>(Dimension::kKernelName)].distinct, 20000u);
}

TEST(Cardinality, LimitsParseNamesAndRejectWhatIsNot) {
  CardinalityLimits l;
  EXPECT_TRUE(l.parse("kernel_name=5, series=7").ok() == false);  // spaces are not names
  EXPECT_TRUE(l.parse("kernel_name=5,series=7").ok());
  EXPECT_EQ(l[Dimension::kKernelName], 5u);
  EXPECT_EQ(l[Dimension::kSeries], 7u);
  EXPECT_EQ(l[Dimension::kModel], 1000u);
  for (std::string_view bad : {"kernels=5", "kernel_name", "kernel_name=", "kernel_name=-1", "kernel_name=5x"}) {
    const Status s = l.parse(bad);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.field(), "cardinality_limit");
  }
}

}  // namespace
}  // namespace perfscope
