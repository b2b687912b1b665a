// Peak figures of known NVIDIA data-center GPUs, from NVIDIA's datasheets: dense tensor-core
// throughput per data type (no structured sparsity), vector FP32/FP64, and DRAM bandwidth.
// NVML gives no peak FLOP/s; these are what achieved figures (kernels' FLOPs, GPM's tensor
// activity) are set against. A GPU not in the table has none (the caller says so).
//
// Pure functions over a constant table; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace perfscope {

struct GpuSpec {
  std::string model;  // "H100 SXM", …
  // TFLOP/s (TOPS for int8), dense; 0 where the GPU has no such unit or the datasheet none.
  double fp64 = 0, fp64_tensor = 0, fp32 = 0, tf32_tensor = 0, bf16_tensor = 0, fp16_tensor = 0, fp8_tensor = 0,
         int8_tensor = 0;
  double dram_bytes_per_second = 0;
  std::string source = "datasheet";  // "config" where --gpu-peak gave figures, "datasheet, config" for both
  bool dram_from_config = false;     // the DRAM figure is the config's (else NVML's is preferred to it)
};

// One --gpu-peak: figures for GPUs whose NVML name contains `match` (case-insensitive), over the
// table's, or the only figures of a GPU the table does not know (H100 NVL, a MIG instance).
struct GpuPeakOverride {
  std::string match;
  std::string model;  // empty: the table's model, or `match` for a GPU the table lacks
  std::vector<std::pair<std::string, double>> tflops;  // data type (kDataTypes) → TFLOP/s
  double dram_bytes_per_second = 0;  // 0: not given
};

// The spec of a GPU by its NVML name ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB",
// "NVIDIA L4"); none for a GPU the table does not know or cannot tell apart (H100 NVL).
std::optional<GpuSpec> known_gpu_spec(std::string_view nvml_name);
// The table's spec with the first matching override applied.
std::optional<GpuSpec> gpu_spec_for(std::string_view nvml_name, const std::vector<GpuPeakOverride>& overrides);

// The data types peak figures are given for, in the order the table holds them.
inline constexpr std::string_view kDataTypes[] = {"fp64", "fp64_tensor", "fp32", "tf32", "bf16", "fp16", "fp8", "int8"};
bool is_data_type(std::string_view dtype);
std::string data_type_list();  // "fp64, fp64_tensor, …" for error messages

// The peak of `dtype` ("fp64", "fp64_tensor", "fp32", "tf32", "bf16", "fp16", "fp8", "int8") in
// TFLOP/s; none when the spec has no figure for it or the name is unknown.
std::optional<double> peak_tflops(const GpuSpec& spec, std::string_view dtype);

}  // namespace perfscope
