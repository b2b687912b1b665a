// Traces users already have, read into perfscope events for `perfscope import`:
// - ONNX Runtime's profiling output (`sess_options.enable_profiling = True`: a JSON array of
//   Chrome-trace events, `cat` "Node" for each node's `…_kernel_time` and "Session" for
//   `model_run`);
// - the PyTorch profiler's trace (`prof.export_chrome_trace(path)`, Kineto's format, also what
//   HTA reads: an object whose `traceEvents` hold `kernel`, `gpu_memcpy`, `gpu_memset`,
//   `cuda_runtime`/`cuda_driver` and `cpu_op` events).
// The format is detected from the document. The whole file is converted before anything is
// sent, so a malformed file imports nothing; errors name the event by its index and field.
//
// Pure functions; safe from any thread.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/base/clock.hpp"
#include "engine/base/status.hpp"

namespace perfscope::server {

struct TraceImport {
  std::string format;                 // "onnxruntime", "pytorch"
  std::vector<nlohmann::json> events;  // perfscope events, the run's first
  std::size_t operators = 0, inferences = 0;
  std::size_t kernels = 0, copies = 0;  // copies include memsets
  std::size_t with_launch = 0;          // kernels and copies matched with their launch call
  std::size_t with_work = 0;            // kernels given their op's FLOPs (PyTorch's with_flops)
};

// Where an import's events go: the run and model they are tagged with, and the wall-clock time
// the trace ended (the file's write time), for formats whose times are not on the wall clock.
struct TraceImportContext {
  std::string run, model;
  TimestampNs end_ns = 0;
};

// The format of a parsed document, or empty when it is none this knows (perfscope's own NDJSON
// is read line by line, not as one document).
std::string detect_trace_format(const nlohmann::json& doc);

// ONNX Runtime's events as a run named `run` of model `model`. The profile's times count from
// the session's start; `end_ns` places its last event on the wall clock (the file's write time).
// Nodes become operator events (op type, node name, provider, duration, input shapes), model_run
// spans inference events, each tagged with the run, at their completion time.
Result<TraceImport> import_onnxruntime_profile(const nlohmann::json& doc, const std::string& run, const std::string& model,
                                               TimestampNs end_ns);

// A PyTorch profiler trace as a run. Times are Kineto's microseconds plus its
// `baseTimeNanoseconds` (the wall clock); a trace without it is placed to end at `end_ns`.
// - `kernel` → kernel events (device, stream, grid, block, registers, shared memory) and
//   `gpu_memcpy`/`gpu_memset` → kernel events named as the profiler names them, tags `op`,
//   `bytes`, `copy_kind` — each with its launch call (`cuda_runtime` or `cuda_driver` event of
//   the same `correlation`) as launch_start_ns/launch_end_ns;
// - top-level `cpu_op`s (not nested in another op of the same thread) → operator events: op type
//   and name the op's (`aten::linear`), its host duration, input shapes (`Input Dims`), provider
//   "CUDA" when it launched GPU work and "host" when it launched none. A trace does not say
//   which device an op's tensors were on, so "host" ops are not counted as CPU fallback.
// Every event is tagged with the run and the launching process (`pid`).
Result<TraceImport> import_torch_profiler_trace(const nlohmann::json& doc, const TraceImportContext& context);

// Whichever importer reads the document's format (detect_trace_format).
Result<TraceImport> import_trace(const nlohmann::json& doc, const TraceImportContext& context);

}  // namespace perfscope::server
