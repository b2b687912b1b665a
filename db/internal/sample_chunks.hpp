// Sampled series on disk, in chunks. A row per sample cost 22 bytes on disk (key, value and
// index entry); so each series' samples are stored as `sample_chunks` rows of up to 120
// samples or 2 minutes, encoded by db/sample_codec (about half a byte a sample for host
// series), and the sampler's pass times once, as `sample_passes` rows, for every series
// sampled on them.
//
// Tables:
//   sample_passes(start_ns PRIMARY KEY, end_ns, count, data): consecutive pass times; passes
//     never overlap (a pass at or before the newest stored one is not a pass here);
//   sample_chunks(series_id, start_ns, count, data), PRIMARY KEY(series_id, start_ns):
//     a series' chunks never overlap, so where one ends is not stored (8 bytes a row); a
//     chunk on passes lies inside one pass chunk, the one with the greatest start not after
//     its own.
//
// The open chunks (the newest of each series, and of the passes) are rewritten in place at
// every commit, so a crash loses at most one commit interval. Samples at any time are
// accepted (a producer's late or out-of-order sample): one inside or next to a stored chunk
// is merged into it and the chunk re-encoded; the same time twice keeps the later value.
//
// SampleChunkWriter is single-threaded (the db writer thread, or a migration), working inside
// the caller's transaction. SampleChunkReader is one thread's, on one connection.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "db/internal/sample_codec.hpp"
#include "db/internal/sqlite.hpp"
#include "db/time_range.hpp"

namespace perfscope::db {

// A chunk closes at 120 samples or a 2-minute span, whichever comes first — except one whose
// samples are all one value (a total, a limit, an idle counter: a dozen bytes however long),
// which grows to max_passes. Pass chunks close at max_passes or the span: 2 minutes of passes
// at 100 ms, shared by every series.
struct SampleChunkLimits {
  std::size_t max_samples = 120;
  std::size_t max_passes = 1200;
  TimestampNs max_span_ns = 120'000'000'000;
};

// A row of sample_chunks (end_ns 0: not stored — the last sample's time) or of sample_passes.
struct StoredChunk {
  TimestampNs start_ns = 0, end_ns = 0;
  std::int64_t count = 0;
  std::string data;
};

// Reads chunks back. Blocks on SQLite.
class SampleChunkReader {
 public:
  explicit SampleChunkReader(Connection& conn);
  ~SampleChunkReader();

  // fn(samples) with the samples of [range] in time order, a chunk's worth at a time.
  Status scan(std::int64_t series_id, const TimeRange& range, const std::function<void(std::span<const Sample>)>& fn);
  // Samples in the range, counting whole chunks without decoding them.
  Result<std::int64_t> count(std::int64_t series_id, const TimeRange& range);
  Result<std::optional<Sample>> latest(std::int64_t series_id);

  // A chunk row as stored (data valid during the callback only).
  struct ChunkRow {
    TimestampNs start_ns = 0;
    std::int64_t count = 0;
    std::string_view data;
  };
  // fn(row) for the rows that reach into the range, in time order; stops at an error.
  Status for_each_chunk(std::int64_t series_id, const TimeRange& range, const std::function<Status(const ChunkRow&)>& fn);
  // Appends the chunk's samples to out; a chunk on passes is decoded on `passes` when given
  // (the writer's open pass chunk, newer than its row), else on its stored pass chunk.
  Status decode(TimestampNs start_ns, std::int64_t count, std::string_view data, std::vector<Sample>& out,
                const PassTimes* passes = nullptr);

 private:
  struct Statements;
  Status passes_for(TimestampNs chunk_start);
  Status prepare_once(Statement& st, const std::string& sql);
  // The one row `sql` (prepared into st once) gives with ?1 bound to key, if any.
  Result<std::optional<StoredChunk>> one_row(Statement& st, const std::string& sql, std::int64_t key);

  Connection& conn_;
  std::unique_ptr<Statements> st_;
  std::optional<TimestampNs> passes_start_;  // the pass chunk held in passes_
  TimestampNs passes_end_ = 0;
  PassTimes passes_;
  std::unordered_set<const Statement*> prepared_;
};

class SampleChunkWriter {
 public:
  // conn must outlive the writer (it reads stored chunks back on it).
  static Result<std::unique_ptr<SampleChunkWriter>> prepare(Connection& conn, SampleChunkLimits limits = {});
  ~SampleChunkWriter();

  // A sampling pass at ts_ns: the samples added with add_pass_sample until the next pass lie
  // on it.
  Status begin_pass(TimestampNs ts_ns);
  Status add_pass_sample(std::int64_t series_id, double value);
  // A sample at any time.
  Status add_sample(std::int64_t series_id, TimestampNs ts_ns, double value);
  // Writes every open chunk that changed since the last flush.
  Status flush();
  // After a rollback: what was written since the last commit is gone; open chunks start anew.
  void reset();

  struct Stats {
    std::uint64_t chunks_closed = 0;
    std::uint64_t chunks_rewritten = 0;  // stored chunks that took a late sample
  };
  Stats stats() const { return stats_; }

 private:
  struct Open;
  struct Statements;
  SampleChunkWriter(Connection& conn, std::unique_ptr<Statements> st, SampleChunkLimits limits);

  Status close_pass_chunk();
  Status write_open(Open& open, bool closing);
  Status write_pass_chunk();
  Status open_chunk(std::int64_t series_id, TimestampNs first_ns, Open*& out);
  Status merge_into_stored(std::int64_t series_id, TimestampNs ts_ns, double value);
  Status decode_stored(const StoredChunk& c, std::vector<Sample>& out);
  // Whether the stored chunk starting at or before ts_ns reaches it.
  Result<bool> stored_spans(std::int64_t series_id, TimestampNs ts_ns);
  Status rewrite_stored(std::int64_t series_id, TimestampNs old_start, std::vector<Sample> samples);
  bool full(const Open& open) const;

  std::unique_ptr<Statements> st_;
  SampleChunkReader stored_;  // decodes stored chunks (a late sample's merge)
  const SampleChunkLimits limits_;
  PassTimes passes_;                 // the open pass chunk
  bool pass_valid_ = false;          // the current pass is one of passes_
  bool passes_dirty_ = false;
  TimestampNs newest_pass_ns_ = 0;   // no pass at or before this (stored or written)
  TimestampNs current_pass_ns_ = 0;
  std::unordered_map<std::int64_t, std::unique_ptr<Open>> open_;
  Stats stats_;
};



}  // namespace perfscope::db
