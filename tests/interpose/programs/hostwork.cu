// Host work between two kernels: 40 ms of CPU spinning, timed with the host clock.
// (tests/interpose/run_test.cc: free when host time is modelled, counted when measured.)
#include <chrono>
#include <ctime>
#include <cstdio>

__global__ void tick(float* x) { x[threadIdx.x] += 1; }

static double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main() {
  float* x = nullptr;
  cudaMalloc(&x, 1024);
  const auto t0 = std::chrono::steady_clock::now();
  tick<<<1, 32>>>(x);
  volatile double sink = 0;
  for (const double start = CpuSeconds(); CpuSeconds() - start < 0.040;) sink = sink + 1;
  tick<<<1, 32>>>(x);
  cudaDeviceSynchronize();
  const auto t1 = std::chrono::steady_clock::now();
  std::printf("host clock %.3f ms\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
  return 0;
}
