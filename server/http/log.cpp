#include "server/http/log.hpp"

#include "server/http/message.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

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

// The length of the valid UTF-8 sequence at the start of `s` (0: not one).
std::size_t utf8_sequence(std::string_view s) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  const std::size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
  if (n == 0 || s.size() < n) return 0;
  for (std::size_t i = 1; i < n; ++i) {
    if ((b(i) & 0xC0) != 0x80) return 0;
  }
  if (n == 3 && ((c == 0xE0 && b(1) < 0xA0) || (c == 0xED && b(1) > 0x9F))) return 0;  // overlong, surrogate
  if (n == 4 && ((c == 0xF0 && b(1) < 0x90) || (c == 0xF4 && b(1) > 0x8F))) return 0;  // overlong, > U+10FFFF
  return n;
}

// A JSON string, quoted: control characters escaped, valid UTF-8 as it is, any other byte as
// U+FFFD (a request target may hold anything; a log line stays one valid JSON object).
void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (std::size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      if (const std::size_t n = utf8_sequence(text.substr(i)); n > 0) {
        out.append(text.substr(i, n));
        i += n - 1;
      } else {
        out += "\ufffd";
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char esc[8];
          std::snprintf(esc, sizeof esc, "\\u%04x", c);
          out += esc;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
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
  std::string fields = ",\"remote\":";
  append_json_string(fields, e.remote);
  fields += ",\"method\":";
  append_json_string(fields, e.method);
  fields += ",\"target\":";
  append_json_string(fields, target);
  fields += ",\"status\":" + std::to_string(e.status) + ",\"bytes\":" + std::to_string(e.bytes) +
            ",\"duration_ms\":" + duration + ",\"completed\":" + (e.completed ? "true" : "false");
  // Text: the request line quoted as in common access logs, its control characters escaped.
  std::string request_line;
  append_json_string(request_line, std::string(e.method) + " " + target);
  const std::string tail = " " + std::string(e.remote.empty() ? "-" : e.remote) + " " + request_line + " " +
                           std::to_string(e.status) + " " + std::to_string(e.bytes) + " " + duration + "ms" +
                           (e.completed ? "" : " incomplete");
  write_line(LogLevel::kInfo, "access", fields, tail);
}

}  // namespace perfscope::server
