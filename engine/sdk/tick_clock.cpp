#include "engine/sdk/tick_clock.hpp"

#include <chrono>

namespace perfscope {
namespace {
// One (ticks, ns) pair taken as close together as possible: the read with the shortest
// tick window around the wall clock read wins.
std::pair<TickClock::Ticks, TimestampNs> paired_read() {
  TickClock::Ticks best_width = INT64_MAX;
  std::pair<TickClock::Ticks, TimestampNs> best{0, 0};
  for (int i = 0; i < 5; ++i) {
    TickClock::Ticks a = TickClock::now();
    TimestampNs ns = now_ns();
    TickClock::Ticks b = TickClock::now();
    if (b - a < best_width) {
      best_width = b - a;
      best = {a + (b - a) / 2, ns};
    }
  }
  return best;
}
}  // namespace

TickClock::TickClock() {
#if defined(__x86_64__)
  auto [t0, n0] = paired_read();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
  while (std::chrono::steady_clock::now() < deadline) {
  }
  auto [t1, n1] = paired_read();
  base_ticks_ = t0;
  base_ns_ = n0;
  ns_per_tick_ = t1 > t0 ? static_cast<double>(n1 - n0) / static_cast<double>(t1 - t0) : 1.0;
#else
  base_ticks_ = 0;
  base_ns_ = 0;
  ns_per_tick_ = 1.0;
#endif
}

void TickClock::recalibrate() {
#if defined(__x86_64__)
  auto [t, n] = paired_read();
  if (t > base_ticks_ + 1'000'000) ns_per_tick_ = static_cast<double>(n - base_ns_) / static_cast<double>(t - base_ticks_);
#endif
}

}  // namespace perfscope
