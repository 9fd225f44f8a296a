// Launch configurations CUDA refuses: an empty grid or block, a block of more than 1,024
// threads or more than 64 along z, a grid above its limits. Each must fail with
// cudaErrorInvalidConfiguration (as cudaGetLastError then reports, once), and a good launch
// after them must still succeed. Prints "launch errors: ok" if everything matched.
// (tests/interpose/run_test.cc)
#include <cstdio>

__global__ void Step(float* x) {
  if (x) x[threadIdx.x] += 1.0f;
}

int main() {
  bool ok = true;
  struct Bad {
    dim3 grid, block;
    const char* what;
  };
  const Bad bad[] = {
      {dim3(0), dim3(32), "<<<0, 32>>>"},
      {dim3(1), dim3(0), "<<<1, 0>>>"},
      {dim3(1), dim3(4096), "<<<1, 4096>>>"},
      {dim3(1), dim3(32, 32, 2), "<<<1, (32, 32, 2)>>>"},
      {dim3(1), dim3(1, 1, 128), "<<<1, (1, 1, 128)>>>"},
      {dim3(1, 65536), dim3(32), "<<<(1, 65536), 32>>>"},
  };
  for (const Bad& b : bad) {
    Step<<<b.grid, b.block>>>(nullptr);
    const cudaError_t e = cudaGetLastError();
    std::printf("%s: %s\n", b.what, cudaGetErrorName(e));
    ok &= e == cudaErrorInvalidConfiguration;
    ok &= cudaGetLastError() == cudaSuccess;  // not sticky
  }
  Step<<<dim3(2147483647u), dim3(1024)>>>(nullptr);
  ok &= cudaGetLastError() == cudaSuccess;
  ok &= cudaDeviceSynchronize() == cudaSuccess;
  std::printf("launch errors: %s\n", ok ? "ok" : "MISMATCH");
  return ok ? 0 : 1;
}
