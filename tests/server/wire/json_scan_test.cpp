#include "server/wire/json_scan.hpp"

#include <gtest/gtest.h>

#include "server/wire/event_codec.hpp"

namespace perfscope::server {
namespace {

constexpr TimestampNs kNow = 1'700'000'000'000'000'000;

// Walks any JSON text fully; returns the error message or "" when it is valid.
std::string check(std::string_view text) {
  JsonCursor c(text);
  JsonValue v;
  if (!c.value(v)) return c.error()->message;
  if (!c.at_end()) return "trailing";
  return "";
}

TEST(JsonCursor, AcceptsWhatRfc8259Allows) {
  for (const char* ok : {"0", "-0", "12.5e-3", "1E+9", "-1.0", "\"\"", "true", "false", "null", "[]", "{}",
                         " [1, [2, {\"a\": [null]}]] ", R"({"a":"\u00e9\ud83d\ude00\n\/"})", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""}) {
    EXPECT_EQ(check(ok), "") << ok;
  }
}

TEST(JsonCursor, RejectsWhatItForbids) {
  for (const char* bad : {"01", "1.", ".5", "1e", "+1", "-", "tru", "nul", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}",
                          "[1 2]", "\"abc", "\"\\x\"", "\"\\u12g4\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"",
                          "\"tab\there\"", "[", "{", "'x'", "NaN", "Infinity"}) {
    EXPECT_NE(check(bad), "") << bad;
  }
  EXPECT_EQ(check("1 2"), "trailing");
}

TEST(JsonCursor, RejectsInvalidUtf8) {
  for (std::string bad : {"\xff", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc3", "\xe2\x82",
                          "\x80"}) {
    EXPECT_EQ(check("\"" + bad + "\""), "is not valid UTF-8") << bad.size();
  }
}

TEST(JsonCursor, BoundsNesting) {
  std::string deep(JsonCursor::kMaxDepth, '[');
  deep += std::string(JsonCursor::kMaxDepth, ']');
  EXPECT_EQ(check(deep), "");
  std::string deeper(JsonCursor::kMaxDepth + 1, '[');
  deeper += std::string(JsonCursor::kMaxDepth + 1, ']');
  EXPECT_EQ(check(deeper), "nested deeper than 64 levels");
  // A million open brackets end in an error, not a stack overflow.
  EXPECT_NE(check(std::string(1'000'000, '[')), "");
}

TEST(JsonCursor, UnescapesStrings) {
  EXPECT_EQ(json_unescape(R"(a\"b\\c\/d\b\f\n\r\t)"), "a\"b\\c/d\b\f\n\r\t");
  EXPECT_EQ(json_unescape(R"(\u0041\u00e9\u20ac\ud83d\ude00)"), "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
}

TEST(JsonCursor, WalksObjectsAndArrays) {
  JsonCursor c(R"( {"a": [1, 2.5, "x"], "b\u0021": {"c": null}} )");
  ASSERT_TRUE(c.open('{'));
  std::vector<std::string> keys;
  for (bool first = true; c.next('}', first);) {
    std::string_view raw;
    bool escaped = false;
    ASSERT_TRUE(c.key(raw, escaped));
    keys.push_back(escaped ? json_unescape(raw) : std::string(raw));
    JsonValue v;
    ASSERT_TRUE(c.value(v));
    if (keys.size() == 1) {
      EXPECT_EQ(v.kind, JsonKind::kArray);
      EXPECT_EQ(v.text, R"([1, 2.5, "x"])");
    } else {
      EXPECT_EQ(v.kind, JsonKind::kObject);
    }
  }
  EXPECT_FALSE(c.failed());
  EXPECT_TRUE(c.at_end());
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "b!"}));
}

// Through the event decoder: a bad string names its field; escapes and duplicate keys behave
// as a JSON parser's would.
TEST(EventDecoding, InvalidUtf8NamesTheField) {
  DecodeResult r = decode_ndjson_events("{\"type\":\"kernel\",\"name\":\"ok\",\"duration_ms\":1,\"stream\":\"\xc3\x28\"}\n", kNow);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->field, "stream");
  EXPECT_EQ(r.error->index, std::optional<std::size_t>(0));
  EXPECT_EQ(r.error->message, "stream: is not valid UTF-8");

  r = decode_json_events("{\"events\":[{\"type\":\"kernel\",\"name\":\"k\",\"duration_ms\":1},"
                         "{\"type\":\"kernel\",\"name\":\"k\",\"duration_ms\":1,\"tags\":{\"t\":\"\xed\xa0\x80\"}}]}",
                         kNow);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->field, "tags");
  EXPECT_EQ(r.error->index, std::optional<std::size_t>(1));
  EXPECT_TRUE(r.events.empty());
}

TEST(EventDecoding, EscapedNamesAndValuesAndTheLastDuplicateWin) {
  DecodeResult r = decode_ndjson_events(
      R"({"type":"kernel","n\u0061me":"first","name":"gemm\u003cfloat\u003e","duration_ms":2,"tags":{"r\u0075n":"\u00e9"}})"
      "\n",
      1'000'000'000);
  ASSERT_FALSE(r.error) << r.error->message;
  const auto& k = std::get<KernelEvent>(r.events.at(0));
  EXPECT_EQ(k.name, "gemm<float>");
  EXPECT_EQ(k.end_ns - k.start_ns, 2'000'000);
  ASSERT_EQ(k.tags.size(), 1u);
  EXPECT_EQ(k.tags[0].first, "run");
  EXPECT_EQ(k.tags[0].second, "\xc3\xa9");
}

TEST(EventDecoding, NumbersAreCheckedForTheirField) {
  auto field_of = [](const std::string& extra) {
    DecodeResult r = decode_ndjson_events(R"({"type":"kernel","name":"k")" + extra + "}\n", kNow);
    return r.error ? r.error->field + " | " + r.error->message : std::string("ok");
  };
  EXPECT_EQ(field_of(R"(,"start_ns":1.5,"end_ns":2)"), "start_ns | start_ns: must be an integer");
  EXPECT_EQ(field_of(R"(,"start_ns":1e3,"end_ns":2000)"), "start_ns | start_ns: must be an integer");
  EXPECT_EQ(field_of(R"(,"start_ns":99999999999999999999,"end_ns":2)"), "start_ns | start_ns: is too large");
  EXPECT_EQ(field_of(R"(,"duration_ms":1e400)"), "duration_ms | duration_ms: must be a finite number");
  EXPECT_EQ(field_of(R"(,"duration_ms":"1")"), "duration_ms | duration_ms: must be a number");
  EXPECT_EQ(field_of(R"(,"duration_ms":1e-400)"), "ok");  // underflows to zero
  EXPECT_EQ(field_of(R"(,"duration_ms":1,"grid":[1,2,3,4])"), "grid | grid: must be an array of 1 to 3 positive integers");
  EXPECT_EQ(field_of(R"(,"duration_ms":1,"grid":[])"), "grid | grid: must be an array of 1 to 3 positive integers");
  EXPECT_EQ(field_of(R"(,"duration_ms":1,"grid":[0])"), "grid | grid: must be an array of 1 to 3 positive integers");
  EXPECT_EQ(field_of(R"(,"duration_ms":1,"grid":[2.0])"), "grid | grid: must be an array of 1 to 3 positive integers");
  EXPECT_EQ(field_of(R"(,"duration_ms":1,"unknown":{"deep":[[[{}]]]},"grid":[4])"), "ok");
}

TEST(EventDecoding, SyntaxErrorsSayWhere) {
  DecodeResult r = decode_ndjson_events("{\"type\":\"kernel\",\"name\":\"a\",\"duration_ms\":1}\n\n{\"type\" \"x\"}\n", kNow);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->index, std::optional<std::size_t>(1));
  EXPECT_EQ(r.error->message, "line 3 is not valid JSON: expected ':' after a member name at byte 8");
  r = decode_json_events(R"({"events":[]} x)", 1);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->message, "the body is not valid JSON: trailing characters at byte 14");
}

}  // namespace
}  // namespace perfscope::server
