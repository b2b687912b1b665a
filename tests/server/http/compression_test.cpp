#include "server/http/compression.hpp"

#include <gtest/gtest.h>

#include "support/gunzip.hpp"

namespace perfscope::server {
namespace {

TEST(AcceptsGzip, HonoursTokensAndZeroQuality) {
  EXPECT_TRUE(accepts_gzip("gzip"));
  EXPECT_TRUE(accepts_gzip("deflate, GZIP;q=0.5"));
  EXPECT_TRUE(accepts_gzip("*"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0.000"));
  EXPECT_FALSE(accepts_gzip("br, deflate"));
  EXPECT_FALSE(accepts_gzip(""));
}

TEST(Gzip, RoundTrips) {
  std::string text(5000, 'x');
  for (std::size_t i = 0; i < text.size(); i += 7) text[i] = static_cast<char>('a' + i % 26);
  auto z = gzip_compress(text);
  ASSERT_TRUE(z.has_value());
  EXPECT_LT(z->size(), text.size());
  EXPECT_EQ(gunzip(*z), text);
}

}  // namespace
}  // namespace perfscope::server
