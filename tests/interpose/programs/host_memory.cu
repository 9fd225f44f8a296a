// Managed and pinned host memory as CUDA C trainers use them: cudaMallocManaged buffers the
// host writes and kernels read, pinned staging buffers, a registered host array, and every
// free the real runtime accepts (or refuses). Prints one line per check; exits 1 on the first
// call that does not behave as CUDA's does. (tests/interpose/run_test.cc)
#include <cstdio>
#include <cstdlib>

__global__ void scale(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2;
}

#define EXPECT(call, want)                                                   \
  do {                                                                       \
    const cudaError_t e = (call);                                            \
    if (e != (want)) {                                                       \
      std::printf("FAILED %s: %s (wanted %s)\n", #call, cudaGetErrorName(e), \
                  cudaGetErrorName(want));                                   \
      return 1;                                                              \
    }                                                                        \
  } while (0)

int main() {
  const int n = 1 << 20;
  float* managed = nullptr;
  EXPECT(cudaMallocManaged(&managed, n * sizeof(float)), cudaSuccess);
  for (int i = 0; i < n; ++i) managed[i] = 1;  // the host writes managed memory directly
  cudaPointerAttributes a;
  EXPECT(cudaPointerGetAttributes(&a, managed + 10), cudaSuccess);
  std::printf("managed: type %s\n", a.type == cudaMemoryTypeManaged ? "managed" : "other");
  cudaMemLocation device{cudaMemLocationTypeDevice, 0};
  EXPECT(cudaMemPrefetchAsync(managed, n * sizeof(float), device, 0, 0), cudaSuccess);
  scale<<<(n + 255) / 256, 256>>>(managed, n);
  EXPECT(cudaDeviceSynchronize(), cudaSuccess);

  float* pinned = nullptr;
  EXPECT(cudaMallocHost(&pinned, 4096), cudaSuccess);
  EXPECT(cudaPointerGetAttributes(&a, pinned), cudaSuccess);
  std::printf("pinned: type %s\n", a.type == cudaMemoryTypeHost ? "host" : "other");
  void* mapped = nullptr;
  float* portable = nullptr;
  EXPECT(cudaHostAlloc(&portable, 4096, cudaHostAllocMapped), cudaSuccess);
  EXPECT(cudaHostGetDevicePointer(&mapped, portable, 0), cudaSuccess);
  std::printf("mapped: same address %d\n", mapped == portable);

  float* plain = static_cast<float*>(std::malloc(1 << 16));
  EXPECT(cudaHostRegister(plain, 1 << 16, cudaHostRegisterDefault), cudaSuccess);
  EXPECT(cudaHostRegister(plain, 1 << 16, cudaHostRegisterDefault),
         cudaErrorHostMemoryAlreadyRegistered);
  EXPECT(cudaHostUnregister(plain), cudaSuccess);
  EXPECT(cudaHostUnregister(plain), cudaErrorHostMemoryNotRegistered);
  std::free(plain);

  size_t free_bytes = 0, total = 0;
  EXPECT(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  std::printf("managed counts on the device: %d\n", total - free_bytes >= n * sizeof(float));
  // The frees CUDA accepts, and the mix-ups it refuses.
  EXPECT(cudaFree(pinned), cudaErrorInvalidValue);
  EXPECT(cudaFreeHost(managed), cudaErrorInvalidValue);
  EXPECT(cudaFreeHost(pinned), cudaSuccess);
  EXPECT(cudaFreeHost(portable), cudaSuccess);
  EXPECT(cudaFree(managed), cudaSuccess);
  EXPECT(cudaFree(managed), cudaErrorInvalidValue);
  cudaGetLastError();
  std::printf("all frees behave as CUDA's\n");
  return 0;
}
