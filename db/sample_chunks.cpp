#include "db/internal/sample_chunks.hpp"

#include <algorithm>
#include <bit>
#include <string>

namespace perfscope::db {
namespace {

constexpr const char* kChunkColumns = "start_ns, 0, count, data";
constexpr const char* kPassColumns = "start_ns, end_ns, count, data";

// The chunk the statement's next row is, if any.
Result<std::optional<StoredChunk>> step_chunk(Statement& st) {
  auto row = st.step();
  if (!row.ok()) {
    st.reset();
    return row.status();
  }
  std::optional<StoredChunk> out;
  if (*row) {
    out = StoredChunk{st.column_int64(0), st.column_int64(1), st.column_int64(2), std::string(st.column_blob(3))};
  }
  st.reset();
  return out;
}

Result<Statement> prepare_sql(Connection& conn, const std::string& sql) { return conn.prepare(sql.c_str()); }

// Inserts s in time order into samples; the same time keeps the new value.
void insert_sample(std::vector<Sample>& samples, const Sample& s) {
  auto it = std::lower_bound(samples.begin(), samples.end(), s.ts_ns,
                             [](const Sample& a, TimestampNs t) { return a.ts_ns < t; });
  if (it != samples.end() && it->ts_ns == s.ts_ns) {
    it->value = s.value;
  } else {
    samples.insert(it, s);
  }
}

}  // namespace

// ---- writer ----

struct SampleChunkWriter::Open {
  std::int64_t series_id = 0;
  std::vector<Sample> samples;
  std::vector<std::uint32_t> index;  // pass of each sample, while on_passes
  bool on_passes = false;
  std::optional<TimestampNs> stored_start;  // the key its row was last written under
  TimestampNs limit_ns = INT64_MAX;         // the next stored chunk's start: it ends before
  std::optional<ChunkCoding> coding;        // kept while open; chosen anew when it closes
  bool dirty = false;
  bool one_value = true;  // every sample has the first one's value, to the bit
};

namespace {

bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

// After an insertion anywhere: whether the chunk still holds one value.
void recheck_one_value(std::vector<Sample>& samples, bool& one_value) {
  one_value = std::all_of(samples.begin(), samples.end(), [&](const Sample& x) { return same_bits(x.value, samples.front().value); });
}

}  // namespace

struct SampleChunkWriter::Statements {
  Statement upsert_chunk, delete_chunk, at_or_before, after, upsert_passes;
};

Result<std::unique_ptr<SampleChunkWriter>> SampleChunkWriter::prepare(Connection& conn, SampleChunkLimits limits) {
  auto st = std::make_unique<Statements>();
  const std::string columns = kChunkColumns;
  const std::pair<std::string, Statement*> sql[] = {
      {"INSERT OR REPLACE INTO sample_chunks(series_id, start_ns, count, data) VALUES(?1, ?2, ?3, ?4)",
       &st->upsert_chunk},
      {"DELETE FROM sample_chunks WHERE series_id = ?1 AND start_ns = ?2", &st->delete_chunk},
      {"SELECT " + columns + " FROM sample_chunks WHERE series_id = ?1 AND start_ns <= ?2 ORDER BY start_ns DESC LIMIT 1",
       &st->at_or_before},
      {"SELECT " + columns + " FROM sample_chunks WHERE series_id = ?1 AND start_ns > ?2 ORDER BY start_ns LIMIT 1",
       &st->after},
      {"INSERT OR REPLACE INTO sample_passes(start_ns, end_ns, count, data) VALUES(?1, ?2, ?3, ?4)", &st->upsert_passes},
  };
  for (const auto& [text, out] : sql) {
    PERFSCOPE_ASSIGN_OR_RETURN(auto s, prepare_sql(conn, text));
    *out = std::move(s);
  }
  std::unique_ptr<SampleChunkWriter> w(new SampleChunkWriter(conn, std::move(st), limits));
  PERFSCOPE_ASSIGN_OR_RETURN(auto newest, conn.prepare("SELECT MAX(end_ns) FROM sample_passes"));
  PERFSCOPE_ASSIGN_OR_RETURN(auto row, newest.step());
  if (row && !newest.column_is_null(0)) w->newest_pass_ns_ = newest.column_int64(0);
  return w;
}

SampleChunkWriter::SampleChunkWriter(Connection& conn, std::unique_ptr<Statements> st, SampleChunkLimits limits)
    : st_(std::move(st)), stored_(conn), limits_(limits) {}

SampleChunkWriter::~SampleChunkWriter() = default;

bool SampleChunkWriter::full(const Open& open) const {
  const std::size_t n = open.samples.size();
  return (n >= limits_.max_samples && !open.one_value) || n >= limits_.max_passes ||
         open.samples.back().ts_ns - open.samples.front().ts_ns >= limits_.max_span_ns;
}

Status SampleChunkWriter::begin_pass(TimestampNs ts_ns) {
  current_pass_ns_ = ts_ns;
  // Pass chunks never overlap: a clock stepped back makes its passes' samples explicit.
  pass_valid_ = ts_ns > newest_pass_ns_;
  if (!pass_valid_) return Status();
  if (!passes_.times.empty() && (passes_.times.size() >= limits_.max_passes ||
                                 ts_ns - passes_.times.front() >= limits_.max_span_ns)) {
    if (Status s = close_pass_chunk(); !s.ok()) return s;
  }
  passes_.times.push_back(ts_ns);
  newest_pass_ns_ = ts_ns;
  passes_dirty_ = true;
  return Status();
}

Status SampleChunkWriter::close_pass_chunk() {
  // Every chunk on these passes closes with them.
  for (auto it = open_.begin(); it != open_.end();) {
    if (!it->second->on_passes) {
      ++it;
      continue;
    }
    if (Status s = write_open(*it->second, /*closing=*/true); !s.ok()) return s;
    it = open_.erase(it);
  }
  if (Status s = write_pass_chunk(); !s.ok()) return s;
  PassTimes next;
  next.before = passes_.times.back();
  passes_ = std::move(next);
  return Status();
}

Status SampleChunkWriter::write_pass_chunk() {
  if (passes_.times.empty() || !passes_dirty_) return Status();
  const std::string data = encode_pass_times(passes_);
  Status s = st_->upsert_passes.bind(1, passes_.times.front())
                 .bind(2, passes_.times.back())
                 .bind(3, static_cast<std::int64_t>(passes_.times.size()))
                 .bind_blob(4, data)
                 .run();
  if (s.ok()) passes_dirty_ = false;
  return s;
}

Status SampleChunkWriter::open_chunk(std::int64_t series_id, TimestampNs first_ns, Open*& out) {
  st_->after.bind(1, series_id).bind(2, first_ns);
  PERFSCOPE_ASSIGN_OR_RETURN(auto next, step_chunk(st_->after));
  auto open = std::make_unique<Open>();
  open->series_id = series_id;
  if (next) open->limit_ns = next->start_ns;
  out = open.get();
  open_[series_id] = std::move(open);
  return Status();
}

Status SampleChunkWriter::add_pass_sample(std::int64_t series_id, double value) {
  if (!pass_valid_) return add_sample(series_id, current_pass_ns_, value);
  const TimestampNs ts = current_pass_ns_;
  auto it = open_.find(series_id);
  Open* o = it == open_.end() ? nullptr : it->second.get();
  if (!o) {
    // A new chunk, unless a stored one already spans this time (a producer's sample from the future).
    PERFSCOPE_ASSIGN_OR_RETURN(auto spanned, stored_spans(series_id, ts));
    if (spanned) return merge_into_stored(series_id, ts, value);
    if (Status s = open_chunk(series_id, ts, o); !s.ok()) return s;
    o->on_passes = true;
  }
  if (!o->on_passes || ts >= o->limit_ns || (!o->samples.empty() && ts <= o->samples.back().ts_ns)) {
    return add_sample(series_id, ts, value);
  }
  o->one_value = o->one_value && (o->samples.empty() || same_bits(value, o->samples.front().value));
  o->samples.push_back({ts, value});
  o->index.push_back(static_cast<std::uint32_t>(passes_.times.size() - 1));
  o->dirty = true;
  if (!full(*o)) return Status();
  Status s = write_open(*o, /*closing=*/true);
  open_.erase(series_id);
  return s;
}

Status SampleChunkWriter::add_sample(std::int64_t series_id, TimestampNs ts_ns, double value) {
  auto it = open_.find(series_id);
  Open* o = it == open_.end() ? nullptr : it->second.get();
  // Past the open chunk's span limit: it closes, and the sample starts the next one.
  if (o && !o->samples.empty() && ts_ns > o->samples.back().ts_ns && ts_ns < o->limit_ns &&
      ts_ns - o->samples.front().ts_ns >= limits_.max_span_ns) {
    const TimestampNs limit = o->limit_ns;
    if (Status s = write_open(*o, /*closing=*/true); !s.ok()) return s;
    open_.erase(series_id);
    if (Status s = open_chunk(series_id, ts_ns, o); !s.ok()) return s;
    o->limit_ns = std::min(o->limit_ns, limit);
  }
  if (!o) {
    PERFSCOPE_ASSIGN_OR_RETURN(auto spanned, stored_spans(series_id, ts_ns));
    if (spanned) return merge_into_stored(series_id, ts_ns, value);
    if (Status s = open_chunk(series_id, ts_ns, o); !s.ok()) return s;
  }
  if (o->samples.empty() || (ts_ns >= o->samples.front().ts_ns && ts_ns < o->limit_ns)) {
    const bool on_a_pass = o->on_passes && std::any_of(o->samples.begin(), o->samples.end(),
                                                       [&](const Sample& s) { return s.ts_ns == ts_ns; });
    insert_sample(o->samples, {ts_ns, value});
    recheck_one_value(o->samples, o->one_value);
    if (o->on_passes && !on_a_pass) {
      // A time of its own: the chunk keeps explicit times from now on (its value coding is
      // chosen again when it is next written).
      o->on_passes = false;
      o->index.clear();
      o->coding.reset();
    }
    o->dirty = true;
    if (!full(*o)) return Status();
    Status s = write_open(*o, /*closing=*/true);
    open_.erase(series_id);
    return s;
  }
  return merge_into_stored(series_id, ts_ns, value);
}

Status SampleChunkWriter::decode_stored(const StoredChunk& c, std::vector<Sample>& out) {
  // On the open pass chunk (held here, newer than its row), or on a stored one.
  const bool on_open_passes = !passes_.times.empty() && c.start_ns >= passes_.times.front();
  return stored_.decode(c.start_ns, c.count, c.data, out, on_open_passes ? &passes_ : nullptr);
}

Result<bool> SampleChunkWriter::stored_spans(std::int64_t series_id, TimestampNs ts_ns) {
  st_->at_or_before.bind(1, series_id).bind(2, ts_ns);
  PERFSCOPE_ASSIGN_OR_RETURN(auto before, step_chunk(st_->at_or_before));
  if (!before) return false;
  std::vector<Sample> samples;
  if (Status s = decode_stored(*before, samples); !s.ok()) return s;
  return !samples.empty() && samples.back().ts_ns >= ts_ns;
}

Status SampleChunkWriter::merge_into_stored(std::int64_t series_id, TimestampNs ts_ns, double value) {
  auto it = open_.find(series_id);
  Open* o = it == open_.end() ? nullptr : it->second.get();
  const Sample sample{ts_ns, value};
  std::vector<Sample> samples;
  st_->at_or_before.bind(1, series_id).bind(2, ts_ns);
  PERFSCOPE_ASSIGN_OR_RETURN(auto before, step_chunk(st_->at_or_before));
  const bool is_open_row = before && o && o->stored_start == before->start_ns;
  if (before && !is_open_row) {
    if (Status s = decode_stored(*before, samples); !s.ok()) return s;
    if ((!samples.empty() && ts_ns <= samples.back().ts_ns) ||
        before->count < static_cast<std::int64_t>(limits_.max_samples)) {
      insert_sample(samples, sample);
      return rewrite_stored(series_id, before->start_ns, std::move(samples));
    }
  }
  // Before every chunk it could join: the next one takes it, the open one in memory.
  st_->after.bind(1, series_id).bind(2, ts_ns);
  PERFSCOPE_ASSIGN_OR_RETURN(auto after, step_chunk(st_->after));
  if (o && !o->samples.empty() && ts_ns < o->samples.front().ts_ns &&
      (!after || after->start_ns >= o->samples.front().ts_ns)) {
    insert_sample(o->samples, sample);
    recheck_one_value(o->samples, o->one_value);
    o->on_passes = false;
    o->index.clear();
    o->coding.reset();
    o->dirty = true;
    return Status();
  }
  if (after && !(o && o->stored_start == after->start_ns) &&
      after->count < static_cast<std::int64_t>(limits_.max_samples)) {
    samples.clear();
    if (Status s = decode_stored(*after, samples); !s.ok()) return s;
    insert_sample(samples, sample);
    return rewrite_stored(series_id, after->start_ns, std::move(samples));
  }
  return rewrite_stored(series_id, ts_ns, {sample});
}

Status SampleChunkWriter::rewrite_stored(std::int64_t series_id, TimestampNs old_start, std::vector<Sample> samples) {
  ++stats_.chunks_rewritten;
  if (Status s = st_->delete_chunk.bind(1, series_id).bind(2, old_start).run(); !s.ok()) return s;
  // Stays one chunk up to twice the limit; beyond, it is split.
  const std::size_t n = samples.size();
  const std::size_t pieces = n > 2 * limits_.max_samples ? (n + limits_.max_samples - 1) / limits_.max_samples : 1;
  for (std::size_t i = 0; i < pieces; ++i) {
    const std::span<const Sample> part = std::span<const Sample>(samples).subspan(
        i * n / pieces, (i + 1) * n / pieces - i * n / pieces);
    const std::string data = encode_samples(part, nullptr, {}).data;
    Status s = st_->upsert_chunk.bind(1, series_id)
                   .bind(2, part.front().ts_ns)
                   .bind(3, static_cast<std::int64_t>(part.size()))
                   .bind_blob(4, data)
                   .run();
    if (!s.ok()) return s;
  }
  return Status();
}

Status SampleChunkWriter::write_open(Open& open, bool closing) {
  if (open.samples.empty() || (!open.dirty && !closing)) return Status();
  const PassTimes* passes = open.on_passes ? &passes_ : nullptr;
  EncodedChunk e = encode_samples(open.samples, passes, open.index, closing ? std::nullopt : open.coding);
  open.coding = e.coding;
  const TimestampNs start = open.samples.front().ts_ns;
  if (open.stored_start && *open.stored_start != start) {
    if (Status s = st_->delete_chunk.bind(1, open.series_id).bind(2, *open.stored_start).run(); !s.ok()) return s;
  }
  Status s = st_->upsert_chunk.bind(1, open.series_id)
                 .bind(2, start)
                 .bind(3, static_cast<std::int64_t>(open.samples.size()))
                 .bind_blob(4, e.data)
                 .run();
  if (!s.ok()) return s;
  open.stored_start = start;
  open.dirty = false;
  if (closing) ++stats_.chunks_closed;
  return Status();
}

Status SampleChunkWriter::flush() {
  for (auto& [id, open] : open_) {
    if (Status s = write_open(*open, /*closing=*/false); !s.ok()) return s;
  }
  return write_pass_chunk();
}

void SampleChunkWriter::reset() {
  open_.clear();
  passes_ = PassTimes{};
  pass_valid_ = false;
  passes_dirty_ = false;
}

// ---- reader ----

struct SampleChunkReader::Statements {
  Statement chunks, latest, pass_chunk_for;
};

SampleChunkReader::SampleChunkReader(Connection& conn) : conn_(conn), st_(std::make_unique<Statements>()) {}
SampleChunkReader::~SampleChunkReader() = default;

Result<std::optional<StoredChunk>> SampleChunkReader::one_row(Statement& st, const std::string& sql, std::int64_t key) {
  if (Status s = prepare_once(st, sql); !s.ok()) return s;
  st.bind(1, key);
  return step_chunk(st);
}

Status SampleChunkReader::prepare_once(Statement& st, const std::string& sql) {
  if (prepared_.contains(&st)) return Status();
  PERFSCOPE_ASSIGN_OR_RETURN(auto s, prepare_sql(conn_, sql));
  st = std::move(s);
  prepared_.insert(&st);
  return Status();
}

Status SampleChunkReader::passes_for(TimestampNs chunk_start) {
  if (passes_start_ && chunk_start >= *passes_start_ && chunk_start <= passes_end_) return Status();
  auto p = one_row(st_->pass_chunk_for,
                   std::string("SELECT ") + kPassColumns + " FROM sample_passes WHERE start_ns <= ?1 ORDER BY start_ns DESC LIMIT 1",
                   chunk_start);
  if (!p.ok()) return p.status();
  if (!*p) return Status::internal("a sample chunk's sampling passes are missing");
  passes_start_.reset();
  if (Status s = decode_pass_times((*p)->data, static_cast<std::size_t>((*p)->count), passes_); !s.ok()) return s;
  passes_start_ = (*p)->start_ns;
  passes_end_ = (*p)->end_ns;
  return Status();
}

Status SampleChunkReader::decode(TimestampNs start_ns, std::int64_t count, std::string_view data,
                                 std::vector<Sample>& out, const PassTimes* passes) {
  if (chunk_on_passes(data) && !passes) {
    if (Status s = passes_for(start_ns); !s.ok()) return s;
    passes = &passes_;
  }
  const std::size_t before = out.size();
  if (Status s = decode_samples(data, static_cast<std::size_t>(count), passes, out); !s.ok()) return s;
  if (out.size() > before && out[before].ts_ns != start_ns) {
    return Status::internal("a sample chunk in the database does not start where its row says");
  }
  return Status();
}

Status SampleChunkReader::for_each_chunk(std::int64_t series_id, const TimeRange& range,
                                         const std::function<Status(const ChunkRow&)>& fn) {
  // Chunks never overlap: the last one starting at or before the range is the only one
  // starting before it that can reach into it.
  if (Status s = prepare_once(st_->chunks, std::string("SELECT ") + kChunkColumns +
                                               " FROM sample_chunks WHERE series_id = ?1 AND start_ns >= "
                                               "COALESCE((SELECT MAX(start_ns) FROM sample_chunks "
                                               "WHERE series_id = ?1 AND start_ns <= ?2), ?2) "
                                               "AND start_ns <= ?3 ORDER BY start_ns");
      !s.ok()) {
    return s;
  }
  Statement& st = st_->chunks;
  st.bind(1, series_id).bind(2, range.from_ns).bind(3, range.to_ns);
  Status failed;
  Status s = st.for_each_row([&](Statement& r) {
    if (!failed.ok()) return;
    failed = fn(ChunkRow{r.column_int64(0), r.column_int64(2), r.column_blob(3)});
  });
  // The statement is kept for the next call, whose binds SQLite refuses (SQLITE_MISUSE, the old
  // values kept) until it is reset: retention, reading series after series with one reader,
  // read only the first and then stalled.
  st.reset();
  if (!s.ok()) return s;
  return failed;
}

Status SampleChunkReader::scan(std::int64_t series_id, const TimeRange& range,
                               const std::function<void(std::span<const Sample>)>& fn) {
  std::vector<Sample> samples;
  return for_each_chunk(series_id, range, [&](const ChunkRow& c) -> Status {
    samples.clear();
    if (Status s = decode(c.start_ns, c.count, c.data, samples); !s.ok()) return s;
    auto first = samples.begin(), last = samples.end();
    if (c.start_ns < range.from_ns) {
      first = std::lower_bound(samples.begin(), samples.end(), range.from_ns,
                               [](const Sample& a, TimestampNs t) { return a.ts_ns < t; });
    }
    last = std::upper_bound(first, samples.end(), range.to_ns, [](TimestampNs t, const Sample& a) { return t < a.ts_ns; });
    if (first != last) fn(std::span<const Sample>(&*first, static_cast<std::size_t>(last - first)));
    return Status();
  });
}

Result<std::int64_t> SampleChunkReader::count(std::int64_t series_id, const TimeRange& range) {
  // A chunk that starts inside the range and is followed by one starting inside it too lies
  // wholly inside (chunks never overlap): its count, without decoding. Others are decoded.
  std::int64_t n = 0;
  std::vector<Sample> samples;
  std::optional<ChunkRow> pending;
  std::string pending_data;
  auto count_decoded = [&](const ChunkRow& c) -> Status {
    samples.clear();
    if (Status d = decode(c.start_ns, c.count, c.data, samples); !d.ok()) return d;
    n += std::count_if(samples.begin(), samples.end(),
                       [&](const Sample& x) { return x.ts_ns >= range.from_ns && x.ts_ns <= range.to_ns; });
    return Status();
  };
  Status s = for_each_chunk(series_id, range, [&](const ChunkRow& c) -> Status {
    if (pending) {
      if (pending->start_ns >= range.from_ns) {
        n += pending->count;
      } else if (Status d = count_decoded(*pending); !d.ok()) {
        return d;
      }
    }
    pending_data.assign(c.data);
    pending = ChunkRow{c.start_ns, c.count, pending_data};
    return Status();
  });
  if (!s.ok()) return s;
  if (pending) {
    if (Status d = count_decoded(*pending); !d.ok()) return d;
  }
  return n;
}

Result<std::optional<Sample>> SampleChunkReader::latest(std::int64_t series_id) {
  auto c = one_row(st_->latest,
                   std::string("SELECT ") + kChunkColumns + " FROM sample_chunks WHERE series_id = ?1 ORDER BY start_ns DESC LIMIT 1",
                   series_id);
  if (!c.ok()) return c.status();
  if (!*c) return std::optional<Sample>();
  std::vector<Sample> samples;
  if (Status s = decode((*c)->start_ns, (*c)->count, (*c)->data, samples); !s.ok()) return s;
  if (samples.empty()) return std::optional<Sample>();
  return std::optional<Sample>(samples.back());
}

}  // namespace perfscope::db
