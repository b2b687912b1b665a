// Recording only the API calls that start GPU work (gpu_work_calls.hpp), with CUPTI's
// per-function switches, and finding functions by name. Shared by the injection library and
// the tracing-cost floor (bench/gpu/cupti_floor.cpp), so the floor measures the same choice.
//
// CUPTI's semantics (its documentation and observed behaviour): once a kind of API records is
// enabled every function is recorded but the ones switched off, and enabling the kind again
// forgets those switches — so they are applied after every cuptiActivityEnable of the kind.
// Callback ids are looked up by name, so no release's numbering is built in.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "server/trace/cupti_api.hpp"
#include "server/trace/gpu_work_calls.hpp"

namespace perfscope::trace {

// Past the largest callback id of any release so far (CUDA 13.0: 523 runtime, 807 driver).
inline constexpr std::uint32_t kMaxCallbackId = 4096;

// Every function of a domain (runtime or driver API) this CUPTI names, by name.
inline std::unordered_map<std::string, cupti::CallbackId> callback_ids(const cupti::Api& api,
                                                                       cupti::CallbackDomain domain) {
  std::unordered_map<std::string, cupti::CallbackId> ids;
  for (std::uint32_t id = 1; id < kMaxCallbackId; ++id) {
    const char* name = nullptr;
    if (api.get_callback_name(domain, id, &name) != cupti::kSuccess || name == nullptr) continue;
    ids.emplace(name, id);
  }
  return ids;
}

// The functions of a domain that start no GPU work.
inline std::vector<cupti::CallbackId> calls_without_gpu_work(const cupti::Api& api, cupti::CallbackDomain domain) {
  std::vector<cupti::CallbackId> ids;
  for (const auto& [name, id] : callback_ids(api, domain)) {
    if (!starts_gpu_work(name)) ids.push_back(id);
  }
  return ids;
}

// Switches recording off for `ids` of an enabled kind (kKindRuntime or kKindDriver). Returns
// how many were switched off: 0 where this CUPTI has no per-function switches (before 12.6),
// and then every call is recorded as before.
inline std::size_t record_only_gpu_work(const cupti::Api& api, cupti::ActivityKind kind,
                                        const std::vector<cupti::CallbackId>& ids) {
  auto* enable = kind == cupti::kKindRuntime ? api.activity_enable_runtime_api : api.activity_enable_driver_api;
  if (enable == nullptr) return 0;
  std::size_t off = 0;
  for (cupti::CallbackId id : ids) {
    const cupti::Result r = enable(id, 0);
    if (r == cupti::kSuccess) {
      ++off;
    } else if (r == cupti::kErrorNotSupported) {
      break;
    }
  }
  return off;
}

}  // namespace perfscope::trace
