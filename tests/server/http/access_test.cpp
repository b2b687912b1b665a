#include "server/http/access.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace perfscope::server {
namespace {

const std::string kRead = "r-0123456789abcdef";
const std::string kWrite = "w-0123456789abcdef";

AccessControl control() { return AccessControl({{Scope::kRead, kRead}, {Scope::kWrite, kWrite}}); }

TEST(Access, TokenFileLinesAndErrorsThatNeverShowTheToken) {
  auto ok = parse_token_file("# perfscope tokens\n\nread  " + kRead + "\r\nwrite\t" + kWrite + "\n", "t");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ASSERT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[0].scope, Scope::kRead);
  EXPECT_EQ((*ok)[1].secret, kWrite);

  auto bad_scope = parse_token_file("admin " + kWrite + "\n", "tokens.txt");
  ASSERT_FALSE(bad_scope.ok());
  EXPECT_NE(bad_scope.status().message().find("tokens.txt line 1"), std::string::npos);
  EXPECT_EQ(bad_scope.status().message().find(kWrite), std::string::npos);
  auto short_token = parse_token_file("read short-secret\n", "t");
  ASSERT_FALSE(short_token.ok());
  EXPECT_EQ(short_token.status().message().find("short-secret"), std::string::npos);
  EXPECT_FALSE(parse_token_file("# nothing\n", "t").ok());
  EXPECT_FALSE(load_token_file("/nonexistent/tokens").ok());
}

TEST(Access, ScopesPerPath) {
  EXPECT_EQ(AccessControl::required("GET", "/healthz"), Scope::kNone);
  EXPECT_EQ(AccessControl::required("GET", "/"), Scope::kNone);
  EXPECT_EQ(AccessControl::required("GET", "/app.js"), Scope::kNone);
  EXPECT_EQ(AccessControl::required("GET", "/metrics"), Scope::kRead);
  EXPECT_EQ(AccessControl::required("GET", "/api/v1/stream"), Scope::kRead);
  EXPECT_EQ(AccessControl::required("GET", "/api/v1/report"), Scope::kRead);
  EXPECT_EQ(AccessControl::required("POST", "/api/v1/events"), Scope::kWrite);
  EXPECT_EQ(AccessControl::required("POST", "/api/v1/abtests"), Scope::kWrite);
  EXPECT_EQ(AccessControl::required("GET", "/api/v1/ingest"), Scope::kWrite);
}

TEST(Access, GrantsTheScopeOfTheMatchingTokenOnly) {
  const AccessControl a = control();
  EXPECT_EQ(a.granted(kRead), Scope::kRead);
  EXPECT_EQ(a.granted(kWrite), Scope::kWrite);
  EXPECT_EQ(a.granted(kWrite.substr(0, kWrite.size() - 1)), Scope::kNone);
  EXPECT_EQ(a.granted(kWrite + "x"), Scope::kNone);
  EXPECT_EQ(a.granted(""), Scope::kNone);
}

TEST(Access, AnswersUnauthorizedOrForbidden) {
  const AccessControl a = control();
  EXPECT_FALSE(a.check("GET", "/healthz", "", ""));
  EXPECT_FALSE(a.check("GET", "/api/v1/series", "Bearer " + kRead, ""));
  EXPECT_FALSE(a.check("POST", "/api/v1/events", "Bearer " + kWrite, ""));
  EXPECT_FALSE(a.check("GET", "/api/v1/series", "BEARER " + kRead, ""));  // the scheme in any case
  EXPECT_FALSE(a.check("GET", "/api/v1/series", "bEaReR " + kRead, ""));
  EXPECT_TRUE(a.check("GET", "/api/v1/series", "Bearerx" + kRead, ""));
  EXPECT_FALSE(a.check("GET", "/api/v1/stream", "", kRead));  // WebSocket: token as a parameter

  auto missing = a.check("GET", "/metrics", "", "");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 401u);
  EXPECT_EQ(missing->headers.at(0).first, "WWW-Authenticate");
  auto wrong = a.check("GET", "/metrics", "Bearer not-a-real-token-at-all", "");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401u);
  EXPECT_EQ(nlohmann::json::parse(wrong->body)["error"]["code"], "unauthorized");
  auto scope = a.check("POST", "/api/v1/events", "Bearer " + kRead, "");
  ASSERT_TRUE(scope);
  EXPECT_EQ(scope->status, 403u);
  EXPECT_NE(scope->body.find("write"), std::string::npos);

  EXPECT_FALSE(AccessControl().check("POST", "/api/v1/events", "", "")) << "no tokens: open";
}

TEST(Access, LoopbackAddresses) {
  for (const char* h : {"127.0.0.1", "127.1.2.3", "::1", "localhost"}) EXPECT_TRUE(is_loopback_host(h)) << h;
  for (const char* h : {"0.0.0.0", "10.0.0.1", "::", "192.168.1.1", "example.com"}) EXPECT_FALSE(is_loopback_host(h)) << h;
}

TEST(Access, HostNamesOfHostHeaders) {
  EXPECT_EQ(host_name_of("Example.COM:8080"), "example.com");
  EXPECT_EQ(host_name_of("[::1]:8080"), "::1");
  EXPECT_EQ(host_name_of("[::1]"), "::1");
  EXPECT_EQ(host_name_of("::1"), "::1");
  EXPECT_EQ(host_name_of("localhost."), "localhost");
  EXPECT_EQ(host_name_of("127.0.0.1"), "127.0.0.1");
  // Malformed values name nothing: junk after an IPv6 literal or in the port is not loopback.
  for (const char* h : {"[::1]evil.example", "[::1", "localhost:80x", "127.0.0.1:8080/evil", "[::1]:8o"}) {
    EXPECT_EQ(host_name_of(h), "") << h;
  }
}

// Origin against the server as reached: scheme, name and port, default ports filled in.
TEST(Access, OnlyTheServersOwnPageOrAnAllowedOriginMayWrite) {
  EXPECT_TRUE(same_origin("http://localhost:8080", "localhost:8080", false));
  EXPECT_TRUE(same_origin("http://LOCALHOST:8080", "localhost:8080", false));
  EXPECT_TRUE(same_origin("http://127.0.0.1", "127.0.0.1:80", false));
  EXPECT_TRUE(same_origin("https://[::1]:8443", "[::1]:8443", true));
  EXPECT_FALSE(same_origin("http://localhost:8081", "localhost:8080", false)) << "another port";
  // Behind a proxy that ends TLS the page is https:// and this listener plain: its name and
  // port decide, and a Host without a port (the public name passed on) matches on the name.
  EXPECT_TRUE(same_origin("https://localhost:8080", "localhost:8080", false));
  EXPECT_TRUE(same_origin("https://perfscope.example", "perfscope.example", false));
  EXPECT_TRUE(same_origin("https://perfscope.example", "perfscope.example:443", false));
  EXPECT_FALSE(same_origin("https://perfscope.example", "perfscope.example:8080", false));
  EXPECT_FALSE(same_origin("https://perfscope.example.evil", "perfscope.example", false));
  EXPECT_FALSE(same_origin("ftp://localhost:8080", "localhost:8080", false));
  EXPECT_FALSE(same_origin("http://evil.example", "localhost", false));
  EXPECT_FALSE(same_origin("null", "localhost", false));
  EXPECT_FALSE(same_origin("http://", "localhost", false));
  EXPECT_FALSE(same_origin("http://localhost:80x", "localhost:80", false));
  EXPECT_TRUE(origin_may_act("", "localhost:8080", false, {})) << "not a browser";
  EXPECT_FALSE(origin_may_act("http://tools.example", "localhost:8080", false, {}));
  EXPECT_TRUE(origin_may_act("http://tools.example", "localhost:8080", false, {"http://tools.example"}));
  EXPECT_TRUE(origin_may_act("http://any.example", "localhost:8080", false, {"*"}));
}

TEST(Access, ALoopbackListenerAnswersOnlyNamesOfItself) {
  HostCheck loopback("127.0.0.1", {});
  ASSERT_TRUE(loopback.active());
  for (const char* h : {"localhost:8080", "127.0.0.1:8080", "[::1]:8080", "LOCALHOST", "127.0.0.9", "dash.localhost:1", ""}) {
    EXPECT_TRUE(loopback.allows(h)) << h;
  }
  for (const char* h : {"evil.example:8080", "evil.example", "127.0.0.1.evil.example", "localhost.evil.example", "10.0.0.1",
                        "[::1]evil.example", "localhost:1@evil.example"}) {
    EXPECT_FALSE(loopback.allows(h)) << h;
  }
  HostCheck named("::1", {"perfscope.lab", "Box.Local"});
  EXPECT_TRUE(named.allows("perfscope.lab:8080"));
  EXPECT_TRUE(named.allows("box.local"));
  EXPECT_FALSE(named.allows("other.lab"));
  EXPECT_FALSE(HostCheck("localhost", {"*"}).active()) << "* answers any name";
  // Another address is reached by whatever names the network has: checked only when told.
  EXPECT_FALSE(HostCheck("0.0.0.0", {}).active());
  HostCheck listed("10.1.2.3", {"gpu-07.lab"});
  EXPECT_TRUE(listed.allows("10.1.2.3:8080")) << "the listen address";
  EXPECT_TRUE(listed.allows("gpu-07.lab"));
  EXPECT_TRUE(listed.allows("localhost"));
  EXPECT_FALSE(listed.allows("evil.example"));
}

}  // namespace
}  // namespace perfscope::server
