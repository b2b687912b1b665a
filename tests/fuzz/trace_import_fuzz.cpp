// libFuzzer target: `perfscope import`'s readers of other tools' traces (ONNX Runtime profiles,
// PyTorch profiler traces). Any JSON document is either refused with a field named or converted
// into events the server accepts: an import that the server would refuse halfway through its
// batches would leave half a run behind.
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "server/cli/trace_import.hpp"
#include "server/wire/event_codec.hpp"

using namespace perfscope;
using namespace perfscope::server;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto doc = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  const TimestampNs end = 1'700'000'000'000'000'000;
  auto r = import_trace(doc, {"run", "model", end});
  if (!r.ok()) {
    if (r.status().field().empty()) std::abort();  // every refusal names what it refused
    return 0;
  }
  std::string ndjson;
  for (const auto& e : r->events) ndjson += e.dump() + "\n";
  DecodeResult decoded = decode_ndjson_events(ndjson, end);
  if (decoded.error) std::abort();
  for (const Event& e : decoded.events) {
    if (!validate(e).ok()) std::abort();
  }
  return 0;
}
