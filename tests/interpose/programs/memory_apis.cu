// The runtime's memory APIs beyond cudaMalloc and cudaMemcpy that frameworks reach: pitched
// allocations and 2D copies, __device__ variables through their symbols, and stream-ordered
// memory pools. Prints what came back, and "memory apis: ok" if everything matched.
// (tests/interpose/run_test.cc)
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

__device__ float scale[4];

#define CHECK(call)                                                                     \
  do {                                                                                  \
    const cudaError_t e = (call);                                                       \
    if (e != cudaSuccess) {                                                             \
      std::printf("%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e)); \
      return 1;                                                                         \
    }                                                                                   \
  } while (0)

int main() {
  bool ok = true;
  // A 3 x 5 float matrix in a pitched allocation, through host rows of 8 floats.
  float host[3][8] = {}, back[3][8] = {};
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 5; ++c) host[r][c] = static_cast<float>(10 * r + c);
  float* matrix = nullptr;
  size_t pitch = 0;
  CHECK(cudaMallocPitch(reinterpret_cast<void**>(&matrix), &pitch, 5 * sizeof(float), 3));
  CHECK(cudaMemcpy2D(matrix, pitch, host, sizeof(host[0]), 5 * sizeof(float), 3,
                     cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy2DAsync(back, sizeof(back[0]), matrix, pitch, 5 * sizeof(float), 3,
                          cudaMemcpyDeviceToHost, nullptr));
  CHECK(cudaStreamSynchronize(nullptr));
  ok &= pitch % 512 == 0 && std::memcmp(host, back, sizeof(host)) == 0;
  std::printf("pitch %zu, row 2: %.0f %.0f %.0f %.0f %.0f\n", pitch, back[2][0], back[2][1],
              back[2][2], back[2][3], back[2][4]);
  ok &=
      cudaMemcpy2D(matrix, 4, host, 32, 8, 1, cudaMemcpyHostToDevice) == cudaErrorInvalidPitchValue;

  // A __device__ array through its symbol.
  const float values[4] = {0.5f, 1.5f, 2.5f, 3.5f};
  float read[2] = {};
  size_t size = 0;
  void* address = nullptr;
  CHECK(cudaMemcpyToSymbol(scale, values, sizeof(values)));
  CHECK(cudaMemcpyFromSymbol(read, scale, sizeof(read), 2 * sizeof(float)));
  CHECK(cudaGetSymbolSize(&size, scale));
  CHECK(cudaGetSymbolAddress(&address, scale));
  float via_address = 0;
  CHECK(cudaMemcpy(&via_address, static_cast<float*>(address) + 1, sizeof(float),
                   cudaMemcpyDeviceToHost));
  ok &= read[0] == 2.5f && read[1] == 3.5f && size == sizeof(values) && via_address == 1.5f;
  std::printf("symbol: size %zu, [2..3] %.1f %.1f, [1] %.1f\n", size, read[0], read[1],
              via_address);
  ok &= cudaMemcpyToSymbol(scale, values, sizeof(values), 4) == cudaErrorInvalidValue;

  // Stream-ordered allocation from the default pool and from a pool of one's own.
  cudaMemPool_t pool = nullptr;
  CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
  std::uint64_t threshold = UINT64_MAX, used = 0;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  void* a = nullptr;
  CHECK(cudaMallocAsync(&a, 1 << 20, nullptr));
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  ok &= used == (1 << 20);
  std::printf("default pool: %llu bytes used\n", static_cast<unsigned long long>(used));
  CHECK(cudaFreeAsync(a, nullptr));
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t mine = nullptr;
  CHECK(cudaMemPoolCreate(&mine, &props));
  void* b = nullptr;
  CHECK(cudaMallocFromPoolAsync(&b, 4096, mine, nullptr));
  std::uint64_t high = 0;
  CHECK(cudaMemPoolGetAttribute(mine, cudaMemPoolAttrUsedMemHigh, &high));
  CHECK(cudaFreeAsync(b, nullptr));
  CHECK(cudaMemPoolGetAttribute(mine, cudaMemPoolAttrUsedMemCurrent, &used));
  ok &= high == 4096 && used == 0;
  std::printf("own pool: high %llu, now %llu\n", static_cast<unsigned long long>(high),
              static_cast<unsigned long long>(used));
  void* outlives = nullptr;  // an allocation stays valid after its pool is destroyed
  CHECK(cudaMallocFromPoolAsync(&outlives, 256, mine, nullptr));
  CHECK(cudaMemPoolDestroy(mine));
  CHECK(cudaFreeAsync(outlives, nullptr));
  ok &= cudaMemPoolDestroy(pool) == cudaErrorInvalidValue;  // a default pool stays
  CHECK(cudaFree(matrix));
  // Zeroing gives whole pages back and a copy from never-written memory zeroes its
  // destination (runtime.cc): what reads back is what CUDA would give, page edges included.
  {
    constexpr size_t kBytes = 1 << 20;
    std::vector<unsigned char> host(kBytes, 0xab), back(kBytes);
    unsigned char *written = nullptr, *fresh = nullptr;
    CHECK(cudaMalloc(&written, kBytes));
    CHECK(cudaMalloc(&fresh, kBytes));
    CHECK(cudaMemcpy(written, host.data(), kBytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(written + 1000, 0, 300000));  // unaligned at both ends
    CHECK(cudaMemcpy(back.data(), written, kBytes, cudaMemcpyDeviceToHost));
    bool zeroed = true;
    for (size_t i = 0; i < kBytes; ++i) zeroed &= back[i] == (i >= 1000 && i < 301000 ? 0 : 0xab);
    CHECK(cudaMemcpy(written + 7, fresh, 500000, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(back.data(), written, kBytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < kBytes; ++i)
      zeroed &= back[i] == (i >= 7 && i < 500007 ? 0 : i >= 1000 && i < 301000 ? 0 : 0xab);
    ok &= zeroed;
    std::printf("zeroed and copied from fresh memory: %s\n", zeroed ? "as written" : "MISMATCH");
    CHECK(cudaFree(written));
    CHECK(cudaFree(fresh));
  }
  // More than the GPU holds fails as CUDA's does (SIZE_MAX used to round to 0 and succeed).
  void* huge = nullptr;
  const cudaError_t too_big = cudaMalloc(&huge, SIZE_MAX);
  const cudaError_t petabyte = cudaMalloc(&huge, size_t{1} << 50);
  ok &= too_big == cudaErrorMemoryAllocation && petabyte == cudaErrorMemoryAllocation;
  std::printf("cudaMalloc(SIZE_MAX): %s\n", cudaGetErrorName(too_big));
  (void)cudaGetLastError();
  std::printf("memory apis: %s\n", ok ? "ok" : "MISMATCH");
  return ok ? 0 : 1;
}
