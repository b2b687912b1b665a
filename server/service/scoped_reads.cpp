#include "server/service/scoped_reads.hpp"

#include <algorithm>
#include <cmath>

namespace perfscope::service {

namespace an = perfscope::analysis;

namespace {
constexpr TimestampNs kLookbackNs = 5LL * 60 * 1'000'000'000;
}  // namespace

Result<std::vector<an::ScrapedServing>> load_scraped_serving(const db::SeriesHistory& history, const db::TimeRange& range) {
  std::vector<an::SeriesSamples> series;
  for (std::string_view pattern : an::scraped_serving_patterns()) {
    db::HistoryQuery q;
    q.name = std::string(pattern);
    q.from_ns = std::max<TimestampNs>(0, range.from_ns - kLookbackNs);
    q.to_ns = range.to_ns;
    q.max_points = SIZE_MAX;  // increases need every scrape: a restart hides between two
    PERFSCOPE_ASSIGN_OR_RETURN(auto data, history.query(q));
    for (db::SeriesData& d : data) series.push_back({std::move(d.info.key), std::move(d.samples)});
  }
  return an::scraped_serving(series, range.from_ns, range.to_ns);
}

Result<std::vector<MarkedWindow>> marked_windows(const db::SeriesHistory& history, const std::string& run,
                                                 TimestampNs from_ns, TimestampNs to_ns) {
  db::HistoryQuery q;
  q.name = "trace_window_seconds";
  if (!run.empty()) q.matchers = {{"run", run}};
  q.from_ns = from_ns;
  q.to_ns = to_ns;
  q.max_points = SIZE_MAX;
  PERFSCOPE_ASSIGN_OR_RETURN(auto marks, history.query(q));
  std::vector<MarkedWindow> out;
  for (const db::SeriesData& d : marks) {
    const std::string* of = d.info.key.label("run");
    for (const Sample& m : d.samples) {
      if (!std::isfinite(m.value) || m.value <= 0) continue;
      out.push_back({of ? *of : std::string(), {m.ts_ns, m.ts_ns + static_cast<TimestampNs>(m.value * 1e9)}});
    }
  }
  return out;
}

Result<std::optional<an::TracedWindows>> run_windows(const db::SeriesHistory& history, const RunEvent& r,
                                                     TimestampNs from_ns, TimestampNs to_ns, TimestampNs now) {
  if (!r.trace_every_ns) return std::optional<an::TracedWindows>();
  const TimestampNs from = std::max(from_ns, r.start_ns), to = std::min(to_ns, r.end_ns.value_or(now));
  // A window opened before `from` may reach into it.
  PERFSCOPE_ASSIGN_OR_RETURN(auto marks, marked_windows(history, r.name, from - *r.trace_every_ns, to));
  std::vector<an::TimeInterval> windows;
  for (const MarkedWindow& m : marks) windows.push_back(m.window);
  return std::optional<an::TracedWindows>(an::traced_windows(std::move(windows), from, std::max(from, to)));
}

Result<ScopedMemory> scoped_memory(const db::EventReader& events, const MemoryTracker* live, const db::EventScope& scope) {
  if (!scope.by_tags()) return ScopedMemory{nullptr, live};
  // One run (or tagged events): their stored events replayed in order (frees learn their sizes
  // as they did live).
  auto rebuilt = std::make_unique<MemoryTracker>();
  Status s = events.for_each_memory_event({0, INT64_MAX}, [&](const MemoryEvent& e) {
    MemoryEvent copy = e;
    rebuilt->apply(copy);
  }, scope);
  if (!s.ok()) return s;
  const MemoryTracker* tracker = rebuilt.get();
  return ScopedMemory{std::move(rebuilt), tracker};
}

}  // namespace perfscope::service
