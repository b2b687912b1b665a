#include "db/series_history.hpp"

#include <algorithm>
#include <map>

namespace perfscope::db {

Result<std::vector<SeriesHistory::Located>> SeriesHistory::locate(bool with_latest) const {
  std::map<std::string, Located> by_key;  // ordered by canonical key: stable listings
  for (SeriesSnapshot& snap : store_.list()) {
    Located& l = by_key[snap.canonical];
    l.info.key = std::move(snap.key);
    l.info.family = store_.family(l.info.key.name).value_or(MetricFamily{l.info.key.name, "", MetricType::kGauge, ""});
    l.info.latest = snap.latest;
    l.info.live = true;
    l.memory_id = snap.id;
  }
  if (reader_) {
    PERFSCOPE_ASSIGN_OR_RETURN(auto stored, reader_->list_series(with_latest));
    for (StoredSeries& s : stored) {
      Located& l = by_key[s.key.canonical()];
      l.db_id = s.db_id;
      if (l.memory_id) {
        if (!l.info.latest) l.info.latest = s.latest;
        continue;
      }
      l.info.key = std::move(s.key);
      l.info.family = std::move(s.family);
      l.info.latest = s.latest;
    }
  }
  std::vector<Located> out;
  out.reserve(by_key.size());
  for (auto& [canonical, l] : by_key) out.push_back(std::move(l));
  return out;
}

Result<std::vector<SeriesInfo>> SeriesHistory::list() const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto located, locate(/*with_latest=*/true));
  std::vector<SeriesInfo> out;
  out.reserve(located.size());
  for (Located& l : located) out.push_back(std::move(l.info));
  return out;
}

Result<std::vector<SeriesData>> SeriesHistory::query(const HistoryQuery& q) const {
  if (q.to_ns < q.from_ns) return Status::invalid_argument("'from' is after 'to'", "from");
  PERFSCOPE_ASSIGN_OR_RETURN(auto located, locate(/*with_latest=*/false));

  // Where retention's cutoff lies matters only to series the database answers for: asked
  // once, the first time one does (a window that memory holds asks nothing).
  std::optional<TimestampNs> retired;
  auto retired_before = [&]() -> Result<TimestampNs> {
    if (!retired) {
      auto r = reader_->retired_before();
      if (!r.ok()) return r.status();
      retired = *r;
    }
    return *retired;
  };
  std::vector<SeriesData> out;
  for (Located& l : located) {
    if (!glob_match(q.name, l.info.key.name)) continue;
    bool labels_match = std::all_of(q.matchers.begin(), q.matchers.end(), [&](const auto& m) {
      const std::string* v = l.info.key.label(m.first);
      return v && *v == m.second;
    });
    if (!labels_match) continue;

    SeriesData data;
    SeriesRange memory;
    if (l.memory_id) memory = store_.read(*l.memory_id, q.from_ns, q.to_ns);
    // The database answers only for what memory does not, so nothing is counted twice.
    TimestampNs db_to = memory.complete_from ? std::min(q.to_ns, *memory.complete_from - 1) : q.to_ns;
    bool use_db = reader_ && l.db_id && db_to >= q.from_ns;
    std::int64_t db_count = 0;
    // Raw whatever the count (the analysis gauges): read at once rather than count, then read.
    std::optional<std::vector<Sample>> all_rows;
    if (use_db && q.max_points == SIZE_MAX) {
      auto rows = reader_->read(*l.db_id, q.from_ns, db_to);
      if (!rows.ok()) return rows.status();
      db_count = static_cast<std::int64_t>(rows->size());
      all_rows = std::move(*rows);
    } else if (use_db) {
      PERFSCOPE_ASSIGN_OR_RETURN(auto n, reader_->count(*l.db_id, q.from_ns, db_to));
      db_count = n;
    }
    data.from_memory = memory.samples.size();
    data.from_database = static_cast<std::size_t>(db_count);
    data.db_id = l.db_id;
    TimestampNs cutoff = 0;
    if (use_db) {
      PERFSCOPE_ASSIGN_OR_RETURN(auto r, retired_before());
      cutoff = r;
    }
    // Where retention rolled samples up, only buckets can show them (raw reads would leave a gap).
    const bool rolled_up = use_db && q.from_ns < cutoff && q.max_points != SIZE_MAX;

    if (!rolled_up && data.from_memory + data.from_database <= q.max_points) {
      if (all_rows) {
        data.samples = std::move(*all_rows);
      } else if (db_count > 0) {
        PERFSCOPE_ASSIGN_OR_RETURN(auto rows, reader_->read(*l.db_id, q.from_ns, db_to));
        data.samples = std::move(rows);
      }
      data.samples.insert(data.samples.end(), memory.samples.begin(), memory.samples.end());
    } else {
      data.downsampled = true;
      data.bucket_ns = bucket_width(q.from_ns, q.to_ns, q.max_points);
      BucketGrid grid(q.from_ns, data.bucket_ns);
      if (db_count > 0) {
        auto partial = reader_->read_buckets(*l.db_id, q.from_ns, db_to, data.bucket_ns);
        if (!partial.ok()) return partial.status();
        for (const Bucket& b : *partial) grid.add(b);
      }
      if (rolled_up) {
        // Rollups hold everything before the cutoff, including samples memory may still hold.
        auto partial =
            reader_->read_rollup_buckets(*l.db_id, q.from_ns, std::min(q.to_ns, cutoff - 1), data.bucket_ns);
        if (!partial.ok()) return partial.status();
        for (const Bucket& b : *partial) grid.add(b);
      }
      for (const Sample& s : memory.samples) {
        if (!rolled_up || s.ts_ns >= cutoff) grid.add(s);
      }
      data.buckets = grid.buckets();
    }
    data.info = std::move(l.info);
    out.push_back(std::move(data));
  }
  return out;
}

}  // namespace perfscope::db
