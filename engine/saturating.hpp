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

}  // namespace perfscope
