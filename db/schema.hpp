// The database schema and its migrations. Versions are numbered by SQLite's user_version;
// migrate() applies every step above the file's version in one transaction each, so a file
// is never left half-migrated. Call from one thread, on the writer's connection, at open.
#pragma once

#include "db/sqlite.hpp"

namespace perfscope::db {

// The schema version this build writes.
int schema_version();
Status migrate(Connection& conn);

}  // namespace perfscope::db
