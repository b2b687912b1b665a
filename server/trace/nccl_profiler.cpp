// NCCL's profiler plugin, in libperfscope_cupti.so: `perfscope run` points NCCL_PROFILER_PLUGIN
// at the library the CUDA driver loaded from CUDA_INJECTION64_PATH, so NCCL finds this
// `ncclProfiler_v4` in the copy already loaded and both share one sink.
//
// It asks NCCL for collective events only (no proxy, step or kernel-channel events: those cost
// NCCL's proxy thread work per step, and CUPTI already times the kernels). NCCL describes each
// collective on the thread that launched its kernel, right after the launch; the description
// (communicator, sequence number, operation, element count and type, algorithm, protocol,
// channels) goes to the sink behind that launch call with the calling thread and the time, and
// the converter ties it to the call and so to the kernel (trace_records.hpp).
//
// Where the process is not traced (the plugin loaded without the injection library) it asks for
// no events at all; between two windows of a duty cycle it drops them without a CUPTI call.
//
// Not every collective is described on its launching thread: where NCCL enqueues its work
// through a host callback (a CUDA graph's capture, CUDA_LAUNCH_BLOCKING, or an eager collective
// while a graph holding NCCL work is alive and busy) the description comes on CUDA's callback
// thread, ties to no launch and is counted as unmatched; the kernel then goes out undescribed. Thread-safety: NCCL calls from its own threads; nothing here is shared but
// the sink's queue (injection.cpp) and one immutable context per communicator.
#include <new>

#include "server/trace/injection.hpp"
#include "server/trace/nccl_profiler_api.hpp"

namespace perfscope::trace {
namespace {

struct Communicator {
  std::uint64_t hash;
  std::int32_t ranks, rank, nodes;
};

// NCCL keeps one activation mask for the process, written by each communicator's init: the last
// one counts for all. A traced process asks for collectives from every communicator, so one whose
// context could not be made does not switch the others off (its events, with no context, are ignored).
nccl::Result init(void** context, int* activation_mask, const char* /*comm_name*/, std::uint64_t comm_hash, int nodes,
                  int ranks, int rank, nccl::DebugLogger /*log*/) {
  *context = nullptr;
  *activation_mask = 0;
  if (!tracing_started()) return nccl::kSuccess;
  *activation_mask = nccl::kProfileColl;
  auto* comm = new (std::nothrow) Communicator{comm_hash, ranks, rank, nodes};
  if (!comm) return nccl::kSuccess;  // untraced collectives rather than a failed communicator
  *context = comm;
  queue_with_launches(CommunicatorRecord{comm_hash, ranks, rank});
  return nccl::kSuccess;
}

const char* text(const char* s) { return s ? s : ""; }

nccl::Result start_event(void* context, void** handle, nccl::EventDescr* descr) {
  *handle = nullptr;  // nothing to stop: NCCL skips stopEvent for a null handle
  if (!context || !descr || descr->type != nccl::kProfileColl) return nccl::kSuccess;
  const auto ts = attached_timestamp();
  if (!ts) return nccl::kSuccess;  // between two windows of a duty cycle: nothing is traced
  const auto* comm = static_cast<const Communicator*>(context);
  CollectiveRecord c;
  c.comm_hash = comm->hash;
  c.comm_ranks = comm->ranks;
  c.comm_rank = comm->rank;
  c.seq = descr->coll.seq_number;
  c.func = text(descr->coll.func);
  c.datatype = text(descr->coll.datatype);
  c.count = descr->coll.count;
  c.algorithm = text(descr->coll.algorithm);
  c.protocol = text(descr->coll.protocol);
  c.channels = descr->coll.channels;
  c.nodes = comm->nodes;
  c.thread_id = trace_thread_id();
  c.ts_ns = *ts;
  queue_with_launches(std::move(c));
  return nccl::kSuccess;
}

nccl::Result stop_event(void*) { return nccl::kSuccess; }
nccl::Result record_event_state(void*, int, void*) { return nccl::kSuccess; }

nccl::Result finalize(void* context) {
  delete static_cast<Communicator*>(context);
  return nccl::kSuccess;
}

}  // namespace
}  // namespace perfscope::trace

extern "C" {
__attribute__((visibility("default"))) perfscope::trace::nccl::ProfilerV4 ncclProfiler_v4 = {
    "perfscope",
    perfscope::trace::init,
    perfscope::trace::start_event,
    perfscope::trace::stop_event,
    perfscope::trace::record_event_state,
    perfscope::trace::finalize,
};
}
