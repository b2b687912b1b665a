#include "server/wire/exposition_parse.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace perfscope::server {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(PERFSCOPE_FIXTURES) + "/scrape/" + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const ScrapedFamily* family(const Exposition& e, std::string_view name) {
  for (const auto& f : e.families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string label(const ScrapedSample& s, std::string_view name) {
  for (const auto& [k, v] : s.labels) {
    if (k == name) return v;
  }
  return "";
}

std::string error_of(std::string_view text, bool openmetrics = false, const ExpositionLimits& limits = {}) {
  auto r = parse_exposition(text, openmetrics, limits);
  return r.ok() ? "" : r.status().message();
}

TEST(Exposition, VllmHistogramsCountersAndGauges) {
  auto r = parse_exposition(fixture("vllm.prom"), false);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto* ttft = family(*r, "vllm:time_to_first_token_seconds");
  ASSERT_NE(ttft, nullptr);
  EXPECT_EQ(ttft->type, ExpositionType::kHistogram);
  EXPECT_EQ(ttft->help, "Histogram of time to first token in seconds.");
  std::size_t buckets = 0;
  double count = -1, sum = -1, inf = -1;
  for (const auto& s : ttft->samples) {
    EXPECT_EQ(label(s, "model_name"), "meta-llama/Llama-3.1-8B-Instruct");
    if (s.name == "vllm:time_to_first_token_seconds_bucket") {
      ++buckets;
      if (label(s, "le") == "+Inf") inf = s.value;
    }
    if (s.name == "vllm:time_to_first_token_seconds_count") count = s.value;
    if (s.name == "vllm:time_to_first_token_seconds_sum") sum = s.value;
  }
  EXPECT_EQ(buckets, 17u);
  EXPECT_EQ(count, 400.0);
  EXPECT_EQ(inf, 400.0);
  EXPECT_DOUBLE_EQ(sum, 17.84);

  const auto* generated = family(*r, "vllm:generation_tokens_total");
  ASSERT_NE(generated, nullptr);
  EXPECT_EQ(generated->type, ExpositionType::kCounter);
  EXPECT_EQ(generated->samples.at(0).value, 51200.0);
  const auto* success = family(*r, "vllm:request_success_total");
  ASSERT_NE(success, nullptr);
  ASSERT_EQ(success->samples.size(), 2u);
  // Labels sorted by name: finished_reason before model_name.
  EXPECT_EQ(success->samples[0].labels.at(0).first, "finished_reason");
  EXPECT_EQ(family(*r, "vllm:gpu_cache_usage_perc")->type, ExpositionType::kGauge);
  // The _created gauge prometheus_client writes beside a histogram is a family of its own.
  const auto* created = family(*r, "vllm:e2e_request_latency_seconds_created");
  ASSERT_NE(created, nullptr);
  EXPECT_EQ(created->type, ExpositionType::kGauge);
  EXPECT_EQ(r->sample_count, 61u);
}

TEST(Exposition, TritonCountersAndSummaries) {
  auto r = parse_exposition(fixture("triton.prom"), false);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto* summary = family(*r, "nv_inference_request_summary_us");
  ASSERT_NE(summary, nullptr);
  EXPECT_EQ(summary->type, ExpositionType::kSummary);
  ASSERT_EQ(summary->samples.size(), 5u);
  EXPECT_EQ(summary->samples[4].name, "nv_inference_request_summary_us");
  EXPECT_EQ(label(summary->samples[4], "quantile"), "0.99");
  EXPECT_EQ(summary->samples[4].value, 31200.0);
  const auto* failures = family(*r, "nv_inference_request_failure");
  ASSERT_NE(failures, nullptr);
  EXPECT_EQ(label(failures->samples[0], "reason"), "BACKEND");
  EXPECT_EQ(family(*r, "nv_gpu_memory_used_bytes")->samples.at(0).value, 21474836480.0);
  EXPECT_EQ(r->families.size(), 12u);
}

TEST(Exposition, TextFormatDetails) {
  const char* text =
      "# a free comment\n"
      "\n"
      "plain 1\n"
      "escaped{path=\"C:\\\\dir\",quote=\"say \\\"hi\\\"\",nl=\"a\\nb\",} 2 1700000000123\n"
      "specials{v=\"inf\"} +Inf\n"
      "specials{v=\"-inf\"} -Inf\n"
      "specials{v=\"nan\"} NaN\n"
      "spaced   {  a = \"1\" ,b=\"2\"  }   3.5e-3\r\n"
      "dropped{empty=\"\",kept=\"x\"} 4\n"
      "{\"service.requests\", code=\"200\"} 5\n"
      "last_without_newline 6";
  auto r = parse_exposition(text, false);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto* escaped = family(*r, "escaped");
  ASSERT_NE(escaped, nullptr);
  const auto& e = escaped->samples.at(0);
  EXPECT_EQ(label(e, "path"), "C:\\dir");
  EXPECT_EQ(label(e, "quote"), "say \"hi\"");
  EXPECT_EQ(label(e, "nl"), "a\nb");
  ASSERT_TRUE(e.ts_ns.has_value());
  EXPECT_EQ(*e.ts_ns, 1700000000123LL * 1'000'000);
  const auto& specials = family(*r, "specials")->samples;
  EXPECT_TRUE(std::isinf(specials[0].value) && specials[0].value > 0);
  EXPECT_TRUE(std::isinf(specials[1].value) && specials[1].value < 0);
  EXPECT_TRUE(std::isnan(specials[2].value));
  EXPECT_EQ(family(*r, "specials")->type, ExpositionType::kUntyped);
  const auto& spaced = family(*r, "spaced")->samples.at(0);
  EXPECT_EQ(spaced.labels, (Labels{{"a", "1"}, {"b", "2"}}));
  EXPECT_DOUBLE_EQ(spaced.value, 0.0035);
  EXPECT_EQ(family(*r, "dropped")->samples.at(0).labels, (Labels{{"kept", "x"}}));
  EXPECT_EQ(family(*r, "service.requests")->samples.at(0).value, 5.0);
  EXPECT_EQ(family(*r, "last_without_newline")->samples.at(0).value, 6.0);
}

TEST(Exposition, OpenMetricsCountersExemplarsTimestampsAndEof) {
  const char* text =
      "# TYPE requests counter\n"
      "# UNIT requests requests\n"
      "# HELP requests Requests served.\n"
      "requests_total{code=\"200\"} 17 1700000000.5 # {trace_id=\"abc\"} 1 1700000000.4\n"
      "requests_created{code=\"200\"} 1699990000\n"
      "# TYPE latency_seconds histogram\n"
      "latency_seconds_bucket{le=\"0.1\"} 3\n"
      "latency_seconds_bucket{le=\"+Inf\"} 5 # {trace_id=\"def\"} 0.7\n"
      "latency_seconds_count 5\n"
      "latency_seconds_sum 1.25\n"
      "# EOF\n";
  auto r = parse_exposition(text, true);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->families.size(), 2u);
  const auto& requests = r->families[0];
  EXPECT_EQ(requests.type, ExpositionType::kCounter);
  EXPECT_EQ(requests.unit, "requests");
  ASSERT_EQ(requests.samples.size(), 2u);
  EXPECT_EQ(requests.samples[0].name, "requests_total");
  EXPECT_EQ(requests.samples[0].ts_ns, 1700000000500000000LL);
  EXPECT_EQ(requests.samples[1].name, "requests_created");
  EXPECT_EQ(r->families[1].samples.size(), 4u);

  EXPECT_NE(error_of("a 1\n", true).find("missing # EOF"), std::string::npos);
  EXPECT_NE(error_of("# EOF\na 1\n", true).find("line 2: content after # EOF"), std::string::npos);
  EXPECT_NE(error_of("a 1\n\n# EOF\n", true).find("line 2"), std::string::npos);
  // In the text format "# EOF" is just a comment, and exemplars are not allowed.
  EXPECT_EQ(error_of("# EOF\na 1\n"), "");
  EXPECT_NE(error_of("a 1 # {x=\"y\"} 1\n").find("unexpected text"), std::string::npos);
}

TEST(Exposition, MalformedLinesFailTheWholeScrapeNamingTheLine) {
  const std::pair<const char*, const char*> cases[] = {
      {"ok 1\nbad value\n", "line 2: invalid value"},
      {"x{a=\"1\" 2\n", "line 1: expected ',' or '}'"},
      {"x{a=\"unterminated} 2\n", "unterminated quoted label value"},
      {"x{a=\"1\",a=\"2\"} 2\n", "duplicate label a"},
      {"x{a=\"\\q\"} 2\n", "invalid escape \\q"},
      {"x{a:b=\"1\"} 2\n", "contains ':'"},
      {"x{9a=\"1\"} 2\n", "expected label name"},
      {"9x 1\n", "expected metric name"},
      {"x1\n", "expected a value after x1"},
      {"x{a=\"1\"}\n", "expected a value after x"},
      {"x 1 notatime\n", "invalid timestamp"},
      {"x 1 2 3\n", "unexpected text after the value"},
      {"# TYPE x histogram\nx_bucket 1\n", "without its le label"},
      {"# TYPE x histogram\nx_bucket{le=\"big\"} 1\n", "le=\"big\" is not a number"},
      {"# TYPE x summary\nx 1\n", "without its quantile label"},
      {"# TYPE x wobbly\n", "unknown metric type 'wobbly'"},
      {"# TYPE x gauge\n# TYPE x gauge\n", "line 2: second TYPE line"},
      {"x 1\n# TYPE x gauge\n", "TYPE line for x after its samples"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string error = error_of(text);
    EXPECT_NE(error.find(expected), std::string::npos) << text << " → " << error;
  }
}

TEST(Exposition, LimitsBoundWhatOneScrapeMayHold) {
  ExpositionLimits limits;
  limits.max_samples = 2;
  limits.max_labels_per_sample = 2;
  limits.max_name_bytes = 8;
  EXPECT_NE(error_of("a 1\nb 2\nc 3\n", false, limits).find("line 3: more than 2 samples"), std::string::npos);
  EXPECT_NE(error_of("a{x=\"1\",y=\"2\",z=\"3\"} 1\n", false, limits).find("more than 2 labels"), std::string::npos);
  EXPECT_NE(error_of("a_very_long_name 1\n", false, limits).find("longer than 8 bytes"), std::string::npos);
  EXPECT_NE(error_of("a{x=\"123456789\"} 1\n", false, limits).find("label value longer"), std::string::npos);
}

TEST(Exposition, ContentTypeSaysWhichFormat) {
  EXPECT_TRUE(exposition_is_openmetrics("application/openmetrics-text; version=1.0.0; charset=utf-8"));
  EXPECT_FALSE(exposition_is_openmetrics("text/plain; version=0.0.4; charset=utf-8"));
  EXPECT_FALSE(exposition_is_openmetrics(""));
}

}  // namespace
}  // namespace perfscope::server
