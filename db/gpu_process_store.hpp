// GPU processes on disk: one row per (GPU UUID, process key) holding the tracker's sums
// (schema step 7). write_gpu_processes() merges records into their rows inside the caller's
// transaction (the writer's), so the parts of one process written before and after a restart
// add up; EventReader::gpu_processes() reads the rows a window overlaps.
//
// Thread-safety: as the Connection given (one thread at a time).
#pragma once

#include <vector>

#include "db/sqlite.hpp"
#include "engine/process_tracker.hpp"

namespace perfscope::db {

Status write_gpu_processes(Connection& conn, const std::vector<GpuProcessRecord>& records);

// The stored records whose lifetime overlaps [from_ns, to_ns], newest last seen first.
// `key` non-empty: only that process (one record per GPU it ran on).
Result<std::vector<GpuProcessRecord>> read_gpu_processes(Connection& conn, TimestampNs from_ns, TimestampNs to_ns,
                                                         std::size_t limit, const std::string& key = {});

}  // namespace perfscope::db
