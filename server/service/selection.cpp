#include "server/service/selection.hpp"

#include <algorithm>

#include "engine/series/series.hpp"

namespace perfscope::service {

namespace an = perfscope::analysis;

std::optional<db::InferenceField> inference_field(std::string_view name) {
  if (name.empty()) return db::InferenceField::kLatency;
  return db::inference_field_from(name);
}

Result<Distribution> load_distribution(const Sources& sources, const Selector& s, const db::TimeRange& range,
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
      st = take(sources.events->kernel_durations_ms(s.kernel, range), [&] { return sources.events->kernel_rollup(s.kernel, range); });
      break;
    case Selector::Kind::kModel:
      if (s.field_name == "itl_ms") break;  // no reported request carries it: scraped servers only
      st = take(sources.events->inference_values_ms(s.model, s.field, range),
                [&] { return sources.events->inference_rollup(s.model, s.field, range); });
      break;
    case Selector::Kind::kOperator: {  // no rollup tiers: operators are kept raw for their retention
      PERFSCOPE_ASSIGN_OR_RETURN(auto rows, sources.events->operator_executions(s.op, range));
      for (const auto& r : rows) d.raw.push_back(r.duration_ms);
      break;
    }
    case Selector::Kind::kCommandQueue:
      st = take(sources.events->command_buffer_latencies_ms(s.queue, s.device, range),
                [&] { return sources.events->command_buffer_rollup(s.queue, s.device, range); });
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
      PERFSCOPE_ASSIGN_OR_RETURN(auto data, sources.history->query(q));
      std::vector<std::int64_t> ids;
      for (const auto& series : data) {
        d.unit = series.info.family.unit;
        if (series.db_id) ids.push_back(*series.db_id);
      }
      if (with_rollups && !ids.empty()) {
        PERFSCOPE_ASSIGN_OR_RETURN(auto r, sources.events->series_rollup(ids, range));
        d.rolled = std::move(r);
      }
      for (const auto& series : data) {
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

Result<std::vector<double>> load_values(const Sources& sources, const Selector& s, const db::TimeRange& range) {
  PERFSCOPE_ASSIGN_OR_RETURN(auto d, load_distribution(sources, s, range, /*with_rollups=*/false));
  return std::move(d.raw);
}

Result<std::optional<ScrapedSelection>> select_scraped(const std::vector<an::ScrapedServing>& all,
                                                       const std::string& model, const std::string& version,
                                                       const std::string& field) {
  std::vector<const an::ScrapedDistribution*> parts;
  ScrapedSelection out;
  for (const an::ScrapedServing& m : all) {
    if (m.model != model || (!version.empty() && m.version != version)) continue;
    auto it = m.fields.find(field);
    if (it == m.fields.end()) continue;
    parts.push_back(&it->second);
    out.servers.insert(m.server);
    out.targets.insert(m.targets.begin(), m.targets.end());
  }
  if (parts.empty()) return std::optional<ScrapedSelection>();
  auto merged = an::merge_scraped(parts);
  if (!merged) {
    return Status::invalid_argument("the versions of model '" + model +
                                        "' have different buckets or only summaries: give a version", "version");
  }
  out.distribution = std::move(*merged);
  return std::optional(std::move(out));
}

}  // namespace perfscope::service
