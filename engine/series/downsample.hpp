// Downsampling of long time ranges into fixed-width buckets with min, max, avg and count.
// Buckets are aligned to the query's start, so partial buckets computed by SQLite for older
// data and by memory for recent data merge exactly. Value types; not shared between threads.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "engine/series/series.hpp"

namespace perfscope {

struct Bucket {
  TimestampNs start_ns = 0;
  double min = 0;
  double max = 0;
  double sum = 0;
  std::uint64_t count = 0;
  double avg() const { return count ? sum / static_cast<double>(count) : 0; }
};

// Width so that [from, to] spans at most max_points buckets (at least 1 ns).
TimestampNs bucket_width(TimestampNs from_ns, TimestampNs to_ns, std::size_t max_points);

class BucketGrid {
 public:
  BucketGrid(TimestampNs from_ns, TimestampNs width_ns) : from_(from_ns), width_(width_ns) {}

  std::int64_t index_of(TimestampNs ts_ns) const { return (ts_ns - from_) / width_; }
  void add(const Sample& s);
  // Merges a partial bucket whose start_ns lies in the grid cell to merge into.
  void add(const Bucket& partial);
  std::vector<Bucket> buckets() const;

 private:
  void merge(std::int64_t index, double min, double max, double sum, std::uint64_t count);

  TimestampNs from_;
  TimestampNs width_;
  std::map<std::int64_t, Bucket> cells_;
};

}  // namespace perfscope
