// RequestHandler: what the transport hands every HTTP request that is neither a static asset
// nor a WebSocket upgrade, and every batch of WebSocket ingest. The REST API (server/api/)
// implements it; the transport knows no endpoint of its own but the two WebSocket ones.
//
// Thread-safety: implementations are called from the io threads (dispatch, handle) and the
// worker pool (handle_async) at once.
#pragma once

#include <functional>
#include <string>

#include "server/http/message.hpp"

namespace perfscope::server {

class RequestHandler {
 public:
  // Where a request is answered: not here (a static asset or 404), inline on the connection's
  // thread (cheap answers only), or on the worker pool (anything that may block on SQLite or
  // an analysis pass).
  enum class Dispatch { kNotMine, kInline, kWorker };

  virtual ~RequestHandler() = default;
  virtual Dispatch dispatch(const std::string& path) const = 0;
  // The answer, synchronously (for requests dispatched inline).
  virtual HttpResponse handle(const HttpRequest& request) const = 0;
  // The answer through `done`, which may run on another thread (ingest answers after the
  // database commit, on the writer's thread).
  virtual void handle_async(HttpRequest request, std::function<void(HttpResponse)> done) const = 0;
};

// handler.handle_async, with any exception it throws before answering turned into a 500
// through `done`: a handler bug or an allocation that fails ends that request, never the worker
// thread and with it the process. `done` is called exactly once.
void handle_guarded(const RequestHandler& handler, HttpRequest request, std::function<void(HttpResponse)> done);

// The path WebSocket ingest batches are handed to the handler under, as if POSTed there.
inline constexpr const char* kIngestPath = "/api/v1/events";

}  // namespace perfscope::server
