// CUPTI as the injection library uses it, declared here so that no CUDA toolkit is needed to
// build it: the handful of enum values, the leading fields of the activity records it reads,
// the callback data, and the entry points, resolved at run time from whichever libcupti is
// loaded (cupti_library.hpp). Names follow CUPTI's, in perfscope's case.
//
// Why the record prefixes are enough: CUPTI hands out each kind of record in the newest layout
// its release knows (Kernel10 in 13.0, Kernel11 later), and new layouts only append fields or
// fill padding, so the fields read here sit at the same offsets in every release since 12.0
// (API version 19, the oldest accepted). Records are walked with CUPTI's own
// cuptiActivityGetNextRecord, never by these sizes. `cupti_declarations_check.cpp` checks every
// value and offset here against the real headers wherever they are found at build time.
//
// Value types and function-pointer types only; no state.
#pragma once

#include <cstddef>
#include <cstdint>

namespace perfscope::trace::cupti {

using Result = int;  // CUptiResult
inline constexpr Result kSuccess = 0;
inline constexpr Result kErrorInvalidParameter = 1;
inline constexpr Result kErrorMaxLimitReached = 12;  // cuptiActivityGetNextRecord: no more records
inline constexpr Result kErrorNotSupported = 27;

// The oldest CUPTI whose records these declarations read: CUDA 12.0's.
inline constexpr std::uint32_t kOldestApiVersion = 19;

using ActivityKind = int;  // CUpti_ActivityKind
inline constexpr ActivityKind kKindMemcpy = 1;
inline constexpr ActivityKind kKindMemset = 2;
inline constexpr ActivityKind kKindDriver = 4;
inline constexpr ActivityKind kKindRuntime = 5;
inline constexpr ActivityKind kKindConcurrentKernel = 10;
inline constexpr ActivityKind kKindMemory2 = 49;

inline constexpr std::uint32_t kFlushForced = 1;  // CUPTI_ACTIVITY_FLAG_FLUSH_FORCED

using CallbackDomain = int;  // CUpti_CallbackDomain
inline constexpr CallbackDomain kDomainDriverApi = 1;
inline constexpr CallbackDomain kDomainRuntimeApi = 2;
using CallbackId = std::uint32_t;  // CUpti_CallbackId

using ApiCallbackSite = int;  // CUpti_ApiCallbackSite
inline constexpr ApiCallbackSite kApiEnter = 0;
inline constexpr ApiCallbackSite kApiExit = 1;

inline constexpr std::uint32_t kMemoryOperationAllocation = 1;  // CUpti_ActivityMemoryOperationType
inline constexpr std::uint32_t kMemoryOperationRelease = 2;

using Context = struct ContextOpaque*;  // CUcontext
using SubscriberHandle = struct SubscriberOpaque*;

// CUPTI's records are packed and 8-byte aligned (its PACKED_ALIGNMENT).
#define PERFSCOPE_CUPTI_RECORD __attribute__((packed)) __attribute__((aligned(8)))

// Every record begins with its kind (CUpti_Activity).
struct PERFSCOPE_CUPTI_RECORD Activity {
  ActivityKind kind;
};

// CUpti_ActivityKernel4 … Kernel11, up to `name`.
struct PERFSCOPE_CUPTI_RECORD KernelActivity {
  ActivityKind kind;
  std::uint8_t cache_config;
  std::uint8_t shared_memory_config;
  std::uint16_t registers_per_thread;
  int partitioned_global_cache_requested;
  int partitioned_global_cache_executed;
  std::uint64_t start;
  std::uint64_t end;
  std::uint64_t completed;
  std::uint32_t device_id;
  std::uint32_t context_id;
  std::uint32_t stream_id;
  std::int32_t grid_x, grid_y, grid_z;
  std::int32_t block_x, block_y, block_z;
  std::int32_t static_shared_memory;
  std::int32_t dynamic_shared_memory;
  std::uint32_t local_memory_per_thread;
  std::uint32_t local_memory_total;
  std::uint32_t correlation_id;
  std::int64_t grid_id;
  const char* name;
};

// CUpti_ActivityMemcpy5 and Memcpy6, up to `correlationId`.
struct PERFSCOPE_CUPTI_RECORD MemcpyActivity {
  ActivityKind kind;
  std::uint8_t copy_kind;
  std::uint8_t src_kind;
  std::uint8_t dst_kind;
  std::uint8_t flags;
  std::uint64_t bytes;
  std::uint64_t start;
  std::uint64_t end;
  std::uint32_t device_id;
  std::uint32_t context_id;
  std::uint32_t stream_id;
  std::uint32_t correlation_id;
};

// CUpti_ActivityMemset4, up to `memoryKind`.
struct PERFSCOPE_CUPTI_RECORD MemsetActivity {
  ActivityKind kind;
  std::uint32_t value;
  std::uint64_t bytes;
  std::uint64_t start;
  std::uint64_t end;
  std::uint32_t device_id;
  std::uint32_t context_id;
  std::uint32_t stream_id;
  std::uint32_t correlation_id;
  std::uint16_t flags;
  std::uint16_t memory_kind;
};

// CUpti_ActivityMemory3 and Memory4 (the MEMORY2 kind), up to `deviceId`.
struct PERFSCOPE_CUPTI_RECORD MemoryActivity {
  ActivityKind kind;
  std::uint32_t memory_operation_type;
  std::uint32_t memory_kind;
  std::uint32_t correlation_id;
  std::uint64_t address;
  std::uint64_t bytes;
  std::uint64_t timestamp;
  std::uint64_t pc;
  std::uint32_t process_id;
  std::uint32_t device_id;
};

// CUpti_ActivityAPI (runtime and driver calls), whole.
struct PERFSCOPE_CUPTI_RECORD ApiActivity {
  ActivityKind kind;
  CallbackId cbid;
  std::uint64_t start;
  std::uint64_t end;
  std::uint32_t process_id;
  std::uint32_t thread_id;
  std::uint32_t correlation_id;
  std::uint32_t return_value;
};

#undef PERFSCOPE_CUPTI_RECORD

// CUpti_CallbackData: what a runtime or driver API callback receives. Not packed.
struct CallbackData {
  ApiCallbackSite callback_site;
  const char* function_name;
  const void* function_params;
  void* function_return_value;
  const char* symbol_name;
  Context context;
  std::uint32_t context_uid;
  std::uint64_t* correlation_data;
  std::uint32_t correlation_id;
};

using BufferRequestedFn = void (*)(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records);
using BufferCompletedFn = void (*)(Context context, std::uint32_t stream_id, std::uint8_t* buffer, std::size_t size,
                                   std::size_t valid_size);
using CallbackFn = void (*)(void* userdata, CallbackDomain domain, CallbackId cbid, const void* data);

// The entry points, as resolved from the library. Every one the injection library needs is
// required but the last two, which CUPTI before 12.6 lacks (then every call of an enabled
// runtime or driver kind is recorded).
struct Api {
  Result (*get_version)(std::uint32_t* version) = nullptr;
  Result (*get_result_string)(Result result, const char** text) = nullptr;
  Result (*activity_register_callbacks)(BufferRequestedFn, BufferCompletedFn) = nullptr;
  Result (*activity_enable)(ActivityKind) = nullptr;
  Result (*activity_disable)(ActivityKind) = nullptr;
  Result (*activity_flush_all)(std::uint32_t flag) = nullptr;
  Result (*activity_get_next_record)(std::uint8_t* buffer, std::size_t valid_size, Activity** record) = nullptr;
  Result (*activity_get_num_dropped_records)(Context, std::uint32_t stream_id, std::size_t* dropped) = nullptr;
  Result (*finalize)() = nullptr;
  Result (*subscribe)(SubscriberHandle* subscriber, CallbackFn callback, void* userdata) = nullptr;
  Result (*unsubscribe)(SubscriberHandle subscriber) = nullptr;
  Result (*enable_callback)(std::uint32_t enable, SubscriberHandle, CallbackDomain, CallbackId) = nullptr;
  Result (*get_timestamp)(std::uint64_t* timestamp) = nullptr;
  Result (*get_callback_name)(CallbackDomain, std::uint32_t cbid, const char** name) = nullptr;
  // Optional.
  Result (*activity_enable_runtime_api)(CallbackId, std::uint8_t enable) = nullptr;
  Result (*activity_enable_driver_api)(CallbackId, std::uint8_t enable) = nullptr;
};

}  // namespace perfscope::trace::cupti
