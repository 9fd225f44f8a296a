// A data-parallel trainer in the style of hand-written CUDA C GPT-2 trainers: its own kernels
// (an embedding-style gather, a GELU, a gradient scatter with atomics, AdamW with stochastic
// rounding to BF16), a per-rank random seed that changes every step and goes to the kernels
// as an `unsigned int`, gradients averaged by ncclAllReduce, and step times from CUDA events.
// One GPU per process, the device picked by LOCAL_RANK (torchrun, Open MPI or Slurm).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <string>
#include <vector>

#include "../common/example_common.h"

namespace {

constexpr int kThreads = 256;

__device__ unsigned int hash_noise(unsigned int x, unsigned int y, unsigned int seed) {
  unsigned int h = x * 0x8da6b343u + y * 0xd8163841u + seed;
  h ^= h >> 13;
  h *= 0x27d4eb2du;
  return h ^ (h >> 16);
}

// out[t, c] = table[tokens[t], c] for T tokens of C channels, with a dropout-style mask from
// the seed.
__global__ void embed_forward(float* out, const int* tokens, const float* table, int T, int C,
                              unsigned int seed) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < (long)T * C;
       i += (long)blockDim.x * gridDim.x) {
    const int t = static_cast<int>(i / C), c = static_cast<int>(i % C);
    const float keep = (hash_noise(t, c, seed) & 1023u) < 1000u ? 1.0f : 0.0f;
    out[i] = table[(long)tokens[t] * C + c] * keep;
  }
}

__global__ void gelu_forward(float* out, const float* in, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
       i += (long)blockDim.x * gridDim.x) {
    const float x = in[i];
    out[i] = 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
  }
}

// Gradient of the table: each token's row gets its output gradient (atomics, as trainers do).
__global__ void embed_backward(float* dtable, const float* dout, const int* tokens, int T, int C,
                               unsigned int seed) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < (long)T * C;
       i += (long)blockDim.x * gridDim.x) {
    const int t = static_cast<int>(i / C), c = static_cast<int>(i % C);
    const float keep = (hash_noise(t, c, seed) & 1023u) < 1000u ? 1.0f : 0.0f;
    atomicAdd(&dtable[(long)tokens[t] * C + c], dout[i] * keep);
  }
}

// AdamW on FP32 master weights, written back to BF16 with stochastic rounding.
__global__ void adamw_stochastic(__nv_bfloat16* params, float* master, const float* grads, float* m,
                                 float* v, size_t n, float lr, float beta1, float beta2,
                                 float scale, unsigned int seed) {
  const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = grads[i] * scale;
  const float mi = beta1 * m[i] + (1 - beta1) * g;
  const float vi = beta2 * v[i] + (1 - beta2) * g * g;
  m[i] = mi;
  v[i] = vi;
  const float p = master[i] - lr * (mi / (sqrtf(vi) + 1e-8f) + 0.01f * master[i]);
  master[i] = p;
  const unsigned int r = hash_noise(threadIdx.x, blockIdx.x, seed);
  params[i] = __float2bfloat16_rn(p + ((r & 0xffffu) / 65536.0f - 0.5f) * 1e-3f * fabsf(p));
}

__global__ void fill_tokens(int* tokens, int T, int vocab, unsigned int seed) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < T) tokens[t] = static_cast<int>(hash_noise(t, 7, seed) % static_cast<unsigned>(vocab));
}

void usage(FILE* out) {
  std::fprintf(out,
               "usage: seeded_sgd [--vocab N] [--channels C] [--tokens T] [--steps S]\n"
               "One GPU per process; ranks from torchrun, Open MPI or Slurm variables.\n");
}

}  // namespace

int main(int argc, char** argv) {
  int vocab = 50304, channels = 768, tokens = 8192, steps = 3;
  ex::parse_flags(argc, argv, usage, [&](const std::string& f, const std::string& v) {
    if (f == "--vocab")
      vocab = ex::parse_int(f, v, 1, 1 << 22);
    else if (f == "--channels")
      channels = ex::parse_int(f, v, 1, 1 << 16);
    else if (f == "--tokens")
      tokens = ex::parse_int(f, v, 1, 1 << 24);
    else if (f == "--steps")
      steps = ex::parse_int(f, v, 1, 1 << 20);
    else
      return false;
    return true;
  });
  const ex::Launch launch = ex::launch_from_env();
  const int rank = launch.rank, world = launch.size;
  if (world > 1) ex::g_rank = rank;
  CUDACHECK(cudaSetDevice(ex::pick_device(launch.local_rank, 1, 0)));
  const ncclUniqueId id = ex::exchange_unique_id("seeded_sgd", rank, world);
  ncclComm_t comm = nullptr;
  NCCLCHECK(ncclCommInitRank(&comm, world, id, rank));
  ex::remove_id_file("seeded_sgd", rank, world);

  const long table = static_cast<long>(vocab) * channels,
             act = static_cast<long>(tokens) * channels;
  float *master = nullptr, *grads = nullptr, *m = nullptr, *v = nullptr, *x = nullptr, *y = nullptr;
  __nv_bfloat16* params = nullptr;
  int* tok = nullptr;
  CUDACHECK(cudaMalloc(&master, table * sizeof(float)));
  CUDACHECK(cudaMalloc(&grads, table * sizeof(float)));
  CUDACHECK(cudaMalloc(&m, table * sizeof(float)));
  CUDACHECK(cudaMalloc(&v, table * sizeof(float)));
  CUDACHECK(cudaMalloc(&params, table * sizeof(__nv_bfloat16)));
  CUDACHECK(cudaMalloc(&x, act * sizeof(float)));
  CUDACHECK(cudaMalloc(&y, act * sizeof(float)));
  CUDACHECK(cudaMallocManaged(&tok, tokens * sizeof(int)));
  cudaStream_t stream = nullptr;
  CUDACHECK(cudaStreamCreate(&stream));
  cudaEvent_t start = nullptr, stop = nullptr;
  CUDACHECK(cudaEventCreate(&start));
  CUDACHECK(cudaEventCreate(&stop));
  const unsigned grid_act = static_cast<unsigned>((act + kThreads - 1) / kThreads);
  const unsigned grid_table = static_cast<unsigned>((table + kThreads - 1) / kThreads);
  if (rank == 0)
    std::printf("seeded_sgd: %d rank(s), table %d x %d, %d tokens per rank\n", world, vocab,
                channels, tokens);
  for (int step = 0; step < steps; ++step) {
    // A seed per rank and step, as trainers draw them for dropout and stochastic rounding.
    const unsigned int seed = 1337u + 7919u * static_cast<unsigned>(rank) + 104729u * step;
    CUDACHECK(cudaEventRecord(start, stream));
    fill_tokens<<<(tokens + kThreads - 1) / kThreads, kThreads, 0, stream>>>(tok, tokens, vocab,
                                                                             seed);
    KERNELCHECK(fill_tokens);
    embed_forward<<<grid_act, kThreads, 0, stream>>>(x, tok, master, tokens, channels, seed);
    KERNELCHECK(embed_forward);
    gelu_forward<<<grid_act, kThreads, 0, stream>>>(y, x, act);
    KERNELCHECK(gelu_forward);
    CUDACHECK(cudaMemsetAsync(grads, 0, table * sizeof(float), stream));
    embed_backward<<<grid_act, kThreads, 0, stream>>>(grads, y, tok, tokens, channels, seed);
    KERNELCHECK(embed_backward);
    NCCLCHECK(ncclAllReduce(grads, grads, table, ncclFloat, ncclSum, comm, stream));
    adamw_stochastic<<<grid_table, kThreads, 0, stream>>>(params, master, grads, m, v, table, 3e-4f,
                                                          0.9f, 0.95f, 1.0f / world, seed);
    KERNELCHECK(adamw_stochastic);
    CUDACHECK(cudaEventRecord(stop, stream));
    CUDACHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDACHECK(cudaEventElapsedTime(&ms, start, stop));
    std::printf("rank %d step %d: %.3f ms\n", rank, step, static_cast<double>(ms));
  }
  NCCLCHECK(ncclCommDestroy(comm));
  return 0;
}
