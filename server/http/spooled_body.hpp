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

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "engine/base/status.hpp"

namespace perfscope::server {

class SpooledBody {
 public:
  // A spool in `dir` (the data directory: in a container /tmp may be memory), or in the
  // system's temporary directory when `dir` cannot take one. `gzip`: the bytes appended are
  // deflated as they come (RFC 1952), for a .gz download or Content-Encoding: gzip.
  // zlib counts its input in 32 bits, so an append goes to it in pieces of at most
  // `deflate_piece` bytes (tests pass small ones to cross piece boundaries cheaply).
  static constexpr std::size_t kDeflatePiece = std::size_t{1} << 30;
  static Result<std::unique_ptr<SpooledBody>> create(const std::string& dir, bool gzip,
                                                     std::size_t deflate_piece = kDeflatePiece);
  ~SpooledBody();
  SpooledBody(const SpooledBody&) = delete;
  SpooledBody& operator=(const SpooledBody&) = delete;

  // Appends, written (or deflated) at once. The first write that fails (a full disk above all)
  // fails the body: later appends do nothing and finish() returns that error, so a producer
  // writes on and checks once, and the client never gets a short file.
  void append(std::string_view bytes);
  // Appends `text` once it holds a block or more, and then clears it (failed or not): callers
  // format rows into a string and hand it over here, so the string never grows past a block.
  void drain(std::string& text);
  // Appends `rest` and ends the body (the gzip trailer); the body is complete when this is ok.
  // No appends after.
  Status finish(std::string_view rest = {});
  bool failed() const { return !status_.ok(); }

  int fd() const { return fd_; }
  std::uint64_t size() const { return size_; }  // bytes in the file, after finish()
  bool gzip() const { return deflater_ != nullptr; }
  // The whole file; for callers in the same process (perfscope report --db).
  Result<std::string> read_all() const;

 private:
  struct Deflater;
  SpooledBody(int fd, bool gzip, std::size_t deflate_piece);
  Status write_out(const char* data, std::size_t n);
  Status deflate_out(const char* data, std::size_t n, bool last);

  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::unique_ptr<Deflater> deflater_;
  std::size_t deflate_piece_;
  Status status_;  // the first failure
  bool finished_ = false;
};

}  // namespace perfscope::server
