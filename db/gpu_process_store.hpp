// GPU processes on disk: one row per (GPU UUID, process key) holding the tracker's sums
// (schema step 7). store_gpu_processes() merges records into their rows on the writer's
// thread, so the parts of one process written before and after a restart add up;
// EventReader::gpu_processes() reads the rows a window overlaps.
//
// Thread-safety: store_gpu_processes() from any thread; `done` runs on the writer's thread.
#pragma once

#include <vector>

#include "db/writer.hpp"
#include "engine/collectors/process_tracker.hpp"

namespace perfscope::db {

// Queues the records' merge as one transaction of the writer; `done` gets its status.
void store_gpu_processes(Writer& writer, std::vector<GpuProcessRecord> records, Writer::Completion done);

}  // namespace perfscope::db
