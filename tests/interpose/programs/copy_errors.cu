// Copies and memsets CUDA refuses: to or from freed device memory, to an address nothing
// allocated, and past the end of an allocation. Each must fail with cudaErrorInvalidValue
// (not sticky) and write nothing; good copies before and after must succeed. Prints
// "copy errors: ok" if everything matched. (tests/interpose/run_test.cc)
#include <cstdio>
#include <cstring>
#include <vector>

int main() {
  bool ok = true;
  const auto expect = [&ok](cudaError_t got, cudaError_t want, const char* what) {
    std::printf("%s: %s\n", what, cudaGetErrorName(got));
    ok &= got == want;
    ok &= cudaGetLastError() == want;  // reported once, then gone: not sticky
    ok &= cudaGetLastError() == cudaSuccess;
  };
  constexpr size_t kBuffer = 16 << 20;
  std::vector<char> host(4096, 7);
  char *buffer = nullptr, *freed = nullptr;
  if (cudaMalloc(&buffer, kBuffer) != cudaSuccess || cudaMalloc(&freed, 4096) != cudaSuccess)
    return 1;
  expect(cudaMemcpy(buffer, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess,
         "a copy inside the buffer");
  expect(cudaFree(freed), cudaSuccess, "cudaFree");
  expect(cudaMemcpy(freed, host.data(), host.size(), cudaMemcpyHostToDevice),
         cudaErrorInvalidValue, "a copy to freed memory");
  expect(cudaMemcpy(host.data(), freed, host.size(), cudaMemcpyDeviceToHost),
         cudaErrorInvalidValue, "a copy from freed memory");
  expect(cudaMemcpy(reinterpret_cast<void*>(0x1234), host.data(), 16, cudaMemcpyHostToDevice),
         cudaErrorInvalidValue, "a copy to 0x1234");
  expect(cudaMemcpy(buffer + kBuffer - 16, host.data(), 32, cudaMemcpyHostToDevice),
         cudaErrorInvalidValue, "a copy running past the buffer's end");
  expect(cudaMemcpyAsync(host.data(), buffer, size_t{1} << 30, cudaMemcpyDeviceToHost, nullptr),
         cudaErrorInvalidValue, "1 GiB out of a 16 MiB buffer");
  expect(cudaMemcpy(buffer, freed, 16, cudaMemcpyDefault), cudaErrorInvalidValue,
         "a default-kind copy from freed memory");
  expect(cudaMemset(freed, 0, 16), cudaErrorInvalidValue, "a memset of freed memory");
  expect(cudaMemset(buffer + kBuffer - 8, 0, 16), cudaErrorInvalidValue,
         "a memset running past the buffer's end");
  // What the refused copies would have written is not there: the buffer still holds 7s.
  std::vector<char> back(host.size(), 0);
  expect(cudaMemcpy(back.data(), buffer, back.size(), cudaMemcpyDeviceToHost), cudaSuccess,
         "a copy back");
  ok &= std::memcmp(back.data(), host.data(), back.size()) == 0;
  ok &= cudaDeviceSynchronize() == cudaSuccess;
  std::printf("copy errors: %s\n", ok ? "ok" : "MISMATCH");
  return ok ? 0 : 1;
}
