#include "db/event_reader.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "db/internal/connection_pool.hpp"
#include "db/internal/kernel_chunks.hpp"
#include "db/internal/tag_filter.hpp"
#include "db/internal/migrations.hpp"
#include "engine/base/saturating.hpp"

namespace perfscope::db {

Tags EventScope::wanted_tags() const {
  Tags wanted = tags;
  if (!run.empty()) wanted.emplace_back("run", run);
  sort_labels(wanted);
  return wanted;
}

EventReader::EventReader(std::string path) : pool_(std::make_unique<ConnectionPool>(std::move(path))) {}
EventReader::~EventReader() = default;

Result<std::vector<KernelSummary>> EventReader::kernel_summaries(const TimeRange& range, const EventScope& scope) const {
  auto conn = pool_->lease();
  if (!conn.ok()) return conn.status();
  const TagFilter filter = tag_filter(scope, "s.tags", 4);
  // Chunks wholly inside the range contribute their aggregates; the blob of the others is
  // unpacked and filtered (the data column is last: SQLite reads it only when asked).
  auto stmt = (*conn)->prepare((std::string("SELECT ") + kKernelSeriesColumns +
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

Result<std::vector<KernelEvent>> EventReader::kernel_records(const std::string& name, const TimeRange& range,
                                                             std::size_t limit, const EventScope& scope) const {
  if (limit == 0) return std::vector<KernelEvent>{};
  auto conn = pool_->lease();
  if (!conn.ok()) return conn.status();
  // Newest chunks first, without their data (a sort carries whole rows); each chunk's data
  // is fetched only while it can still hold one of the `limit` newest records.
  const TagFilter filter = tag_filter(scope, "s.tags", 5);
  auto chunks = (*conn)->prepare(
      (std::string("SELECT c.id, c.series_id, c.last_end_ns FROM kernel_chunks c JOIN kernel_series s ON s.id = c.series_id ") +
      ("WHERE s.name = ?1 AND c.last_end_ns >= ?2 AND c.first_end_ns <= ?3 AND (?4 = '' OR s.device = ?4)" + filter.sql +
       " ORDER BY c.last_end_ns DESC")).c_str());
  auto data = (*conn)->prepare("SELECT count, data FROM kernel_chunks WHERE id = ?1");
  auto series = (*conn)->prepare((std::string("SELECT ") + kKernelSeriesColumns + " FROM kernel_series s WHERE s.id = ?1").c_str());
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

Status EventReader::for_each_kernel(const TimeRange& range, const EventScope& scope,
                                    const std::function<void(const KernelEvent&)>& fn) const {
  auto conn = pool_->lease();
  if (!conn.ok()) return conn.status();
  const TagFilter filter = tag_filter(scope, "s.tags", 4);
  auto stmt = (*conn)->prepare((std::string("SELECT ") + kKernelSeriesColumns +
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

Status EventReader::for_each_memory_event(const TimeRange& range, const std::function<void(const MemoryEvent&)>& fn,
                                          const EventScope& scope) const {
  auto conn = pool_->lease();
  if (!conn.ok()) return conn.status();
  const TagFilter filter = tag_filter(scope, "tags", 4);
  auto stmt = (*conn)->prepare((std::string("SELECT ") + kMemoryEventColumns +
                                " FROM memory_events WHERE ts_ns >= ?1 AND ts_ns <= ?2 AND (?3 = '' OR device = ?3)" +
                                filter.sql + " ORDER BY id")
                                   .c_str());
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, range.from_ns).bind(2, range.to_ns).bind(3, scope.device);
  filter.bind(*stmt, 4);
  return stmt->for_each_row([&](Statement& r) { fn(read_memory_event(r)); });
}

Result<analysis::KernelTrace> EventReader::kernel_trace(const TimeRange& range, const EventScope& scope) const {
  auto traces = kernel_traces(range, scope, /*by_run=*/false);
  if (!traces.ok()) return traces.status();
  return traces->empty() ? analysis::KernelTrace{} : std::move(traces->front().trace);
}

Result<std::vector<RunKernelTrace>> EventReader::kernel_traces_by_run(const TimeRange& range,
                                                                     const EventScope& scope) const {
  return kernel_traces(range, scope, /*by_run=*/true);
}

Result<std::vector<RunKernelTrace>> EventReader::kernel_traces(const TimeRange& range, const EventScope& scope,
                                                               bool by_run) const {
  auto conn = pool_->lease();
  if (!conn.ok()) return conn.status();
  // Series by series, each in time order (the series index's order, no sort): a stream's
  // executions then come as a few runs of ascending start, which the timeline merges.
  const TagFilter filter = tag_filter(scope, "s.tags", 4);
  auto stmt = (*conn)->prepare(
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
    auto total = (*conn)->prepare(
        (std::string("SELECT IFNULL(SUM(c.count), 0) FROM kernel_chunks c JOIN kernel_series s ON s.id = c.series_id ") +
        ("WHERE c.last_end_ns >= ?1 AND c.first_end_ns <= ?2 AND (?3 = '' OR s.device = ?3)" + filter.sql)).c_str());
    if (!total.ok()) return total.status();
    total->bind(1, range.from_ns).bind(2, range.to_ns).bind(3, scope.device);
    filter.bind(*total, 4);
    auto row = total->step();
    if (!row.ok()) return row.status();
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

Result<std::vector<CommandBufferEvent>> EventReader::command_buffers(const TimeRange& range,
                                                                    const EventScope& scope) const {
  auto conn = pool_->lease();
  if (!conn.ok()) return conn.status();
  const TagFilter filter = tag_filter(scope, "tags", 4);
  auto stmt = (*conn)->prepare(
      (std::string("SELECT buffer_id, queue, device, enqueue_ns, submit_ns, start_ns, end_ns FROM command_buffers ") +
      ("WHERE end_ns BETWEEN ?1 AND ?2 AND (?3 = '' OR device = ?3)" + filter.sql)).c_str());
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, range.from_ns).bind(2, range.to_ns).bind(3, scope.device);
  filter.bind(*stmt, 4);
  std::vector<CommandBufferEvent> out;
  Status s = stmt->for_each_row([&](Statement& r) {
    CommandBufferEvent e;
    e.id = r.column_text(0);
    e.queue = r.column_text(1);
    e.device = r.column_text(2);
    e.enqueue_ns = r.column_int64(3);
    e.submit_ns = r.column_int64(4);
    e.start_ns = r.column_int64(5);
    e.end_ns = r.column_int64(6);
    out.push_back(std::move(e));
  });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<InferenceEvent>> EventReader::inference_events(const TimeRange& range, const EventScope& scope) const {
  auto conn = pool_->lease();
  if (!conn.ok()) return conn.status();
  const TagFilter filter = tag_filter(scope, "tags", 3);
  auto stmt = (*conn)->prepare(
      ("SELECT model, version, ts_ns, latency_ms, queue_ms, compute_ms, batch_size, ok, ttft_ms, input_tokens, "
       "output_tokens FROM inference WHERE ts_ns BETWEEN ?1 AND ?2" + filter.sql).c_str());
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, range.from_ns).bind(2, range.to_ns);
  filter.bind(*stmt, 3);
  std::vector<InferenceEvent> out;
  auto opt_double = [](const Statement& r, int c) {
    return r.column_is_null(c) ? std::nullopt : std::optional<double>(r.column_double(c));
  };
  auto opt_count = [](const Statement& r, int c) {
    return r.column_is_null(c) ? std::nullopt : std::optional<std::uint64_t>(static_cast<std::uint64_t>(r.column_int64(c)));
  };
  Status s = stmt->for_each_row([&](Statement& r) {
    InferenceEvent e;
    e.model = r.column_text(0);
    e.version = r.column_text(1);
    e.ts_ns = r.column_int64(2);
    e.latency_ms = r.column_double(3);
    e.queue_ms = opt_double(r, 4);
    e.compute_ms = opt_double(r, 5);
    e.batch_size = static_cast<std::uint32_t>(r.column_int64(6));
    e.ok = r.column_int64(7) != 0;
    e.ttft_ms = opt_double(r, 8);
    e.input_tokens = opt_count(r, 9);
    e.output_tokens = opt_count(r, 10);
    out.push_back(std::move(e));
  });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<analysis::OperatorExecution>> EventReader::operator_executions(const OperatorSelector& which,
                                                                                 const TimeRange& range) const {
  auto conn = pool_->lease();
  if (!conn.ok()) return conn.status();
  const TagFilter filter = tag_filter(EventScope("", "", which.tags), "tags", 6);
  auto stmt = (*conn)->prepare(
      ("SELECT op_type, name, provider, model, input_shapes, duration_ms, ts_ns FROM operators "
       "WHERE ts_ns BETWEEN ?1 AND ?2 AND (?3 = '' OR op_type = ?3 OR name = ?3) AND (?4 = '' OR model = ?4) "
       "AND (?5 = '' OR provider = ?5)" + filter.sql).c_str());
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, range.from_ns).bind(2, range.to_ns).bind(3, which.op).bind(4, which.model).bind(5, which.provider);
  filter.bind(*stmt, 6);
  std::vector<analysis::OperatorExecution> out;
  Status s = stmt->for_each_row([&](Statement& r) {
    out.push_back({r.column_text(0), r.column_text(1), r.column_text(2), r.column_text(3), r.column_text(4),
                   r.column_double(5), r.column_int64(6)});
  });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<InferenceSummary>> EventReader::inference_summaries(const TimeRange& range,
                                                                       const EventScope& scope) const {
  auto conn = pool_->lease();
  if (!conn.ok()) return conn.status();
  const TagFilter filter = tag_filter(scope, "tags", 3);
  auto stmt = (*conn)->prepare(
      ("SELECT model, version, COUNT(*), SUM(1 - ok), SUM(batch_size), TOTAL(input_tokens), TOTAL(output_tokens), "
       "AVG(latency_ms), MIN(ts_ns), MAX(ts_ns) FROM inference WHERE ts_ns BETWEEN ?1 AND ?2" +
       filter.sql + " GROUP BY model, version ORDER BY model, version").c_str());
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, range.from_ns).bind(2, range.to_ns);
  filter.bind(*stmt, 3);
  std::vector<InferenceSummary> out;
  Status s = stmt->for_each_row([&](Statement& r) {
    InferenceSummary m;
    m.model = r.column_text(0);
    m.version = r.column_text(1);
    m.requests = static_cast<std::uint64_t>(r.column_int64(2));
    m.errors = static_cast<std::uint64_t>(r.column_int64(3));
    m.inferences = static_cast<std::uint64_t>(r.column_int64(4));
    m.input_tokens = saturating_count(r.column_double(5));
    m.output_tokens = saturating_count(r.column_double(6));
    m.mean_latency_ms = r.column_double(7);
    m.first_ns = r.column_int64(8);
    m.last_ns = r.column_int64(9);
    out.push_back(std::move(m));
  });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<AllocatedPoint>> EventReader::allocated_timeline(const TimeRange& range, const EventScope& scope,
                                                                    std::size_t max_points) const {
  auto conn = pool_->lease();
  if (!conn.ok()) return conn.status();
  // The running sum starts at the first event ever recorded: what was allocated before the
  // window, then the window's events in (time, id) order added one by one (a window function
  // over every event did the same several times slower). Module statics are not allocations
  // (is_module_static).
  auto before = (*conn)->prepare(
      (std::string("SELECT TOTAL(CASE op WHEN 'alloc' THEN size_bytes ELSE -size_bytes END) FROM memory_events ") +
      ("WHERE ts_ns < ?2 AND (?1 = '' OR device = ?1) AND tag NOT IN ('device_static', 'managed_static')" +
       tag_filter(scope, "tags", 3).sql)).c_str());
  if (!before.ok()) return before.status();
  const TagFilter filter = tag_filter(scope, "tags", 3);
  before->bind(1, scope.device).bind(2, range.from_ns);
  filter.bind(*before, 3);
  if (auto row = before->step(); !row.ok()) return row.status();
  // In floating point: sizes a database of any age holds cannot make the sum fail (SQLite's
  // SUM stops with "integer overflow") or wrap.
  double running = before->column_double(0);
  auto stmt = (*conn)->prepare(
      (std::string("SELECT ts_ns, CASE op WHEN 'alloc' THEN size_bytes ELSE -size_bytes END FROM memory_events ") +
      ("WHERE ts_ns BETWEEN ?2 AND ?3 AND (?1 = '' OR device = ?1) AND tag NOT IN ('device_static', 'managed_static')" +
       tag_filter(scope, "tags", 4).sql + " ORDER BY ts_ns, id")).c_str());
  if (!stmt.ok()) return stmt.status();
  const TagFilter window_filter = tag_filter(scope, "tags", 4);  // bound text must outlive the statement's run
  stmt->bind(1, scope.device).bind(2, range.from_ns).bind(3, range.to_ns);
  window_filter.bind(*stmt, 4);
  std::vector<AllocatedPoint> all;
  Status s = stmt->for_each_row([&](Statement& r) {
    running += static_cast<double>(r.column_int64(1));
    all.push_back({r.column_int64(0), running});
  });
  if (!s.ok()) return s;
  if (all.size() <= max_points || max_points == 0) return all;
  // Keep each bucket's highest point: a timeline of memory must not hide its peaks.
  TimestampNs first = all.front().ts_ns, last = all.back().ts_ns;
  TimestampNs width = std::max<TimestampNs>(1, (last - first) / static_cast<TimestampNs>(max_points) + 1);
  std::vector<AllocatedPoint> out;
  for (const AllocatedPoint& p : all) {
    TimestampNs bucket = first + (p.ts_ns - first) / width * width;
    if (out.empty() || out.back().ts_ns != bucket) {
      out.push_back({bucket, p.bytes});
    } else {
      out.back().bytes = std::max(out.back().bytes, p.bytes);
    }
  }
  return out;
}

Result<std::vector<std::pair<std::string, std::int64_t>>> EventReader::table_counts() const {
  auto conn = pool_->lease();
  if (!conn.ok()) return conn.status();
  std::vector<std::pair<std::string, std::int64_t>> out;
  // Kernels and samples are counted inside their chunks.
  const std::pair<const char*, const char*> counts[] = {
      {"kernels", "SELECT IFNULL(SUM(count), 0) FROM kernel_chunks"},
      {"memory_events", "SELECT COUNT(*) FROM memory_events"},
      {"command_buffers", "SELECT COUNT(*) FROM command_buffers"},
      {"inference", "SELECT COUNT(*) FROM inference"},
      {"operators", "SELECT COUNT(*) FROM operators"},
      {"samples", "SELECT IFNULL(SUM(count), 0) FROM sample_chunks"},
  };
  for (const auto& [table, sql] : counts) {
    auto stmt = (*conn)->prepare(sql);
    if (!stmt.ok()) return stmt.status();
    auto row = stmt->step();
    if (!row.ok()) return row.status();
    out.emplace_back(table, stmt->column_int64(0));
  }
  return out;
}

}  // namespace perfscope::db
