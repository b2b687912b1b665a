// Compiled only where CUPTI's headers are found (a CUDA toolkit, or PERFSCOPE_CUPTI_INCLUDE_DIR
// naming the include folder of a pip wheel): every value, layout and signature cupti_api.hpp
// declares, checked against NVIDIA's own. A mismatch fails the build there.
#include <cupti.h>

#include <cstddef>
#include <type_traits>

#include "server/trace/cupti_api.hpp"
#include "server/trace/trace_records.hpp"

namespace perfscope::trace::cupti {
namespace {

static_assert(CUPTI_API_VERSION >= kOldestApiVersion);

static_assert(kSuccess == CUPTI_SUCCESS);
static_assert(kErrorInvalidParameter == CUPTI_ERROR_INVALID_PARAMETER);
static_assert(kErrorMaxLimitReached == CUPTI_ERROR_MAX_LIMIT_REACHED);
static_assert(kErrorNotSupported == CUPTI_ERROR_NOT_SUPPORTED);
static_assert(kKindMemcpy == CUPTI_ACTIVITY_KIND_MEMCPY);
static_assert(kKindMemset == CUPTI_ACTIVITY_KIND_MEMSET);
static_assert(kKindDriver == CUPTI_ACTIVITY_KIND_DRIVER);
static_assert(kKindRuntime == CUPTI_ACTIVITY_KIND_RUNTIME);
static_assert(kKindConcurrentKernel == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
static_assert(kKindMemory2 == CUPTI_ACTIVITY_KIND_MEMORY2);
static_assert(kFlushForced == CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
static_assert(kDomainDriverApi == CUPTI_CB_DOMAIN_DRIVER_API);
static_assert(kDomainRuntimeApi == CUPTI_CB_DOMAIN_RUNTIME_API);
static_assert(kApiEnter == CUPTI_API_ENTER);
static_assert(kApiExit == CUPTI_API_EXIT);
static_assert(kMemoryOperationAllocation == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION);
static_assert(kMemoryOperationRelease == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE);
static_assert(sizeof(ActivityKind) == sizeof(CUpti_ActivityKind));
static_assert(sizeof(CallbackDomain) == sizeof(CUpti_CallbackDomain));
static_assert(sizeof(Result) == sizeof(CUptiResult));
static_assert(std::is_same_v<CallbackId, CUpti_CallbackId>);

// The plain records carry CUPTI's enum values; these are the ones the conversion relies on.
static_assert(cupti_values::kMemcpyHtoD == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
static_assert(cupti_values::kMemcpyDtoH == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH);
static_assert(cupti_values::kMemcpyDtoD == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD);
static_assert(cupti_values::kMemcpyHtoH == CUPTI_ACTIVITY_MEMCPY_KIND_HTOH);
static_assert(cupti_values::kMemcpyPtoP == CUPTI_ACTIVITY_MEMCPY_KIND_PTOP);
static_assert(cupti_values::kMemoryPageable == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
static_assert(cupti_values::kMemoryPinned == CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
static_assert(cupti_values::kMemoryDevice == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
static_assert(cupti_values::kMemoryManaged == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED);
static_assert(cupti_values::kMemoryDeviceStatic == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC);
static_assert(cupti_values::kMemoryManagedStatic == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC);

// Same offset and size of a field in ours and theirs.
#define PERFSCOPE_SAME_FIELD(Ours, ours, Theirs, theirs)                                        \
  static_assert(offsetof(Ours, ours) == offsetof(Theirs, theirs), #Ours "::" #ours " offset"); \
  static_assert(sizeof(Ours::ours) == sizeof(Theirs::theirs), #Ours "::" #ours " size")

// The newest kernel layout of these headers, and the prefix every older one shares.
#if CUPTI_API_VERSION >= 130200
using TheirKernel = CUpti_ActivityKernel11;
#elif CUPTI_API_VERSION >= 22
using TheirKernel = CUpti_ActivityKernel10;
#else
using TheirKernel = CUpti_ActivityKernel9;
#endif
PERFSCOPE_SAME_FIELD(KernelActivity, kind, TheirKernel, kind);
PERFSCOPE_SAME_FIELD(KernelActivity, registers_per_thread, TheirKernel, registersPerThread);
PERFSCOPE_SAME_FIELD(KernelActivity, start, TheirKernel, start);
PERFSCOPE_SAME_FIELD(KernelActivity, end, TheirKernel, end);
PERFSCOPE_SAME_FIELD(KernelActivity, device_id, TheirKernel, deviceId);
PERFSCOPE_SAME_FIELD(KernelActivity, stream_id, TheirKernel, streamId);
PERFSCOPE_SAME_FIELD(KernelActivity, grid_x, TheirKernel, gridX);
PERFSCOPE_SAME_FIELD(KernelActivity, grid_z, TheirKernel, gridZ);
PERFSCOPE_SAME_FIELD(KernelActivity, block_x, TheirKernel, blockX);
PERFSCOPE_SAME_FIELD(KernelActivity, block_z, TheirKernel, blockZ);
PERFSCOPE_SAME_FIELD(KernelActivity, static_shared_memory, TheirKernel, staticSharedMemory);
PERFSCOPE_SAME_FIELD(KernelActivity, dynamic_shared_memory, TheirKernel, dynamicSharedMemory);
PERFSCOPE_SAME_FIELD(KernelActivity, correlation_id, TheirKernel, correlationId);
PERFSCOPE_SAME_FIELD(KernelActivity, name, TheirKernel, name);

PERFSCOPE_SAME_FIELD(MemcpyActivity, copy_kind, CUpti_ActivityMemcpy6, copyKind);
PERFSCOPE_SAME_FIELD(MemcpyActivity, src_kind, CUpti_ActivityMemcpy6, srcKind);
PERFSCOPE_SAME_FIELD(MemcpyActivity, dst_kind, CUpti_ActivityMemcpy6, dstKind);
PERFSCOPE_SAME_FIELD(MemcpyActivity, bytes, CUpti_ActivityMemcpy6, bytes);
PERFSCOPE_SAME_FIELD(MemcpyActivity, start, CUpti_ActivityMemcpy6, start);
PERFSCOPE_SAME_FIELD(MemcpyActivity, end, CUpti_ActivityMemcpy6, end);
PERFSCOPE_SAME_FIELD(MemcpyActivity, device_id, CUpti_ActivityMemcpy6, deviceId);
PERFSCOPE_SAME_FIELD(MemcpyActivity, stream_id, CUpti_ActivityMemcpy6, streamId);
PERFSCOPE_SAME_FIELD(MemcpyActivity, correlation_id, CUpti_ActivityMemcpy6, correlationId);

PERFSCOPE_SAME_FIELD(MemsetActivity, bytes, CUpti_ActivityMemset4, bytes);
PERFSCOPE_SAME_FIELD(MemsetActivity, start, CUpti_ActivityMemset4, start);
PERFSCOPE_SAME_FIELD(MemsetActivity, end, CUpti_ActivityMemset4, end);
PERFSCOPE_SAME_FIELD(MemsetActivity, device_id, CUpti_ActivityMemset4, deviceId);
PERFSCOPE_SAME_FIELD(MemsetActivity, stream_id, CUpti_ActivityMemset4, streamId);
PERFSCOPE_SAME_FIELD(MemsetActivity, correlation_id, CUpti_ActivityMemset4, correlationId);
PERFSCOPE_SAME_FIELD(MemsetActivity, memory_kind, CUpti_ActivityMemset4, memoryKind);

PERFSCOPE_SAME_FIELD(MemoryActivity, memory_operation_type, CUpti_ActivityMemory4, memoryOperationType);
PERFSCOPE_SAME_FIELD(MemoryActivity, memory_kind, CUpti_ActivityMemory4, memoryKind);
PERFSCOPE_SAME_FIELD(MemoryActivity, address, CUpti_ActivityMemory4, address);
PERFSCOPE_SAME_FIELD(MemoryActivity, bytes, CUpti_ActivityMemory4, bytes);
PERFSCOPE_SAME_FIELD(MemoryActivity, timestamp, CUpti_ActivityMemory4, timestamp);
PERFSCOPE_SAME_FIELD(MemoryActivity, device_id, CUpti_ActivityMemory4, deviceId);

PERFSCOPE_SAME_FIELD(ApiActivity, cbid, CUpti_ActivityAPI, cbid);
PERFSCOPE_SAME_FIELD(ApiActivity, start, CUpti_ActivityAPI, start);
PERFSCOPE_SAME_FIELD(ApiActivity, end, CUpti_ActivityAPI, end);
PERFSCOPE_SAME_FIELD(ApiActivity, thread_id, CUpti_ActivityAPI, threadId);
PERFSCOPE_SAME_FIELD(ApiActivity, correlation_id, CUpti_ActivityAPI, correlationId);
static_assert(sizeof(ApiActivity) == sizeof(CUpti_ActivityAPI));

PERFSCOPE_SAME_FIELD(CallbackData, callback_site, CUpti_CallbackData, callbackSite);
PERFSCOPE_SAME_FIELD(CallbackData, correlation_id, CUpti_CallbackData, correlationId);
static_assert(sizeof(CallbackData) == sizeof(CUpti_CallbackData));

#undef PERFSCOPE_SAME_FIELD

// The entry points' signatures, with our types in place of theirs where the sizes match above.
static_assert(std::is_same_v<decltype(&cuptiActivityGetNextRecord),
                             CUptiResult (*)(std::uint8_t*, std::size_t, CUpti_Activity**)>);
static_assert(std::is_same_v<decltype(&cuptiGetVersion), CUptiResult (*)(std::uint32_t*)>);
static_assert(std::is_same_v<decltype(&cuptiActivityFlushAll), CUptiResult (*)(std::uint32_t)>);
static_assert(std::is_same_v<decltype(&cuptiActivityEnableRuntimeApi), CUptiResult (*)(CUpti_CallbackId, std::uint8_t)>);
static_assert(std::is_same_v<decltype(&cuptiGetCallbackName),
                             CUptiResult (*)(CUpti_CallbackDomain, std::uint32_t, const char**)>);
static_assert(std::is_same_v<decltype(&cuptiEnableCallback),
                             CUptiResult (*)(std::uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId)>);
static_assert(std::is_same_v<CUpti_BuffersCallbackRequestFunc, void (*)(std::uint8_t**, std::size_t*, std::size_t*)>);
static_assert(std::is_same_v<CUpti_BuffersCallbackCompleteFunc,
                             void (*)(CUcontext, std::uint32_t, std::uint8_t*, std::size_t, std::size_t)>);
static_assert(std::is_same_v<CUpti_CallbackFunc, void (*)(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*)>);

}  // namespace
}  // namespace perfscope::trace::cupti
