// HTTP/1.1 connections, plain or TLS. Each reads a request with a fresh parser (body and
// header limits, a read timeout), answers static assets and /healthz inline, runs API
// handlers on the worker pool and writes their response back on the connection's strand, and
// hands WebSocket upgrades of /api/v1/stream and /api/v1/ingest to a WebSocket session over
// the same stream. Over TLS the handshake comes first, within the header timeout.
//
// Thread-safety: each session is strand-confined (the socket's executor is its strand).
#pragma once

#include <memory>

#include "server/http/session_context.hpp"

namespace perfscope::server {

// Starts serving an accepted connection: TLS when ctx.tls is set. `slot` counts the
// connection against the cap until it closes.
void start_http_session(tcp::socket&& socket, const SessionContext& ctx, std::shared_ptr<void> slot);

}  // namespace perfscope::server
