#include "db/device_event_reader.hpp"

#include <algorithm>

#include "db/internal/connection_pool.hpp"
#include "db/internal/migrations.hpp"
#include "db/internal/rollups.hpp"
#include "db/internal/tag_filter.hpp"

namespace perfscope::db {

Status MemoryEventReader::for_each_memory_event(const TimeRange& range,
                                                const std::function<void(const MemoryEvent&)>& fn,
                                                const EventScope& scope) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  const TagFilter filter = tag_filter(scope, "tags", 4);
  auto stmt = conn->prepare((std::string("SELECT ") + kMemoryEventColumns +
                                " FROM memory_events WHERE ts_ns >= ?1 AND ts_ns <= ?2 AND (?3 = '' OR device = ?3)" +
                                filter.sql + " ORDER BY id")
                                   .c_str());
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, range.from_ns).bind(2, range.to_ns).bind(3, scope.device);
  filter.bind(*stmt, 4);
  return stmt->for_each_row([&](Statement& r) { fn(read_memory_event(r)); });
}

Result<std::vector<AllocatedPoint>> MemoryEventReader::allocated_timeline(const TimeRange& range,
                                                                          const EventScope& scope,
                                                                          std::size_t max_points) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  // The running sum starts at the first event ever recorded: what was allocated before the
  // window, then the window's events in (time, id) order added one by one (a window function
  // over every event did the same several times slower). Module statics are not allocations
  // (is_module_static).
  auto before = conn->prepare(
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
  auto stmt = conn->prepare(
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

Result<std::vector<CommandBufferEvent>> CommandQueueReader::command_buffers(const TimeRange& range,
                                                                            const EventScope& scope) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  const TagFilter filter = tag_filter(scope, "tags", 4);
  auto stmt = conn->prepare(
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

Result<std::vector<double>> CommandQueueReader::command_buffer_latencies_ms(const std::string& queue,
                                                                            const std::string& device,
                                                                            const TimeRange& range) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  auto stmt = conn->prepare(
      "SELECT end_ns - submit_ns FROM command_buffers WHERE (?1 = '' OR queue = ?1) AND (?2 = '' OR device = ?2) "
      "AND end_ns BETWEEN ?3 AND ?4");
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, queue).bind(2, device).bind(3, range.from_ns).bind(4, range.to_ns);
  std::vector<double> out;
  Status s = stmt->for_each_row([&](Statement& r) { out.push_back(static_cast<double>(r.column_int64(0)) / 1e6); });
  if (!s.ok()) return s;
  return out;
}

Result<std::optional<RollupAnswer>> CommandQueueReader::command_buffer_rollup(const std::string& queue, const std::string& device,
                                                                       const TimeRange& range) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  if (!queue.empty() && !device.empty()) {
    return read_rollups(*conn, rollup_source::kCommandBuffer, {rollup_key(queue, device)}, "", range);
  }
  if (device.empty()) {
    return read_rollups_by_prefix(*conn, rollup_source::kCommandBuffer, "", queue.empty() ? "" : rollup_key(queue, ""), range);
  }
  // Every queue on one device: the device is the key's second part.
  PERFSCOPE_ASSIGN_OR_RETURN(auto keys, rollup_keys(*conn, rollup_source::kCommandBuffer, "", ""));
  std::erase_if(keys, [&](const std::string& k) { return !k.ends_with(rollup_key("", device)); });
  return read_rollups(*conn, rollup_source::kCommandBuffer, keys, "", range);
}

}  // namespace perfscope::db
