#include "db/retention.hpp"

#include "db/internal/retention_steps.hpp"
#include "db/sample_reader.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <future>
#include <random>

#include "db/event_reader.hpp"
#include "db/gpu_process_store.hpp"
#include "db/internal/gpu_process_rows.hpp"
#include "db/internal/rollups.hpp"
#include "db/internal/migrations.hpp"
#include "db/writer.hpp"
#include "db/internal/writer_tasks.hpp"
#include "support/commit_events.hpp"
#include "support/temp_dir.hpp"

namespace perfscope::db {
namespace {

using perfscope::testing::TempDir;

constexpr std::int64_t kMinute = 60'000'000'000, kHour = 60 * kMinute, kDay = 24 * kHour;
constexpr TimestampNs kT0 = 1'767'225'600'000'000'000;  // a midnight (UTC)

TEST(Rollups, CoverRangeUsesWholeAlignedBucketsLargestInside) {
  // 23:50 on day 0 to 00:10 on day 3 plus 3 h 10 min: minutes, hours, days, hours, minutes.
  const TimestampNs lo = kT0 - 10 * kMinute, hi = kT0 + 3 * kDay + 3 * kHour + 10 * kMinute;
  auto spans = cover_range(lo, hi);
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_EQ(spans[0].tier_ns, kMinute);
  EXPECT_EQ(spans[0].from_ns, lo);
  EXPECT_EQ(spans[1].tier_ns, kDay);
  EXPECT_EQ(spans[1].from_ns, kT0);
  EXPECT_EQ(spans[1].to_ns, kT0 + 3 * kDay);
  EXPECT_EQ(spans[2].tier_ns, kHour);
  EXPECT_EQ(spans[3].tier_ns, kMinute);
  EXPECT_EQ(spans[3].to_ns, hi);
  // Random ranges: contiguous, aligned, nothing covered twice.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 500; ++i) {
    const TimestampNs a = kT0 + static_cast<TimestampNs>(rng() % (40 * 24 * 60)) * kMinute;
    const TimestampNs b = a + static_cast<TimestampNs>(rng() % (40 * 24 * 60)) * kMinute;
    TimestampNs at = a;
    for (const TierSpan& s : cover_range(a, b)) {
      EXPECT_EQ(s.from_ns, at);
      EXPECT_EQ(s.from_ns % s.tier_ns, 0);
      EXPECT_EQ(s.to_ns % s.tier_ns, 0);
      EXPECT_LT(s.from_ns, s.to_ns);
      at = s.to_ns;
    }
    EXPECT_EQ(at, b);
  }
}

TEST(Rollups, TiersAnswerAnyWindowLikeTheRawValuesWithinTheBound) {
  TempDir dir;
  auto conn = Connection::open(dir.file("r.db"));
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(migrate(*conn).ok());
  // Three days of one value every 10 s, log-normal around 2 ms; written in two halves so
  // the second write merges into rows the first one stored.
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> latency(std::log(2.0), 0.5);
  std::vector<std::pair<TimestampNs, double>> values;
  for (TimestampNs t = kT0 + 5 * kMinute; t < kT0 + 3 * kDay; t += 10'000'000'000) values.emplace_back(t, latency(rng));
  for (int half = 0; half < 2; ++half) {
    RollupAccumulator acc;
    for (std::size_t i = static_cast<std::size_t>(half); i < values.size(); i += 2) {
      acc.add(rollup_source::kKernel, "1", "", values[i].first, values[i].second);
    }
    Transaction tx(*conn);
    ASSERT_TRUE(acc.write(*conn).ok());
    ASSERT_TRUE(tx.commit().ok());
  }
  for (auto [from, to] : {std::pair{kT0, kT0 + 3 * kDay}, std::pair{kT0 + 7 * kHour + 13 * kMinute, kT0 + 2 * kDay + 59 * kMinute},
                          std::pair{kT0 + 61 * kMinute, kT0 + 64 * kMinute}}) {
    auto answer = read_rollups(*conn, rollup_source::kKernel, {"1"}, "", {from, to - 1});
    ASSERT_TRUE(answer.ok()) << answer.status().message();
    ASSERT_TRUE(answer->has_value());
    std::vector<double> exact;
    for (auto [t, v] : values) {
      if (t >= from && t < to) exact.push_back(v);
    }
    const analysis::Rollup& r = (*answer)->rollup;
    ASSERT_EQ(r.count, exact.size());
    EXPECT_EQ((*answer)->from_ns, from);
    EXPECT_EQ((*answer)->to_ns, to);
    const analysis::Moments m = analysis::moments(exact);
    EXPECT_NEAR(r.moments().mean, m.mean, 1e-9 * m.mean);
    EXPECT_NEAR(r.moments().std, m.std, 1e-6 * m.std);
    EXPECT_EQ(r.min, m.min);
    EXPECT_EQ(r.max, m.max);
    const std::vector<double> qs = {50, 90, 99, 99.9};
    for (auto c : {analysis::PercentileConvention::kNearestRank, analysis::PercentileConvention::kLinear}) {
      std::vector<double> copy = exact;
      auto want = analysis::percentiles(copy, qs, c);
      auto got = r.percentiles(qs, c);
      for (std::size_t i = 0; i < qs.size(); ++i) {
        EXPECT_LE(std::fabs(got[i] - want[i]) / want[i], 0.001) << "q=" << qs[i];
      }
    }
  }
  // A month later: nothing there.
  auto none = read_rollups(*conn, rollup_source::kKernel, {"1"}, "", {kT0 + 30 * kDay, kT0 + 31 * kDay});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

KernelSelector gemm() {
  KernelSelector s;
  s.name = "gemm";
  return s;
}

KernelEvent kernel(std::string name, TimestampNs end, double ms) {
  KernelEvent e;
  e.name = std::move(name);
  e.end_ns = end;
  e.start_ns = end - static_cast<TimestampNs>(ms * 1e6);
  return e;
}

using perfscope::testing::commit;

Result<RetentionResult> run_step(Writer& w, const RetentionPolicy& policy, TimestampNs now);

// Steps until retention has nothing more to do (at most 50).
void retire_until_caught_up(Writer& w, const RetentionPolicy& policy, TimestampNs now) {
  for (int steps = 0;; ++steps) {
    auto r = run_step(w, policy, now);
    ASSERT_TRUE(r.ok()) << r.status().message();
    if (!r->more) return;
    ASSERT_LT(steps, 50);
  }
}

Result<RetentionResult> run_step(Writer& w, const RetentionPolicy& policy, TimestampNs now) {
  auto out = std::make_shared<Result<RetentionResult>>(Status::internal("not run"));
  std::promise<Status> done;
  WriterTasks::run(w, [&](Connection& conn) {
                *out = retention_step(conn, policy, now);
                return out->ok() ? Status() : out->status();
              },
             [&](const Status& s) { done.set_value(s); });
  Status s = done.get_future().get();
  if (!s.ok()) return s;
  return *out;
}

std::int64_t count_rows(const std::string& path, const char* sql) {
  auto c = Connection::open(path, true);
  auto st = c->prepare(sql);
  EXPECT_TRUE(st.ok()) << sql;
  auto row = st->step();
  return row.ok() && *row ? st->column_int64(0) : -1;
}

struct Fixture {
  TempDir dir;
  std::string path = dir.file("p.db");
  SeriesStore store{100};
  MemoryTracker memory;
  std::unique_ptr<Writer> writer;
  SeriesId gauge = 0;

  Fixture() {
    store.declare({"gpu_utilization_ratio", "ratio", MetricType::kGauge, ""});
    gauge = store.intern(SeriesKey("gpu_utilization_ratio", {{"gpu", "0"}}));
    auto w = Writer::open(path, store, memory);
    EXPECT_TRUE(w.ok()) << w.status().message();
    writer = std::move(*w);
  }

  // Three hours of everything from kT0: a kernel, an LLM model, a queue and a gauge every
  // second; an allocation freed after a minute every 10 minutes, one never freed.
  void fill() {
    std::vector<Event> events;
    for (int s = 0; s < 3 * 3600; ++s) {
      const TimestampNs t = kT0 + s * 1'000'000'000LL;
      events.emplace_back(kernel("gemm", t, 1.0 + (s % 100) / 100.0));
      InferenceEvent inf;
      inf.model = "llm";
      inf.version = "2";
      inf.ts_ns = t;
      inf.latency_ms = 100 + s % 50;
      inf.ttft_ms = 20;
      inf.output_tokens = 41;
      events.push_back(inf);
      CommandBufferEvent cb;
      cb.id = std::to_string(s);
      cb.queue = "q";
      cb.submit_ns = t - 3'000'000;
      cb.start_ns = t - 2'000'000;
      cb.end_ns = t;
      events.push_back(cb);
      if (s % 600 == 0) {
        MemoryEvent a;
        a.address = "0x" + std::to_string(s);
        a.size_bytes = 1 << 20;
        a.ts_ns = t;
        events.push_back(a);
        if (s != 0) {
          MemoryEvent f = a;
          f.op = MemoryOp::kFree;
          f.size_bytes = 0;
          f.ts_ns = t + 60'000'000'000;
          events.push_back(f);
        }
      }
      writer->enqueue(std::make_shared<const SampleBatch>(SampleBatch{t, {{gauge, (s % 10) / 10.0}}}));
      if (events.size() >= 600) commit(*writer, std::exchange(events, {}));
    }
    commit(*writer, std::move(events));
    writer->flush();
  }
};

TEST(Retention, OldRawRowsMoveIntoRollupsAndNothingIsLost) {
  Fixture f;
  f.fill();
  EventReader reader(f.path);
  const TimeRange all{0, INT64_MAX};
  auto before = reader.kernel_durations_ms(gemm(), all);
  ASSERT_TRUE(before.ok());
  ASSERT_EQ(before->size(), 3u * 3600u);
  EXPECT_EQ(count_rows(f.path, "PRAGMA auto_vacuum"), 2);  // incremental, from creation

  // Keep one hour of raw data, "now" at the end of the third hour. Steps of 10 minutes.
  RetentionPolicy policy;
  policy.raw_max_age_ns = kHour;
  const TimestampNs now = kT0 + 3 * kHour;
  int steps = 0;
  for (bool more = true; more; ++steps) {
    auto r = run_step(*f.writer, policy, now);
    ASSERT_TRUE(r.ok()) << r.status().message();
    more = r->more;
    ASSERT_LT(steps, 50);
  }
  EXPECT_EQ(steps, 12);  // two hours in steps of 10 minutes
  EXPECT_EQ(count_rows(f.path, ("SELECT COUNT(*) FROM inference WHERE ts_ns < " + std::to_string(now - kHour)).c_str()), 0);
  EXPECT_EQ(count_rows(f.path, "SELECT raw_before_ns FROM retention"), now - kHour);

  // Kernels: raw after the cutoff plus rollups before it = everything, exactly once.
  auto raw = reader.kernel_durations_ms(gemm(), all);
  auto rolled = reader.kernel_rollup(gemm(), all);
  ASSERT_TRUE(raw.ok());
  ASSERT_TRUE(rolled.ok() && rolled->has_value());
  EXPECT_EQ(raw->size() + (*rolled)->rollup.count, 3u * 3600u);
  EXPECT_GE(raw->size(), 3600u);  // chunks straddling the cutoff stay raw whole
  EXPECT_LT(raw->size(), 3600u + 200u);  // a commit holds 200 s of kernels here
  analysis::Rollup whole = (*rolled)->rollup;
  for (double v : *raw) whole.add(v);
  analysis::Rollup exact;
  for (double v : *before) exact.add(v);
  EXPECT_NEAR(whole.moments().mean, exact.moments().mean, 1e-9);
  EXPECT_EQ(whole.min, exact.min);
  EXPECT_EQ(whole.max, exact.max);

  // Inference: every field the raw path derives; TPOT = (latency − ttft) / 40.
  for (auto [field, version] : {std::pair{InferenceField::kLatency, ""}, std::pair{InferenceField::kTpot, "2"}}) {
    auto r = reader.inference_rollup({"llm", version}, field, all);
    auto v = reader.inference_values_ms({"llm", version}, field, all);
    ASSERT_TRUE(r.ok() && r->has_value() && v.ok());
    EXPECT_EQ((*r)->rollup.count + v->size(), 3u * 3600u);
    EXPECT_EQ((*r)->rollup.count, 2u * 3600u);
  }
  auto tpot = reader.inference_rollup({"llm", ""}, InferenceField::kTpot, all);
  EXPECT_NEAR((*tpot)->rollup.min, (100 - 20) / 40.0, 1e-12);
  EXPECT_FALSE(reader.inference_rollup({"other", ""}, InferenceField::kLatency, all)->has_value());

  // Command buffers, by queue and by device.
  auto q = reader.command_buffer_rollup("q", "", all);
  auto d = reader.command_buffer_rollup("", "0", all);
  ASSERT_TRUE(q.ok() && q->has_value() && d.ok() && d->has_value());
  EXPECT_EQ((*q)->rollup.count, 2u * 3600u);
  EXPECT_EQ((*d)->rollup.count, 2u * 3600u);
  EXPECT_DOUBLE_EQ((*q)->rollup.max, 3.0);

  // Samples: gone from the raw table before the cutoff, their rollup has every value.
  auto series_id = count_rows(f.path, "SELECT id FROM series");
  auto sample_reader = SampleReader::open(f.path);
  ASSERT_TRUE(sample_reader.ok());
  auto raw_before = (*sample_reader)->count(series_id, INT64_MIN, now - kHour - 1);
  ASSERT_TRUE(raw_before.ok());
  EXPECT_EQ(*raw_before, 0);
  auto g = reader.series_rollup({series_id}, all);
  ASSERT_TRUE(g.ok() && g->has_value());
  EXPECT_EQ((*g)->rollup.count, 2u * 3600u);
  EXPECT_EQ((*g)->rollup.min, 0.0);
  // Zeros read back as zero (the bottom bucket reads as the exact minimum).
  auto p = (*g)->rollup.percentiles(std::vector<double>{5, 50}, analysis::PercentileConvention::kNearestRank);
  EXPECT_EQ(p[0], 0.0);
  EXPECT_NEAR(p[1], 0.4, 0.4 * 0.001);

  // Memory: freed pairs before the cutoff are gone; the allocation never freed stays, so the
  // running total still adds up.
  EXPECT_EQ(count_rows(f.path, "SELECT COUNT(*) FROM memory_events WHERE address = '0x0'"), 1);
  EXPECT_EQ(count_rows(f.path, ("SELECT COUNT(*) FROM memory_events WHERE ts_ns < " + std::to_string(now - kHour)).c_str()), 1);
  EXPECT_EQ(count_rows(f.path, "SELECT SUM(CASE op WHEN 'alloc' THEN 1 ELSE -1 END) FROM memory_events"), 1);

  // Pages freed went back to the filesystem; the file is whole.
  EXPECT_EQ(count_rows(f.path, "PRAGMA freelist_count"), 0);
  auto c = Connection::open(f.path, true);
  auto check = c->prepare("PRAGMA integrity_check");
  ASSERT_TRUE(check->step().ok());
  EXPECT_EQ(check->column_text(0), "ok");
}

TEST(Retention, TheSizeLimitRetiresTheOldestFirstAndKeepsTheNewest) {
  Fixture f;
  f.fill();
  auto used = [&] {
    auto c = Connection::open(f.path, true);
    return *database_bytes_used(*c);
  };
  const std::uint64_t full = used();
  RetentionPolicy policy;
  policy.max_bytes = full / 3;
  const TimestampNs now = kT0 + 3 * kHour;
  RetentionResult last;
  for (int i = 0; i < 100; ++i) {
    auto r = run_step(*f.writer, policy, now);
    ASSERT_TRUE(r.ok()) << r.status().message();
    last = *r;
    if (!r->more) break;
  }
  EXPECT_LE(last.bytes_used, policy.max_bytes);
  EXPECT_FALSE(last.over_size);
  EXPECT_LE(used(), full / 3);
  // The oldest went first: the newest raw rows are all still there.
  const TimestampNs retired = count_rows(f.path, "SELECT raw_before_ns FROM retention");
  EXPECT_GT(retired, kT0);
  EXPECT_EQ(count_rows(f.path, ("SELECT COUNT(*) FROM inference WHERE ts_ns >= " + std::to_string(retired)).c_str()),
            (now - retired) / 1'000'000'000);
  EXPECT_EQ(count_rows(f.path, ("SELECT COUNT(*) FROM inference WHERE ts_ns < " + std::to_string(retired)).c_str()), 0);

  // An impossible limit: raw rows of the last 10 minutes are never retired for size, and
  // rollups of today are kept; the step says it is still over instead of looping.
  policy.max_bytes = 4096;
  for (int i = 0; i < 200; ++i) {
    auto r = run_step(*f.writer, policy, now);
    ASSERT_TRUE(r.ok());
    last = *r;
    if (!r->more) break;
  }
  EXPECT_TRUE(last.over_size);
  EXPECT_EQ(count_rows(f.path, "SELECT COUNT(*) FROM inference"), 600);
  EXPECT_GT(count_rows(f.path, "SELECT COUNT(*) FROM rollups"), 0);
}

// A scraped histogram's buckets (counters named *_bucket with an `le` label) leave no rollup
// rows: their old samples are deleted only. Other counters and gauges still roll up.
TEST(Retention, ScrapedHistogramBucketsAreDeletedWithoutRollups) {
  Fixture f;
  f.store.declare({"latency_seconds_bucket", "", MetricType::kCounter, ""});
  f.store.declare({"requests_total", "", MetricType::kCounter, ""});
  const SeriesId bucket = f.store.intern(SeriesKey("latency_seconds_bucket", {{"le", "0.5"}, {"model", "m"}}));
  const SeriesId total = f.store.intern(SeriesKey("requests_total", {{"model", "m"}}));
  // A bucket-like name without `le` (a gauge someone named so) is not a bucket.
  f.store.declare({"queue_bucket", "", MetricType::kCounter, ""});
  const SeriesId named = f.store.intern(SeriesKey("queue_bucket", {{"model", "m"}}));
  for (int s = 0; s < 2 * 3600; s += 10) {
    const TimestampNs t = kT0 + s * 1'000'000'000LL;
    f.writer->enqueue(std::make_shared<const SampleBatch>(
        SampleBatch{t, {{bucket, static_cast<double>(s)}, {total, static_cast<double>(s)}, {named, 1.0}}}));
  }
  f.writer->flush();
  RetentionPolicy policy;
  policy.raw_max_age_ns = kHour;
  const TimestampNs now = kT0 + 2 * kHour;
  retire_until_caught_up(*f.writer, policy, now);
  auto rollup_rows = [&](const char* name) {
    return count_rows(f.path, (std::string("SELECT COUNT(*) FROM rollups WHERE source = 'series' AND key = "
                                           "(SELECT CAST(id AS TEXT) FROM series WHERE name = '") + name + "')").c_str());
  };
  EXPECT_EQ(rollup_rows("latency_seconds_bucket"), 0);
  EXPECT_GT(rollup_rows("requests_total"), 0);
  EXPECT_GT(rollup_rows("queue_bucket"), 0);
  // Every series is retired, not only the first one read (a reused statement once stalled
  // retention at the second): none keeps samples before the cutoff, all keep the hour after.
  auto reader = SampleReader::open(f.path);
  ASSERT_TRUE(reader.ok());
  for (const char* name : {"latency_seconds_bucket", "requests_total", "queue_bucket"}) {
    const std::int64_t id = count_rows(f.path, (std::string("SELECT id FROM series WHERE name = '") + name + "'").c_str());
    auto before = (*reader)->count(id, INT64_MIN, now - kHour - 1);
    auto after = (*reader)->count(id, now - kHour, INT64_MAX);
    ASSERT_TRUE(before.ok() && after.ok());
    EXPECT_EQ(*before, 0) << name;
    EXPECT_EQ(*after, 360) << name;
  }
}

// A custom sample that arrives after retention passed its time goes into the rollups at once:
// readers take samples before the cutoff from the rollups only, so raw it would be counted
// nowhere until the next step (the retention test's gauge came up short by one chunk).
TEST(Retention, ASampleOlderThanTheCutoffGoesIntoTheRollupsAtOnce) {
  Fixture f;
  std::vector<Event> events;
  for (int s = 0; s < 2 * 3600; s += 10) {
    events.emplace_back(SampleEvent{"late_gauge", {}, kT0 + s * 1'000'000'000LL, 1.0});
  }
  commit(*f.writer, std::move(events));
  RetentionPolicy policy;
  policy.raw_max_age_ns = kHour;
  const TimestampNs now = kT0 + 2 * kHour;
  retire_until_caught_up(*f.writer, policy, now);
  const std::int64_t id = count_rows(f.path, "SELECT id FROM series WHERE name = 'late_gauge'");
  EventReader reader(f.path);
  auto before = reader.series_rollup({id}, TimeRange{0, INT64_MAX});
  ASSERT_TRUE(before.ok() && before->has_value());
  EXPECT_EQ((*before)->rollup.count, 360u);
  // Late: 30 minutes before the cutoff.
  commit(*f.writer, {SampleEvent{"late_gauge", {}, now - kHour - 30 * 60'000'000'000LL + 5, 9.0}});
  auto after = reader.series_rollup({id}, TimeRange{0, INT64_MAX});
  ASSERT_TRUE(after.ok() && after->has_value());
  EXPECT_EQ((*after)->rollup.count, 361u);
  EXPECT_EQ((*after)->rollup.max, 9.0);
  auto samples = SampleReader::open(f.path);
  ASSERT_TRUE(samples.ok());
  auto raw_before = (*samples)->count(id, INT64_MIN, now - kHour - 1);
  ASSERT_TRUE(raw_before.ok());
  EXPECT_EQ(*raw_before, 0);
}

TEST(Retention, OldRollupRowsGoOnceTheirBucketHasAged) {
  Fixture f;
  auto c = Connection::open(f.path);
  {
    RollupAccumulator acc;
    for (int day = 0; day < 5; ++day) acc.add(rollup_source::kKernel, "1", "", kT0 + day * kDay + kHour, 1.0);
    Transaction tx(*c);
    ASSERT_TRUE(acc.write(*c).ok());
    ASSERT_TRUE(tx.commit().ok());
  }
  RetentionPolicy policy;
  policy.rollup_max_age_ns = 2 * kDay;
  auto r = run_step(*f.writer, policy, kT0 + 4 * kDay + 12 * kHour);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // The cutoff is day 2, 12:00. Days 0 and 1: their minute, hour and day rows; day 2: its
  // minute and hour rows (01:00), while its day row (ending at day 3) stays; days 3 and 4 stay.
  EXPECT_EQ(r->rollup_rows_deleted, 2u * 3u + 2u);
  EXPECT_EQ(count_rows(f.path, "SELECT MIN(start_ns) FROM rollups"), kT0 + 2 * kDay);
  const std::string before_day3 = " FROM rollups WHERE start_ns < " + std::to_string(kT0 + 3 * kDay);
  EXPECT_EQ(count_rows(f.path, ("SELECT COUNT(*)" + before_day3).c_str()), 1);
  EXPECT_EQ(count_rows(f.path, ("SELECT tier" + before_day3).c_str()), 86400);
  // A minute later nothing more has aged.
  auto again = run_step(*f.writer, policy, kT0 + 4 * kDay + 12 * kHour + 60'000'000'000);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->rollup_rows_deleted, 0u);
}

TEST(Retention, GpuProcessRecordsAgeWithTheRollups) {
  Fixture f;
  auto c = Connection::open(f.path);
  auto record = [](const char* key, TimestampNs last, bool running) {
    GpuProcessRecord p;
    p.gpu_uuid = "GPU-a";
    p.key = key;
    p.first_seen_ns = last - kHour;
    p.last_seen_ns = last;
    p.running = running;
    return p;
  };
  {
    Transaction tx(*c);
    ASSERT_TRUE(write_gpu_processes(*c, {record("1-1", kT0 + kHour, false), record("2-2", kT0 + kHour, true),
                                         record("3-3", kT0 + 3 * kDay, false)})
                    .ok());
    ASSERT_TRUE(tx.commit().ok());
  }
  RetentionPolicy policy;
  policy.rollup_max_age_ns = 2 * kDay;
  auto r = run_step(*f.writer, policy, kT0 + 4 * kDay + 12 * kHour);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Both last seen before the cutoff go, the one last written running too (a process still
  // running is written again at the next stop); the recent one stays.
  EXPECT_EQ(count_rows(f.path, "SELECT COUNT(*) FROM gpu_processes"), 1);
  EXPECT_EQ(count_rows(f.path, "SELECT COUNT(*) FROM gpu_processes WHERE process_key = '3-3'"), 1);
}

TEST(Retention, AnOlderFileIsSwitchedToIncrementalVacuumOnOpen) {
  TempDir dir;
  const std::string path = dir.file("old.db");
  {
    auto c = Connection::open(path);
    ASSERT_TRUE(migrate(*c).ok());
    ASSERT_TRUE(c->exec("PRAGMA auto_vacuum = NONE; VACUUM").ok());
  }
  ASSERT_EQ(count_rows(path, "PRAGMA auto_vacuum"), 0);
  SeriesStore store(10);
  MemoryTracker memory;
  auto w = Writer::open(path, store, memory);
  ASSERT_TRUE(w.ok()) << w.status().message();
  (*w)->stop();
  EXPECT_EQ(count_rows(path, "PRAGMA auto_vacuum"), 2);
}

TEST(RetentionTask, RunsOnTheWriterUntilCaughtUpAndReportsIt) {
  Fixture f;
  f.fill();
  RetentionPolicy policy;
  // Relative to the real clock: everything written (years ago) is older than a day.
  policy.raw_max_age_ns = kDay;
  RetentionTask task(*f.writer, policy, std::chrono::milliseconds(50));
  task.start();
  for (int i = 0; i < 400 && count_rows(f.path, "SELECT COUNT(*) FROM inference") != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  task.stop();
  EXPECT_EQ(count_rows(f.path, "SELECT COUNT(*) FROM inference"), 0);
  EXPECT_EQ(count_rows(f.path, "SELECT COUNT(*) FROM kernel_chunks"), 0);
  RetentionStats stats = task.stats();
  EXPECT_GT(stats.runs, 0u);
  EXPECT_EQ(stats.errors, 0u);
  EventReader reader(f.path);
  auto k = reader.kernel_rollup(gemm(), {0, INT64_MAX});
  ASSERT_TRUE(k.ok() && k->has_value());
  EXPECT_EQ((*k)->rollup.count, 3u * 3600u);
}

}  // namespace
}  // namespace perfscope::db
