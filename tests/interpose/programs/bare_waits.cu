// Threads that sleep where the preload cannot see them, while the main thread waits for the
// GPU: OpenMP's pool (after a parallel region its workers sleep in a futex until the next),
// and a thread in a bare futex wait (std::atomic::wait, C++20 barriers) that the main thread
// wakes after its synchronisation. Neither may hold virtual time (tests/interpose/run_test.cc).
#include <linux/futex.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

__global__ void busy(float* x) { x[threadIdx.x] += 1; }

using Clock = std::chrono::steady_clock;

double Millis(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int main() {
  float* x = nullptr;
  cudaMalloc(&x, 4096);
  busy<<<1, 256>>>(x);
  cudaDeviceSynchronize();  // the process has started: clocks are virtual from here

  // CPU work on OpenMP's threads (a data loader's, a CPU op's): they stay, asleep, after it.
  std::vector<double> v(1 << 20, 1.0);
  double sum = 0;
#pragma omp parallel for reduction(+ : sum) num_threads(2)
  for (int i = 0; i < static_cast<int>(v.size()); ++i) sum += v[i] * 0.5;

  std::atomic<int> flag{0};
  std::thread sleeper([&] {
    while (flag.load() == 0)
      syscall(SYS_futex, reinterpret_cast<int*>(&flag), FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
  });

  // 50 kernels of 10 us (the fallback) while the other threads sleep.
  const auto t0 = Clock::now();
  for (int i = 0; i < 50; ++i) busy<<<1, 256>>>(x);
  cudaDeviceSynchronize();
  const double gpu_ms = Millis(t0, Clock::now());
  flag.store(1);
  syscall(SYS_futex, reinterpret_cast<int*>(&flag), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  sleeper.join();
  std::printf("sum %.0f on %d OpenMP threads, gpu %.3f ms\n", sum, omp_get_max_threads(), gpu_ms);
  cudaFree(x);
  return 0;
}
