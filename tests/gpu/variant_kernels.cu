// Two kernels launched N times each from one thread, for run comparisons: WORK (default 1) is
// how many dependent steps step_kernel takes, so a run with a larger WORK is the same program
// with that one kernel made slower; other_kernel never changes.
// Usage: variant_kernels [N] [WORK]
#include <cstdio>
#include <cstdlib>

__global__ void step_kernel(int* data, int step, int work) {
  int v = data[threadIdx.x];
  for (int k = 0; k < work; ++k) v = v * 1664525 + step;  // each step needs the last
  data[threadIdx.x] = v;
}

__global__ void other_kernel(int* data) { data[threadIdx.x] ^= 1; }

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int work = argc > 2 ? std::atoi(argv[2]) : 1;
  int* device = nullptr;
  if (cudaMalloc(&device, 256 * sizeof(int)) != cudaSuccess) return 1;
  cudaMemset(device, 0, 256 * sizeof(int));
  for (int i = 0; i < n; ++i) {
    step_kernel<<<1, 256>>>(device, i, work);
    other_kernel<<<1, 256>>>(device);
  }
  int first = 0;
  cudaMemcpy(&first, device, sizeof first, cudaMemcpyDeviceToHost);
  cudaFree(device);
  std::printf("%d launches of each kernel, work %d, data[0]=%d\n", n, work, first);
  return 0;
}
