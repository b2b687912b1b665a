#include "db/internal/sample_codec.hpp"

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include <gtest/gtest.h>

namespace perfscope::db {
namespace {

constexpr TimestampNs kBase = 1'790'000'000'000'000'000;

// Passes 100 ms apart with the sampler's jitter (tens of microseconds, now and then more).
PassTimes jittered_passes(std::size_t n, std::mt19937_64& rng, std::optional<TimestampNs> before = {}) {
  PassTimes p;
  p.before = before;
  std::normal_distribution<double> jitter(0, 40'000);
  TimestampNs t = before.value_or(kBase) + 100'000'000;
  for (std::size_t i = 0; i < n; ++i) {
    p.times.push_back(t + static_cast<TimestampNs>(std::fabs(jitter(rng))));
    t += 100'000'000;
  }
  return p;
}

void expect_same(const std::vector<Sample>& got, std::span<const Sample> want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].ts_ns, want[i].ts_ns) << i;
    EXPECT_EQ(std::bit_cast<std::uint64_t>(got[i].value), std::bit_cast<std::uint64_t>(want[i].value))
        << i << ": " << got[i].value << " vs " << want[i].value;
  }
}

// Encodes on the passes (every sample on pass i, or the given indices), decodes, compares.
EncodedChunk round_trip(const std::vector<Sample>& samples, const PassTimes* passes, std::vector<std::uint32_t> index,
                        std::optional<ChunkCoding> coding = {}) {
  EncodedChunk e = encode_samples(samples, passes, index, coding);
  std::vector<Sample> got;
  Status s = decode_samples(e.data, samples.size(), passes, got);
  EXPECT_TRUE(s.ok()) << s.message();
  expect_same(got, samples);
  return e;
}

std::vector<std::uint32_t> every_pass(std::size_t n) {
  std::vector<std::uint32_t> index(n);
  for (std::size_t i = 0; i < n; ++i) index[i] = static_cast<std::uint32_t>(i);
  return index;
}

const ChunkCoding kEveryCoding[] = {
    {ValueCoding::kXor, 0, 0},    {ValueCoding::kScaled, 0, 0}, {ValueCoding::kScaled, 1, 2},
    {ValueCoding::kScaled, 0, 6}, {ValueCoding::kRate, 0, 0},   {ValueCoding::kRate, 1, 2},
    {ValueCoding::kRatio, 0, 0},
};

TEST(SampleCodec, EveryCodingKeepsAnyValueToTheBit) {
  // Values no coding but XOR fits, beside ones each fits: escapes keep them exact.
  std::mt19937_64 rng(7);
  PassTimes passes = jittered_passes(120, rng, kBase);
  std::vector<Sample> samples;
  const double specials[] = {0.0, -0.0, std::numeric_limits<double>::infinity(), -1e308, 5e-324,
                             std::numeric_limits<double>::quiet_NaN(), 0.1, 1e300, 42, -7.5};
  for (std::size_t i = 0; i < passes.times.size(); ++i) {
    double v = i % 3 == 0 ? specials[i % std::size(specials)] : std::bit_cast<double>(rng() & 0x7FEF'FFFF'FFFF'FFFFull);
    samples.push_back({passes.times[i], v});
  }
  for (const ChunkCoding& c : kEveryCoding) {
    round_trip(samples, &passes, every_pass(samples.size()), c);
    round_trip(samples, nullptr, {}, c);
  }
  round_trip(samples, &passes, every_pass(samples.size()));
}

TEST(SampleCodec, CollectorValuesCostLessThanTheirDoubles) {
  std::mt19937_64 rng(11);
  PassTimes passes = jittered_passes(120, rng, kBase);
  const std::vector<std::uint32_t> index = every_pass(passes.times.size());
  std::vector<Sample> counter, rate, ratio, percent, memory, noisy, activity, bandwidth, flops;
  double total = 1'234'567'890, mem_pages = 2'000'000;
  std::poisson_distribution<int> switches(2500), busy(9);
  for (std::size_t i = 0; i < passes.times.size(); ++i) {
    const TimestampNs t = passes.times[i];
    const TimestampNs prev = i == 0 ? *passes.before : passes.times[i - 1];
    const double increase = switches(rng);
    total += increase;
    counter.push_back({t, total});
    // As the host collector computes it: the increase over the seconds elapsed.
    rate.push_back({t, increase / (static_cast<double>(t - prev) / 1e9)});
    // Jiffies of one interval: about 20, as many as the clock ticked.
    const double ticks = static_cast<double>(18 + rng() % 5), b = std::min(18, busy(rng));
    ratio.push_back({t, std::min(1.0, b / ticks)});
    percent.push_back({t, static_cast<double>(rng() % 101) / 100.0});
    // Memory moves by pages, a few at a time.
    mem_pages += static_cast<double>(static_cast<int>(rng() % 9) - 4);
    memory.push_back({t, 4096.0 * mem_pages});
    noisy.push_back({t, std::normal_distribution<double>(0.5, 0.1)(rng)});
    // The GPU collector's GPM readings on their grids: a ratio to 0.01 %, GB/s, TFLOP/s.
    const double busy_share = std::round(std::normal_distribution<double>(0.95, 0.002)(rng) * 1e4) / 1e4;
    activity.push_back({t, busy_share});
    bandwidth.push_back({t, std::round(busy_share * 3352.32e9 / 1e9) * 1e9});
    flops.push_back({t, std::round(busy_share * 989.4e12 / 1e12) * 1e12});
  }
  auto size_of = [&](const std::vector<Sample>& s, std::optional<ChunkCoding> c = {}) {
    return round_trip(s, &passes, index, c).data.size();
  };
  const ChunkCoding xor_only{ValueCoding::kXor, 0, 0};
  const std::pair<const char*, const std::vector<Sample>*> series[] = {
      {"counter", &counter}, {"rate", &rate},           {"ratio", &ratio}, {"percent", &percent},
      {"memory", &memory},   {"activity", &activity}, {"bandwidth", &bandwidth}, {"flops", &flops}};
  for (const auto& [name, s] : series) {
    EXPECT_LT(size_of(*s) * 10, size_of(*s, xor_only) * 7) << name;
  }
  EXPECT_EQ(round_trip(rate, &passes, index).coding.values, ValueCoding::kRate);
  EXPECT_EQ(round_trip(ratio, &passes, index).coding.values, ValueCoding::kRatio);
  EXPECT_NE(round_trip(percent, &passes, index).coding.values, ValueCoding::kXor);
  EXPECT_EQ(round_trip(rate, &passes, index).escapes, 0u);
  for (const auto* grid : {&activity, &bandwidth, &flops}) {
    const EncodedChunk e = round_trip(*grid, &passes, index);
    EXPECT_EQ(e.coding.values, ValueCoding::kScaled);
    EXPECT_EQ(e.escapes, 0u);
    EXPECT_LT(e.data.size(), grid->size() * 3 / 2);  // about 20 steps of noise: under 12 bits each
  }
  // Noise is what it is: XOR, never worse than XOR alone.
  EXPECT_LE(size_of(noisy), size_of(noisy, xor_only));
  // A series on every pass with one value throughout: its first pass and its value.
  std::vector<Sample> constant;
  for (TimestampNs t : passes.times) constant.push_back({t, 1.0});
  EXPECT_LE(size_of(constant), 2u + 1 + 8);
  // With a gap, a bit per pass.
  constant.erase(constant.begin() + 50);
  std::vector<std::uint32_t> gapped = index;
  gapped.erase(gapped.begin() + 50);
  EXPECT_LE(round_trip(constant, &passes, gapped).data.size(), 2u + 1 + 120 / 8 + 8 + 1);
}

TEST(SampleCodec, PassesWithGapsAndRatesAtTheFirstPass) {
  std::mt19937_64 rng(3);
  PassTimes passes = jittered_passes(120, rng);  // no pass before the first: its rate is escaped
  std::vector<Sample> samples;
  std::vector<std::uint32_t> index;
  for (std::uint32_t i = 0; i < 120; i += (i % 7 == 3 ? 5 : 1)) {
    const TimestampNs prev = i == 0 ? passes.times[0] - 100'000'000 : passes.times[i - 1];
    samples.push_back({passes.times[i], 300.0 / (static_cast<double>(passes.times[i] - prev) / 1e9)});
    index.push_back(i);
  }
  EncodedChunk e = round_trip(samples, &passes, index);
  EXPECT_EQ(e.coding.values, ValueCoding::kRate);
  EXPECT_EQ(e.escapes, 1u);
  // A chunk starting in the middle of its pass chunk.
  std::vector<Sample> tail(samples.begin() + 40, samples.end());
  round_trip(tail, &passes, std::vector<std::uint32_t>(index.begin() + 40, index.end()));
}

TEST(SampleCodec, ExplicitTimesOfAnyShape) {
  const TimestampNs max = std::numeric_limits<TimestampNs>::max();
  std::vector<Sample> samples = {{-5, 1}, {0, 2}, {3, 3}, {1'000'000'000'000, 4}, {1'000'000'000'001, 5},
                                 {max / 2, 6}, {max - 1, 7}, {max, 8}};
  round_trip(samples, nullptr, {});
  for (const ChunkCoding& c : kEveryCoding) round_trip(samples, nullptr, {}, c);
  round_trip({{kBase, 0.25}}, nullptr, {});
  round_trip({}, nullptr, {});
}

TEST(SampleCodec, PassTimesRoundTrip) {
  std::mt19937_64 rng(5);
  for (std::optional<TimestampNs> before : {std::optional<TimestampNs>(), std::optional<TimestampNs>(kBase)}) {
    PassTimes p = jittered_passes(120, rng, before);
    p.times[60] += 5'000'000'000;  // a stall
    std::string data = encode_pass_times(p);
    PassTimes got;
    ASSERT_TRUE(decode_pass_times(data, p.times.size(), got).ok());
    EXPECT_EQ(got.before, p.before);
    EXPECT_EQ(got.times, p.times);
    EXPECT_LT(data.size(), 120u * 4);
  }
}

TEST(SampleCodec, CorruptDataIsAnErrorNeverACrash) {
  std::mt19937_64 rng(9);
  PassTimes passes = jittered_passes(50, rng, kBase);
  std::vector<Sample> samples;
  for (TimestampNs t : passes.times) samples.push_back({t, static_cast<double>(rng() % 1000) / 100.0});
  for (const ChunkCoding& c : kEveryCoding) {
    for (const PassTimes* p : std::initializer_list<const PassTimes*>{&passes, nullptr}) {
      const std::string data = encode_samples(samples, p, p ? every_pass(50) : std::vector<std::uint32_t>{}, c).data;
      std::vector<Sample> out;
      // Every truncation fails.
      for (std::size_t n = 0; n < data.size(); ++n) {
        out.clear();
        EXPECT_FALSE(decode_samples(data.substr(0, n), samples.size(), p, out).ok()) << n;
      }
      // More samples than the data holds (beyond what zero padding could be read as), or data
      // left over, fail.
      EXPECT_FALSE(decode_samples(data, samples.size() + 8, p, out).ok());
      EXPECT_FALSE(decode_samples(data + std::string(1, '\x7f'), samples.size(), p, out).ok());
      // Flipped bytes decode to something or fail, without reading out of bounds.
      for (std::size_t i = 0; i < data.size(); ++i) {
        std::string bad = data;
        bad[i] = static_cast<char>(bad[i] ^ static_cast<char>(1 + rng() % 255));
        out.clear();
        (void)decode_samples(bad, samples.size(), p, out);
      }
    }
  }
  std::vector<Sample> out;
  // A chunk on passes without its pass chunk.
  const std::string on_passes = encode_samples(samples, &passes, every_pass(50)).data;
  EXPECT_FALSE(decode_samples(on_passes, samples.size(), nullptr, out).ok());
  PassTimes got;
  EXPECT_FALSE(decode_pass_times(encode_pass_times(passes), passes.times.size() + 8, got).ok());
}

}  // namespace
}  // namespace perfscope::db
