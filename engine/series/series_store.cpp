#include "engine/series/series_store.hpp"

#include <algorithm>
#include <stdexcept>

namespace perfscope {

namespace {
// How far back a late sample may be moved into place. Jitter and interleaved producers put a
// sample a few places back; a batch of samples each far back (hostile, or a producer
// replaying old data) would otherwise cost the whole ring per sample under the store's lock.
// Further back than this, a sample is refused like one older than the ring, and memory stops
// answering for its time: reads take that part from the database, which has it.
constexpr std::size_t kMaxLateShift = 256;
}  // namespace

void SampleRing::give_up_through(TimestampNs ts) {
  if (!complete_from_ || *complete_from_ <= ts) complete_from_ = ts + 1;
}

bool SampleRing::push(Sample s) {
  if (!complete_from_) complete_from_ = s.ts_ns;  // the first sample: what came before is not here
  if (s.ts_ns < *complete_from_) return false;
  const bool late = !buf_.empty() && s.ts_ns < at(buf_.size() - 1).ts_ns;
  if (late) {
    const std::size_t place = lower_bound(s.ts_ns + 1);  // after the held samples of its time
    // Too far back, or the very sample a full ring would let go.
    if (buf_.size() - place > kMaxLateShift || (buf_.size() == capacity_ && place == 0)) {
      give_up_through(s.ts_ns);
      return false;
    }
  }
  if (buf_.size() < capacity_) {
    if (buf_.size() == buf_.capacity()) buf_.reserve(std::min(capacity_, std::max<std::size_t>(16, 2 * buf_.size())));
    buf_.push_back(s);
  } else {
    give_up_through(at(0).ts_ns);
    buf_[head_] = s;
    head_ = head_ + 1 == capacity_ ? 0 : head_ + 1;
  }
  if (late) {
    // Moves back to its place; equal timestamps keep their arrival order.
    for (std::size_t i = buf_.size() - 1; i > 0 && at(i - 1).ts_ns > at(i).ts_ns; --i) std::swap(at(i - 1), at(i));
  }
  return true;
}

std::size_t SampleRing::lower_bound(TimestampNs ts) const {
  std::size_t lo = 0, hi = buf_.size();
  while (lo < hi) {
    std::size_t mid = lo + (hi - lo) / 2;
    if (at(mid).ts_ns < ts) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

SeriesStore::SeriesStore(std::size_t capacity_per_series) : capacity_(capacity_per_series) {
  if (capacity_ == 0) throw std::invalid_argument("history buffer size must be positive");
}

void SeriesStore::declare(const MetricFamily& family) {
  std::lock_guard lock(mu_);
  families_[family.name] = family;
}

std::optional<MetricFamily> SeriesStore::family(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return std::nullopt;
  return it->second;
}

std::vector<MetricFamily> SeriesStore::families() const {
  std::lock_guard lock(mu_);
  std::vector<MetricFamily> out;
  out.reserve(families_.size());
  for (const auto& [name, family] : families_) out.push_back(family);
  return out;
}

SeriesId SeriesStore::intern(const SeriesKey& key) {
  std::string canonical = key.canonical();
  std::lock_guard lock(mu_);
  auto [it, inserted] = by_canonical_.try_emplace(canonical, static_cast<SeriesId>(entries_.size()));
  if (inserted) entries_.push_back(Entry{key, std::move(canonical), SampleRing(capacity_)});
  return it->second;
}

std::optional<SeriesId> SeriesStore::find(const std::string& canonical) const {
  std::lock_guard lock(mu_);
  auto it = by_canonical_.find(canonical);
  if (it == by_canonical_.end()) return std::nullopt;
  return it->second;
}

SeriesSnapshot SeriesStore::snapshot_locked(SeriesId id) const {
  const Entry& e = entries_[id];
  SeriesSnapshot s{id, e.key, e.canonical, std::nullopt, e.ring.size()};
  if (e.ring.size() > 0) s.latest = e.ring.at(e.ring.size() - 1);
  return s;
}

std::optional<SeriesSnapshot> SeriesStore::snapshot(SeriesId id) const {
  std::lock_guard lock(mu_);
  if (id >= entries_.size()) return std::nullopt;
  return snapshot_locked(id);
}

std::vector<SeriesSnapshot> SeriesStore::list() const {
  std::lock_guard lock(mu_);
  std::vector<SeriesSnapshot> out;
  out.reserve(entries_.size());
  for (SeriesId id = 0; id < entries_.size(); ++id) out.push_back(snapshot_locked(id));
  return out;
}

std::size_t SeriesStore::series_count() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

std::size_t SeriesStore::held_bytes() const {
  std::lock_guard lock(mu_);
  std::size_t total = 0;
  for (const Entry& e : entries_) total += e.ring.bytes();
  return total;
}

std::size_t SeriesStore::held_limit_bytes() const {
  std::lock_guard lock(mu_);
  return entries_.size() * capacity_ * sizeof(Sample);
}

void SeriesStore::release(const SeriesKey& key) {
  const std::string canonical = key.canonical();
  std::lock_guard lock(mu_);
  auto it = by_canonical_.find(canonical);
  if (it != by_canonical_.end()) entries_[it->second].ring = SampleRing(capacity_);
}

void SeriesStore::append(SeriesId id, TimestampNs ts_ns, double value) {
  std::lock_guard lock(mu_);
  if (id < entries_.size()) entries_[id].ring.push({ts_ns, value});
}

void SeriesStore::append(const SampleBatch& batch) {
  std::lock_guard lock(mu_);
  for (const auto& [id, value] : batch.values) {
    if (id < entries_.size()) entries_[id].ring.push({batch.ts_ns, value});
  }
}

SeriesRange SeriesStore::read(SeriesId id, TimestampNs from_ns, TimestampNs to_ns) const {
  std::lock_guard lock(mu_);
  SeriesRange out;
  if (id >= entries_.size()) return out;
  const SampleRing& ring = entries_[id].ring;
  if (ring.size() == 0) return out;
  out.complete_from = ring.complete_from();
  for (std::size_t i = ring.lower_bound(std::max(from_ns, *out.complete_from)); i < ring.size(); ++i) {
    const Sample& s = ring.at(i);
    if (s.ts_ns > to_ns) break;
    out.samples.push_back(s);
  }
  return out;
}

}  // namespace perfscope
