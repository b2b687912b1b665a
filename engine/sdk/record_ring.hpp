// RecordRing: a fixed-capacity single-producer single-consumer ring of plain records. The
// producer is the application thread that owns it (no lock, no allocation); the consumer is
// the Monitor's drain. push() fails when the ring is full; the caller decides what then.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace perfscope {

template <typename T>
class RecordRing {
 public:
  explicit RecordRing(std::size_t capacity_pow2)
      : mask_(capacity_pow2 - 1), slots_(std::make_unique<T[]>(capacity_pow2)) {}

  // Producer thread only.
  bool push(const T& record) {
    const std::size_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_cache_ > mask_) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (head - tail_cache_ > mask_) return false;
    }
    slots_[head & mask_] = record;
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  // Consumer side: true when everything pushed so far has been drained.
  bool empty() const { return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_relaxed); }

  // Consumer only: calls fn(record) for everything pushed so far; returns how many.
  template <typename Fn>
  std::size_t drain(Fn&& fn) {
    const std::size_t tail = tail_.load(std::memory_order_relaxed);
    const std::size_t head = head_.load(std::memory_order_acquire);
    for (std::size_t i = tail; i != head; ++i) fn(slots_[i & mask_]);
    tail_.store(head, std::memory_order_release);
    return head - tail;
  }

 private:
  const std::size_t mask_;
  std::unique_ptr<T[]> slots_;
  alignas(64) std::atomic<std::size_t> head_{0};  // written by the producer
  std::size_t tail_cache_ = 0;                     // producer's last view of tail_
  alignas(64) std::atomic<std::size_t> tail_{0};  // written by the consumer
};

}  // namespace perfscope
