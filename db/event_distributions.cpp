// EventReader's distributions: the raw values that percentiles and A/B tests read (kernel
// durations, inference latency fields, command-buffer latencies) and the histogram tiers
// retention rolled older ones up into.
#include "db/event_reader.hpp"

#include <algorithm>

#include "db/internal/connection_pool.hpp"
#include "db/internal/kernel_chunks.hpp"
#include "db/internal/rollups.hpp"
#include "db/internal/tag_filter.hpp"
#include "db/schema.hpp"

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


// Rollups of the keys that start with `prefix`.
Result<std::optional<RollupAnswer>> rollup_by_prefix(Connection& conn, std::string_view source, std::string_view field,
                                                     std::string_view prefix, const TimeRange& range) {
  auto keys = rollup_keys(conn, source, field, prefix);
  if (!keys.ok()) return keys.status();
  return read_rollups(conn, source, *keys, field, range);
}

}  // namespace

namespace {
constexpr std::pair<InferenceField, std::string_view> kInferenceFieldNames[] = {
    {InferenceField::kLatency, "latency_ms"}, {InferenceField::kTtft, "ttft_ms"}, {InferenceField::kTpot, "tpot_ms"},
    {InferenceField::kQueue, "queue_ms"},     {InferenceField::kCompute, "compute_ms"}};
}  // namespace

std::string_view to_string(InferenceField field) {
  for (auto [f, name] : kInferenceFieldNames) {
    if (f == field) return name;
  }
  return "latency_ms";
}

std::optional<InferenceField> inference_field_from(std::string_view name) {
  for (auto [f, text] : kInferenceFieldNames) {
    if (text == name) return f;
  }
  return std::nullopt;
}

Result<std::optional<RollupAnswer>> EventReader::kernel_rollup(const KernelSelector& sel, const TimeRange& range) const {
  auto conn = pool_->lease();
  if (!conn.ok()) return conn.status();
  auto ids = matching_kernel_series(**conn, sel);
  if (!ids.ok()) return ids.status();
  std::vector<std::string> keys;
  for (std::int64_t id : *ids) keys.push_back(std::to_string(id));
  return read_rollups(**conn, rollup_source::kKernel, keys, "", range);
}

Result<std::optional<RollupAnswer>> EventReader::inference_rollup(const InferenceSelector& sel, InferenceField field,
                                                                  const TimeRange& range) const {
  if (!sel.tags.empty()) return std::optional<RollupAnswer>();  // tagged requests: raw rows only
  auto conn = pool_->lease();
  if (!conn.ok()) return conn.status();
  const std::string_view name = to_string(field);
  if (!sel.version.empty()) {
    return read_rollups(**conn, rollup_source::kInference, {rollup_key(sel.model, sel.version)}, name, range);
  }
  return rollup_by_prefix(**conn, rollup_source::kInference, name, rollup_key(sel.model, ""), range);
}

Result<std::optional<RollupAnswer>> EventReader::command_buffer_rollup(const std::string& queue, const std::string& device,
                                                                       const TimeRange& range) const {
  auto conn = pool_->lease();
  if (!conn.ok()) return conn.status();
  if (!queue.empty() && !device.empty()) {
    return read_rollups(**conn, rollup_source::kCommandBuffer, {rollup_key(queue, device)}, "", range);
  }
  if (device.empty()) {
    return rollup_by_prefix(**conn, rollup_source::kCommandBuffer, "", queue.empty() ? "" : rollup_key(queue, ""), range);
  }
  // Every queue on one device: the device is the key's second part.
  auto keys = rollup_keys(**conn, rollup_source::kCommandBuffer, "", "");
  if (!keys.ok()) return keys.status();
  std::erase_if(*keys, [&](const std::string& k) { return !k.ends_with(rollup_key("", device)); });
  return read_rollups(**conn, rollup_source::kCommandBuffer, *keys, "", range);
}

Result<std::optional<RollupAnswer>> EventReader::series_rollup(const std::vector<std::int64_t>& series_ids,
                                                               const TimeRange& range) const {
  auto conn = pool_->lease();
  if (!conn.ok()) return conn.status();
  std::vector<std::string> keys;
  for (std::int64_t id : series_ids) keys.push_back(std::to_string(id));
  return read_rollups(**conn, rollup_source::kSeries, keys, "", range);
}

Result<std::vector<double>> EventReader::kernel_durations_ms(const KernelSelector& sel, const TimeRange& range) const {
  auto conn = pool_->lease();
  if (!conn.ok()) return conn.status();
  auto chunks = (*conn)->prepare(
      "SELECT count, total_ns, first_end_ns, last_end_ns, data FROM kernel_chunks "
      "WHERE series_id = ?1 AND last_end_ns >= ?2 AND first_end_ns <= ?3");
  if (!chunks.ok()) return chunks.status();
  auto matched = matching_kernel_series(**conn, sel);
  if (!matched.ok()) return matched.status();
  const std::vector<std::int64_t>& ids = *matched;
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

Result<std::vector<double>> EventReader::inference_values_ms(const InferenceSelector& sel, InferenceField field,
                                                             const TimeRange& range) const {
  const char* expr = "latency_ms";
  const char* extra = "";
  switch (field) {
    case InferenceField::kLatency: break;
    case InferenceField::kTtft: expr = "ttft_ms"; extra = " AND ttft_ms IS NOT NULL"; break;
    case InferenceField::kQueue: expr = "queue_ms"; extra = " AND queue_ms IS NOT NULL"; break;
    case InferenceField::kCompute: expr = "compute_ms"; extra = " AND compute_ms IS NOT NULL"; break;
    case InferenceField::kTpot:
      expr = "(latency_ms - ttft_ms) / (output_tokens - 1)";
      extra = " AND ttft_ms IS NOT NULL AND output_tokens > 1";
      break;
  }
  // Fixed fragments chosen above; every value from the request is a bound parameter.
  const TagFilter filter = tag_filter(EventScope("", "", sel.tags), "tags", 5);
  std::string sql = std::string("SELECT ") + expr + " FROM inference WHERE model = ?1 AND (?2 = '' OR version = ?2) "
                    "AND ts_ns BETWEEN ?3 AND ?4" + filter.sql + extra;
  auto conn = pool_->lease();
  if (!conn.ok()) return conn.status();
  auto stmt = (*conn)->prepare(sql.c_str());
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, sel.model).bind(2, sel.version).bind(3, range.from_ns).bind(4, range.to_ns);
  filter.bind(*stmt, 5);
  std::vector<double> out;
  Status s = stmt->for_each_row([&](Statement& r) { out.push_back(r.column_double(0)); });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<double>> EventReader::command_buffer_latencies_ms(const std::string& queue, const std::string& device,
                                                                     const TimeRange& range) const {
  auto conn = pool_->lease();
  if (!conn.ok()) return conn.status();
  auto stmt = (*conn)->prepare(
      "SELECT end_ns - submit_ns FROM command_buffers WHERE (?1 = '' OR queue = ?1) AND (?2 = '' OR device = ?2) "
      "AND end_ns BETWEEN ?3 AND ?4");
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, queue).bind(2, device).bind(3, range.from_ns).bind(4, range.to_ns);
  std::vector<double> out;
  Status s = stmt->for_each_row([&](Statement& r) { out.push_back(static_cast<double>(r.column_int64(0)) / 1e6); });
  if (!s.ok()) return s;
  return out;
}

}  // namespace perfscope::db
