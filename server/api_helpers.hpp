// Helpers shared by the REST handlers' source files (api.cpp, analysis_api.cpp): query
// parameters, windows and errors as responses. Internal to server/.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/status.hpp"
#include "server/api_types.hpp"
#include "server/query_time.hpp"

namespace perfscope::server {

// A Status as a JSON error response with its HTTP code and field.
ApiResponse status_response(const Status& s);
// A query parameter's value, empty when absent.
std::string param(const ApiRequest& request, const char* name);
// An optional integer parameter within [lo, hi].
Result<std::size_t> size_param(const ApiRequest& request, const char* name, std::size_t fallback, std::size_t lo,
                               std::size_t hi);
nlohmann::json window_json(const TimeWindow& w);
// The window of a report (every format, CSV included) when the request names none.
inline constexpr const char* kDefaultReportWindow = "1h";
// `window`/`from`/`to` as parse_window reads them, with `fallback` when none is given.
Result<TimeWindow> window_or(const ApiRequest& request, const char* fallback, TimestampNs now);

}  // namespace perfscope::server
