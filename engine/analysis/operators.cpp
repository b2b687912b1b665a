#include "engine/analysis/operators.hpp"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <tuple>
#include <unordered_map>

namespace perfscope::analysis {

TimestampNs operator_start_ns(const OperatorExecution& op) {
  const auto length = static_cast<TimestampNs>(std::llround(std::max(0.0, op.duration_ms) * 1e6));
  return op.ts_ns - std::min(length, op.ts_ns);
}

bool is_cpu_provider(const std::string& provider) {
  std::string p = provider;
  std::transform(p.begin(), p.end(), p.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return p == "cpu" || p.starts_with("cpuexecutionprovider") || p == "cpu_execution_provider";
}

namespace {

struct Accumulator {
  std::string model, key, op_type;
  std::vector<double> durations;
  std::map<std::string, std::uint64_t> providers;
  std::map<std::string, std::uint64_t> shapes;
};

OperatorRow finish(Accumulator& a, const std::vector<double>& qs, PercentileConvention convention, double model_total,
                   std::size_t max_shapes) {
  OperatorRow row;
  row.model = a.model;
  row.key = a.key;
  row.op_type = a.op_type;
  row.count = a.durations.size();
  for (double d : a.durations) row.total_ms += d;
  row.mean_ms = row.count ? row.total_ms / static_cast<double>(row.count) : 0;
  row.percentiles_ms = percentiles(a.durations, qs, convention);
  row.share_of_model = model_total > 0 ? row.total_ms / model_total : 0;
  row.providers = std::move(a.providers);
  // The most seen shape lists; the rest counted, so a model with dynamic shapes stays small.
  std::vector<std::pair<std::string, std::uint64_t>> shapes(a.shapes.begin(), a.shapes.end());
  std::stable_sort(shapes.begin(), shapes.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    if (i < max_shapes) {
      row.input_shapes.insert(shapes[i]);
    } else {
      row.shapes_left_out += shapes[i].second;
    }
  }
  return row;
}

std::vector<OperatorRow> rows_of(std::unordered_map<std::string, Accumulator>& groups, const std::vector<double>& qs,
                                 PercentileConvention convention, const std::map<std::string, double>& model_totals,
                                 std::size_t max_shapes) {
  std::vector<OperatorRow> rows;
  rows.reserve(groups.size());
  for (auto& [id, a] : groups) rows.push_back(finish(a, qs, convention, model_totals.at(a.model), max_shapes));
  std::sort(rows.begin(), rows.end(), [](const OperatorRow& x, const OperatorRow& y) {
    if (x.total_ms != y.total_ms) return x.total_ms > y.total_ms;
    return std::tie(x.model, x.key) < std::tie(y.model, y.key);
  });
  return rows;
}

}  // namespace

OperatorSummary summarize_operators(const std::vector<OperatorExecution>& executions, std::vector<double> qs,
                                    PercentileConvention convention, std::size_t max_shapes) {
  OperatorSummary out;
  out.percentiles = std::move(qs);
  out.convention = convention;
  std::unordered_map<std::string, Accumulator> by_type, by_node;
  std::map<std::string, double> model_totals;
  struct ModelCounts {
    std::uint64_t executions = 0, cpu_executions = 0;
    double cpu_ms = 0;
    bool other_provider = false;
  };
  std::map<std::string, ModelCounts> models;
  for (const OperatorExecution& e : executions) {
    // Keys joined with a byte no name holds (event text is printable).
    auto add = [&](std::unordered_map<std::string, Accumulator>& groups, const std::string& key) {
      Accumulator& a = groups[e.model + '\x1f' + key];
      if (a.durations.empty()) {
        a.model = e.model;
        a.key = key;
        a.op_type = e.op_type;
      }
      a.durations.push_back(e.duration_ms);
      ++a.providers[e.provider];
      ++a.shapes[e.input_shapes];
    };
    add(by_type, e.op_type);
    add(by_node, e.name);
    model_totals[e.model] += e.duration_ms;
    ModelCounts& m = models[e.model];
    ++m.executions;
    if (is_cpu_provider(e.provider)) {
      ++m.cpu_executions;
      m.cpu_ms += e.duration_ms;
    } else {
      m.other_provider = true;
    }
  }
  for (const auto& [model, m] : models) {
    ModelOperators row{model, m.executions, model_totals[model], std::nullopt, 0};
    if (m.other_provider) {
      row.cpu_fallback_share = row.total_ms > 0 ? m.cpu_ms / row.total_ms : 0.0;
      row.cpu_fallback_executions = m.cpu_executions;
    }
    out.models.push_back(std::move(row));
  }
  out.by_type = rows_of(by_type, out.percentiles, convention, model_totals, max_shapes);
  out.by_node = rows_of(by_node, out.percentiles, convention, model_totals, max_shapes);
  return out;
}

}  // namespace perfscope::analysis
