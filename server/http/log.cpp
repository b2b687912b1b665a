#include "server/http/log.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace perfscope::server {
namespace {
void write_line(const char* level, std::string_view message) {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string line = std::string(stamp) + "." + (ms < 100 ? (ms < 10 ? "00" : "0") : "") + std::to_string(ms) + "Z " +
                     level + " " + std::string(message) + "\n";
  (void)!::write(STDERR_FILENO, line.data(), line.size());
}
}  // namespace

void log_info(std::string_view message) { write_line("INFO", message); }
void log_warn(std::string_view message) { write_line("WARN", message); }
void log_error(std::string_view message) { write_line("ERROR", message); }

}  // namespace perfscope::server
