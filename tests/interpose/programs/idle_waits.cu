// Threads that wait where CPython's do, while the main thread waits for the GPU: one on an
// unnamed semaphore (threading.Lock, Event and Queue wait in sem_wait / sem_clockwait), one in
// a blocking read of a pipe (a worker pool's result reader), one in timed semaphore waits that
// time out until the clock passes 2 ms. None of them may hold virtual time.
// (tests/interpose/run_test.cc)
#include <semaphore.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

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

  sem_t posted;
  sem_init(&posted, 0, 0);
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return 1;

  double semaphore_resumed_ms = 0, read_resumed_ms = 0;
  const auto t0 = Clock::now();
  std::thread semaphore_waiter([&] {
    sem_wait(&posted);
    semaphore_resumed_ms = Millis(t0, Clock::now());
  });
  std::thread reader([&] {
    char byte = 0;
    if (read(pipe_fds[0], &byte, 1) != 1) std::printf("read failed\n");
    read_resumed_ms = Millis(t0, Clock::now());
  });
  int timeouts = 0;
  std::thread timed_waiter([&] {
    sem_t never;
    sem_init(&never, 0, 0);
    const auto start = Clock::now();
    while (Clock::now() < start + std::chrono::milliseconds(2)) {
      timespec deadline{};
      clock_gettime(CLOCK_REALTIME, &deadline);
      deadline.tv_nsec += 500'000;  // 0.5 ms
      if (deadline.tv_nsec >= 1'000'000'000) {
        deadline.tv_sec += 1;
        deadline.tv_nsec -= 1'000'000'000;
      }
      if (sem_timedwait(&never, &deadline) != 0) ++timeouts;
    }
    sem_destroy(&never);
  });

  // 50 kernels of 10 us (the fallback) while the other threads wait.
  for (int i = 0; i < 50; ++i) busy<<<1, 256>>>(x);
  cudaDeviceSynchronize();
  const double gpu_ms = Millis(t0, Clock::now());
  sem_post(&posted);
  semaphore_waiter.join();
  const char byte = 1;
  if (write(pipe_fds[1], &byte, 1) != 1) return 1;
  reader.join();
  timed_waiter.join();
  std::printf("gpu %.3f ms, semaphore waiter resumed at %.3f ms, reader at %.3f ms, %d timeouts\n",
              gpu_ms, semaphore_resumed_ms, read_resumed_ms, timeouts);
  sem_destroy(&posted);
  cudaFree(x);
  return 0;
}
