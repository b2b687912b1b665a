#include "server/http/spooled_body.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace perfscope::server {

namespace {

constexpr std::size_t kBlock = 256 * 1024;  // what a caller's text holds before drain() writes it

// An open file without a name in `dir`, or -1.
int anonymous_file(const std::string& dir) {
#ifdef O_TMPFILE
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
#endif
  std::string path = dir + "/.perfscope-spool-XXXXXX";
  int tmp = ::mkostemp(path.data(), O_CLOEXEC);
  if (tmp >= 0) ::unlink(path.c_str());
  return tmp;
}

}  // namespace

struct SpooledBody::Deflater {
  z_stream zs{};
  bool ready = false;
  ~Deflater() {
    if (ready) deflateEnd(&zs);
  }
};

SpooledBody::SpooledBody(int fd, bool gzip, std::size_t deflate_piece)
    : fd_(fd), deflate_piece_(std::max<std::size_t>(1, std::min(deflate_piece, kDeflatePiece))) {
  if (gzip) {
    deflater_ = std::make_unique<Deflater>();
    // windowBits 15 + 16: the gzip wrapper. Level 6: exports are large, and zlib's default
    // level gives most of the size for a fraction of level 9's time.
    deflater_->ready = deflateInit2(&deflater_->zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
  }
}

SpooledBody::~SpooledBody() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::unique_ptr<SpooledBody>> SpooledBody::create(const std::string& dir, bool gzip, std::size_t deflate_piece) {
  int fd = dir.empty() ? -1 : anonymous_file(dir);
  if (fd < 0) {
    std::error_code ec;
    const auto tmp = std::filesystem::temp_directory_path(ec);
    if (!ec) fd = anonymous_file(tmp.string());
  }
  if (fd < 0) return Status::unavailable(std::string("cannot create a file for the response: ") + std::strerror(errno));
  std::unique_ptr<SpooledBody> body(new SpooledBody(fd, gzip, deflate_piece));
  if (gzip && !body->deflater_->ready) return Status::internal("gzip compression could not start");
  return body;
}

void SpooledBody::append(std::string_view bytes) {
  if (!status_.ok() || bytes.empty()) return;
  if (finished_) {
    status_ = Status::internal("append to a finished response body");
    return;
  }
  status_ = deflater_ ? deflate_out(bytes.data(), bytes.size(), false) : write_out(bytes.data(), bytes.size());
}

void SpooledBody::drain(std::string& text) {
  if (text.size() < kBlock) return;
  append(text);
  text.clear();
}

Status SpooledBody::finish(std::string_view rest) {
  if (finished_) return status_;
  append(rest);
  finished_ = true;
  if (status_.ok() && deflater_) status_ = deflate_out(nullptr, 0, true);
  return status_;
}

Status SpooledBody::write_out(const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd_, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      // ENOSPC above all: refused as a whole rather than sent short.
      return Status::unavailable(std::string("cannot write the response body to disk: ") + std::strerror(errno));
    }
    data += w;
    n -= static_cast<std::size_t>(w);
    size_ += static_cast<std::uint64_t>(w);
  }
  return Status();
}

Status SpooledBody::deflate_out(const char* data, std::size_t n, bool last) {
  z_stream& zs = deflater_->zs;
  char out[64 * 1024];
  // zlib counts its input in uInt: a larger append goes in pieces.
  do {
    const std::size_t piece = std::min(n, deflate_piece_);
    const bool finish = last && piece == n;
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
    zs.avail_in = static_cast<uInt>(piece);
    for (;;) {
      zs.next_out = reinterpret_cast<Bytef*>(out);
      zs.avail_out = sizeof out;
      const int rc = deflate(&zs, finish ? Z_FINISH : Z_NO_FLUSH);
      if (rc == Z_STREAM_ERROR) return Status::internal("gzip compression failed");
      if (Status s = write_out(out, sizeof out - zs.avail_out); !s.ok()) return s;
      if (finish ? rc == Z_STREAM_END : zs.avail_in == 0 && zs.avail_out != 0) break;
    }
    data += piece;
    n -= piece;
  } while (n > 0);
  return Status();
}

Result<std::string> SpooledBody::read_all() const {
  std::string out(size_, '\0');
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t r = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return Status::io_error(std::string("cannot read the response body back: ") + std::strerror(errno));
    done += static_cast<std::size_t>(r);
  }
  return out;
}

}  // namespace perfscope::server
