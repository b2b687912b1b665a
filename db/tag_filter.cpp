#include "db/internal/tag_filter.hpp"

namespace perfscope::db {

TagFilter tag_filter(const EventScope& scope, std::string_view column, int first) {
  TagFilter f;
  for (const auto& tag : scope.wanted_tags()) {
    // Stored tags are `k="v",…` with quotes inside values escaped: the delimited needle matches
    // exactly that tag, never a part of another's value.
    f.needles.push_back("," + format_labels({tag}) + ",");
    f.sql += " AND instr(',' || " + std::string(column) + " || ',', ?" + std::to_string(first++) + ") > 0";
  }
  return f;
}

void TagFilter::bind(Statement& stmt, int first) const {
  for (const std::string& needle : needles) stmt.bind(first++, needle);
}

}  // namespace perfscope::db
