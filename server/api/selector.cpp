#include "server/api/selector.hpp"

#include "server/api/api.hpp"
#include "server/wire/event_codec.hpp"

namespace perfscope::server {

using nlohmann::json;

json Selector::to_json() const {
  json j;
  switch (kind) {
    case Kind::kKernel:
      j["kernel"] = kernel.name;
      if (!kernel.variant.empty()) j["variant"] = kernel.variant;
      if (!kernel.device.empty()) j["device"] = kernel.device;
      if (!kernel.stream.empty()) j["stream"] = kernel.stream;
      if (!run.empty()) j["run"] = run;
      if (Labels tags = kernel.tags; !tags.empty()) {
        if (!run.empty()) std::erase(tags, std::pair<std::string, std::string>("run", run));  // "run" says it
        if (!tags.empty()) j["tags"] = labels_to_json(tags);
      }
      break;
    case Kind::kModel:
      j["model"] = model.model;
      if (!model.version.empty()) j["version"] = model.version;
      if (!run.empty()) j["run"] = run;
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
      if (!run.empty()) j["run"] = run;
      break;
  }
  return j;
}

std::optional<db::InferenceField> inference_field(std::string_view name) {
  if (name.empty()) return db::InferenceField::kLatency;
  return db::inference_field_from(name);
}

Result<Selector> selector_from_json(const json& j, const std::string& where) {
  auto bad = [&](const std::string& field, const std::string& message) {
    return Status::invalid_argument(where + "." + field + ": " + message, where + "." + field);
  };
  if (!j.is_object()) return Status::invalid_argument(where + ": must be an object", where);
  auto text = [&](const char* name, std::string& out) -> Status {
    auto it = j.find(name);
    if (it == j.end() || it->is_null()) return Status();
    if (!it->is_string() || it->get_ref<const std::string&>().empty()) return bad(name, "must be a non-empty string");
    out = it->get<std::string>();
    return Status();
  };
  Selector s;
  if (j.contains("operator")) {  // an op type or node; model and provider narrow it
    if (j.contains("kernel")) return Status::invalid_argument(where + ": give exactly one of kernel, model or operator", where);
    s.kind = Selector::Kind::kOperator;
    for (auto [name, out] : {std::pair{"operator", &s.op.op}, std::pair{"model", &s.op.model},
                             std::pair{"provider", &s.op.provider}}) {
      if (Status st = text(name, *out); !st.ok()) return st;
    }
    if (Status st = text("run", s.run); !st.ok()) return st;
    if (!s.run.empty()) s.op.tags.emplace_back("run", s.run);
    return s;
  }
  const bool has_kernel = j.contains("kernel"), has_model = j.contains("model");
  if (has_kernel == has_model) return Status::invalid_argument(where + ": give exactly one of kernel, model or operator", where);
  if (has_kernel) {
    s.kind = Selector::Kind::kKernel;
    for (auto [name, out] : {std::pair{"kernel", &s.kernel.name}, std::pair{"variant", &s.kernel.variant},
                             std::pair{"device", &s.kernel.device}, std::pair{"stream", &s.kernel.stream}}) {
      if (Status st = text(name, *out); !st.ok()) return st;
    }
    if (auto it = j.find("tags"); it != j.end() && !it->is_null()) {
      if (!it->is_object()) return bad("tags", "must be an object of strings");
      for (const auto& [k, v] : it->items()) {
        if (!v.is_string()) return bad("tags." + k, "must be a string");
        s.kernel.tags.emplace_back(k, v.get<std::string>());
      }
    }
    if (Status st = text("run", s.run); !st.ok()) return st;
    if (!s.run.empty()) s.kernel.tags.emplace_back("run", s.run);  // a run's events carry its tag
    sort_labels(s.kernel.tags);
  } else {
    s.kind = Selector::Kind::kModel;
    if (Status st = text("model", s.model.model); !st.ok()) return st;
    if (Status st = text("version", s.model.version); !st.ok()) return st;
    if (Status st = text("run", s.run); !st.ok()) return st;
    if (!s.run.empty()) s.model.tags.emplace_back("run", s.run);
    std::string field;
    if (Status st = text("field", field); !st.ok()) return st;
    auto f = inference_field(field);
    if (!f) return bad("field", "must be latency_ms, ttft_ms, tpot_ms, queue_ms or compute_ms");
    s.field = *f;
    if (!field.empty()) s.field_name = field;
  }
  return s;
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
