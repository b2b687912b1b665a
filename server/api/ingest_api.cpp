// POST /api/v1/events (and WebSocket ingest): a batch decoded all or nothing, then answered
// after its database commit.
#include "server/api/api.hpp"

#include "server/http/compression.hpp"
#include "server/wire/event_codec.hpp"

namespace perfscope::server {

using nlohmann::json;

void Api::ingest(const HttpRequest& request, std::function<void(HttpResponse)> done) const {
  std::string inflated;
  std::string_view body = request.body;
  const std::size_t limit = ctx_.config->server.max_body_bytes;
  if (request.content_encoding == "gzip") {
    switch (gzip_decompress(request.body, limit, inflated)) {
      case InflateError::kNone: body = inflated; break;
      case InflateError::kTooLarge:
        return done(error_response(413, "payload_too_large",
                                   "the decompressed body exceeds " + std::to_string(limit) + " bytes"));
      case InflateError::kMalformed:
        return done(error_response(400, "bad_request", "the body is not valid gzip"));
    }
  } else if (!request.content_encoding.empty() && request.content_encoding != "identity") {
    return done(error_response(415, "unsupported_media_type",
                               "Content-Encoding must be gzip or absent, got " + request.content_encoding));
  }

  DecodeResult decoded;
  const TimestampNs now = now_ns();
  if (request.content_type == "application/x-ndjson" || request.content_type == "application/jsonl") {
    decoded = decode_ndjson_events(body, now);
  } else if (request.content_type == "application/json") {
    decoded = decode_json_events(body, now);
  } else {
    return done(error_response(415, "unsupported_media_type",
                               "Content-Type must be application/json or application/x-ndjson, got " +
                                   (request.content_type.empty() ? std::string("none") : request.content_type) +
                                   " (a body of another type is what a page on another origin can send without asking)",
                               "Content-Type"));
  }
  if (decoded.error) {
    json err = {{"code", "invalid_event"}, {"message", decoded.error->message}};
    err["index"] = decoded.error->index ? json(*decoded.error->index) : json(nullptr);
    if (!decoded.error->field.empty()) err["field"] = decoded.error->field;
    return done(json_response(400, {{"error", err}}));
  }
  const std::size_t n = decoded.events.size();
  if (n == 0) return done(json_response(200, {{"accepted", 0}}));
  if (!ctx_.writer) return done(error_response(503, "unavailable", "no database is open"));
  std::size_t folded = 0;
  if (ctx_.cardinality) {
    if (Status s = ctx_.cardinality->apply(decoded.events, now, &folded); !s.ok()) {
      json err = {{"code", "cardinality_limit"}, {"message", s.message()}, {"field", s.field()},
                  {"limit", ctx_.cardinality->limits()[Dimension::kSeries]}};
      return done(json_response(422, {{"error", err}}));
    }
  }
  ctx_.writer->submit(std::move(decoded.events), [this, n, folded, done = std::move(done)](const Status& s) {
    if (s.ok()) {
      if (ctx_.on_events_committed) ctx_.on_events_committed();
      json answer = {{"accepted", n}};
      // Names past a cardinality cap were stored as [other]: say so, so producers can tell.
      if (folded > 0) answer["folded"] = folded;
      return done(json_response(200, answer));
    }
    const bool later = s.code() == StatusCode::kUnavailable;  // busy, disk full, read-only: may pass
    HttpResponse r = error_response(later ? 503 : 500, later ? "unavailable" : "internal",
                                   "no event was stored: " + s.message());
    if (later) r.headers.emplace_back("Retry-After", "5");
    done(std::move(r));
  });
}

}  // namespace perfscope::server
