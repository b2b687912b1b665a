#include "server/cli/cli.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "server/service/query_time.hpp"
#include "server/api/version.hpp"
#include "server/cli/option_specs.hpp"

namespace perfscope::server {
namespace {

// "host:port" with an IPv4 address, "[v6]:port", or "localhost:port".
std::string parse_listen(const std::string& text, ServerConfig& out) {
  std::string host, port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return "expected [ipv6]:port, got '" + text + "'";
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos) return "expected host:port, got '" + text + "'";
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty()) return "missing host in '" + text + "'";
  char* end = nullptr;
  long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535) return "port must be 0-65535, got '" + port + "'";
  out.listen_host = host == "localhost" ? "127.0.0.1" : host;
  out.listen_port = static_cast<std::uint16_t>(p);
  return {};
}

// Fills options that neither the command line nor the environment set from a config file
// (CLI11 reads config files for the main app only, and serve is a subcommand).
void apply_config_file(CLI::App& serve, const std::string& path) {
  std::vector<CLI::ConfigItem> items;
  try {
    items = CLI::ConfigTOML().from_file(path);
  } catch (const CLI::FileError&) {
    throw CLI::ValidationError("--config", "cannot read config file '" + path + "'");
  }
  for (const CLI::ConfigItem& item : items) {
    if (item.name == "config" || item.name == "help" || !item.parents.empty()) {
      throw CLI::ValidationError("--config", "'" + item.fullname() + "' is not an option of perfscope serve (" + path + ")");
    }
    CLI::Option* opt = serve.get_option_no_throw("--" + item.name);
    if (opt == nullptr) {
      throw CLI::ValidationError("--config", "unknown option '" + item.name + "' in " + path);
    }
    if (opt->count() > 0) continue;  // the command line or the environment already set it
    for (const std::string& value : item.inputs) opt->add_result(value);
    opt->run_callback();  // validates and stores the value
  }
}

}  // namespace

Result<std::uint64_t> parse_byte_size(std::string_view text) {
  auto bad = [&] {
    return Status::invalid_argument("a size must be a number with an optional unit (B, kB, MB, GB, TB, KiB, MiB, GiB, "
                                    "TiB), e.g. 20GB, got '" + std::string(text) + "'");
  };
  double amount = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), amount);
  if (ec != std::errc() || p == text.data() || !(amount >= 0)) return bad();
  const std::string_view unit(p, static_cast<std::size_t>(text.data() + text.size() - p));
  constexpr std::pair<std::string_view, double> kUnits[] = {
      {"", 1},       {"B", 1},        {"kB", 1e3},          {"KB", 1e3},          {"MB", 1e6},
      {"GB", 1e9},   {"TB", 1e12},    {"KiB", 1024.0},      {"MiB", 1048576.0},   {"GiB", 1073741824.0},
      {"TiB", 1099511627776.0}};
  for (auto [name, scale] : kUnits) {
    if (unit != name) continue;
    const double bytes = amount * scale;
    if (bytes >= 1.8e19) return bad();
    return static_cast<std::uint64_t>(bytes);
  }
  return bad();
}

// The option table, built once per parser: CLI11's App with every option bound to a field of
// `parsed` or of `texts`. Building it is most of the cost of a parse (hundreds of allocations),
// so a fuzzer or a test that parses many command lines keeps one.
struct CommandLineParser::Table {
  // Values given as text or in other units, converted after parsing; defaults from AppConfig's.
  struct Texts {
    explicit Texts(const AppConfig& c)
        : listen(c.server.listen_host + ":" + std::to_string(c.server.listen_port)),
          sampling_ms(c.engine.sampling_interval.count()),
          timeout_ms(c.server.request_timeout.count()),
          header_timeout_ms(c.server.header_timeout.count()),
          commit_ms(c.storage.commit_interval.count()),
          shutdown_ms(c.server.shutdown_timeout.count()),
          retention_ms(c.storage.retention_interval.count()),
          gpu_process_ms(c.engine.gpu_process_interval.count()),
          pod_resources_ms(c.engine.pod_resources_interval.count()) {}
    std::string listen;
    std::int64_t sampling_ms, timeout_ms, header_timeout_ms, commit_ms, shutdown_ms, retention_ms, gpu_process_ms,
        pod_resources_ms;
    std::string raw_max_age = "0", rollup_max_age = "0", max_size = "0";
    std::string cardinality_limits, cardinality_window = "24h";
    std::string config_file;
    std::vector<std::string> scrape, gpu_peaks, device_targets;
    std::string log_level = "info", log_format = "text";
  };

  Table();
  ParsedCommand parse(int argc, const char* const* argv);
  void add_commands();
  void add_collector_options();
  void add_transport_options();
  void add_storage_options();
  void add_access_options();
  void add_ingest_and_analysis_options();
  void add_tls_and_log_options();

  ParsedCommand parsed;
  Texts texts{parsed.config};
  CLI::App app{"perfscope — live performance monitor and analyzer for GPU and ML-inference hosts", "perfscope"};
  CLI::App *serve, *version, *licenses, *push, *import, *run, *relay, *demo, *report, *top, *healthcheck;
  CLI::Option* health_server;
};

CommandLineParser::Table::Table() {
  add_commands();
  add_collector_options();
  add_transport_options();
  add_storage_options();
  add_access_options();
  add_ingest_and_analysis_options();
  add_tls_and_log_options();
  // The footer speaks of serve's options: the other commands' help leaves it out (they take no
  // --config; each of their options names its own environment variable).
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (sub != serve) sub->footer("");
  }
}


// The subcommands, and the options of every one but serve.
void CommandLineParser::Table::add_commands() {
  app.require_subcommand(1);
  app.footer("Every serve option can also come from the environment (PERFSCOPE_<OPTION>, e.g.\n"
             "PERFSCOPE_LISTEN) or from a config file given with --config (lines of `option = value`).\n"
             "Precedence: command line, then environment, then config file, then the default.");

  serve = app.add_subcommand("serve", "Run the monitoring server and the dashboard");
  version = app.add_subcommand("version", "Print the version and build information");
  // `--version` and `-V` too, as users try first; both print what `version` prints.
  app.set_version_flag("-V,--version", "perfscope " + std::string(perfscope::server::version()) + " (" +
                                           std::string(build_type()) + ", " + std::string(compiler()) + ")");
  licenses = app.add_subcommand("licenses", "Print perfscope's licence and the notices of the third-party software it "
                                            "includes (also served as /NOTICE.txt and /LICENSE.txt)");
  push = app.add_subcommand("push", "Send events (NDJSON, one per line) from stdin to a server");
  push->add_option("--server", parsed.push.server, "perfscope server URL")->envname("PERFSCOPE_SERVER")->capture_default_str();
  push->add_option("--token", parsed.push.token, "Write token, when the server requires one")->envname("PERFSCOPE_TOKEN");
  push->add_option("--batch", parsed.push.batch_lines, "Lines per request")->check(CLI::Range(1, 1'000'000))->capture_default_str();
  import = app.add_subcommand("import", "Load an events file (NDJSON, e.g. what `perfscope run` wrote offline), a "
                                        "PyTorch profiler trace (Chrome trace JSON) or an ONNX Runtime profile into a server");
  import->add_option("file", parsed.import.path, "The NDJSON file or the trace (.gz read too)")->required();
  import->add_option("--name", parsed.import.run, "A trace's run name (default: the file's name)");
  import->add_option("--model", parsed.import.model, "A trace's model name (default: the run's name)");
  import->add_option("--server", parsed.push.server, "perfscope server URL")->envname("PERFSCOPE_SERVER")->capture_default_str();
  import->add_option("--token", parsed.push.token, "Write token, when the server requires one")->envname("PERFSCOPE_TOKEN");
  run = app.add_subcommand(
      "run", "Run a CUDA program with kernel tracing (CUPTI) and send its kernels, copies and allocations to a server");
  RunOptions& rn = parsed.run;
  run->add_option("--server", rn.server, "perfscope server URL")->envname("PERFSCOPE_SERVER")->capture_default_str();
  run->add_option("--token", rn.token, "Write token, when the server requires one")->envname("PERFSCOPE_TOKEN");
  run->add_option("--name", rn.name, "Run name, tagged on every event as `run` (default: command and start time)");
  run->add_option("--kinds", rn.kinds,
                  "Activity kinds: kernel, memcpy, memset, launch (launch calls, by callbacks), runtime (records of "
                  "the runtime calls that start GPU work), driver, memory, or all")
      ->capture_default_str();
  run->add_option("--duty-cycle", rn.duty_cycle,
                  "Trace only this share of the time (e.g. 5%), in windows that open on a wall-clock schedule; "
                  "counts and rates are scaled to it in the analysis");
  run->add_option("--trace-window", rn.trace_window, "Duty cycle: length of each tracing window (default 200ms)");
  run->add_option("--trace-every", rn.trace_every, "Duty cycle: a window opens every this long (e.g. 4s)");
  run->add_option("--output,-o", rn.output, "Where events go when no server answers (default perfscope-run-NAME.ndjson)");
  run->add_option("--library", rn.library, "The injection library (default: PERFSCOPE_CUPTI_LIBRARY, else beside perfscope)");
  run->add_option("--cupti", rn.cupti,
                  "The CUPTI library to trace with (default: the one the program loaded, its Python environment's, "
                  "the CUDA toolkit's, then the system's)");
  run->add_option("command", rn.command, "The command and its arguments, after --")->required();
  relay = app.add_subcommand(
      "relay", "Take traced programs' events on a unix socket and send them to a server until stopped: the sidecar of "
               "programs started with CUDA_INJECTION64_PATH and PERFSCOPE_TRACE_SOCKET set (no perfscope run)");
  RelayOptions& rl = parsed.relay;
  relay->add_option("--socket", rl.socket, "The unix socket to listen on (in a volume the traced programs share)")->required();
  relay->add_option("--library-into", rl.library_into,
                    "First copy the injection library (libperfscope_cupti.so) into this folder, for the programs to load");
  relay->add_option("--server", rl.server, "perfscope server URL")->envname("PERFSCOPE_SERVER")->capture_default_str();
  relay->add_option("--token", rl.token, "Write token, when the server requires one")->envname("PERFSCOPE_TOKEN");
  relay->add_option("--name", rl.name, "Run name: give the traced programs the same in PERFSCOPE_RUN_NAME (default: host and start time)")
      ->envname("PERFSCOPE_RUN_NAME");
  relay->add_option("--output,-o", rl.output, "Where events go when no server answers (default perfscope-run-NAME.ndjson)");
  relay->add_option("--library", rl.library, "The injection library (default: PERFSCOPE_CUPTI_LIBRARY, else beside perfscope)");
  demo = app.add_subcommand(
      "demo", "Run a real instrumented CPU workload (matmul variants, allocations, LLM-style requests) reporting to a server");
  demo->add_option("--server", parsed.demo.server, "perfscope server URL")->envname("PERFSCOPE_SERVER")->capture_default_str();
  demo->add_option("--token", parsed.demo.token, "Write token, when the server requires one")->envname("PERFSCOPE_TOKEN");
  demo->add_option("--duration", parsed.demo.duration_s, "Seconds to run (0: until Ctrl-C)")->check(CLI::Range(0.0, 1e7))->capture_default_str();
  demo->add_option("--rate", parsed.demo.request_rate, "Inference requests per second (Poisson arrivals)")
      ->check(CLI::Range(0.1, 10000.0))->capture_default_str();
  demo->add_option("--llm", parsed.demo.llm, "Generate tokens one by one and report TTFT and token counts")->capture_default_str();
  demo->add_option("--matrix-size", parsed.demo.matrix_size, "Matrix size of the matmul kernels")
      ->check(CLI::Range(16, 1024))->capture_default_str();
  demo->add_option("--run", parsed.demo.run, "Report the demo's work as a run of this name (GET /api/v1/runs)");

  report = app.add_subcommand(
      "report", "Write a report (json, csv, md, html, terminal) from a running server or a database file");
  ReportOptions& ro = parsed.report;
  report->add_option("--format,-f", ro.format, "json, csv, md, html or terminal")
      ->check(CLI::IsMember({"json", "csv", "md", "html", "terminal"}))->capture_default_str();
  report->add_option("--window,-w", ro.window, "Time window: all, or a duration such as 30s, 5m, 1h (default 1h)");
  auto* report_server = report->add_option("--server", ro.server, "perfscope server URL (default http://127.0.0.1:8080)")
                            ->envname("PERFSCOPE_SERVER");
  report->add_option("--db", ro.db, "Read this database file directly instead of asking a server")
      ->excludes(report_server);
  report->add_option("--output,-o", ro.output, "Write to this file (atomically) instead of stdout; .csv.gz is gzipped");
  report->add_option("--table", ro.table, "CSV table: samples, kernels, inference, memory or abtests")
      ->check(CLI::IsMember({"samples", "kernels", "inference", "memory", "abtests"}))->capture_default_str();
  report->add_option("--sla-ms", ro.sla_ms, "Latency SLA in milliseconds for the percentile table")->check(CLI::Range(0.0, 1e9));
  report->add_option("--device", ro.device, "Only this device");
  report->add_option("--token", ro.token, "Read token, when the server requires one")->envname("PERFSCOPE_TOKEN");
  top = app.add_subcommand("top", "The terminal report of a running server, refreshed live");
  top->add_option("--server", parsed.top.server, "perfscope server URL")->envname("PERFSCOPE_SERVER")->capture_default_str();
  top->add_option("--token", parsed.top.token, "Read token, when the server requires one")->envname("PERFSCOPE_TOKEN");
  top->add_option("--window,-w", parsed.top.window, "Time window of each view")->capture_default_str();
  top->add_option("--interval", parsed.top.interval_s, "Seconds between refreshes")->check(CLI::Range(0.2, 3600.0))->capture_default_str();
  top->add_option("--iterations,-n", parsed.top.iterations, "Stop after this many views (0: until Ctrl-C)")
      ->check(CLI::Range(0, 1'000'000))->capture_default_str();

  healthcheck = app.add_subcommand(
      "healthcheck", "Exit 0 when the server answers GET /healthz with 200 (for container health checks)");
  health_server = healthcheck->add_option("--server", parsed.healthcheck_server,
                                                "perfscope server URL (default: the port of PERFSCOPE_LISTEN on loopback)")
                            ->envname("PERFSCOPE_HEALTHCHECK_SERVER");
}

// serve: the config file, the listen address, the data directory and the collectors.
void CommandLineParser::Table::add_collector_options() {
  AppConfig& c = parsed.config;
  Texts& t = texts;
  serve->add_option("--config", t.config_file, "Read options from this file (`option = value` lines, TOML subset)")
      ->envname("PERFSCOPE_CONFIG");
  serve->add_option("--listen", t.listen, "Address to listen on, host:port (port 0 picks a free one)")
      ->envname("PERFSCOPE_LISTEN")->capture_default_str();
  serve->add_option("--data-dir", c.storage.data_dir, "Directory of the SQLite database (created if missing)")
      ->envname("PERFSCOPE_DATA_DIR")->capture_default_str();
  serve->add_option("--sampling-interval-ms", t.sampling_ms, "Collector sampling interval in milliseconds")
      ->envname("PERFSCOPE_SAMPLING_INTERVAL_MS")->check(CLI::Range(10, 60000))->capture_default_str();
  serve->add_option("--history-buffer-size", c.engine.history_buffer_size, "Samples kept in memory per series")
      ->envname("PERFSCOPE_HISTORY_BUFFER_SIZE")->check(CLI::Range(10, 10'000'000))->capture_default_str();
  serve->add_option("--enable-host-collector", c.engine.enable_host_collector,
                    "Collect host and process metrics from procfs/sysfs (true|false)")
      ->envname("PERFSCOPE_ENABLE_HOST_COLLECTOR")->capture_default_str();
  serve->add_option("--procfs", c.engine.procfs,
                    "Where procfs is mounted: the host's in a container (e.g. /host/proc, with the host's PID namespace)")
      ->envname("PERFSCOPE_PROCFS")->capture_default_str();
  serve->add_option("--sysfs", c.engine.sysfs, "Where sysfs is mounted: the host's in a container (e.g. /host/sys)")
      ->envname("PERFSCOPE_SYSFS")->capture_default_str();
  serve->add_option("--enable-gpu-collector", c.engine.enable_gpu_collector,
                    "Collect NVIDIA GPU metrics through NVML when it is present (true|false)")
      ->envname("PERFSCOPE_ENABLE_GPU_COLLECTOR")->capture_default_str();
  serve->add_option("--nvml-library", c.engine.nvml_library,
                    "Path of the NVML library to load (default: libnvidia-ml.so.1 from the system)")
      ->envname("PERFSCOPE_NVML_LIBRARY");
  serve->add_option("--gpu-process-interval-ms", t.gpu_process_ms,
                    "How often GPU processes (their memory, SM share and host cost) are read, on a thread of their "
                    "own; the driver keeps one SM-share period of ~200 ms, so a longer interval sees part of the time. "
                    "The driver's per-process call costs ~1.4 ms with 10 processes")
      ->envname("PERFSCOPE_GPU_PROCESS_INTERVAL_MS")->check(CLI::Range(10, 600000))->capture_default_str();
  serve->add_option("--gpu-process-series-limit", c.engine.gpu_process_series_limit,
                    "GPU processes given series of their own for the server's life; later ones keep only their "
                    "lifetime records (/api/v1/processes)")
      ->envname("PERFSCOPE_GPU_PROCESS_SERIES_LIMIT")->check(CLI::Range(std::size_t{0}, std::size_t{1'000'000}))
      ->capture_default_str();
  serve->add_option("--pod-resources-socket", c.engine.pod_resources_socket,
                    "The kubelet's PodResources socket (e.g. /var/lib/kubelet/pod-resources/kubelet.sock, mounted "
                    "into the agent): GPUs and their processes get the pod, namespace and container that hold them")
      ->envname("PERFSCOPE_POD_RESOURCES_SOCKET");
  serve->add_option("--pod-resources-interval-ms", t.pod_resources_ms,
                    "How often the kubelet is asked which pod holds which GPU")
      ->envname("PERFSCOPE_POD_RESOURCES_INTERVAL_MS")->check(CLI::Range(100, 3'600'000))->capture_default_str();
  serve->add_option("--power-target-watts", c.engine.power_target_watts,
                    "Alert when a GPU's power (1 s average) goes above this many watts (0: no target)")
      ->envname("PERFSCOPE_POWER_TARGET_WATTS")->check(CLI::Range(0.0, 100000.0))->capture_default_str();
}

// serve: threads, request limits and timeouts, connections, WebSocket queues.
void CommandLineParser::Table::add_transport_options() {
  AppConfig& c = parsed.config;
  Texts& t = texts;
  serve->add_option("--io-threads", c.server.io_threads, "Threads running the network event loop")
      ->envname("PERFSCOPE_IO_THREADS")->check(CLI::Range(1, 64))->capture_default_str();
  serve->add_option("--worker-threads", c.server.worker_threads, "Threads answering queries (database, analysis)")
      ->envname("PERFSCOPE_WORKER_THREADS")->check(CLI::Range(1, 64))->capture_default_str();
  serve->add_option("--max-body-bytes", c.server.max_body_bytes, "Largest accepted HTTP request body")
      ->envname("PERFSCOPE_MAX_BODY_BYTES")->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 30))->capture_default_str();
  serve->add_option("--request-timeout-ms", t.timeout_ms, "Time allowed to read a request or write a response")
      ->envname("PERFSCOPE_REQUEST_TIMEOUT_MS")->check(CLI::Range(100, 3'600'000))->capture_default_str();
  serve->add_option("--header-timeout-ms", t.header_timeout_ms,
                    "Time to receive a request's headers, and the longest idle keep-alive wait")
      ->envname("PERFSCOPE_HEADER_TIMEOUT_MS")->check(CLI::Range(100, 3'600'000))->capture_default_str();
  serve->add_option("--max-connections", c.server.max_connections,
                    "Open connections at most (HTTP and WebSocket); beyond, 503 with Retry-After")
      ->envname("PERFSCOPE_MAX_CONNECTIONS")->check(CLI::Range(1, 1'000'000))->capture_default_str();
  serve->add_option("--max-connections-per-client", c.server.max_connections_per_client,
                    "Open connections from one client address at most (0: only --max-connections); beyond, 503")
      ->envname("PERFSCOPE_MAX_CONNECTIONS_PER_CLIENT")->check(CLI::Range(0, 1'000'000))->capture_default_str();
  serve->add_option("--max-requests-per-connection", c.server.max_requests_per_connection,
                    "Requests served on one kept-alive connection before it is closed")
      ->envname("PERFSCOPE_MAX_REQUESTS_PER_CONNECTION")->check(CLI::Range(1, 100'000'000))->capture_default_str();
  serve->add_option("--max-pending-requests", c.server.max_pending_requests,
                    "Requests waiting for a worker thread at most; beyond, 503 with Retry-After")
      ->envname("PERFSCOPE_MAX_PENDING_REQUESTS")->check(CLI::Range(1, 1'000'000))->capture_default_str();
  serve->add_option("--ws-max-message-bytes", c.server.ws_max_message_bytes, "Largest WebSocket message a client may send (an ingest batch included); larger ones close the connection (1009)")
      ->envname("PERFSCOPE_WS_MAX_MESSAGE_BYTES")->check(CLI::Range(std::size_t{256}, std::size_t{16} << 20))->capture_default_str();
  serve->add_option("--ws-send-queue", c.server.ws_send_queue_max,
                    "Messages queued per WebSocket client; a slower client loses the stalest ones")
      ->envname("PERFSCOPE_WS_SEND_QUEUE")->check(CLI::Range(1, 100000))->capture_default_str();
}

// serve: the database writer, retention and shutdown.
void CommandLineParser::Table::add_storage_options() {
  Texts& t = texts;
  serve->add_option("--db-commit-interval-ms", t.commit_ms, "How often the database writer commits")
      ->envname("PERFSCOPE_DB_COMMIT_INTERVAL_MS")->check(CLI::Range(10, 60000))->capture_default_str();
  serve->add_option("--retention-raw-max-age", t.raw_max_age,
                    "Raw rows older than this roll up into histogram tiers and are deleted, e.g. 15d (0: kept)")
      ->envname("PERFSCOPE_RETENTION_RAW_MAX_AGE")->capture_default_str();
  serve->add_option("--retention-rollup-max-age", t.rollup_max_age, "Histogram tiers older than this are dropped, e.g. 400d (0: kept)")
      ->envname("PERFSCOPE_RETENTION_ROLLUP_MAX_AGE")->capture_default_str();
  serve->add_option("--retention-max-size", t.max_size,
                    "Largest database: beyond it the oldest raw rows roll up first, then the oldest tiers go, e.g. 20GB (0: none)")
      ->envname("PERFSCOPE_RETENTION_MAX_SIZE")->capture_default_str();
  serve->add_option("--retention-interval-ms", t.retention_ms, "How often retention runs")
      ->envname("PERFSCOPE_RETENTION_INTERVAL_MS")->check(CLI::Range(100, 86'400'000))->capture_default_str();
  serve->add_option("--shutdown-timeout-ms", t.shutdown_ms, "Longest graceful shutdown before the server forces its stop")
      ->envname("PERFSCOPE_SHUTDOWN_TIMEOUT_MS")->check(CLI::Range(100, 600000))->capture_default_str();
}

// serve: tokens, unauthenticated listening, CORS and allowed hosts.
void CommandLineParser::Table::add_access_options() {
  AppConfig& c = parsed.config;
  serve->add_option("--token-file", c.server.token_file,
                    "Bearer tokens, one `read <token>` or `write <token>` per line (also PERFSCOPE_READ_TOKEN, "
                    "PERFSCOPE_WRITE_TOKEN)")
      ->envname("PERFSCOPE_TOKEN_FILE");
  serve->add_option("--init-token-file", c.server.init_token_file,
                    "Create the token file with a fresh read and write token when it does not exist (true|false)")
      ->envname("PERFSCOPE_INIT_TOKEN_FILE")->capture_default_str();
  serve->add_option("--insecure-no-auth", c.server.insecure_no_auth,
                    "Listen on a non-loopback address without any token (true|false); everyone on the network "
                    "can read and write")
      ->envname("PERFSCOPE_INSECURE_NO_AUTH")->capture_default_str();
  serve->add_option("--cors-allow-origin", c.server.cors_origins,
                    "Origins (scheme://host[:port]) whose pages may call the API, comma-separated; * for any. "
                    "Default: none (CORS off)")
      ->envname("PERFSCOPE_CORS_ALLOW_ORIGIN")->delimiter(',');
  serve->add_option("--allowed-host", c.server.allowed_hosts,
                    "Host header names the server answers to besides localhost, loopback addresses and the listen "
                    "address, comma-separated (a loopback listener refuses others: DNS rebinding); * for any")
      ->envname("PERFSCOPE_ALLOWED_HOST")->delimiter(',');
}

// serve: cardinality caps, scrape targets, GPU peaks and targets, /metrics labels.
void CommandLineParser::Table::add_ingest_and_analysis_options() {
  AppConfig& c = parsed.config;
  Texts& t = texts;
  serve->add_option("--cardinality-limit", t.cardinality_limits,
                    "Distinct values allowed per event dimension, NAME=COUNT,… with NAME one of kernel_name, variant, "
                    "stream, device, model, operator, memory_tag, tag_key, tag_value (per key), all_tag_values "
                    "(all keys together), series (custom); 0: no cap. Past a cap names fold into [other], new tag keys "
                    "are dropped, new series are refused. Defaults: 10000 for names, operators, memory tags and tag "
                    "values; 100000 tag values in all; 1000 for variants, streams, models, tag keys and series; 256 "
                    "devices")
      ->envname("PERFSCOPE_CARDINALITY_LIMIT");
  serve->add_option("--cardinality-window", t.cardinality_window,
                    "Values count towards their cap while seen within this long, e.g. 24h (series and tag keys: "
                    "for the server's life)")
      ->envname("PERFSCOPE_CARDINALITY_WINDOW")->capture_default_str();
  serve->add_option("--scrape", t.scrape,
                    "Scrape this Prometheus endpoint and store its series (repeatable): URL[,job=NAME][,interval=15s]"
                    "[,timeout=10s][,label.KEY=VALUE][,sample_limit=50000][,series_limit=5000][,body_limit=32MB]"
                    "[,token_file=PATH][,ca_file=PATH]")
      ->envname("PERFSCOPE_SCRAPE");
  serve->add_option("--gpu-peak", t.gpu_peaks,
                    "Peak figures for GPUs whose name contains NAME_PART, over the built-in table of known GPUs or "
                    "for a GPU it lacks (repeatable, first match wins): NAME_PART[,model=TEXT][,bf16=TFLOPS]"
                    "[,fp8=…][,fp16=…][,tf32=…][,fp32=…][,fp64=…][,fp64_tensor=…][,int8=…][,dram_gb_per_second=N]")
      ->envname("PERFSCOPE_GPU_PEAK");
  serve->add_option("--device-target", t.device_targets,
                    "What GPUs should achieve, for the analysis and reports (repeatable, first match wins): "
                    "MATCH[,min_tflops=N][,target_tflops=N][,min_gb_per_second=N][,target_gb_per_second=N]"
                    "[,memory_budget=SIZE][,power_budget_watts=N]; MATCH is * (all), a GPU index, a UUID or a part "
                    "of the GPU's name")
      ->envname("PERFSCOPE_DEVICE_TARGET");
  serve->add_option("--metrics-dcgm-labels", c.server.metrics_dcgm_labels,
                    "Also label GPU series in /metrics as dcgm-exporter does (UUID, modelName, Hostname) (true|false)")
      ->envname("PERFSCOPE_METRICS_DCGM_LABELS")->capture_default_str();
}

// serve: TLS, logging and the profile written at shutdown.
void CommandLineParser::Table::add_tls_and_log_options() {
  AppConfig& c = parsed.config;
  auto* tls_cert = serve->add_option("--tls-cert-file", c.server.tls_cert_file,
                                     "Serve HTTPS and WSS with this PEM certificate (chain); needs --tls-key-file")
                       ->envname("PERFSCOPE_TLS_CERT_FILE");
  auto* tls_key = serve->add_option("--tls-key-file", c.server.tls_key_file, "The PEM private key of --tls-cert-file")
                      ->envname("PERFSCOPE_TLS_KEY_FILE");
  tls_cert->needs(tls_key);
  tls_key->needs(tls_cert);
  serve->add_option("--log-level", texts.log_level, "Least severe log lines written: debug, info, warn or error")
      ->envname("PERFSCOPE_LOG_LEVEL")->capture_default_str();
  serve->add_option("--log-format", texts.log_format,
                    "text, or json: one object a line with the keys ts, level, msg (and an access line's own)")
      ->envname("PERFSCOPE_LOG_FORMAT")->capture_default_str();
  serve->add_option("--access-log", parsed.log.access,
                    "Log every HTTP answer: client, request line (token values redacted), status, bytes, time (true|false)")
      ->envname("PERFSCOPE_ACCESS_LOG")->capture_default_str();
  serve->add_option("--profile-output", c.server.profile_output,
                    "On shutdown, write the JSON report of everything recorded to this file")
      ->envname("PERFSCOPE_PROFILE_OUTPUT");
}

ParsedCommand CommandLineParser::Table::parse(int argc, const char* const* argv) {
  // Every parse starts from the defaults: CLI11 writes only the options it is given.
  parsed = ParsedCommand{};
  texts = Texts(parsed.config);
  AppConfig& c = parsed.config;
  Texts& t = texts;
  try {
    app.parse(argc, argv);  // clears the previous parse's results first
    // Every subcommand but serve and healthcheck is complete once parsed.
    for (auto [sub, command] : {std::pair{version, Command::kVersion}, std::pair{licenses, Command::kLicenses},
                                std::pair{push, Command::kPush},
                                std::pair{import, Command::kImport}, std::pair{run, Command::kRun}, std::pair{relay, Command::kRelay},
                                std::pair{demo, Command::kDemo}, std::pair{report, Command::kReport},
                                std::pair{top, Command::kTop}}) {
      if (sub->parsed()) {
        parsed.command = command;
        return parsed;
      }
    }
    if (healthcheck->parsed()) {
      // In a container the server's address comes from PERFSCOPE_LISTEN: check that port.
      const char* listen_env = std::getenv("PERFSCOPE_LISTEN");
      ServerConfig where;
      if (health_server->count() == 0 && listen_env && parse_listen(listen_env, where).empty()) {
        const bool any = where.listen_host == "0.0.0.0" || where.listen_host == "::";
        const std::string host = any ? "127.0.0.1" : where.listen_host;
        // A server with TLS on (PERFSCOPE_TLS_CERT_FILE): https, trusting that certificate.
        const char* cert_env = std::getenv("PERFSCOPE_TLS_CERT_FILE");
        const bool tls = cert_env && *cert_env;
        if (tls) parsed.healthcheck_certificate = cert_env;
        parsed.healthcheck_server = (tls ? "https://" : "http://") + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
                                    std::to_string(where.listen_port);
      }
      parsed.command = Command::kHealthcheck;
      return parsed;
    }
    if (!t.config_file.empty()) {
      apply_config_file(*serve, t.config_file);
      c.config_file = t.config_file;
    }
    if (std::string err = parse_listen(t.listen, c.server); !err.empty()) {
      throw CLI::ValidationError("--listen", err);
    }
    c.engine.sampling_interval = std::chrono::milliseconds(t.sampling_ms);
    c.engine.gpu_process_interval = std::chrono::milliseconds(t.gpu_process_ms);
    c.engine.pod_resources_interval = std::chrono::milliseconds(t.pod_resources_ms);
    c.server.request_timeout = std::chrono::milliseconds(t.timeout_ms);
    c.server.header_timeout = std::chrono::milliseconds(t.header_timeout_ms);
    c.storage.commit_interval = std::chrono::milliseconds(t.commit_ms);
    c.server.shutdown_timeout = std::chrono::milliseconds(t.shutdown_ms);
    c.storage.retention_interval = std::chrono::milliseconds(t.retention_ms);
    for (auto [text, out, name] : {std::tuple{&t.raw_max_age, &c.storage.raw_max_age_ns, "--retention-raw-max-age"},
                                   std::tuple{&t.rollup_max_age, &c.storage.rollup_max_age_ns, "--retention-rollup-max-age"}}) {
      if (*text == "0") continue;
      auto ns = parse_duration_ns(*text, name);
      if (!ns.ok()) throw CLI::ValidationError(name, ns.status().message());
      if (*ns < 60'000'000'000) throw CLI::ValidationError(name, "must be at least 1m (or 0 to keep everything)");
      *out = *ns;
    }
    if (Status s = c.cardinality.parse(t.cardinality_limits); !s.ok()) {
      throw CLI::ValidationError("--cardinality-limit", s.message());
    }
    {
      auto ns = parse_duration_ns(t.cardinality_window, "--cardinality-window");
      if (!ns.ok()) throw CLI::ValidationError("--cardinality-window", ns.status().message());
      if (*ns < 60'000'000'000) throw CLI::ValidationError("--cardinality-window", "must be at least 1m");
      c.cardinality.window = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::nanoseconds(*ns));
    }
    for (const std::string& spec : t.scrape) {
      auto target = parse_scrape_target(spec);
      if (!target.ok()) throw CLI::ValidationError("--scrape", target.status().message());
      c.engine.scrape_targets.push_back(std::move(*target));
    }
    for (const std::string& spec : t.gpu_peaks) {
      auto peak = parse_gpu_peak(spec);
      if (!peak.ok()) throw CLI::ValidationError("--gpu-peak", peak.status().message());
      c.engine.gpu_peaks.push_back(std::move(*peak));
    }
    for (const std::string& spec : t.device_targets) {
      auto target = parse_device_target(spec);
      if (!target.ok()) throw CLI::ValidationError("--device-target", target.status().message());
      c.engine.device_targets.push_back(std::move(*target));
    }
    auto bytes = parse_byte_size(t.max_size);
    if (!bytes.ok()) throw CLI::ValidationError("--retention-max-size", bytes.status().message());
    c.storage.max_bytes = *bytes;
    if (c.storage.data_dir.empty()) throw CLI::ValidationError("--data-dir", "must not be empty");
    auto level = parse_log_level(t.log_level);
    if (!level.ok()) throw CLI::ValidationError("--log-level", level.status().message());
    auto format = parse_log_format(t.log_format);
    if (!format.ok()) throw CLI::ValidationError("--log-format", format.status().message());
    parsed.log.level = *level;
    parsed.log.format = *format;
    std::error_code ec;
    // Checked where a collector reads them: the host collector both, the GPU collector procfs.
    const bool reads_procfs = c.engine.enable_host_collector || c.engine.enable_gpu_collector;
    if (reads_procfs && !std::filesystem::is_regular_file(std::filesystem::path(c.engine.procfs) / "stat", ec)) {
      throw CLI::ValidationError("--procfs", "'" + c.engine.procfs + "' is not a procfs mount (it has no stat file)");
    }
    if (c.engine.enable_host_collector && !std::filesystem::is_directory(c.engine.sysfs, ec)) {
      throw CLI::ValidationError("--sysfs", "'" + c.engine.sysfs + "' is not a directory");
    }
    parsed.command = Command::kServe;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help, --version
      app.exit(e);
      parsed.exit_code = 0;
    } else {
      std::cerr << "perfscope: error: " << e.what() << "\nRun 'perfscope --help' or 'perfscope serve --help' for the options.\n";
      parsed.exit_code = 2;
    }
    parsed.command = Command::kExit;
  }
  return parsed;
}

CommandLineParser::CommandLineParser() : table_(std::make_unique<Table>()) {}
CommandLineParser::~CommandLineParser() = default;

ParsedCommand CommandLineParser::parse(int argc, const char* const* argv) { return table_->parse(argc, argv); }

ParsedCommand parse_command_line(int argc, const char* const* argv) { return CommandLineParser().parse(argc, argv); }

}  // namespace perfscope::server
