#include "server/service/ab_tests.hpp"

#include <algorithm>

#include "engine/analysis/serving.hpp"
#include "engine/analysis/stats.hpp"
#include "engine/base/cancellation.hpp"
#include "server/service/scoped_reads.hpp"
#include "server/service/series_summary.hpp"

namespace perfscope::service {

namespace an = perfscope::analysis;

const TestNotRun kTestsNotRunOnHistograms[4] = {
    {"mann_whitney", "ranks every observation; a histogram keeps only counts per bucket"},
    {"welch", "needs each side's variance; the server exports only counts, sums and buckets"},
    {"bootstrap_speedup_ci", "resamples observations, which the server does not export"},
    {"hodges_lehmann", "takes the median of every pairwise difference of observations"}};

std::string AbDefinition::side_name(std::size_t i) const {
  return multi ? "variants[" + std::to_string(i) + "]" : i == 0 ? "a" : "b";
}

namespace {

// One meaning of run= (no_run_message): a side's "run" names a run perfscope knows, or the
// evaluation is refused with the same message as every endpoint's; tags.run selects events
// by their tag alone.
Status check_runs(const Sources& sources, const AbDefinition& d) {
  if (!sources.events) return Status();
  for (std::size_t i = 0; i < d.sides.size(); ++i) {
    const std::string& run = d.sides[i].run;
    if (run.empty()) continue;
    PERFSCOPE_ASSIGN_OR_RETURN(auto found, sources.events->run(run));
    if (!found) return Status::not_found(no_run_message(run), d.side_name(i) + ".run");
  }
  return Status();
}

// Energy per inference beside latency when every side is a model: each side's rows of the
// window's energy per model (engine/analysis/energy.hpp).
Result<std::optional<std::vector<SideEnergy>>> energy_of_sides(const Sources& sources, const std::vector<Selector>& sides,
                                                               const server::TimeWindow& w, TimestampNs now) {
  for (const Selector& s : sides) {
    if (s.kind != Selector::Kind::kModel) return std::optional<std::vector<SideEnergy>>();
  }
  const db::TimeRange range{w.from_ns, std::min(w.to_ns, now)};
  PERFSCOPE_ASSIGN_OR_RETURN(auto requests, sources.events->inference_events(range));
  TimestampNs lo = range.to_ns, hi = range.from_ns;
  for (const auto& r : requests) {
    lo = std::min(lo, r.ts_ns);
    hi = std::max(hi, r.ts_ns);
  }
  const double window_s = w.all ? (hi > lo ? static_cast<double>(hi - lo) / 1e9 : 0)
                                : static_cast<double>(range.to_ns - range.from_ns) / 1e9;
  const auto serving = an::serving_metrics(requests, window_s, {});
  std::vector<RequestPower> during;
  PERFSCOPE_ASSIGN_OR_RETURN(auto series, read_energy_series(*sources.history, range, requests, &during));
  const EnergyFigures energy = energy_figures(series, serving, during);
  std::vector<SideEnergy> out;
  for (const Selector& s : sides) {
    double joules = 0, inferences = 0, tokens = 0;
    bool known = false;
    SideEnergy side{s.model.model, s.model.version, {}, {}, {}, {}};
    for (const an::ModelEnergy& row : energy.report.models) {
      if (row.model != s.model.model || (!s.model.version.empty() && row.version != s.model.version)) continue;
      const auto m = std::find_if(serving.begin(), serving.end(), [&](const an::ServingMetrics& x) {
        return x.model == row.model && x.version == row.version;
      });
      if (m == serving.end()) continue;
      side.attribution.insert(row.attribution);
      inferences += m->inferences_per_second * m->window_s;
      tokens += static_cast<double>(m->output_tokens);
      if (row.joules) {
        joules += *row.joules;
        known = true;
      }
    }
    if (known) {
      side.joules = joules;
      if (inferences > 0) side.joules_per_inference = joules / inferences;
      if (tokens > 0) side.joules_per_output_token = joules / tokens;
    }
    out.push_back(std::move(side));
  }
  return std::optional(std::move(out));
}

// Model sides without reported requests, read from the scraped servers instead.
Result<std::vector<ScrapedSide>> scraped_sides(const Sources& sources, const std::vector<Selector>& sides,
                                               const std::vector<std::vector<double>>& samples,
                                               const server::TimeWindow& w, TimestampNs now) {
  std::optional<std::vector<an::ScrapedServing>> all;
  std::vector<ScrapedSide> found;
  for (std::size_t i = 0; i < sides.size(); ++i) {
    const Selector& s = sides[i];
    if (!samples[i].empty() || s.kind != Selector::Kind::kModel || !s.model.tags.empty()) continue;
    if (!all) {
      auto loaded = load_scraped_serving(*sources.history, {w.from_ns, std::min(w.to_ns, now)});
      if (!loaded.ok()) return loaded.status();
      all = std::move(*loaded);
    }
    PERFSCOPE_ASSIGN_OR_RETURN(auto selected, select_scraped(*all, s.model.model, s.model.version, s.field_name));
    if (!selected) continue;
    const an::ScrapedDistribution& d = selected->distribution;
    auto figures = d.count > 0 ? std::optional(scraped_figures(d, kScrapedSummaryQuantiles)) : std::nullopt;
    found.push_back({i, std::move(*selected), std::move(figures)});
  }
  return found;
}

}  // namespace

Result<AbEvaluation> evaluate_abtest(const Sources& sources, const AbDefinition& d, TimestampNs now) {
  if (Status runs = check_runs(sources, d); !runs.ok()) return runs;
  PERFSCOPE_ASSIGN_OR_RETURN(auto w, server::parse_window(d.window_text, "", "", now));
  AbEvaluation out;
  out.window = w;
  std::vector<std::vector<double>> samples;
  for (const Selector& s : d.sides) {
    auto v = load_values(sources, s, {w.from_ns, w.to_ns});
    if (!v.ok()) return v.status();
    samples.push_back(std::move(*v));
  }
  auto energy = energy_of_sides(sources, d.sides, w, now);
  if (!energy.ok()) return energy.status();
  out.energy = std::move(*energy);
  auto scraped = scraped_sides(sources, d.sides, samples, w, now);
  if (!scraped.ok()) return scraped.status();
  out.scraped = std::move(*scraped);
  if (!d.multi) {
    out.results.push_back(an::compare(samples[0], samples[1], d.options));
    if (cancellation_requested()) return cancelled_status();  // the interval was cut short
    return out;
  }
  // A/B/n: every variant against the first, p-values adjusted together (Benjamini–Hochberg).
  std::vector<double> p;
  for (std::size_t i = 1; i < samples.size(); ++i) {
    if (cancellation_requested()) return cancelled_status();
    out.results.push_back(an::compare(samples[0], samples[i], d.options));
    p.push_back(out.results.back().mann_whitney.p_value);
  }
  if (cancellation_requested()) return cancelled_status();
  out.p_values_adjusted = an::benjamini_hochberg(p);
  for (std::size_t i = 0; i < out.results.size(); ++i) an::decide(out.results[i], d.options, out.p_values_adjusted[i]);
  return out;
}

}  // namespace perfscope::service
