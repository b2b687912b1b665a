#include "db/series_history.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "db/writer.hpp"
#include "support/temp_dir.hpp"

namespace perfscope::db {
namespace {

using perfscope::testing::TempDir;

// Memory holds the newest 10 samples of each series; everything also goes to the database.
class SeriesHistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_.declare({"load", "", MetricType::kGauge, "load"});
    a_ = store_.intern(SeriesKey("load", {{"host", "a"}}));
    b_ = store_.intern(SeriesKey("load", {{"host", "b"}}));
    auto w = Writer::open(dir_.file("h.db"), store_, memory_);
    ASSERT_TRUE(w.ok());
    writer_ = std::move(*w);
    for (TimestampNs t = 0; t < 100; ++t) {
      auto b = std::make_shared<const SampleBatch>(SampleBatch{t, {{a_, static_cast<double>(t)}, {b_, 1000.0 + t}}});
      store_.append(*b);
      writer_->enqueue(b);
    }
    writer_->flush();
    auto r = SampleReader::open(dir_.file("h.db"));
    ASSERT_TRUE(r.ok());
    reader_ = std::move(*r);
  }

  TempDir dir_;
  SeriesStore store_{10};
  SeriesId a_ = 0, b_ = 0;
  MemoryTracker memory_;
  std::unique_ptr<Writer> writer_;
  std::unique_ptr<SampleReader> reader_;
};

TEST_F(SeriesHistoryTest, RawRangeSpansDatabaseAndMemoryWithoutDuplicates) {
  SeriesHistory history(store_, reader_.get());
  auto r = history.query(HistoryQuery{"load", {{"host", "a"}}, 50, 99, 1000});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 1u);
  const SeriesData& d = (*r)[0];
  EXPECT_FALSE(d.downsampled);
  ASSERT_EQ(d.samples.size(), 50u);
  for (std::size_t i = 0; i < d.samples.size(); ++i) {
    EXPECT_EQ(d.samples[i].ts_ns, static_cast<TimestampNs>(50 + i));
    EXPECT_EQ(d.samples[i].value, static_cast<double>(50 + i));
  }
  EXPECT_EQ(d.from_memory, 10u);
  EXPECT_EQ(d.from_database, 40u);
}

TEST_F(SeriesHistoryTest, LongRangesComeBackAsBuckets) {
  SeriesHistory history(store_, reader_.get());
  auto r = history.query(HistoryQuery{"load", {{"host", "b"}}, 0, 99, 10});
  ASSERT_TRUE(r.ok());
  const SeriesData& d = (*r)[0];
  ASSERT_TRUE(d.downsampled);
  EXPECT_EQ(d.bucket_ns, 10);
  ASSERT_EQ(d.buckets.size(), 10u);
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < d.buckets.size(); ++i) {
    const Bucket& b = d.buckets[i];
    EXPECT_EQ(b.count, 10u);
    EXPECT_EQ(b.min, 1000.0 + 10 * i);
    EXPECT_EQ(b.max, 1000.0 + 10 * i + 9);
    EXPECT_DOUBLE_EQ(b.avg(), 1000.0 + 10 * i + 4.5);
    total += b.count;
  }
  EXPECT_EQ(total, 100u);  // the bucket straddling memory and database counted once
}

TEST_F(SeriesHistoryTest, NameGlobsAndLabelMatchersSelectSeries) {
  SeriesHistory history(store_, reader_.get());
  auto both = history.query(HistoryQuery{"lo*", {}, 0, 99, 1000});
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->size(), 2u);
  auto none = history.query(HistoryQuery{"load", {{"host", "c"}}, 0, 99, 1000});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_FALSE(history.query(HistoryQuery{"load", {}, 10, 5, 1000}).ok());
}

TEST_F(SeriesHistoryTest, AfterARestartHistoryComesFromTheDatabase) {
  SeriesStore fresh(10);  // a new process: memory knows nothing yet
  SeriesHistory history(fresh, reader_.get());
  auto list = history.list();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_FALSE((*list)[0].live);
  ASSERT_TRUE((*list)[0].latest.has_value());
  EXPECT_EQ((*list)[0].latest->ts_ns, 99);
  EXPECT_EQ((*list)[0].family.help, "load");
  auto r = history.query(HistoryQuery{"load", {{"host", "a"}}, 0, 99, 1000});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].samples.size(), 100u);
  EXPECT_EQ((*r)[0].from_database, 100u);
}

// Samples sent in any order — most far back from their place — all come back once, in time
// order: what memory refused or let go comes from the database.
TEST(SeriesHistory, OutOfOrderSamplesAllComeBackInOrder) {
  TempDir dir;
  SeriesStore store(1000);
  MemoryTracker memory;
  store.declare({"probe", "", MetricType::kGauge, "probe"});
  const SeriesId id = store.intern(SeriesKey("probe", {}));
  auto w = Writer::open(dir.file("o.db"), store, memory);
  ASSERT_TRUE(w.ok());
  std::vector<TimestampNs> ts;
  for (TimestampNs t = 0; t < 500; ++t) ts.push_back(1000 + t);
  std::shuffle(ts.begin(), ts.end(), std::mt19937(3));
  for (TimestampNs t : ts) {
    auto b = std::make_shared<const SampleBatch>(SampleBatch{t, {{id, static_cast<double>(t)}}});
    store.append(*b);
    (*w)->enqueue(b);
  }
  (*w)->flush();
  auto reader = SampleReader::open(dir.file("o.db"));
  ASSERT_TRUE(reader.ok());
  SeriesHistory history(store, reader->get());
  auto r = history.query(HistoryQuery{"probe", {}, 0, 10000, 100000});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 1u);
  const SeriesData& d = (*r)[0];
  ASSERT_EQ(d.samples.size(), 500u) << d.from_memory << " from memory, " << d.from_database << " from the database";
  for (std::size_t i = 0; i < d.samples.size(); ++i) EXPECT_EQ(d.samples[i].ts_ns, static_cast<TimestampNs>(1000 + i));
  EXPECT_GT(d.from_database, 0u);
}

TEST(SeriesHistory, WorksFromMemoryAloneWithoutADatabase) {
  SeriesStore store(5);
  SeriesId id = store.intern(SeriesKey("m", {}));
  for (int i = 0; i < 3; ++i) store.append(id, i, i);
  SeriesHistory history(store, nullptr);
  auto r = history.query(HistoryQuery{"m", {}, 0, 10, 100});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].samples.size(), 3u);
  EXPECT_TRUE((*history.list())[0].live);
}

}  // namespace
}  // namespace perfscope::db
