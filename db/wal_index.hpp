// Whether a database's write-ahead-log index (its "-shm" file) can be written by this process.
//
// SQLite maps the index into memory and stores to it on every transaction, readers included.
// When the file can no longer be written (the immutable attribute, a read-only bind mount,
// another owner), a store through the mapping faults the process with SIGBUS, and a new
// connection maps it read-only and faults reading past its end. No error code comes back, so
// the check is made before each use (db/sqlite.cpp): on opening a connection, on every exec
// (BEGIN, COMMIT, pragmas) and on every statement that starts outside a transaction. A failing index is then answered like a database that cannot be
// written (kUnavailable, 503). The file can still change between the check and the stores
// that follow it; that window (microseconds) is not closed.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <string>

#include "engine/base/status.hpp"

namespace perfscope::db {

// OK when `database_path` + "-shm" is absent (SQLite creates it) or readable and writable.
Status check_wal_index(const std::string& database_path);

// The database, its WAL and its index (each where present) writable by this process; the
// first that is not, named, as kUnavailable. What a failed write is mapped from (sqlite.cpp).
Status check_database_files(const std::string& database_path);

// Whether a commit could be written now: the database, its WAL and index (where present) and
// their directory writable, and room left on the disk. kUnavailable naming the cause.
// For readiness checks (GET /readyz): a few system calls, no SQLite.
Status check_database_writable(const std::string& database_path);

}  // namespace perfscope::db
