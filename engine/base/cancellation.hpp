// Cancellation of the work a thread does for one request, without a token passed through
// every call: the server opens a CancelScope around a query's handler with a token that its
// connection stops when the client leaves, and long loops and database reads ask
// cancellation_requested() where stopping is safe (PostgreSQL's CHECK_FOR_INTERRUPTS works
// this way). Work that spreads over threads of its own hands them current_stop_token().
//
// Cancelled work returns early with whatever it has; the caller that opened the scope
// discards it (cancelled_status()). Nothing is cancelled that writes: ingest runs without a
// scope, and the database writer's connection has no interrupt.
//
// Thread-safety: the scope belongs to the thread that opened it; tokens are thread-safe.
#pragma once

#include <stop_token>

#include "engine/base/status.hpp"

namespace perfscope {

class CancelScope {
 public:
  explicit CancelScope(std::stop_token token);
  ~CancelScope();
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  std::stop_token previous_;
};

// The token of this thread's innermost scope (one that never stops when there is none).
std::stop_token current_stop_token();
bool cancellation_requested();
// What a cancelled request answers (kUnavailable; nobody reads it but logs and half-closed clients).
Status cancelled_status();

}  // namespace perfscope
