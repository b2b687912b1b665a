#include "engine/events/gpu_specs.hpp"

#include <algorithm>
#include <cctype>

namespace perfscope {

namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

bool has(const std::string& name, std::string_view part) { return name.find(part) != std::string::npos; }

// NVIDIA datasheet figures, dense (the sparse figures are twice these for tensor types).
GpuSpec spec(std::string model, double fp64, double fp64_tensor, double fp32, double tf32, double bf16, double fp8,
             double int8, double dram_tb_per_s) {
  return GpuSpec{std::move(model), fp64, fp64_tensor, fp32, tf32, bf16, bf16, fp8, int8, dram_tb_per_s * 1e12};
}

}  // namespace

std::optional<GpuSpec> known_gpu_spec(std::string_view nvml_name) {
  const std::string n = upper(nvml_name);
  // NVL variants (H100 NVL, H200 NVL) have figures of their own: not guessed. A MIG instance
  // ("… MIG 1g.10gb") has a fraction of its GPU's units: not the GPU's peak.
  if (has(n, "NVL") || has(n, "MIG")) return std::nullopt;
  if (has(n, "H200")) return spec("H200 SXM", 34, 67, 67, 494.7, 989.4, 1978.9, 1978.9, 4.8);
  if (has(n, "H100")) {
    if (has(n, "PCIE")) return spec("H100 PCIe", 26, 51, 51, 378, 756, 1513, 1513, 2.0);
    if (has(n, "SXM") || has(n, "HBM3")) return spec("H100 SXM", 34, 67, 67, 494.7, 989.4, 1978.9, 1978.9, 3.35);
    return std::nullopt;
  }
  if (has(n, "A100")) {
    const bool gb80 = has(n, "80GB");
    if (has(n, "SXM")) return spec(gb80 ? "A100 SXM 80GB" : "A100 SXM 40GB", 9.7, 19.5, 19.5, 156, 312, 0, 624, gb80 ? 2.039 : 1.555);
    if (has(n, "PCIE")) return spec(gb80 ? "A100 PCIe 80GB" : "A100 PCIe 40GB", 9.7, 19.5, 19.5, 156, 312, 0, 624, gb80 ? 1.935 : 1.555);
    return std::nullopt;
  }
  if (has(n, "L40S")) return spec("L40S", 0, 0, 91.6, 183, 362.05, 733, 733, 0.864);
  if (n.ends_with(" L4")) return spec("L4", 0, 0, 30.3, 60, 121, 242.5, 242.5, 0.3);
  return std::nullopt;
}

bool is_data_type(std::string_view dtype) {
  return std::find(std::begin(kDataTypes), std::end(kDataTypes), dtype) != std::end(kDataTypes);
}

std::string data_type_list() {
  std::string out;
  for (std::string_view d : kDataTypes) out += (out.empty() ? "" : ", ") + std::string(d);
  return out;
}

namespace {

// The spec's figure for a data type; null for a name that is none (const or not, as the spec).
template <class Spec>
auto figure_of(Spec& s, std::string_view dtype) -> decltype(&s.fp64) {
  if (dtype == "fp64") return &s.fp64;
  if (dtype == "fp64_tensor") return &s.fp64_tensor;
  if (dtype == "fp32") return &s.fp32;
  if (dtype == "tf32") return &s.tf32_tensor;
  if (dtype == "bf16") return &s.bf16_tensor;
  if (dtype == "fp16") return &s.fp16_tensor;
  if (dtype == "fp8") return &s.fp8_tensor;
  if (dtype == "int8") return &s.int8_tensor;
  return nullptr;
}

}  // namespace

std::optional<double> peak_tflops(const GpuSpec& s, std::string_view dtype) {
  const double* v = figure_of(s, dtype);
  return v && *v > 0 ? std::optional<double>(*v) : std::nullopt;
}

std::optional<GpuSpec> gpu_spec_for(std::string_view nvml_name, const std::vector<GpuPeakOverride>& overrides) {
  std::optional<GpuSpec> spec = known_gpu_spec(nvml_name);
  const std::string name = upper(nvml_name);
  for (const GpuPeakOverride& o : overrides) {
    if (!has(name, upper(o.match))) continue;
    if (spec) {
      spec->source = "datasheet, config";
    } else {
      spec = GpuSpec{};
      spec->model = o.match;
      spec->source = "config";
    }
    if (!o.model.empty()) spec->model = o.model;
    for (const auto& [dtype, tflops] : o.tflops) {
      if (double* v = figure_of(*spec, dtype)) *v = tflops;
    }
    if (o.dram_bytes_per_second > 0) {
      spec->dram_bytes_per_second = o.dram_bytes_per_second;
      spec->dram_from_config = true;
    }
    break;
  }
  return spec;
}

}  // namespace perfscope
