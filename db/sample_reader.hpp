// SampleReader: read-only queries over the samples database, for the API's worker threads.
// Keeps a small pool of read connections so concurrent queries do not serialize on one.
//
// Thread-safety: every method is safe to call from any thread.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/series/downsample.hpp"
#include "engine/series/series.hpp"

namespace perfscope::db {

class ConnectionPool;  // db/internal/connection_pool.hpp

struct StoredSeries {
  std::int64_t db_id = 0;
  SeriesKey key;
  MetricFamily family;
  std::optional<Sample> latest;
};

class SampleReader {
 public:
  // The database must exist and be migrated (the writer opens it first).
  static Result<std::unique_ptr<SampleReader>> open(const std::string& path);
  ~SampleReader();
  SampleReader(const SampleReader&) = delete;
  SampleReader& operator=(const SampleReader&) = delete;

  // Every stored series, optionally with its newest sample.
  Result<std::vector<StoredSeries>> list_series(bool with_latest) const;
  Result<std::int64_t> count(std::int64_t db_id, TimestampNs from_ns, TimestampNs to_ns) const;
  Result<std::vector<Sample>> read(std::int64_t db_id, TimestampNs from_ns, TimestampNs to_ns) const;
  // Partial buckets aligned to from_ns, each stamped with the earliest sample time in it.
  Result<std::vector<Bucket>> read_buckets(std::int64_t db_id, TimestampNs from_ns, TimestampNs to_ns,
                                           TimestampNs width_ns) const;
  // The same from the rollups of samples retention retired: rows of the largest tier no
  // wider than a bucket starting in [from_ns, to_ns], each stamped with its start (count,
  // sum, min and max are exact).
  Result<std::vector<Bucket>> read_rollup_buckets(std::int64_t db_id, TimestampNs from_ns, TimestampNs to_ns,
                                                  TimestampNs width_ns) const;
  // Raw rows older than this have been rolled up by retention (0: none).
  Result<TimestampNs> retired_before() const;

 private:
  explicit SampleReader(std::string path);

  std::unique_ptr<ConnectionPool> pool_;
};

}  // namespace perfscope::db
