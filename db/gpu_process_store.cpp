#include "db/internal/gpu_process_rows.hpp"

#include "db/internal/connection_pool.hpp"
#include "db/internal/writer_tasks.hpp"

namespace perfscope::db {

namespace {

constexpr const char* kColumns =
    "gpu_uuid, gpu, process_key, pid, start_ticks, command, cmdline, uid, container_runtime, container_id, pod_uid, "
    "qos_class, cgroup, visible, running, first_seen_ns, last_seen_ns, observed_seconds, memory_byte_seconds, "
    "peak_memory_bytes, sm_observed_seconds, gpu_seconds, max_sm_ratio, energy_joules, cpu_seconds, peak_rss_bytes, "
    "pod_namespace, pod_name, container_name";

GpuProcessRecord read_row(const Statement& r) {
  GpuProcessRecord p;
  p.gpu_uuid = r.column_text(0);
  p.gpu = r.column_text(1);
  p.key = r.column_text(2);
  p.identity.pid = static_cast<int>(r.column_int64(3));
  p.identity.start_ticks = static_cast<std::uint64_t>(r.column_int64(4));
  p.identity.command = r.column_text(5);
  p.identity.cmdline = r.column_text(6);
  if (!r.column_is_null(7)) p.identity.uid = static_cast<std::uint32_t>(r.column_int64(7));
  p.identity.container.runtime = r.column_text(8);
  p.identity.container.id = r.column_text(9);
  p.identity.container.pod_uid = r.column_text(10);
  p.identity.container.qos_class = r.column_text(11);
  p.identity.container.cgroup = r.column_text(12);
  p.visible = r.column_int64(13) != 0;
  p.running = r.column_int64(14) != 0;
  p.first_seen_ns = r.column_int64(15);
  p.last_seen_ns = r.column_int64(16);
  p.observed_seconds = r.column_double(17);
  p.memory_byte_seconds = r.column_double(18);
  p.peak_memory_bytes = r.column_double(19);
  p.sm_observed_seconds = r.column_double(20);
  p.gpu_seconds = r.column_double(21);
  p.max_sm_ratio = r.column_double(22);
  p.energy_joules = r.column_double(23);
  p.cpu_seconds = r.column_double(24);
  p.peak_rss_bytes = r.column_double(25);
  p.identity.container.pod_namespace = r.column_text(26);
  p.identity.container.pod_name = r.column_text(27);
  p.identity.container.name = r.column_text(28);
  return p;
}

}  // namespace

void store_gpu_processes(Writer& writer, std::vector<GpuProcessRecord> records, Writer::Completion done) {
  WriterTasks::run(
      writer, [records = std::move(records)](Connection& c) { return write_gpu_processes(c, records); }, std::move(done));
}

Status write_gpu_processes(Connection& conn, const std::vector<GpuProcessRecord>& records) {
  auto find = conn.prepare((std::string("SELECT ") + kColumns + " FROM gpu_processes WHERE gpu_uuid = ?1 AND process_key = ?2").c_str());
  if (!find.ok()) return find.status();
  auto put = conn.prepare((std::string("INSERT OR REPLACE INTO gpu_processes(") + kColumns +
                           ") VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, "
                           "?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29)")
                          .c_str());
  if (!put.ok()) return put.status();
  for (const GpuProcessRecord& record : records) {
    find->bind(1, record.gpu_uuid).bind(2, record.key);
    PERFSCOPE_ASSIGN_OR_RETURN(auto row, find->step());
    GpuProcessRecord p = record;
    if (row) {
      p = read_row(*find);
      p.merge(record);
    }
    find->reset();
    const ContainerIdentity& c = p.identity.container;
    put->bind(1, p.gpu_uuid).bind(2, p.gpu).bind(3, p.key).bind(4, static_cast<std::int64_t>(p.identity.pid));
    put->bind(5, static_cast<std::int64_t>(p.identity.start_ticks)).bind(6, p.identity.command).bind(7, p.identity.cmdline);
    put->bind_optional(8, p.identity.uid);
    put->bind(9, c.runtime).bind(10, c.id).bind(11, c.pod_uid).bind(12, c.qos_class).bind(13, c.cgroup);
    put->bind(14, static_cast<std::int64_t>(p.visible)).bind(15, static_cast<std::int64_t>(p.running));
    put->bind(16, p.first_seen_ns).bind(17, p.last_seen_ns).bind(18, p.observed_seconds).bind(19, p.memory_byte_seconds);
    put->bind(20, p.peak_memory_bytes).bind(21, p.sm_observed_seconds).bind(22, p.gpu_seconds).bind(23, p.max_sm_ratio);
    put->bind(24, p.energy_joules).bind(25, p.cpu_seconds).bind(26, p.peak_rss_bytes);
    put->bind(27, c.pod_namespace).bind(28, c.pod_name).bind(29, c.name);
    if (Status s = put->run(); !s.ok()) return s;
  }
  return Status();
}

Result<std::vector<GpuProcessRecord>> read_gpu_processes(Connection& conn, TimestampNs from_ns, TimestampNs to_ns,
                                                         std::size_t limit, const std::string& key) {
  auto stmt = conn.prepare((std::string("SELECT ") + kColumns +
                            " FROM gpu_processes WHERE last_seen_ns >= ?1 AND first_seen_ns <= ?2 AND (?4 = '' OR process_key = ?4) "
                            "ORDER BY last_seen_ns DESC, gpu_uuid, process_key LIMIT ?3")
                               .c_str());
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, from_ns).bind(2, to_ns).bind(3, static_cast<std::int64_t>(std::min<std::size_t>(limit, INT64_MAX)));
  stmt->bind(4, key);
  std::vector<GpuProcessRecord> out;
  Status s = stmt->for_each_row([&](Statement& r) { out.push_back(read_row(r)); });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<GpuProcessRecord>> GpuProcessStoreReader::gpu_processes(TimestampNs from_ns, TimestampNs to_ns,
                                                                           std::size_t limit,
                                                                           const std::string& key) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  return read_gpu_processes(*conn, from_ns, to_ns, limit, key);
}

}  // namespace perfscope::db
