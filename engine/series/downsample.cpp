#include "engine/series/downsample.hpp"

#include <algorithm>

namespace perfscope {

TimestampNs bucket_width(TimestampNs from_ns, TimestampNs to_ns, std::size_t max_points) {
  if (max_points == 0 || to_ns <= from_ns) return 1;
  TimestampNs span = to_ns - from_ns + 1;
  TimestampNs n = static_cast<TimestampNs>(max_points);
  return std::max<TimestampNs>(1, (span + n - 1) / n);
}

void BucketGrid::merge(std::int64_t index, double min, double max, double sum, std::uint64_t count) {
  auto [it, fresh] = cells_.try_emplace(index);
  Bucket& b = it->second;
  if (fresh) {
    b = Bucket{from_ + index * width_, min, max, sum, count};
    return;
  }
  b.min = std::min(b.min, min);
  b.max = std::max(b.max, max);
  b.sum += sum;
  b.count += count;
}

void BucketGrid::add(const Sample& s) { merge(index_of(s.ts_ns), s.value, s.value, s.value, 1); }

void BucketGrid::add(const Bucket& partial) {
  if (partial.count == 0) return;
  merge(index_of(partial.start_ns), partial.min, partial.max, partial.sum, partial.count);
}

std::vector<Bucket> BucketGrid::buckets() const {
  std::vector<Bucket> out;
  out.reserve(cells_.size());
  for (const auto& [index, bucket] : cells_) out.push_back(bucket);
  return out;
}

}  // namespace perfscope
