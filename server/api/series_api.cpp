// The sampled series: devices, the series list and history queries (downsampled in SQL).
#include "server/api/api.hpp"

#include "server/api/api_helpers.hpp"
#include "server/wire/event_codec.hpp"

namespace perfscope::server {

using nlohmann::json;

namespace {
constexpr std::int64_t kDefaultRangeNs = 15LL * 60 * 1'000'000'000;  // 15 minutes
constexpr std::size_t kDefaultMaxPoints = 1000;
}  // namespace

HttpResponse Api::devices() const {
  json gpus = json::array();
  json topology = json::array();  // every pair of GPUs, as nvidia-smi topo -m shows them
  json nvml = {{"available", false}};
  if (ctx_.gpus) {
    for (const SourceStatus& s : ctx_.gpus->sources()) {
      if (s.name == "nvml") nvml = {{"available", s.available}, {"detail", s.detail}};
    }
    if (nvml["available"]) {
      nvml["driver_version"] = ctx_.gpus->driver_version();
      nvml["nvml_version"] = ctx_.gpus->nvml_version();
    }
    for (const GpuDeviceInfo& d : ctx_.gpus->devices()) {
      json labels = json::object();
      for (const auto& [k, v] : d.labels) labels[k] = v;
      json g = {{"gpu", d.index}, {"uuid", d.uuid}, {"name", d.name}, {"pci_bus_id", d.pci_bus_id},
                {"memory_total_bytes", d.memory_total_bytes}, {"power_limit_watts", d.power_limit_watts},
                {"max_sm_clock_hertz", d.max_sm_clock_hertz}, {"max_memory_clock_hertz", d.max_memory_clock_hertz},
                {"memory_bus_width_bits", d.memory_bus_width_bits},
                {"peak_dram_bandwidth_bytes_per_second", d.peak_dram_bandwidth_bytes_per_second},
                {"nvlinks", d.nvlinks},
                {"nvlink_bytes_per_second_per_link", d.nvlink_bytes_per_second_per_link},
                {"link_peak_bytes_per_second", d.link_peak_bytes_per_second()},
                {"gpm", d.gpm}, {"lost", d.lost}, {"unsupported", d.unsupported}, {"mig_mode", d.mig_mode},
                {"labels", labels}};
      // Peak figures from the table of known GPUs (NVML has no peak FLOP/s).
      if (d.spec) {
        const GpuSpec& p = *d.spec;
        g["peak"] = {{"model", p.model},
                     {"tflops", {{"fp64", p.fp64}, {"fp64_tensor", p.fp64_tensor}, {"fp32", p.fp32}, {"tf32", p.tf32_tensor},
                                 {"bf16", p.bf16_tensor}, {"fp16", p.fp16_tensor}, {"fp8", p.fp8_tensor}, {"int8", p.int8_tensor}}},
                     {"dram_bytes_per_second", p.dram_bytes_per_second},
                     {"dram_from_config", p.dram_from_config}, {"source", p.source},
                     {"note", "datasheet figures are NVIDIA's, dense (no sparsity); --gpu-peak sets others; 0: no such "
                              "unit or no figure"}};
      } else {
        g["peak"] = nullptr;
      }
      // A MIG instance: its parent GPU and instance ids; its series carry them as labels.
      if (!d.parent_uuid.empty()) {
        g["mig"] = {{"parent_uuid", d.parent_uuid}, {"gpu_instance_id", d.gpu_instance_id},
                    {"compute_instance_id", d.compute_instance_id}};
      }
      // Kubernetes: the containers the kubelet says hold it (null: the kubelet is not asked).
      if (ctx_.pods) {
        json pods = json::array();
        for (const PodRef& p : ctx_.pods->holders(d.uuid, d.index)) {
          pods.push_back({{"namespace", p.namespace_name}, {"pod", p.pod}, {"container", p.container}});
        }
        g["pods"] = std::move(pods);
      } else {
        g["pods"] = nullptr;
      }
      gpus.push_back(std::move(g));
    }
    for (const GpuLink& l : ctx_.gpus->topology()) {
      topology.push_back({{"a", l.a}, {"b", l.b}, {"link", l.label()}, {"nvlinks", l.nvlinks}, {"via_nvswitch", l.via_nvswitch},
                          {"pcie", l.pcie.empty() ? json(nullptr) : json(l.pcie)}});
    }
  } else {
    nvml["detail"] = "the GPU collector is disabled (--enable-gpu-collector false)";
  }
  return json_response(200, {{"nvml", nvml}, {"gpus", gpus}, {"topology", topology},
                              {"note", "per-process GPU memory lists host PIDs; inside a container they may not match"}});
}

HttpResponse Api::series() const {
  auto list = ctx_.history->list();
  if (!list.ok()) return status_response(list.status());
  json out = json::array();
  for (const db::SeriesInfo& s : *list) {
    json latest = nullptr;
    if (s.latest) latest = {{"ts_ns", s.latest->ts_ns}, {"value", s.latest->value}};
    out.push_back({{"name", s.key.name}, {"labels", labels_to_json(s.key.labels)}, {"unit", s.family.unit},
                   {"type", to_string(s.family.type)}, {"help", s.family.help}, {"live", s.live},
                   {"latest", latest}});
  }
  return json_response(200, {{"series", out}});
}

HttpResponse Api::series_query(const HttpRequest& request) const {
  static const char* kReserved[] = {"name", "from", "to", "max_points"};
  db::HistoryQuery q;
  auto name = request.query.find("name");
  if (name == request.query.end() || name->second.empty()) {
    return error_response(400, "invalid_argument", "the 'name' parameter is required", "name");
  }
  q.name = name->second;

  TimestampNs now = now_ns();
  q.to_ns = now;
  if (auto it = request.query.find("to"); it != request.query.end()) {
    auto t = parse_time_ns(it->second, now, "to");
    if (!t.ok()) return status_response(t.status());
    q.to_ns = *t;
  }
  q.from_ns = q.to_ns - kDefaultRangeNs;
  if (auto it = request.query.find("from"); it != request.query.end()) {
    auto t = parse_time_ns(it->second, now, "from");
    if (!t.ok()) return status_response(t.status());
    q.from_ns = *t;
  }
  if (q.from_ns > q.to_ns) return error_response(400, "invalid_argument", "'from' is after 'to'", "from");

  auto max_points = size_param(request, "max_points", kDefaultMaxPoints, 1, kMaxMaxPoints);
  if (!max_points.ok()) return status_response(max_points.status());
  q.max_points = *max_points;
  for (const auto& [k, v] : request.query) {
    if (std::find(std::begin(kReserved), std::end(kReserved), k) != std::end(kReserved)) continue;
    if (!is_valid_label_name(k)) {
      return error_response(400, "invalid_argument", "'" + k + "' is neither a known parameter nor a label name", k);
    }
    q.matchers.emplace_back(k, v);
  }

  auto result = ctx_.history->query(q);
  if (!result.ok()) return status_response(result.status());
  json series = json::array();
  for (const db::SeriesData& d : *result) {
    json points = json::array();
    json columns;
    if (d.downsampled) {
      columns = {"ts_ns", "min", "max", "avg", "count"};
      for (const Bucket& b : d.buckets) points.push_back({b.start_ns, b.min, b.max, b.avg(), b.count});
    } else {
      columns = {"ts_ns", "value"};
      for (const Sample& s : d.samples) points.push_back({s.ts_ns, s.value});
    }
    series.push_back({{"name", d.info.key.name}, {"labels", labels_to_json(d.info.key.labels)},
                      {"unit", d.info.family.unit}, {"type", to_string(d.info.family.type)},
                      {"downsampled", d.downsampled}, {"bucket_ns", d.bucket_ns}, {"columns", columns},
                      {"points", points},
                      {"sources", {{"memory", d.from_memory}, {"database", d.from_database}}}});
  }
  return json_response(200, {{"from_ns", q.from_ns}, {"to_ns", q.to_ns}, {"max_points", q.max_points}, {"series", series}});
}

}  // namespace perfscope::server
