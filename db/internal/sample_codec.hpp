// Sample chunk codec: one series' samples as a bit stream, lossless to the bit — every
// timestamp and every value's 64 bits come back as they went in.
//
// Timestamps are stored one of two ways:
//  - on the sampling passes: every series of a sampler pass shares the pass's timestamp, so
//    the pass times are stored once (a pass chunk, `PassTimes`) and a series chunk holds only
//    which passes it has a sample in (one bit each when it misses none);
//  - explicitly: the first time, then delta-of-deltas (custom samples, converted rows).
//
// Values take whichever of these codings is smallest for the chunk, each exact or escaped
// (the value's raw 64 bits) sample by sample:
//  - xor: Gorilla's XOR against the previous value (any double);
//  - scaled: an integer N with the value = N × M or N / D (bytes, counts, percent / 100,
//    milliwatts / 1000, microseconds / 1e6, MHz × 1e6, a ratio to 0.01 %, GB/s, TFLOP/s), N coded by first or second differences;
//  - rate: N / D over the seconds since the previous pass — the value a collector computes as
//    a counter's increase over the elapsed time, coded by N itself or its differences;
//  - ratio: p / q for small integers (a busy fraction of jiffies), q coded by its difference.
// A collector's derived values are the costly ones as doubles (52 bits of mantissa each time
// they change) and cheap as the integers they were computed from.
//
// Layout: byte 0 — bit 0: timestamps on passes; bit 1: on every pass from the first (no gap
// bits); bit 2: one value throughout (stored once); other bits reserved (0). Byte 1 — bits 0–1
// value coding, bit 2 order, bits 3–6 scale index. Then the bit stream, most significant bit
// first, zero-padded to a byte: the first pass's index and the gaps (on passes) or the first
// time and Rice-coded delta-of-deltas (explicit); then the values (XOR, or a 6-bit Rice
// parameter and the integers, 63 meaning the bucket code).
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/series/series.hpp"
#include "engine/base/status.hpp"

namespace perfscope::db {

// The times of consecutive sampling passes, and the pass just before the first when it is
// known (a rate's first interval needs it).
struct PassTimes {
  std::optional<TimestampNs> before;
  std::vector<TimestampNs> times;
};

enum class ValueCoding : std::uint8_t { kXor = 0, kScaled = 1, kRate = 2, kRatio = 3 };

struct ChunkCoding {
  ValueCoding values = ValueCoding::kXor;
  std::uint8_t order = 0;  // scaled: 0 first, 1 second differences; rate: 0 N itself, 1 differences
  std::uint8_t scale = 0;  // index into the scale table (scaled, rate)
  bool operator==(const ChunkCoding&) const = default;
};

struct EncodedChunk {
  std::string data;
  ChunkCoding coding;
  std::size_t escapes = 0;  // values stored raw
};

// Encodes samples (strictly increasing times). With `passes`, pass_index[i] is the index in
// passes->times of sample i (strictly increasing). With `coding`, only that coding is tried
// (a chunk rewritten while open keeps the one chosen before); otherwise the smallest wins.
EncodedChunk encode_samples(std::span<const Sample> samples, const PassTimes* passes,
                            std::span<const std::uint32_t> pass_index, std::optional<ChunkCoding> coding = {});
// Whether decoding needs the pass chunk the samples lie on.
bool chunk_on_passes(std::string_view data);
// Appends `count` samples to out; an error when the data is corrupt (then out may hold a prefix).
Status decode_samples(std::string_view data, std::size_t count, const PassTimes* passes, std::vector<Sample>& out);

std::string encode_pass_times(const PassTimes& passes);
Status decode_pass_times(std::string_view data, std::size_t count, PassTimes& out);

}  // namespace perfscope::db
