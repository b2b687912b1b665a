// Helpers shared by the REST handlers' source files (api.cpp and the *_api.cpp beside it): query
// parameters, windows and errors as responses. Internal to server/api/.
#pragma once

#include <cmath>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "db/event_reader.hpp"
#include "db/series_history.hpp"
#include "engine/analysis/bottlenecks.hpp"
#include "engine/analysis/device_targets.hpp"
#include "engine/analysis/energy.hpp"
#include "engine/analysis/serving.hpp"
#include "engine/analysis/trend.hpp"
#include "engine/collectors/gpu_collector.hpp"
#include "engine/base/status.hpp"
#include "server/http/message.hpp"
#include "server/service/query_time.hpp"
#include "server/service/device_efficiency.hpp"
#include "server/service/kernels.hpp"
#include "server/service/scoped_reads.hpp"
#include "server/service/series_summary.hpp"

namespace perfscope::server {

class SpooledBody;  // server/http/spooled_body.hpp

// A Status as a JSON error response with its HTTP code and field.
HttpResponse status_response(const Status& s);
// Exports (CSV tables, traces): the body is written to a file in the data directory as it is
// produced (server/http/spooled_body.hpp) in `dir` (the data directory), deflated when `gzip`, so that neither building it
// nor a client that reads it slowly holds it in memory.
Result<std::unique_ptr<SpooledBody>> spool_body(const std::string& dir, bool gzip);
// The response that sends a finished spool; `content_encoding_gzip`: its gzip is a transfer
// detail (Content-Encoding), not the file the client asked for.
HttpResponse spooled_response(std::unique_ptr<SpooledBody> body, std::string content_type, bool content_encoding_gzip);
// A query parameter's value, empty when absent.
std::string param(const HttpRequest& request, const char* name);
// A finite number, or a 400 naming `field`.
Result<double> parse_number(std::string_view text, const char* field);
// `q`: a comma-separated list of percentiles in [0, 100] (at most 32); `defaults` when empty.
Result<std::vector<double>> parse_quantiles(const std::string& text, std::vector<double> defaults);
// An operator summary as the operators endpoint and the analysis document give it: at most
// `limit` rows per list (0: all).
nlohmann::json operators_json(const analysis::OperatorSummary& summary, std::size_t limit);
// Serving (server/api/serving_json.cpp). `name`: a positive number of milliseconds, or none
// when absent; the SLOs from sla_ms, ttft_slo_ms and tpot_slo_ms; a model's serving figures
// (latencies as count, mean, p50, p90, p99, max; null without samples).
Result<std::optional<double>> optional_ms(const HttpRequest& request, const char* name);
Result<analysis::ServingSlo> serving_slo_of(const HttpRequest& request);
nlohmann::json latency_json(const analysis::LatencySummary& s);
nlohmann::json serving_row_json(const analysis::ServingMetrics& m);
// Series summaries and energy figures are the analysis service's (server/service/).
using service::RequestPower;
using service::SeriesSummary;
// Energy per GPU and per model as the analysis document's `energy` gives it; A/B tests of
// models take their sides' rows from it.
nlohmann::json energy_json(const service::EnergyFigures& energy);
// How the energy figures are computed, as the answers that carry them say.
extern const char* const kEnergyPerModelMethod;
// An optional integer parameter within [lo, hi].
Result<std::size_t> size_param(const HttpRequest& request, const char* name, std::size_t fallback, std::size_t lo,
                               std::size_t hi);
nlohmann::json window_json(const TimeWindow& w);
// Which events a request covers: `device`, `run` and every `tag.KEY=VALUE` (each must be
// carried); a bad tag name or value is a 400 naming its parameter.
Result<db::EventScope> scope_of(const HttpRequest& request);
// The most points a chart query may ask for (max_points).
inline constexpr std::size_t kMaxMaxPoints = 100000;
// device_efficiency.cpp. A kernel's work into `row`: achieved_tflops, achieved_gb_per_second and
// arithmetic_intensity (null where no execution reported it) and its place on the roofline of
// each device it ran on (an entry with `unavailable` saying why where it has none).
void add_kernel_work(nlohmann::json& row, const service::KernelRow& kernel);
// An optional figure: its value, or null where it is unknown (or not finite).
inline nlohmann::json optional_json(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
// Per GPU: its peaks, what the window achieved and the checks against its --device-target.
nlohmann::json devices_efficiency_json(const std::vector<service::DeviceEfficiency>& devices);
// The window of a report (every format, CSV included) when the request names none.
inline constexpr const char* kDefaultReportWindow = "1h";
// `window`/`from`/`to` as parse_window reads them, with `fallback` when none is given (all, when
// the request names a run).
Result<TimeWindow> window_or(const HttpRequest& request, const char* fallback, TimestampNs now);

using service::no_run_message;

}  // namespace perfscope::server
