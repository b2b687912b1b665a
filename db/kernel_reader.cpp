#include "db/kernel_reader.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "db/internal/connection_pool.hpp"
#include "db/internal/kernel_chunks.hpp"
#include "db/internal/rollups.hpp"
#include "db/internal/tag_filter.hpp"
#include "engine/base/saturating.hpp"

namespace perfscope::db {

namespace {

// The kernel_series ids a selector matches (tags: every wanted tag present).
Result<std::vector<std::int64_t>> matching_kernel_series(Connection& conn, const KernelSelector& sel) {
  const TagFilter filter = tag_filter(EventScope("", "", sel.tags), "tags", 5);
  auto series = conn.prepare(
      ("SELECT id FROM kernel_series WHERE (?1 = '' OR name = ?1) AND (?2 = '' OR variant = ?2) "
       "AND (?3 = '' OR device = ?3) AND (?4 = '' OR stream = ?4)" + filter.sql).c_str());
  if (!series.ok()) return series.status();
  series->bind(1, sel.name).bind(2, sel.variant).bind(3, sel.device).bind(4, sel.stream);
  filter.bind(*series, 5);
  std::vector<std::int64_t> ids;
  Status s = series->for_each_row([&](Statement& r) { ids.push_back(r.column_int64(0)); });
  if (!s.ok()) return s;
  return ids;
}

}  // namespace

Result<std::vector<KernelSummary>> KernelReader::kernel_summaries(const TimeRange& range,
                                                                  const EventScope& scope) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  const TagFilter filter = tag_filter(scope, "s.tags", 4);
  // Chunks wholly inside the range contribute their aggregates; the blob of the others is
  // unpacked and filtered (the data column is last: SQLite reads it only when asked).
  auto stmt = conn->prepare((std::string("SELECT ") + kKernelSeriesColumns +
                                ", c.count, c.total_ns, c.min_ns, c.max_ns, c.first_end_ns, c.last_end_ns, c.data "
                                "FROM kernel_chunks c JOIN kernel_series s ON s.id = c.series_id "
                                "WHERE c.last_end_ns >= ?1 AND c.first_end_ns <= ?2 AND (?3 = '' OR s.device = ?3)" +
                                filter.sql)
                                   .c_str());
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, range.from_ns).bind(2, range.to_ns).bind(3, scope.device);
  filter.bind(*stmt, 4);

  struct Acc {
    std::uint64_t count = 0;
    std::int64_t total_ns = 0, min_ns = INT64_MAX, max_ns = 0;
    analysis::KernelWork work;
    std::map<std::string, analysis::KernelWork> work_by_device;
    std::set<std::string> variants, devices, dtypes;
    std::map<std::tuple<std::array<std::uint32_t, 3>, std::array<std::uint32_t, 3>, std::int64_t, std::int64_t>,
             std::uint64_t>
        configs;
  };
  std::map<std::string, Acc> by_name;
  bool corrupt = false;
  constexpr int c0 = kKernelSeriesColumnCount;
  Status s = stmt->for_each_row([&](Statement& r) {
    KernelEvent series = read_kernel_series(r, 0);
    std::uint64_t count = 0;
    std::int64_t total = 0, mn = INT64_MAX, mx = 0;
    if (r.column_int64(c0 + 4) >= range.from_ns && r.column_int64(c0 + 5) <= range.to_ns) {
      count = static_cast<std::uint64_t>(r.column_int64(c0));
      total = r.column_int64(c0 + 1);
      mn = r.column_int64(c0 + 2);
      mx = r.column_int64(c0 + 3);
    } else {
      corrupt |= !unpack_kernel_chunk_in_range(r.column_blob(c0 + 6), r.column_int64(c0), range, [&](const KernelTiming& t) {
        std::int64_t d = t.end_ns - t.start_ns;
        ++count;
        total = saturating_add(total, d);
        mn = std::min(mn, d);
        mx = std::max(mx, d);
      });
    }
    if (count == 0) return;
    Acc& a = by_name[series.name];
    a.count += count;
    a.total_ns = saturating_add(a.total_ns, total);
    a.min_ns = std::min(a.min_ns, mn);
    a.max_ns = std::max(a.max_ns, mx);
    if (series.flops || series.bytes) {
      a.work.add(series, count, total);
      a.work_by_device[series.device].add(series, count, total);
      if (series.flops && !series.dtype.empty()) a.dtypes.insert(series.dtype);
    }
    if (!series.variant.empty()) a.variants.insert(series.variant);
    a.devices.insert(series.device);
    if (series.grid) {
      auto key = std::make_tuple(*series.grid, series.block.value_or(std::array<std::uint32_t, 3>{1, 1, 1}),
                                 series.shared_mem_bytes ? static_cast<std::int64_t>(*series.shared_mem_bytes) : -1,
                                 series.registers_per_thread ? static_cast<std::int64_t>(*series.registers_per_thread) : -1);
      a.configs[key] += count;
    }
  });
  if (!s.ok()) return s;
  if (corrupt) return Status::internal("a kernel chunk in the database is corrupt");

  std::vector<KernelSummary> out;
  for (auto& [name, a] : by_name) {
    KernelSummary k;
    k.name = name;
    k.count = a.count;
    k.total_ms = static_cast<double>(a.total_ns) / 1e6;
    k.min_ms = static_cast<double>(a.min_ns) / 1e6;
    k.max_ms = static_cast<double>(a.max_ns) / 1e6;
    k.work = a.work;
    k.work_by_device = std::move(a.work_by_device);
    k.dtypes.assign(a.dtypes.begin(), a.dtypes.end());
    k.variants.assign(a.variants.begin(), a.variants.end());
    k.devices.assign(a.devices.begin(), a.devices.end());
    for (const auto& [key, n] : a.configs) {
      LaunchConfig c;
      c.grid = std::get<0>(key);
      c.block = std::get<1>(key);
      if (std::get<2>(key) >= 0) c.shared_mem_bytes = static_cast<std::uint64_t>(std::get<2>(key));
      if (std::get<3>(key) >= 0) c.registers_per_thread = static_cast<std::uint32_t>(std::get<3>(key));
      c.count = n;
      k.launch_configs.push_back(c);
    }
    std::stable_sort(k.launch_configs.begin(), k.launch_configs.end(),
                     [](const LaunchConfig& x, const LaunchConfig& y) { return x.count > y.count; });
    out.push_back(std::move(k));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const KernelSummary& x, const KernelSummary& y) { return x.total_ms > y.total_ms; });
  return out;
}

Result<std::vector<KernelEvent>> KernelReader::kernel_records(const std::string& name, const TimeRange& range,
                                                              std::size_t limit, const EventScope& scope) const {
  if (limit == 0) return std::vector<KernelEvent>{};
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  // Newest chunks first, without their data (a sort carries whole rows); each chunk's data
  // is fetched only while it can still hold one of the `limit` newest records.
  const TagFilter filter = tag_filter(scope, "s.tags", 5);
  auto chunks = conn->prepare(
      (std::string("SELECT c.id, c.series_id, c.last_end_ns FROM kernel_chunks c JOIN kernel_series s ON s.id = c.series_id ") +
      ("WHERE s.name = ?1 AND c.last_end_ns >= ?2 AND c.first_end_ns <= ?3 AND (?4 = '' OR s.device = ?4)" + filter.sql +
       " ORDER BY c.last_end_ns DESC")).c_str());
  auto data = conn->prepare("SELECT count, data FROM kernel_chunks WHERE id = ?1");
  auto series = conn->prepare((std::string("SELECT ") + kKernelSeriesColumns + " FROM kernel_series s WHERE s.id = ?1").c_str());
  if (!chunks.ok()) return chunks.status();
  if (!data.ok()) return data.status();
  if (!series.ok()) return series.status();
  chunks->bind(1, name).bind(2, range.from_ns).bind(3, range.to_ns).bind(4, scope.device);
  filter.bind(*chunks, 5);

  std::map<std::int64_t, KernelEvent> identities;
  std::vector<KernelEvent> out;
  auto newer = [](const KernelEvent& a, const KernelEvent& b) {
    return a.end_ns != b.end_ns ? a.end_ns > b.end_ns : a.start_ns > b.start_ns;
  };
  Status failure;
  Status s = chunks->for_each_row([&](Statement& r) {
    if (!failure.ok()) return;
    if (out.size() >= limit && r.column_int64(2) < out[limit - 1].end_ns) return;  // nothing newer left here
    std::int64_t series_id = r.column_int64(1);
    auto it = identities.find(series_id);
    if (it == identities.end()) {
      series->bind(1, series_id);
      auto row = series->step();
      if (!row.ok() || !*row) {
        failure = row.ok() ? Status::internal("kernel series row missing") : row.status();
        series->reset();
        return;
      }
      it = identities.emplace(series_id, read_kernel_series(*series, 0)).first;
      series->reset();
    }
    data->bind(1, r.column_int64(0));
    auto row = data->step();
    if (!row.ok() || !*row) {
      failure = row.ok() ? Status::internal("kernel chunk row missing") : row.status();
      data->reset();
      return;
    }
    bool ok = unpack_kernel_chunk_in_range(data->column_blob(1), data->column_int64(0), range, [&](const KernelTiming& t) {
      KernelEvent e = it->second;
      e.start_ns = t.start_ns;
      e.end_ns = t.end_ns;
      e.launch_start_ns = t.launch_start_ns;
      e.launch_end_ns = t.launch_end_ns;
      out.push_back(std::move(e));
    });
    data->reset();
    if (!ok) failure = Status::internal("a kernel chunk in the database is corrupt");
    if (out.size() > limit) {  // keep the newest `limit`, sorted, so the check above can stop early
      std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(limit), out.end(), newer);
      out.resize(limit);
    } else {
      std::sort(out.begin(), out.end(), newer);
    }
  });
  if (!s.ok()) return s;
  if (!failure.ok()) return failure;
  return out;
}

Status KernelReader::for_each_kernel(const TimeRange& range, const EventScope& scope,
                                     const std::function<void(const KernelEvent&)>& fn) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  const TagFilter filter = tag_filter(scope, "s.tags", 4);
  auto stmt = conn->prepare((std::string("SELECT ") + kKernelSeriesColumns +
                                ", c.count, c.data FROM kernel_chunks c JOIN kernel_series s ON s.id = c.series_id "
                                "WHERE c.last_end_ns >= ?1 AND c.first_end_ns <= ?2 AND (?3 = '' OR s.device = ?3)" +
                                filter.sql + " ORDER BY c.id")
                                   .c_str());
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, range.from_ns).bind(2, range.to_ns).bind(3, scope.device);
  filter.bind(*stmt, 4);
  constexpr int c0 = kKernelSeriesColumnCount;
  bool corrupt = false;
  Status s = stmt->for_each_row([&](Statement& r) {
    KernelEvent e = read_kernel_series(r, 0);
    corrupt |= !unpack_kernel_chunk_in_range(r.column_blob(c0 + 1), r.column_int64(c0), range, [&](const KernelTiming& t) {
      e.start_ns = t.start_ns;
      e.end_ns = t.end_ns;
      e.launch_start_ns = t.launch_start_ns;
      e.launch_end_ns = t.launch_end_ns;
      fn(e);
    });
  });
  if (!s.ok()) return s;
  if (corrupt) return Status::internal("a kernel chunk in the database is corrupt");
  return Status();
}

Result<analysis::KernelTrace> KernelReader::kernel_trace(const TimeRange& range, const EventScope& scope) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto traces, kernel_traces(range, scope, /*by_run=*/false));
  return traces.empty() ? analysis::KernelTrace{} : std::move(traces.front().trace);
}

Result<std::vector<RunKernelTrace>> KernelReader::kernel_traces_by_run(const TimeRange& range,
                                                                       const EventScope& scope) const {
  return kernel_traces(range, scope, /*by_run=*/true);
}

Result<std::vector<RunKernelTrace>> KernelReader::kernel_traces(const TimeRange& range, const EventScope& scope,
                                                                bool by_run) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  // Series by series, each in time order (the series index's order, no sort): a stream's
  // executions then come as a few runs of ascending start, which the timeline merges.
  const TagFilter filter = tag_filter(scope, "s.tags", 4);
  auto stmt = conn->prepare(
      (std::string("SELECT s.id, s.name, s.device, s.stream, s.tags, c.count, c.data FROM kernel_series s "
                  "CROSS JOIN kernel_chunks c ON c.series_id = s.id ") +
      ("WHERE c.last_end_ns >= ?1 AND c.first_end_ns <= ?2 AND (?3 = '' OR s.device = ?3)" + filter.sql +
       " ORDER BY s.id, c.last_end_ns")).c_str());
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, range.from_ns).bind(2, range.to_ns).bind(3, scope.device);
  filter.bind(*stmt, 4);

  // One trace per run (or one for all), its strings interned: executions carry small indices.
  struct Group {
    RunKernelTrace out;
    std::map<std::string, std::uint32_t> names, devices, streams;
  };
  std::map<std::string, Group> groups;
  // Room for every execution of the overlapping chunks at once, not by repeated doubling. With
  // runs each trace gets room for all: reserved, not touched, so only what is used is paid for.
  std::size_t room = 0;
  {
    auto total = conn->prepare(
        (std::string("SELECT IFNULL(SUM(c.count), 0) FROM kernel_chunks c JOIN kernel_series s ON s.id = c.series_id ") +
        ("WHERE c.last_end_ns >= ?1 AND c.first_end_ns <= ?2 AND (?3 = '' OR s.device = ?3)" + filter.sql)).c_str());
    if (!total.ok()) return total.status();
    total->bind(1, range.from_ns).bind(2, range.to_ns).bind(3, scope.device);
    filter.bind(*total, 4);
    PERFSCOPE_RETURN_IF_ERROR(total->step().status());
    room = static_cast<std::size_t>(total->column_int64(0));
  }
  auto intern = [](std::map<std::string, std::uint32_t>& index, std::vector<std::string>& list, std::string text) {
    auto [it, added] = index.emplace(text, static_cast<std::uint32_t>(list.size()));
    if (added) list.push_back(std::move(text));
    return it->second;
  };
  struct SeriesPlace {
    Group* group;
    std::uint32_t name, device, stream;
  };
  bool corrupt = false;
  std::map<std::int64_t, SeriesPlace> series;
  Status s = stmt->for_each_row([&](Statement& r) {
    auto known = series.find(r.column_int64(0));
    if (known == series.end()) {
      std::string run;
      if (by_run) {
        auto tags = parse_labels(r.column_text(4));
        if (tags.ok()) run = std::string(tag_value(*tags, "run"));
      }
      Group& g = groups[run];
      if (g.out.trace.kernels.capacity() == 0) g.out.trace.kernels.reserve(room);
      g.out.run = run;
      known = series.emplace(r.column_int64(0), SeriesPlace{&g, intern(g.names, g.out.trace.names, r.column_text(1)),
                                                            intern(g.devices, g.out.trace.devices, r.column_text(2)),
                                                            intern(g.streams, g.out.trace.streams, r.column_text(3))})
                  .first;
    }
    const SeriesPlace& at = known->second;
    auto& kernels = at.group->out.trace.kernels;
    corrupt |= !unpack_kernel_chunk_in_range(r.column_blob(6), r.column_int64(5), range, [&](const KernelTiming& t) {
      kernels.push_back({t.start_ns, t.end_ns, t.launch_start_ns.value_or(analysis::kNoLaunch),
                         t.launch_end_ns.value_or(analysis::kNoLaunch), at.name, at.device, at.stream});
    });
  });
  if (!s.ok()) return s;
  if (corrupt) return Status::internal("a kernel chunk in the database is corrupt");
  std::vector<RunKernelTrace> out;
  for (auto& [run, g] : groups) out.push_back(std::move(g.out));
  return out;
}

Result<std::vector<double>> KernelReader::kernel_durations_ms(const KernelSelector& sel, const TimeRange& range) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  auto chunks = conn->prepare(
      "SELECT count, total_ns, first_end_ns, last_end_ns, data FROM kernel_chunks "
      "WHERE series_id = ?1 AND last_end_ns >= ?2 AND first_end_ns <= ?3");
  if (!chunks.ok()) return chunks.status();
  PERFSCOPE_ASSIGN_OR_RETURN(auto matched, matching_kernel_series(*conn, sel));
  const std::vector<std::int64_t>& ids = matched;
  Status s;
  std::vector<double> out;
  bool corrupt = false;
  for (std::int64_t id : ids) {
    chunks->bind(1, id).bind(2, range.from_ns).bind(3, range.to_ns);
    s = chunks->for_each_row([&](Statement& r) {
      corrupt |= !unpack_kernel_chunk_in_range(r.column_blob(4), r.column_int64(0), range, [&](const KernelTiming& t) {
        out.push_back(static_cast<double>(t.end_ns - t.start_ns) / 1e6);
      });
    });
    chunks->reset();
    if (!s.ok()) return s;
  }
  if (corrupt) return Status::internal("a kernel chunk in the database is corrupt");
  return out;
}

Result<std::optional<RollupAnswer>> KernelReader::kernel_rollup(const KernelSelector& sel,
                                                                const TimeRange& range) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  PERFSCOPE_ASSIGN_OR_RETURN(auto ids, matching_kernel_series(*conn, sel));
  std::vector<std::string> keys;
  for (std::int64_t id : ids) keys.push_back(std::to_string(id));
  return read_rollups(*conn, rollup_source::kKernel, keys, "", range);
}

}  // namespace perfscope::db
