#include "engine/gpu_specs.hpp"

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

std::optional<double> peak_tflops(const GpuSpec& s, std::string_view dtype) {
  double v = 0;
  if (dtype == "fp64") v = s.fp64;
  else if (dtype == "fp64_tensor") v = s.fp64_tensor;
  else if (dtype == "fp32") v = s.fp32;
  else if (dtype == "tf32") v = s.tf32_tensor;
  else if (dtype == "bf16") v = s.bf16_tensor;
  else if (dtype == "fp16") v = s.fp16_tensor;
  else if (dtype == "fp8") v = s.fp8_tensor;
  else if (dtype == "int8") v = s.int8_tensor;
  return v > 0 ? std::optional<double>(v) : std::nullopt;
}

}  // namespace perfscope
