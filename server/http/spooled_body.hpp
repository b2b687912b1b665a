// SpooledBody: a response body written to an unlinked temporary file instead of the heap.
// Exports that run to hundreds of megabytes (a day of kernels as CSV, a whole trace) then
// cost the file's pages, which the kernel can drop, not resident memory; a client that does
// not read holds its socket buffers and an open file, nothing more. The file has no name from
// the start (O_TMPFILE, else unlinked at once), so nothing is left behind by a crash.
//
// Ownership and threads: one writer (the handler, on its worker thread) appends and calls
// finish(); afterwards the object is read-only and may be shared (the session sends from
// fd(); in-process callers read it with read_all()). The descriptor closes with the object.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "engine/status.hpp"

namespace perfscope::server {

class SpooledBody {
 public:
  // A spool in `dir` (the data directory: in a container /tmp may be memory), or in the
  // system's temporary directory when `dir` cannot take one. `gzip`: the bytes appended are
  // deflated as they come (RFC 1952), for a .gz download or Content-Encoding: gzip.
  static Result<std::unique_ptr<SpooledBody>> create(const std::string& dir, bool gzip);
  ~SpooledBody();
  SpooledBody(const SpooledBody&) = delete;
  SpooledBody& operator=(const SpooledBody&) = delete;

  // Appends; buffered, written in blocks. A full disk is an error here, not a short file.
  Status append(std::string_view bytes);
  // Appends `text` and clears it once it holds a block or more: callers format rows into a
  // string and hand it over here, so the string never grows past a block.
  Status drain(std::string& text);
  // Writes what is buffered (and the gzip trailer); no appends after.
  Status finish();

  int fd() const { return fd_; }
  std::uint64_t size() const { return size_; }  // bytes in the file, after finish()
  bool gzip() const { return deflater_ != nullptr; }
  // The whole file; for callers in the same process (perfscope report --db).
  Result<std::string> read_all() const;

 private:
  struct Deflater;
  SpooledBody(int fd, bool gzip);
  Status write_out(const char* data, std::size_t n);
  Status deflate_out(const char* data, std::size_t n, bool last);

  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::string pending_;  // not yet written (or deflated)
  std::unique_ptr<Deflater> deflater_;
  bool finished_ = false;
};

}  // namespace perfscope::server
