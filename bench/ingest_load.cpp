// HTTP ingest load generator: several connections POST batched NDJSON kernel events to a
// running perfscope server for a fixed time; reports accepted events/s and request latency
// percentiles. Every request must be answered 200 (durability on: the server acks only after
// its commit). Usage: ingest_load URL [connections] [events_per_request] [seconds]
#include <algorithm>
#include <cmath>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "server/client/client.hpp"

using perfscope::server::HttpPoster;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s URL [connections] [events_per_request] [seconds]\n", argv[0]);
    return 2;
  }
  auto hp = perfscope::server::parse_http_url(argv[1]);
  if (!hp.ok()) {
    std::fprintf(stderr, "%s\n", hp.status().message().c_str());
    return 2;
  }
  const int connections = argc > 2 ? std::atoi(argv[2]) : 4;
  const int per_request = argc > 3 ? std::atoi(argv[3]) : 1000;
  const double seconds = argc > 4 ? std::atof(argv[4]) : 10;

  // One realistic body per connection, reused: a kernel event as an instrumented program
  // sends it (name, device, stream, variant, times, launch configuration).
  auto body_for = [&](int conn) {
    std::string body;
    for (int i = 0; i < per_request; ++i) {
      long long start = 1'700'000'000'000'000'000LL + static_cast<long long>(i) * 1000;
      body += "{\"type\":\"kernel\",\"name\":\"gemm_kernel_" + std::to_string(i % 16) + "\",\"device\":\"0\",\"stream\":\"" +
              std::to_string(conn) + "\",\"variant\":\"tiled\",\"start_ns\":" + std::to_string(start) +
              ",\"end_ns\":" + std::to_string(start + 850) + ",\"grid\":[128,64,1],\"block\":[256,1,1]}\n";
    }
    return body;
  };

  std::atomic<long long> events{0}, failures{0};
  std::vector<std::vector<double>> latencies(static_cast<std::size_t>(connections));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  long long body_bytes = 0;
  for (int c = 0; c < connections; ++c) {
    std::string body = body_for(c);
    body_bytes = static_cast<long long>(body.size());
    threads.emplace_back([&, c, body = std::move(body)] {
      HttpPoster poster(*hp, std::chrono::seconds(30));
      while (std::chrono::steady_clock::now() < deadline) {
        auto s = std::chrono::steady_clock::now();
        auto res = poster.post("/api/v1/events", "application/x-ndjson", body);
        auto e = std::chrono::steady_clock::now();
        if (!res.ok() || res->status != 200) {
          ++failures;
          continue;
        }
        events += per_request;
        latencies[static_cast<std::size_t>(c)].push_back(std::chrono::duration<double, std::milli>(e - s).count());
      }
    });
  }
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) {  // nearest rank
    if (all.empty()) return 0.0;
    std::size_t rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(all.size())));
    return all[std::max<std::size_t>(rank, 1) - 1];
  };
  std::printf("connections=%d events_per_request=%d body_bytes=%lld seconds=%.1f\n", connections, per_request,
              body_bytes, elapsed);
  std::printf("requests=%zu failed=%lld events=%lld events_per_second=%.0f\n", all.size(), failures.load(),
              events.load(), static_cast<double>(events.load()) / elapsed);
  std::printf("latency_ms p50=%.2f p90=%.2f p99=%.2f max=%.2f\n", pct(50), pct(90), pct(99), all.empty() ? 0 : all.back());
  return failures.load() == 0 ? 0 : 1;
}
