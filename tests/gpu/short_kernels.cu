// A short CUDA program for the tracing checks: one allocation, a memset, a copy in, N tiny
// kernels, a copy out, a free, and exit at once (no explicit teardown), so whatever CUPTI still
// holds at exit must be flushed by the injection library. Usage: short_kernels [N]
#include <cstdio>
#include <cstdlib>

__global__ void tiny_kernel(int* data, int step) { data[threadIdx.x] += step; }

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  int host[256] = {};
  int* device = nullptr;
  if (cudaMalloc(&device, sizeof host) != cudaSuccess) return 1;
  cudaMemset(device, 0, sizeof host);
  cudaMemcpy(device, host, sizeof host, cudaMemcpyHostToDevice);
  for (int i = 0; i < n; ++i) tiny_kernel<<<1, 256>>>(device, i);
  cudaMemcpy(host, device, sizeof host, cudaMemcpyDeviceToHost);
  cudaFree(device);
  std::printf("%d kernels, data[0]=%d\n", n, host[0]);
  return 0;
}
