// What the injection library (injection.cpp) offers the NCCL profiler plugin built into the same
// shared object (nccl_profiler.cpp): NCCL loads the plugin by the library's path, and gets the
// copy the CUDA driver already loaded, so both share one sink.
//
// Thread-safe; every function may be called from any thread once the driver has loaded the library.
#pragma once

#include <cstdint>
#include <optional>

#include "server/trace/trace_records.hpp"

namespace perfscope::trace {

// InitializeInjection has opened the sink: the process is traced.
bool tracing_started();
// CUPTI's clock now, the one launch calls are timed on; none while CUPTI is detached (between
// two windows of a duty cycle: a CUPTI call would attach it again, and nothing is traced then).
std::optional<std::uint64_t> attached_timestamp();
// The calling thread's id, as launch calls record it.
std::uint32_t trace_thread_id();
// Queued behind the launch calls recorded so far, and handed to the sink with them.
void queue_with_launches(TraceRecord record);

}  // namespace perfscope::trace
