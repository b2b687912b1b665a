#include "server/cli/serve.hpp"
#include "engine/base/thread_name.hpp"

#include <malloc.h>

#include <boost/asio/ssl.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include "db/sample_reader.hpp"
#include "db/retention.hpp"
#include "db/gpu_process_store.hpp"
#include "db/page_cache.hpp"
#include "db/writer.hpp"
#include "db/series_history.hpp"
#include "engine/series/sampler.hpp"
#include "server/http/access.hpp"
#include "server/api/api.hpp"
#include "server/http/listener.hpp"
#include "server/http/log.hpp"
#include "server/http/static_assets.hpp"
#include "engine/analysis/anomaly_monitor.hpp"
#include "engine/analysis/gpu_alerts.hpp"
#include "engine/collectors/gpu_collector.hpp"
#include "server/http/stream_hub.hpp"
#include "server/cli/collectors.hpp"
#include "server/cli/tools.hpp"

namespace perfscope::server {

namespace {
// Exceptions that escaped a completion handler on an io thread (each ended its connection):
// a count in /api/v1/info, so a fuzzer or an operator sees what the log line says.
std::atomic<std::uint64_t> g_escaped_exceptions{0};

// glibc's allocator keeps what a burst of work freed. Its thresholds for giving memory back
// rise with the largest block freed (blocks under 32 MiB then come from the arenas, and an
// arena's free top under 64 MiB stays), and malloc_trim does not shrink the tops of the
// arenas other threads use. A server whose queries read tens of megabytes at a time on several
// threads then holds each thread's largest burst for good: in the scrape soak 157 of the
// arenas' 243 MiB were free. Fixed thresholds: a block of 4 MiB or more is mapped on its own
// and unmapped when freed, an arena's free top over 4 MiB goes back; and once a minute
// (kTrimInterval) the free pages inside the arenas go back as well. The soak's heap fell from
// a mean of 184 MB to 90 MB (bench/RESULTS.md, issue 43's fourth session). The mapping
// threshold was 1 MiB first: then every ingest request of 5,000 events (1.6 MB decoded) was
// mapped, zero-filled by page faults and unmapped again, 10 % of ingest's CPU (issue 44).
constexpr std::chrono::seconds kTrimInterval{60};

void bound_allocator_retention() {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
  mallopt(M_TRIM_THRESHOLD, 4 << 20);
#endif
}

void return_free_memory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

}  // namespace

struct Server::Impl {
  explicit Impl(AppConfig c)
      : config(std::move(c)),
        ioc_owner(std::make_unique<net::io_context>(static_cast<int>(config.server.io_threads))),
        ioc(*ioc_owner),
        workers(config.server.worker_threads),
        store(config.engine.history_buffer_size),
        sampler(store, config.engine.sampling_interval),
        hub(store),
        anomalies(store),
        gpu_alerts(store, config.engine.power_target_watts > 0 ? std::optional<double>(config.engine.power_target_watts)
                                                               : std::nullopt) {}

  Status start();
  void shutdown();
  void shutdown_or_stop();
  void write_profile();
  Status configure_access();
  Status configure_tls();
  nlohmann::json retention_json() const;
  nlohmann::json memory_json() const;
  void finish_when_drained(std::chrono::steady_clock::time_point deadline);
  void schedule_trim();  // return_free_memory on a worker every kTrimInterval

  // Handlers still queued when the server stops own sessions whose destructors use the hub
  // and the session context: the io_context goes first, while everything else still lives.
  ~Impl() {
    listener.reset();
    drain_timer.reset();
    trim_timer.reset();
    ioc_owner.reset();
  }

  const AppConfig config;
  std::unique_ptr<net::io_context> ioc_owner;
  net::io_context& ioc;
  net::thread_pool workers;
  SeriesStore store;
  EventMetrics event_metrics;
  CardinalityGuard cardinality{config.cardinality};
  AccessControl access;
  HostCheck hosts{config.server.listen_host, config.server.allowed_hosts};
  ServerLoad load;
  // Declared before the sampler: the GPU collector's process thread feeds it until the
  // sampler (which owns the collector) is destroyed.
  ProcessTracker processes;  // finished records go to the store
  PodDirectory pods;          // the kubelet collector writes it, the GPU collector and the API read it
  Sampler sampler;
  StreamHub hub;
  AnomalyMonitor anomalies;
  GpuAlerts gpu_alerts;
  const GpuCollector* gpus = nullptr;  // owned by the sampler
  std::vector<CollectorSwitch> collector_switches;  // every collector of the table, on or off
  MemoryTracker memory;
  std::unique_ptr<db::Writer> writer;
  std::unique_ptr<db::RetentionTask> retention;  // stopped before the writer
  std::unique_ptr<db::SampleReader> reader;
  std::unique_ptr<db::SeriesHistory> history;
  std::unique_ptr<db::EventReader> events;
  std::unique_ptr<db::AbTestReader> abtests;
  std::unique_ptr<Api> api;
  StaticAssets assets;
  std::unique_ptr<net::ssl::context> tls;  // when --tls-cert-file is given
  std::unique_ptr<SessionContext> session_context;
  std::shared_ptr<Listener> listener;
  std::unique_ptr<net::steady_timer> drain_timer;
  std::unique_ptr<net::steady_timer> trim_timer;
  std::atomic<bool> trim_stopped{false};
  bool stopping = false;  // touched only on the io_context (shutdown is posted there)
  // When the shutdown must be over (set when it starts, read after the io threads return).
  std::chrono::steady_clock::time_point stop_deadline{};
  bool sampler_running = false;
};

Status Server::Impl::start() {
  bound_allocator_retention();
  if (Status s = configure_access(); !s.ok()) return s;
  std::error_code fs_ec;
  std::filesystem::create_directories(config.storage.data_dir, fs_ec);
  if (fs_ec) return Status::io_error("cannot create data directory " + config.storage.data_dir + ": " + fs_ec.message());

  db::WriterOptions wopts;
  wopts.commit_interval = config.storage.commit_interval;
  wopts.batch_rows = config.storage.commit_batch_rows;
  wopts.on_committed = [this](const std::vector<Event>& e) { event_metrics.observe(e); };
  auto w = db::Writer::open(config.storage.database_path(), store, memory, wopts);
  if (!w.ok()) return w.status();
  writer = std::move(*w);
  db::RetentionPolicy policy;
  policy.raw_max_age_ns = config.storage.raw_max_age_ns;
  policy.rollup_max_age_ns = config.storage.rollup_max_age_ns;
  policy.max_bytes = config.storage.max_bytes;
  retention = std::make_unique<db::RetentionTask>(*writer, policy, config.storage.retention_interval);
  retention->start();
  auto r = db::SampleReader::open(config.storage.database_path());
  if (!r.ok()) return r.status();
  reader = std::move(*r);
  history = std::make_unique<db::SeriesHistory>(store, reader.get());
  events = std::make_unique<db::EventReader>(config.storage.database_path());
  abtests = std::make_unique<db::AbTestReader>(config.storage.database_path());

  const CollectorDeps deps{store, processes, pods};
  for (const CollectorSpec& spec : collector_specs()) {
    const bool enabled = spec.enabled(config);
    collector_switches.push_back({std::string(spec.name), std::string(spec.option), enabled});
    if (!enabled) continue;
    std::unique_ptr<Collector> collector = spec.build(config, deps);
    if (auto* gpu = dynamic_cast<const GpuCollector*>(collector.get())) {
      gpus = gpu;  // the API reads its devices and peaks
      for (const SourceStatus& s : gpu->sources()) {
        if (s.name == "nvml" && !s.available) log_info("no NVIDIA GPU metrics: " + s.detail);
      }
    }
    sampler.add_collector(std::move(collector));
  }
  if (!config.engine.scrape_targets.empty()) {
    log_info("scraping " + std::to_string(config.engine.scrape_targets.size()) + " Prometheus endpoint(s)");
  }
  sampler.add_sink([this](const std::shared_ptr<const SampleBatch>& b) { writer->enqueue(b); });
  sampler.add_sink([this](const std::shared_ptr<const SampleBatch>&) {
    // GPU processes that ended in this pass: their lifetime records go to the store.
    auto finished = processes.take_finished();
    if (finished.empty()) return;
    db::store_gpu_processes(*writer, std::move(finished), [](const Status& s) {
      if (!s.ok()) log_warn("cannot store GPU process records: " + s.message());
    });
  });
  sampler.add_sink([this](const std::shared_ptr<const SampleBatch>& b) {
    auto found = anomalies.observe(*b);
    if (!found.empty()) hub.publish_alerts(found);
    auto gpu = gpu_alerts.observe(*b);
    if (!gpu.empty()) hub.publish_alerts(gpu);
    hub.publish(b);
  });

  ApiContext actx;
  actx.config = &config;
  actx.sampler = &sampler;
  actx.history = history.get();
  actx.events = events.get();
  actx.abtests = abtests.get();
  actx.anomalies = &anomalies;
  actx.gpus = gpus;
  actx.collectors = collector_switches;
  actx.processes = &processes;
  if (!config.engine.pod_resources_socket.empty()) actx.pods = &pods;
  actx.gpu_alerts = &gpu_alerts;
  actx.memory = &memory;
  actx.store = &store;
  actx.event_metrics = &event_metrics;
  actx.access = &access;
  actx.writer = writer.get();
  actx.cardinality = &cardinality;
  actx.on_events_committed = [this] { hub.notify_events(); };
  actx.runtime_status = [this] {
    db::WriterStats ws = writer->stats();
    return nlohmann::json{
        {"database_writer", {{"rows_written", ws.rows_written}, {"events_written", ws.events_written},
                             {"commits", ws.commits},
                             {"batches_dropped", ws.batches_dropped}, {"write_errors", ws.write_errors},
                             {"last_error", ws.last_error}}},
        {"stream", {{"clients", hub.clients()}, {"messages_dropped", hub.dropped()}}},
        {"series", store.series_count()},
        {"retention", retention_json()},
        {"memory", memory_json()},
        {"http", {{"connections", load.connections.load()}, {"pending_requests", load.pending_requests.load()},
                  {"refused_connections", load.refused_connections.load()},
                  {"refused_requests", load.refused_requests.load()},
                  {"refused_hosts", load.refused_hosts.load()},
                  {"refused_origins", load.refused_origins.load()},
                  {"escaped_exceptions", g_escaped_exceptions.load()}}},
    };
  };
  api = std::make_unique<Api>(std::move(actx));
  if (Status s = configure_tls(); !s.ok()) return s;
  session_context = std::make_unique<SessionContext>(
      SessionContext{config.server, *api, assets, hub, workers, config.engine.sampling_interval, access, hosts, load, tls.get()});

  beast::error_code ec;
  auto address = net::ip::make_address(config.server.listen_host, ec);
  if (ec) return Status::invalid_argument("invalid listen address '" + config.server.listen_host + "'", "listen");
  listener = std::make_shared<Listener>(ioc, *session_context);
  if (Status s = listener->open(tcp::endpoint(address, config.server.listen_port)); !s.ok()) return s;

  sampler.start();
  sampler_running = true;
  listener->start();
  // On a strand of its own: shutdown (on any io thread) cancels it there.
  trim_timer = std::make_unique<net::steady_timer>(net::make_strand(ioc));
  net::dispatch(trim_timer->get_executor(), [this] { schedule_trim(); });
  return Status();
}

// What the heap holds and what of it is free (glibc's count, all arenas), and what SQLite's
// connections and the series' in-memory history hold in it against their bounds: the soak
// tells caches filling up from a leak by these. glibc's count walks every arena's free lists
// under their locks, so it is taken at most once a second however often /api/v1/info is asked.
nlohmann::json Server::Impl::memory_json() const {
  nlohmann::json out = {{"sqlite_writer_page_cache_bytes", db::writer_page_cache_bytes()},
                        {"sqlite_writer_page_cache_limit_bytes", db::writer_page_cache_limit_bytes()},
                        {"sqlite_reader_connections", db::reader_connections()},
                        {"sqlite_reader_memory_bytes", db::reader_memory_bytes()},
                        {"sqlite_reader_page_cache_limit_bytes", db::reader_page_cache_limit_bytes()},
                        {"series_history_bytes", store.held_bytes()},
                        {"series_history_limit_bytes", store.held_limit_bytes()}};
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  struct HeapCount {
    std::chrono::steady_clock::time_point taken;
    std::size_t in_use = 0, free = 0;
  };
  static std::mutex mu;
  static HeapCount count;
  std::lock_guard lock(mu);
  const auto now = std::chrono::steady_clock::now();
  if (count.taken == std::chrono::steady_clock::time_point() || now - count.taken >= std::chrono::seconds(1)) {
    const struct mallinfo2 m = mallinfo2();
    count = {now, m.uordblks + m.hblkhd, m.fordblks};  // arenas' blocks in use and blocks mapped alone; free
  }
  out["heap_in_use_bytes"] = count.in_use;
  out["heap_free_bytes"] = count.free;  // free in the arenas (resident or not)
#endif
  return out;
}

void Server::Impl::schedule_trim() {
  if (trim_stopped) return;
  trim_timer->expires_after(kTrimInterval);
  trim_timer->async_wait([this](beast::error_code ec) {
    if (ec || trim_stopped) return;
    net::post(workers, return_free_memory);  // a few milliseconds of walking the arenas
    schedule_trim();
  });
}

// The certificate and key, loaded once: a file that cannot be read or a key that does not
// match the certificate (OpenSSL checks that as it loads the key) stops the start with the
// file named.
Status Server::Impl::configure_tls() {
  const ServerConfig& sc = config.server;
  if (sc.tls_cert_file.empty() && sc.tls_key_file.empty()) return Status();
  if (sc.tls_cert_file.empty() || sc.tls_key_file.empty()) {
    return Status::invalid_argument("--tls-cert-file and --tls-key-file are needed together", "tls_cert_file");
  }
  tls = std::make_unique<net::ssl::context>(net::ssl::context::tls_server);
  tls->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                   net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1 |
                   net::ssl::context::single_dh_use);
  beast::error_code ec;
  tls->use_certificate_chain_file(sc.tls_cert_file, ec);
  if (ec) return Status::invalid_argument("cannot use TLS certificate " + sc.tls_cert_file + ": " + ec.message(), "tls_cert_file");
  tls->use_private_key_file(sc.tls_key_file, net::ssl::context::pem, ec);
  if (ec) return Status::invalid_argument("cannot use TLS key " + sc.tls_key_file + ": " + ec.message(), "tls_key_file");
  log_info("serving HTTPS and WSS with " + sc.tls_cert_file);
  return Status();
}

// Tokens from the file and the environment; refuses an open non-loopback address.
Status Server::Impl::configure_access() {
  std::vector<AccessToken> tokens;
  const ServerConfig& sc = config.server;
  if (!sc.token_file.empty()) {
    if (sc.init_token_file && !std::filesystem::exists(sc.token_file)) {
      if (Status s = create_token_file(sc.token_file); !s.ok()) return s;
      log_info("created " + sc.token_file + " with a new read and a new write token (and the read token alone in " +
               sc.token_file + ".read for scrapers)");
    }
    auto loaded = load_token_file(sc.token_file);
    if (!loaded.ok()) return loaded.status();
    tokens = std::move(*loaded);
    // As ssh does with keys, say so when others on the machine can read the tokens (served
    // anyway: a container's mounted secret may be readable by design).
    std::error_code ec;
    using std::filesystem::perms;
    const perms mode = std::filesystem::status(sc.token_file, ec).permissions();
    if (!ec && (mode & (perms::group_all | perms::others_all)) != perms::none) {
      log_warn("token file " + sc.token_file + " can be read or written by other users; restrict it: chmod 600 " +
               sc.token_file);
    }
  }
  for (auto [env, scope] : {std::pair{"PERFSCOPE_READ_TOKEN", Scope::kRead}, std::pair{"PERFSCOPE_WRITE_TOKEN", Scope::kWrite}}) {
    const char* v = std::getenv(env);
    if (!v || !*v) continue;
    if (std::string_view(v).size() < kMinTokenLength) {
      return Status::invalid_argument(std::string(env) + " must be at least " + std::to_string(kMinTokenLength) + " characters");
    }
    tokens.push_back({scope, v});
  }
  access = AccessControl(std::move(tokens));
  if (!access.enabled() && !is_loopback_host(sc.listen_host)) {
    if (!sc.insecure_no_auth) {
      return Status::invalid_argument("refusing to listen on " + sc.listen_host +
                                      " without a token: give --token-file (or PERFSCOPE_READ_TOKEN/PERFSCOPE_WRITE_TOKEN), "
                                      "or --insecure-no-auth true to allow anyone on the network");
    }
    log_warn("listening on " + sc.listen_host + " with no authentication (--insecure-no-auth): anyone who can reach it "
             "can read and write");
  }
  return Status();
}

// The JSON report of everything recorded, written once the last batch is committed.
void Server::Impl::write_profile() {
  ReportQuery query;
  query.analysis.now = now_ns();
  query.analysis.window = TimeWindow{};  // window=all: everything recorded
  auto report = api->report_text(query);
  Status s = report.ok() ? write_file_atomically(config.server.profile_output, *report)
                         : Status::internal("report failed: " + report.status().message());
  if (s.ok()) {
    log_info("profile written to " + config.server.profile_output);
  } else {
    log_error("cannot write the profile: " + s.message());
  }
}

nlohmann::json Server::Impl::retention_json() const {
  const db::RetentionPolicy& p = retention->policy();
  const db::RetentionStats st = retention->stats();
  TimestampNs retired_before = 0;
  if (reader) {
    if (auto r = reader->retired_before(); r.ok()) retired_before = *r;
  }
  auto age = [](std::int64_t ns) { return ns > 0 ? nlohmann::json(ns / 1'000'000'000) : nlohmann::json(nullptr); };
  return {{"enabled", p.enabled()},
          {"raw_max_age_s", age(p.raw_max_age_ns)},
          {"rollup_max_age_s", age(p.rollup_max_age_ns)},
          {"max_bytes", p.max_bytes ? nlohmann::json(p.max_bytes) : nlohmann::json(nullptr)},
          {"steps", st.runs},
          {"errors", st.errors},
          {"last_error", st.last_error},
          {"last_run_ns", st.last_run_ns},
          {"raw_before_ns", retired_before},
          {"bytes_used", st.last.bytes_used},
          {"over_size", st.last.over_size}};
}

void Server::Impl::shutdown_or_stop() {
  // A failure part-way through the orderly stop must not leave the process serving nothing and
  // never exiting: the io_context stops regardless.
  try {
    shutdown();
  } catch (const std::exception& e) {
    log_error(std::string("the orderly shutdown failed: ") + e.what());
    ioc.stop();
  }
}

void Server::Impl::shutdown() {
  if (stopping) return;
  stopping = true;
  log_info("shutting down");
  auto deadline = std::chrono::steady_clock::now() + config.server.shutdown_timeout;
  stop_deadline = deadline;
  if (listener) listener->stop();
  trim_stopped = true;
  if (trim_timer) net::dispatch(trim_timer->get_executor(), [this] { trim_timer->cancel(); });
  hub.close_all();
  if (sampler_running) sampler.stop();
  if (retention) retention->stop();
  if (writer) {
    // What the running GPU processes did so far (marked running: if they end while no server
    // watches, their end stays unknown), and any that ended in the last pass.
    std::vector<GpuProcessRecord> records = processes.running();
    for (GpuProcessRecord& r : processes.take_finished()) records.push_back(std::move(r));
    if (!records.empty()) {
      db::store_gpu_processes(*writer, std::move(records), [](const Status&) {});
    }
    writer->stop();  // commits everything the sampler produced
    db::WriterStats ws = writer->stats();
    log_info("database: " + std::to_string(ws.rows_written) + " rows in " + std::to_string(ws.commits) + " commits");
  }
  if (!config.server.profile_output.empty() && api) write_profile();
  drain_timer = std::make_unique<net::steady_timer>(ioc);
  finish_when_drained(deadline);
}

// Polls until the WebSocket close handshakes are done, or the deadline forces the stop.
void Server::Impl::finish_when_drained(std::chrono::steady_clock::time_point deadline) {
  if (hub.clients() == 0 || std::chrono::steady_clock::now() >= deadline) {
    ioc.stop();
    return;
  }
  drain_timer->expires_after(std::chrono::milliseconds(20));
  drain_timer->async_wait([this, deadline](beast::error_code) { finish_when_drained(deadline); });
}

Server::Server(AppConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}

Server::~Server() {
  if (impl_) {
    impl_->sampler.stop();
    if (impl_->retention) impl_->retention->stop();
    if (impl_->writer) impl_->writer->stop();
    impl_->workers.stop();
    impl_->workers.join();
  }
}

Status Server::start() { return impl_->start(); }

std::uint16_t Server::port() const { return impl_->listener ? impl_->listener->local_endpoint().port() : 0; }

void Server::request_stop() {
  net::post(impl_->ioc, [impl = impl_.get()] { impl->shutdown_or_stop(); });
}

void Server::run(bool handle_signals, const std::function<void()>& on_ready) {
  std::optional<net::signal_set> signals;
  if (handle_signals) {
    signals.emplace(impl_->ioc, SIGINT, SIGTERM);
    signals->async_wait([this](beast::error_code ec, int signo) {
      if (ec) return;
      log_info(std::string("received ") + (signo == SIGINT ? "SIGINT" : "SIGTERM"));
      impl_->shutdown_or_stop();
    });
  }
  if (on_ready) on_ready();
  // An exception out of a completion handler (Beast's own parser throws for a field over 64 KiB;
  // an allocation may fail) ends that connection, whose handler owned it, and nothing else:
  // the thread logs it and goes back to serving instead of taking the process down.
  auto serve_io = [this] {
    for (;;) {
      try {
        impl_->ioc.run();
        return;
      } catch (const std::exception& e) {
        ++g_escaped_exceptions;
        log_error(std::string("a connection failed with an exception (the connection is closed): ") + e.what());
      } catch (...) {
        ++g_escaped_exceptions;
        log_error("a connection failed with an unknown exception (the connection is closed)");
      }
    }
  };
  std::vector<std::thread> threads;
  // The main thread keeps the process's name; the others are named for `top -H`.
  for (unsigned i = 1; i < impl_->config.server.io_threads; ++i) {
    threads.emplace_back([&serve_io] {
      name_this_thread("ps-io");
      serve_io();
    });
  }
  serve_io();
  for (auto& t : threads) t.join();
  // Work still queued on the pool only writes to closed connections; let it finish — within
  // the shutdown timeout when this is the process's own server (handle_signals): an analysis
  // or A/B evaluation still running then is left, and the process exits without it. The
  // database was committed and closed by the writer before this point.
  if (!handle_signals || impl_->stop_deadline == std::chrono::steady_clock::time_point{}) {
    impl_->workers.join();
    return;
  }
  auto joined = std::async(std::launch::async, [this] { impl_->workers.join(); });
  if (joined.wait_until(impl_->stop_deadline + std::chrono::milliseconds(250)) != std::future_status::ready) {
    log_warn("requests still running past --shutdown-timeout-ms (" +
             std::to_string(impl_->config.server.shutdown_timeout.count()) + " ms): exiting without them");
    std::fflush(nullptr);
    std::_Exit(0);
  }
}

}  // namespace perfscope::server
