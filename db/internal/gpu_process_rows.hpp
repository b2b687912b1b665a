// The gpu_processes rows on a connection (one thread at a time): the merge store_gpu_processes()
// (db/gpu_process_store.hpp) queues, inside the caller's transaction, and the read behind
// EventReader::gpu_processes().
#pragma once

#include <vector>

#include "db/gpu_process_store.hpp"
#include "db/internal/sqlite.hpp"

namespace perfscope::db {

Status write_gpu_processes(Connection& conn, const std::vector<GpuProcessRecord>& records);

// The stored records whose lifetime overlaps [from_ns, to_ns], newest last seen first.
// `key` non-empty: only that process (one record per GPU it ran on).
Result<std::vector<GpuProcessRecord>> read_gpu_processes(Connection& conn, TimestampNs from_ns, TimestampNs to_ns,
                                                         std::size_t limit, const std::string& key = {});

}  // namespace perfscope::db
