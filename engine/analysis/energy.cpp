#include "engine/analysis/energy.hpp"

#include <algorithm>
#include <cmath>

namespace perfscope::analysis {

std::vector<TimeSpan> busy_spans(std::vector<TimeSpan> requests) {
  std::sort(requests.begin(), requests.end(), [](const TimeSpan& a, const TimeSpan& b) { return a.from_ns < b.from_ns; });
  std::vector<TimeSpan> out;
  for (const TimeSpan& r : requests) {
    if (r.to_ns < r.from_ns) continue;
    if (!out.empty() && r.from_ns <= out.back().to_ns) {
      out.back().to_ns = std::max(out.back().to_ns, r.to_ns);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

PowerDuring power_during(const std::vector<Sample>& readings, const std::vector<TimeSpan>& busy) {
  PowerDuring out;
  double sum = 0;
  for (const Sample& s : readings) {
    if (!std::isfinite(s.value)) continue;
    // The first span that ends at or after the reading holds it when it has begun by then.
    auto it = std::lower_bound(busy.begin(), busy.end(), s.ts_ns, [](const TimeSpan& b, TimestampNs t) { return b.to_ns < t; });
    if (it == busy.end() || it->from_ns > s.ts_ns) continue;
    ++out.readings;
    sum += s.value;
    out.peak_watts = std::max(out.peak_watts.value_or(s.value), s.value);
  }
  if (out.readings > 0) out.avg_watts = sum / static_cast<double>(out.readings);
  return out;
}

EnergyReport energy_per_model(const std::vector<GpuEnergy>& gpus, const std::vector<ModelLoad>& models,
                              std::optional<double> host_joules) {
  EnergyReport out;
  out.host_joules = host_joules;
  for (const GpuEnergy& g : gpus) {
    if (g.joules) out.total_joules = out.total_joules.value_or(0) + *g.joules;
  }
  std::vector<const ModelLoad*> serving;
  for (const ModelLoad& m : models) {
    if (m.requests > 0) serving.push_back(&m);
  }
  // The basis a share is taken on: compute time when every model reports it, else latency.
  bool all_compute = true;
  for (const ModelLoad* m : serving) all_compute = all_compute && m->compute_ms.has_value();
  double basis_total = 0;
  for (const ModelLoad* m : serving) basis_total += all_compute ? *m->compute_ms : m->latency_ms;
  for (const ModelLoad* m : serving) {
    ModelEnergy e;
    e.model = m->model;
    e.version = m->version;
    if (serving.size() == 1) {
      e.attribution = "sole model";
      e.share = 1.0;
    } else if (basis_total > 0) {
      e.attribution = all_compute ? "proportional to compute time" : "proportional to latency";
      e.share = (all_compute ? *m->compute_ms : m->latency_ms) / basis_total;
    } else {
      e.attribution = "not attributable";
    }
    if (e.share && out.total_joules) {
      e.joules = *e.share * *out.total_joules;
      if (*e.joules > 0) {
        if (m->inferences > 0) e.joules_per_inference = *e.joules / m->inferences;
        if (m->output_tokens > 0) e.joules_per_output_token = *e.joules / m->output_tokens;
        e.inferences_per_joule = m->inferences / *e.joules;
        e.output_tokens_per_joule = m->output_tokens / *e.joules;
      }
    }
    if (e.share && host_joules) {
      e.host_joules = *e.share * *host_joules;
      if (m->inferences > 0) e.host_joules_per_inference = *e.host_joules / m->inferences;
    }
    out.models.push_back(std::move(e));
  }
  return out;
}

}  // namespace perfscope::analysis
