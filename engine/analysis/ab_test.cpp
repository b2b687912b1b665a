#include "engine/analysis/ab_test.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <thread>

#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>

#include "engine/analysis/stats.hpp"
#include "engine/base/cancellation.hpp"

namespace perfscope::analysis {
namespace {

__extension__ typedef __int128 Int128;  // GCC and Clang; exact counts of the U distribution

double normal_sf(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

double log_choose(double n, double k) { return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1); }

// Survival function P(U >= u) of the Mann–Whitney U statistic under the null hypothesis
// for samples of sizes m and n, from the coefficients of the Gaussian binomial [m+n, m]_q
// (the number of arrangements for each value of U), built as ∏ (1 − q^(n+i)) / (1 − q^i)
// in exact 128-bit integers. Empty when they would not fit.
std::optional<double> exact_sf(std::size_t m, std::size_t n, long long u) {
  if (m > n) std::swap(m, n);
  const std::size_t degree = m * n;
  if (degree > 2'000'000 || log_choose(static_cast<double>(m + n), static_cast<double>(m)) > std::log(1e37)) {
    return std::nullopt;
  }
  std::vector<Int128> c(degree + m + 2, 0);
  c[0] = 1;
  std::size_t deg = 0;
  for (std::size_t i = 1; i <= m; ++i) {
    const std::size_t s = n + i;
    for (std::size_t k = deg + s; k >= s; --k) c[k] -= c[k - s];  // × (1 − q^s)
    deg += s;
    for (std::size_t k = i; k <= deg; ++k) c[k] += c[k - i];  // ÷ (1 − q^i), exact
    deg -= i;
  }
  Int128 total = 0, tail = 0;
  for (std::size_t k = 0; k <= degree; ++k) {
    total += c[k];
    if (static_cast<long long>(k) >= u) tail += c[k];
  }
  return static_cast<double>(tail) / static_cast<double>(total);
}

// Average ranks (1-based) of the pooled sample; returns the tie term Σ(t³ − t) too.
std::vector<double> ranks(std::span<const double> a, std::span<const double> b, double& tie_term, bool& ties) {
  const std::size_t n = a.size() + b.size();
  std::vector<std::pair<double, std::size_t>> pooled;
  pooled.reserve(n);
  for (std::size_t i = 0; i < a.size(); ++i) pooled.emplace_back(a[i], i);
  for (std::size_t i = 0; i < b.size(); ++i) pooled.emplace_back(b[i], a.size() + i);
  std::sort(pooled.begin(), pooled.end());
  std::vector<double> r(n);
  tie_term = 0;
  ties = false;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j + 1 < n && pooled[j + 1].first == pooled[i].first) ++j;
    const double avg = (static_cast<double>(i) + static_cast<double>(j)) / 2.0 + 1.0;
    for (std::size_t k = i; k <= j; ++k) r[pooled[k].second] = avg;
    const auto t = static_cast<double>(j - i + 1);
    if (t > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    i = j + 1;
  }
  return r;
}

// xoshiro256+: fast and reproducible from a seed (splitmix64 expands it). Its weak lowest
// bits barely matter here: indices come from the high bits of each 32-bit half.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    for (auto& s : s_) {
      seed += 0x9e3779b97f4a7c15ULL;
      std::uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      s = z ^ (z >> 31);
    }
  }
  std::uint64_t next() {
    const std::uint64_t result = s_[0] + s_[3];
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = std::rotl(s_[3], 45);
    return result;
  }

 private:
  std::uint64_t s_[4];
};

// Sum of n draws with replacement; two 32-bit indices per random word, each mapped to
// [0, n) by multiply-shift (bias below n / 2^32).
// Two generators, drawn from in turn: each generator's next state waits for its last, and
// with one generator that wait, not the loads and adds, set the pace.
struct RngPair {
  Rng first, second;
};

double resample_sum(std::span<const double> x, RngPair& rng) {
  const std::uint64_t n = x.size();
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::size_t i = 0;
  for (; i + 3 < x.size(); i += 4) {
    const std::uint64_t r = rng.first.next(), q = rng.second.next();
    s0 += x[((r & 0xffffffffULL) * n) >> 32];
    s1 += x[((r >> 32) * n) >> 32];
    s2 += x[((q & 0xffffffffULL) * n) >> 32];
    s3 += x[((q >> 32) * n) >> 32];
  }
  for (; i < x.size(); ++i) s0 += x[((rng.first.next() & 0xffffffffULL) * n) >> 32];
  return (s0 + s1) + (s2 + s3);
}

// Doubles in an order-preserving unsigned encoding, for bisection over values.
std::uint64_t ordered_bits(double d) {
  const auto u = std::bit_cast<std::uint64_t>(d);
  return (u >> 63) ? ~u : (u | 0x8000000000000000ULL);
}
double from_ordered_bits(std::uint64_t k) {
  const std::uint64_t u = (k >> 63) ? (k & 0x7fffffffffffffffULL) : ~k;
  return std::bit_cast<double>(u);
}

// Number of pairs (i, j) with b[j] − a[i] ≤ x, both sorted ascending.
std::uint64_t count_at_most(const std::vector<double>& a, const std::vector<double>& b, double x) {
  std::uint64_t count = 0;
  std::size_t j = 0;
  // As a[i] grows, every b[j] − a[i] shrinks: the boundary j only moves right.
  for (double ai : a) {
    while (j < b.size() && b[j] - ai <= x) ++j;
    count += j;
  }
  return count;
}

// The k-th smallest (1-based) of all differences b[j] − a[i].
double kth_difference(const std::vector<double>& a, const std::vector<double>& b, std::uint64_t k) {
  std::uint64_t lo = ordered_bits(b.front() - a.back()), hi = ordered_bits(b.back() - a.front());
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (count_at_most(a, b, from_ordered_bits(mid)) >= k) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return from_ordered_bits(lo);
}

SampleSummary summarize(std::span<const double> x) {
  SampleSummary s;
  Moments m = moments(x);
  s.n = m.n;
  s.mean_ms = m.mean;
  s.std_ms = m.std;
  if (!x.empty()) {
    std::vector<double> copy(x.begin(), x.end());
    const double qs[] = {50, 99};
    auto p = percentiles(copy, qs, PercentileConvention::kLinear);
    s.median_ms = p[0];
    s.p99_ms = p[1];
  }
  return s;
}

std::string format(const char* fmt, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
  return buf;
}

}  // namespace

MannWhitney mann_whitney_u(std::span<const double> a, std::span<const double> b, MwuMethod method) {
  MannWhitney r;
  const std::size_t n1 = a.size(), n2 = b.size();
  if (n1 == 0 || n2 == 0) {
    r.method = "none";
    return r;
  }
  double tie_term = 0;
  bool ties = false;
  std::vector<double> rk = ranks(a, b, tie_term, ties);
  const double r1 = std::accumulate(rk.begin(), rk.begin() + static_cast<std::ptrdiff_t>(n1), 0.0);
  const double dn1 = static_cast<double>(n1), dn2 = static_cast<double>(n2);
  r.u = r1 - dn1 * (dn1 + 1) / 2;
  const double u = std::max(r.u, dn1 * dn2 - r.u);
  const bool exact = method == MwuMethod::kExact || (method == MwuMethod::kAuto && (n1 <= 8 || n2 <= 8) && !ties);
  if (exact) {
    if (auto sf = exact_sf(n1, n2, static_cast<long long>(u))) {
      r.method = "exact";
      r.p_value = std::clamp(2 * *sf, 0.0, 1.0);
      return r;
    }
  }
  r.method = "asymptotic";
  const double n = dn1 + dn2;
  const double s = std::sqrt(dn1 * dn2 / 12 * ((n + 1) - tie_term / (n * (n - 1))));
  if (!(s > 0)) {
    r.p_value = 1;  // every value tied: nothing tells the samples apart
    return r;
  }
  const double z = (u - dn1 * dn2 / 2 - 0.5) / s;
  r.p_value = std::clamp(2 * normal_sf(z), 0.0, 1.0);
  return r;
}

Welch welch_t_test(std::span<const double> a, std::span<const double> b) {
  Welch w;
  if (a.size() < 2 || b.size() < 2) return w;
  Moments ma = moments(a), mb = moments(b);
  const double va = ma.std * ma.std / static_cast<double>(ma.n), vb = mb.std * mb.std / static_cast<double>(mb.n);
  const double se2 = va + vb;
  if (!(se2 > 0)) return w;
  w.t = (ma.mean - mb.mean) / std::sqrt(se2);
  w.df = se2 * se2 / (va * va / static_cast<double>(ma.n - 1) + vb * vb / static_cast<double>(mb.n - 1));
  boost::math::students_t dist(w.df);
  w.p_value = std::clamp(2 * boost::math::cdf(boost::math::complement(dist, std::fabs(w.t))), 0.0, 1.0);
  return w;
}

Interval bootstrap_speedup_ci(std::span<const double> a, std::span<const double> b, std::size_t resamples,
                              std::uint64_t seed) {
  if (a.empty() || b.empty() || resamples == 0) return {};
  // Resamples come in fixed blocks, each from its own generator seeded by (seed, block):
  // the result depends on the seed alone, not on how many threads share the blocks.
  constexpr std::size_t kBlock = 256;
  const std::size_t blocks = (resamples + kBlock - 1) / kBlock;
  std::vector<double> ratios(resamples);
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  std::atomic<std::size_t> next{0};
  // A request whose client has left stops drawing between blocks (its caller discards the
  // interval); the helper threads below are handed the request's token.
  const std::stop_token cancel = current_stop_token();
  auto work = [&] {
    for (std::size_t blk; !cancel.stop_requested() && (blk = next.fetch_add(1)) < blocks;) {
      RngPair rng{Rng(seed ^ (0x9e3779b97f4a7c15ULL * (blk + 1))), Rng(seed ^ (0xd1b54a32d192ed03ULL * (blk + 1)))};
      for (std::size_t i = blk * kBlock; i < std::min(resamples, (blk + 1) * kBlock); ++i) {
        const double mean_a = resample_sum(a, rng) / na;
        const double mean_b = resample_sum(b, rng) / nb;
        ratios[i] = mean_b != 0 ? mean_a / mean_b : std::numeric_limits<double>::infinity();
      }
    }
  };
  // Threads only where there is enough work to pay for them (≈ 1 ns per draw).
  const double draws = static_cast<double>(resamples) * (na + nb);
  const std::size_t threads =
      draws < 2e7 ? 1 : std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, std::min<std::size_t>(8, blocks));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  const double qs[] = {2.5, 97.5};
  auto p = percentiles(ratios, qs, PercentileConvention::kLinear);
  return {p[0], p[1]};
}

double hodges_lehmann_shift(std::span<const double> a_in, std::span<const double> b_in) {
  if (a_in.empty() || b_in.empty()) return 0;
  std::vector<double> a(a_in.begin(), a_in.end()), b(b_in.begin(), b_in.end());
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  const std::uint64_t total = static_cast<std::uint64_t>(a.size()) * b.size();
  if (total % 2 == 1) return kth_difference(a, b, total / 2 + 1);
  return (kth_difference(a, b, total / 2) + kth_difference(a, b, total / 2 + 1)) / 2;
}

std::vector<double> benjamini_hochberg(std::span<const double> p) {
  const std::size_t m = p.size();
  std::vector<std::size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return p[x] < p[y]; });
  std::vector<double> out(m);
  double running = 1.0;
  for (std::size_t r = m; r-- > 0;) {  // from the largest p down: adjusted values stay monotone
    const std::size_t i = order[r];
    running = std::min(running, p[i] * static_cast<double>(m) / static_cast<double>(r + 1));
    out[i] = std::min(running, 1.0);
  }
  return out;
}

double min_attainable_p(std::size_t n1, std::size_t n2) {
  if (n1 == 0 || n2 == 0) return 1;
  return std::min(1.0, 2.0 * std::exp(-log_choose(static_cast<double>(n1 + n2), static_cast<double>(n1))));
}

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::kBFaster: return "b_faster";
    case Verdict::kAFaster: return "a_faster";
    case Verdict::kNoSignificantDifference: return "no_significant_difference";
    case Verdict::kInsufficientSamples: return "insufficient_samples";
  }
  return "insufficient_samples";
}

namespace {

// Per-side sample size for a two-sided test at `alpha` to detect a relative change of
// `min_effect` in the mean with 80% power (normal approximation, divided by Mann–Whitney's
// 0.955 asymptotic efficiency), and never below what can reach alpha at all.
std::size_t samples_needed(const SampleSummary& a, const SampleSummary& b, const AbOptions& o) {
  std::size_t floor_n = 2;
  while (floor_n < 1000 && min_attainable_p(floor_n, floor_n) > o.alpha) ++floor_n;
  const double pooled = std::sqrt((a.std_ms * a.std_ms + b.std_ms * b.std_ms) / 2);
  const double delta = o.min_effect * std::max(a.mean_ms, b.mean_ms);
  if (!(pooled > 0) || !(delta > 0)) return floor_n;
  boost::math::normal z;
  const double za = boost::math::quantile(z, 1 - o.alpha / 2), zb = boost::math::quantile(z, 0.8);
  const double n = 2 * std::pow((za + zb) * pooled / delta, 2) / 0.955;
  return std::max(floor_n, static_cast<std::size_t>(std::ceil(n)));
}

}  // namespace

void decide(AbResult& r, const AbOptions& o, double p) {
  r.p_value_used = p;
  const double change = r.speedup - 1;
  if (r.a.n < 2 || r.b.n < 2 || min_attainable_p(r.a.n, r.b.n) > o.alpha) {
    r.verdict = Verdict::kInsufficientSamples;
    r.recommendation = format("Collect at least %.0f samples of each variant (have %.0f and %.0f): with fewer, no "
                              "difference can reach significance at alpha %.3g.",
                              static_cast<double>(r.min_samples_needed), static_cast<double>(r.a.n),
                              static_cast<double>(r.b.n), o.alpha);
  } else if (p <= o.alpha && std::fabs(change) >= o.min_effect) {
    r.verdict = change > 0 ? Verdict::kBFaster : Verdict::kAFaster;
    r.recommendation =
        change > 0 ? format("Prefer B: A takes %.3gx B's time (95%% CI %.3g to %.3g, p = %.2g).", r.speedup,
                            r.speedup_ci95.low, r.speedup_ci95.high, p)
                   : format("Keep A: B takes %.3gx A's time (95%% CI %.3g to %.3g, p = %.2g).", 1 / r.speedup,
                            1 / r.speedup_ci95.high, 1 / r.speedup_ci95.low, p);
  } else if (p > o.alpha && std::max(r.a.n, r.b.n) < r.min_samples_needed) {
    r.verdict = Verdict::kInsufficientSamples;
    r.recommendation = format("No difference yet (p = %.2g); to detect a %.3g%% change collect about %.0f samples of "
                              "each variant.",
                              p, o.min_effect * 100, static_cast<double>(r.min_samples_needed));
  } else {
    r.verdict = Verdict::kNoSignificantDifference;
    r.recommendation = p <= o.alpha
                           ? format("The variants differ (p = %.2g) but by %.3g%%, under the %.3g%% that matters: "
                                    "either will do.",
                                    p, std::fabs(change) * 100, o.min_effect * 100)
                           : format("No significant difference (p = %.2g); either variant will do.", p);
  }
}

AbResult compare(std::span<const double> a, std::span<const double> b, const AbOptions& o,
                 std::optional<double> adjusted_p) {
  AbResult r;
  r.a = summarize(a);
  r.b = summarize(b);
  r.speedup = r.b.mean_ms != 0 ? r.a.mean_ms / r.b.mean_ms : 0;
  if (!a.empty() && !b.empty()) {
    const double fit = kBootstrapDrawBudget / static_cast<double>(a.size() + b.size());
    r.bootstrap_resamples_used =
        fit >= static_cast<double>(o.bootstrap_resamples)
            ? o.bootstrap_resamples
            : std::min(o.bootstrap_resamples, std::max(kMinBootstrapResamples, static_cast<std::size_t>(fit)));
    r.speedup_ci95 = bootstrap_speedup_ci(a, b, r.bootstrap_resamples_used, o.seed);
    r.mann_whitney = mann_whitney_u(a, b);
    r.welch = welch_t_test(a, b);
    r.hodges_lehmann_shift_ms = hodges_lehmann_shift(a, b);
  }
  r.min_samples_needed = samples_needed(r.a, r.b, o);
  decide(r, o, adjusted_p.value_or(r.mann_whitney.p_value));
  return r;
}

}  // namespace perfscope::analysis
