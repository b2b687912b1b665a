#include "engine/analysis/log_histogram.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/analysis/stats.hpp"

namespace perfscope::analysis {
namespace {

constexpr std::uint32_t kBuckets = (LogHistogram::kMaxExponent - LogHistogram::kMinExponent) * LogHistogram::kSubBuckets;

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

bool get_varint(std::string_view in, std::size_t& pos, std::uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= in.size()) return false;
    auto b = static_cast<unsigned char>(in[pos++]);
    v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

}  // namespace

std::uint32_t LogHistogram::bucket_of(double value) {
  if (!(value > 0)) return 0;
  int e = 0;
  const double m = std::frexp(value, &e);  // value = m · 2^e, m in [0.5, 1)
  if (e < kMinExponent) return 0;
  if (e >= kMaxExponent) return kBuckets - 1;
  const auto sub = static_cast<std::uint32_t>((m - 0.5) * 2 * kSubBuckets);
  return static_cast<std::uint32_t>(e - kMinExponent) * kSubBuckets + std::min<std::uint32_t>(sub, kSubBuckets - 1);
}

double LogHistogram::midpoint(std::uint32_t bucket) {
  const int e = static_cast<int>(bucket / kSubBuckets) + kMinExponent;
  const double sub = bucket % kSubBuckets;
  return std::ldexp(0.5 + (sub + 0.5) / (2.0 * kSubBuckets), e);
}

void LogHistogram::add(double value, std::uint64_t count) {
  if (count == 0 || !std::isfinite(value)) return;
  int e = 0;
  std::frexp(value, &e);
  if (!(value > 0) || e < kMinExponent || e >= kMaxExponent) clamped_ += count;
  const std::uint32_t b = bucket_of(value);
  auto it = std::lower_bound(bins_.begin(), bins_.end(), b, [](const Bin& x, std::uint32_t k) { return x.bucket < k; });
  if (it != bins_.end() && it->bucket == b) {
    it->count += count;
  } else {
    bins_.insert(it, Bin{b, count});
  }
  total_ += count;
  sum_ += value * static_cast<double>(count);
}

void LogHistogram::merge(const LogHistogram& o) {
  std::vector<Bin> out;
  out.reserve(bins_.size() + o.bins_.size());
  auto a = bins_.cbegin(), b = o.bins_.cbegin();
  while (a != bins_.cend() || b != o.bins_.cend()) {
    if (b == o.bins_.cend() || (a != bins_.cend() && a->bucket < b->bucket)) {
      out.push_back(*a++);
    } else if (a == bins_.cend() || b->bucket < a->bucket) {
      out.push_back(*b++);
    } else {
      out.push_back({a->bucket, a->count + b->count});
      ++a;
      ++b;
    }
  }
  bins_ = std::move(out);
  total_ += o.total_;
  clamped_ += o.clamped_;
  sum_ += o.sum_;
}

bool LogHistogram::subtract(const LogHistogram& o) {
  std::vector<Bin> out;
  out.reserve(bins_.size());
  auto b = o.bins_.begin();
  for (const Bin& a : bins_) {
    if (b != o.bins_.end() && b->bucket < a.bucket) return false;  // a bucket this never had
    if (b != o.bins_.end() && b->bucket == a.bucket) {
      if (b->count > a.count) return false;
      if (a.count - b->count) out.push_back({a.bucket, a.count - b->count});
      ++b;
    } else {
      out.push_back(a);
    }
  }
  if (b != o.bins_.end() || o.total_ > total_ || o.clamped_ > clamped_) return false;
  bins_ = std::move(out);
  total_ -= o.total_;
  clamped_ -= o.clamped_;
  sum_ -= o.sum_;
  return true;
}

std::optional<double> LogHistogram::percentile(double q) const {
  if (total_ == 0) return std::nullopt;
  return midpoint(bucket_at_rank(nearest_rank_index(std::clamp(q, 0.0, 100.0), static_cast<std::size_t>(total_))));
}

std::uint32_t LogHistogram::bucket_at_rank(std::uint64_t k) const {
  std::uint64_t seen = 0;
  for (const Bin& bin : bins_) {
    seen += bin.count;
    if (seen > k) return bin.bucket;
  }
  return bins_.empty() ? 0 : bins_.back().bucket;
}

std::uint64_t LogHistogram::count_above(double value) const {
  const std::uint32_t b = bucket_of(value);
  std::uint64_t n = 0;
  for (auto it = bins_.rbegin(); it != bins_.rend() && it->bucket > b; ++it) n += it->count;
  return n;
}

std::optional<double> LogHistogram::min() const {
  return bins_.empty() ? std::nullopt : std::optional<double>(midpoint(bins_.front().bucket));
}
std::optional<double> LogHistogram::max() const {
  return bins_.empty() ? std::nullopt : std::optional<double>(midpoint(bins_.back().bucket));
}

std::string LogHistogram::serialize() const {
  // Version byte, totals, then (bucket delta, count) varint pairs.
  std::string out;
  out += '\x01';
  put_varint(out, total_);
  put_varint(out, clamped_);
  char sum[sizeof(double)];
  std::memcpy(sum, &sum_, sizeof sum);
  out.append(sum, sizeof sum);
  put_varint(out, bins_.size());
  std::uint32_t prev = 0;
  for (const Bin& b : bins_) {
    put_varint(out, b.bucket - prev);
    put_varint(out, b.count);
    prev = b.bucket;
  }
  return out;
}

std::optional<LogHistogram> LogHistogram::deserialize(std::string_view in) {
  if (in.empty() || in[0] != '\x01') return std::nullopt;
  std::size_t pos = 1;
  LogHistogram h;
  std::uint64_t n = 0;
  if (!get_varint(in, pos, h.total_) || !get_varint(in, pos, h.clamped_)) return std::nullopt;
  if (pos + sizeof(double) > in.size()) return std::nullopt;
  std::memcpy(&h.sum_, in.data() + pos, sizeof(double));
  pos += sizeof(double);
  if (!get_varint(in, pos, n) || n > kBuckets) return std::nullopt;
  std::uint64_t bucket = 0, counted = 0;
  h.bins_.reserve(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    std::uint64_t delta = 0, count = 0;
    if (!get_varint(in, pos, delta) || !get_varint(in, pos, count)) return std::nullopt;
    bucket += delta;
    if (bucket >= kBuckets || count == 0 || (i > 0 && delta == 0)) return std::nullopt;
    h.bins_.push_back({static_cast<std::uint32_t>(bucket), count});
    counted += count;
  }
  if (pos != in.size() || counted != h.total_) return std::nullopt;
  return h;
}

}  // namespace perfscope::analysis
