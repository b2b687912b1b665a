#include "server/api/selector.hpp"

#include "server/api/api.hpp"
#include "server/api/api_helpers.hpp"
#include "server/wire/event_codec.hpp"

namespace perfscope::server {

using nlohmann::json;

json Selector::to_json() const {
  json j;
  // The run and the other tags of the kinds that take them, as selector_from_json reads them.
  auto narrowing = [&](Labels tags) {
    if (!run.empty()) {
      j["run"] = run;
      std::erase(tags, std::pair<std::string, std::string>("run", run));  // "run" says it
    }
    if (!tags.empty()) j["tags"] = labels_to_json(tags);
  };
  switch (kind) {
    case Kind::kKernel:
      j["kernel"] = kernel.name;
      if (!kernel.variant.empty()) j["variant"] = kernel.variant;
      if (!kernel.device.empty()) j["device"] = kernel.device;
      if (!kernel.stream.empty()) j["stream"] = kernel.stream;
      narrowing(kernel.tags);
      break;
    case Kind::kModel:
      j["model"] = model.model;
      if (!model.version.empty()) j["version"] = model.version;
      narrowing(model.tags);
      j["field"] = field_name;
      break;
    case Kind::kCommandQueue:
      j["command_queue"] = queue;
      if (!device.empty()) j["device"] = device;
      break;
    case Kind::kSeries: j["series"] = series; break;
    case Kind::kOperator:
      j["operator"] = op.op;
      if (!op.model.empty()) j["model"] = op.model;
      if (!op.provider.empty()) j["provider"] = op.provider;
      narrowing(op.tags);
      break;
  }
  return j;
}

std::optional<db::InferenceField> inference_field(std::string_view name) {
  if (name.empty()) return db::InferenceField::kLatency;
  return db::inference_field_from(name);
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
      auto f = field == "itl_ms" ? std::optional(db::InferenceField::kTpot) : inference_field(field);
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

Result<Distribution> load_distribution(const ApiContext& ctx, const Selector& s, const db::TimeRange& range,
                                       bool with_rollups) {
  Distribution d;
  auto take = [&](Result<std::vector<double>> raw, auto rollup) -> Status {
    if (!raw.ok()) return raw.status();
    d.raw = std::move(*raw);
    if (!with_rollups) return Status();
    Result<std::optional<db::RollupAnswer>> r = rollup();
    if (!r.ok()) return r.status();
    d.rolled = std::move(*r);
    return Status();
  };
  Status st;
  switch (s.kind) {
    case Selector::Kind::kKernel:
      st = take(ctx.events->kernel_durations_ms(s.kernel, range), [&] { return ctx.events->kernel_rollup(s.kernel, range); });
      break;
    case Selector::Kind::kModel:
      if (s.field_name == "itl_ms") break;  // no reported request carries it: scraped servers only
      st = take(ctx.events->inference_values_ms(s.model, s.field, range),
                [&] { return ctx.events->inference_rollup(s.model, s.field, range); });
      break;
    case Selector::Kind::kOperator: {  // no rollup tiers: operators are kept raw for their retention
      auto rows = ctx.events->operator_executions(s.op, range);
      if (!rows.ok()) return rows.status();
      for (const auto& r : *rows) d.raw.push_back(r.duration_ms);
      break;
    }
    case Selector::Kind::kCommandQueue:
      st = take(ctx.events->command_buffer_latencies_ms(s.queue, s.device, range),
                [&] { return ctx.events->command_buffer_rollup(s.queue, s.device, range); });
      break;
    case Selector::Kind::kSeries: {
      db::HistoryQuery q;
      std::string_view text = s.series;
      if (auto brace = text.find('{'); brace != std::string_view::npos && text.back() == '}') {
        auto labels = parse_labels(text.substr(brace + 1, text.size() - brace - 2));
        if (!labels.ok()) return Status::invalid_argument("'series' has malformed labels", "series");
        q.matchers = std::move(*labels);
        text = text.substr(0, brace);
      }
      q.name = std::string(text);
      q.from_ns = range.from_ns;
      q.to_ns = std::min(range.to_ns, now_ns());
      q.max_points = SIZE_MAX;  // raw samples: percentiles over buckets would be wrong
      auto data = ctx.history->query(q);
      if (!data.ok()) return data.status();
      std::vector<std::int64_t> ids;
      for (const auto& series : *data) {
        d.unit = series.info.family.unit;
        if (series.db_id) ids.push_back(*series.db_id);
      }
      if (with_rollups && !ids.empty()) {
        auto r = ctx.events->series_rollup(ids, range);
        if (!r.ok()) return r.status();
        d.rolled = std::move(*r);
      }
      for (const auto& series : *data) {
        for (const Sample& p : series.samples) {
          // Samples memory still holds from before the retention cutoff are in the rollups.
          if (!d.rolled || p.ts_ns >= d.rolled->raw_before_ns) d.raw.push_back(p.value);
        }
      }
      break;
    }
  }
  if (!st.ok()) return st;
  return d;
}

Result<std::vector<double>> load_values(const ApiContext& ctx, const Selector& s, const db::TimeRange& range) {
  auto d = load_distribution(ctx, s, range, /*with_rollups=*/false);
  if (!d.ok()) return d.status();
  return std::move(d->raw);
}

}  // namespace perfscope::server
