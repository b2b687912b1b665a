#include "server/trace/trace_schedule.hpp"

#include <charconv>
#include <cmath>
#include <limits>

namespace perfscope::trace {

namespace {

constexpr std::int64_t kDefaultWindowNs = 200'000'000;
// Shorter windows would be mostly CUPTI's enabling and flushing.
constexpr std::int64_t kMinWindowNs = 10'000'000;

Result<double> parse_share(const std::string& text) {
  std::string_view v = text;
  const bool percent = !v.empty() && v.back() == '%';
  if (percent) v.remove_suffix(1);
  double x = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || !std::isfinite(x)) {
    return Status::invalid_argument("--duty-cycle: '" + text + "' is no share (give 5% or 0.05)", "duty_cycle");
  }
  if (percent) x /= 100;
  if (!(x > 0) || x > 1) return Status::invalid_argument("--duty-cycle: must be above 0% and at most 100%", "duty_cycle");
  return x;
}

}  // namespace

TraceWindow TraceSchedule::window_at(TimestampNs t) const {
  if (!duty_cycled()) return {t, std::numeric_limits<TimestampNs>::max()};
  const TimestampNs open = t - t % every_ns;
  if (t < open + window_ns) return {open, open + window_ns};
  return {open + every_ns, open + every_ns + window_ns};
}

Result<TraceSchedule> make_trace_schedule(const std::string& duty_cycle, std::int64_t window_ns, std::int64_t every_ns) {
  TraceSchedule s;
  if (duty_cycle.empty() && window_ns == 0 && every_ns == 0) return s;
  if (window_ns < 0) return Status::invalid_argument("--trace-window: must be positive", "trace_window");
  if (every_ns < 0) return Status::invalid_argument("--trace-every: must be positive", "trace_every");
  if (!duty_cycle.empty()) {
    auto share = parse_share(duty_cycle);
    if (!share.ok()) return share.status();
    if (window_ns > 0 && every_ns > 0) {
      return Status::invalid_argument("--duty-cycle: give two of --duty-cycle, --trace-window and --trace-every",
                                      "duty_cycle");
    }
    if (every_ns > 0) {
      window_ns = static_cast<std::int64_t>(std::llround(static_cast<double>(every_ns) * *share));
    } else {
      if (window_ns == 0) window_ns = kDefaultWindowNs;
      every_ns = static_cast<std::int64_t>(std::llround(static_cast<double>(window_ns) / *share));
    }
  } else if (window_ns == 0 || every_ns == 0) {
    return Status::invalid_argument(window_ns == 0 ? "--trace-every: needs --trace-window (or --duty-cycle)"
                                                   : "--trace-window: needs --trace-every (or --duty-cycle)",
                                    window_ns == 0 ? "trace_every" : "trace_window");
  }
  if (window_ns < kMinWindowNs) {
    return Status::invalid_argument("--trace-window: at least 10ms (a window is also CUPTI's enabling and flushing)",
                                    "trace_window");
  }
  if (every_ns < window_ns) return Status::invalid_argument("--trace-every: must be at least --trace-window", "trace_every");
  if (every_ns == window_ns) return s;  // always open: traced throughout
  s.window_ns = window_ns;
  s.every_ns = every_ns;
  return s;
}

}  // namespace perfscope::trace
