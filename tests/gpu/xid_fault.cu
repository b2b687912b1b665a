// A kernel that writes through a bad pointer: the driver stops its context and reports an Xid
// (31, an MMU fault, on current GPUs), which perfscope's Xid watcher must count and alert on.
// The GPU itself recovers; only this process's context is lost.
#include <cstdio>

__global__ void write_through(int* p) { *p = 42; }

int main() {
  write_through<<<1, 1>>>(reinterpret_cast<int*>(0x10));
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("%s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 1 : 0;  // the fault is the expected outcome
}
