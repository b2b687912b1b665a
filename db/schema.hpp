// The database file as callers see it: the schema version this build writes, the check that a
// file may be opened at all, and the SQLite library underneath (for /api/v1/info). The
// migrations themselves are db/internal/migrations.hpp's.
#pragma once

#include <string>

#include "engine/base/status.hpp"

namespace perfscope::db {

// The schema version this build writes.
int schema_version();
// Before anything writes to `path`: fine when it does not exist, is empty, or is a perfscope
// database this build can read or migrate; otherwise an error naming the file — a corrupt file,
// another program's SQLite database, or one from a newer perfscope — so it is never changed.
Status check_database_file(const std::string& path);
// The version of the SQLite library in use ("3.40.1").
std::string sqlite_version();

}  // namespace perfscope::db
