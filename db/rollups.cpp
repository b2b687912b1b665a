#include "db/internal/rollups.hpp"

#include <algorithm>

namespace perfscope::db {
namespace {

constexpr char kKeySeparator = '\x1f';

TimestampNs ceil_to(TimestampNs t, std::int64_t width) {
  TimestampNs f = floor_to(t, width);
  return f == t ? t : f + width;
}

Result<analysis::Rollup> read_row(const Statement& r, int first) {
  analysis::Rollup out;
  out.count = static_cast<std::uint64_t>(r.column_int64(first));
  out.sum = r.column_double(first + 1);
  out.m2 = r.column_double(first + 2);
  out.min = r.column_double(first + 3);
  out.max = r.column_double(first + 4);
  auto h = analysis::LogHistogram::deserialize(r.column_blob(first + 5));
  if (!h || h->count() != out.count) return Status::internal("a rollup row in the database is corrupt");
  out.histogram = std::move(*h);
  return out;
}

constexpr const char* kRowColumns = "count, sum, m2, min, max, histogram";

}  // namespace

TimestampNs floor_to(TimestampNs t, std::int64_t width) {
  const TimestampNs r = t - t % width;
  return t % width < 0 ? r - width : r;
}

std::string rollup_key(std::string_view first, std::string_view second) {
  std::string key(first);
  key += kKeySeparator;
  key += second;
  return key;
}

void RollupAccumulator::add(std::string_view source, std::string_view key, std::string_view field, TimestampNs ts_ns,
                            double value) {
  BucketKey k{std::string(source), std::string(key), std::string(field), floor_to(ts_ns, kRollupMinuteNs)};
  minutes_[std::move(k)].add(value);
}

Result<std::size_t> RollupAccumulator::write(Connection& conn) {
  // Hours and days first gathered in memory, so each stored row is read and replaced once.
  std::map<std::tuple<std::string, std::string, std::string, std::int64_t, TimestampNs>, analysis::Rollup> rows;
  for (const auto& [k, rollup] : minutes_) {
    const auto& [source, key, field, start] = k;
    for (std::int64_t tier : kRollupTiersNs) rows[{source, key, field, tier, floor_to(start, tier)}].merge(rollup);
  }
  auto select = conn.prepare((std::string("SELECT ") + kRowColumns +
                              " FROM rollups WHERE source = ?1 AND field = ?2 AND tier = ?3 AND key = ?4 AND start_ns = ?5")
                                 .c_str());
  auto insert = conn.prepare(
      "INSERT OR REPLACE INTO rollups (source, field, tier, key, start_ns, count, sum, m2, min, max, histogram) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
  if (!select.ok()) return select.status();
  if (!insert.ok()) return insert.status();
  for (auto& [k, rollup] : rows) {
    const auto& [source, key, field, tier, start] = k;
    const std::int64_t tier_s = tier / 1'000'000'000;
    select->bind(1, std::string_view(source)).bind(2, std::string_view(field)).bind(3, tier_s).bind(4, std::string_view(key)).bind(5, start);
    PERFSCOPE_ASSIGN_OR_RETURN(auto row, select->step());
    if (row) {
      PERFSCOPE_ASSIGN_OR_RETURN(auto stored, read_row(*select, 0));
      rollup.merge(stored);
    }
    select->reset();
    const std::string histogram = rollup.histogram.serialize();
    insert->bind(1, std::string_view(source)).bind(2, std::string_view(field)).bind(3, tier_s).bind(4, std::string_view(key))
        .bind(5, start).bind(6, static_cast<std::int64_t>(rollup.count)).bind(7, rollup.sum).bind(8, rollup.m2)
        .bind(9, rollup.min).bind(10, rollup.max).bind_blob(11, histogram);
    if (Status s = insert->run(); !s.ok()) return s;
  }
  minutes_.clear();
  return rows.size();
}

std::vector<TierSpan> cover_range(TimestampNs lo, TimestampNs hi) {
  std::vector<TierSpan> out;
  // Largest tier that fits whole in the middle, then the same for what is left on each side.
  auto cover = [&](auto& self, TimestampNs a, TimestampNs b, std::size_t tier) -> void {
    if (a >= b || tier >= std::size(kRollupTiersNs)) return;
    const std::int64_t w = kRollupTiersNs[tier];
    const TimestampNs inner_a = ceil_to(a, w), inner_b = floor_to(b, w);
    if (inner_a >= inner_b) {
      self(self, a, b, tier + 1);
      return;
    }
    self(self, a, inner_a, tier + 1);
    out.push_back({w, inner_a, inner_b});
    self(self, inner_b, b, tier + 1);
  };
  cover(cover, floor_to(lo, kRollupMinuteNs), ceil_to(hi, kRollupMinuteNs), 0);
  return out;
}

Result<std::optional<RollupAnswer>> read_rollups(Connection& conn, std::string_view source,
                                                 const std::vector<std::string>& keys, std::string_view field,
                                                 const TimeRange& range) {
  // A bucket overlapping the closed range counts whole: [floor(from), floor(to) + 1 minute).
  constexpr TimestampNs kLatest = INT64_MAX - 2 * 86'400'000'000'000;
  const TimestampNs lo = floor_to(std::max<TimestampNs>(range.from_ns, -kLatest), kRollupMinuteNs);
  const TimestampNs hi = floor_to(std::min(range.to_ns, kLatest), kRollupMinuteNs) + kRollupMinuteNs;
  if (lo >= hi || keys.empty()) return std::optional<RollupAnswer>();
  auto stmt = conn.prepare((std::string("SELECT ") + kRowColumns +
                            ", start_ns FROM rollups WHERE source = ?1 AND field = ?2 AND tier = ?3 AND key = ?4 "
                            "AND start_ns >= ?5 AND start_ns < ?6")
                               .c_str());
  if (!stmt.ok()) return stmt.status();
  RollupAnswer answer;
  answer.from_ns = INT64_MAX;
  answer.to_ns = INT64_MIN;
  Status failure;
  for (const TierSpan& span : cover_range(lo, hi)) {
    for (const std::string& key : keys) {
      stmt->bind(1, source).bind(2, field).bind(3, span.tier_ns / 1'000'000'000).bind(4, std::string_view(key))
          .bind(5, span.from_ns).bind(6, span.to_ns);
      Status s = stmt->for_each_row([&](Statement& r) {
        auto row = read_row(r, 0);
        if (!row.ok()) {
          failure = row.status();
          return;
        }
        answer.rollup.merge(*row);
        answer.from_ns = std::min(answer.from_ns, r.column_int64(6));
        answer.to_ns = std::max(answer.to_ns, r.column_int64(6) + span.tier_ns);
        ++answer.rows;
      });
      stmt->reset();
      if (!s.ok()) return s;
      if (!failure.ok()) return failure;
    }
  }
  if (answer.rows == 0) return std::optional<RollupAnswer>();
  PERFSCOPE_ASSIGN_OR_RETURN(auto cutoff, conn.prepare("SELECT raw_before_ns FROM retention WHERE id = 1"));
  PERFSCOPE_ASSIGN_OR_RETURN(auto row, cutoff.step());
  if (row) answer.raw_before_ns = cutoff.column_int64(0);
  return std::optional<RollupAnswer>(std::move(answer));
}

Result<std::vector<std::string>> rollup_keys(Connection& conn, std::string_view source, std::string_view field,
                                             std::string_view prefix) {
  // Every value has a day row, so the day tier lists every key. Keys starting with the prefix
  // sort in [prefix, prefix with its last byte raised), byte by byte.
  std::string end(prefix);
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xFF) end.pop_back();
  if (!end.empty()) end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  auto stmt = conn.prepare(
      "SELECT DISTINCT key FROM rollups WHERE source = ?1 AND field = ?2 AND tier = 86400 AND key >= ?3 "
      "AND (?4 = '' OR key < ?4)");
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, source).bind(2, field).bind(3, prefix).bind(4, std::string_view(end));
  std::vector<std::string> keys;
  Status s = stmt->for_each_row([&](Statement& r) { keys.push_back(r.column_text(0)); });
  if (!s.ok()) return s;
  return keys;
}

Result<std::optional<RollupAnswer>> read_rollups_by_prefix(Connection& conn, std::string_view source,
                                                           std::string_view field, std::string_view prefix,
                                                           const TimeRange& range) {
  PERFSCOPE_ASSIGN_OR_RETURN(auto keys, rollup_keys(conn, source, field, prefix));
  return read_rollups(conn, source, keys, field, range);
}

}  // namespace perfscope::db
