// Energy efficiency of serving: the GPUs' energy over a window (their energy counters' increase)
// set against the requests completed in it — joules per inference and per output token,
// inferences and tokens per second per watt (= per joule), per model and version.
//
// Method: a GPU's energy is its counter's last minus first reading in the window (idle time
// between requests included: what serving cost, not what the kernels alone drew). With one
// model in the window it gets all of it; with several, a share proportional to its compute time
// (the requests' compute_ms, or their latency where a model reports no compute time: said so);
// with no such time, not attributable. The host's CPU packages (RAPL), where readable, are shared
// the same way and reported apart. Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/series/series.hpp"

namespace perfscope::analysis {

struct GpuEnergy {
  std::string gpu, uuid;
  std::optional<double> joules;  // none: the counter went back (driver reload) or had one reading
  std::optional<double> avg_watts, peak_watts;  // every reading of the window
  std::optional<double> request_avg_watts, request_peak_watts;  // readings while a request was in flight
};

// A span of time, both ends included.
struct TimeSpan {
  TimestampNs from_ns = 0, to_ns = 0;
};
// The time some request was in flight: the union of the requests' spans [completion − latency,
// completion], as sorted, disjoint spans.
std::vector<TimeSpan> busy_spans(std::vector<TimeSpan> requests);

struct PowerDuring {
  std::optional<double> avg_watts, peak_watts;  // none: no reading fell inside a busy span
  std::size_t readings = 0;
};
// Power readings taken while some request was in flight (`busy` as busy_spans gives it): their
// mean and maximum. A reading stands for the driver's averaging period before it, so a short
// request between two readings is seen only through the next one when it falls inside.
PowerDuring power_during(const std::vector<Sample>& readings, const std::vector<TimeSpan>& busy);

struct ModelLoad {
  std::string model, version;
  double requests = 0, inferences = 0, output_tokens = 0;
  std::optional<double> compute_ms;  // the requests' compute time summed; none when not reported
  double latency_ms = 0;             // the requests' latency summed
};

struct ModelEnergy {
  std::string model, version;
  std::string attribution;  // "sole model", "proportional to compute time", "proportional to latency", "not attributable"
  std::optional<double> share, joules, joules_per_inference, joules_per_output_token;
  std::optional<double> inferences_per_joule, output_tokens_per_joule;  // = per second per watt
  std::optional<double> host_joules, host_joules_per_inference;  // the CPU packages' share
};

struct EnergyReport {
  std::optional<double> total_joules;  // over the GPUs whose counter gave an increase
  std::optional<double> host_joules;   // the host's CPU packages, where RAPL is readable
  std::vector<ModelEnergy> models;
};

EnergyReport energy_per_model(const std::vector<GpuEnergy>& gpus, const std::vector<ModelLoad>& models,
                              std::optional<double> host_joules = std::nullopt);

}  // namespace perfscope::analysis
