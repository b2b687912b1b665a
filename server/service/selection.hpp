// What a percentile query or one side of an A/B test names (a kernel, a model's latency field,
// an operator, a command queue or a sampled series) and the values it names in a window: the
// raw values still kept and the rollup tiers retention left of older ones; and a model's field
// as the scraped servers export it. The API parses selectors (server/api/selector.hpp); this
// layer reads what they name.
//
// Functions over the sources; thread-safe as the readers are.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "db/event_reader.hpp"
#include "db/rollup_answer.hpp"
#include "db/time_range.hpp"
#include "engine/analysis/scraped_serving.hpp"
#include "engine/base/status.hpp"
#include "server/service/sources.hpp"

namespace perfscope::service {

struct Selector {
  enum class Kind { kKernel, kModel, kCommandQueue, kSeries, kOperator } kind = Kind::kKernel;
  db::KernelSelector kernel;
  db::OperatorSelector op;
  db::InferenceSelector model;
  db::InferenceField field = db::InferenceField::kLatency;
  std::string field_name = "latency_ms";
  std::string queue, device, series;
  // A run perfscope knows, named by "run" (its events are selected by their tag run=…): the
  // caller checks that it exists, as run= is checked on every endpoint.
  std::string run;
};

// The inference field a name means; empty: latency. nullopt for an unknown name.
std::optional<db::InferenceField> inference_field(std::string_view name);

// What a selector names in a window: the raw values still kept (in its unit: ms for events,
// a series' own unit) and, where retention rolled older ones up, the merged histogram tiers.
struct Distribution {
  std::vector<double> raw;
  std::optional<db::RollupAnswer> rolled;
  std::string unit = "ms";
};

Result<Distribution> load_distribution(const Sources& sources, const Selector& s, const db::TimeRange& range,
                                       bool with_rollups);
// The raw values alone (A/B tests compare raw samples).
Result<std::vector<double>> load_values(const Sources& sources, const Selector& s, const db::TimeRange& range);

// One latency field of a model as the scraped servers give it, every version together when
// `version` is empty.
struct ScrapedSelection {
  analysis::ScrapedDistribution distribution;
  std::set<std::string> servers, targets;
};
// nullopt when no scraped server exports it; invalid_argument (field "version") when the
// versions' buckets differ or are summaries, which cannot be added up.
Result<std::optional<ScrapedSelection>> select_scraped(const std::vector<analysis::ScrapedServing>& all,
                                                       const std::string& model, const std::string& version,
                                                       const std::string& field);

}  // namespace perfscope::service
