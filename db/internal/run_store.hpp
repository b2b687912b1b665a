// Runs on disk: one row per run name (schema step 6). write_run() merges a run's report into
// its row inside the caller's transaction (the writer's); EventReader::runs() and run() read
// them back (run_store.cpp). Lists (command, pids, gpus) are stored length-prefixed
// ("6:python6:gen.py"), exact for any text, since db/ knows nothing of JSON.
//
// Thread-safety: as the Connection given (one thread at a time).
#pragma once

#include <optional>
#include <string>

#include "db/internal/sqlite.hpp"
#include "engine/events/events.hpp"

namespace perfscope::db {

// Merges `report` into the stored run of that name, or stores it: the earliest start, the
// latest end, pids and gpus joined; command, host, kinds, exit status and counts from the
// report where it gives them.
Status write_run(Connection& conn, const RunEvent& report);
// The stored run of that name, if any.
Result<std::optional<RunEvent>> read_run(Connection& conn, const std::string& name);

// Merges `report` into `stored` by the rules of write_run.
void merge_run(RunEvent& stored, const RunEvent& report);

}  // namespace perfscope::db
