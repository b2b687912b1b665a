#include "server/api/selector.hpp"

#include "server/api/api.hpp"
#include "server/api/api_helpers.hpp"
#include "server/wire/event_codec.hpp"

namespace perfscope::server {

using nlohmann::json;

json selector_json(const Selector& s) {
  json j;
  // The run and the other tags of the kinds that take them, as selector_from_json reads them.
  auto narrowing = [&](Labels tags) {
    if (!s.run.empty()) {
      j["run"] = s.run;
      std::erase(tags, std::pair<std::string, std::string>("run", s.run));  // "run" says it
    }
    if (!tags.empty()) j["tags"] = labels_to_json(tags);
  };
  switch (s.kind) {
    case Selector::Kind::kKernel:
      j["kernel"] = s.kernel.name;
      if (!s.kernel.variant.empty()) j["variant"] = s.kernel.variant;
      if (!s.kernel.device.empty()) j["device"] = s.kernel.device;
      if (!s.kernel.stream.empty()) j["stream"] = s.kernel.stream;
      narrowing(s.kernel.tags);
      break;
    case Selector::Kind::kModel:
      j["model"] = s.model.model;
      if (!s.model.version.empty()) j["version"] = s.model.version;
      narrowing(s.model.tags);
      j["field"] = s.field_name;
      break;
    case Selector::Kind::kCommandQueue:
      j["command_queue"] = s.queue;
      if (!s.device.empty()) j["device"] = s.device;
      break;
    case Selector::Kind::kSeries: j["series"] = s.series; break;
    case Selector::Kind::kOperator:
      j["operator"] = s.op.op;
      if (!s.op.model.empty()) j["model"] = s.op.model;
      if (!s.op.provider.empty()) j["provider"] = s.op.provider;
      narrowing(s.op.tags);
      break;
  }
  return j;
}

Result<Selector> selector_from_json(const json& j, const std::string& where) {
  auto path = [&](const std::string& field) { return where.empty() ? field : where + "." + field; };
  auto bad = [&](const std::string& field, const std::string& message) {
    return Status::invalid_argument(path(field) + ": " + message, path(field));
  };
  if (!j.is_object()) return Status::invalid_argument((where.empty() ? "the selector" : where) + ": must be an object", where);
  auto text = [&](const char* name, std::string& out) -> Status {
    auto it = j.find(name);
    if (it == j.end() || it->is_null()) return Status();
    if (!it->is_string() || it->get_ref<const std::string&>().empty()) return bad(name, "must be a non-empty string");
    out = it->get<std::string>();
    return Status();
  };
  auto texts = [&](std::initializer_list<std::pair<const char*, std::string*>> fields) -> Status {
    for (auto [name, out] : fields) {
      if (Status st = text(name, *out); !st.ok()) return st;
    }
    return Status();
  };
  // The subject: one of five; with "operator", "model" narrows it instead.
  const bool has_operator = j.contains("operator");
  const int subjects = has_operator + j.contains("kernel") + (j.contains("model") && !has_operator) +
                       j.contains("command_queue") + j.contains("series");
  if (subjects != 1) {
    return Status::invalid_argument((where.empty() ? "" : where + ": ") +
                                        "give exactly one of kernel, model, operator, command_queue or series",
                                    where.empty() ? "kernel" : where);
  }
  Selector s;
  if (has_operator) s.kind = Selector::Kind::kOperator;
  else if (j.contains("kernel")) s.kind = Selector::Kind::kKernel;
  else if (j.contains("model")) s.kind = Selector::Kind::kModel;
  else if (j.contains("command_queue")) s.kind = Selector::Kind::kCommandQueue;
  else s.kind = Selector::Kind::kSeries;
  if (s.kind != Selector::Kind::kModel && j.contains("field")) return bad("field", "applies to model only");
  // A run (its events carry the tag run=…) and tags narrow the kinds whose events carry tags.
  Labels* tags = s.kind == Selector::Kind::kKernel ? &s.kernel.tags
                 : s.kind == Selector::Kind::kModel ? &s.model.tags
                 : s.kind == Selector::Kind::kOperator ? &s.op.tags : nullptr;
  if (!tags && (j.contains("run") || j.contains("tags"))) {
    return bad(j.contains("run") ? "run" : "tags", "applies to kernel, model and operator selectors");
  }
  Status st;
  switch (s.kind) {
    case Selector::Kind::kOperator:
      st = texts({{"operator", &s.op.op}, {"model", &s.op.model}, {"provider", &s.op.provider}});
      break;
    case Selector::Kind::kKernel:
      st = texts({{"kernel", &s.kernel.name}, {"variant", &s.kernel.variant}, {"device", &s.kernel.device},
                  {"stream", &s.kernel.stream}});
      break;
    case Selector::Kind::kModel: {
      std::string field;
      st = texts({{"model", &s.model.model}, {"version", &s.model.version}, {"field", &field}});
      if (!st.ok()) return st;
      // itl_ms (every gap between two tokens) exists only as a scraped server's histogram.
      auto f = field == "itl_ms" ? std::optional(db::InferenceField::kTpot) : service::inference_field(field);
      if (!f) return bad("field", "must be latency_ms, ttft_ms, tpot_ms, queue_ms, compute_ms or itl_ms");
      s.field = *f;
      if (!field.empty()) s.field_name = field;
      break;
    }
    case Selector::Kind::kCommandQueue: st = texts({{"command_queue", &s.queue}, {"device", &s.device}}); break;
    case Selector::Kind::kSeries: st = text("series", s.series); break;
  }
  if (!st.ok()) return st;
  if (!tags) return s;
  if (auto it = j.find("tags"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return bad("tags", "must be an object of strings");
    for (const auto& [k, v] : it->items()) {
      if (!v.is_string()) return bad("tags." + k, "must be a string");
      tags->emplace_back(k, v.get<std::string>());
    }
  }
  if (Status rs = text("run", s.run); !rs.ok()) return rs;
  if (!s.run.empty()) tags->emplace_back("run", s.run);  // a run's events carry its tag
  sort_labels(*tags);
  return s;
}

Result<Selector> selector_from_query(const HttpRequest& request) {
  json j = json::object();
  for (const char* name : {"kernel", "variant", "device", "stream", "operator", "model", "provider", "version", "field",
                           "command_queue", "series"}) {
    if (std::string v = param(request, name); !v.empty()) j[name] = std::move(v);
  }
  return selector_from_json(j, "");
}

}  // namespace perfscope::server
