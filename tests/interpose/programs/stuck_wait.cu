// A process that gets stuck where Myriad cannot see, as a rendezvous does when a worker never
// comes: after a kernel, it waits in accept() on a TCP socket nobody connects to. With
// "busy", it instead computes on the CPU for a few seconds of real time without a CUDA call
// (as an Inductor compile does: 3 x 10^9 additions), which is no hang, then ends. (tests/interpose/run_test.cc)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void touch(float* x) { x[threadIdx.x] = 1; }

int main(int argc, char** argv) {
  const char* local_rank = std::getenv("LOCAL_RANK");
  cudaSetDevice(local_rank ? std::atoi(local_rank) : 0);
  float* x = nullptr;
  cudaMalloc(&x, 1024);
  touch<<<1, 256>>>(x);
  cudaDeviceSynchronize();
  if (argc > 1 && std::strcmp(argv[1], "busy") == 0) {
    // Counted, not timed: the program's clocks are virtual, and host work takes none of it.
    volatile double sum = 0;
    for (long i = 0; i < 3'000'000'000L; ++i) sum = sum + 1;
    touch<<<1, 256>>>(x);
    cudaDeviceSynchronize();
    std::printf("busy done\n");
    return 0;
  }
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;  // any free port
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      listen(listener, 1) != 0) {
    std::perror("listen");
    return 2;
  }
  std::printf("waiting for a worker\n");
  std::fflush(stdout);
  const int peer = accept(listener, nullptr, nullptr);
  std::printf("accepted %d\n", peer);
  return 0;
}
