// Kernel executions on disk, in chunks. A traced GPU program reports hundreds of thousands
// of kernels a second; one SQLite row plus two index entries per kernel costs microseconds
// each. So a kernel's constant part — name, device, variant, stream, launch configuration,
// tags — is a row of `kernel_series`, and each commit stores one `kernel_chunks` row per
// series holding its executions packed as varints, beside the aggregates (count, total, min,
// max duration; first and last end time) that window queries use without unpacking chunks
// lying wholly inside the window.
//
// Packed form, per execution: a flag byte (1: launch_start_ns present, 2: launch_end_ns
// present), zigzag varint of start_ns minus the previous execution's start_ns (0 before the
// first), varint of end_ns − start_ns, then zigzag varints of launch_start_ns − start_ns and
// launch_end_ns − start_ns when present. Sentinels in kernel_series: grid and block 0 when
// not reported, shared_mem_bytes, registers_per_thread, flops and bytes −1, dtype ''.
//
// KernelChunkWriter is single-threaded (the db writer thread, or a migration).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "db/internal/sqlite.hpp"
#include "db/time_range.hpp"
#include "engine/events/events.hpp"

namespace perfscope::db {

struct KernelTiming {
  TimestampNs start_ns = 0;
  TimestampNs end_ns = 0;
  std::optional<TimestampNs> launch_start_ns;
  std::optional<TimestampNs> launch_end_ns;
};

// Executions of one series being packed.
class KernelChunk {
 public:
  void add(const KernelTiming& t);
  void clear();

  std::size_t count() const { return count_; }
  std::int64_t total_ns() const { return total_ns_; }
  std::int64_t min_ns() const { return min_ns_; }
  std::int64_t max_ns() const { return max_ns_; }
  TimestampNs first_end_ns() const { return first_end_ns_; }
  TimestampNs last_end_ns() const { return last_end_ns_; }
  std::string_view data() const { return data_; }

 private:
  std::string data_;
  std::size_t count_ = 0;
  TimestampNs prev_start_ = 0;
  std::int64_t total_ns_ = 0, min_ns_ = 0, max_ns_ = 0;
  TimestampNs first_end_ns_ = 0, last_end_ns_ = 0;
};

// Unpacks `count` executions; fn(const KernelTiming&) for each. False when the data is
// corrupt (then fn may have seen a prefix).
template <typename Fn>
bool unpack_kernel_chunk(std::string_view data, std::int64_t count, Fn&& fn);
// The same, for the executions that end inside `range` only.
template <typename Fn>
bool unpack_kernel_chunk_in_range(std::string_view data, std::int64_t count, const TimeRange& range, Fn&& fn) {
  return unpack_kernel_chunk(data, count, [&](const KernelTiming& t) {
    if (t.end_ns >= range.from_ns && t.end_ns <= range.to_ns) fn(t);
  });
}

// Columns of kernel_series that read_kernel_series() expects, in order, for a SELECT list
// (table alias `s`).
inline constexpr const char* kKernelSeriesColumns =
    "s.name, s.device, s.variant, s.stream, s.grid_x, s.grid_y, s.grid_z, s.block_x, s.block_y, s.block_z, "
    "s.shared_mem_bytes, s.registers_per_thread, s.flops, s.bytes, s.tags, s.dtype";
inline constexpr int kKernelSeriesColumnCount = 16;
// A kernel event's constant part from the row, starting at column `first`.
KernelEvent read_kernel_series(const Statement& row, int first);

// Groups kernel events into chunks and writes them inside the caller's transaction.
class KernelChunkWriter {
 public:
  static Result<std::unique_ptr<KernelChunkWriter>> prepare(Connection& conn);

  // Writes the series' chunk early when it reaches kMaxChunk executions.
  Status add(const KernelEvent& e);
  // Writes every open chunk.
  Status flush();
  // After a rollback: the series rows it inserted, and its open chunks, are gone.
  void reset();

  static constexpr std::size_t kMaxChunk = 4096;

 private:
  struct Open {
    std::int64_t series_id = -1;
    KernelChunk chunk;
  };
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  KernelChunkWriter(Statement insert_series, Statement select_series, Statement insert_chunk);
  Status resolve_series(const KernelEvent& e, Open& open);
  Status write_chunk(Open& open);

  Statement insert_series_, select_series_, insert_chunk_;
  std::unordered_map<std::string, Open, KeyHash, std::equal_to<>> open_;  // by identity bytes
  std::vector<Open*> dirty_;  // series with executions since the last flush (nodes are stable)
  std::string key_;  // scratch for the identity of the event being added
};

// ---- implementation of the template ----

namespace chunk_detail {
inline bool read_varint(std::string_view data, std::size_t& pos, std::uint64_t& out) {
  out = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= data.size()) return false;
    auto b = static_cast<unsigned char>(data[pos++]);
    out |= static_cast<std::uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}
inline std::int64_t unzigzag(std::uint64_t v) { return static_cast<std::int64_t>((v >> 1) ^ (~(v & 1) + 1)); }
}  // namespace chunk_detail

template <typename Fn>
bool unpack_kernel_chunk(std::string_view data, std::int64_t count, Fn&& fn) {
  using chunk_detail::read_varint;
  using chunk_detail::unzigzag;
  std::size_t pos = 0;
  TimestampNs prev = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    if (pos >= data.size()) return false;
    auto flags = static_cast<unsigned char>(data[pos++]);
    std::uint64_t delta = 0, duration = 0;
    if (!read_varint(data, pos, delta) || !read_varint(data, pos, duration)) return false;
    KernelTiming t;
    t.start_ns = static_cast<TimestampNs>(static_cast<std::uint64_t>(prev) + static_cast<std::uint64_t>(unzigzag(delta)));
    t.end_ns = t.start_ns + static_cast<TimestampNs>(duration);
    prev = t.start_ns;
    std::uint64_t v = 0;
    if (flags & 1) {
      if (!read_varint(data, pos, v)) return false;
      t.launch_start_ns = t.start_ns + unzigzag(v);
    }
    if (flags & 2) {
      if (!read_varint(data, pos, v)) return false;
      t.launch_end_ns = t.start_ns + unzigzag(v);
    }
    fn(static_cast<const KernelTiming&>(t));
  }
  return pos == data.size();
}

}  // namespace perfscope::db
