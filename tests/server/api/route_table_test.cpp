#include "server/api/route_table.hpp"

#include <gtest/gtest.h>

namespace perfscope::server {
namespace {

using Table = RouteTable<int>;

Table table() {
  return Table{
      {"GET", "/api/v1/runs", 1},
      {"GET", "/api/v1/runs/compare", 2},
      {"GET", "/api/v1/runs/{name}", 3},
      {"GET", "/api/v1/kernels/{name}/records", 4},
      {"GET", "/api/v1/abtests", 5},
      {"POST", "/api/v1/abtests", 6},
      {"POST", "/api/v1/events", 7},
  };
}

// The handler a request finds, or -1 when it finds none.
int handler_of(const Table& t, const char* method, const char* path) {
  auto m = t.find(method, path);
  return m.handler ? *m.handler : -1;
}

TEST(RouteTable, ExactPathsAndNamesFindTheirHandler) {
  const Table t = table();
  EXPECT_EQ(handler_of(t, "GET", "/api/v1/runs"), 1);
  auto named = t.find("GET", "/api/v1/runs/nightly");
  ASSERT_NE(named.handler, nullptr);
  EXPECT_EQ(*named.handler, 3);
  EXPECT_EQ(named.name, "nightly");
  // Listed before the named pattern, "compare" is the comparison, not a run of that name.
  auto compare = t.find("GET", "/api/v1/runs/compare");
  ASSERT_NE(compare.handler, nullptr);
  EXPECT_EQ(*compare.handler, 2);
  EXPECT_EQ(compare.name, "");
}

TEST(RouteTable, ANameMayHoldSlashesButNotBeEmpty) {
  const Table t = table();
  auto templated = t.find("GET", "/api/v1/kernels/void gemm<float, 128/2>(float*)/records");
  ASSERT_NE(templated.handler, nullptr);
  EXPECT_EQ(templated.name, "void gemm<float, 128/2>(float*)");
  EXPECT_FALSE(t.find("GET", "/api/v1/kernels//records").path_known);
  EXPECT_FALSE(t.find("GET", "/api/v1/kernels/records").path_known);
  EXPECT_FALSE(t.find("GET", "/api/v1/runs/").path_known);
}

TEST(RouteTable, GetAnswersHeadAndAWrongMethodListsWhatThePathTakes) {
  const Table t = table();
  EXPECT_EQ(handler_of(t, "HEAD", "/api/v1/abtests"), 5);
  EXPECT_EQ(handler_of(t, "POST", "/api/v1/abtests"), 6);
  auto put = t.find("PUT", "/api/v1/abtests");
  EXPECT_EQ(put.handler, nullptr);
  EXPECT_TRUE(put.path_known);
  EXPECT_EQ(put.allow, "GET, HEAD, POST");
  auto get_events = t.find("GET", "/api/v1/events");
  EXPECT_EQ(get_events.handler, nullptr);
  EXPECT_EQ(get_events.allow, "POST");
  auto post_run = t.find("POST", "/api/v1/runs/nightly");
  EXPECT_EQ(post_run.handler, nullptr);
  EXPECT_EQ(post_run.name, "");
  EXPECT_EQ(post_run.allow, "GET, HEAD");
}

TEST(RouteTable, UnknownPathsAreUnknown) {
  const Table t = table();
  auto none = t.find("GET", "/api/v1/nothing");
  EXPECT_EQ(none.handler, nullptr);
  EXPECT_FALSE(none.path_known);
  EXPECT_TRUE(none.allow.empty());
  EXPECT_FALSE(t.find("GET", "/api/v1/run").path_known);
  EXPECT_NE(t.find("GET", "/api/v1/runs/x/y/records").handler, nullptr);  // a run named "x/y/records"
}

}  // namespace
}  // namespace perfscope::server
