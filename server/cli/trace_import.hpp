// Traces users already have, read into perfscope events for `perfscope import`: ONNX Runtime's
// profiling output (`sess_options.enable_profiling = True`: a JSON array of Chrome-trace events,
// `cat` "Node" for each node's `…_kernel_time` and "Session" for `model_run`). The format is
// detected from the document. The whole file is converted before anything is sent, so a
// malformed file imports nothing; errors name the event by its index and field.
//
// Pure functions; safe from any thread.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/clock.hpp"
#include "engine/status.hpp"

namespace perfscope::server {

struct TraceImport {
  std::string format;                 // "onnxruntime"
  std::vector<nlohmann::json> events;  // perfscope events, the run's first
  std::size_t operators = 0, inferences = 0;
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

}  // namespace perfscope::server
