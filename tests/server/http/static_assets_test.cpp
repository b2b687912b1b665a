#include "server/http/static_assets.hpp"

#include <gtest/gtest.h>

#include "support/gunzip.hpp"

namespace perfscope::server {
namespace {

TEST(StaticAssets, ServesTheDashboardWithTypesEtagsAndGzip) {
  StaticAssets assets;
  HttpRequest req;
  req.method = "GET";
  req.path = "/";
  auto index = assets.serve(req);
  ASSERT_TRUE(index.has_value());
  EXPECT_EQ(index->content_type, "text/html; charset=utf-8");
  EXPECT_NE(index->body.find("<title>perfscope</title>"), std::string::npos);
  std::string etag;
  for (auto& [k, v] : index->headers) {
    if (k == "ETag") etag = v;
  }
  ASSERT_FALSE(etag.empty());

  req.if_none_match = etag;
  EXPECT_EQ(assets.serve(req)->status, 304u);

  req.if_none_match.clear();
  req.path = "/vendor/uPlot.iife.min.js";
  req.accept_encoding = "gzip, deflate";
  auto js = assets.serve(req);
  ASSERT_TRUE(js.has_value());
  EXPECT_EQ(js->content_type, "text/javascript; charset=utf-8");
  bool gz = false;
  for (auto& [k, v] : js->headers) gz |= (k == "Content-Encoding" && v == "gzip");
  ASSERT_TRUE(gz);
  EXPECT_NE(gunzip(js->body).find("uPlot"), std::string::npos);

  req.path = "/nope.js";
  EXPECT_FALSE(assets.serve(req).has_value());
}

}  // namespace
}  // namespace perfscope::server
