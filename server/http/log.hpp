// Line logging to stderr: a UTC timestamp, a level and a message, as text or as one JSON
// object a line (stable keys: ts, level, msg, and an access entry's own). Safe from any thread
// (one write per line). Never logs secrets: callers pass only what may be shown, and an access
// entry's credential query parameters (`access_token`, `token`) are written as REDACTED.
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/base/status.hpp"

namespace perfscope::server {

enum class LogLevel { kDebug, kInfo, kWarn, kError };
enum class LogFormat { kText, kJson };

struct LogOptions {
  LogLevel level = LogLevel::kInfo;  // lines below it are not written
  LogFormat format = LogFormat::kText;
  bool access = false;  // one line per HTTP response (log_access)
};
// Set at start, before other threads log (the options are read without a lock after).
void configure_logging(const LogOptions& options);
bool access_log_enabled();

Result<LogLevel> parse_log_level(std::string_view text);    // debug|info|warn|error
Result<LogFormat> parse_log_format(std::string_view text);  // text|json

void log_debug(std::string_view message);
void log_info(std::string_view message);
void log_warn(std::string_view message);
void log_error(std::string_view message);

// One answered HTTP request: the client's address, the request line as sent (method "-" when
// it could not be parsed), the status, the body bytes and the time from the request's end to
// its answer's last byte (or the connection's end: `completed` false).
struct AccessEntry {
  std::string_view remote;
  std::string_view method;
  std::string_view target;
  int status = 0;
  std::uint64_t bytes = 0;
  double duration_ms = 0;
  bool completed = true;
};
void log_access(const AccessEntry& entry);  // written at info level when access logging is on

// The target with the value of every credential query parameter (`access_token`, `token`,
// their names decoded as the server decodes them) replaced by REDACTED.
std::string redact_target(std::string_view target);

}  // namespace perfscope::server
