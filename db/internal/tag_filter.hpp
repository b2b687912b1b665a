// TagFilter: the SQL that keeps rows whose tags column holds every tag a scope wants, and the
// values it binds. Internal to db/: the readers build it, callers name tags in an EventScope.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "db/event_scope.hpp"
#include "db/internal/sqlite.hpp"

namespace perfscope::db {

// Bound text is not copied: keep this alive while the statement runs.
struct TagFilter {
  std::string sql;                   // " AND instr(',' || COLUMN || ',', ?N) > 0" per tag; empty: none
  std::vector<std::string> needles;  // `,k="v",` as stored tags spell each tag
  void bind(Statement& stmt, int first) const;
};

// The filter of `scope`'s wanted tags over a tags column (`s.tags`, `tags`), its values bound
// from parameter `first` on.
TagFilter tag_filter(const EventScope& scope, std::string_view column, int first);

}  // namespace perfscope::db
