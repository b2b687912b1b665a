// ProcFile: a procfs/sysfs file kept open and re-read from offset 0 each pass, which
// avoids an open/close per read on the sampling hot path. Not thread-safe; owned by one
// collector.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace perfscope {

class ProcFile {
 public:
  ProcFile() = default;
  explicit ProcFile(std::string path);
  ~ProcFile();
  ProcFile(ProcFile&& other) noexcept;
  ProcFile& operator=(ProcFile&& other) noexcept;
  ProcFile(const ProcFile&) = delete;
  ProcFile& operator=(const ProcFile&) = delete;

  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  // The whole current content, or nullopt when the file cannot be read. The view is valid
  // until the next read().
  std::optional<std::string_view> read();

 private:
  std::string path_;
  int fd_ = -1;
  std::string buf_;
};

// Reads a whole small file once (discovery, not the hot path).
std::optional<std::string> read_small_file(const std::string& path);

// Parsing helpers for procfs text.
std::optional<double> parse_double(std::string_view text);
std::optional<long long> parse_int(std::string_view text);
std::string_view trim(std::string_view text);

}  // namespace perfscope
