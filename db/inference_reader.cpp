#include "db/inference_reader.hpp"

#include "db/internal/connection_pool.hpp"
#include "db/internal/rollups.hpp"
#include "db/internal/tag_filter.hpp"
#include "engine/base/saturating.hpp"

namespace perfscope::db {

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

Result<std::vector<InferenceSummary>> InferenceReader::inference_summaries(const TimeRange& range,
                                                                           const EventScope& scope) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  const TagFilter filter = tag_filter(scope, "tags", 3);
  auto stmt = conn->prepare(
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

Result<std::vector<InferenceEvent>> InferenceReader::inference_events(const TimeRange& range,
                                                                      const EventScope& scope) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  const TagFilter filter = tag_filter(scope, "tags", 3);
  auto stmt = conn->prepare(
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

Result<std::vector<analysis::OperatorExecution>> InferenceReader::operator_executions(const OperatorSelector& which,
                                                                                      const TimeRange& range) const {
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  const TagFilter filter = tag_filter(EventScope("", "", which.tags), "tags", 6);
  auto stmt = conn->prepare(
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

Result<std::vector<double>> InferenceReader::inference_values_ms(const InferenceSelector& sel, InferenceField field,
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
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  PERFSCOPE_ASSIGN_OR_RETURN(auto stmt, conn->prepare(sql.c_str()));
  stmt.bind(1, sel.model).bind(2, sel.version).bind(3, range.from_ns).bind(4, range.to_ns);
  filter.bind(stmt, 5);
  std::vector<double> out;
  Status s = stmt.for_each_row([&](Statement& r) { out.push_back(r.column_double(0)); });
  if (!s.ok()) return s;
  return out;
}

Result<std::optional<RollupAnswer>> InferenceReader::inference_rollup(const InferenceSelector& sel,
                                                                      InferenceField field,
                                                                      const TimeRange& range) const {
  if (!sel.tags.empty()) return std::optional<RollupAnswer>();  // tagged requests: raw rows only
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, pool_->lease());
  const std::string_view name = to_string(field);
  if (!sel.version.empty()) {
    return read_rollups(*conn, rollup_source::kInference, {rollup_key(sel.model, sel.version)}, name, range);
  }
  return read_rollups_by_prefix(*conn, rollup_source::kInference, name, rollup_key(sel.model, ""), range);
}

}  // namespace perfscope::db
