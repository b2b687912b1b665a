// Achieved figures against what a GPU can do and what it should do, rendered as JSON: a kernel's
// place on its GPU's roofline (/api/v1/kernels) and each GPU's achieved TFLOP/s, bandwidth,
// memory and power against its configured targets (the analysis document's `devices`). Both are
// computed by the analysis service (server/service/device_efficiency.hpp).
#include "server/api/api.hpp"
#include "server/api/api_helpers.hpp"

namespace perfscope::server {

using nlohmann::json;
namespace an = perfscope::analysis;

namespace {

// A figure in `unit`s, or null where there is none.
json or_null(const std::optional<double>& v, double unit = 1) { return v ? json(*v / unit) : json(nullptr); }

json roofline_json(const service::RooflinePlace& p) {
  json e = {{"device", p.device}};
  if (!p.unavailable.empty()) {
    e["unavailable"] = p.unavailable;
    return e;
  }
  e.update({{"model", p.model}, {"dtype", p.dtype}, {"peak_tflops", p.peak_tflops},
            {"peak_gb_per_second", p.dram.bytes_per_second / 1e9},
            {"peak_source", {{"compute", p.compute_source}, {"dram", p.dram.source}}},
            {"ridge_flops_per_byte", p.ceilings.ridge()}, {"arithmetic_intensity", p.point.intensity},
            {"achieved_tflops", p.point.achieved_flops_per_second / 1e12},
            {"attainable_tflops", p.point.attainable_flops_per_second / 1e12},
            {"fraction_of_attainable", p.point.fraction_of_attainable},
            {"achieved_gb_per_second", p.point.achieved_bytes_per_second / 1e9},
            {"fraction_of_peak_bandwidth", p.point.fraction_of_peak_bandwidth},
            {"bound", p.point.memory_bound ? "memory" : "compute"}});
  return e;
}

json achieved_json(const std::optional<an::Achieved>& a) {
  if (!a) return nullptr;
  return {{"value", a->value}, {"source", a->source}, {"basis", a->basis}};
}

}  // namespace

void add_kernel_work(json& row, const service::KernelRow& kernel) {
  const db::KernelSummary& k = kernel.summary;
  row["achieved_tflops"] = or_null(k.work.flops_per_second(), 1e12);
  row["achieved_gb_per_second"] = or_null(k.work.bytes_per_second(), 1e9);
  row["arithmetic_intensity"] = or_null(k.work.arithmetic_intensity());
  json places = json::array();
  for (const service::RooflinePlace& p : kernel.roofline) places.push_back(roofline_json(p));
  row["roofline"] = std::move(places);
}

json devices_efficiency_json(const std::vector<service::DeviceEfficiency>& devices) {
  json out = json::array();
  for (const service::DeviceEfficiency& e : devices) {
    const GpuDeviceInfo& d = e.gpu;
    const an::DeviceAchieved& a = e.achieved;
    json peak = nullptr;
    if (d.spec) {
      peak = {{"model", d.spec->model}, {"bf16_tflops", or_null(peak_tflops(*d.spec, "bf16"))},
              {"dram_gb_per_second", e.dram.bytes_per_second > 0 ? json(e.dram.bytes_per_second / 1e9) : json(nullptr)},
              {"source", {{"compute", d.spec->source}, {"dram", e.dram.source}}}};
    }
    json row = {{"gpu", d.index}, {"uuid", d.uuid}, {"name", d.name}, {"peak", peak},
                {"achieved", {{"tflops", achieved_json(a.tflops)}, {"gb_per_second", achieved_json(a.gb_per_second)},
                              {"memory_peak_bytes", achieved_json(a.memory_peak_bytes)},
                              {"power_avg_watts", achieved_json(a.power_avg_watts)}}},
                {"target", nullptr}, {"checks", json::array()}};
    if (const std::optional<an::DeviceTarget>& t = e.target) {
      row["target"] = {{"match", t->match}, {"min_tflops", or_null(t->min_tflops)}, {"target_tflops", or_null(t->target_tflops)},
                       {"min_gb_per_second", or_null(t->min_gb_per_second)},
                       {"target_gb_per_second", or_null(t->target_gb_per_second)},
                       {"memory_budget_bytes", or_null(t->memory_budget_bytes)},
                       {"power_budget_watts", or_null(t->power_budget_watts)}};
      for (const an::TargetCheck& c : e.checks) {
        row["checks"].push_back({{"figure", c.figure}, {"achieved", achieved_json(c.achieved)},
                                 {"minimum", or_null(c.minimum)}, {"target", or_null(c.target)},
                                 {"budget", or_null(c.budget)}, {"efficiency", or_null(c.efficiency)},
                                 {"of_minimum", or_null(c.of_minimum)}, {"of_budget", or_null(c.of_budget)},
                                 {"status", c.status},
                                 {"recommendation", c.recommendation.empty() ? json(nullptr) : json(c.recommendation)}});
      }
    }
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace perfscope::server
