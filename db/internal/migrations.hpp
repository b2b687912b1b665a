// The database schema and its migrations. Versions are numbered by SQLite's user_version;
// migrate() applies every step above the file's version in one transaction each, so a file
// is never left half-migrated. Call from one thread, on the writer's connection, at open.
#pragma once

#include "db/internal/sqlite.hpp"
#include "db/schema.hpp"
#include "engine/events/events.hpp"

namespace perfscope::db {

// `up_to`: stop after that step (tests that build a file as an older perfscope left it); -1: all.
Status migrate(Connection& conn, int up_to = -1);

// Columns of memory_events that read_memory_event() expects, in order, for a SELECT list.
inline constexpr const char* kMemoryEventColumns = "op, address, size_bytes, kind, tag, device, ts_ns, tags";
// One memory_events row as an event (a free's size is 0 here; the tracker fills it in).
MemoryEvent read_memory_event(const Statement& row);

}  // namespace perfscope::db
