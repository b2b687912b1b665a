// libFuzzer target: a sample chunk or a pass chunk as read back from the database (a file
// damaged on disk, or written by a bug): decoding fails with an error or yields exactly the
// samples asked for, never reads out of bounds. The first byte is the sample count, the second
// picks chunk or pass chunk, and whether sampling passes are at hand.
#include <cstdint>
#include <string_view>
#include <vector>

#include "db/internal/sample_codec.hpp"

using namespace perfscope;
using namespace perfscope::db;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t count = data[0];
  const std::uint8_t mode = data[1];
  std::string_view bytes(reinterpret_cast<const char*>(data + 2), size - 2);
  if (mode & 1) {
    PassTimes out;
    if (decode_pass_times(bytes, count, out).ok() && out.times.size() != count) __builtin_trap();
    return 0;
  }
  PassTimes passes;
  passes.before = 1'790'000'000'000'000'000;
  for (int i = 1; i <= 300; ++i) passes.times.push_back(*passes.before + i * 100'000'000LL + (i * 7919) % 50'000);
  std::vector<Sample> out;
  const Status s = decode_samples(bytes, count, (mode & 2) ? &passes : nullptr, out);
  if (s.ok() && out.size() != count) __builtin_trap();
  return 0;
}
