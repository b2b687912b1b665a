#include "server/http/spooled_body.hpp"

#include <sys/resource.h>

#include <csignal>
#include <filesystem>

#include <gtest/gtest.h>

#include "support/gunzip.hpp"

namespace perfscope::server {
namespace {

std::string rows(std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += "gemm_" + std::to_string(i % 97) + "," + std::to_string(i * 7919) + "\r\n";
  return out;
}

// Hands `text` over the way the exports do: a row at a time into a string that drain() empties.
Status produce(SpooledBody& body, const std::string& text, std::string_view rest) {
  std::string out;
  for (std::size_t at = 0; at < text.size(); at += 100) {
    out.append(text, at, 100);
    body.drain(out);
    EXPECT_LT(out.size(), 256u * 1024 + 100) << "the caller's text never grows past a block";
  }
  out += rest;
  return body.finish(out);
}

TEST(SpooledBody, KeepsEveryByteInOrder) {
  auto body = SpooledBody::create(std::filesystem::temp_directory_path().string(), false);
  ASSERT_TRUE(body.ok());
  const std::string text = rows(40000);  // about 0.8 MB: several blocks
  ASSERT_TRUE(produce(**body, text, "end").ok());
  EXPECT_EQ((*body)->size(), text.size() + 3);
  auto all = (*body)->read_all();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, text + "end");
}

TEST(SpooledBody, GzipsAsItGoes) {
  auto body = SpooledBody::create("", true);  // no data directory: the system's temporary one
  ASSERT_TRUE(body.ok());
  const std::string text = rows(40000);
  ASSERT_TRUE(produce(**body, text, "end").ok());
  EXPECT_TRUE((*body)->gzip());
  EXPECT_LT((*body)->size(), text.size() / 2);
  auto all = (*body)->read_all();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(gunzip(*all), text + "end");
}

TEST(SpooledBody, AnEmptyGzipBodyIsAValidGzipFile) {
  auto body = SpooledBody::create("", true);
  ASSERT_TRUE(body.ok());
  ASSERT_TRUE((*body)->finish().ok());
  auto all = (*body)->read_all();
  ASSERT_TRUE(all.ok());
  EXPECT_GT(all->size(), 0u);
  EXPECT_EQ(gunzip(*all), "");
}

TEST(SpooledBody, AppendingToAFinishedBodyFailsIt) {
  auto body = SpooledBody::create("", false);
  ASSERT_TRUE(body.ok());
  ASSERT_TRUE((*body)->finish("done").ok());
  (*body)->append("more");
  EXPECT_TRUE((*body)->failed());
  EXPECT_FALSE((*body)->finish().ok());
}

// A write that fails part-way (here the file-size limit, as a full disk would) fails the body:
// later appends are dropped, the caller's text is still emptied, and finish() says why, so no
// short file is ever sent as if complete.
TEST(SpooledBody, AFailedWriteFailsTheWholeBody) {
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  // The limit and the signal's disposition are the process's: put back on every way out.
  struct Restore {
    rlimit limit;
    void (*handler)(int);
    ~Restore() {
      setrlimit(RLIMIT_FSIZE, &limit);
      std::signal(SIGXFSZ, handler);
    }
  } restore{old, std::signal(SIGXFSZ, SIG_IGN)};
  rlimit small = old;
  small.rlim_cur = 512 * 1024;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  auto body = SpooledBody::create("", false);
  ASSERT_TRUE(body.ok());
  const Status s = produce(**body, rows(60000), "end");  // about 1.2 MB
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE((*body)->failed());
  EXPECT_NE(s.message().find("cannot write the response body"), std::string::npos) << s.message();
  EXPECT_LE((*body)->size(), 512u * 1024);
}

// zlib counts its input in 32 bits, so one append goes to it in pieces (of 1 GiB, here of
// 1,000 bytes): what comes out is the whole input, whatever piece a boundary falls in, and the
// stream ends only after the last piece.
TEST(SpooledBody, GzipsOneAppendInPieces) {
  for (std::size_t piece : {1000u, 4096u, 7u}) {
    auto body = SpooledBody::create("", true, piece);
    ASSERT_TRUE(body.ok());
    const std::string text = rows(piece == 7 ? 2000 : 40000);
    (*body)->append(text);
    ASSERT_TRUE((*body)->finish("end").ok());
    auto all = (*body)->read_all();
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(gunzip(*all), text + "end") << "pieces of " << piece;
  }
}

}  // namespace
}  // namespace perfscope::server
