// Launch-bound at its most extreme: N empty kernels launched back to back from one thread
// (default 1,000,000), each a few microseconds of host launch path and almost no GPU time.
// Prints one JSON line: the timed loop's wall time and the host time per launch.
// Usage: empty_kernels [N]
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void empty_kernel() {}

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 1000000;
  for (int i = 0; i < 1000; ++i) empty_kernel<<<1, 1>>>();  // warm: module loaded, paths hot
  if (cudaDeviceSynchronize() != cudaSuccess) {
    std::fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) empty_kernel<<<1, 1>>>();
  cudaDeviceSynchronize();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("{\"timed_s\": %.6f, \"kernels\": %ld, \"us_per_kernel\": %.4f}\n", s, n, s / n * 1e6);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
