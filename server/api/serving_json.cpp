// Serving figures as the analysis document and /api/v1/inference?latency=true give them: one
// row per model from the requests read back, and the SLO parameters both take.
#include "server/api/api.hpp"

#include <charconv>
#include <cmath>

#include "server/api/api_helpers.hpp"

namespace perfscope::server {

using nlohmann::json;
namespace an = perfscope::analysis;

json latency_json(const an::LatencySummary& s) {
  if (s.count == 0) return nullptr;
  return {{"count", s.count}, {"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"max", s.max}};
}

Result<std::optional<double>> optional_ms(const HttpRequest& request, const char* name) {
  std::string v = param(request, name);
  if (v.empty()) return std::optional<double>();
  double d = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
  if (ec != std::errc() || end != v.data() + v.size() || !(d > 0) || !std::isfinite(d)) {
    return Status::invalid_argument(std::string("'") + name + "' must be a positive number of milliseconds", name);
  }
  return std::optional<double>(d);
}

Result<an::ServingSlo> serving_slo_of(const HttpRequest& request) {
  an::ServingSlo slo;
  for (auto [name, out] : {std::pair{"sla_ms", &slo.latency_ms}, std::pair{"ttft_slo_ms", &slo.ttft_ms},
                           std::pair{"tpot_slo_ms", &slo.tpot_ms}}) {
    auto v = optional_ms(request, name);
    if (!v.ok()) return v.status();
    *out = *v;
  }
  return slo;
}

json serving_row_json(const an::ServingMetrics& m) {
  json row = {{"model", m.model}, {"version", m.version}, {"requests", m.requests}, {"errors", m.errors},
              {"error_rate", m.error_rate}, {"window_s", m.window_s},
              {"requests_per_second", m.requests_per_second}, {"inferences_per_second", m.inferences_per_second},
              {"output_tokens_per_second", m.output_tokens_per_second}, {"input_tokens", m.input_tokens},
              {"output_tokens", m.output_tokens}, {"latency_ms", latency_json(m.latency_ms)},
              {"ttft_ms", latency_json(m.ttft_ms)}, {"tpot_ms", latency_json(m.tpot_ms)},
              {"queue_ms", latency_json(m.queue_ms)}, {"compute_ms", latency_json(m.compute_ms)},
              {"itl_ms", m.itl_ms ? json(*m.itl_ms) : json(nullptr)}};
  if (m.goodput_ratio) {
    row["goodput_per_second"] = m.goodput_per_second ? json(*m.goodput_per_second) : json(nullptr);
    row["goodput_ratio"] = *m.goodput_ratio;
  }
  return row;
}

}  // namespace perfscope::server
