// Log lines as text and as JSON objects, levels, and access entries that never show a token.
#include "server/http/log.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/temp_dir.hpp"

namespace perfscope::server {
namespace {

// What the logging functions write to stderr while `body` runs, line by line.
template <typename Body>
std::vector<std::string> captured(const LogOptions& options, Body body) {
  testing::TempDir dir;
  const std::string path = dir.file("stderr");
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  std::FILE* file = std::fopen(path.c_str(), "w");
  ::dup2(::fileno(file), STDERR_FILENO);
  configure_logging(options);
  body();
  configure_logging({});
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  std::fclose(file);
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(Log, JsonLinesHaveStableKeysAndEscapedText) {
  auto lines = captured({LogLevel::kInfo, LogFormat::kJson, false}, [] {
    log_info("a \"quoted\"\nline\x01");
    log_warn("careful");
  });
  ASSERT_EQ(lines.size(), 2u);
  auto first = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(first["level"], "info");
  EXPECT_EQ(first["msg"], "a \"quoted\"\nline\x01");
  EXPECT_TRUE(first["ts"].get<std::string>().ends_with("Z"));
  EXPECT_EQ(nlohmann::json::parse(lines[1])["level"], "warn");
}

TEST(Log, LinesBelowTheLevelAreNotWritten) {
  auto lines = captured({LogLevel::kWarn, LogFormat::kText, true}, [] {
    log_debug("d");
    log_info("i");
    log_access({"127.0.0.1", "GET", "/", 200, 5, 1.0, true});  // an info line too
    log_warn("w");
    log_error("e");
  });
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find(" WARN w"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find(" ERROR e"), std::string::npos) << lines[1];
  EXPECT_EQ(captured({LogLevel::kDebug, LogFormat::kText, false}, [] { log_debug("d"); }).size(), 1u);
}

TEST(Log, AccessEntriesRedactTokensInBothFormats) {
  const AccessEntry entry{"10.0.0.7", "GET", "/api/v1/stream?access_token=s3cret&x=1&access%5Ftoken=again&token=t", 101, 0,
                          2.5, true};
  auto json_lines = captured({LogLevel::kInfo, LogFormat::kJson, true}, [&] { log_access(entry); });
  ASSERT_EQ(json_lines.size(), 1u);
  auto j = nlohmann::json::parse(json_lines[0]);
  EXPECT_EQ(j["msg"], "access");
  EXPECT_EQ(j["remote"], "10.0.0.7");
  EXPECT_EQ(j["method"], "GET");
  EXPECT_EQ(j["target"], "/api/v1/stream?access_token=REDACTED&x=1&access%5Ftoken=REDACTED&token=REDACTED");
  EXPECT_EQ(j["status"], 101);
  EXPECT_EQ(j["bytes"], 0);
  EXPECT_DOUBLE_EQ(j["duration_ms"].get<double>(), 2.5);
  EXPECT_EQ(j["completed"], true);
  auto text = captured({LogLevel::kInfo, LogFormat::kText, true}, [&] { log_access(entry); });
  ASSERT_EQ(text.size(), 1u);
  EXPECT_EQ(text[0].find("s3cret"), std::string::npos);
  EXPECT_EQ(text[0].find("again"), std::string::npos);
  EXPECT_NE(text[0].find(" INFO access 10.0.0.7 \"GET /api/v1/stream?access_token=REDACTED&x=1&access%5Ftoken=REDACTED&"
                         "token=REDACTED\" 101 0 2.500ms"),
            std::string::npos) << text[0];
  // Off unless asked for.
  EXPECT_TRUE(captured({LogLevel::kInfo, LogFormat::kText, false}, [&] { log_access(entry); }).empty());
}

TEST(Log, ARequestLineCannotForgeALogLine) {
  auto text = captured({LogLevel::kInfo, LogFormat::kText, true}, [] {
    log_access({"", "GET", "/x\n2026-01-01T00:00:00.000Z ERROR forged", 400, 10, 0.1, false});
  });
  ASSERT_EQ(text.size(), 1u);
  EXPECT_NE(text[0].find("\\n2026"), std::string::npos) << text[0];
  EXPECT_NE(text[0].find(" - \""), std::string::npos) << text[0];  // no address: "-"
  EXPECT_TRUE(text[0].ends_with(" incomplete")) << text[0];
}

TEST(Log, JsonLinesStayValidWhateverTheBytes) {
  auto lines = captured({LogLevel::kInfo, LogFormat::kJson, true}, [] {
    log_info("caf\xc3\xa9 \xff\xc3 \xed\xa0\x80 \xf0\x9f\x98\x80 \xf8\x88\x80");
    log_access({"", "GET", "/\x80\x01", 400, 0, 0, false});
  });
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(lines[0])["msg"], "caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xf0\x9f\x98\x80 "
            "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(nlohmann::json::parse(lines[1])["target"], "/\xef\xbf\xbd\x01");
}

TEST(Log, ParsesLevelsAndFormats) {
  EXPECT_EQ(*parse_log_level("debug"), LogLevel::kDebug);
  EXPECT_EQ(*parse_log_level("error"), LogLevel::kError);
  EXPECT_FALSE(parse_log_level("loud").ok());
  EXPECT_EQ(*parse_log_format("json"), LogFormat::kJson);
  EXPECT_FALSE(parse_log_format("xml").ok());
  EXPECT_EQ(redact_target("/a?b=1"), "/a?b=1");
  EXPECT_EQ(redact_target("/a"), "/a");
  EXPECT_EQ(redact_target("/a?mytoken=1"), "/a?mytoken=1");
  EXPECT_EQ(redact_target("/a?access+token=1&access_token"), "/a?access+token=1&access_token");  // other name; no value
}

}  // namespace
}  // namespace perfscope::server
