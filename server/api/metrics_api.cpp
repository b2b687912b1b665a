// GET /metrics: everything perfscope knows now, for Prometheus — the latest reading of every
// series (host, GPU, custom samples), cumulative histograms and counters over committed
// events, memory statistics, and the server's own health. Text format 0.0.4, or OpenMetrics
// when the Accept header asks for it.
#include <unistd.h>

#include <map>
#include <set>

#include "engine/events/event_metrics.hpp"
#include "server/api/api.hpp"
#include "server/api/metrics_exposition.hpp"
#include "server/api/version.hpp"

namespace perfscope::server {

namespace {

// A series whose newest sample is older than this is left out: its source went away (a
// custom metric no one reports any more), and Prometheus should see it as stale.
constexpr TimestampNs kStaleAfterNs = 5LL * 60 * 1'000'000'000;

std::string exposition_name(std::string name) {
  for (char& c : name) {
    if (c == ':') c = '_';  // colons are reserved for recording rules
  }
  return name;
}

// Families of series from the store, grouped by name, sorted; GPU series get the
// dcgm-exporter labels too when asked.
void add_series(const SeriesStore& store, TimestampNs now, const std::set<std::string>& taken,
                const std::map<std::string, Labels>* dcgm_by_gpu, std::vector<ExpositionFamily>& out) {
  std::map<std::string, ExpositionFamily> by_name;
  for (const SeriesSnapshot& s : store.list()) {
    if (!s.latest || now - s.latest->ts_ns > kStaleAfterNs) continue;
    const std::string name = exposition_name(s.key.name);
    if (taken.count(name)) continue;
    auto [it, fresh] = by_name.try_emplace(name);
    ExpositionFamily& f = it->second;
    if (fresh) {
      // Undeclared (custom) series: gauges, unless named as counters.
      f.family = store.family(s.key.name)
                     .value_or(MetricFamily{s.key.name, "", name.ends_with("_total") ? MetricType::kCounter : MetricType::kGauge,
                                            "Custom metric reported by an application"});
      f.family.name = name;
    }
    Labels labels = s.key.labels;
    if (dcgm_by_gpu && name.rfind("gpu_", 0) == 0) {
      if (const std::string* gpu = s.key.label("gpu")) {
        auto d = dcgm_by_gpu->find(*gpu);
        if (d != dcgm_by_gpu->end()) {
          for (const auto& kv : d->second) {
            if (!s.key.label(kv.first)) labels.push_back(kv);
          }
          sort_labels(labels);
        }
      }
    }
    f.samples.push_back({std::move(labels), s.latest->value});
  }
  for (auto& [name, f] : by_name) out.push_back(std::move(f));
}

ExpositionFamily one_sample(MetricFamily family, Labels labels, double value) {
  ExpositionFamily f{std::move(family), {}, {}, {}};
  f.samples.push_back({std::move(labels), value});
  return f;
}

}  // namespace

namespace {

// Memory the applications reported, per kind.
void add_memory_families(const MemoryTracker& memory, std::vector<ExpositionFamily>& families, std::set<std::string>& taken) {
  using T = MetricType;
  const MemoryStatistics stats = memory.statistics();
  ExpositionFamily current{{"memory_allocated_bytes", "bytes", T::kGauge, "Memory currently allocated, as reported by applications"}, {}, {}, {}};
  ExpositionFamily peak{{"memory_peak_allocated_bytes", "bytes", T::kGauge, "Highest allocated memory seen"}, {}, {}, {}};
  ExpositionFamily allocs{{"memory_allocations_total", "", T::kCounter, "Allocations reported"}, {}, {}, {}};
  ExpositionFamily frees{{"memory_frees_total", "", T::kCounter, "Frees reported"}, {}, {}, {}};
  for (const auto& [kind, c] : stats.by_kind) {
    current.samples.push_back({{{"kind", kind}}, static_cast<double>(c.current_bytes)});
    peak.samples.push_back({{{"kind", kind}}, static_cast<double>(c.peak_bytes)});
    allocs.samples.push_back({{{"kind", kind}}, static_cast<double>(c.allocation_count)});
    frees.samples.push_back({{{"kind", kind}}, static_cast<double>(c.free_count)});
  }
  for (ExpositionFamily* f : {&current, &peak, &allocs, &frees}) {
    taken.insert(f->family.name);
    families.push_back(std::move(*f));
  }
}

// The database writer's rows, commits, errors and dropped passes.
void add_writer_families(const db::Writer& writer, std::vector<ExpositionFamily>& families, std::set<std::string>& taken) {
  using T = MetricType;
  const db::WriterStats ws = writer.stats();
  struct Counter {
    const char* name;
    const char* help;
    std::uint64_t value;
  };
  const Counter counters[] = {
      {"database_rows_written_total", "Rows the database writer committed", ws.rows_written},
      {"database_commits_total", "Transactions the database writer committed", ws.commits},
      {"database_write_errors_total", "Commits the database writer could not make",
       ws.write_errors},
      {"database_sample_batches_dropped_total", "Sampling passes dropped, stalest first, while the writer's queue was full (event batches never are)",
       ws.batches_dropped},
  };
  for (const Counter& c : counters) {
    families.push_back(one_sample({c.name, "", T::kCounter, c.help}, {}, static_cast<double>(c.value)));
    taken.insert(c.name);
  }
}

// Each collector's time per sampling pass.
void add_collector_families(const Sampler& sampler, std::vector<ExpositionFamily>& families, std::set<std::string>& taken) {
  using T = MetricType;
  // As node_exporter's node_scrape_collector_duration_seconds: what each collector's part of a
  // sampling pass took, the last pass's and all passes' together.
  ExpositionFamily last{{"collector_duration_seconds", "seconds", T::kGauge,
                         "Time the collector took in the last sampling pass"}, {}, {}, {}};
  ExpositionFamily total{{"collector_seconds_total", "seconds", T::kCounter,
                          "Time the collector took in every sampling pass so far"}, {}, {}, {}};
  for (const CollectorTiming& t : sampler.collector_timings()) {
    last.samples.push_back({{{"collector", t.name}}, t.last_seconds});
    total.samples.push_back({{{"collector", t.name}}, t.total_seconds});
  }
  for (ExpositionFamily* f : {&last, &total}) {
    taken.insert(f->family.name);
    families.push_back(std::move(*f));
  }
}

// The cardinality caps: values counted, limits, folds and refusals per dimension.
void add_cardinality_families(const CardinalityGuard& cardinality, std::vector<ExpositionFamily>& families, std::set<std::string>& taken) {
  using T = MetricType;
  ExpositionFamily distinct{{"cardinality_values", "", T::kGauge,
                             "Distinct values counted per event dimension (tag_value: its fullest key)"}, {}, {}, {}};
  ExpositionFamily limit{{"cardinality_limit", "", T::kGauge, "Distinct values allowed per event dimension (0: no cap)"},
                         {}, {}, {}};
  ExpositionFamily folded{{"cardinality_folded_total", "", T::kCounter,
                           "Values folded into [other] (tag_key: tags dropped) at a cardinality cap"}, {}, {}, {}};
  ExpositionFamily refused{{"cardinality_refused_total", "", T::kCounter,
                            "Ingest batches refused at a cardinality cap (new custom series)"}, {}, {}, {}};
  for (const DimensionStats& d : cardinality.stats()) {
    const Labels labels = {{"dimension", std::string(dimension_name(d.dimension))}};
    distinct.samples.push_back({labels, static_cast<double>(d.distinct)});
    limit.samples.push_back({labels, static_cast<double>(d.limit)});
    folded.samples.push_back({labels, static_cast<double>(d.folded)});
    refused.samples.push_back({labels, static_cast<double>(d.refused)});
  }
  for (ExpositionFamily* f : {&distinct, &limit, &folded, &refused}) {
    taken.insert(f->family.name);
    families.push_back(std::move(*f));
  }
}

}  // namespace

HttpResponse Api::metrics(const HttpRequest& request) const {
  using T = MetricType;
  const ExpositionFormat format = negotiate_exposition(request.accept);
  std::vector<ExpositionFamily> families;
  families.push_back(one_sample({"build_info", "", T::kGauge, "1; labels carry the version, build type and compiler"},
                                {{"build_type", std::string(build_type())},
                                 {"compiler", std::string(compiler())},
                                 {"version", std::string(version())}},
                                1));

  std::set<std::string> taken = {"build_info"};
  if (ctx_.event_metrics) {
    for (EventMetricFamily& e : ctx_.event_metrics->snapshot()) {
      ExpositionFamily f{e.family, {}, std::move(e.bounds), {}};
      for (auto& c : e.counters) f.samples.push_back({std::move(c.labels), c.value});
      for (auto& h : e.histograms) f.histograms.push_back({std::move(h.labels), std::move(h.cumulative), h.sum, h.count});
      taken.insert(f.family.name);
      families.push_back(std::move(f));
    }
    families.push_back(one_sample({"metrics_label_overflow_total", "", T::kCounter,
                                   "Events counted under the label value __other__ because a family reached its label-set cap"},
                                  {}, static_cast<double>(ctx_.event_metrics->overflowed())));
  }

  if (ctx_.memory) add_memory_families(*ctx_.memory, families, taken);
  if (ctx_.writer) add_writer_families(*ctx_.writer, families, taken);
  if (ctx_.sampler) add_collector_families(*ctx_.sampler, families, taken);
  if (ctx_.cardinality) add_cardinality_families(*ctx_.cardinality, families, taken);
  if (ctx_.store) {
    std::map<std::string, Labels> dcgm;
    if (ctx_.config && ctx_.config->server.metrics_dcgm_labels && ctx_.gpus) {
      char host_buf[256] = {};
      ::gethostname(host_buf, sizeof host_buf - 1);
      const std::string host = host_buf;
      for (const GpuDeviceInfo& d : ctx_.gpus->devices()) {
        dcgm[d.index] = {{"Hostname", host}, {"UUID", d.uuid}, {"modelName", d.name}};
      }
    }
    add_series(*ctx_.store, now_ns(), taken, ctx_.config && ctx_.config->server.metrics_dcgm_labels ? &dcgm : nullptr,
               families);
  }

  HttpResponse r;
  r.status = 200;
  r.content_type = std::string(exposition_content_type(format));
  r.body = render_exposition(families, format);
  return r;
}

}  // namespace perfscope::server
