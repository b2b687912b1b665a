// SeriesStore: the in-memory history of every series, one ring buffer of the newest
// `capacity` samples per series. Collectors' readings arrive through the Sampler; the
// server and the history queries read copies out.
//
// Thread-safety: every method is safe to call from any thread (one internal mutex; readers
// copy what they need while holding it, so no reference into the store escapes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/series/series.hpp"

namespace perfscope {

using SeriesId = std::uint32_t;

// One sampling pass: every reading taken at one instant, by series id.
struct SampleBatch {
  TimestampNs ts_ns = 0;
  std::vector<std::pair<SeriesId, double>> values;
};

// Fixed-capacity ring of samples in time order. Grows on demand up to its capacity so an
// idle series costs little memory, doubling but never past the capacity: a full ring holds
// capacity × 16 bytes. Not thread-safe on its own: SeriesStore guards it.
class SampleRing {
 public:
  explicit SampleRing(std::size_t capacity) : capacity_(capacity) {}

  // Adds a sample in time order. Producers send late and interleaved samples (jitter, several
  // producers of one series), so a late sample is inserted in its place, moving past at most
  // 256 later ones (a bound on one push's cost under the store's lock). When the ring is full,
  // the oldest gives way. A sample that is not kept — one further back than that, older than a
  // full ring, or older than complete_from() — returns false: the database has it.
  bool push(Sample s);
  // The ring holds every sample pushed at or after this time (none before its first push);
  // earlier ones — given way, refused, or from before the ring — only the database answers.
  // Held samples before it (equal times around one that gave way) are not read from memory.
  std::optional<TimestampNs> complete_from() const { return complete_from_; }
  std::size_t size() const { return buf_.size(); }
  std::size_t bytes() const { return buf_.capacity() * sizeof(Sample); }  // what it holds in the heap
  // i-th oldest sample, 0 <= i < size().
  const Sample& at(std::size_t i) const {
    std::size_t j = head_ + i;
    return buf_[j >= buf_.size() ? j - buf_.size() : j];
  }
  Sample& at(std::size_t i) { return const_cast<Sample&>(std::as_const(*this).at(i)); }
  // Index of the first sample with ts_ns >= ts (size() if none); samples are time-ordered.
  std::size_t lower_bound(TimestampNs ts) const;

 private:
  // Memory no longer answers for `ts` and anything before it.
  void give_up_through(TimestampNs ts);

  std::size_t capacity_;
  std::size_t head_ = 0;  // index of the oldest sample once the ring is full
  std::vector<Sample> buf_;
  std::optional<TimestampNs> complete_from_;
};

struct SeriesSnapshot {
  SeriesId id = 0;
  SeriesKey key;
  std::string canonical;
  std::optional<Sample> latest;
  std::size_t held = 0;  // samples currently in memory
};

// Samples of one series within a time range from memory, plus the time from which memory
// holds all of them, so a caller can tell which older part must come from the database.
struct SeriesRange {
  std::vector<Sample> samples;
  std::optional<TimestampNs> complete_from;  // absent: memory holds none; the database has all
};

class SeriesStore {
 public:
  explicit SeriesStore(std::size_t capacity_per_series);
  SeriesStore(const SeriesStore&) = delete;
  SeriesStore& operator=(const SeriesStore&) = delete;

  // Registers a metric family's unit, type and help; later declarations of a name replace it.
  void declare(const MetricFamily& family);
  std::optional<MetricFamily> family(const std::string& name) const;
  std::vector<MetricFamily> families() const;

  // The id of a series, created on first use. Ids are dense and never reused.
  SeriesId intern(const SeriesKey& key);
  std::optional<SeriesId> find(const std::string& canonical) const;
  std::optional<SeriesSnapshot> snapshot(SeriesId id) const;
  std::vector<SeriesSnapshot> list() const;
  std::size_t series_count() const;
  // What the rings hold in the heap, and their bound: a full ring for every series. A ring
  // fills at its series' rate (a series scraped every 2 s takes hours to fill 10,000 samples),
  // so the heap grows toward this bound long after start; /api/v1/info shows both.
  std::size_t held_bytes() const;
  std::size_t held_limit_bytes() const;

  // Frees the in-memory history of a series that will get no more samples (its id and key stay;
  // a sample that does come later starts a new ring). Unknown keys are ignored.
  void release(const SeriesKey& key);

  void append(SeriesId id, TimestampNs ts_ns, double value);
  void append(const SampleBatch& batch);
  SeriesRange read(SeriesId id, TimestampNs from_ns, TimestampNs to_ns) const;

  std::size_t capacity_per_series() const { return capacity_; }

 private:
  struct Entry {
    SeriesKey key;
    std::string canonical;
    SampleRing ring;
  };
  SeriesSnapshot snapshot_locked(SeriesId id) const;

  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::deque<Entry> entries_;  // indexed by SeriesId; deque keeps references stable
  std::unordered_map<std::string, SeriesId> by_canonical_;
  std::unordered_map<std::string, MetricFamily> families_;
};

}  // namespace perfscope
