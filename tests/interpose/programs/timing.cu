// A small CUDA program, unmodified, as a user would write it: kernels on a stream timed with
// events and with the host clock while polling, a copy back to the host. Under `myriad run`
// its timers show virtual time. (tests/interpose/run_test.cc)
#include <chrono>
#include <cstdio>

__global__ void busy(float* x) { x[threadIdx.x] += 1; }

int main() {
  int n = 0;
  cudaGetDeviceCount(&n);
  cudaDeviceProp p;
  cudaGetDeviceProperties(&p, 0);
  std::printf("devices %d: %s, %d SMs, %.0f GiB\n", n, p.name, p.multiProcessorCount,
              p.totalGlobalMem / 1073741824.0);
  float* x = nullptr;
  cudaMalloc(&x, 1 << 20);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  const auto t0 = std::chrono::steady_clock::now();
  cudaEventRecord(a, s);
  for (int i = 0; i < 10; ++i) busy<<<1024, 256, 0, s>>>(x);
  cudaEventRecord(b, s);
  int polls = 0;
  while (cudaStreamQuery(s) == cudaErrorNotReady) ++polls;
  const auto t1 = std::chrono::steady_clock::now();
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  float host[4] = {1, 2, 3, 4};
  cudaMemcpy(host, x, sizeof(host), cudaMemcpyDeviceToHost);
  std::printf("events %.3f ms, host clock %.3f ms, %d polls, copied back %g, error %s\n", ms,
              std::chrono::duration<double, std::milli>(t1 - t0).count(), polls, host[0] + host[3],
              cudaGetErrorString(cudaGetLastError()));
  return cudaFree(x) == cudaSuccess ? 0 : 1;
}
