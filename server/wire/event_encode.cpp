#include "server/wire/event_codec.hpp"

#include <nlohmann/json.hpp>

namespace perfscope::server {

using nlohmann::json;

json labels_to_json(const Labels& labels) {
  json out = json::object();
  for (const auto& [k, v] : labels) out[k] = v;
  return out;
}

namespace {
template <typename T>
void put_opt(json& j, const char* name, const std::optional<T>& v) {
  if (v) j[name] = *v;
}
}  // namespace

json encode_event(const Event& event) {
  json j = std::visit(
      [](const auto& e) -> json {
        using T = std::decay_t<decltype(e)>;
        json o;
        if constexpr (std::is_same_v<T, KernelEvent>) {
          o = {{"name", e.name}, {"device", e.device}, {"start_ns", e.start_ns}, {"end_ns", e.end_ns}};
          if (!e.variant.empty()) o["variant"] = e.variant;
          if (!e.stream.empty()) o["stream"] = e.stream;
          put_opt(o, "grid", e.grid);
          put_opt(o, "block", e.block);
          put_opt(o, "shared_mem_bytes", e.shared_mem_bytes);
          put_opt(o, "registers_per_thread", e.registers_per_thread);
          put_opt(o, "launch_start_ns", e.launch_start_ns);
          put_opt(o, "launch_end_ns", e.launch_end_ns);
          put_opt(o, "flops", e.flops);
          put_opt(o, "bytes", e.bytes);
          if (!e.dtype.empty()) o["dtype"] = e.dtype;
        } else if constexpr (std::is_same_v<T, MemoryEvent>) {
          o = {{"op", to_string(e.op)}, {"address", e.address}, {"kind", to_string(e.kind)}, {"device", e.device},
               {"ts_ns", e.ts_ns}};
          if (e.op == MemoryOp::kAlloc) o["size_bytes"] = e.size_bytes;
          if (!e.tag.empty()) o["tag"] = e.tag;
        } else if constexpr (std::is_same_v<T, CommandBufferEvent>) {
          o = {{"id", e.id}, {"queue", e.queue}, {"device", e.device}, {"enqueue_ns", e.enqueue_ns},
               {"submit_ns", e.submit_ns}, {"start_ns", e.start_ns}, {"end_ns", e.end_ns}};
        } else if constexpr (std::is_same_v<T, InferenceEvent>) {
          o = {{"model", e.model}, {"ts_ns", e.ts_ns}, {"latency_ms", e.latency_ms}, {"batch_size", e.batch_size},
               {"status", e.ok ? "ok" : "error"}};
          if (!e.version.empty()) o["version"] = e.version;
          put_opt(o, "queue_ms", e.queue_ms);
          put_opt(o, "compute_ms", e.compute_ms);
          put_opt(o, "ttft_ms", e.ttft_ms);
          put_opt(o, "input_tokens", e.input_tokens);
          put_opt(o, "output_tokens", e.output_tokens);
        } else if constexpr (std::is_same_v<T, OperatorEvent>) {
          o = {{"op_type", e.op_type}, {"name", e.name}, {"provider", e.provider}, {"duration_ms", e.duration_ms},
               {"ts_ns", e.ts_ns}, {"input_shapes", e.input_shapes}};
          if (!e.model.empty()) o["model"] = e.model;
        } else if constexpr (std::is_same_v<T, RunEvent>) {
          o = {{"name", e.name}, {"start_ns", e.start_ns}};
          if (!e.command.empty()) o["command"] = e.command;
          if (!e.host.empty()) o["host"] = e.host;
          if (!e.pids.empty()) o["pids"] = e.pids;
          put_opt(o, "end_ns", e.end_ns);
          put_opt(o, "exit_status", e.exit_status);
          if (!e.kinds.empty()) o["kinds"] = e.kinds;
          put_opt(o, "records", e.records);
          put_opt(o, "dropped", e.dropped);
          if (!e.gpus.empty()) o["gpus"] = e.gpus;
          put_opt(o, "trace_window_ns", e.trace_window_ns);
          put_opt(o, "trace_every_ns", e.trace_every_ns);
        } else {
          o = {{"metric", e.metric}, {"labels", labels_to_json(e.labels)}, {"ts_ns", e.ts_ns}, {"value", e.value}};
        }
        if constexpr (!std::is_same_v<T, SampleEvent>) {
          if (!e.tags.empty()) o["tags"] = labels_to_json(e.tags);
        }
        return o;
      },
      event);
  j["type"] = event_type(event);
  return j;
}

std::string encode_ndjson(const std::vector<Event>& events) {
  std::string out;
  for (const Event& e : events) {
    out += encode_event(e).dump(-1, ' ', false, json::error_handler_t::replace);
    out += '\n';
  }
  return out;
}

}  // namespace perfscope::server
