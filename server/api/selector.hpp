// Selectors as requests write them: what a percentile query or one side of an A/B test names
// (service::Selector, server/service/selection.hpp), read from a JSON object or from query
// parameters by one set of rules, and written back as JSON. Shared by percentiles_api.cpp and
// abtest_api.cpp; internal to server/api/.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/base/status.hpp"
#include "server/http/message.hpp"
#include "server/service/selection.hpp"

namespace perfscope::server {

// One side of a comparison or the subject of a percentile query, as JSON names it:
// {"kernel":…, "variant", "device", "stream", "tags", "run"}, {"model":…, "version", "field",
// "tags", "run"}, {"operator":…, "model", "provider", "tags", "run"}, {"command_queue":…,
// "device"} or {"series":…}.
using service::Selector;

// The one set of rules, from a JSON object (A/B definitions, stored and posted): `where`
// prefixes field names in errors ("a", "variants[2]"; empty: none). A run and tags narrow
// kernel, model and operator selectors; "field" applies to models only.
Result<Selector> selector_from_json(const nlohmann::json& j, const std::string& where);
// The same from query parameters of the same names (kernel=…&variant=…, model=…&field=…); a
// run and tags come from the request's scope instead (scope_of).
Result<Selector> selector_from_query(const HttpRequest& request);
// The JSON form selector_from_json reads (as A/B results echo their sides).
nlohmann::json selector_json(const Selector& s);

}  // namespace perfscope::server
