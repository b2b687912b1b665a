// ServerConfig: the transport's settings (listen address, threads, limits, timeouts, access,
// TLS), one part of the application's AppConfig (server/api/app_config.hpp). A plain value.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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
  // Open connections from one client address at most (0: no cap of its own); beyond, 503 the same
  // way. A browser uses six per host and one per WebSocket; loopback clients all share 127.0.0.1.
  std::size_t max_connections_per_client = 64;
  std::size_t max_requests_per_connection = 10000;  // then Connection: close
  std::size_t max_pending_requests = 256;           // waiting for a worker; beyond: 503 at once
  // Largest client message, ingest batches included (larger: closed with 1009, too big).
  std::size_t ws_max_message_bytes = 1 << 20;
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
  // Host header names this server answers to besides loopback names and the listen address
  // (DNS rebinding: a page whose name is rebound to 127.0.0.1 sends its own name). The check
  // is on for a loopback listener, and for any listener once names are given; "*" turns it off.
  std::vector<std::string> allowed_hosts;
  // Written with the JSON report of the whole run when the server stops (empty: none).
  std::string profile_output;
  // TLS: PEM certificate chain and private key; both empty: plain HTTP.
  std::string tls_cert_file;
  std::string tls_key_file;
};

}  // namespace perfscope::server
