#include "engine/collectors/proc_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>
#include <utility>

namespace perfscope {

ProcFile::ProcFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  buf_.resize(4096);
}

ProcFile::~ProcFile() {
  if (fd_ >= 0) ::close(fd_);
}

ProcFile::ProcFile(ProcFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), buf_(std::move(other.buf_)) {}

ProcFile& ProcFile::operator=(ProcFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    buf_ = std::move(other.buf_);
  }
  return *this;
}

std::optional<std::string_view> ProcFile::read() {
  if (fd_ < 0) return std::nullopt;
  std::size_t total = 0;
  for (;;) {
    if (total == buf_.size()) buf_.resize(buf_.size() * 2);
    ssize_t n = ::pread(fd_, buf_.data() + total, buf_.size() - total, static_cast<off_t>(total));
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (n == 0) break;
    total += static_cast<std::size_t>(n);
  }
  return std::string_view(buf_.data(), total);
}

std::optional<std::string> read_small_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\n')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\n')) text.remove_suffix(1);
  return text;
}

std::optional<double> parse_double(std::string_view text) {
  text = trim(text);
  double v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return v;
}

std::optional<long long> parse_int(std::string_view text) {
  text = trim(text);
  long long v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace perfscope
