// Kernels whose work is counted by hand in kernel_code_test.cc: the patterns of real CUDA C
// trainers (grid-stride loops, shared-memory reductions, tensor-core tiles, seeded
// stochastic rounding, loops bounded by data). Compiled to PTX and into an object at build
// time; never run.
#include <cuda_bf16.h>
#include <mma.h>

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
__global__ void adamw_rounding(__nv_bfloat16* params, float* master, const float* grads,
                               float* m, float* v, size_t n, float lr, float beta1,
                               float beta2, unsigned int seed) {
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
