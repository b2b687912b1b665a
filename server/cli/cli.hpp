// The command line: `perfscope serve [options]`, `perfscope push`, `import`, `run`, `perfscope demo`,
// `perfscope report`, `perfscope top`, `perfscope version`. Flags, PERFSCOPE_*
// environment variables and an optional config file fill one AppConfig; invalid values give
// one clear message and exit code 2.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "engine/base/status.hpp"

#include <optional>
#include <string>

#include "server/api/app_config.hpp"
#include "server/cli/tools.hpp"
#include "server/http/log.hpp"

namespace perfscope::server {

enum class Command { kServe, kPush, kImport, kRun, kRelay, kDemo, kReport, kTop, kHealthcheck, kVersion, kLicenses, kExit };

struct ParsedCommand {
  Command command = Command::kExit;
  int exit_code = 0;  // for kExit: help printed (0) or invalid input (2)
  AppConfig config;
  PushOptions push;
  ImportOptions import;
  RunOptions run;
  RelayOptions relay;
  DemoOptions demo;
  ReportOptions report;
  TopOptions top;
  LogOptions log;  // serve's --log-level, --log-format, --access-log
  std::string healthcheck_server = "http://127.0.0.1:8080";
  std::string healthcheck_certificate;  // pinned when derived from a TLS server's own settings
};

// A size in bytes: a number with an optional unit — B, kB/MB/GB/TB (powers of 1000) or
// KiB/MiB/GiB/TiB (powers of 1024); "0" is zero.
Result<std::uint64_t> parse_byte_size(std::string_view text);

// Prints help or errors itself (stdout for help, stderr for errors).
ParsedCommand parse_command_line(int argc, const char* const* argv);

// The same parser, its option table built once and reused: each parse() starts from the
// defaults and sees the environment as it is then. Not thread-safe (one parse at a time).
class CommandLineParser {
 public:
  CommandLineParser();
  ~CommandLineParser();
  CommandLineParser(const CommandLineParser&) = delete;
  CommandLineParser& operator=(const CommandLineParser&) = delete;

  ParsedCommand parse(int argc, const char* const* argv);

 private:
  struct Table;  // CLI11 stays inside cli.cpp
  std::unique_ptr<Table> table_;
};

}  // namespace perfscope::server
