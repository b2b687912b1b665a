#include "server/cli/trace_import.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

#include "engine/events/events.hpp"

namespace perfscope::server {

using nlohmann::json;

namespace {

constexpr std::string_view kKernelTime = "_kernel_time";

Status bad(std::size_t index, const std::string& field, const std::string& message,
           const std::string& array = "events") {
  return Status::invalid_argument("event " + std::to_string(index) + ": '" + field + "' " + message,
                                  array + "[" + std::to_string(index) + "]." + field);
}

// Bounds on the microsecond times of a trace, so that nanoseconds on the wall clock stay in
// range: times since the epoch until 2096 (older PyTorch traces count from the epoch, newer from
// boot plus a base time) and spans up to a day.
constexpr double kMaxTraceUs = 4e15;
constexpr double kMaxSpanUs = 864e8;
constexpr std::int64_t kMaxBaseNs = 4'000'000'000'000'000'000;

// ts and dur of event `index`: numbers within the bounds above, or the error naming the field.
Status check_times(const json& e, std::size_t index, const std::string& array) {
  for (const char* field : {"ts", "dur"}) {
    auto it = e.find(field);
    const double limit = field[0] == 't' ? kMaxTraceUs : kMaxSpanUs;
    if (it == e.end() || !it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0 ||
        it->get<double>() > limit) {
      return bad(index, field, "must be a non-negative number of µs (ts up to 4e15, dur up to a day)", array);
    }
  }
  return Status::ok_status();
}

// The PyTorch profiler's categories this reads; the rest (python functions, annotations, flows,
// the profiler's overhead) is left out.
bool is_gpu_work(std::string_view cat) { return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset"; }
bool is_api_call(std::string_view cat) { return cat == "cuda_runtime" || cat == "cuda_driver"; }
bool is_torch_category(std::string_view cat) { return is_gpu_work(cat) || is_api_call(cat) || cat == "cpu_op"; }

// Chrome-trace ids (pid, tid, a kernel's device and stream) are integers or strings; either way
// text, empty when absent or of another type.
std::string id_text(const json& e, const char* field) {
  auto it = e.find(field);
  if (it == e.end() || !(it->is_string() || it->is_number_integer())) return "";
  return clip_event_text(it->is_string() ? it->get<std::string>() : it->dump());
}

// The data type of a matrix op's first input as the PyTorch profiler names it ("Input type"),
// in the names of the GPU peak table; empty for others. fp32 GEMMs may run as TF32 when the
// program allows it: the trace does not say, so fp32.
std::string_view torch_dtype(std::string_view type) {
  if (type == "c10::BFloat16") return "bf16";
  if (type == "c10::Half") return "fp16";
  if (type == "float") return "fp32";
  if (type == "double") return "fp64_tensor";
  if (type.starts_with("c10::Float8")) return "fp8";
  if (type == "signed char") return "int8";
  return "";
}

std::size_t element_bytes(std::string_view dtype) {
  return dtype == "fp32" ? 4 : dtype == "fp64_tensor" ? 8 : dtype == "fp8" || dtype == "int8" ? 1 : 2;
}

// The work of a matrix product from the op's input dims: 2·M·N·K FLOPs (per batch), as PyTorch's
// own FLOP counter counts them (a bias add is not counted), and its least traffic in bytes (each
// operand read once, the result written once); none for other ops or shapes it cannot read.
struct MatmulWork {
  double flops = 0, bytes = 0;
};

std::optional<MatmulWork> matmul_work(std::string_view op, const json& dims, std::string_view dtype) {
  auto shape = [&](std::size_t i) -> std::vector<double> {
    std::vector<double> out;
    if (i >= dims.size() || !dims[i].is_array()) return out;
    for (const json& d : dims[i]) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0) return {};
      out.push_back(d.get<double>());
    }
    return out;
  };
  const std::size_t first = op == "aten::addmm" || op == "aten::baddbmm" ? 1 : 0;  // the bias comes first
  const std::vector<double> a = shape(first), b = shape(first + 1);
  double elements = 0, flops = 0;
  if ((op == "aten::mm" || op == "aten::addmm") && a.size() == 2 && b.size() == 2 && a[1] == b[0]) {
    elements = a[0] * a[1] + b[0] * b[1] + a[0] * b[1];
    flops = 2 * a[0] * a[1] * b[1];
  } else if ((op == "aten::bmm" || op == "aten::baddbmm") && a.size() == 3 && b.size() == 3 && a[2] == b[1]) {
    elements = a[0] * (a[1] * a[2] + b[1] * b[2] + a[1] * b[2]);
    flops = 2 * a[0] * a[1] * a[2] * b[2];
  } else {
    return std::nullopt;
  }
  if (first == 1) {
    double bias = 1;
    for (double d : shape(0)) bias *= d;
    elements += bias;
  }
  const MatmulWork w{flops, elements * static_cast<double>(element_bytes(dtype))};
  if (!std::isfinite(w.flops) || !std::isfinite(w.bytes) || w.flops <= 0) return std::nullopt;
  return w;
}

// The thread an event ran on: its ops nest, its launch calls are theirs.
std::string thread_of(const json& e) { return id_text(e, "pid") + "/" + id_text(e, "tid"); }

// Input Dims: one entry per input — [dims] for a tensor, [] for a scalar or None, [[dims], …]
// for a tensor list (each tensor's dims in order).
json torch_input_shapes(const json& dims) {
  json shapes = json::array();
  const auto all_integers = [](const json& a) {
    return a.is_array() &&
           std::all_of(a.begin(), a.end(), [](const json& d) { return d.is_number_integer() && d.get<std::int64_t>() >= 0; });
  };
  for (const json& input : dims) {
    if (all_integers(input)) {
      shapes.push_back(input);
    } else if (input.is_array()) {
      for (const json& tensor : input) {
        if (all_integers(tensor)) shapes.push_back(tensor);
      }
    }
  }
  return shapes;
}

}  // namespace

std::string detect_trace_format(const json& doc) {
  if (doc.is_object()) {
    const auto events = doc.find("traceEvents");
    if (events == doc.end() || !events->is_array()) return "";
    for (const json& e : *events) {
      if (!e.is_object()) continue;
      const auto cat = e.find("cat");
      if (cat != e.end() && cat->is_string() && is_torch_category(cat->get_ref<const std::string&>())) return "pytorch";
    }
    return "";
  }
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
    if (Status st = check_times(e, i, "events"); !st.ok()) return st;
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
    if (!args->contains("op_name") || !(*args)["op_name"].is_string() || (*args)["op_name"].get_ref<const std::string&>().empty()) {
      return bad(i, "args.op_name", "must be a non-empty string");
    }
    if (name.size() == kKernelTime.size()) return bad(i, "name", "must name the node before _kernel_time");
    std::string provider = "unknown";
    if (auto p = args->find("provider"); p != args->end()) {
      if (!p->is_string()) return bad(i, "args.provider", "must be a string");
      if (!p->get_ref<const std::string&>().empty()) provider = p->get<std::string>();
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
          if (!d.is_number_integer() || d.get<std::int64_t>() < 0) {
            return bad(i, "args.input_type_shape", "dimensions must be non-negative integers");
          }
        }
        shapes.push_back(*input.begin());
      }
    }
    out.events.push_back({{"type", "operator"}, {"op_type", clip_event_text((*args)["op_name"])},
                          {"name", clip_event_text(name.substr(0, name.size() - kKernelTime.size()))},
                          {"provider", clip_event_text(provider)},
                          {"duration_ms", dur_ms}, {"model", model}, {"input_shapes", shapes}, {"ts_ns", at(e)},
                          {"tags", tags}});
    ++out.operators;
  }
  if (out.operators == 0 && out.inferences == 0) {
    return Status::invalid_argument("the profile holds no node (…_kernel_time) or model_run event", "file");
  }
  return out;
}

namespace {

// An event's args[name], or null.
const json* torch_arg(const json& e, const char* name) {
  auto args = e.find("args");
  if (args == e.end()) return nullptr;
  auto it = args->find(name);
  return it == args->end() ? nullptr : &*it;
}

// The first pass over a PyTorch trace: every event read is checked, the GPU work and the ops
// listed, the launch calls indexed by correlation id.
struct TorchIndex {
  std::vector<std::size_t> work, ops;
  std::unordered_map<std::int64_t, std::size_t> calls;  // correlation → cuda_runtime/cuda_driver event
  // Ops by their External id, which the kernels they launched carry too; and how many kernels
  // each launched (an op's FLOPs go to its kernel only when it launched one).
  std::unordered_map<std::int64_t, std::size_t> op_by_external;
  std::unordered_map<std::int64_t, std::size_t> kernels_by_external;
  double first_us = std::numeric_limits<double>::infinity(), last_us = 0;
  std::string process_pid;
};

Result<TorchIndex> index_torch_events(const json& events) {
  const auto bad_event = [](std::size_t i, const std::string& field, const std::string& message) {
    return bad(i, field, message, "traceEvents");
  };
  TorchIndex x;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    if (!e.is_object()) return bad_event(i, "event", "must be an object");
    const auto cat = e.find("cat");
    if (cat == e.end() || !cat->is_string() || !is_torch_category(cat->get_ref<const std::string&>())) continue;
    const std::string& c = cat->get_ref<const std::string&>();
    if (Status st = check_times(e, i, "traceEvents"); !st.ok()) return st;
    if (!e.contains("name") || !e["name"].is_string() || e["name"].get_ref<const std::string&>().empty()) {
      return bad_event(i, "name", "must be a non-empty string");
    }
    const auto args = e.find("args");
    if (args != e.end() && !args->is_object()) return bad_event(i, "args", "must be an object");
    if (is_gpu_work(c) || is_api_call(c)) {
      if (args == e.end() || !args->contains("correlation") || !(*args)["correlation"].is_number_integer()) {
        return bad_event(i, "args.correlation", "must be an integer (the launch call's correlation id)");
      }
    }
    if (c == "cpu_op" && args != e.end() && args->contains("Input Dims") && !(*args)["Input Dims"].is_array()) {
      return bad_event(i, "args.Input Dims", "must be an array");
    }
    const double ts = e["ts"].get<double>();
    x.first_us = std::min(x.first_us, ts);
    x.last_us = std::max(x.last_us, ts + e["dur"].get<double>());
    const auto external = [&]() -> std::optional<std::int64_t> {
      if (args == e.end()) return std::nullopt;
      auto id = args->find("External id");
      return id != args->end() && id->is_number_integer() ? std::optional<std::int64_t>(id->get<std::int64_t>()) : std::nullopt;
    };
    if (is_gpu_work(c)) {
      x.work.push_back(i);
      if (auto id = external(); id && c == "kernel") ++x.kernels_by_external[*id];
    } else if (c == "cpu_op") {
      x.ops.push_back(i);
      if (auto id = external()) x.op_by_external.emplace(*id, i);
    } else {
      x.calls.emplace((*args)["correlation"].get<std::int64_t>(), i);
    }
    if (x.process_pid.empty() && !is_gpu_work(c)) x.process_pid = id_text(e, "pid");
  }
  return x;
}

// Kineto's times are microseconds from its base time; without one, the trace ends at end_ns.
struct TorchClock {
  TimestampNs offset;
  TimestampNs operator()(double us) const { return offset + static_cast<TimestampNs>(std::llround(us * 1000)); }
};

// The work of the op that launched kernel `e`, when the op launched this kernel alone: for
// matrix products (mm, addmm, bmm, baddbmm) from the op's input dims and types
// (record_shapes=True), their FLOPs, dtype and least traffic; a `flops` the trace gives for
// the op takes precedence for the FLOPs.
void add_op_work(json& k, const json& e, const json& events, const TorchIndex& x, TraceImport& out) {
  const json* id = torch_arg(e, "External id");
  const auto launched = id && id->is_number_integer() ? x.kernels_by_external.find(id->get<std::int64_t>()) : x.kernels_by_external.end();
  if (launched == x.kernels_by_external.end() || launched->second != 1) return;
  auto op = x.op_by_external.find(id->get<std::int64_t>());
  if (op == x.op_by_external.end()) return;
  const json& o = events[op->second];
  // The matrices' type: addmm's and baddbmm's first input is the bias, the second a matrix.
  const std::string& op_name = o["name"].get_ref<const std::string&>();
  const std::size_t matrix = op_name == "aten::addmm" || op_name == "aten::baddbmm" ? 1 : 0;
  const json* types = torch_arg(o, "Input type");
  const json* inputs = torch_arg(o, "Input Dims");
  const std::string_view dtype = types && types->is_array() && types->size() > matrix && (*types)[matrix].is_string()
                                     ? torch_dtype((*types)[matrix].get_ref<const std::string&>())
                                     : std::string_view();
  std::optional<MatmulWork> product;
  if (!dtype.empty() && inputs && inputs->is_array()) product = matmul_work(op_name, *inputs, dtype);
  const json* flops = torch_arg(o, "flops");
  if (flops && flops->is_number() && flops->get<double>() > 0 && std::isfinite(flops->get<double>())) {
    k["flops"] = flops->get<double>();
  } else if (product) {
    k["flops"] = product->flops;
  }
  if (product) {
    k["dtype"] = std::string(dtype);
    k["bytes"] = product->bytes;
  }
  if (k.contains("flops")) ++out.with_work;
}

// One piece of GPU work (a kernel, copy or memset) as a kernel event, with its launch call;
// `launches_by_thread` gets the call's start.
json torch_gpu_work(const json& e, const json& events, const TorchIndex& x, const TorchClock& ns,
                    const TraceImportContext& context, std::map<std::string, std::vector<double>>& launches_by_thread,
                    TraceImport& out) {
  const std::string& c = e["cat"].get_ref<const std::string&>();
  const std::string& name = e["name"].get_ref<const std::string&>();
  const double ts = e["ts"].get<double>();
  json k = {{"type", "kernel"}, {"name", clip_event_text(name)}, {"start_ns", ns(ts)}, {"end_ns", ns(ts + e["dur"].get<double>())}};
  // Device and stream as the trace names them (GPU work always has args: its correlation);
  // no device is the default's.
  if (std::string device = id_text(e.at("args"), "device"); !device.empty()) k["device"] = device;
  if (std::string stream = id_text(e.at("args"), "stream"); !stream.empty()) k["stream"] = stream;
  json tags = {{"run", context.run}, {"pid", x.process_pid}};
  if (c == "kernel") {
    ++out.kernels;
    const auto dims = [&](const char* field) {
      const json* v = torch_arg(e, field);
      if (v && v->is_array() && v->size() == 3 &&
          std::all_of(v->begin(), v->end(), [](const json& d) { return d.is_number_integer() && d.get<std::int64_t>() > 0; })) {
        k[field] = *v;
      }
    };
    dims("grid");
    dims("block");
    if (const json* r = torch_arg(e, "registers per thread"); r && r->is_number_unsigned()) k["registers_per_thread"] = *r;
    if (const json* m = torch_arg(e, "shared memory"); m && m->is_number_unsigned()) k["shared_mem_bytes"] = *m;
    add_op_work(k, e, events, x, out);
  } else {
    ++out.copies;
    const bool memset = c == "gpu_memset";
    tags["op"] = memset ? "memset" : "memcpy";
    if (const json* b = torch_arg(e, "bytes"); b && b->is_number_unsigned()) tags["bytes"] = b->dump();
    // "Memcpy HtoD (Pageable -> Device)": the copy kind is the second word.
    if (!memset && name.starts_with("Memcpy ")) tags["copy_kind"] = clip_event_text(name.substr(7, name.find(" ", 7) - 7));
  }
  const auto call = x.calls.find((*torch_arg(e, "correlation")).get<std::int64_t>());
  if (call != x.calls.end()) {
    const json& api = events[call->second];
    const double api_ts = api["ts"].get<double>();
    k["launch_start_ns"] = ns(api_ts);
    k["launch_end_ns"] = ns(api_ts + api["dur"].get<double>());
    if (std::string pid = id_text(api, "pid"); !pid.empty()) tags["pid"] = pid;
    launches_by_thread[thread_of(api)].push_back(api_ts);
    ++out.with_launch;
  }
  if (tags["pid"] == "") tags.erase("pid");
  k["tags"] = std::move(tags);
  return k;
}

// Top-level ops per thread: in start order (the longer first at equal starts), an op starting
// before the end of the last top-level op is nested in it. An op that made a launch call that
// started GPU work ran on CUDA.
void add_top_level_ops(const json& events, const TorchIndex& x, const TorchClock& ns, const TraceImportContext& context,
                       const std::map<std::string, std::vector<double>>& launches_by_thread, TraceImport& out) {
  std::map<std::string, std::vector<std::size_t>> ops_by_thread;
  for (std::size_t i : x.ops) ops_by_thread[thread_of(events[i])].push_back(i);
  for (auto& [thread, thread_ops] : ops_by_thread) {
    std::sort(thread_ops.begin(), thread_ops.end(), [&](std::size_t a, std::size_t b) {
      const double ta = events[a]["ts"].get<double>(), tb = events[b]["ts"].get<double>();
      return ta != tb ? ta < tb : events[a]["dur"].get<double>() > events[b]["dur"].get<double>();
    });
    const auto launches = launches_by_thread.find(thread);
    double top_end = -std::numeric_limits<double>::infinity();
    for (std::size_t i : thread_ops) {
      const json& e = events[i];
      const double ts = e["ts"].get<double>(), end = ts + e["dur"].get<double>();
      if (ts < top_end) continue;
      top_end = end;
      bool launched = false;
      if (launches != launches_by_thread.end()) {
        auto it = std::lower_bound(launches->second.begin(), launches->second.end(), ts);
        launched = it != launches->second.end() && *it <= end;
      }
      const json* dims = torch_arg(e, "Input Dims");
      const std::string& name = e["name"].get_ref<const std::string&>();
      json tags = {{"run", context.run}};
      if (std::string pid = id_text(e, "pid"); !pid.empty()) tags["pid"] = pid;
      out.events.push_back({{"type", "operator"}, {"op_type", clip_event_text(name)}, {"name", clip_event_text(name)},
                            {"provider", launched ? "CUDA" : "host"},
                            {"duration_ms", e["dur"].get<double>() / 1000}, {"model", context.model},
                            {"input_shapes", dims ? torch_input_shapes(*dims) : json::array()}, {"ts_ns", ns(end)},
                            {"tags", std::move(tags)}});
      ++out.operators;
    }
  }
}

}  // namespace

Result<TraceImport> import_torch_profiler_trace(const json& doc, const TraceImportContext& context) {
  const auto list = doc.is_object() ? doc.find("traceEvents") : doc.end();
  if (!doc.is_object() || list == doc.end() || !list->is_array()) {
    return Status::invalid_argument("a PyTorch profiler trace is an object with a traceEvents array", "file");
  }
  const json& events = *list;
  std::optional<TimestampNs> base;
  if (auto b = doc.find("baseTimeNanoseconds"); b != doc.end()) {
    if (!b->is_number_integer() || b->get<std::int64_t>() < 0 || b->get<std::int64_t>() > kMaxBaseNs) {
      return Status::invalid_argument("'baseTimeNanoseconds' must be a non-negative integer (up to 4e18)",
                                      "baseTimeNanoseconds");
    }
    base = b->get<TimestampNs>();
  }
  auto index = index_torch_events(events);
  if (!index.ok()) return index.status();
  const TorchIndex& x = *index;
  if (x.work.empty() && x.ops.empty()) {
    return Status::invalid_argument("the trace holds no kernel, gpu_memcpy, gpu_memset or cpu_op event", "file");
  }
  const TorchClock ns{base ? *base : context.end_ns - static_cast<TimestampNs>(std::llround(x.last_us * 1000))};
  TraceImport out;
  out.format = "pytorch";
  out.events.push_back({{"type", "run"}, {"name", context.run}, {"command", {"torch.profiler", context.model}},
                        {"start_ns", ns(x.first_us)}, {"end_ns", ns(x.last_us)}});
  // Launch calls that started GPU work, per thread: the ops that made them launched GPU work.
  std::map<std::string, std::vector<double>> launches_by_thread;
  for (std::size_t i : x.work) out.events.push_back(torch_gpu_work(events[i], events, x, ns, context, launches_by_thread, out));
  for (auto& [thread, starts] : launches_by_thread) std::sort(starts.begin(), starts.end());
  add_top_level_ops(events, x, ns, context, launches_by_thread, out);
  return out;
}

Result<TraceImport> import_trace(const json& doc, const TraceImportContext& context) {
  const std::string format = detect_trace_format(doc);
  if (format == "onnxruntime") return import_onnxruntime_profile(doc, context.run, context.model, context.end_ns);
  if (format == "pytorch") return import_torch_profiler_trace(doc, context);
  return Status::invalid_argument("not a trace perfscope reads (an ONNX Runtime profile or a PyTorch profiler trace)",
                                  "file");
}

}  // namespace perfscope::server
