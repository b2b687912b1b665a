// Sampled series in chunks against the row-per-sample table they replaced (issue 21): the
// writer's cost per sample, and history queries of one series.
//   - writing: 25 host-like series (counters, their rates, busy ratios, memory, constants) a
//     pass at a time, a commit every 10 passes (1 s at 100 ms) — chunks as the writer stores
//     them, against one INSERT per sample into the old table.
// History queries: One database holds 24 hours of three series sampled every 100 ms (a
// counter's rate as the host collector computes it, the counter itself, a busy ratio of
// jiffies), written through the chunk writer with a commit every second; a second file holds
// the same samples as rows of the old `samples` table, queried with the SQL the old reader ran.
//   - 24 h at max_points = 1000 (downsampled into 1,000 buckets), through SeriesHistory;
//   - 15 min raw (9,000 samples, max_points above that), through SeriesHistory;
//   - 1 h of every sample (max_points unbounded), as the analysis document's gauges read;
//   - the same on the old table: its COUNT, then GROUP BY buckets or the raw rows.
// The files are built once per process (about a minute) in the temporary directory.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "db/internal/sample_chunks.hpp"
#include "db/sample_reader.hpp"
#include "db/internal/migrations.hpp"
#include "db/series_history.hpp"

namespace {

using namespace perfscope;
using namespace perfscope::db;

constexpr TimestampNs kBase = 1'790'000'000'000'000'000;
constexpr TimestampNs kDay = 86'400'000'000'000;
constexpr int kPasses = 864'000;  // 24 h at 100 ms

struct Files {
  std::filesystem::path dir;
  std::string chunks, rows;
  TimestampNs end_ns = 0;
};

const Files& files() {
  static const Files f = [] {
    Files out;
    out.dir = std::filesystem::temp_directory_path() / ("perfscope-history-bench-" + std::to_string(::getpid()));
    std::filesystem::create_directories(out.dir);
    out.chunks = (out.dir / "chunks.db").string();
    out.rows = (out.dir / "rows.db").string();
    auto c = Connection::open(out.chunks);
    auto r = Connection::open(out.rows);
    if (!c.ok() || !r.ok() || !migrate(*c).ok()) std::abort();
    (void)c->exec("INSERT INTO series(id, name, labels) VALUES (1, 'rate', ''), (2, 'counter', ''), (3, 'ratio', '')");
    (void)r->exec("CREATE TABLE samples (series_id INTEGER NOT NULL, ts_ns INTEGER NOT NULL, value REAL NOT NULL, "
                  "PRIMARY KEY (series_id, ts_ns)) WITHOUT ROWID");
    auto writer = SampleChunkWriter::prepare(*c);
    auto insert = r->prepare("INSERT INTO samples VALUES (?1, ?2, ?3)");
    if (!writer.ok() || !insert.ok()) std::abort();
    std::mt19937_64 rng(1);
    std::poisson_distribution<int> switches(2500), busy(9);
    std::normal_distribution<double> jitter(0, 40'000);
    double counter = 1e9;
    TimestampNs prev = kBase;
    (void)c->exec("BEGIN");
    (void)r->exec("BEGIN");
    for (int i = 1; i <= kPasses; ++i) {
      const TimestampNs t = kBase + static_cast<TimestampNs>(i) * 100'000'000 + static_cast<TimestampNs>(std::fabs(jitter(rng)));
      const double increase = switches(rng);
      counter += increase;
      const double ticks = static_cast<double>(18 + rng() % 5);
      const double values[3] = {increase / (static_cast<double>(t - prev) / 1e9), counter,
                                std::min(ticks, static_cast<double>(busy(rng))) / ticks};
      prev = t;
      (void)(*writer)->begin_pass(t);
      for (int s = 0; s < 3; ++s) {
        (void)(*writer)->add_pass_sample(s + 1, values[s]);
        (void)insert->bind(1, std::int64_t{s + 1}).bind(2, t).bind(3, values[s]).run();
      }
      if (i % 10 == 0) (void)(*writer)->flush();  // the writer's commit cadence
      if (i % 100'000 == 0) {
        (void)c->exec("COMMIT; BEGIN");
        (void)r->exec("COMMIT; BEGIN");
      }
      out.end_ns = t;
    }
    (void)(*writer)->flush();
    (void)c->exec("COMMIT");
    (void)r->exec("COMMIT");
    return out;
  }();
  return f;
}

void history(benchmark::State& state, TimestampNs span, std::size_t max_points) {
  const Files& f = files();
  auto reader = SampleReader::open(f.chunks);
  if (!reader.ok()) return state.SkipWithError(reader.status().message().c_str());
  SeriesStore memory(16);  // nothing in memory: the database answers
  SeriesHistory h(memory, reader->get());
  HistoryQuery q;
  q.name = state.range(0) == 1 ? "rate" : "counter";
  q.from_ns = f.end_ns - span;
  q.to_ns = f.end_ns;
  q.max_points = max_points;
  std::size_t points = 0;
  for (auto _ : state) {
    auto r = h.query(q);
    if (!r.ok() || r->size() != 1) return state.SkipWithError("query failed");
    points = (*r)[0].downsampled ? (*r)[0].buckets.size() : (*r)[0].samples.size();
    benchmark::DoNotOptimize(points);
  }
  state.counters["points"] = static_cast<double>(points);
}

void BM_Chunks24hBuckets(benchmark::State& state) { history(state, kDay, 1000); }
void BM_Chunks15mRaw(benchmark::State& state) { history(state, 900'000'000'000, 100'000); }
// What the analysis document's gauges ask: every sample of the window, whatever their number.
void BM_Chunks1hGauge(benchmark::State& state) { history(state, 3'600'000'000'000, SIZE_MAX); }

// The old reader's SQL on the old table.
void rows(benchmark::State& state, TimestampNs span, bool buckets) {
  const Files& f = files();
  auto conn = Connection::open(f.rows, /*read_only=*/true);
  if (!conn.ok()) return state.SkipWithError(conn.status().message().c_str());
  auto count = conn->prepare("SELECT COUNT(*) FROM samples WHERE series_id = ?1 AND ts_ns BETWEEN ?2 AND ?3");
  auto grouped = conn->prepare(
      "SELECT MIN(ts_ns), MIN(value), MAX(value), TOTAL(value), COUNT(*) FROM samples "
      "WHERE series_id = ?1 AND ts_ns BETWEEN ?2 AND ?3 GROUP BY (ts_ns - ?2) / ?4 ORDER BY 1");
  auto raw = conn->prepare("SELECT ts_ns, value FROM samples WHERE series_id = ?1 AND ts_ns BETWEEN ?2 AND ?3 ORDER BY ts_ns");
  if (!count.ok() || !grouped.ok() || !raw.ok()) return state.SkipWithError("prepare failed");
  const TimestampNs from = f.end_ns - span, to = f.end_ns;
  const std::int64_t series = state.range(0);
  std::size_t points = 0;
  for (auto _ : state) {
    count->bind(1, series).bind(2, from).bind(3, to);
    (void)count->step();
    benchmark::DoNotOptimize(count->column_int64(0));
    count->reset();
    points = 0;
    if (buckets) {
      grouped->bind(1, series).bind(2, from).bind(3, to).bind(4, bucket_width(from, to, 1000));
      (void)grouped->for_each_row([&](Statement& r) { points += r.column_int64(4) > 0 ? 1 : 0; });
    } else {
      std::vector<Sample> out;
      raw->bind(1, series).bind(2, from).bind(3, to);
      (void)raw->for_each_row([&](Statement& r) { out.push_back({r.column_int64(0), r.column_double(1)}); });
      points = out.size();
    }
  }
  state.counters["points"] = static_cast<double>(points);
}

void BM_Rows24hBuckets(benchmark::State& state) { rows(state, kDay, true); }
void BM_Rows15mRaw(benchmark::State& state) { rows(state, 900'000'000'000, false); }
void BM_Rows1hGauge(benchmark::State& state) { rows(state, 3'600'000'000'000, false); }

// 25 series of one pass: what the host collector's series look like to the writer.
struct HostLike {
  std::mt19937_64 rng{3};
  std::poisson_distribution<int> switches{2500}, busy{9};
  double counters[3] = {1e9, 5e8, 7e7};
  double pages = 2e6;
  TimestampNs prev = kBase;
  void pass(TimestampNs t, double out[25]) {
    const double dt_s = static_cast<double>(t - prev) / 1e9;
    prev = t;
    for (int c = 0; c < 3; ++c) {
      const double increase = switches(rng) >> c;
      counters[c] += increase;
      out[c] = counters[c];
      out[3 + c] = increase / dt_s;
      const double ticks = static_cast<double>(18 + rng() % 5);
      out[6 + c] = std::min(ticks, static_cast<double>(busy(rng))) / ticks;
    }
    pages += static_cast<double>(static_cast<int>(rng() % 9) - 4);
    out[9] = pages * 4096;
    out[10] = 16e9 - out[9];
    out[11] = static_cast<double>(rng() % 300) / 100;  // a load average
    for (int i = 12; i < 25; ++i) out[i] = 1e9 * i;  // totals, limits: constant
  }
};

void write_passes(benchmark::State& state, bool chunks) {
  const auto dir = std::filesystem::temp_directory_path() / ("perfscope-write-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / (chunks ? "c.db" : "r.db")).string();
  std::filesystem::remove(path);
  auto conn = Connection::open(path);
  if (!conn.ok() || !migrate(*conn).ok()) return state.SkipWithError("open failed");
  for (int i = 1; i <= 25; ++i) (void)conn->exec(("INSERT INTO series(id, name, labels) VALUES (" + std::to_string(i) + ", 's" + std::to_string(i) + "', '')").c_str());
  (void)conn->exec("CREATE TABLE samples (series_id INTEGER NOT NULL, ts_ns INTEGER NOT NULL, value REAL NOT NULL, "
                   "PRIMARY KEY (series_id, ts_ns)) WITHOUT ROWID");
  auto writer = SampleChunkWriter::prepare(*conn);
  auto insert = conn->prepare("INSERT OR REPLACE INTO samples(series_id, ts_ns, value) VALUES(?1, ?2, ?3)");
  if (!writer.ok() || !insert.ok()) return state.SkipWithError("prepare failed");
  HostLike gen;
  double values[25];
  TimestampNs t = kBase;
  std::uint64_t samples = 0;
  for (auto _ : state) {
    (void)conn->exec("BEGIN");
    for (int pass = 0; pass < 10; ++pass) {  // one commit interval at 100 ms
      t += 100'000'000 + static_cast<TimestampNs>(gen.rng() % 80'000);
      gen.pass(t, values);
      if (chunks) (void)(*writer)->begin_pass(t);
      for (int s = 0; s < 25; ++s) {
        if (chunks) {
          (void)(*writer)->add_pass_sample(s + 1, values[s]);
        } else {
          (void)insert->bind(1, std::int64_t{s + 1}).bind(2, t).bind(3, values[s]).run();
        }
      }
      samples += 25;
    }
    if (chunks) (void)(*writer)->flush();
    (void)conn->exec("COMMIT");
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(samples));
  state.counters["ns_per_sample"] = benchmark::Counter(static_cast<double>(samples), benchmark::Counter::kIsRate |
                                                                                         benchmark::Counter::kInvert);
  std::filesystem::remove_all(dir);
}

void BM_WriteChunks(benchmark::State& state) { write_passes(state, true); }
void BM_WriteRows(benchmark::State& state) { write_passes(state, false); }
BENCHMARK(BM_WriteChunks)->Unit(benchmark::kMicrosecond)->MinTime(3);
BENCHMARK(BM_WriteRows)->Unit(benchmark::kMicrosecond)->MinTime(3);

BENCHMARK(BM_Chunks24hBuckets)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Rows24hBuckets)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Chunks15mRaw)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Rows15mRaw)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Chunks1hGauge)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Rows1hGauge)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  std::error_code ec;
  std::filesystem::remove_all(files().dir, ec);
  return 0;
}
