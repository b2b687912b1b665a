// The window a query covers when it names a run: with no window given, the run's own span
// (its start to its end, or to now while it goes on). Used by every analysis of a scope.
#pragma once

#include <string>

#include "db/event_reader.hpp"
#include "server/service/query_time.hpp"
#include "server/service/scoped_reads.hpp"

namespace perfscope::service {

// not_found (field "run") for a run that names no run; `window` unchanged without a run or when
// a window was given.
inline Status resolve_run_window(const db::EventReader& events, const std::string& run, server::TimeWindow& window,
                                 TimestampNs now) {
  if (run.empty() || !window.all) return Status::ok_status();
  auto r = events.run(run);
  if (!r.ok()) return r.status();
  if (!*r) return Status::not_found(no_run_message(run), "run");
  window.from_ns = (*r)->start_ns;
  window.to_ns = (*r)->end_ns.value_or(now);
  window.all = false;
  return Status::ok_status();
}

}  // namespace perfscope::service
