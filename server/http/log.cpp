#include "server/http/log.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

#include <nlohmann/json.hpp>

#include "server/http/message.hpp"

namespace perfscope::server {
namespace {

LogOptions g_options;  // set once by configure_logging, before other threads start

std::string timestamp() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[40];
  const std::size_t n = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(stamp + n, sizeof stamp - n, ".%03dZ", static_cast<int>(ms));
  return stamp;
}

// A JSON string, quoted, as nlohmann-json writes it: control characters escaped, valid UTF-8
// as it is, any other byte as U+FFFD (a request target may hold anything; a log line stays one
// valid JSON object).
void append_json_string(std::string& out, std::string_view text) {
  out += nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

const char* level_name(LogLevel level, bool lower) {
  switch (level) {
    case LogLevel::kDebug: return lower ? "debug" : "DEBUG";
    case LogLevel::kInfo: return lower ? "info" : "INFO";
    case LogLevel::kWarn: return lower ? "warn" : "WARN";
    case LogLevel::kError: return lower ? "error" : "ERROR";
  }
  return "info";
}

void write_out(const std::string& line) { (void)!::write(STDERR_FILENO, line.data(), line.size()); }

// `fields`: a JSON object's members after msg (`,"k":v…`), JSON format only; `text_tail` the
// same in text form.
void write_line(LogLevel level, std::string_view message, const std::string& fields = {},
                const std::string& text_tail = {}) {
  if (level < g_options.level) return;
  std::string line;
  if (g_options.format == LogFormat::kJson) {
    line = "{\"ts\":\"" + timestamp() + "\",\"level\":\"" + level_name(level, true) + "\",\"msg\":";
    append_json_string(line, message);
    line += fields;
    line += "}\n";
  } else {
    line = timestamp() + " " + level_name(level, false) + " " + std::string(message) + text_tail + "\n";
  }
  write_out(line);
}

}  // namespace

void configure_logging(const LogOptions& options) { g_options = options; }
bool access_log_enabled() { return g_options.access && g_options.level <= LogLevel::kInfo; }

Result<LogLevel> parse_log_level(std::string_view text) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (text == level_name(l, true)) return l;
  }
  return Status::invalid_argument("must be debug, info, warn or error", "log-level");
}

Result<LogFormat> parse_log_format(std::string_view text) {
  if (text == "text") return LogFormat::kText;
  if (text == "json") return LogFormat::kJson;
  return Status::invalid_argument("must be text or json", "log-format");
}

void log_debug(std::string_view message) { write_line(LogLevel::kDebug, message); }
void log_info(std::string_view message) { write_line(LogLevel::kInfo, message); }
void log_warn(std::string_view message) { write_line(LogLevel::kWarn, message); }
void log_error(std::string_view message) { write_line(LogLevel::kError, message); }

std::string redact_target(std::string_view target) {
  const std::size_t query = target.find('?');
  if (query == std::string_view::npos) return std::string(target);
  std::string out(target.substr(0, query + 1));
  std::string_view rest = target.substr(query + 1);
  bool first = true;
  while (true) {
    const std::size_t amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    if (!first) out += '&';
    first = false;
    const std::size_t eq = pair.find('=');
    // The name as the server reads it (percent-decoded): access_token=, access%5Ftoken=, token=.
    const std::string key = percent_decode(pair.substr(0, eq), true);
    const bool credential = key == "access_token" || key == "token";
    out += credential && eq != std::string_view::npos ? std::string(pair.substr(0, eq)) + "=REDACTED" : std::string(pair);
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return out;
}

void log_access(const AccessEntry& e) {
  if (!access_log_enabled()) return;
  const std::string target = redact_target(e.target);
  char duration[32];
  std::snprintf(duration, sizeof duration, "%.3f", e.duration_ms);
  if (g_options.format == LogFormat::kJson) {
    std::string fields = ",\"remote\":";
    append_json_string(fields, e.remote);
    fields += ",\"method\":";
    append_json_string(fields, e.method);
    fields += ",\"target\":";
    append_json_string(fields, target);
    fields += ",\"status\":" + std::to_string(e.status) + ",\"bytes\":" + std::to_string(e.bytes) +
              ",\"duration_ms\":" + duration + ",\"completed\":" + (e.completed ? "true" : "false");
    return write_line(LogLevel::kInfo, "access", fields);
  }
  // Text: the request line quoted as in common access logs, its control characters escaped.
  std::string request_line;
  append_json_string(request_line, std::string(e.method) + " " + target);
  write_line(LogLevel::kInfo, "access", {},
             " " + std::string(e.remote.empty() ? "-" : e.remote) + " " + request_line + " " + std::to_string(e.status) +
                 " " + std::to_string(e.bytes) + " " + duration + "ms" + (e.completed ? "" : " incomplete"));
}

}  // namespace perfscope::server
