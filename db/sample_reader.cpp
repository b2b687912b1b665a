#include "db/sample_reader.hpp"

#include <algorithm>

#include "db/internal/connection_pool.hpp"
#include "db/internal/rollups.hpp"
#include "db/internal/sample_chunks.hpp"

namespace perfscope::db {

SampleReader::SampleReader(std::string path) : pool_(std::make_unique<ConnectionPool>(std::move(path))) {}
SampleReader::~SampleReader() = default;

Result<std::unique_ptr<SampleReader>> SampleReader::open(const std::string& path) {
  std::unique_ptr<SampleReader> reader(new SampleReader(path));
  auto probe = reader->pool_->lease();  // fail early if the file cannot be opened
  if (!probe.ok()) return probe.status();
  return reader;
}

Result<std::vector<StoredSeries>> SampleReader::list_series(bool with_latest) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  auto stmt = conn->prepare("SELECT id, name, labels, unit, type, help FROM series ORDER BY name, labels");
  if (!stmt.ok()) return stmt.status();
  SampleChunkReader chunks(*conn);
  std::vector<StoredSeries> out;
  Status latest_status;
  Status st = stmt->for_each_row([&](Statement& r) {
    StoredSeries s;
    s.db_id = r.column_int64(0);
    auto labels = parse_labels(r.column_text(2));
    if (!labels.ok()) return;  // not written by perfscope; skip rather than fail the listing
    s.key = SeriesKey(r.column_text(1), std::move(*labels));
    s.family = MetricFamily{s.key.name, r.column_text(3),
                            r.column_text(4) == "counter" ? MetricType::kCounter : MetricType::kGauge,
                            r.column_text(5)};
    if (with_latest && latest_status.ok()) {
      auto l = chunks.latest(s.db_id);
      if (l.ok()) s.latest = *l;
      else latest_status = l.status();
    }
    out.push_back(std::move(s));
  });
  if (!st.ok()) return st;
  if (!latest_status.ok()) return latest_status;
  return out;
}

Result<std::int64_t> SampleReader::count(std::int64_t db_id, TimestampNs from_ns, TimestampNs to_ns) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  return SampleChunkReader(*conn).count(db_id, TimeRange{from_ns, to_ns});
}

Result<std::vector<Sample>> SampleReader::read(std::int64_t db_id, TimestampNs from_ns, TimestampNs to_ns) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  std::vector<Sample> out;
  Status s = SampleChunkReader(*conn).scan(db_id, TimeRange{from_ns, to_ns}, [&](std::span<const Sample> part) {
    out.insert(out.end(), part.begin(), part.end());
  });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<Bucket>> SampleReader::read_buckets(std::int64_t db_id, TimestampNs from_ns, TimestampNs to_ns,
                                                       TimestampNs width_ns) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  // Samples arrive in time order: one pass, a bucket at a time.
  std::vector<Bucket> out;
  TimestampNs bucket_end = from_ns;  // the current bucket holds times before this
  Status s = SampleChunkReader(*conn).scan(db_id, TimeRange{from_ns, to_ns}, [&](std::span<const Sample> part) {
    for (const Sample& x : part) {
      if (x.ts_ns >= bucket_end || out.empty()) {
        const std::int64_t i = (x.ts_ns - from_ns) / width_ns;
        // Saturating: a range reaching the ends of time must not overflow.
        const auto room = static_cast<std::uint64_t>(INT64_MAX) - static_cast<std::uint64_t>(from_ns);
        const auto next = static_cast<std::uint64_t>(i + 1);
        bucket_end = next > room / static_cast<std::uint64_t>(width_ns)
                         ? INT64_MAX
                         : static_cast<TimestampNs>(static_cast<std::uint64_t>(from_ns) + next * static_cast<std::uint64_t>(width_ns));
        out.push_back(Bucket{x.ts_ns, x.value, x.value, 0, 0});
      }
      Bucket& b = out.back();
      b.min = std::min(b.min, x.value);
      b.max = std::max(b.max, x.value);
      b.sum += x.value;
      ++b.count;
    }
  });
  if (!s.ok()) return s;
  return out;
}

namespace {

// A bucket from a (start, min, max, sum, count) row.
Bucket bucket_row(const Statement& r) {
  return Bucket{r.column_int64(0), r.column_double(1), r.column_double(2), r.column_double(3),
                static_cast<std::uint64_t>(r.column_int64(4))};
}

}  // namespace

Result<std::vector<Bucket>> SampleReader::read_rollup_buckets(std::int64_t db_id, TimestampNs from_ns, TimestampNs to_ns,
                                                              TimestampNs width_ns) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  std::vector<Bucket> out;
  std::int64_t tier_s = 60;
  for (std::int64_t t : kRollupTiersNs) {
    if (t <= width_ns) {
      tier_s = t / 1'000'000'000;
      break;
    }
  }
  auto rolled = conn->prepare(
      "SELECT MIN(start_ns), MIN(min), MAX(max), TOTAL(sum), SUM(count) FROM rollups "
      "WHERE source = ?6 AND field = '' AND tier = ?5 AND key = ?1 AND start_ns BETWEEN ?2 AND ?3 "
      "GROUP BY (start_ns - ?2) / ?4 ORDER BY 1");
  if (!rolled.ok()) return rolled.status();
  const std::string key = std::to_string(db_id);
  rolled->bind(1, std::string_view(key)).bind(2, from_ns).bind(3, to_ns).bind(4, width_ns).bind(5, tier_s)
      .bind(6, rollup_source::kSeries);
  if (Status s = rolled->for_each_row([&](Statement& r) { out.push_back(bucket_row(r)); }); !s.ok()) return s;
  return out;
}

Result<TimestampNs> SampleReader::retired_before() const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  PERFSCOPE_ASSIGN_OR_RETURN(auto stmt, conn->prepare("SELECT raw_before_ns FROM retention WHERE id = 1"));
  PERFSCOPE_ASSIGN_OR_RETURN(auto row, stmt.step());
  return row ? stmt.column_int64(0) : TimestampNs{0};
}

}  // namespace perfscope::db
