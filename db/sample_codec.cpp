#include "db/internal/sample_codec.hpp"

#include "db/internal/bit_codes.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>

namespace perfscope::db {
namespace {

using namespace bit_codes;  // the codec is written in them

// ---- scales ----

struct Scale {
  bool divide;  // value = N / factor, else N × factor
  double factor;
};
// Indices are stored in chunks: new scales go at the end (at most 16).
constexpr std::array<Scale, 12> kScales = {{{false, 1},
                                           {true, 10},
                                           {true, 100},
                                           {true, 1000},
                                           {true, 1e6},
                                           {true, 1e9},
                                           {false, 1024},
                                           {false, 4096},
                                           {false, 1e6},
                                           {true, 1e4},     // a ratio to 0.01 %
                                           {false, 1e9},    // GB/s
                                           {false, 1e12}}};  // TFLOP/s
// Rates divide by these before the elapsed seconds (a counter of ticks, of milli-units).
constexpr std::array<std::uint8_t, 3> kRateScales = {0, 2, 3};
constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53

double scaled_value(const Scale& s, std::int64_t n) {
  const auto d = static_cast<double>(n);
  return s.divide ? d / s.factor : d * s.factor;
}
std::optional<std::int64_t> scaled_integer(const Scale& s, double v) {
  const double x = s.divide ? v * s.factor : v / s.factor;
  if (!(std::fabs(x) < kMaxExactInteger)) return std::nullopt;
  const auto n = static_cast<std::int64_t>(std::llround(x));
  for (std::int64_t c : {n, n - 1, n + 1}) {
    if (same(scaled_value(s, c), v)) return c;
  }
  return std::nullopt;
}

double rate_value(const Scale& s, std::int64_t n, std::int64_t dt_ns) {
  // As a collector computes it: the increase (over the scale) over the seconds elapsed.
  const double dt_s = static_cast<double>(dt_ns) / 1e9;
  return (s.divide ? static_cast<double>(n) / s.factor : static_cast<double>(n)) / dt_s;
}
std::optional<std::int64_t> rate_integer(const Scale& s, double v, std::int64_t dt_ns) {
  if (dt_ns <= 0) return std::nullopt;
  const double x = v * (static_cast<double>(dt_ns) / 1e9) * (s.divide ? s.factor : 1.0);
  if (!(std::fabs(x) < kMaxExactInteger)) return std::nullopt;
  const auto n = static_cast<std::int64_t>(std::llround(x));
  for (std::int64_t c : {n, n - 1, n + 1}) {
    if (same(rate_value(s, c, dt_ns), v)) return c;
  }
  return std::nullopt;
}

constexpr std::int64_t kMaxDenominator = std::int64_t{1} << 24;

// p / q equal to v bit for bit with q ≤ 2^24, preferring a q near prev_q (so the differences
// of a series of fractions of one total stay zero).
bool ratio_of(double v, std::int64_t prev_q, std::int64_t& p, std::int64_t& q) {
  if (!(v >= 0) || v > 1e9 || std::signbit(v)) return false;
  if (v == 0) {
    p = 0;
    q = std::max<std::int64_t>(prev_q, 1);
    return true;
  }
  // Continued fraction convergents h/k of v, each checked exactly.
  double x = v;
  std::int64_t h1 = 1, h2 = 0, k1 = 0, k2 = 1;
  for (int i = 0; i < 64; ++i) {
    const double a = std::floor(x);
    if (a > 1e12) break;
    const auto ai = static_cast<std::int64_t>(a);
    constexpr std::int64_t kMaxNumerator = std::int64_t{1} << 40;
    if ((k1 > 0 && ai > kMaxDenominator / k1) || (h1 > 0 && ai > kMaxNumerator / h1)) break;
    const std::int64_t h = ai * h1 + h2, k = ai * k1 + k2;
    if (k > kMaxDenominator || h > kMaxNumerator) break;
    if (same(static_cast<double>(h) / static_cast<double>(k), v)) {
      std::int64_t m = prev_q > 0 ? std::max<std::int64_t>(1, (prev_q + k / 2) / k) : 1;
      if (m * k > kMaxDenominator) m = 1;
      p = h * m;
      q = k * m;
      return true;
    }
    h2 = h1, h1 = h, k2 = k1, k1 = k;
    const double frac = x - a;
    if (frac <= 0) break;
    x = 1 / frac;
  }
  return false;
}

// ---- timestamps ----

void put_explicit_times(BitWriter& w, std::span<const TimestampNs> times) {
  if (times.empty()) return;
  w.put(static_cast<std::uint64_t>(times[0]), 64);
  if (times.size() == 1) return;
  std::vector<std::int64_t> dods;
  std::vector<std::uint64_t> zz;
  dods.reserve(times.size());
  zz.reserve(times.size());
  std::int64_t prev_delta = 0;
  for (std::size_t i = 1; i < times.size(); ++i) {
    const std::int64_t delta = wrap_sub(times[i], times[i - 1]);
    dods.push_back(wrap_sub(delta, prev_delta));
    zz.push_back(zigzag(dods.back()));
    prev_delta = delta;
  }
  const int k = rice_parameter(zz);
  w.put(static_cast<std::uint64_t>(k), 6);
  for (std::int64_t d : dods) put_rice(w, k, d);
}
bool get_explicit_times(BitReader& r, std::size_t count, std::vector<TimestampNs>& out) {
  if (count == 0) return true;
  std::uint64_t first = 0;
  if (!r.get(64, first)) return false;
  out.push_back(static_cast<TimestampNs>(first));
  if (count == 1) return true;
  int k = 0;
  if (!get_rice_parameter(r, k)) return false;
  std::int64_t prev_delta = 0;
  for (std::size_t i = 1; i < count; ++i) {
    std::int64_t dod = 0;
    if (!get_plain_rice(r, k, dod)) return false;
    prev_delta = wrap_add(prev_delta, dod);
    out.push_back(wrap_add(out.back(), prev_delta));
  }
  return true;
}

void put_pass_indices(BitWriter& w, std::span<const std::uint32_t> index) {
  if (index.empty()) return;
  put_signed(w, index[0]);
  for (std::size_t i = 1; i < index.size(); ++i) {
    const std::uint32_t gap = index[i] - index[i - 1] - 1;
    w.bit(gap != 0);
    if (gap != 0) put_signed(w, static_cast<std::int64_t>(gap) - 1);
  }
}

// ---- values ----

// Gorilla's XOR coding: '0' same as before; '10' meaningful bits inside the previous window;
// '11', 5 bits of leading zeros, 6 bits of length − 1, the bits.
void put_xor(BitWriter& w, std::span<const Sample> samples) {
  if (samples.empty()) return;
  std::uint64_t prev = bits_of(samples[0].value);
  w.put(prev, 64);
  int lead_w = -1, trail_w = 0;
  for (std::size_t i = 1; i < samples.size(); ++i) {
    const std::uint64_t cur = bits_of(samples[i].value);
    const std::uint64_t x = cur ^ prev;
    prev = cur;
    if (x == 0) {
      w.bit(false);
      continue;
    }
    const int lead = std::min(std::countl_zero(x), 31);
    const int trail = std::countr_zero(x);
    if (lead_w >= 0 && lead >= lead_w && trail >= trail_w) {
      w.put(0b10, 2);
      w.put(x >> trail_w, 64 - lead_w - trail_w);
      continue;
    }
    const int len = 64 - lead - trail;
    w.put(0b11, 2);
    w.put(static_cast<std::uint64_t>(lead), 5);
    w.put(static_cast<std::uint64_t>(len - 1), 6);
    w.put(x >> trail, len);
    lead_w = lead;
    trail_w = trail;
  }
}
bool get_xor(BitReader& r, std::size_t count, std::vector<double>& out) {
  if (count == 0) return true;
  std::uint64_t prev = 0;
  if (!r.get(64, prev)) return false;
  out.push_back(std::bit_cast<double>(prev));
  int lead_w = -1, trail_w = 0;
  for (std::size_t i = 1; i < count; ++i) {
    bool b = false;
    if (!r.bit(b)) return false;
    if (b) {
      if (!r.bit(b)) return false;
      std::uint64_t x = 0;
      if (b) {
        std::uint64_t lead = 0, len = 0;
        if (!r.get(5, lead) || !r.get(6, len)) return false;
        ++len;
        if (lead + len > 64) return false;
        lead_w = static_cast<int>(lead);
        trail_w = static_cast<int>(64 - lead - len);
      } else if (lead_w < 0) {
        return false;  // a window reused before any was set
      }
      if (!r.get(64 - lead_w - trail_w, x)) return false;
      prev ^= trail_w == 64 ? 0 : x << trail_w;
    }
    out.push_back(std::bit_cast<double>(prev));
  }
  return true;
}

// The interval before sample i: from the previous pass, or the previous sample (time_at(j):
// sample j's time). What a rate's divisor was, for the encoder and the decoder alike.
template <typename TimeAt>
std::optional<std::int64_t> interval_before(const PassTimes* passes, std::span<const std::uint32_t> pass_index,
                                            std::size_t i, TimeAt&& time_at) {
  if (passes) {
    const std::uint32_t p = pass_index[i];
    if (p > 0) return wrap_sub(passes->times[p], passes->times[p - 1]);
    if (passes->before) return wrap_sub(passes->times[0], *passes->before);
    return std::nullopt;
  }
  if (i == 0) return std::nullopt;
  return wrap_sub(time_at(i), time_at(i - 1));
}
std::optional<std::int64_t> interval_before(std::span<const Sample> samples, const PassTimes* passes,
                                            std::span<const std::uint32_t> pass_index, std::size_t i) {
  return interval_before(passes, pass_index, i, [&](std::size_t j) { return samples[j].ts_ns; });
}

// The integers of a scaled, rate or ratio chunk, coded against the previous ones: order 0,
// N itself; 1, first differences; 2, second differences. One state serves both directions.
class IntegerDifferences {
 public:
  explicit IntegerDifferences(int order) : order_(order) {}
  std::int64_t code(std::int64_t n) {
    const std::int64_t d = wrap_sub(n, prev_);
    const std::int64_t c = order_ == 0 ? n : order_ == 1 ? d : wrap_sub(d, prev_d_);
    advance(n);
    return c;
  }
  std::int64_t value(std::int64_t code) {
    const std::int64_t n = order_ == 0 ? code : order_ == 1 ? wrap_add(prev_, code) : wrap_add(prev_, wrap_add(prev_d_, code));
    advance(n);
    return n;
  }

 private:
  void advance(std::int64_t n) {
    prev_d_ = wrap_sub(n, prev_);
    prev_ = n;
  }
  int order_;
  std::int64_t prev_ = 0, prev_d_ = 0;
};

// One value of an integer coding: its code, or escaped; a ratio's numerator beside.
struct IntegerEntry {
  bool escaped = false;
  std::int64_t code = 0;
  double raw = 0;
  std::int64_t p = 0, q = 0;
};

// Writes the values under `coding`; returns how many were escaped.
std::size_t put_values(BitWriter& w, const ChunkCoding& coding, std::span<const Sample> samples, const PassTimes* passes,
                       std::span<const std::uint32_t> pass_index) {
  if (coding.values == ValueCoding::kXor) {
    put_xor(w, samples);
    return 0;
  }
  std::vector<IntegerEntry> entries(samples.size());
  const Scale& s = kScales[coding.scale];
  IntegerDifferences ints(coding.values == ValueCoding::kScaled ? (coding.order == 0 ? 1 : 2) : coding.order);
  std::int64_t prev_q = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    IntegerEntry& e = entries[i];
    std::optional<std::int64_t> n;
    if (coding.values == ValueCoding::kScaled) {
      n = scaled_integer(s, samples[i].value);
    } else if (coding.values == ValueCoding::kRate) {
      auto dt = interval_before(samples, passes, pass_index, i);
      if (dt) n = rate_integer(s, samples[i].value, *dt);
    } else if (ratio_of(samples[i].value, prev_q, e.p, e.q)) {
      n = wrap_sub(e.q, prev_q);
      prev_q = e.q;
    }
    if (!n) {
      e.escaped = true;
      e.raw = samples[i].value;
      continue;
    }
    e.code = coding.values == ValueCoding::kRatio ? *n : ints.code(*n);
  }
  std::vector<std::uint64_t> zz;
  zz.reserve(entries.size());
  std::size_t escapes = 0;
  for (const IntegerEntry& e : entries) {
    if (e.escaped) ++escapes;
    else zz.push_back(zigzag(e.code));
  }
  const int k = rice_parameter(zz);
  w.put(static_cast<std::uint64_t>(k), 6);
  for (const IntegerEntry& e : entries) {
    if (e.escaped) {
      put_rice_escape(w, k, e.raw);
      continue;
    }
    put_rice(w, k, e.code);
    if (coding.values != ValueCoding::kRatio) continue;
    w.bit(e.p > e.q);
    if (e.p > e.q) {
      put_signed(w, e.p - e.q - 1);
    } else {
      w.put(static_cast<std::uint64_t>(e.p), std::bit_width(static_cast<std::uint64_t>(e.q)));
    }
  }
  return escapes;
}

bool get_values(BitReader& r, const ChunkCoding& coding, std::span<const TimestampNs> times, const PassTimes* passes,
                std::span<const std::uint32_t> pass_index, std::vector<double>& out) {
  const std::size_t count = times.size();
  if (coding.values == ValueCoding::kXor) return get_xor(r, count, out);
  if (coding.scale >= kScales.size()) return false;
  const Scale& s = kScales[coding.scale];
  IntegerDifferences ints(coding.values == ValueCoding::kScaled ? (coding.order == 0 ? 1 : 2) : coding.order);
  std::int64_t prev_q = 0;
  int k = 0;
  if (!get_rice_parameter(r, k)) return false;
  for (std::size_t i = 0; i < count; ++i) {
    std::int64_t code = 0;
    bool escaped = false;
    std::uint64_t raw = 0;
    if (!get_rice(r, k, code, escaped, raw)) return false;
    if (escaped) {
      out.push_back(std::bit_cast<double>(raw));
      continue;
    }
    switch (coding.values) {
      case ValueCoding::kScaled:
        out.push_back(scaled_value(s, ints.value(code)));
        break;
      case ValueCoding::kRate: {
        const auto dt = interval_before(passes, pass_index, i, [&](std::size_t j) { return times[j]; });
        if (!dt) return false;  // the encoder escapes a value without an interval
        out.push_back(rate_value(s, ints.value(code), *dt));
        break;
      }
      case ValueCoding::kRatio: {
        const std::int64_t q = wrap_add(prev_q, code);
        if (q <= 0 || q > kMaxDenominator) return false;
        prev_q = q;
        bool above = false;
        if (!r.bit(above)) return false;
        std::int64_t p = 0;
        if (above) {
          if (!get_plain_signed(r, p) || p < 0 || p > (std::int64_t{1} << 50)) return false;
          p += q + 1;
        } else {
          std::uint64_t bits = 0;
          if (!r.get(std::bit_width(static_cast<std::uint64_t>(q)), bits)) return false;
          p = static_cast<std::int64_t>(bits);
        }
        out.push_back(static_cast<double>(p) / static_cast<double>(q));
        break;
      }
      case ValueCoding::kXor:
        return false;
    }
  }
  return true;
}

// Bits the first differences of these integers cost, roughly: what picks a scale.
std::size_t difference_bits(std::span<const std::int64_t> ns) {
  std::size_t bits = 0;
  for (std::size_t i = 1; i < ns.size(); ++i) bits += 1 + std::bit_width(zigzag(wrap_sub(ns[i], ns[i - 1])));
  return bits;
}

// The codings worth trying for these values: XOR, and of the scaled, rate and ratio codings
// those that fit all but one value in eight, each with the scale whose integers vary least.
static_assert(kScales.size() <= 16, "the scale index has 4 bits");
std::vector<ChunkCoding> candidate_codings(std::span<const Sample> samples, const PassTimes* passes,
                                           std::span<const std::uint32_t> pass_index) {
  std::vector<ChunkCoding> out = {{ValueCoding::kXor, 0, 0}};
  const std::size_t n = samples.size();
  if (n < 2) return out;
  const std::size_t need = n - n / 8;
  std::vector<std::int64_t> ints;
  ints.reserve(n);
  // fn(i) → the integer of sample i under a scale, or nullopt; the best scale's index.
  auto best_scale = [&](auto scales, auto&& integer_of) -> std::optional<std::uint8_t> {
    std::optional<std::uint8_t> best;
    std::size_t best_bits = 0;
    for (std::uint8_t si : scales) {
      ints.clear();
      for (std::size_t i = 0; i < n && ints.size() + (n - i) >= need; ++i) {
        if (auto v = integer_of(kScales[si], i)) ints.push_back(*v);
      }
      if (ints.size() < need) continue;
      const std::size_t bits = difference_bits(ints);
      if (!best || bits < best_bits) best = si, best_bits = bits;
    }
    return best;
  };
  std::array<std::uint8_t, kScales.size()> all_scales{};
  for (std::uint8_t i = 0; i < all_scales.size(); ++i) all_scales[i] = i;
  if (auto si = best_scale(all_scales, [&](const Scale& s, std::size_t i) { return scaled_integer(s, samples[i].value); })) {
    out.push_back({ValueCoding::kScaled, 0, *si});
    out.push_back({ValueCoding::kScaled, 1, *si});
  }
  if (auto si = best_scale(kRateScales, [&](const Scale& s, std::size_t i) -> std::optional<std::int64_t> {
        auto dt = interval_before(samples, passes, pass_index, i);
        return dt ? rate_integer(s, samples[i].value, *dt) : std::nullopt;
      })) {
    out.push_back({ValueCoding::kRate, 0, *si});
    out.push_back({ValueCoding::kRate, 1, *si});
  }
  std::size_t fit = 0;
  std::int64_t p = 0, q = 0;
  for (std::size_t i = 0; i < n && fit + (n - i) >= need; ++i) fit += ratio_of(samples[i].value, q, p, q) ? 1 : 0;
  if (fit >= need) out.push_back({ValueCoding::kRatio, 0, 0});
  return out;
}

bool consecutive(std::span<const std::uint32_t> index) {
  for (std::size_t i = 1; i < index.size(); ++i) {
    if (index[i] != index[i - 1] + 1) return false;
  }
  return true;
}
bool constant(std::span<const Sample> samples) {
  for (const Sample& s : samples) {
    if (!same(s.value, samples[0].value)) return false;
  }
  return true;
}

EncodedChunk encode_with(const ChunkCoding& coding, std::span<const Sample> samples, const PassTimes* passes,
                         std::span<const std::uint32_t> pass_index) {
  BitWriter w;
  w.reserve(samples.size() * 2 + 16);
  // Flags: on passes; on every pass from the first (no gap bits); one value throughout.
  const bool every = passes && consecutive(pass_index);
  const bool one_value = !samples.empty() && constant(samples);
  w.put((passes ? 1u : 0u) | (every ? 2u : 0u) | (one_value ? 4u : 0u), 8);
  w.put(static_cast<std::uint64_t>(coding.values) | (std::uint64_t{coding.order} << 2) |
            (std::uint64_t{coding.scale} << 3),
        8);
  if (passes) {
    put_pass_indices(w, every ? pass_index.first(std::min<std::size_t>(1, pass_index.size())) : pass_index);
  } else {
    std::vector<TimestampNs> times;
    times.reserve(samples.size());
    for (const Sample& s : samples) times.push_back(s.ts_ns);
    put_explicit_times(w, times);
  }
  EncodedChunk out;
  out.coding = coding;
  if (one_value) {
    w.put(bits_of(samples[0].value), 64);
  } else {
    out.escapes = put_values(w, coding, samples, passes, pass_index);
  }
  out.data = std::move(w).finish();
  return out;
}

}  // namespace

EncodedChunk encode_samples(std::span<const Sample> samples, const PassTimes* passes,
                            std::span<const std::uint32_t> pass_index, std::optional<ChunkCoding> coding) {
  if (coding || (!samples.empty() && constant(samples))) {
    return encode_with(coding.value_or(ChunkCoding{}), samples, passes, pass_index);
  }
  EncodedChunk best;
  for (const ChunkCoding& c : candidate_codings(samples, passes, pass_index)) {
    EncodedChunk e = encode_with(c, samples, passes, pass_index);
    if (best.data.empty() || e.data.size() < best.data.size()) best = std::move(e);
  }
  return best;
}

bool chunk_on_passes(std::string_view data) { return !data.empty() && (static_cast<unsigned char>(data[0]) & 1); }

Status decode_samples(std::string_view data, std::size_t count, const PassTimes* passes, std::vector<Sample>& out) {
  auto corrupt = [] { return Status::internal("a sample chunk in the database is corrupt"); };
  if (data.size() < 2) return count == 0 ? Status() : corrupt();
  const auto layout = static_cast<unsigned char>(data[0]);
  const auto c = static_cast<unsigned char>(data[1]);
  if ((layout & ~7u) != 0 || (c & 0x80) != 0) return corrupt();
  const bool on_passes = layout & 1, every = layout & 2, one_value = layout & 4;
  if (every && !on_passes) return corrupt();
  if (on_passes && !passes) return Status::internal("a sample chunk's sampling passes are missing");
  ChunkCoding coding{static_cast<ValueCoding>(c & 3), static_cast<std::uint8_t>((c >> 2) & 1),
                     static_cast<std::uint8_t>((c >> 3) & 15)};
  BitReader r(data.substr(2));
  // Scratch kept per thread: a history query decodes thousands of chunks in a row.
  thread_local std::vector<TimestampNs> times;
  thread_local std::vector<std::uint32_t> index;
  thread_local std::vector<double> values;
  times.clear();
  index.clear();
  values.clear();
  times.reserve(count);
  if (on_passes) {
    index.reserve(count);
    std::int64_t first = 0;
    if (count > 0) {
      if (!get_plain_signed(r, first) || first < 0 || static_cast<std::size_t>(first) >= passes->times.size()) {
        return corrupt();
      }
      index.push_back(static_cast<std::uint32_t>(first));
    }
    for (std::size_t i = 1; i < count; ++i) {
      bool gap = false;
      std::int64_t g = -1;
      if (!every && (!r.bit(gap) || (gap && !get_plain_signed(r, g)))) return corrupt();
      const std::uint64_t next = std::uint64_t{index.back()} + 2 + static_cast<std::uint64_t>(g);
      if (g < -1 || next >= passes->times.size()) return corrupt();
      index.push_back(static_cast<std::uint32_t>(next));
    }
    for (std::uint32_t i : index) times.push_back(passes->times[i]);
  } else if (!get_explicit_times(r, count, times)) {
    return corrupt();
  }
  values.reserve(count);
  if (one_value && count > 0) {
    std::uint64_t bits = 0;
    if (!r.get(64, bits)) return corrupt();
    values.assign(count, std::bit_cast<double>(bits));
  } else if (!get_values(r, coding, times, on_passes ? passes : nullptr, index, values)) {
    return corrupt();
  }
  if (values.size() != count || !r.at_end()) return corrupt();
  out.reserve(out.size() + count);
  for (std::size_t i = 0; i < count; ++i) out.push_back(Sample{times[i], values[i]});
  return Status();
}

std::string encode_pass_times(const PassTimes& passes) {
  BitWriter w;
  w.bit(passes.before.has_value());
  std::vector<TimestampNs> all;
  all.reserve(passes.times.size() + 1);
  if (passes.before) all.push_back(*passes.before);
  all.insert(all.end(), passes.times.begin(), passes.times.end());
  put_explicit_times(w, all);
  return std::move(w).finish();
}

Status decode_pass_times(std::string_view data, std::size_t count, PassTimes& out) {
  BitReader r(data);
  bool has_before = false;
  std::vector<TimestampNs> all;
  if (!r.bit(has_before) || !get_explicit_times(r, count + (has_before ? 1 : 0), all) || !r.at_end()) {
    return Status::internal("a sampling pass chunk in the database is corrupt");
  }
  out.before.reset();
  std::size_t first = 0;
  if (has_before) {
    out.before = all[0];
    first = 1;
  }
  out.times.assign(all.begin() + static_cast<std::ptrdiff_t>(first), all.end());
  return Status();
}

}  // namespace perfscope::db
