// Duty-cycled tracing: activity is recorded only in short windows, so a long-running server
// can stay traced for good. A window opens at every multiple of `every` of the wall clock and
// stays open for `window`: every process of a run (and every host) traces the same windows,
// and what a window holds is comparable between them.
//
// Plain values; safe from any thread.
#pragma once

#include <cstdint>
#include <string>

#include "engine/base/clock.hpp"
#include "engine/base/status.hpp"

namespace perfscope::trace {

struct TraceWindow {
  TimestampNs open_ns = 0;
  TimestampNs close_ns = 0;
};

struct TraceSchedule {
  std::int64_t window_ns = 0;  // 0 (both): traced throughout
  std::int64_t every_ns = 0;

  bool duty_cycled() const { return every_ns > 0; }
  double fraction() const { return duty_cycled() ? static_cast<double>(window_ns) / static_cast<double>(every_ns) : 1.0; }
  // The window that holds `t`, or else the next one; [t, t] forever when not duty-cycled.
  TraceWindow window_at(TimestampNs t) const;
};

// From `perfscope run`'s options: --duty-cycle (a share: "5%" or "0.05"), --trace-window and
// --trace-every (nanoseconds, 0 when not given). Any two of the three fix the third; a
// duty cycle alone takes 200 ms windows. kInvalidArgument naming the option at fault.
Result<TraceSchedule> make_trace_schedule(const std::string& duty_cycle, std::int64_t window_ns, std::int64_t every_ns);

}  // namespace perfscope::trace
