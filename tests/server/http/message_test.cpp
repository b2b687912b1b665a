#include "server/http/message.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace perfscope::server {
namespace {

TEST(ParseTarget, SplitsAndDecodesPathAndQuery) {
  HttpRequest r;
  ASSERT_TRUE(parse_target("/api/v1/series/query?name=host_cpu_%2A&cpu=total&x=a+b&flag", r));
  EXPECT_EQ(r.path, "/api/v1/series/query");
  EXPECT_EQ(r.query.at("name"), "host_cpu_*");
  EXPECT_EQ(r.query.at("cpu"), "total");
  EXPECT_EQ(r.query.at("x"), "a b");
  EXPECT_EQ(r.query.at("flag"), "");
  EXPECT_FALSE(parse_target("http://elsewhere/", r));
  EXPECT_FALSE(parse_target("", r));
}

TEST(PercentDecode, LeavesBrokenEscapesAlone) {
  EXPECT_EQ(percent_decode("100%", false), "100%");
  EXPECT_EQ(percent_decode("%zz%4", false), "%zz%4");
  EXPECT_EQ(percent_decode("%7B%22%7D", false), "{\"}");
}

TEST(ErrorResponse, IsTheDocumentedJsonShape) {
  HttpResponse r = error_response(400, "invalid_argument", "bad 'from'", "from");
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(r.content_type, "application/json");
  auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["error"]["code"], "invalid_argument");
  EXPECT_EQ(j["error"]["message"], "bad 'from'");
  EXPECT_EQ(j["error"]["field"], "from");
  EXPECT_FALSE(nlohmann::json::parse(error_response(404, "not_found", "x").body)["error"].contains("field"));
}

}  // namespace
}  // namespace perfscope::server
