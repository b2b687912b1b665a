// NCCL's profiler-plugin interface, version 4, as the injection library uses it: declared here
// (NCCL ships these declarations with its plugin examples only, not in nccl.h), so the library
// builds without NCCL. Version 4 is the one NCCL 2.27 introduced; 2.28 (what PyTorch 2.10–2.11
// ship) and newer still load a plugin that exports only `ncclProfiler_v4`, after asking for
// newer versions. NCCL before 2.27 loads no v4 plugin: its collectives keep the kernel-name
// fallback (engine/analysis/collectives.hpp).
//
// Only the leading fields the library reads are relied on; the layout below is NCCL's own
// (ncclProfilerEventDescr_v4_t), field for field up to the collective's description.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace perfscope::trace::nccl {

using Result = int;  // ncclResult_t
inline constexpr Result kSuccess = 0;

// Event types (the activation mask's bits).
inline constexpr int kProfileGroup = 1 << 0;
inline constexpr int kProfileColl = 1 << 1;
inline constexpr int kProfileP2p = 1 << 2;

using DebugLogger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

struct EventDescr {  // ncclProfilerEventDescr_v4_t
  std::uint8_t type;
  void* parent;
  int rank;
  union {
    struct {
      std::uint64_t seq_number;
      const char* func;  // "AllReduce", "AllGather", …
      const void* send_buffer;
      void* recv_buffer;
      std::size_t count;  // elements; per rank for AllGather (send) and ReduceScatter (receive)
      int root;
      const char* datatype;  // "ncclFloat32", "ncclBfloat16", …
      std::uint8_t channels;
      std::uint8_t warps;
      const char* algorithm;  // "RING", "TREE", "NVLS", …
      const char* protocol;   // "LL", "LL128", "SIMPLE"
    } coll;
    struct {
      const char* func;
      void* buffer;
      const char* datatype;
      std::size_t count;
      int peer;
      std::uint8_t channels;
    } p2p;
  };
};

struct ProfilerV4 {  // ncclProfiler_v4_t
  const char* name;
  Result (*init)(void** context, int* activation_mask, const char* comm_name, std::uint64_t comm_hash, int nodes,
                 int ranks, int rank, DebugLogger log);
  Result (*start_event)(void* context, void** handle, EventDescr* descr);
  Result (*stop_event)(void* handle);
  Result (*record_event_state)(void* handle, int state, void* state_args);
  Result (*finalize)(void* context);
};

}  // namespace perfscope::trace::nccl
