#include "db/event_reader.hpp"

#include <algorithm>
#include <map>

namespace perfscope::db {
namespace {

std::optional<std::int64_t> opt_int(const Statement& s, int col) {
  return s.column_is_null(col) ? std::nullopt : std::optional<std::int64_t>(s.column_int64(col));
}

}  // namespace

Result<std::vector<KernelSummary>> EventReader::kernel_summaries(const TimeRange& range,
                                                                 const std::string& device) const {
  auto conn = pool_.lease();
  if (!conn.ok()) return conn.status();
  auto stmt = (*conn)->prepare(
      "SELECT name, COUNT(*), SUM(end_ns - start_ns), MIN(end_ns - start_ns), MAX(end_ns - start_ns), "
      "GROUP_CONCAT(DISTINCT variant), GROUP_CONCAT(DISTINCT device) "
      "FROM kernels WHERE end_ns BETWEEN ?1 AND ?2 AND (?3 = '' OR device = ?3) GROUP BY name ORDER BY 3 DESC, name");
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, range.from_ns).bind(2, range.to_ns).bind(3, device);
  std::vector<KernelSummary> out;
  std::map<std::string, std::size_t> index;
  auto split = [](const std::string& list) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (start <= list.size() && !list.empty()) {
      std::size_t comma = list.find(',', start);
      std::string part = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!part.empty()) parts.push_back(part);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    std::sort(parts.begin(), parts.end());
    return parts;
  };
  Status s = stmt->for_each_row([&](Statement& r) {
    KernelSummary k;
    k.name = r.column_text(0);
    k.count = static_cast<std::uint64_t>(r.column_int64(1));
    k.total_ms = r.column_double(2) / 1e6;
    k.min_ms = r.column_double(3) / 1e6;
    k.max_ms = r.column_double(4) / 1e6;
    k.variants = split(r.column_text(5));
    k.devices = split(r.column_text(6));
    index[k.name] = out.size();
    out.push_back(std::move(k));
  });
  if (!s.ok()) return s;

  auto cfg = (*conn)->prepare(
      "SELECT name, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem_bytes, registers_per_thread, COUNT(*) "
      "FROM kernels WHERE end_ns BETWEEN ?1 AND ?2 AND (?3 = '' OR device = ?3) AND grid_x IS NOT NULL "
      "GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9 ORDER BY 10 DESC");
  if (!cfg.ok()) return cfg.status();
  cfg->bind(1, range.from_ns).bind(2, range.to_ns).bind(3, device);
  s = cfg->for_each_row([&](Statement& r) {
    auto it = index.find(r.column_text(0));
    if (it == index.end()) return;
    LaunchConfig c;
    for (int i = 0; i < 3; ++i) {
      c.grid[static_cast<std::size_t>(i)] = static_cast<std::uint32_t>(r.column_int64(1 + i));
      c.block[static_cast<std::size_t>(i)] = static_cast<std::uint32_t>(opt_int(r, 4 + i).value_or(1));
    }
    if (auto v = opt_int(r, 7)) c.shared_mem_bytes = static_cast<std::uint64_t>(*v);
    if (auto v = opt_int(r, 8)) c.registers_per_thread = static_cast<std::uint32_t>(*v);
    c.count = static_cast<std::uint64_t>(r.column_int64(9));
    out[it->second].launch_configs.push_back(c);
  });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<KernelEvent>> EventReader::kernel_records(const std::string& name, const TimeRange& range,
                                                             std::size_t limit) const {
  auto conn = pool_.lease();
  if (!conn.ok()) return conn.status();
  auto stmt = (*conn)->prepare(
      "SELECT name, device, variant, stream, start_ns, end_ns, grid_x, grid_y, grid_z, block_x, block_y, block_z, "
      "shared_mem_bytes, registers_per_thread, launch_start_ns, launch_end_ns, tags "
      "FROM kernels WHERE name = ?1 AND end_ns BETWEEN ?2 AND ?3 ORDER BY end_ns DESC, id DESC LIMIT ?4");
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, name).bind(2, range.from_ns).bind(3, range.to_ns).bind(4, static_cast<std::int64_t>(limit));
  std::vector<KernelEvent> out;
  Status s = stmt->for_each_row([&](Statement& r) {
    KernelEvent e;
    e.name = r.column_text(0);
    e.device = r.column_text(1);
    e.variant = r.column_text(2);
    e.stream = r.column_text(3);
    e.start_ns = r.column_int64(4);
    e.end_ns = r.column_int64(5);
    if (!r.column_is_null(6)) {
      e.grid = {static_cast<std::uint32_t>(r.column_int64(6)), static_cast<std::uint32_t>(r.column_int64(7)),
                static_cast<std::uint32_t>(r.column_int64(8))};
    }
    if (!r.column_is_null(9)) {
      e.block = {static_cast<std::uint32_t>(r.column_int64(9)), static_cast<std::uint32_t>(r.column_int64(10)),
                 static_cast<std::uint32_t>(r.column_int64(11))};
    }
    if (auto v = opt_int(r, 12)) e.shared_mem_bytes = static_cast<std::uint64_t>(*v);
    if (auto v = opt_int(r, 13)) e.registers_per_thread = static_cast<std::uint32_t>(*v);
    e.launch_start_ns = opt_int(r, 14);
    e.launch_end_ns = opt_int(r, 15);
    if (auto tags = parse_labels(r.column_text(16)); tags.ok()) e.tags = std::move(*tags);
    out.push_back(std::move(e));
  });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<InferenceSummary>> EventReader::inference_summaries(const TimeRange& range) const {
  auto conn = pool_.lease();
  if (!conn.ok()) return conn.status();
  auto stmt = (*conn)->prepare(
      "SELECT model, version, COUNT(*), SUM(1 - ok), SUM(batch_size), TOTAL(input_tokens), TOTAL(output_tokens), "
      "AVG(latency_ms), MIN(ts_ns), MAX(ts_ns) FROM inference WHERE ts_ns BETWEEN ?1 AND ?2 "
      "GROUP BY model, version ORDER BY model, version");
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, range.from_ns).bind(2, range.to_ns);
  std::vector<InferenceSummary> out;
  Status s = stmt->for_each_row([&](Statement& r) {
    InferenceSummary m;
    m.model = r.column_text(0);
    m.version = r.column_text(1);
    m.requests = static_cast<std::uint64_t>(r.column_int64(2));
    m.errors = static_cast<std::uint64_t>(r.column_int64(3));
    m.inferences = static_cast<std::uint64_t>(r.column_int64(4));
    m.input_tokens = static_cast<std::uint64_t>(r.column_double(5));
    m.output_tokens = static_cast<std::uint64_t>(r.column_double(6));
    m.mean_latency_ms = r.column_double(7);
    m.first_ns = r.column_int64(8);
    m.last_ns = r.column_int64(9);
    out.push_back(std::move(m));
  });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<AllocatedPoint>> EventReader::allocated_timeline(const TimeRange& range, const std::string& device,
                                                                    std::size_t max_points) const {
  auto conn = pool_.lease();
  if (!conn.ok()) return conn.status();
  // The running sum starts at the first event ever recorded, so it is filtered afterwards.
  auto stmt = (*conn)->prepare(
      "SELECT ts, running FROM (SELECT ts_ns AS ts, SUM(CASE op WHEN 'alloc' THEN size_bytes ELSE -size_bytes END) "
      "OVER (ORDER BY ts_ns, id) AS running FROM memory_events WHERE (?1 = '' OR device = ?1)) "
      "WHERE ts BETWEEN ?2 AND ?3");
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, device).bind(2, range.from_ns).bind(3, range.to_ns);
  std::vector<AllocatedPoint> all;
  Status s = stmt->for_each_row([&](Statement& r) { all.push_back({r.column_int64(0), r.column_double(1)}); });
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
  auto conn = pool_.lease();
  if (!conn.ok()) return conn.status();
  std::vector<std::pair<std::string, std::int64_t>> out;
  for (const char* table : {"kernels", "memory_events", "command_buffers", "inference", "operators", "samples"}) {
    std::string sql = std::string("SELECT COUNT(*) FROM ") + table;  // fixed table names, no input
    auto stmt = (*conn)->prepare(sql.c_str());
    if (!stmt.ok()) return stmt.status();
    auto row = stmt->step();
    if (!row.ok()) return row.status();
    out.emplace_back(table, stmt->column_int64(0));
  }
  return out;
}

}  // namespace perfscope::db
