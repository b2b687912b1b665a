// Series over a window as the analyses read them: each series' finite readings summarized
// (mean, extremes, p95, first and last, trend), the GPUs' power while requests were in flight,
// and energy per GPU and per model from the energy counters and power readings.
//
// Pure functions over values, but read_energy_series, which reads the series history.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "db/series_history.hpp"
#include "db/time_range.hpp"
#include "engine/analysis/energy.hpp"
#include "engine/analysis/serving.hpp"
#include "engine/analysis/trend.hpp"
#include "engine/events/events.hpp"

namespace perfscope::service {

// One series over a window: its finite readings summarized (the analysis document's gauges).
struct SeriesSummary {
  SeriesKey key;
  std::string unit;
  std::size_t count = 0;
  double avg = 0, min = 0, peak = 0, p95 = 0, last = 0, first = 0;
  analysis::Trend trend;
};
// Series with no finite reading are left out.
std::vector<SeriesSummary> summarize_series(const std::vector<db::SeriesData>& data);

// A GPU's power while requests were in flight (engine/analysis/energy.hpp, power_during).
struct RequestPower {
  SeriesKey key;  // the gpu_power_watts series
  analysis::PowerDuring power;
};
// Of every gpu_power_watts series among `data` (raw samples), the readings taken while one of
// `requests` was in flight.
std::vector<RequestPower> request_power(const std::vector<db::SeriesData>& data, const std::vector<InferenceEvent>& requests);

// The series energy per model is computed from: the GPUs' energy counters and power, the host's
// RAPL counters, read raw over `range` and summarized; with `requests`, the GPUs' power while
// they were in flight into `during`.
Result<std::vector<SeriesSummary>> read_energy_series(const db::SeriesHistory& history, const db::TimeRange& range,
                                                      const std::vector<InferenceEvent>& requests = {},
                                                      std::vector<RequestPower>* during = nullptr);

// Energy per GPU and per model (engine/analysis/energy.hpp) from summaries holding those series
// (read_energy_series, or the analysis document's gauges), shared among the models of `serving`.
struct EnergyFigures {
  std::vector<analysis::GpuEnergy> gpus;
  // Per GPU, in the same order: why its joules are unknown (empty: known). Unknown is not zero.
  std::vector<std::string> unknown_joules;
  analysis::EnergyReport report;
};
EnergyFigures energy_figures(const std::vector<SeriesSummary>& series, const std::vector<analysis::ServingMetrics>& serving,
                             const std::vector<RequestPower>& during = {});

// The summary of the series `family` that carries label uuid=`uuid`, or none.
const SeriesSummary* gauge_of(const std::vector<SeriesSummary>& gauges, std::string_view family, const std::string& uuid);

}  // namespace perfscope::service
