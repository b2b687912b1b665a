// Operator summaries against values worked out by hand: counts, totals, nearest-rank and linear
// percentiles, shares of the model's time, providers, kept and left-out shapes, CPU fallback.
#include <gtest/gtest.h>

#include "engine/analysis/operators.hpp"

namespace perfscope::analysis {
namespace {

std::vector<OperatorExecution> executions() {
  return {
      {"Conv", "conv1", "CUDAExecutionProvider", "resnet", "1x3x224x224", 1.0, 10},
      {"Conv", "conv1", "CUDAExecutionProvider", "resnet", "1x3x224x224", 3.0, 20},
      {"Conv", "conv2", "CUDAExecutionProvider", "resnet", "1x64x56x56", 2.0, 30},
      {"Conv", "conv2", "CUDAExecutionProvider", "resnet", "1x64x28x28", 4.0, 40},
      {"Relu", "relu1", "CPUExecutionProvider", "resnet", "1x64x56x56", 0.5, 50},
      {"Relu", "relu1", "CPUExecutionProvider", "resnet", "1x64x56x56", 0.5, 60},
      {"MatMul", "mm", "CPUExecutionProvider", "bert", "1x128x768", 12.0, 70},
  };
}

const OperatorRow& row(const std::vector<OperatorRow>& rows, const std::string& model, const std::string& key) {
  for (const auto& r : rows) {
    if (r.model == model && r.key == key) return r;
  }
  throw std::runtime_error("no row " + model + "/" + key);
}

TEST(Operators, PerTypeAndNodeWithExactPercentilesAndShares) {
  const OperatorSummary s = summarize_operators(executions(), {50, 90, 99}, PercentileConvention::kNearestRank, 1);
  const OperatorRow& conv = row(s.by_type, "resnet", "Conv");
  EXPECT_EQ(conv.count, 4u);
  EXPECT_DOUBLE_EQ(conv.total_ms, 10);
  EXPECT_DOUBLE_EQ(conv.mean_ms, 2.5);
  // Nearest rank of {1, 2, 3, 4}: p50 is rank 2, p90 and p99 rank 4.
  EXPECT_EQ(conv.percentiles_ms, (std::vector<double>{2, 4, 4}));
  EXPECT_DOUBLE_EQ(conv.share_of_model, 10.0 / 11.0);
  EXPECT_EQ(conv.providers.at("CUDAExecutionProvider"), 4u);
  // One shape list kept (the most seen), the other executions counted.
  ASSERT_EQ(conv.input_shapes.size(), 1u);
  EXPECT_EQ(conv.input_shapes.begin()->first, "1x3x224x224");
  EXPECT_EQ(conv.shapes_left_out, 2u);
  const OperatorRow& conv2 = row(s.by_node, "resnet", "conv2");
  EXPECT_EQ(conv2.op_type, "Conv");
  EXPECT_DOUBLE_EQ(conv2.total_ms, 6);
  EXPECT_DOUBLE_EQ(row(s.by_node, "bert", "mm").share_of_model, 1.0);
  // Longest total first.
  EXPECT_EQ(s.by_type.front().key, "MatMul");
  EXPECT_EQ(s.by_type[1].key, "Conv");
  EXPECT_EQ(s.by_type.back().key, "Relu");
  const auto linear = summarize_operators(executions(), {50}, PercentileConvention::kLinear);
  EXPECT_DOUBLE_EQ(row(linear.by_type, "resnet", "Conv").percentiles_ms[0], 2.5);  // numpy: median of 1..4
}

TEST(Operators, CpuFallbackOnlyWhereSomethingRanElsewhere) {
  const OperatorSummary s = summarize_operators(executions(), {50}, PercentileConvention::kNearestRank);
  ASSERT_EQ(s.models.size(), 2u);
  const ModelOperators& bert = s.models[0];
  const ModelOperators& resnet = s.models[1];
  EXPECT_EQ(bert.model, "bert");
  EXPECT_FALSE(bert.cpu_fallback_share.has_value());  // ran on the CPU alone: nothing fell back
  EXPECT_EQ(resnet.executions, 6u);
  EXPECT_DOUBLE_EQ(resnet.total_ms, 11);
  ASSERT_TRUE(resnet.cpu_fallback_share.has_value());
  EXPECT_DOUBLE_EQ(*resnet.cpu_fallback_share, 1.0 / 11.0);
  EXPECT_EQ(resnet.cpu_fallback_executions, 2u);
  EXPECT_TRUE(is_cpu_provider("cpu"));
  EXPECT_TRUE(is_cpu_provider("CPUExecutionProvider"));
  EXPECT_FALSE(is_cpu_provider("CUDAExecutionProvider"));
  EXPECT_FALSE(is_cpu_provider("TensorrtExecutionProvider"));
  EXPECT_TRUE(summarize_operators({}, {50}, PercentileConvention::kNearestRank).models.empty());
}

}  // namespace
}  // namespace perfscope::analysis
