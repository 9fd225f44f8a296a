// Small element-wise kernels shared by ddp_train and tp_pp_toy: deterministic initialisation,
// GeLU forward/backward and a mean-squared-error loss. All use grid-stride loops, so any grid
// size is correct; launch them with kThreads threads per block. Include this header from one
// translation unit per program (the kernels are defined here).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace ex {

using bf16 = __nv_bfloat16;
constexpr int kThreads = 256;

#define EX_GRID_STRIDE(i, n)                                                                   \
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<long long>(gridDim.x) * blockDim.x)

__device__ inline float hash_uniform(unsigned long long i, unsigned seed) {  // splitmix64 -> [-1, 1)
  unsigned long long z = i + 0x9E3779B97F4A7C15ULL * (seed + 1ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

// out[i] = scale * uniform(-1, 1), reproducible from (seed, i); optionally an fp32 copy too.
__global__ void init_uniform(bf16* out, float* master, long long n, float scale, unsigned seed) {
  EX_GRID_STRIDE(i, n) {
    const float v = scale * hash_uniform(static_cast<unsigned long long>(i), seed);
    out[i] = __float2bfloat16(v);
    if (master != nullptr) master[i] = v;
  }
}

constexpr float kGeluK = 0.7978845608f;  // sqrt(2/pi): tanh approximation of GeLU
constexpr float kGeluC = 0.044715f;

__global__ void gelu_forward(const bf16* y, bf16* x, long long n) {
  EX_GRID_STRIDE(i, n) {
    const float v = __bfloat162float(y[i]);
    x[i] = __float2bfloat16(0.5f * v * (1.0f + tanhf(kGeluK * (v + kGeluC * v * v * v))));
  }
}

// dy = dx * GeLU'(y): the gradient through the activation (dx and dy may alias).
__global__ void gelu_backward(const bf16* dx, const bf16* y, bf16* dy, long long n) {
  EX_GRID_STRIDE(i, n) {
    const float v = __bfloat162float(y[i]);
    const float t = tanhf(kGeluK * (v + kGeluC * v * v * v));
    const float d = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * kGeluK * (1.0f + 3.0f * kGeluC * v * v);
    dy[i] = __float2bfloat16(__bfloat162float(dx[i]) * d);
  }
}

// Mean squared error: writes d(loss)/d(out) and adds this block's share of the loss to *loss.
// Needs blockDim.x == kThreads.
__global__ void mse_loss(const bf16* out, const bf16* target, bf16* grad, float* loss, long long n, float inv_n) {
  __shared__ float partial[kThreads];
  float sum = 0.0f;
  EX_GRID_STRIDE(i, n) {
    const float diff = __bfloat162float(out[i]) - __bfloat162float(target[i]);
    grad[i] = __float2bfloat16(2.0f * diff * inv_n);
    sum += diff * diff;
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(loss, partial[0] * inv_n);
}

}  // namespace ex
