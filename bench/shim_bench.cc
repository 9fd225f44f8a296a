// Cost of an asynchronous intercepted call inside the user's process: a kernel launch through
// the cudart shim, appended to the thread's batch (and, every 512 launches, sent to a server
// thread that drains the socket, as Myriad's would).
//
//   ./build/bench/shim_bench
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

namespace {

__attribute__((noinline)) void FakeKernel() {}

// A server that accepts one connection per thread and discards everything.
class Drain {
 public:
  Drain() {
    char dir[] = "/tmp/myriad-bench-XXXXXX";
    path_ = std::string(::mkdtemp(dir)) + "/socket";
    fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(fd_, 16);
    thread_ = std::thread([this] {
      const int client = ::accept(fd_, nullptr, nullptr);
      char buffer[1 << 16];
      while (::read(client, buffer, sizeof(buffer)) > 0) {
      }
    });
    thread_.detach();
    ::setenv("MYRIAD_SOCKET", path_.c_str(), 1);
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::thread thread_;
};

void BM_AsyncKernelLaunch(benchmark::State& state) {
  static Drain drain;
  const dim3 grid(1024), block(256);
  for (auto _ : state) {
    const cudaError_t e =
        cudaLaunchKernel(reinterpret_cast<const void*>(&FakeKernel), grid, block, nullptr, 0, 0);
    benchmark::DoNotOptimize(e);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AsyncKernelLaunch)->Repetitions(5)->ReportAggregatesOnly(true);

extern "C" void __cudaRegisterFunction(void**, const char*, char*, const char*, int, uint3*, uint3*,
                                       dim3*, dim3*, int*);

__attribute__((noinline)) void FakeElementwise() {}

// PyTorch's launch path: a registered kernel whose signature starts with an integer element
// count (as at::native::vectorized_elementwise_kernel's does), launched with its arguments,
// so that the shim reads the integer parameter for the kernel models.
void BM_AsyncKernelLaunchWithIntegerArgument(benchmark::State& state) {
  static Drain drain;
  static char name[] = "_ZN2at6native29vectorized_elementwise_kernelILi4EEEviPf";
  static const bool registered = [] {
    __cudaRegisterFunction(nullptr, reinterpret_cast<const char*>(&FakeElementwise), name, name, -1,
                           nullptr, nullptr, nullptr, nullptr, nullptr);
    return true;
  }();
  benchmark::DoNotOptimize(registered);
  int n = 1 << 20;
  float* data = nullptr;
  void* args[] = {&n, &data};
  const dim3 grid(1024), block(128);
  for (auto _ : state) {
    const cudaError_t e =
        cudaLaunchKernel(reinterpret_cast<const void*>(&FakeElementwise), grid, block, args, 0, 0);
    benchmark::DoNotOptimize(e);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AsyncKernelLaunchWithIntegerArgument)->Repetitions(5)->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
