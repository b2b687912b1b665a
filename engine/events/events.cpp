#include "engine/events/events.hpp"

#include <cmath>

#include "engine/events/gpu_specs.hpp"

namespace perfscope {

std::string_view to_string(MemoryOp op) { return op == MemoryOp::kAlloc ? "alloc" : "free"; }

std::string_view to_string(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kDevice: return "device";
    case MemoryKind::kShared: return "shared";
    case MemoryKind::kHost: return "host";
  }
  return "device";
}

std::optional<MemoryKind> memory_kind_from(std::string_view text) {
  if (text == "device") return MemoryKind::kDevice;
  if (text == "shared") return MemoryKind::kShared;
  if (text == "host") return MemoryKind::kHost;
  return std::nullopt;
}

std::string_view event_type_name(std::size_t index) {
  static constexpr std::string_view kNames[] = {"kernel", "memory", "command_buffer", "inference", "operator", "sample", "run"};
  static_assert(std::size(kNames) == std::variant_size_v<Event>);
  return kNames[index];
}

std::string_view event_type(const Event& event) { return event_type_name(event.index()); }

std::string clip_event_text(std::string text) {
  if (text.size() <= kMaxEventText) return text;
  std::size_t keep = kMaxEventText - 3;
  // Back over continuation bytes (10xxxxxx) so no character is cut in two.
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  text.resize(keep);
  return text + "...";
}

namespace {

constexpr std::size_t kMaxText = kMaxEventText;
constexpr std::size_t kMaxTags = 32;
// Bounds that keep every later sum and difference in range, whatever a batch holds: a
// timestamp below 2^62 ns (the year 2116) leaves room for any window arithmetic; no kernel,
// copy or request lasts more than a week (the bound duration_ms has always had), so 15,000 of
// them still sum within 64 bits; an allocation is at most 2^50 bytes (1 PiB).
constexpr TimestampNs kMaxTimestampNs = TimestampNs{1} << 62;
constexpr std::int64_t kMaxSpanNs = std::int64_t{7} * 24 * 3600 * 1'000'000'000;
constexpr double kMaxSpanMs = 7.0 * 24 * 3600 * 1e3;
constexpr std::uint64_t kMaxAllocationBytes = std::uint64_t{1} << 50;
constexpr std::uint64_t kMaxTokens = 0xFFFF'FFFF;
// Metric names and label or tag keys are identifiers, not text: no real one comes near this.
constexpr std::size_t kMaxNameBytes = 200;

Status bad(std::string field, std::string message) {
  return Status::invalid_argument(field + ": " + message, field);
}

Status check_text(const std::string& value, const char* field, bool required) {
  if (required && value.empty()) return bad(field, "is required and must not be empty");
  if (value.size() > kMaxText) return bad(field, "is longer than " + std::to_string(kMaxText) + " bytes");
  return Status();
}

Status check_time(TimestampNs ts, const char* field) {
  if (ts < 0) return bad(field, "must be nanoseconds since the Unix epoch (>= 0)");
  if (ts > kMaxTimestampNs) return bad(field, "must be at most 2^62 (nanoseconds since the Unix epoch)");
  return Status();
}

// `end` no earlier than `start` and at most a week after it.
Status check_span(TimestampNs start, TimestampNs end, const char* end_field, const char* start_field) {
  if (end < start) return bad(end_field, std::string("is before ") + start_field);
  if (end - start > kMaxSpanNs) return bad(end_field, std::string("is more than a week after ") + start_field);
  return Status();
}

Status check_name(std::string_view name, const std::string& field) {
  if (name.size() > kMaxNameBytes) return bad(field, "names are at most " + std::to_string(kMaxNameBytes) + " bytes");
  return Status();
}

// A non-negative amount (flops, bytes moved).
Status check_amount(double v, const char* field) {
  if (!std::isfinite(v)) return bad(field, "must be a finite number");
  if (v < 0) return bad(field, "must not be negative");
  return Status();
}

// A duration in milliseconds: an amount of at most a week.
Status check_ms(double v, const char* field) {
  if (Status s = check_amount(v, field); !s.ok()) return s;
  if (v > kMaxSpanMs) return bad(field, "must be at most 604800000 (a week)");
  return Status();
}

Status check_tags(const Tags& tags) {
  if (tags.size() > kMaxTags) return bad("tags", "at most " + std::to_string(kMaxTags) + " tags");
  for (const auto& [k, v] : tags) {
    if (Status s = check_name(k, "tags"); !s.ok()) return s;
    if (!is_valid_label_name(k)) return bad("tags." + k, "tag names must match [a-zA-Z_][a-zA-Z0-9_]*");
    if (v.size() > kMaxText) return bad("tags." + k, "is longer than " + std::to_string(kMaxText) + " bytes");
  }
  return Status();
}

}  // namespace

Status validate(const KernelEvent& e) {
  if (Status s = check_text(e.name, "name", true); !s.ok()) return s;
  if (Status s = check_text(e.device, "device", true); !s.ok()) return s;
  if (Status s = check_text(e.variant, "variant", false); !s.ok()) return s;
  if (Status s = check_text(e.stream, "stream", false); !s.ok()) return s;
  if (Status s = check_time(e.start_ns, "start_ns"); !s.ok()) return s;
  if (Status s = check_time(e.end_ns, "end_ns"); !s.ok()) return s;
  if (Status s = check_span(e.start_ns, e.end_ns, "end_ns", "start_ns"); !s.ok()) return s;
  if (e.launch_start_ns) {
    if (Status s = check_time(*e.launch_start_ns, "launch_start_ns"); !s.ok()) return s;
  }
  if (e.launch_end_ns) {
    if (Status s = check_time(*e.launch_end_ns, "launch_end_ns"); !s.ok()) return s;
  }
  if (e.launch_end_ns && e.launch_start_ns) {
    if (Status s = check_span(*e.launch_start_ns, *e.launch_end_ns, "launch_end_ns", "launch_start_ns"); !s.ok()) return s;
  }
  if (e.flops) {
    if (Status s = check_amount(*e.flops, "flops"); !s.ok()) return s;
  }
  if (e.bytes) {
    if (Status s = check_amount(*e.bytes, "bytes"); !s.ok()) return s;
  }
  if (!e.dtype.empty() && !is_data_type(e.dtype)) return bad("dtype", "must be one of " + data_type_list());
  return check_tags(e.tags);
}

Status validate(const MemoryEvent& e) {
  if (Status s = check_text(e.address, "address", true); !s.ok()) return s;
  if (Status s = check_text(e.tag, "tag", false); !s.ok()) return s;
  if (Status s = check_text(e.device, "device", true); !s.ok()) return s;
  if (Status s = check_time(e.ts_ns, "ts_ns"); !s.ok()) return s;
  if (e.op == MemoryOp::kAlloc && e.size_bytes == 0) return bad("size_bytes", "an allocation needs a positive size");
  if (e.size_bytes > kMaxAllocationBytes) return bad("size_bytes", "must be at most 2^50 (1 PiB)");
  return check_tags(e.tags);
}

Status validate(const CommandBufferEvent& e) {
  if (Status s = check_text(e.id, "id", true); !s.ok()) return s;
  if (Status s = check_text(e.queue, "queue", true); !s.ok()) return s;
  if (Status s = check_text(e.device, "device", true); !s.ok()) return s;
  if (Status s = check_time(e.enqueue_ns, "enqueue_ns"); !s.ok()) return s;
  if (Status s = check_time(e.end_ns, "end_ns"); !s.ok()) return s;
  if (e.submit_ns < e.enqueue_ns) return bad("submit_ns", "is before enqueue_ns");
  if (e.start_ns < e.submit_ns) return bad("start_ns", "is before submit_ns");
  if (e.end_ns < e.start_ns) return bad("end_ns", "is before start_ns");
  if (Status s = check_span(e.enqueue_ns, e.end_ns, "end_ns", "enqueue_ns"); !s.ok()) return s;
  return check_tags(e.tags);
}

Status validate(const InferenceEvent& e) {
  if (Status s = check_text(e.model, "model", true); !s.ok()) return s;
  if (Status s = check_text(e.version, "version", false); !s.ok()) return s;
  if (Status s = check_time(e.ts_ns, "ts_ns"); !s.ok()) return s;
  if (Status s = check_ms(e.latency_ms, "latency_ms"); !s.ok()) return s;
  if (e.queue_ms) {
    if (Status s = check_ms(*e.queue_ms, "queue_ms"); !s.ok()) return s;
  }
  if (e.compute_ms) {
    if (Status s = check_ms(*e.compute_ms, "compute_ms"); !s.ok()) return s;
  }
  if (e.ttft_ms) {
    if (Status s = check_ms(*e.ttft_ms, "ttft_ms"); !s.ok()) return s;
    if (*e.ttft_ms > e.latency_ms) return bad("ttft_ms", "exceeds latency_ms");
  }
  if (e.batch_size == 0) return bad("batch_size", "must be at least 1");
  // Far above any model's context, and 2^32 requests of them still sum within 64 bits.
  if (e.input_tokens && *e.input_tokens > kMaxTokens) return bad("input_tokens", "must be at most 4294967295");
  if (e.output_tokens && *e.output_tokens > kMaxTokens) return bad("output_tokens", "must be at most 4294967295");
  return check_tags(e.tags);
}

Status validate(const OperatorEvent& e) {
  if (Status s = check_text(e.op_type, "op_type", true); !s.ok()) return s;
  if (Status s = check_text(e.name, "name", true); !s.ok()) return s;
  if (Status s = check_text(e.provider, "provider", true); !s.ok()) return s;
  if (Status s = check_text(e.model, "model", false); !s.ok()) return s;
  if (Status s = check_ms(e.duration_ms, "duration_ms"); !s.ok()) return s;
  if (Status s = check_time(e.ts_ns, "ts_ns"); !s.ok()) return s;
  for (const auto& shape : e.input_shapes) {
    for (std::int64_t d : shape) {
      if (d < 0) return bad("input_shapes", "dimensions must not be negative");
    }
  }
  return check_tags(e.tags);
}

Status validate(const SampleEvent& e) {
  if (Status s = check_name(e.metric, "metric"); !s.ok()) return s;
  if (!is_valid_metric_name(e.metric)) return bad("metric", "must match [a-zA-Z_:][a-zA-Z0-9_:]*");
  for (const auto& [k, v] : e.labels) {
    if (Status s = check_name(k, "labels"); !s.ok()) return s;
    if (!is_valid_label_name(k)) return bad("labels." + k, "label names must match [a-zA-Z_][a-zA-Z0-9_]*");
    if (v.size() > kMaxText) return bad("labels." + k, "is longer than " + std::to_string(kMaxText) + " bytes");
  }
  if (Status s = check_time(e.ts_ns, "ts_ns"); !s.ok()) return s;
  if (!std::isfinite(e.value)) return bad("value", "must be a finite number");
  return Status();
}

Status validate(const RunEvent& e) {
  if (Status s = check_text(e.name, "name", true); !s.ok()) return s;
  if (e.command.size() > 256) return bad("command", "at most 256 arguments");
  for (const auto& arg : e.command) {
    if (Status s = check_text(arg, "command", false); !s.ok()) return s;
  }
  if (Status s = check_text(e.host, "host", false); !s.ok()) return s;
  if (e.pids.size() > 1024) return bad("pids", "at most 1024 processes");
  for (std::int64_t pid : e.pids) {
    if (pid <= 0) return bad("pids", "process ids are positive");
  }
  if (Status s = check_time(e.start_ns, "start_ns"); !s.ok()) return s;
  if (e.end_ns) {
    if (Status s = check_time(*e.end_ns, "end_ns"); !s.ok()) return s;
    if (*e.end_ns < e.start_ns) return bad("end_ns", "is before start_ns");
  }
  if (Status s = check_text(e.kinds, "kinds", false); !s.ok()) return s;
  if (e.trace_window_ns.has_value() != e.trace_every_ns.has_value()) {
    return bad(e.trace_window_ns ? "trace_every_ns" : "trace_window_ns", "trace_window_ns and trace_every_ns come together");
  }
  if (e.trace_window_ns && *e.trace_window_ns <= 0) return bad("trace_window_ns", "must be positive");
  if (e.trace_every_ns && *e.trace_every_ns < e.trace_window_ns.value_or(0)) {
    return bad("trace_every_ns", "must be at least trace_window_ns");
  }
  if (e.gpus.size() > 64) return bad("gpus", "at most 64 devices");
  for (const auto& g : e.gpus) {
    if (Status s = check_text(g, "gpus", true); !s.ok()) return s;
  }
  return check_tags(e.tags);
}

std::string_view run_status(const RunEvent& run) {
  if (!run.end_ns) return "running";
  if (!run.exit_status) return "ended";
  return *run.exit_status == 0 ? "finished" : "failed";
}

bool is_cpu_device(std::string_view device) {
  if (device.size() < 3) return false;
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  return lower(device[0]) == 'c' && lower(device[1]) == 'p' && lower(device[2]) == 'u';
}

std::string_view tag_value(const Tags& tags, std::string_view key) {
  for (const auto& [k, v] : tags) {
    if (k == key) return v;
  }
  return {};
}

Status validate(const Event& e) {
  return std::visit([](const auto& v) { return validate(v); }, e);
}

std::string format_shapes(const std::vector<std::vector<std::int64_t>>& shapes) {
  std::string out;
  for (const auto& shape : shapes) {
    if (!out.empty()) out += ',';
    for (std::size_t i = 0; i < shape.size(); ++i) {
      if (i) out += 'x';
      out += std::to_string(shape[i]);
    }
  }
  return out;
}

}  // namespace perfscope
