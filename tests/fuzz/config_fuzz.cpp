// libFuzzer target: the config file (`perfscope serve --config FILE`, `option = value` lines,
// a TOML subset) through the real command-line parser, which validates every value the file
// sets. The input is written to a file because that is the parser's input. One parser serves
// every input (each parse starts from the defaults): building its option table is most of the
// cost of a parse, and the table is not what is fuzzed.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>

#include "server/cli/cli.hpp"


extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // The parser explains every bad file on std::cerr; libFuzzer's own reports stay on stderr.
  static std::ofstream null("/dev/null");
  std::cerr.rdbuf(null.rdbuf());
  std::cout.rdbuf(null.rdbuf());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // One file per fuzzing process, removed after each parse (libFuzzer ends without atexit).
  static const std::string path = "/tmp/perfscope_config_fuzz_" + std::to_string(::getpid()) + ".toml";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return 0;
  const bool written = ::write(fd, data, size) == static_cast<ssize_t>(size);
  ::close(fd);
  if (!written) return 0;
  const char* argv[] = {"perfscope", "serve", "--config", path.c_str()};
  static perfscope::server::CommandLineParser parser;
  perfscope::server::ParsedCommand parsed = parser.parse(4, argv);
  ::unlink(path.c_str());
  if (parsed.command != perfscope::server::Command::kServe && parsed.exit_code != 2) __builtin_trap();
  return 0;
}
