// RecentLog: the newest `capacity` records of a kind that carries its time (`ts_ns`), for "what
// happened between from and to" — the anomalies and the GPU alerts the sampler finds, which the
// API lists. The oldest go first once it is full.
//
// Thread-safety: add() and between() are safe from any thread.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

#include "engine/base/clock.hpp"

namespace perfscope {

template <typename Record>
class RecentLog {
 public:
  explicit RecentLog(std::size_t capacity) : capacity_(capacity) {}

  void add(const std::vector<Record>& records) {
    if (records.empty()) return;
    std::lock_guard lock(mu_);
    for (const Record& r : records) kept_.push_back(r);
    while (kept_.size() > capacity_) kept_.pop_front();
  }

  // The records of [from, to], oldest first.
  std::vector<Record> between(TimestampNs from_ns, TimestampNs to_ns) const {
    std::lock_guard lock(mu_);
    std::vector<Record> out;
    for (const Record& r : kept_) {
      if (r.ts_ns >= from_ns && r.ts_ns <= to_ns) out.push_back(r);
    }
    return out;
  }

 private:
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::deque<Record> kept_;  // guarded by mu_
};

}  // namespace perfscope
