// InferenceReader: inference requests and model operators as the database holds them —
// per-model summaries, whole requests for the analysis, operator executions, and the latency
// fields' values and rolled-up tiers percentiles and A/B tests read. Pooled read connections.
//
// Thread-safety: every method is safe from any thread. Blocks on SQLite: call from worker
// threads.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "db/event_scope.hpp"
#include "db/pooled_reader.hpp"
#include "db/rollup_answer.hpp"
#include "db/time_range.hpp"
#include "engine/analysis/operators.hpp"
#include "engine/events/events.hpp"

namespace perfscope::db {

class ConnectionPool;  // db/internal/connection_pool.hpp

struct InferenceSummary {
  std::string model;
  std::string version;
  std::uint64_t requests = 0;
  std::uint64_t errors = 0;
  std::uint64_t inferences = 0;  // requests weighted by batch size
  std::uint64_t input_tokens = 0;
  std::uint64_t output_tokens = 0;
  double mean_latency_ms = 0;
  TimestampNs first_ns = 0;
  TimestampNs last_ns = 0;
};

struct InferenceSelector {
  std::string model;
  std::string version;  // empty: every version
  Tags tags = {};  // tags every request must carry (run included); with any, no rollups: tiers know no tags
};

// Which operator executions: an op type or a node name (`op`), of one model and provider;
// empty fields match anything; `tags` (run included) must all be present.
struct OperatorSelector {
  std::string op;
  std::string model;
  std::string provider;
  Tags tags;
};

// The per-request latencies of inference events. TPOT is derived per request:
// (latency − ttft) / (output_tokens − 1), requests with ≤ 1 output token or no ttft left out.
enum class InferenceField { kLatency, kTtft, kTpot, kQueue, kCompute };
// The API's names of the fields ("latency_ms", "ttft_ms", …), which the rollups use too.
std::string_view to_string(InferenceField field);
std::optional<InferenceField> inference_field_from(std::string_view name);

class InferenceReader : protected PooledReader {
 public:
  InferenceReader(const InferenceReader&) = delete;
  InferenceReader& operator=(const InferenceReader&) = delete;

  Result<std::vector<InferenceSummary>> inference_summaries(const TimeRange& range, const EventScope& scope = {}) const;
  // Whole requests in the range (by completion time), for the analysis document.
  Result<std::vector<InferenceEvent>> inference_events(const TimeRange& range, const EventScope& scope = {}) const;
  // Operator executions in the range (by their time) that `which` names.
  Result<std::vector<analysis::OperatorExecution>> operator_executions(const OperatorSelector& which,
                                                                      const TimeRange& range) const;
  // A latency field's values in milliseconds, in no particular order, and its rolled-up part
  // (nullopt when no tier bucket overlaps the range, or the selector names tags).
  Result<std::vector<double>> inference_values_ms(const InferenceSelector& selector, InferenceField field,
                                                  const TimeRange& range) const;
  Result<std::optional<RollupAnswer>> inference_rollup(const InferenceSelector& selector, InferenceField field,
                                                       const TimeRange& range) const;

 protected:
  using PooledReader::PooledReader;  // a part of EventReader, over its pool
  ~InferenceReader() = default;

};

}  // namespace perfscope::db
