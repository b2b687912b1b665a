#include "engine/base/status.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace perfscope {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return Status::invalid_argument("must be positive", "v");
  return v;
}

Status check_positive(int v) { return v > 0 ? Status() : Status::not_found("none", "v"); }

// Sums two parsed values, returning at the first failure; `steps` records how far it got.
Result<int> sum_two(int a, int b, std::vector<std::string>& steps) {
  PERFSCOPE_ASSIGN_OR_RETURN(int first, parse_positive(a));
  steps.push_back("first");
  int second = 0;
  PERFSCOPE_ASSIGN_OR_RETURN(second, parse_positive(b));  // into an existing variable
  steps.push_back("second");
  PERFSCOPE_RETURN_IF_ERROR(check_positive(first + second - 100));
  steps.push_back("checked");
  return first + second;
}

TEST(StatusMacros, AssignOrReturnGivesTheValueOrReturnsTheFirstFailure) {
  std::vector<std::string> steps;
  Result<int> bad_first = sum_two(-1, 5, steps);
  ASSERT_FALSE(bad_first.ok());
  EXPECT_EQ(bad_first.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_first.status().field(), "v");
  EXPECT_TRUE(steps.empty());

  steps.clear();
  EXPECT_FALSE(sum_two(3, 0, steps).ok());
  EXPECT_EQ(steps, std::vector<std::string>{"first"});

  steps.clear();
  Result<int> below = sum_two(3, 4, steps);
  ASSERT_FALSE(below.ok());
  EXPECT_EQ(below.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(steps, (std::vector<std::string>{"first", "second"}));

  steps.clear();
  Result<int> fine = sum_two(60, 70, steps);
  ASSERT_TRUE(fine.ok());
  EXPECT_EQ(*fine, 130);
  EXPECT_EQ(steps, (std::vector<std::string>{"first", "second", "checked"}));
}

}  // namespace
}  // namespace perfscope
