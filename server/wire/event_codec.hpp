// Producers' events on the wire, both ways. Decoding (event_decode.cpp): a JSON body
// {"events":[…]} or NDJSON (one event object per line), read by a streaming cursor
// (json_scan.hpp) straight into events. Encoding (event_encode.cpp): what the decoders read back.
// Decoding is all-or-nothing: the first bad event stops it and is reported with its index
// and the field at fault. Unknown fields are ignored. Every decoded event has passed engine
// validation. Stateless; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/events/events.hpp"

namespace perfscope::server {

struct DecodeError {
  std::optional<std::size_t> index;  // the event at fault, when the body parsed that far
  std::string field;                 // empty when no single field is at fault
  std::string message;
};

struct DecodeResult {
  std::vector<Event> events;
  std::optional<DecodeError> error;
};

// `now` stamps events that carry no time of their own.
DecodeResult decode_json_events(std::string_view body, TimestampNs now);
DecodeResult decode_ndjson_events(std::string_view body, TimestampNs now);
// The wire form of one event (what the decoders read back).
nlohmann::json encode_event(const Event& event);
// Events as NDJSON, one line each.
std::string encode_ndjson(const std::vector<Event>& events);
// Labels (and tags) as a JSON object, as events, series and stream messages carry them.
nlohmann::json labels_to_json(const Labels& labels);

}  // namespace perfscope::server
