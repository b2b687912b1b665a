#include "db/event_reader.hpp"

#include "db/internal/connection_pool.hpp"
#include "db/internal/rollups.hpp"

namespace perfscope::db {

Tags EventScope::wanted_tags() const {
  Tags wanted = tags;
  if (!run.empty()) wanted.emplace_back("run", run);
  sort_labels(wanted);
  return wanted;
}

EventReader::EventReader(std::string path) : EventReader(std::make_shared<ConnectionPool>(std::move(path))) {}

EventReader::EventReader(std::shared_ptr<ConnectionPool> pool)
    : KernelReader(pool),
      InferenceReader(pool),
      MemoryEventReader(pool),
      CommandQueueReader(pool),
      RunReader(pool),
      GpuProcessStoreReader(pool),
      pool_(std::move(pool)) {}

Result<std::optional<RollupAnswer>> EventReader::series_rollup(const std::vector<std::int64_t>& series_ids,
                                                               const TimeRange& range) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  std::vector<std::string> keys;
  for (std::int64_t id : series_ids) keys.push_back(std::to_string(id));
  return read_rollups(*conn, rollup_source::kSeries, keys, "", range);
}

Result<std::vector<std::pair<std::string, std::int64_t>>> EventReader::table_counts() const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
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
    PERFSCOPE_ASSIGN_OR_RETURN(auto stmt, conn->prepare(sql));
    PERFSCOPE_RETURN_IF_ERROR(stmt.step().status());
    out.emplace_back(table, stmt.column_int64(0));
  }
  return out;
}

}  // namespace perfscope::db
