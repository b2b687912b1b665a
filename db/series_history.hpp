// SeriesHistory: one view over a series' whole history — the newest samples from the
// in-memory SeriesStore, older ones from SQLite — so callers never need to know where a
// sample lives. Long ranges come back downsampled into min/max/avg buckets.
//
// Thread-safety: safe from any thread (both sources are). Blocks on SQLite: call it from a
// worker thread, never from a network event loop.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "db/sample_reader.hpp"
#include "engine/series/downsample.hpp"
#include "engine/series/series_store.hpp"

namespace perfscope::db {

struct SeriesInfo {
  SeriesKey key;
  MetricFamily family;
  std::optional<Sample> latest;
  bool live = false;  // collected by this process since it started
};

struct HistoryQuery {
  std::string name;  // a family name; `*` and `?` globs allowed
  Labels matchers;   // label = value equality, all must hold
  TimestampNs from_ns = 0;
  TimestampNs to_ns = 0;
  std::size_t max_points = 1000;
};

struct SeriesData {
  SeriesInfo info;
  bool downsampled = false;
  TimestampNs bucket_ns = 0;
  std::vector<Sample> samples;  // when !downsampled
  std::vector<Bucket> buckets;  // when downsampled
  std::size_t from_memory = 0;  // raw samples that came from memory
  std::size_t from_database = 0;
  std::optional<std::int64_t> db_id;  // the stored series, when the database has it
};

class SeriesHistory {
 public:
  // reader may be null (no database): memory only.
  SeriesHistory(const SeriesStore& store, const SampleReader* reader) : store_(store), reader_(reader) {}

  Result<std::vector<SeriesInfo>> list() const;
  Result<std::vector<SeriesData>> query(const HistoryQuery& q) const;

 private:
  struct Located {
    SeriesInfo info;
    std::optional<SeriesId> memory_id;
    std::optional<std::int64_t> db_id;
  };
  Result<std::vector<Located>> locate(bool with_latest) const;

  const SeriesStore& store_;
  const SampleReader* reader_;
};

}  // namespace perfscope::db
