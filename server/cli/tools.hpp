// The producer-side subcommands: `perfscope push` (NDJSON events from stdin to a server),
// `perfscope import` (the same from a file), `perfscope run` (an unmodified CUDA program traced
// through the CUPTI injection library) and `perfscope demo` (a real, instrumented CPU workload
// reporting to a server); and the readers `report`, `top` and `healthcheck`.
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.hpp"

namespace perfscope::server {

struct PushOptions {
  std::string server = "http://127.0.0.1:8080";
  std::string token;  // PERFSCOPE_TOKEN
  std::size_t batch_lines = 5000;
};

struct RunOptions {
  std::string server = "http://127.0.0.1:8080";
  std::string token;
  std::string name;     // empty: the command's name and the start time
  std::string kinds = "kernel,memcpy,memset,launch,memory";
  std::string output;   // where events go when no server answers; empty: perfscope-run-NAME.ndjson
  std::string library;  // empty: PERFSCOPE_CUPTI_LIBRARY, else beside the perfscope executable
  std::string cupti;    // the CUPTI library to trace with; empty: found in the traced process
  // Duty-cycled tracing (trace::make_trace_schedule): any two of these; empty: traced throughout.
  std::string duty_cycle;   // "5%"
  std::string trace_window, trace_every;  // durations: "200ms", "4s"
  std::vector<std::string> command;
};

// `perfscope relay`: a trace socket without a command (a sidecar's), forwarding until stopped.
struct RelayOptions {
  std::string socket;        // where to listen
  std::string library_into;  // a folder to copy the injection library into first (a shared volume)
  std::string server = "http://127.0.0.1:8080";
  std::string token;
  std::string name;     // the run; empty: the host's name and the start time
  std::string output;   // where events go when no server answers
  std::string library;  // empty: PERFSCOPE_CUPTI_LIBRARY, else beside the perfscope executable
};

struct DemoOptions {
  std::string server = "http://127.0.0.1:8080";
  std::string token;
  double duration_s = 0;     // 0: until stopped
  double request_rate = 20;  // inference requests per second (Poisson arrivals)
  bool llm = true;           // token-by-token generation with TTFT and token counts
  int matrix_size = 96;
  std::string run;           // a run its events belong to (empty: none)
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
// `perfscope import FILE`: what `perfscope run` wrote when no server answered (NDJSON), or a
// trace another tool wrote (ONNX Runtime's profile: trace_import.hpp) as a run named `run`
// (default: the file's name) of model `model` (default: the run's name).
struct ImportOptions {
  std::string path, run, model;
};
int run_import(const PushOptions& options, const ImportOptions& import);
// Exits with the traced command's status (128+signal when a signal ended it).
int run_traced(const RunOptions& options, const std::atomic<bool>& stop);
int run_demo(const DemoOptions& options, const std::atomic<bool>& stop);
int run_relay(const RelayOptions& options, const std::atomic<bool>& stop);
int run_report(const ReportOptions& options);
int run_top(const TopOptions& options, const std::atomic<bool>& stop);
// 0 when GET /healthz answers 200 within 5 s, else 1 (with the reason on stderr).
int run_healthcheck(const std::string& server, const std::string& pinned_certificate = {});

// Writes `content` to a temporary file beside `path`, then renames it over `path`: readers see
// the old file or the whole new one, never a half-written one.
Status write_file_atomically(const std::string& path, std::string_view content);

}  // namespace perfscope::server
