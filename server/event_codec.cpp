#include "server/event_codec.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

namespace perfscope::server {

using nlohmann::json;

namespace {

// Thrown inside this file only, to unwind one event's decoding; decode_event() turns it
// into a DecodeError value.
struct FieldError {
  std::string field;
  std::string message;
};

[[noreturn]] void fail(std::string field, std::string message) { throw FieldError{std::move(field), std::move(message)}; }

// Reads fields of one event object, checking JSON types.
class Fields {
 public:
  explicit Fields(const json& object) : o_(object) {}

  const json* find(const char* name) const {
    auto it = o_.find(name);
    return it == o_.end() || it->is_null() ? nullptr : &*it;
  }
  bool has(const char* name) const { return find(name) != nullptr; }

  std::string text(const char* name, bool required, std::string fallback = {}) const {
    const json* v = find(name);
    if (!v) {
      if (required) fail(name, "is required");
      return fallback;
    }
    if (!v->is_string()) fail(name, "must be a string");
    return v->get<std::string>();
  }

  std::optional<std::int64_t> integer(const char* name) const {
    const json* v = find(name);
    if (!v) return std::nullopt;
    if (v->is_number_integer()) return v->get<std::int64_t>();
    if (v->is_number_unsigned()) {
      auto u = v->get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) fail(name, "is too large");
      return static_cast<std::int64_t>(u);
    }
    if (v->is_number_float()) fail(name, "must be an integer");
    fail(name, "must be a number");
  }
  std::int64_t integer_or(const char* name, std::int64_t fallback) const { return integer(name).value_or(fallback); }
  std::optional<std::uint64_t> count(const char* name) const {
    auto v = integer(name);
    if (v && *v < 0) fail(name, "must not be negative");
    return v ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(*v)) : std::nullopt;
  }

  std::optional<double> number(const char* name) const {
    const json* v = find(name);
    if (!v) return std::nullopt;
    if (!v->is_number()) fail(name, "must be a number");
    double d = v->get<double>();
    if (!std::isfinite(d)) fail(name, "must be a finite number");
    return d;
  }

  std::optional<bool> boolean(const char* name) const {
    const json* v = find(name);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) fail(name, "must be true or false");
    return v->get<bool>();
  }

  // [x] or [x,y] or [x,y,z]: missing dimensions are 1, as in CUDA's dim3.
  std::optional<std::array<std::uint32_t, 3>> dims(const char* name) const {
    const json* v = find(name);
    if (!v) return std::nullopt;
    if (!v->is_array() || v->empty() || v->size() > 3) fail(name, "must be an array of 1 to 3 positive integers");
    std::array<std::uint32_t, 3> out{1, 1, 1};
    for (std::size_t i = 0; i < v->size(); ++i) {
      const json& d = (*v)[i];
      if (!d.is_number_integer() || d.get<std::int64_t>() < 1 || d.get<std::int64_t>() > UINT32_MAX) {
        fail(name, "must be an array of 1 to 3 positive integers");
      }
      out[i] = static_cast<std::uint32_t>(d.get<std::int64_t>());
    }
    return out;
  }

  Labels string_map(const char* name) const {
    const json* v = find(name);
    Labels out;
    if (!v) return out;
    if (!v->is_object()) fail(name, "must be an object of strings");
    for (const auto& [k, val] : v->items()) {
      if (!val.is_string()) fail(std::string(name) + "." + k, "must be a string");
      out.emplace_back(k, val.get<std::string>());
    }
    sort_labels(out);
    return out;
  }

 private:
  const json& o_;
};

KernelEvent kernel(const Fields& f, TimestampNs now) {
  KernelEvent e;
  e.name = f.text("name", true);
  e.device = f.text("device", false, "0");
  e.variant = f.text("variant", false);
  e.stream = f.text("stream", false);
  auto start = f.integer("start_ns");
  auto end = f.integer("end_ns");
  auto duration = f.number("duration_ms");
  if (duration && *duration < 0) fail("duration_ms", "must not be negative");
  auto dur_ns = duration ? std::optional<std::int64_t>(static_cast<std::int64_t>(std::llround(*duration * 1e6))) : std::nullopt;
  if (start && end) {
    e.start_ns = *start;
    e.end_ns = *end;
  } else if (start && dur_ns) {
    e.start_ns = *start;
    e.end_ns = *start + *dur_ns;
  } else if (end && dur_ns) {
    e.end_ns = *end;
    e.start_ns = *end - *dur_ns;
  } else if (dur_ns) {
    e.end_ns = now;
    e.start_ns = now - *dur_ns;
  } else {
    fail(start ? "end_ns" : "start_ns", "a kernel needs start_ns and end_ns, or duration_ms");
  }
  e.grid = f.dims("grid");
  e.block = f.dims("block");
  e.shared_mem_bytes = f.count("shared_mem_bytes");
  if (auto r = f.count("registers_per_thread")) e.registers_per_thread = static_cast<std::uint32_t>(std::min<std::uint64_t>(*r, UINT32_MAX));
  e.launch_start_ns = f.integer("launch_start_ns");
  e.launch_end_ns = f.integer("launch_end_ns");
  e.tags = f.string_map("tags");
  return e;
}

MemoryEvent memory(const Fields& f, TimestampNs now) {
  MemoryEvent e;
  std::string op = f.text("op", true);
  if (op == "alloc") e.op = MemoryOp::kAlloc;
  else if (op == "free") e.op = MemoryOp::kFree;
  else fail("op", "must be \"alloc\" or \"free\"");
  e.address = f.text("address", true);
  if (e.op == MemoryOp::kAlloc) {
    auto size = f.count("size_bytes");
    if (!size) fail("size_bytes", "is required for an allocation");
    e.size_bytes = *size;
  }
  std::string kind = f.text("kind", false, "device");
  auto k = memory_kind_from(kind);
  if (!k) fail("kind", "must be \"device\", \"shared\" or \"host\"");
  e.kind = *k;
  e.tag = f.text("tag", false);
  e.device = f.text("device", false, "0");
  e.ts_ns = f.integer_or("ts_ns", now);
  e.tags = f.string_map("tags");
  return e;
}

CommandBufferEvent command_buffer(const Fields& f) {
  CommandBufferEvent e;
  e.id = f.text("id", true);
  e.queue = f.text("queue", true);
  e.device = f.text("device", false, "0");
  auto need = [&](const char* name) {
    auto v = f.integer(name);
    if (!v) fail(name, "is required");
    return *v;
  };
  e.enqueue_ns = need("enqueue_ns");
  e.submit_ns = need("submit_ns");
  e.start_ns = need("start_ns");
  e.end_ns = need("end_ns");
  e.tags = f.string_map("tags");
  return e;
}

InferenceEvent inference(const Fields& f, TimestampNs now) {
  InferenceEvent e;
  e.model = f.text("model", true);
  e.version = f.text("version", false);
  e.ts_ns = f.integer_or("ts_ns", now);
  auto latency = f.number("latency_ms");
  if (!latency) fail("latency_ms", "is required");
  e.latency_ms = *latency;
  e.queue_ms = f.number("queue_ms");
  e.compute_ms = f.number("compute_ms");
  if (auto b = f.count("batch_size")) {
    if (*b == 0 || *b > UINT32_MAX) fail("batch_size", "must be from 1 to 4294967295");
    e.batch_size = static_cast<std::uint32_t>(*b);
  }
  std::string status = f.text("status", false, "ok");
  if (status != "ok" && status != "error") fail("status", "must be \"ok\" or \"error\"");
  e.ok = status == "ok";
  e.ttft_ms = f.number("ttft_ms");
  e.input_tokens = f.count("input_tokens");
  e.output_tokens = f.count("output_tokens");
  e.tags = f.string_map("tags");
  return e;
}

OperatorEvent op(const Fields& f, const json& object, TimestampNs now) {
  OperatorEvent e;
  e.op_type = f.text("op_type", true);
  e.name = f.text("name", true);
  e.provider = f.text("provider", true);
  auto d = f.number("duration_ms");
  if (!d) fail("duration_ms", "is required");
  e.duration_ms = *d;
  e.model = f.text("model", false);
  e.ts_ns = f.integer_or("ts_ns", now);
  if (auto it = object.find("input_shapes"); it != object.end() && !it->is_null()) {
    if (!it->is_array()) fail("input_shapes", "must be an array of arrays of integers");
    for (const json& shape : *it) {
      if (!shape.is_array()) fail("input_shapes", "must be an array of arrays of integers");
      std::vector<std::int64_t> dims;
      for (const json& d2 : shape) {
        if (!d2.is_number_integer()) fail("input_shapes", "must be an array of arrays of integers");
        dims.push_back(d2.get<std::int64_t>());
      }
      e.input_shapes.push_back(std::move(dims));
    }
  }
  e.tags = f.string_map("tags");
  return e;
}

SampleEvent sample(const Fields& f, TimestampNs now) {
  SampleEvent e;
  e.metric = f.text("metric", true);
  e.labels = f.string_map("labels");
  e.ts_ns = f.integer_or("ts_ns", now);
  auto v = f.number("value");
  if (!v) fail("value", "is required");
  e.value = *v;
  return e;
}

}  // namespace

DecodeResult decode_event(const json& object, std::size_t index, TimestampNs now) {
  DecodeResult r;
  if (!object.is_object()) {
    r.error = DecodeError{index, "", "an event must be a JSON object"};
    return r;
  }
  try {
    Fields f(object);
    std::string type = f.text("type", true);
    Event event;
    if (type == "kernel") event = kernel(f, now);
    else if (type == "memory") event = memory(f, now);
    else if (type == "command_buffer") event = command_buffer(f);
    else if (type == "inference") event = inference(f, now);
    else if (type == "operator") event = op(f, object, now);
    else if (type == "sample") event = sample(f, now);
    else fail("type", "must be one of kernel, memory, command_buffer, inference, operator, sample");
    if (Status s = validate(event); !s.ok()) {
      r.error = DecodeError{index, s.field(), s.message()};
      return r;
    }
    r.events.push_back(std::move(event));
  } catch (const FieldError& e) {
    r.error = DecodeError{index, e.field, e.field + ": " + e.message};
  }
  return r;
}

namespace {
// Adds one event's result to a request's: any error empties the request (all or nothing).
void append(DecodeResult& into, DecodeResult one) {
  if (one.error) {
    into.events.clear();
    into.error = std::move(one.error);
  } else {
    for (Event& e : one.events) into.events.push_back(std::move(e));
  }
}
}  // namespace

DecodeResult decode_json_events(std::string_view body, TimestampNs now) {
  DecodeResult r;
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    r.error = DecodeError{std::nullopt, "", "the body is not valid JSON (or not valid UTF-8)"};
    return r;
  }
  if (!doc.is_object() || !doc.contains("events") || !doc["events"].is_array()) {
    r.error = DecodeError{std::nullopt, "events", "expected {\"events\":[…]}"};
    return r;
  }
  const json& events = doc["events"];
  r.events.reserve(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    append(r, decode_event(events[i], i, now));
    if (r.error) return r;
  }
  return r;
}

DecodeResult decode_ndjson_events(std::string_view body, TimestampNs now) {
  DecodeResult r;
  std::size_t index = 0;
  while (!body.empty()) {
    std::size_t nl = body.find('\n');
    std::string_view line = body.substr(0, nl);
    body = nl == std::string_view::npos ? std::string_view() : body.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;  // blank lines
    json doc = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) {
      r.events.clear();
      r.error = DecodeError{index, "", "line " + std::to_string(index + 1) + " is not valid JSON (or not valid UTF-8)"};
      return r;
    }
    append(r, decode_event(doc, index, now));
    if (r.error) return r;
    ++index;
  }
  return r;
}

namespace {
json tags_json(const Tags& tags) {
  json out = json::object();
  for (const auto& [k, v] : tags) out[k] = v;
  return out;
}
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
        } else {
          o = {{"metric", e.metric}, {"labels", tags_json(e.labels)}, {"ts_ns", e.ts_ns}, {"value", e.value}};
        }
        if constexpr (!std::is_same_v<T, SampleEvent>) {
          if (!e.tags.empty()) o["tags"] = tags_json(e.tags);
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
