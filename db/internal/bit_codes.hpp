// The bit-level codes of the sample chunks (db/sample_codec.cpp): a big-endian bit writer and
// reader, zigzag, the prefix bucket code for small signed integers, and Rice codes with their
// outlier escapes. Inline: they sit in the codec's innermost loops.
//
// Internal to db/.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace perfscope::db::bit_codes {

class BitWriter {
 public:
  void put(std::uint64_t bits, int n) {  // the low n bits of `bits`, n in 0..64
    if (n == 0) return;
    if (n < 64) bits &= (std::uint64_t{1} << n) - 1;
    const int room = 64 - used_;
    if (n < room) {
      acc_ = (acc_ << n) | bits;
      used_ += n;
      return;
    }
    // Fill the accumulator, emit it, keep the rest.
    const int rest = n - room;
    acc_ = room == 64 ? (bits >> rest) : (acc_ << room) | (bits >> rest);
    for (int i = 7; i >= 0; --i) out_.push_back(static_cast<char>(acc_ >> (i * 8)));
    acc_ = rest == 0 ? 0 : bits & ((std::uint64_t{1} << rest) - 1);
    used_ = rest;
  }
  void bit(bool b) { put(b ? 1 : 0, 1); }
  std::size_t bits() const { return out_.size() * 8 + static_cast<std::size_t>(used_); }
  std::string finish() && {
    int n = used_;
    std::uint64_t acc = used_ == 0 ? 0 : acc_ << (64 - used_);
    for (int i = 7; n > 0; --i, n -= 8) out_.push_back(static_cast<char>(acc >> (i * 8)));
    return std::move(out_);
  }
  void reserve(std::size_t bytes) { out_.reserve(bytes); }

 private:
  std::string out_;
  std::uint64_t acc_ = 0;
  int used_ = 0;
};

class BitReader {
 public:
  explicit BitReader(std::string_view data) : data_(data), bits_(data.size() * 8) {}
  bool get(int n, std::uint64_t& out) {  // n in 0..64
    if (n == 0) {
      out = 0;
      return true;
    }
    if (pos_ + static_cast<std::size_t>(n) > bits_) return false;
    if (n > 56) {  // two reads: one load below covers at most 57 bits past a byte boundary
      std::uint64_t high = 0, low = 0;
      get(n - 32, high);
      get(32, low);
      out = (high << 32) | low;
      return true;
    }
    out = (window() << (pos_ % 8)) >> (64 - n);
    pos_ += static_cast<std::size_t>(n);
    return true;
  }
  // The next 56 bits, at the top of the result (zeros past the end); nothing consumed.
  std::uint64_t peek() const { return (window() << (pos_ % 8)) & ~std::uint64_t{0xFF}; }
  bool skip(std::size_t n) {
    if (pos_ + n > bits_) return false;
    pos_ += n;
    return true;
  }
  bool bit(bool& out) {
    if (pos_ >= bits_) return false;
    out = (static_cast<unsigned char>(data_[pos_ / 8]) >> (7 - pos_ % 8)) & 1;
    ++pos_;
    return true;
  }
  // Only zero padding may follow the last field.
  bool at_end() const {
    if (bits_ - pos_ >= 8) return false;
    if (pos_ % 8 == 0) return true;
    const auto b = static_cast<unsigned char>(data_.back());
    return (b & ((1u << (8 - pos_ % 8)) - 1)) == 0;
  }

 private:
  // The 8 bytes from the current byte on, big-endian (zeros past the end).
  std::uint64_t window() const {
    const std::size_t byte = pos_ / 8;
    std::uint64_t w = 0;
    if (byte + 8 <= data_.size()) {
      std::memcpy(&w, data_.data() + byte, 8);
      if constexpr (std::endian::native == std::endian::little) w = __builtin_bswap64(w);
      return w;
    }
    for (std::size_t i = 0; i < 8; ++i) {
      w = (w << 8) | (byte + i < data_.size() ? static_cast<unsigned char>(data_[byte + i]) : 0u);
    }
    return w;
  }

  std::string_view data_;
  std::size_t bits_;
  std::size_t pos_ = 0;
};

inline std::uint64_t zigzag(std::int64_t v) { return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63); }
inline std::int64_t unzigzag(std::uint64_t v) { return static_cast<std::int64_t>((v >> 1) ^ (~(v & 1) + 1)); }
inline std::int64_t wrap_sub(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}
inline std::int64_t wrap_add(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
inline std::uint64_t bits_of(double v) { return std::bit_cast<std::uint64_t>(v); }
inline bool same(double a, double b) { return bits_of(a) == bits_of(b); }

// Small signed integers (pass indices and gaps, a ratio's numerator above its denominator),
// zigzagged, in buckets of 0/3/7/13/20/32/64 bits after a unary prefix (0, 10, 110, …,
// 1111110).
struct CodeBucket {
  std::uint64_t prefix;
  int prefix_bits;
  int payload_bits;
};
inline constexpr std::array<CodeBucket, 7> kBuckets = {{{0b0, 1, 0},
                                             {0b10, 2, 3},
                                             {0b110, 3, 7},
                                             {0b1110, 4, 13},
                                             {0b11110, 5, 20},
                                             {0b111110, 6, 32},
                                             {0b1111110, 7, 64}}};

// The smallest bucket z fits.
inline const CodeBucket& bucket_of(std::uint64_t z) {
  for (const CodeBucket& b : kBuckets) {
    if (b.payload_bits == 0 ? z == 0 : b.payload_bits == 64 || z < (std::uint64_t{1} << b.payload_bits)) return b;
  }
  return kBuckets.back();
}

inline void put_signed(BitWriter& w, std::int64_t v) {
  const std::uint64_t z = zigzag(v);
  const CodeBucket& b = bucket_of(z);
  w.put(b.prefix, b.prefix_bits);
  w.put(z, b.payload_bits);
}

// A bucket-coded value, or `escaped` when the prefix is all ones (no bucket has it).
inline bool get_bucket(BitReader& r, std::int64_t& v, bool& escaped) {
  std::size_t ones = 0;
  bool b = false;
  while (ones < kBuckets.size()) {
    if (!r.bit(b)) return false;
    if (!b) break;
    ++ones;
  }
  escaped = ones == kBuckets.size();
  if (escaped) return true;
  std::uint64_t z = 0;
  if (!r.get(kBuckets[ones].payload_bits, z)) return false;
  v = unzigzag(z);
  return true;
}

inline bool get_plain_signed(BitReader& r, std::int64_t& v) {
  bool escaped = false;
  return get_bucket(r, v, escaped) && !escaped;
}

// Rice codes for streams of integers of a typical size (differences of counters, timestamps'
// jitter): a parameter k per stream (6 bits), then per value its zigzagged bits above k in
// unary (at most 7 ones and a zero), then its k low bits. Eight ones mark an outlier (a burst,
// a stall): a zero bit and the value in the bucket code above, or a one bit and a raw double
// (an escaped value).
inline constexpr int kRiceMaxUnary = 8;
// The parameter that says the stream is in the bucket code instead (mostly zeros with
// changes of a few bits: a zero costs one bit there, k + 1 in Rice), seven ones escaping.
inline constexpr int kBucketStream = 63;

inline std::uint64_t bucket_bits(std::uint64_t z) {
  const CodeBucket& b = bucket_of(z);
  return static_cast<std::uint64_t>(b.prefix_bits + b.payload_bits);
}

inline int rice_parameter(std::span<const std::uint64_t> zz) {
  if (zz.empty()) return 0;
  // Around the median's width: the first value of a stream (a counter's whole value) is
  // stored whole whatever k is, and must not pull k up.
  std::vector<std::uint64_t> sorted(zz.begin(), zz.end());
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  const int guess = static_cast<int>(std::bit_width(sorted[sorted.size() / 2]));
  int best = 0;
  std::uint64_t best_bits = UINT64_MAX;
  for (int k = std::max(0, guess - 3); k <= std::min(63, guess + 2); ++k) {
    std::uint64_t bits = 0;
    for (std::uint64_t z : zz) {
      const std::uint64_t q = z >> k;
      bits += q < kRiceMaxUnary ? q + 1 + static_cast<std::uint64_t>(k) : kRiceMaxUnary + 1 + bucket_bits(z);
    }
    if (bits < best_bits) best = k, best_bits = bits;
  }
  std::uint64_t bucket = 0;
  for (std::uint64_t z : zz) bucket += bucket_bits(z);
  return bucket < best_bits ? kBucketStream : best;
}

inline void put_rice(BitWriter& w, int k, std::int64_t v) {
  if (k == kBucketStream) return put_signed(w, v);
  const std::uint64_t z = zigzag(v);
  const std::uint64_t q = z >> k;
  if (q < kRiceMaxUnary) {
    w.put((std::uint64_t{1} << (q + 1)) - 2, static_cast<int>(q) + 1);  // q ones, a zero
    w.put(z, k);
    return;
  }
  w.put((std::uint64_t{1} << kRiceMaxUnary) - 1, kRiceMaxUnary);
  w.bit(false);
  put_signed(w, v);
}
inline void put_rice_escape(BitWriter& w, int k, double v) {
  if (k == kBucketStream) {
    w.put((std::uint64_t{1} << kBuckets.size()) - 1, static_cast<int>(kBuckets.size()));
  } else {
    w.put((std::uint64_t{1} << kRiceMaxUnary) - 1, kRiceMaxUnary);
    w.bit(true);
  }
  w.put(bits_of(v), 64);
}
inline bool get_rice(BitReader& r, int k, std::int64_t& v, bool& escaped, std::uint64_t& raw) {
  if (k == kBucketStream) {
    if (!get_bucket(r, v, escaped)) return false;
    return !escaped || r.get(64, raw);
  }
  // The unary part at once: the ones leading the next bits.
  const auto q = static_cast<std::uint64_t>(std::min(std::countl_one(r.peek()), kRiceMaxUnary));
  if (!r.skip(q)) return false;
  if (q < kRiceMaxUnary && !r.skip(1)) return false;  // its terminating zero
  escaped = false;
  std::uint64_t z = 0;
  if (q == kRiceMaxUnary) {
    if (!r.bit(escaped)) return false;
    if (escaped) return r.get(64, raw);
    return get_plain_signed(r, v);
  } else {
    std::uint64_t low = 0;
    if (!r.get(k, low)) return false;
    z = (k == 64 ? 0 : q << k) | low;
  }
  v = unzigzag(z);
  return true;
}
inline bool get_plain_rice(BitReader& r, int k, std::int64_t& v) {
  bool escaped = false;
  std::uint64_t raw = 0;
  return get_rice(r, k, v, escaped, raw) && !escaped;
}
inline bool get_rice_parameter(BitReader& r, int& k) {
  std::uint64_t v = 0;
  if (!r.get(6, v)) return false;
  k = static_cast<int>(v);
  return true;
}

}  // namespace perfscope::db::bit_codes
