// "Wait until the clock passes T" loops, as start-up code and trainers write them: one before
// the first CUDA call (the host clock is real then, so it ends), one after it (virtual: each
// usleep moves the clock), and a second thread that sleeps while the first waits for the GPU.
// (tests/interpose/run_test.cc)
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

__global__ void busy(float* x) { x[threadIdx.x] += 1; }

using Clock = std::chrono::steady_clock;

int main() {
  const auto start = Clock::now();
  int real_sleeps = 0;
  while (Clock::now() < start + std::chrono::milliseconds(20)) {
    usleep(1000);
    ++real_sleeps;
  }
  std::printf("before CUDA: the loop ended (%s)\n", real_sleeps > 0 ? "slept" : "no sleep");

  float* x = nullptr;
  cudaMalloc(&x, 4096);
  busy<<<1, 256>>>(x);
  cudaDeviceSynchronize();
  const auto t0 = Clock::now();
  int sleeps = 0;
  while (Clock::now() < t0 + std::chrono::milliseconds(5)) {
    usleep(100);
    ++sleeps;
  }
  const auto t1 = Clock::now();
  std::printf("after CUDA: %d sleeps, %.3f ms\n", sleeps,
              std::chrono::duration<double, std::milli>(t1 - t0).count());

  // A timed condition wait nobody signals, until the clock passes 3 ms: each timeout moves
  // the clock to its deadline.
  std::mutex m;
  std::condition_variable cv;
  int timeouts = 0;
  {
    std::unique_lock<std::mutex> lock(m);
    const auto until = Clock::now() + std::chrono::milliseconds(3);
    while (Clock::now() < until) {
      cv.wait_for(lock, std::chrono::milliseconds(1));
      ++timeouts;
    }
  }
  std::printf("timed waits: %d\n", timeouts);

  // A second thread sleeps 2 ms while this one waits for 30 kernels (300 us) on the GPU.
  double slept_ms = 0;
  std::thread sleeper([&] {
    const auto a = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    slept_ms = std::chrono::duration<double, std::milli>(Clock::now() - a).count();
  });
  for (int i = 0; i < 30; ++i) busy<<<1, 256>>>(x);
  cudaDeviceSynchronize();
  sleeper.join();
  std::printf("sleeper: %.3f ms\n", slept_ms);
  return cudaFree(x) == cudaSuccess ? 0 : 1;
}
