// Sums of int64 figures (nanoseconds, bytes) that hold at the type's bounds instead of wrapping:
// every stored value is bounded, but a sum over any number of them is not.
// Pure; safe from any thread.
#pragma once

#include <cstdint>

namespace perfscope {

inline std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  return __builtin_add_overflow(a, b, &out) ? (b > 0 ? INT64_MAX : INT64_MIN) : out;
}

// Unsigned sums (bytes allocated over a run): held at 2^64 - 1 instead of wrapping. Each
// allocation is bounded (2^50 bytes), but 16,384 of them reach 2^64.
inline std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t out = 0;
  return __builtin_add_overflow(a, b, &out) ? UINT64_MAX : out;
}

// A floating sum of counts (SQLite's TOTAL) as an unsigned count, held at the type's bound.
inline std::uint64_t saturating_count(double total) {
  constexpr double kTwoTo64 = 18446744073709551616.0;
  if (!(total > 0)) return 0;
  return total >= kTwoTo64 ? UINT64_MAX : static_cast<std::uint64_t>(total);
}

}  // namespace perfscope
