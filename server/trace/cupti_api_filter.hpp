// Recording only the API calls that start GPU work (gpu_work_calls.hpp), with CUPTI's
// per-function switches. Shared by the injection library and the tracing-cost floor
// (bench/gpu/cupti_floor.cpp), so the floor measures the same choice. Needs cupti.h.
//
// CUPTI's semantics (its documentation and observed behaviour): once a kind of API records is
// enabled every function is recorded but the ones switched off, and enabling the kind again
// forgets those switches — so they are applied after every cuptiActivityEnable of the kind.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <vector>

#include "server/trace/gpu_work_calls.hpp"

namespace perfscope::trace {

// The functions of a domain (runtime or driver API) that start no GPU work, found by name
// among the callback ids this CUPTI knows.
inline std::vector<CUpti_CallbackId> calls_without_gpu_work(CUpti_CallbackDomain domain) {
  const std::uint32_t size =
      domain == CUPTI_CB_DOMAIN_RUNTIME_API ? static_cast<std::uint32_t>(CUPTI_RUNTIME_TRACE_CBID_SIZE)
                                            : static_cast<std::uint32_t>(CUPTI_DRIVER_TRACE_CBID_SIZE);
  std::vector<CUpti_CallbackId> ids;
  for (std::uint32_t id = 1; id < size; ++id) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(domain, id, &name) != CUPTI_SUCCESS || name == nullptr) continue;
    if (!starts_gpu_work(name)) ids.push_back(id);
  }
  return ids;
}

// Switches recording off for `ids` of an enabled kind (CUPTI_ACTIVITY_KIND_RUNTIME or _DRIVER).
// Returns how many were switched off: 0 where this CUPTI has no per-function switches, and
// then every call is recorded as before.
inline std::size_t record_only_gpu_work(CUpti_ActivityKind kind, const std::vector<CUpti_CallbackId>& ids) {
  std::size_t off = 0;
#if CUPTI_API_VERSION >= 24
  for (CUpti_CallbackId id : ids) {
    const CUptiResult r = kind == CUPTI_ACTIVITY_KIND_RUNTIME ? cuptiActivityEnableRuntimeApi(id, 0)
                                                               : cuptiActivityEnableDriverApi(id, 0);
    if (r == CUPTI_SUCCESS) {
      ++off;
    } else if (r == CUPTI_ERROR_NOT_SUPPORTED) {
      break;
    }
  }
#else
  (void)kind;
  (void)ids;
#endif
  return off;
}

}  // namespace perfscope::trace
