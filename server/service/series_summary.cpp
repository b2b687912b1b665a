#include "server/service/series_summary.hpp"

#include <cmath>
#include <iterator>

#include "engine/analysis/stats.hpp"
#include "engine/series/metric_names.hpp"

namespace perfscope::service {

namespace an = perfscope::analysis;

using namespace perfscope::metric_names;

std::vector<SeriesSummary> summarize_series(const std::vector<db::SeriesData>& data) {
  std::vector<SeriesSummary> out;
  for (const auto& d : data) {
    SeriesSummary g;
    g.key = d.info.key;
    g.unit = d.info.family.unit;
    std::vector<double> values, times;
    for (const Sample& p : d.samples) {
      // A reading that is no number (a GPU counter before its first interval) is no sample.
      if (!std::isfinite(p.value)) continue;
      values.push_back(p.value);
      times.push_back(static_cast<double>(p.ts_ns - d.samples.front().ts_ns) / 1e9);
    }
    if (values.empty()) continue;
    g.first = values.front();
    g.last = values.back();
    g.trend = an::linear_trend(times, values);
    const an::Moments m = an::moments(values);
    g.count = m.n;
    g.avg = m.mean;
    g.min = m.min;
    g.peak = m.max;
    g.p95 = an::percentile(values, 95, an::PercentileConvention::kNearestRank);
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<RequestPower> request_power(const std::vector<db::SeriesData>& data, const std::vector<InferenceEvent>& requests) {
  std::vector<an::TimeSpan> spans;
  spans.reserve(requests.size());
  for (const InferenceEvent& r : requests) {
    spans.push_back({r.ts_ns - static_cast<TimestampNs>(std::llround(r.latency_ms * 1e6)), r.ts_ns});
  }
  const auto busy = an::busy_spans(std::move(spans));
  std::vector<RequestPower> out;
  for (const auto& d : data) {
    if (d.info.key.name == kGpuPower) out.push_back({d.info.key, an::power_during(d.samples, busy)});
  }
  return out;
}

Result<std::vector<SeriesSummary>> read_energy_series(const db::SeriesHistory& history, const db::TimeRange& range,
                                                      const std::vector<InferenceEvent>& requests,
                                                      std::vector<RequestPower>* during) {
  std::vector<db::SeriesData> all;
  for (const char* family : {kGpuEnergy, kGpuPower, kHostEnergy}) {
    db::HistoryQuery q;
    q.name = family;
    q.from_ns = range.from_ns;
    q.to_ns = range.to_ns;
    q.max_points = SIZE_MAX;
    PERFSCOPE_ASSIGN_OR_RETURN(auto data, history.query(q));
    std::move(data.begin(), data.end(), std::back_inserter(all));
  }
  if (during) *during = request_power(all, requests);
  return summarize_series(all);
}

EnergyFigures energy_figures(const std::vector<SeriesSummary>& series, const std::vector<an::ServingMetrics>& serving,
                             const std::vector<RequestPower>& during) {
  // A counter's increase over the window; none when it went back (driver reload) or was read once.
  auto increase = [](const SeriesSummary& s) {
    return s.count >= 2 && s.last >= s.first ? std::optional<double>(s.last - s.first) : std::nullopt;
  };
  EnergyFigures out;
  std::optional<double> host_joules;
  for (const auto& s : series) {
    if (s.key.name == kGpuEnergy) {
      const std::string* gpu = s.key.label("gpu");
      const std::string* uuid = s.key.label("uuid");
      an::GpuEnergy& g = out.gpus.emplace_back(an::GpuEnergy{gpu ? *gpu : "", uuid ? *uuid : "", increase(s), {}, {}, {}, {}});
      for (const auto& p : series) {
        if (p.key.name == kGpuPower && p.key.labels == s.key.labels) {
          g.avg_watts = p.avg;
          g.peak_watts = p.peak;
        }
      }
      for (const auto& d : during) {
        if (d.key.labels == s.key.labels) {
          g.request_avg_watts = d.power.avg_watts;
          g.request_peak_watts = d.power.peak_watts;
        }
      }
      // Unknown is not zero: a counter that did not move while the board drew power was not
      // updated within the window (the driver refreshes it on its own schedule); 0 J beside a
      // 500 W average would be a wrong number, not a small one.
      std::string& unknown = out.unknown_joules.emplace_back();
      if (!g.joules) {
        unknown = "the energy counter was read fewer than twice in the window, or went back (a driver reload)";
      } else if (*g.joules == 0 && g.avg_watts && *g.avg_watts > 1) {
        g.joules.reset();
        unknown = "the energy counter did not advance in the window while the board drew power (the "
                  "driver updates it less often than the window is long)";
      }
    } else if (s.key.name == kHostEnergy) {
      // The host's CPU packages (RAPL "package-N" domains; their core and uncore parts are
      // inside them, DRAM and the rest of the platform are not counted).
      const std::string* domain = s.key.label("domain");
      if (auto joules = increase(s); joules && domain && domain->starts_with("package")) {
        host_joules = host_joules.value_or(0) + *joules;
      }
    }
  }
  std::vector<an::ModelLoad> loads;
  for (const auto& m : serving) {
    an::ModelLoad l{m.model, m.version, static_cast<double>(m.requests), m.inferences_per_second * m.window_s,
                    static_cast<double>(m.output_tokens), std::nullopt,
                    static_cast<double>(m.latency_ms.count) * m.latency_ms.mean};
    // Compute time counts only when every request reported it: a partial sum would shrink the share.
    if (m.compute_ms.count > 0 && m.compute_ms.count == m.requests) {
      l.compute_ms = static_cast<double>(m.compute_ms.count) * m.compute_ms.mean;
    }
    loads.push_back(std::move(l));
  }
  out.report = an::energy_per_model(out.gpus, loads, host_joules);
  return out;
}

const SeriesSummary* gauge_of(const std::vector<SeriesSummary>& gauges, std::string_view family, const std::string& uuid) {
  for (const SeriesSummary& g : gauges) {
    if (g.key.name != family) continue;
    for (const auto& [k, v] : g.key.labels) {
      if (k == "uuid" && v == uuid) return &g;
    }
  }
  return nullptr;
}

}  // namespace perfscope::service
