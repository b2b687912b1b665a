#include "server/service/query_time.hpp"

#include <charconv>
#include <limits>
#include <string>

namespace perfscope::server {

Result<std::int64_t> parse_duration_ns(std::string_view text, std::string_view field) {
  auto bad = [&] {
    return Status::invalid_argument("'" + std::string(field) + "' must be a duration like 500ms, 30s, 5m, 1h or 2d, got '" +
                                        std::string(text) + "'",
                                    std::string(field));
  };
  double amount = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), amount);
  if (ec != std::errc() || p == text.data() || amount < 0) return bad();
  std::string_view unit(p, static_cast<std::size_t>(text.data() + text.size() - p));
  double scale = 0;
  if (unit == "ns") scale = 1;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s") scale = 1e9;
  else if (unit == "m") scale = 60e9;
  else if (unit == "h") scale = 3600e9;
  else if (unit == "d") scale = 86400e9;
  else return bad();
  double ns = amount * scale;
  if (ns > static_cast<double>(std::numeric_limits<std::int64_t>::max() / 2)) return bad();
  return static_cast<std::int64_t>(ns);
}

Result<TimestampNs> parse_time_ns(std::string_view text, TimestampNs now, std::string_view field) {
  if (text == "now") return now;
  std::string_view rel = text;
  if (rel.rfind("now", 0) == 0) rel.remove_prefix(3);
  if (!rel.empty() && rel.front() == '-') {
    PERFSCOPE_ASSIGN_OR_RETURN(auto d, parse_duration_ns(rel.substr(1), field));
    return now - d;
  }
  std::int64_t ns = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), ns);
  if (ec != std::errc() || p != text.data() + text.size() || ns < 0) {
    return Status::invalid_argument("'" + std::string(field) +
                                        "' must be nanoseconds since the Unix epoch, 'now' or 'now-<duration>', got '" +
                                        std::string(text) + "'",
                                    std::string(field));
  }
  return ns;
}

Result<TimeWindow> parse_window(std::string_view window, std::string_view from, std::string_view to, TimestampNs now) {
  TimeWindow w;
  if (!window.empty() && window != "all") {
    auto d = parse_duration_ns(window, "window");
    if (!d.ok()) {
      return Status::invalid_argument("'window' must be 'all' or a duration like 30s, 5m or 1h, got '" +
                                          std::string(window) + "'",
                                      "window");
    }
    w.from_ns = now - *d;
    w.to_ns = now;
    w.all = false;
  }
  if (!from.empty()) {
    auto t = parse_time_ns(from, now, "from");
    if (!t.ok()) return t.status();
    w.from_ns = *t;
    w.all = false;
  }
  if (!to.empty()) {
    PERFSCOPE_ASSIGN_OR_RETURN(auto t, parse_time_ns(to, now, "to"));
    w.to_ns = t;
    w.all = false;
  }
  if (w.from_ns > w.to_ns) return Status::invalid_argument("'from' is after 'to'", "from");
  return w;
}

}  // namespace perfscope::server
