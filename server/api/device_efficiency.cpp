// Achieved figures against what a GPU can do and what it should do, as JSON: a kernel's place on
// its GPU's roofline (/api/v1/kernels) and each GPU's achieved TFLOP/s, bandwidth, memory and
// power against its configured targets (the analysis document's `devices`, computed by the
// analysis service).
#include <algorithm>
#include <cmath>

#include "server/api/api.hpp"
#include "server/api/api_helpers.hpp"

namespace perfscope::server {

using nlohmann::json;
namespace an = perfscope::analysis;

namespace {

// A figure in `unit`s, or null where there is none.
json or_null(const std::optional<double>& v, double unit = 1) { return v ? json(*v / unit) : json(nullptr); }

json roofline_entry(const std::string& device, const an::KernelWork& work, const std::vector<std::string>& dtypes,
                    const std::vector<GpuDeviceInfo>& gpus) {
  json e = {{"device", device}};
  auto unavailable = [&](std::string why) {
    e["unavailable"] = std::move(why);
    return e;
  };
  if (!work.arithmetic_intensity()) return unavailable("no execution of measurable duration reported both flops and bytes");
  auto gpu = std::find_if(gpus.begin(), gpus.end(), [&](const GpuDeviceInfo& d) { return d.index == device; });
  if (gpu == gpus.end()) return unavailable("device " + device + " is not a GPU this server reads through NVML");
  const auto [dram, dram_source] = service::dram_ceiling(*gpu);
  if (dram <= 0) return unavailable("the peak DRAM bandwidth of " + gpu->name + " is unknown: give it with --gpu-peak");
  if (dtypes.size() != 1) {
    return unavailable(dtypes.empty() ? "no dtype reported with the flops: the compute ceiling depends on it"
                                      : "flops in several dtypes: report each as a kernel of its own");
  }
  std::optional<double> peak = gpu->spec ? peak_tflops(*gpu->spec, dtypes[0]) : std::nullopt;
  if (!peak) return unavailable("no " + dtypes[0] + " peak known for " + gpu->name + ": give it with --gpu-peak");
  const an::Ceilings ceilings{*peak * 1e12, dram};
  const std::optional<an::RooflinePoint> placed = an::place_on_roofline(work, ceilings);
  if (!placed) return unavailable("no execution of measurable duration reported both flops and bytes");
  const an::RooflinePoint& p = *placed;
  e.update({{"model", gpu->spec->model}, {"dtype", dtypes[0]}, {"peak_tflops", *peak},
            {"peak_gb_per_second", dram / 1e9}, {"peak_source", {{"compute", gpu->spec->source}, {"dram", dram_source}}},
            {"ridge_flops_per_byte", ceilings.ridge()}, {"arithmetic_intensity", p.intensity},
            {"achieved_tflops", p.achieved_flops_per_second / 1e12},
            {"attainable_tflops", p.attainable_flops_per_second / 1e12},
            {"fraction_of_attainable", p.fraction_of_attainable},
            {"achieved_gb_per_second", p.achieved_bytes_per_second / 1e9},
            {"fraction_of_peak_bandwidth", p.fraction_of_peak_bandwidth},
            {"bound", p.memory_bound ? "memory" : "compute"}});
  return e;
}

json achieved_json(const std::optional<an::Achieved>& a) {
  if (!a) return nullptr;
  return {{"value", a->value}, {"source", a->source}, {"basis", a->basis}};
}

}  // namespace

void add_kernel_work(json& row, const db::KernelSummary& k, const std::vector<GpuDeviceInfo>& gpus) {
  row["achieved_tflops"] = or_null(k.work.flops_per_second(), 1e12);
  row["achieved_gb_per_second"] = or_null(k.work.bytes_per_second(), 1e9);
  row["arithmetic_intensity"] = or_null(k.work.arithmetic_intensity());
  json places = json::array();
  if (!k.work.empty()) {
    for (const auto& [device, work] : k.work_by_device) places.push_back(roofline_entry(device, work, k.dtypes, gpus));
  }
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
