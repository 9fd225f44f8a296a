// Kernels whose work is counted by hand in kernel_code_test.cc: the patterns of real CUDA C
// trainers (grid-stride loops, shared-memory reductions, tensor-core tiles, seeded
// stochastic rounding, loops bounded by data, geometric loops, asynchronous and bulk (TMA)
// copies). Compiled to PTX and into an object at build time; never run.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_pipeline.h>
#include <mma.h>

#include <cuda/ptx>

// Grid-stride: per element two 4-byte loads, one 4-byte store, one FMA.
__global__ void saxpy(int n, float a, const float* x, float* y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = a * x[i] + y[i];
}

// Shared-memory tree reduction over a block of BLOCK threads, then one atomic per block.
template <int BLOCK>
__global__ void block_sum(const float* in, float* out, long n) {
  __shared__ float partial[BLOCK];
  float sum = 0;
  for (long i = blockIdx.x * (long)BLOCK + threadIdx.x; i < n; i += (long)BLOCK * gridDim.x)
    sum += in[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
#pragma unroll
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, partial[0]);
}
template __global__ void block_sum<256>(const float*, float*, long);

// One warp per 16x16 tile of C = A B (row-major half A, column-major half B, float C).
__global__ void wmma_gemm(const __half* a, const __half* b, float* c, int m, int n, int k) {
  using namespace nvcuda;
  const int tile_m = blockIdx.y * 16, tile_n = blockIdx.x * 16;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int kk = 0; kk < k; kk += 16) {
    wmma::load_matrix_sync(fa, a + tile_m * k + kk, k);
    wmma::load_matrix_sync(fb, b + tile_n * k + kk, k);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c + tile_m * n + tile_n, acc, n, wmma::mem_row_major);
}

// Stochastic rounding to BF16 with a per-rank seed (the pattern of CUDA C GPT-2 trainers'
// AdamW): the seed goes through a hash, never into a loop bound or a guard.
__device__ unsigned int noise(unsigned int x, unsigned int y, unsigned int seed) {
  unsigned int h = x * 0x8da6b343u + y * 0xd8163841u + seed;
  h ^= h >> 13;
  h *= 0x27d4eb2du;
  return h ^ (h >> 16);
}
__global__ void adamw_rounding(__nv_bfloat16* params, float* master, const float* grads, float* m,
                               float* v, size_t n, float lr, float beta1, float beta2,
                               unsigned int seed) {
  const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = grads[i];
  const float mi = beta1 * m[i] + (1 - beta1) * g;
  const float vi = beta2 * v[i] + (1 - beta2) * g * g;
  m[i] = mi;
  v[i] = vi;
  const float p = master[i] - lr * mi / (sqrtf(vi) + 1e-8f);
  master[i] = p;
  const unsigned int r = noise(threadIdx.x, blockIdx.x, seed);
  const float rounded = p + (r & 0xffff) * 1e-12f;
  params[i] = __float2bfloat16_rn(rounded);
}

// A row loop whose length is read from memory (CSR rows): no extent bounds it.
__global__ void csr_row_sums(const int* row_start, const float* values, float* sums, int rows) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  float s = 0;
  for (int j = row_start[row]; j < row_start[row + 1]; ++j) s += values[j];
  sums[row] = s;
}

// A branch on a rank-dependent flag that is an extent: the work differs by its value.
__global__ void scale_first(float* x, int n, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count && i < n) x[i] *= 2.0f;
}

// Geometric loops nvcc cannot unroll (their bounds are the launch's): a tree reduction over a
// block of any size, and loops whose variable halves or doubles, each reading one element a
// trip so the trip count shows in the bytes.
__global__ void tree_sum(const float* in, float* out, int n) {
  extern __shared__ float partial[];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  partial[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}
__global__ void halving_reads(const float* in, float* out) {
  float acc = 0;
  for (int s = blockDim.x / 2; s > 0; s /= 2) acc += in[s];
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
__global__ void doubling_reads(const float* in, float* out, int n) {
  float acc = 0;
  for (long s = 1; s < n; s <<= 1) acc += in[s];
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
// Signed halving to zero: nvcc rounds towards zero with a sign bias, (s + (s >> 31)) >> 1.
__global__ void signed_halving_reads(const float* in, float* out, int n) {
  float acc = 0;
  for (int s = n; s != 0; s /= 2) acc += in[s];
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
// Geometric loops whose start is data: read from memory, or hashed from a per-rank seed.
__global__ void data_halving(const unsigned* start, float* out, unsigned seed) {
  float acc = 0;
  for (unsigned s = start[blockIdx.x]; s > 0; s >>= 1) acc += out[s];
  for (unsigned s = noise(threadIdx.x, blockIdx.x, seed); s > 0; s >>= 2) acc += out[s & 1023];
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// Ampere's asynchronous copy: 16 bytes a thread into shared memory, then 4 bytes stored.
__global__ void async_copy(const float4* in, float* out) {
  __shared__ float4 tile[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  __pipeline_memcpy_async(&tile[threadIdx.x], &in[i], sizeof(float4));
  __pipeline_commit();
  __pipeline_wait_prior(0);
  out[i] = tile[threadIdx.x].x + tile[threadIdx.x].w;
}

// Bulk copies of explicit size, issued by one thread of the block: 4096 bytes in (completing
// on an mbarrier told to expect them), one float a thread out, n floats back out in bulk.
namespace ptx = cuda::ptx;
__global__ void bulk_copy(const float* in, float* out, int n) {
  __shared__ alignas(128) float tile[1024];
  __shared__ alignas(8) cuda::std::uint64_t bar;
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&bar, 1);
    ptx::fence_proxy_async(ptx::space_shared);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar,
                                   sizeof(tile));
    ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, tile, in + blockIdx.x * 1024,
                       sizeof(tile), &bar);
  }
  while (!ptx::mbarrier_try_wait_parity(&bar, 0)) {
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = tile[threadIdx.x];
  __syncthreads();
  if (threadIdx.x == 0) {
    ptx::fence_proxy_async(ptx::space_shared);
    ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, out + blockIdx.x * 1024, tile, n * 4);
    ptx::cp_async_bulk_commit_group();
    ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>());
  }
}

// Tensor-map (TMA) copies: `tiles` 64x32 float boxes in, each announced to the mbarrier by
// expect_tx (8192 bytes), one float a thread out, and the last box stored back through the
// tensor map (a size the code does not show).
__global__ void tma_tiles(const __grid_constant__ CUtensorMap map, float* out, int tiles) {
  __shared__ alignas(128) float tile[64 * 32];
  __shared__ alignas(8) cuda::std::uint64_t bar;
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&bar, 1);
    ptx::fence_proxy_async(ptx::space_shared);
  }
  __syncthreads();
  float acc = 0;
  for (int t = 0; t < tiles; ++t) {
    if (threadIdx.x == 0) {
      const int c[2] = {t * 32, static_cast<int>(blockIdx.x) * 64};
      ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, tile, &map, c, &bar);
      ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar,
                                     sizeof(tile));
    }
    while (!ptx::mbarrier_try_wait_parity(&bar, t & 1)) {
    }
    acc += tile[threadIdx.x];
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
  if (threadIdx.x == 0) {
    ptx::fence_proxy_async(ptx::space_shared);
    const int c[2] = {0, static_cast<int>(blockIdx.x) * 64};
    ptx::cp_async_bulk_tensor(ptx::space_global, ptx::space_shared, &map, c, tile);
    ptx::cp_async_bulk_commit_group();
    ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>());
  }
}

// A branch and a loop on data that only the upper half of each block reaches: a thread of
// the lower half, the first sampled, sees neither.
__global__ void upper_half_lookup(const int* flags, const int* counts, float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || threadIdx.x < blockDim.x / 2) return;
  if (flags[i]) x[i] *= 2.0f;
  float s = 0;
#pragma unroll 1
  for (int j = 0; j < counts[i]; ++j) s += x[j];
  x[i] += s;
}

// A warp-shuffle reduction (unrolled) whose first lane of each warp stores the warp's sum.
__global__ void warp_sums(const float* in, float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = in[i];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) out[i / 32] = v;
}

// Elected threads: thread 0 of block 0 writes a flag; thread 0 of each block, of each of the
// first `count` blocks, and every thread of the last block a float.
__global__ void grid_flags(float* out, int* done, int count) {
  if (threadIdx.x == 0) {
    if (blockIdx.x == 0) *done = 1;
    out[blockIdx.x] = 1.0f;
  }
  if (blockIdx.x == gridDim.x - 1) out[gridDim.x + threadIdx.x] = 2.0f;
  if (threadIdx.x == 0 && blockIdx.x < count) out[2 * gridDim.x + blockIdx.x] = 3.0f;
}
