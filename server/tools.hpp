// The producer-side subcommands: `perfscope push` (NDJSON events from stdin to a server) and
// `perfscope demo` (a real, instrumented CPU workload reporting to a server).
#pragma once

#include <atomic>
#include <string>
#include <string_view>

#include "engine/status.hpp"

namespace perfscope::server {

struct PushOptions {
  std::string server = "http://127.0.0.1:8080";
  std::string token;  // PERFSCOPE_TOKEN
  std::size_t batch_lines = 5000;
};

struct DemoOptions {
  std::string server = "http://127.0.0.1:8080";
  std::string token;
  double duration_s = 0;     // 0: until stopped
  double request_rate = 20;  // inference requests per second (Poisson arrivals)
  bool llm = true;           // token-by-token generation with TTFT and token counts
  int matrix_size = 96;
};

struct ReportOptions {
  std::string format = "terminal";  // json, csv, md, html, terminal
  std::string window;               // empty: the report's default (1h)
  std::string server;               // a running server's URL, or
  std::string db;                   // a database file read directly
  std::string output;               // file to write (atomically); empty: stdout
  std::string table = "kernels";    // csv
  double sla_ms = 0;                // 0: no SLA
  std::string device;
  std::string token;
};

struct TopOptions {
  std::string server = "http://127.0.0.1:8080";
  std::string token;
  std::string window = "5m";
  double interval_s = 2;
  int iterations = 0;  // 0: until stopped
};

// All return a process exit code; `stop` ends the demo or top early (set from a signal handler).
int run_push(const PushOptions& options);
int run_demo(const DemoOptions& options, const std::atomic<bool>& stop);
int run_report(const ReportOptions& options);
int run_top(const TopOptions& options, const std::atomic<bool>& stop);
// 0 when GET /healthz answers 200 within 5 s, else 1 (with the reason on stderr).
int run_healthcheck(const std::string& server);

// Writes `content` to a temporary file beside `path`, then renames it over `path`: readers see
// the old file or the whole new one, never a half-written one.
Status write_file_atomically(const std::string& path, std::string_view content);

}  // namespace perfscope::server
