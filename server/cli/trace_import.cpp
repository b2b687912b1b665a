#include "server/cli/trace_import.hpp"

#include <algorithm>
#include <cmath>

namespace perfscope::server {

using nlohmann::json;

namespace {

constexpr std::string_view kKernelTime = "_kernel_time";

Status bad(std::size_t index, const std::string& field, const std::string& message) {
  return Status::invalid_argument("event " + std::to_string(index) + ": '" + field + "' " + message,
                                  "events[" + std::to_string(index) + "]." + field);
}

}  // namespace

std::string detect_trace_format(const json& doc) {
  if (!doc.is_array()) return "";
  for (const json& e : doc) {
    if (!e.is_object()) return "";
    const auto cat = e.find("cat");
    if (cat != e.end() && cat->is_string() && (*cat == "Node" || *cat == "Session")) return "onnxruntime";
  }
  return "";
}

Result<TraceImport> import_onnxruntime_profile(const json& doc, const std::string& run, const std::string& model,
                                               TimestampNs end_ns) {
  if (!doc.is_array()) return Status::invalid_argument("an ONNX Runtime profile is a JSON array of events", "file");
  // First pass: every event checked, the span found.
  double last_us = 0;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const json& e = doc[i];
    if (!e.is_object()) return bad(i, "event", "must be an object");
    for (const char* field : {"ts", "dur"}) {
      auto it = e.find(field);
      if (it == e.end() || !it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
        return bad(i, field, "must be a non-negative number (µs)");
      }
    }
    for (const char* field : {"cat", "name"}) {
      if (!e.contains(field) || !e[field].is_string()) return bad(i, field, "must be a string");
    }
    last_us = std::max(last_us, e["ts"].get<double>() + e["dur"].get<double>());
  }
  const auto at = [&](const json& e) {
    return end_ns - static_cast<TimestampNs>(std::llround((last_us - e["ts"].get<double>() - e["dur"].get<double>()) * 1000));
  };
  TraceImport out;
  out.format = "onnxruntime";
  out.events.push_back({{"type", "run"}, {"name", run}, {"command", {"onnxruntime", model}},
                        {"start_ns", end_ns - static_cast<TimestampNs>(std::llround(last_us * 1000))}, {"end_ns", end_ns}});
  const json tags = {{"run", run}};
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const json& e = doc[i];
    const std::string& cat = e["cat"].get_ref<const std::string&>();
    const std::string& name = e["name"].get_ref<const std::string&>();
    const double dur_ms = e["dur"].get<double>() / 1000;
    if (cat == "Session" && name == "model_run") {
      out.events.push_back({{"type", "inference"}, {"model", model}, {"latency_ms", dur_ms}, {"ts_ns", at(e)}, {"tags", tags}});
      ++out.inferences;
      continue;
    }
    if (cat != "Node" || !name.ends_with(kKernelTime)) continue;  // fences and the like: no execution
    const auto args = e.find("args");
    if (args == e.end() || !args->is_object()) return bad(i, "args", "must be an object with op_name");
    if (!args->contains("op_name") || !(*args)["op_name"].is_string()) return bad(i, "args.op_name", "must be a string");
    std::string provider = "unknown";
    if (auto p = args->find("provider"); p != args->end()) {
      if (!p->is_string()) return bad(i, "args.provider", "must be a string");
      provider = p->get<std::string>();
    }
    // input_type_shape: [{"float":[1,3,224,224]}, …], one object per input.
    json shapes = json::array();
    if (auto s = args->find("input_type_shape"); s != args->end()) {
      if (!s->is_array()) return bad(i, "args.input_type_shape", "must be an array");
      for (const json& input : *s) {
        if (!input.is_object() || input.size() != 1 || !input.begin()->is_array()) {
          return bad(i, "args.input_type_shape", "must hold one {type: [dims]} object per input");
        }
        for (const json& d : *input.begin()) {
          if (!d.is_number_integer()) return bad(i, "args.input_type_shape", "dimensions must be integers");
        }
        shapes.push_back(*input.begin());
      }
    }
    out.events.push_back({{"type", "operator"}, {"op_type", (*args)["op_name"]},
                          {"name", name.substr(0, name.size() - kKernelTime.size())}, {"provider", provider},
                          {"duration_ms", dur_ms}, {"model", model}, {"input_shapes", shapes}, {"ts_ns", at(e)},
                          {"tags", tags}});
    ++out.operators;
  }
  if (out.operators == 0 && out.inferences == 0) {
    return Status::invalid_argument("the profile holds no node (…_kernel_time) or model_run event", "file");
  }
  return out;
}

}  // namespace perfscope::server
