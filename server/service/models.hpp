// Each model's serving over a window (GET /api/v1/inference) and its operators
// (GET /api/v1/operators): the reported requests' counts,
// error rate and rates over the part of the window the model was serving in, with, when asked,
// its latency, TTFT and TPOT percentiles and SLO share from every request; and the models of
// the servers perfscope scrapes (a scope of no run or tags only: scraped servers carry none).
//
// A function over the sources; thread-safe as the readers are.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "db/event_scope.hpp"
#include "db/inference_reader.hpp"
#include "engine/analysis/operators.hpp"
#include "engine/analysis/scraped_serving.hpp"
#include "engine/analysis/serving.hpp"
#include "server/service/query_time.hpp"
#include "server/service/scraped_figures.hpp"
#include "server/service/sources.hpp"

namespace perfscope::service {

struct ModelServing {
  db::InferenceSummary summary;
  double error_rate = 0;
  // Rates over the part of the window the model was serving in: from its first request in it
  // (not the hour before a model that began minutes ago) to the window's end; with a single
  // request, over the whole window (one request a moment ago is not a rate); for "all", its
  // own first..last span. None over an empty span.
  double span_s = 0;
  std::optional<double> requests_per_second, inferences_per_second, output_tokens_per_second;
  std::optional<analysis::ServingMetrics> latency;  // asked for, and read
};

struct ModelsServing {
  std::vector<ModelServing> reported;
  std::vector<ScrapedModel> scraped;
};

// One model's rows (either empty: any).
struct ModelFilter {
  std::string model, version;
  bool keeps(const std::string& m, const std::string& v) const {
    return (model.empty() || m == model) && (version.empty() || v == version);
  }
};

Result<ModelsServing> models_serving(const Sources& sources, const server::TimeWindow& window,
                                     const db::EventScope& scope, const analysis::ServingSlo& slo, bool with_latency,
                                     TimestampNs now, const ModelFilter& only = {});

// Operators (ONNX Runtime nodes and the like) over a range, per model, op type and node, with
// percentiles at `quantiles` (GET /api/v1/operators); `model` and `provider` narrow them.
Result<analysis::OperatorSummary> operators(const Sources& sources, const db::EventScope& scope, const db::TimeRange& range,
                                            const std::string& model, const std::string& provider,
                                            const std::vector<double>& quantiles, analysis::PercentileConvention convention);

}  // namespace perfscope::service
