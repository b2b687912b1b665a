// Operator metrics: ONNX Runtime's and other frameworks' per-node timings (`operator` events)
// summarized per op type and per node — count, total, mean, exact percentiles under the
// percentile machinery's conventions, share of the model's operator time, the execution
// providers that ran them, the input shapes seen — and the share that fell back to the CPU.
//
// Pure functions over values; safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/analysis/stats.hpp"
#include "engine/base/clock.hpp"

namespace perfscope::analysis {

// One operator execution as stored.
struct OperatorExecution {
  std::string op_type;  // Conv, MatMul, …
  std::string name;     // the graph node
  std::string provider;  // CUDAExecutionProvider, CPUExecutionProvider, …
  std::string model;
  std::string input_shapes;  // "1x3x224x224,64x3x7x7" (engine/events/events.hpp's format_shapes)
  double duration_ms = 0;
  TimestampNs ts_ns = 0;
};

// When an operator began: its time is its completion, its duration runs back from there.
TimestampNs operator_start_ns(const OperatorExecution& op);

// Whether a provider runs on the CPU ("CPUExecutionProvider", "cpu"): the fallback the
// analysis counts when a model's other operators run on an accelerator.
bool is_cpu_provider(const std::string& provider);

struct OperatorRow {
  std::string model;
  std::string key;      // the op type, or the node name
  std::string op_type;  // for node rows: the node's type
  std::uint64_t count = 0;
  double total_ms = 0, mean_ms = 0;
  std::vector<double> percentiles_ms;  // at OperatorSummary::percentiles
  double share_of_model = 0;           // total / the model's operator time in the window
  std::map<std::string, std::uint64_t> providers;     // executions per provider
  std::map<std::string, std::uint64_t> input_shapes;  // executions per shape list (the most seen kept)
  std::uint64_t shapes_left_out = 0;                  // executions of shapes beyond the kept ones
};

struct ModelOperators {
  std::string model;
  std::uint64_t executions = 0;
  double total_ms = 0;
  // Operator time on CPU providers, over all operator time, when some of the model's operators
  // ran on another provider (a CPU-only model has no fallback): null otherwise.
  std::optional<double> cpu_fallback_share;
  std::uint64_t cpu_fallback_executions = 0;
};

struct OperatorSummary {
  std::vector<double> percentiles;  // the qs asked for
  PercentileConvention convention = PercentileConvention::kNearestRank;
  std::vector<ModelOperators> models;  // by model name
  std::vector<OperatorRow> by_type;    // per model and op type, longest total first
  std::vector<OperatorRow> by_node;    // per model and node, longest total first
};

// Summarizes `executions` (any order). At most `max_shapes` shape lists are kept per row.
OperatorSummary summarize_operators(const std::vector<OperatorExecution>& executions, std::vector<double> percentiles,
                                    PercentileConvention convention, std::size_t max_shapes = 8);

}  // namespace perfscope::analysis
