#include "server/api_types.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <nlohmann/json.hpp>

#include "server/compression.hpp"
#include "server/query_time.hpp"
#include "server/send_queue.hpp"
#include "server/static_assets.hpp"

namespace perfscope::server {
namespace {

TEST(ParseTarget, SplitsAndDecodesPathAndQuery) {
  ApiRequest r;
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
  ApiResponse r = error_response(400, "invalid_argument", "bad 'from'", "from");
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(r.content_type, "application/json");
  auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["error"]["code"], "invalid_argument");
  EXPECT_EQ(j["error"]["message"], "bad 'from'");
  EXPECT_EQ(j["error"]["field"], "from");
  EXPECT_FALSE(nlohmann::json::parse(error_response(404, "not_found", "x").body)["error"].contains("field"));
}

TEST(AcceptsGzip, HonoursTokensAndZeroQuality) {
  EXPECT_TRUE(accepts_gzip("gzip"));
  EXPECT_TRUE(accepts_gzip("deflate, GZIP;q=0.5"));
  EXPECT_TRUE(accepts_gzip("*"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0.000"));
  EXPECT_FALSE(accepts_gzip("br, deflate"));
  EXPECT_FALSE(accepts_gzip(""));
}

std::string gunzip(const std::string& in) {
  z_stream zs{};
  inflateInit2(&zs, 15 + 16);
  std::string out(1 << 20, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = inflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return rc == Z_STREAM_END ? out : "<inflate failed>";
}

TEST(Gzip, RoundTrips) {
  std::string text(5000, 'x');
  for (std::size_t i = 0; i < text.size(); i += 7) text[i] = static_cast<char>('a' + i % 26);
  auto z = gzip_compress(text);
  ASSERT_TRUE(z.has_value());
  EXPECT_LT(z->size(), text.size());
  EXPECT_EQ(gunzip(*z), text);
}

TEST(QueryTime, AbsoluteRelativeAndErrors) {
  const TimestampNs now = 1'000'000'000'000;
  EXPECT_EQ(*parse_time_ns("now", now, "from"), now);
  EXPECT_EQ(*parse_time_ns("123", now, "from"), 123);
  EXPECT_EQ(*parse_time_ns("now-5m", now, "from"), now - 300'000'000'000);
  EXPECT_EQ(*parse_time_ns("-30s", now, "from"), now - 30'000'000'000);
  EXPECT_EQ(*parse_time_ns("now-1.5s", now, "from"), now - 1'500'000'000);
  EXPECT_EQ(*parse_duration_ns("250ms", "window"), 250'000'000);
  EXPECT_EQ(*parse_duration_ns("2d", "window"), 172'800'000'000'000);
  auto bad = parse_time_ns("yesterday", now, "to");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().field(), "to");
  EXPECT_FALSE(parse_time_ns("now-5", now, "from").ok());
  EXPECT_FALSE(parse_time_ns("-1", now, "from").ok());
  EXPECT_FALSE(parse_duration_ns("5 weeks", "window").ok());
}

std::shared_ptr<const std::string> msg(const char* s) { return std::make_shared<const std::string>(s); }

TEST(SendQueue, FullQueueDropsTheStalestDroppableMessageNotTheOneInFlight) {
  SendQueue q(3);
  q.push(msg("s1"), true);
  q.set_writing(true);  // s1 is on the wire
  q.push(msg("reply"), false);
  q.push(msg("s2"), true);
  q.push(msg("s3"), true);  // full: s2 goes (s1 is being written, reply is never dropped)
  EXPECT_EQ(q.dropped(), 1u);
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(*q.front(), "s1");
  q.pop_front();
  EXPECT_EQ(*q.front(), "reply");
  q.pop_front();
  EXPECT_EQ(*q.front(), "s3");
}

TEST(SendQueue, StaysBoundedUnderAFloodOfSamples) {
  SendQueue q(4);
  for (int i = 0; i < 1000; ++i) q.push(msg("s"), true);
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(q.dropped(), 996u);
}

TEST(SendQueue, ASampleMessageIsDroppedWhenOnlyRepliesWait) {
  SendQueue q(2);
  q.push(msg("r1"), false);
  q.push(msg("r2"), false);
  EXPECT_FALSE(q.push(msg("s"), true));
  EXPECT_EQ(q.size(), 2u);
  EXPECT_TRUE(q.push(msg("r3"), false));
  EXPECT_EQ(q.size(), 3u);
}

TEST(StaticAssets, ServesTheDashboardWithTypesEtagsAndGzip) {
  StaticAssets assets;
  ApiRequest req;
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
