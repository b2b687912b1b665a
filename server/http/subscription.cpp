#include "server/http/subscription.hpp"

#include <nlohmann/json.hpp>

namespace perfscope::server {

Result<std::vector<SeriesPattern>> parse_subscription(std::string_view text) {
  using nlohmann::json;
  json msg = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (msg.is_discarded() || !msg.is_object()) return Status::invalid_argument("message is not a JSON object");
  auto it = msg.find("subscribe");
  if (it == msg.end()) return Status::invalid_argument("expected {\"subscribe\":[patterns]}", "subscribe");
  if (!it->is_array()) return Status::invalid_argument("'subscribe' must be an array of strings", "subscribe");
  std::vector<SeriesPattern> patterns;
  for (const json& p : *it) {
    if (!p.is_string() || p.get_ref<const std::string&>().empty()) {
      return Status::invalid_argument("'subscribe' must be an array of non-empty strings", "subscribe");
    }
    patterns.emplace_back(p.get<std::string>());
  }
  return patterns;
}

}  // namespace perfscope::server
