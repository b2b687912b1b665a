// The producer-side subcommands: `perfscope push` (NDJSON events from stdin to a server) and
// `perfscope demo` (a real, instrumented CPU workload reporting to a server).
#pragma once

#include <atomic>
#include <string>

namespace perfscope::server {

struct PushOptions {
  std::string server = "http://127.0.0.1:8080";
  std::size_t batch_lines = 5000;
};

struct DemoOptions {
  std::string server = "http://127.0.0.1:8080";
  double duration_s = 0;     // 0: until stopped
  double request_rate = 20;  // inference requests per second (Poisson arrivals)
  bool llm = true;           // token-by-token generation with TTFT and token counts
  int matrix_size = 96;
};

// Both return a process exit code; `stop` ends the demo early (set from a signal handler).
int run_push(const PushOptions& options);
int run_demo(const DemoOptions& options, const std::atomic<bool>& stop);

}  // namespace perfscope::server
