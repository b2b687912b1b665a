#include "engine/series/downsample.hpp"

#include <gtest/gtest.h>

namespace perfscope {
namespace {

TEST(BucketWidth, SpansTheRangeInAtMostMaxPoints) {
  EXPECT_EQ(bucket_width(0, 99, 10), 10);
  EXPECT_EQ(bucket_width(0, 100, 10), 11);
  EXPECT_EQ(bucket_width(5, 5, 10), 1);
  for (TimestampNs span : {7, 999, 123457}) {
    TimestampNs w = bucket_width(1000, 1000 + span, 13);
    EXPECT_LE((span / w) + 1, 13) << span;
  }
}

TEST(BucketGrid, AggregatesMinMaxAvgCount) {
  BucketGrid grid(0, 10);
  for (int i = 0; i < 30; ++i) grid.add(Sample{i, static_cast<double>(i % 10)});
  auto buckets = grid.buckets();
  ASSERT_EQ(buckets.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(buckets[i].start_ns, static_cast<TimestampNs>(i * 10));
    EXPECT_EQ(buckets[i].min, 0);
    EXPECT_EQ(buckets[i].max, 9);
    EXPECT_EQ(buckets[i].count, 10u);
    EXPECT_DOUBLE_EQ(buckets[i].avg(), 4.5);
  }
}

TEST(BucketGrid, PartialBucketsMergeLikeRawSamples) {
  // The database's part of a bucket and memory's part must merge into what one pass over
  // all samples gives.
  BucketGrid all(0, 10), split(0, 10);
  Bucket partial{12, 1e9, -1e9, 0, 0};
  for (int i = 12; i < 16; ++i) {
    all.add(Sample{i, i * 1.5});
    partial.min = std::min(partial.min, i * 1.5);
    partial.max = std::max(partial.max, i * 1.5);
    partial.sum += i * 1.5;
    ++partial.count;
  }
  split.add(partial);
  for (int i = 16; i < 20; ++i) {
    all.add(Sample{i, i * 1.5});
    split.add(Sample{i, i * 1.5});
  }
  auto a = all.buckets(), b = split.buckets();
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].count, b[0].count);
  EXPECT_DOUBLE_EQ(a[0].sum, b[0].sum);
  EXPECT_EQ(a[0].min, b[0].min);
  EXPECT_EQ(a[0].max, b[0].max);
  EXPECT_EQ(b[0].start_ns, 10);
}

}  // namespace
}  // namespace perfscope
