// Reads the analyses share beyond single queries: the serving figures of scraped inference
// servers over a window, the windows a duty-cycled run traced, and the memory tracker of a
// scope (the server's live one, or one rebuilt from a run's or tags' stored events).
//
// Functions over the database readers; thread-safe as the readers are.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "db/event_reader.hpp"
#include "db/series_history.hpp"
#include "db/time_range.hpp"
#include "engine/analysis/scraped_serving.hpp"
#include "engine/analysis/timeline.hpp"
#include "engine/events/memory_tracker.hpp"

namespace perfscope::service {

// What every endpoint says of a run= (or a=, b=) that names no run.
inline std::string no_run_message(const std::string& name) {
  return "no run named '" + name + "' (events tagged run=" + name + " without a run of that name are selected with tag.run=" +
         name + ")";
}

// Every scraped model in `range`. The newest scrape before the window (up to five minutes
// back, Prometheus' lookback) is each increase's baseline, so a window starts where it says.
Result<std::vector<analysis::ScrapedServing>> load_scraped_serving(const db::SeriesHistory& history,
                                                                   const db::TimeRange& range);

// The tracing windows duty-cycled processes marked (`trace_window_seconds`: a sample at each
// opening valued its length) that open within [from, to]; `run` non-empty: that run's only.
struct MarkedWindow {
  std::string run;
  analysis::TimeInterval window;
};
Result<std::vector<MarkedWindow>> marked_windows(const db::SeriesHistory& history, const std::string& run,
                                                 TimestampNs from_ns, TimestampNs to_ns);
// A duty-cycled run's traced windows within [from, to] clipped to the run's own span;
// nullopt for a run traced throughout.
Result<std::optional<analysis::TracedWindows>> run_windows(const db::SeriesHistory& history, const RunEvent& run,
                                                           TimestampNs from_ns, TimestampNs to_ns, TimestampNs now);

// The memory tracker a scope reads: the server's (`live`), or, for a run or tags, one rebuilt
// from the scope's stored events (`rebuilt` owns it then).
struct ScopedMemory {
  std::unique_ptr<MemoryTracker> rebuilt;
  const MemoryTracker* tracker = nullptr;
};
Result<ScopedMemory> scoped_memory(const db::EventReader& events, const MemoryTracker* live, const db::EventScope& scope);

}  // namespace perfscope::service
