// Which runtime and driver API functions start work on the GPU. Of all the calls a program
// makes, perfscope uses the records of these alone (a kernel's, copy's or memset's launch
// call); recording only them spares a launch-bound program the cost of recording the rest
// (a PyTorch op also asks for the device, the last error, the stream…). CUPTI-independent, so
// the choice is tested without a GPU; the injection library and the tracing-cost floor apply it.
#pragma once

#include <string_view>

namespace perfscope::trace {

// `name` as CUPTI names the function ("cudaLaunchKernel_v7000", "cuMemcpyHtoDAsync_v2").
inline bool starts_gpu_work(std::string_view name) {
  for (std::string_view prefix : {"cudaLaunch", "cudaGraphLaunch", "cudaMemcpy", "cudaMemset", "cuLaunch",
                                  "cuGraphLaunch", "cuMemcpy", "cuMemset"}) {
    if (name.starts_with(prefix)) return true;
  }
  return false;
}

}  // namespace perfscope::trace
