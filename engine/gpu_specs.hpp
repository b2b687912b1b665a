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

namespace perfscope {

struct GpuSpec {
  std::string model;  // "H100 SXM", …
  // TFLOP/s (TOPS for int8), dense; 0 where the GPU has no such unit or the datasheet none.
  double fp64 = 0, fp64_tensor = 0, fp32 = 0, tf32_tensor = 0, bf16_tensor = 0, fp16_tensor = 0, fp8_tensor = 0,
         int8_tensor = 0;
  double dram_bytes_per_second = 0;
};

// The spec of a GPU by its NVML name ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB",
// "NVIDIA L4"); none for a GPU the table does not know or cannot tell apart (H100 NVL).
std::optional<GpuSpec> known_gpu_spec(std::string_view nvml_name);

// The peak of `dtype` ("fp64", "fp64_tensor", "fp32", "tf32", "bf16", "fp16", "fp8", "int8") in
// TFLOP/s; none when the spec has no figure for it or the name is unknown.
std::optional<double> peak_tflops(const GpuSpec& spec, std::string_view dtype);

}  // namespace perfscope
