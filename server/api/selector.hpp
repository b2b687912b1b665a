// Selector: what a percentile query or one side of an A/B test names (a kernel, a model's
// latency field, a command queue or a sampled series), and the distribution of its values in a
// window. Shared by percentiles_api.cpp and abtest_api.cpp; internal to server/api/.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/event_reader.hpp"
#include "db/time_range.hpp"
#include "engine/base/status.hpp"
#include "server/http/message.hpp"

namespace perfscope::server {

struct ApiContext;

// One side of a comparison or the subject of a percentile query, as JSON names it:
// {"kernel":…, "variant", "device", "stream", "tags", "run"}, {"model":…, "version", "field",
// "tags", "run"}, {"operator":…, "model", "provider", "tags", "run"}, {"command_queue":…,
// "device"} or {"series":…}.
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

  // The JSON form selector_from_json reads (as A/B results echo their sides).
  nlohmann::json to_json() const;
};

// The inference field a name means; empty: latency. nullopt for an unknown name.
std::optional<db::InferenceField> inference_field(std::string_view name);

// The one set of rules, from a JSON object (A/B definitions, stored and posted): `where`
// prefixes field names in errors ("a", "variants[2]"; empty: none). A run and tags narrow
// kernel, model and operator selectors; "field" applies to models only.
Result<Selector> selector_from_json(const nlohmann::json& j, const std::string& where);
// The same from query parameters of the same names (kernel=…&variant=…, model=…&field=…); a
// run and tags come from the request's scope instead (scope_of).
Result<Selector> selector_from_query(const HttpRequest& request);

// What a selector names in a window: the raw values still kept (in its unit: ms for events,
// a series' own unit) and, where retention rolled older ones up, the merged histogram tiers.
struct Distribution {
  std::vector<double> raw;
  std::optional<db::RollupAnswer> rolled;
  std::string unit = "ms";
};

Result<Distribution> load_distribution(const ApiContext& ctx, const Selector& s, const db::TimeRange& range,
                                       bool with_rollups);
// The raw values alone (A/B tests compare raw samples).
Result<std::vector<double>> load_values(const ApiContext& ctx, const Selector& s, const db::TimeRange& range);

}  // namespace perfscope::server
