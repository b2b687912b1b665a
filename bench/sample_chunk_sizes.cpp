// Bytes per sample of a database's sampled series under the chunk codings (issue 21): every
// series re-encoded in chunks of 120 sampling passes, once with XOR'd values alone (Gorilla's
// value coding, timestamps on the shared passes) and once with the coding db/sample_codec
// picks per chunk; series by series, with what encoding and decoding cost per sample. The
// chunks' row overhead in SQLite is not counted here (the database's size is, in RESULTS).
//
// Usage: sample_chunk_sizes DATABASE   (migrated first: run it on a copy of an older file)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "db/internal/sample_codec.hpp"
#include "db/sample_reader.hpp"
#include "db/internal/migrations.hpp"
#include "db/internal/sqlite.hpp"

using namespace perfscope;
using namespace perfscope::db;

namespace {

constexpr std::size_t kChunk = 120;

struct Totals {
  std::size_t samples = 0, xor_bytes = 0, best_bytes = 0;
  double encode_ns = 0, decode_ns = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DATABASE\n", argv[0]);
    return 2;
  }
  std::map<std::string, std::vector<Sample>> series;
  {
    auto conn = Connection::open(argv[1]);
    Status migrated = conn.ok() ? migrate(*conn) : conn.status();
    if (!migrated.ok()) {
      std::fprintf(stderr, "%s\n", migrated.message().c_str());
      return 1;
    }
  }
  {
    auto reader = SampleReader::open(argv[1]);
    if (!reader.ok()) {
      std::fprintf(stderr, "%s\n", reader.status().message().c_str());
      return 1;
    }
    auto listed = (*reader)->list_series(false);
    if (!listed.ok()) {
      std::fprintf(stderr, "%s\n", listed.status().message().c_str());
      return 1;
    }
    for (const StoredSeries& s : *listed) {
      auto rows = (*reader)->read(s.db_id, INT64_MIN, INT64_MAX);
      if (!rows.ok()) {
        std::fprintf(stderr, "%s\n", rows.status().message().c_str());
        return 1;
      }
      if (!rows->empty()) series[s.key.canonical()] = std::move(*rows);
    }
  }
  // The passes: every timestamp some series was sampled at.
  std::set<TimestampNs> pass_set;
  for (const auto& [name, samples] : series) {
    for (const Sample& s : samples) pass_set.insert(s.ts_ns);
  }
  const std::vector<TimestampNs> all_passes(pass_set.begin(), pass_set.end());
  std::vector<PassTimes> pass_chunks;
  for (std::size_t i = 0; i < all_passes.size(); i += kChunk) {
    PassTimes p;
    if (i > 0) p.before = all_passes[i - 1];
    p.times.assign(all_passes.begin() + static_cast<std::ptrdiff_t>(i),
                   all_passes.begin() + static_cast<std::ptrdiff_t>(std::min(all_passes.size(), i + kChunk)));
    pass_chunks.push_back(std::move(p));
  }
  std::size_t pass_bytes = 0;
  for (const PassTimes& p : pass_chunks) pass_bytes += encode_pass_times(p).size();

  std::printf("%zu series, %zu passes (%zu pass chunks, %zu bytes)\n\n", series.size(), all_passes.size(),
              pass_chunks.size(), pass_bytes);
  std::printf("| series | samples | XOR B/sample | chosen B/sample | codings chosen |\n| --- | ---: | ---: | ---: | --- |\n");
  Totals total;
  const ChunkCoding xor_only{};
  std::vector<std::pair<double, std::string>> lines;
  for (const auto& [name, samples] : series) {
    Totals t;
    std::map<std::string, int> codings;
    std::size_t pos = 0;
    for (std::size_t c = 0; c < pass_chunks.size() && pos < samples.size(); ++c) {
      const PassTimes& p = pass_chunks[c];
      std::vector<Sample> part;
      std::vector<std::uint32_t> index;
      while (pos < samples.size() && samples[pos].ts_ns <= p.times.back()) {
        auto it = std::lower_bound(p.times.begin(), p.times.end(), samples[pos].ts_ns);
        index.push_back(static_cast<std::uint32_t>(it - p.times.begin()));
        part.push_back(samples[pos++]);
      }
      if (part.empty()) continue;
      t.samples += part.size();
      t.xor_bytes += encode_samples(part, &p, index, xor_only).data.size();
      const auto t0 = std::chrono::steady_clock::now();
      EncodedChunk best = encode_samples(part, &p, index);
      const auto t1 = std::chrono::steady_clock::now();
      std::vector<Sample> back;
      Status s = decode_samples(best.data, part.size(), &p, back);
      const auto t2 = std::chrono::steady_clock::now();
      if (!s.ok()) {
        std::fprintf(stderr, "%s: %s\n", name.c_str(), s.message().c_str());
        return 1;
      }
      t.encode_ns += std::chrono::duration<double, std::nano>(t1 - t0).count();
      t.decode_ns += std::chrono::duration<double, std::nano>(t2 - t1).count();
      t.best_bytes += best.data.size();
      static const char* kNames[] = {"xor", "scaled", "rate", "ratio"};
      ++codings[kNames[static_cast<int>(best.coding.values)]];
    }
    std::string chosen;
    for (const auto& [c, n] : codings) chosen += (chosen.empty() ? "" : ", ") + c + " " + std::to_string(n);
    char line[512];
    std::snprintf(line, sizeof line, "| `%s` | %zu | %.2f | %.2f | %s |\n", name.c_str(), t.samples,
                  static_cast<double>(t.xor_bytes) / static_cast<double>(t.samples),
                  static_cast<double>(t.best_bytes) / static_cast<double>(t.samples), chosen.c_str());
    lines.emplace_back(-static_cast<double>(t.best_bytes) / static_cast<double>(t.samples), line);
    total.samples += t.samples;
    total.xor_bytes += t.xor_bytes;
    total.best_bytes += t.best_bytes;
    total.encode_ns += t.encode_ns;
    total.decode_ns += t.decode_ns;
  }
  std::sort(lines.begin(), lines.end());
  for (const auto& [key, line] : lines) std::fputs(line.c_str(), stdout);
  const auto n = static_cast<double>(total.samples);
  std::printf("| **all, with the pass chunks** | %zu | **%.3f** | **%.3f** | |\n\n", total.samples,
              static_cast<double>(total.xor_bytes + pass_bytes) / n, static_cast<double>(total.best_bytes + pass_bytes) / n);
  std::printf("choosing and encoding a whole chunk: %.0f ns per sample; decoding: %.1f ns per sample\n",
              total.encode_ns / n, total.decode_ns / n);
  return 0;
}
