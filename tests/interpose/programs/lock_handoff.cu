// A host thread enqueues GPU work, lets go of a mutex and goes on with host work that calls
// nothing (here a raw sleep); another thread, spinning until then, takes the mutex and
// synchronises with the work. Each thread has its own connection to Myriad, and the first
// thread's batch is still unsent when the second one's synchronisation goes: the mutex must
// still order the work, so the synchronisation waits for all 50 kernels (PyTorch's autograd
// thread hands its backward to the main thread this way when the main thread is not yet
// waiting). (tests/interpose/run_test.cc)
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>

__global__ void step(float* x) { x[threadIdx.x] += 1; }

int main() {
  float* x = nullptr;
  cudaMalloc(&x, 4096);
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  cudaEvent_t start, done;
  cudaEventCreate(&start);
  cudaEventCreate(&done);
  cudaEventRecord(start, stream);
  cudaStreamSynchronize(stream);

  std::mutex handoff;
  std::atomic<bool> let_go{false};
  std::thread producer([&] {
    cudaSetDevice(0);
    {
      std::lock_guard<std::mutex> lock(handoff);
      for (int i = 0; i < 50; ++i) step<<<1, 256, 0, stream>>>(x);
    }
    let_go = true;
    // Host work that reaches neither CUDA nor a wait Myriad sees: the batch stays unsent.
    timespec nap{0, 300'000'000};
    ::syscall(SYS_nanosleep, &nap, nullptr);
  });
  std::thread consumer([&] {
    cudaSetDevice(0);
    while (!let_go) {
    }
    std::lock_guard<std::mutex> lock(handoff);
    cudaEventRecord(done, stream);
    cudaEventSynchronize(done);
  });
  producer.join();
  consumer.join();
  float ms = 0;
  if (cudaEventElapsedTime(&ms, start, done) != cudaSuccess) return 1;
  std::printf("the handed-over work took %.3f ms\n", ms);
  return 0;
}
