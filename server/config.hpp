// AppConfig: the one validated configuration struct, built at start-up from flags,
// PERFSCOPE_* environment variables and an optional config file (cli.hpp), then passed
// down by const reference. A plain value.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine_config.hpp"

namespace perfscope::server {

struct ServerConfig {
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 8080;  // 0 picks a free port (tests)
  unsigned io_threads = 2;
  unsigned worker_threads = 2;       // SQLite queries and analysis run here, off the event loop
  std::size_t max_body_bytes = 16 << 20;  // also the limit after gzip decompression
  std::size_t max_header_bytes = 16 << 10;
  std::chrono::milliseconds request_timeout{30000};
  // To receive a request's headers, and the longest idle wait on a kept-alive connection: a
  // client that trickles its headers (slowloris) is cut off here.
  std::chrono::milliseconds header_timeout{10000};
  std::size_t max_connections = 1024;               // beyond: 503 with Retry-After, then close
  std::size_t max_requests_per_connection = 10000;  // then Connection: close
  std::size_t max_pending_requests = 256;           // waiting for a worker; beyond: 503 at once
  std::size_t ws_max_message_bytes = 64 << 10;
  std::size_t ws_send_queue_max = 32;  // messages queued per WebSocket client before dropping
  std::chrono::milliseconds shutdown_timeout{5000};
  // /metrics: add dcgm-exporter's labels (UUID, modelName, Hostname) to GPU series, so
  // dashboards built for it work unchanged.
  bool metrics_dcgm_labels = false;
  // Access control: a token file (`read <token>` / `write <token>` lines), plus the tokens in
  // PERFSCOPE_READ_TOKEN / PERFSCOPE_WRITE_TOKEN. Without any, a non-loopback listen address
  // is refused unless insecure_no_auth is set. init_token_file: create the file with fresh
  // tokens when it does not exist (containers).
  std::string token_file;
  bool init_token_file = false;
  bool insecure_no_auth = false;
  // Browser origins allowed to call the API from other pages (CORS); empty: none, "*": any.
  std::vector<std::string> cors_origins;
  // Written with the JSON report of the whole run when the server stops (empty: none).
  std::string profile_output;
  // TLS: PEM certificate chain and private key; both empty: plain HTTP.
  std::string tls_cert_file;
  std::string tls_key_file;
};

struct StorageConfig {
  std::string data_dir = "./data";
  std::chrono::milliseconds commit_interval{1000};
  std::size_t commit_batch_rows = 1000;
  // Retention (db/retention.hpp): 0 disables each limit. Raw rows older than the raw age, or
  // the oldest while the database is over max_bytes, roll up into histogram tiers; tiers
  // older than their age are dropped.
  std::int64_t raw_max_age_ns = 0;
  std::int64_t rollup_max_age_ns = 0;
  std::uint64_t max_bytes = 0;
  std::chrono::milliseconds retention_interval{60000};
  std::string database_path() const { return data_dir + "/perfscope.db"; }
};

struct AppConfig {
  EngineConfig engine;
  ServerConfig server;
  StorageConfig storage;
  std::string config_file;  // empty when none was given
};

}  // namespace perfscope::server
