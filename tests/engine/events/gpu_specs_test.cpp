// The table of known GPUs: NVML's names map to the right model (or to none), and peak figures
// come per data type.
#include <gtest/gtest.h>

#include "engine/events/gpu_specs.hpp"

namespace perfscope {
namespace {

TEST(GpuSpecs, NvmlNamesMapToTheirModel) {
  const auto model = [](const char* name) {
    auto s = known_gpu_spec(name);
    return s ? s->model : std::string("none");
  };
  EXPECT_EQ(model("NVIDIA H100 80GB HBM3"), "H100 SXM");
  EXPECT_EQ(model("NVIDIA H100 PCIe"), "H100 PCIe");
  EXPECT_EQ(model("NVIDIA H200"), "H200 SXM");
  EXPECT_EQ(model("NVIDIA A100-SXM4-80GB"), "A100 SXM 80GB");
  EXPECT_EQ(model("NVIDIA A100-SXM4-40GB"), "A100 SXM 40GB");
  EXPECT_EQ(model("NVIDIA A100 80GB PCIe"), "A100 PCIe 80GB");
  EXPECT_EQ(model("NVIDIA L4"), "L4");
  EXPECT_EQ(model("NVIDIA L40S"), "L40S");
  EXPECT_EQ(model("NVIDIA L40"), "none");  // not L40S, not L4
  EXPECT_EQ(model("NVIDIA H100 NVL"), "none");
  EXPECT_EQ(model("NVIDIA H100 80GB HBM3 MIG 1g.10gb"), "none");
  EXPECT_EQ(model("Fake GPU"), "none");
}

TEST(GpuSpecs, PeaksPerDataType) {
  const GpuSpec h100 = *known_gpu_spec("NVIDIA H100 80GB HBM3");
  EXPECT_DOUBLE_EQ(*peak_tflops(h100, "bf16"), 989.4);
  EXPECT_DOUBLE_EQ(*peak_tflops(h100, "fp8"), 1978.9);
  EXPECT_DOUBLE_EQ(h100.dram_bytes_per_second, 3.35e12);
  const GpuSpec a100 = *known_gpu_spec("NVIDIA A100-SXM4-80GB");
  EXPECT_FALSE(peak_tflops(a100, "fp8"));  // no FP8 units
  EXPECT_FALSE(peak_tflops(a100, "fp4"));  // no such name
}

TEST(GpuSpecs, ConfiguredPeaksOverTheTableOrForAGpuItLacks) {
  const std::vector<GpuPeakOverride> overrides = {{"h100 nvl", "H100 NVL", {{"bf16", 835}}, 3.9e12},
                                                  {"H100", "", {{"fp8", 2000}}, 0}};
  // A GPU the table lacks gets only the configured figures.
  const GpuSpec nvl = *gpu_spec_for("NVIDIA H100 NVL", overrides);
  EXPECT_EQ(nvl.model, "H100 NVL");
  EXPECT_EQ(nvl.source, "config");
  EXPECT_DOUBLE_EQ(*peak_tflops(nvl, "bf16"), 835);
  EXPECT_FALSE(peak_tflops(nvl, "fp8"));
  EXPECT_TRUE(nvl.dram_from_config);
  // A known GPU keeps its table figures but those configured (first match only).
  const GpuSpec sxm = *gpu_spec_for("NVIDIA H100 80GB HBM3", overrides);
  EXPECT_EQ(sxm.model, "H100 SXM");
  EXPECT_EQ(sxm.source, "datasheet, config");
  EXPECT_DOUBLE_EQ(*peak_tflops(sxm, "fp8"), 2000);
  EXPECT_DOUBLE_EQ(*peak_tflops(sxm, "bf16"), 989.4);
  EXPECT_FALSE(sxm.dram_from_config);
  // No match: the table alone, or nothing.
  EXPECT_EQ(gpu_spec_for("NVIDIA L4", overrides)->source, "datasheet");
  EXPECT_FALSE(gpu_spec_for("Fake GPU", overrides));
  EXPECT_TRUE(is_data_type("fp64_tensor"));
  EXPECT_FALSE(is_data_type("fp4"));
}

}  // namespace
}  // namespace perfscope
