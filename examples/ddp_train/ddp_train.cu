// ddp_train: a data-parallel MLP trainer, shaped like a DDP training step.
//
// Each process drives one GPU and holds a full replica of an MLP of `--layers` square layers
// (hidden x hidden, bf16 weights with fp32 master copies). One step:
//   forward   per layer: cuBLASLt GEMM (bf16 in, fp32 compute), GeLU kernel (not after the last)
//   loss      MSE kernel against a fixed target, producing the output gradient
//   backward  per layer, last to first: weight-gradient GEMM, then (overlapped, on the NCCL
//             stream) that layer's gradient AllReduce, then the data-gradient GEMM and GeLU'
//   optimizer Adam (or SGD) kernel, after every gradient bucket has been reduced
// Steps are timed with events recorded on the legacy default stream (stream 0), which the two
// blocking streams synchronise with, so each event pair brackets the whole step.
#include "../common/example_common.h"
#include "../common/kernels.cuh"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <nvtx3/nvToolsExt.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#define CUBLASCHECK(call)                                                           \
  do {                                                                              \
    cublasStatus_t ex_st_ = (call);                                                 \
    if (ex_st_ != CUBLAS_STATUS_SUCCESS)                                            \
      ex::die(__FILE__, __LINE__, #call, cublasLtGetStatusString(ex_st_));          \
  } while (0)

namespace {

using ex::bf16;
using ex::kThreads;

struct Options {
  int hidden = 4096;
  int layers = 4;
  int batch = 8192;  // tokens per GPU per step
  int steps = 10;
  float lr = 1e-3f;
  bool adam = true;
  bool overlap = true;
  int workspace_mib = 32;
  int checkpoint_every = 0;  // steps; 0: never
};

void usage(FILE* out) {
  std::fprintf(out,
      "usage: ddp_train [flags]\n"
      "  --hidden N       hidden size; every layer is N x N (default 4096)\n"
      "  --layers N       number of layers, one gradient bucket each (default 4)\n"
      "  --batch N        tokens per GPU per step (default 8192)\n"
      "  --steps N        training steps (default 10)\n"
      "  --lr X           learning rate (default 1e-3)\n"
      "  --optimizer O    adam|sgd (default adam)\n"
      "  --overlap 0|1    1: reduce each bucket as soon as its gradient exists (default);\n"
      "                   0: reduce all buckets after the backward pass\n"
      "  --workspace MiB  cuBLASLt workspace (default 32)\n"
      "  --checkpoint-every N  rank 0 copies the fp32 master weights to the host every N\n"
      "                   steps, as trainers that save checkpoints from rank 0 do (default 0: never)\n"
      "  -h, --help       this text\n"
      "One GPU per process; ranks from RANK/WORLD_SIZE/LOCAL_RANK (torchrun), OMPI_COMM_WORLD_*\n"
      "(mpirun) or SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID (srun). The NCCL id travels through\n"
      "MYRIAD_EXAMPLE_ID_FILE (default: a file in /tmp named after MASTER_PORT).\n");
}

// ---------------------------------------------------------------------------------------------
// Optimizer kernels (the activation and loss kernels are in common/kernels.cuh).

// Adam on fp32 master weights; the bf16 copy used by the GEMMs is refreshed from the master.
__global__ void adam_step(float* master, float* m, float* v, const bf16* grad, bf16* w, long long n, float lr,
                          float beta1, float beta2, float eps, float bias1, float bias2) {
  EX_GRID_STRIDE(i, n) {
    const float g = __bfloat162float(grad[i]);
    const float mi = beta1 * m[i] + (1.0f - beta1) * g;
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float p = master[i] - lr * (mi / bias1) / (sqrtf(vi / bias2) + eps);
    master[i] = p;
    w[i] = __float2bfloat16(p);
  }
}

__global__ void sgd_step(float* master, const bf16* grad, bf16* w, long long n, float lr) {
  EX_GRID_STRIDE(i, n) {
    const float p = master[i] - lr * __bfloat162float(grad[i]);
    master[i] = p;
    w[i] = __float2bfloat16(p);
  }
}

// ---------------------------------------------------------------------------------------------
// A cuBLASLt GEMM D = op(A) * op(B), column-major, bf16 matrices, fp32 accumulation, with the
// algorithm picked once by the heuristic (all layers share the three shapes).
struct Gemm {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

Gemm make_gemm(cublasLtHandle_t lt, cublasLtMatmulPreference_t pref, cublasOperation_t ta, cublasOperation_t tb,
               uint64_t m, uint64_t n, uint64_t k) {
  Gemm g;
  CUBLASCHECK(cublasLtMatmulDescCreate(&g.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CUBLASCHECK(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CUBLASCHECK(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  // Layouts describe the matrices as stored (before the transpose).
  const bool na = ta == CUBLAS_OP_N, nb = tb == CUBLAS_OP_N;
  CUBLASCHECK(cublasLtMatrixLayoutCreate(&g.a, CUDA_R_16BF, na ? m : k, na ? k : m, static_cast<int64_t>(na ? m : k)));
  CUBLASCHECK(cublasLtMatrixLayoutCreate(&g.b, CUDA_R_16BF, nb ? k : n, nb ? n : k, static_cast<int64_t>(nb ? k : n)));
  CUBLASCHECK(cublasLtMatrixLayoutCreate(&g.d, CUDA_R_16BF, m, n, static_cast<int64_t>(m)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  CUBLASCHECK(cublasLtMatmulAlgoGetHeuristic(lt, g.desc, g.a, g.b, g.d, g.d, pref, 1, &result, &found));
  if (found == 0) ex::fail("cublasLtMatmulAlgoGetHeuristic found no algorithm for this GEMM");
  g.algo = result.algo;
  return g;
}

void destroy_gemm(Gemm& g) {
  CUBLASCHECK(cublasLtMatrixLayoutDestroy(g.a));
  CUBLASCHECK(cublasLtMatrixLayoutDestroy(g.b));
  CUBLASCHECK(cublasLtMatrixLayoutDestroy(g.d));
  CUBLASCHECK(cublasLtMatmulDescDestroy(g.desc));
}

struct Ctx {
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  cudaStream_t stream = nullptr;
};

void run_gemm(const Ctx& c, const Gemm& g, const bf16* A, const bf16* B, bf16* D) {
  const float alpha = 1.0f, beta = 0.0f;
  CUBLASCHECK(cublasLtMatmul(c.lt, g.desc, &alpha, A, g.a, B, g.b, &beta, D, g.d, D, g.d, &g.algo, c.workspace,
                             c.workspace_bytes, c.stream));
}

template <typename T>
T* device_alloc(size_t count) {
  T* p = nullptr;
  CUDACHECK(cudaMalloc(&p, count * sizeof(T)));
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  ex::parse_flags(argc, argv, usage, [&](const std::string& f, const std::string& v) {
    if (f == "--hidden") o.hidden = ex::parse_int(f, v, 8, 1 << 17);
    else if (f == "--layers") o.layers = ex::parse_int(f, v, 1, 4096);
    else if (f == "--batch") o.batch = ex::parse_int(f, v, 1, 1 << 24);
    else if (f == "--steps") o.steps = ex::parse_int(f, v, 1, 1 << 20);
    else if (f == "--lr") o.lr = static_cast<float>(ex::parse_double(f, v, 0.0, 10.0));
    else if (f == "--optimizer") {
      if (v != "adam" && v != "sgd") ex::bad_value(f, v);
      o.adam = v == "adam";
    } else if (f == "--overlap") o.overlap = ex::parse_int(f, v, 0, 1) == 1;
    else if (f == "--workspace") o.workspace_mib = ex::parse_int(f, v, 0, 4096);
    else if (f == "--checkpoint-every") o.checkpoint_every = ex::parse_int(f, v, 0, 1 << 20);
    else return false;
    return true;
  });

  const ex::Launch launch = ex::launch_from_env();
  const int rank = launch.rank, world = launch.size;
  if (world > 1) ex::g_rank = rank;
  const int device = ex::pick_device(launch.local_rank, 1, 0);
  CUDACHECK(cudaSetDevice(device));
  int sm_count = 0;
  CUDACHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));

  const ncclUniqueId id = ex::exchange_unique_id("ddp_train", rank, world);
  ncclComm_t comm = nullptr;
  NCCLCHECK(ncclCommInitRank(&comm, world, id, rank));
  ex::remove_id_file("ddp_train", rank, world);

  // Two blocking streams (not cudaStreamNonBlocking): compute and communication run
  // concurrently with each other, while work on stream 0 waits for both, which is what makes
  // the step events on stream 0 bracket the whole step. The gradient stream gets the higher
  // priority, as DDP implementations do, so reductions are not starved by the GEMMs.
  int prio_low = 0, prio_high = 0;
  CUDACHECK(cudaDeviceGetStreamPriorityRange(&prio_low, &prio_high));
  cudaStream_t compute = nullptr, comm_stream = nullptr;
  CUDACHECK(cudaStreamCreate(&compute));
  CUDACHECK(cudaStreamCreateWithPriority(&comm_stream, cudaStreamDefault, prio_high));

  const long long H = o.hidden, B = o.batch, L = o.layers;
  const long long act = H * B;  // elements of one activation, column-major [hidden x batch]
  const long long wsz = H * H;  // elements of one layer's weight
  const long long params = wsz * L;

  // Activations: X[i] is layer i's input, Y[i] its output before the activation.
  std::vector<bf16*> X(static_cast<size_t>(L)), Y(static_cast<size_t>(L));
  for (long long i = 0; i < L; ++i) {
    X[static_cast<size_t>(i)] = device_alloc<bf16>(static_cast<size_t>(act));
    Y[static_cast<size_t>(i)] = device_alloc<bf16>(static_cast<size_t>(act));
  }
  bf16* target = device_alloc<bf16>(static_cast<size_t>(act));
  bf16* grad_a = device_alloc<bf16>(static_cast<size_t>(act));  // gradient w.r.t. a layer's output
  bf16* grad_b = device_alloc<bf16>(static_cast<size_t>(act));  // gradient w.r.t. a layer's input
  // Parameters flat, layer after layer: one bucket is one layer's slice.
  bf16* weights = device_alloc<bf16>(static_cast<size_t>(params));
  bf16* grads = device_alloc<bf16>(static_cast<size_t>(params));
  float* master = device_alloc<float>(static_cast<size_t>(params));
  float* adam_m = o.adam ? device_alloc<float>(static_cast<size_t>(params)) : nullptr;
  float* adam_v = o.adam ? device_alloc<float>(static_cast<size_t>(params)) : nullptr;
  float* losses = device_alloc<float>(static_cast<size_t>(o.steps));

  const unsigned grid_act = ex::grid_for(act, kThreads, sm_count);
  const unsigned grid_par = ex::grid_for(params, kThreads, sm_count);
  // Same initial weights on every rank (same seed), different data per rank.
  ex::init_uniform<<<grid_par, kThreads, 0, compute>>>(weights, master, params, 1.0f / std::sqrt(static_cast<float>(H)), 1);
  KERNELCHECK(ex::init_uniform);
  ex::init_uniform<<<grid_act, kThreads, 0, compute>>>(X[0], nullptr, act, 1.0f, 100u + static_cast<unsigned>(rank));
  KERNELCHECK(ex::init_uniform);
  ex::init_uniform<<<grid_act, kThreads, 0, compute>>>(target, nullptr, act, 0.5f, 200u + static_cast<unsigned>(rank));
  KERNELCHECK(ex::init_uniform);
  if (o.adam) {
    CUDACHECK(cudaMemsetAsync(adam_m, 0, static_cast<size_t>(params) * sizeof(float), compute));
    CUDACHECK(cudaMemsetAsync(adam_v, 0, static_cast<size_t>(params) * sizeof(float), compute));
  }
  CUDACHECK(cudaMemsetAsync(losses, 0, static_cast<size_t>(o.steps) * sizeof(float), compute));

  Ctx ctx;
  ctx.stream = compute;
  ctx.workspace_bytes = static_cast<size_t>(o.workspace_mib) << 20;
  if (ctx.workspace_bytes > 0) CUDACHECK(cudaMalloc(&ctx.workspace, ctx.workspace_bytes));
  CUBLASCHECK(cublasLtCreate(&ctx.lt));
  cublasLtMatmulPreference_t pref = nullptr;
  CUBLASCHECK(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t ws = ctx.workspace_bytes;
  CUBLASCHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  const uint64_t h = static_cast<uint64_t>(H), b = static_cast<uint64_t>(B);
  Gemm fwd = make_gemm(ctx.lt, pref, CUBLAS_OP_N, CUBLAS_OP_N, h, b, h);    // Y  = W X
  Gemm wgrad = make_gemm(ctx.lt, pref, CUBLAS_OP_N, CUBLAS_OP_T, h, h, b);  // dW = dY X^T
  Gemm dgrad = make_gemm(ctx.lt, pref, CUBLAS_OP_T, CUBLAS_OP_N, h, b, h);  // dX = W^T dY

  std::vector<cudaEvent_t> grad_ready(static_cast<size_t>(L));
  for (cudaEvent_t& e : grad_ready) CUDACHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  cudaEvent_t backward_done = nullptr, reduced = nullptr;
  CUDACHECK(cudaEventCreateWithFlags(&backward_done, cudaEventDisableTiming));
  CUDACHECK(cudaEventCreateWithFlags(&reduced, cudaEventDisableTiming));
  std::vector<cudaEvent_t> step_start(static_cast<size_t>(o.steps)), step_end(static_cast<size_t>(o.steps));
  for (int s = 0; s < o.steps; ++s) {
    CUDACHECK(cudaEventCreate(&step_start[static_cast<size_t>(s)]));
    CUDACHECK(cudaEventCreate(&step_end[static_cast<size_t>(s)]));
  }
  CUDACHECK(cudaDeviceSynchronize());  // set-up is not part of any step

  if (rank == 0) {
    std::printf("ddp_train: %d rank(s), MLP %d x (%d x %d), batch %d tokens/GPU, %s, %s, %.1f M parameters\n", world,
                o.layers, o.hidden, o.hidden, o.batch, o.adam ? "adam" : "sgd",
                o.overlap ? "bucketed AllReduce overlapping backward" : "AllReduce after backward",
                static_cast<double>(params) / 1e6);
    std::fflush(stdout);
  }

  auto bucket = [&](long long i) { return grads + i * wsz; };
  auto allreduce_bucket = [&](long long i) {
    NCCLCHECK(ncclAllReduce(bucket(i), bucket(i), static_cast<size_t>(wsz), ncclBfloat16, ncclAvg, comm, comm_stream));
  };

  // The step number in managed memory, as CUDA C trainers keep small host-written state the
  // kernels may read; freed with cudaFree at the end.
  int* managed_step = nullptr;
  CUDACHECK(cudaMallocManaged(&managed_step, sizeof(int)));

  // Rank 0's checkpoint buffer (pinned, as checkpoint writers stage through).
  float* checkpoint = nullptr;
  if (rank == 0 && o.checkpoint_every > 0)
    CUDACHECK(cudaMallocHost(&checkpoint, static_cast<size_t>(params) * sizeof(float)));

  double total_ms = 0.0;
  for (int step = 0; step < o.steps; ++step) {
    // An NVTX mark at each step boundary: a profiler shows it, and Myriad takes it as an
    // iteration boundary (a no-op when no tool is attached). The step is also an NVTX range
    // named "Train step N", as trainers name theirs (myriad run --iteration-marker "Train step").
    nvtxMarkA("iteration");
    char range[32];
    std::snprintf(range, sizeof range, "Train step %d", step);
    nvtxRangePushA(range);
    *managed_step = step;
    CUDACHECK(cudaEventRecord(step_start[static_cast<size_t>(step)], 0));

    // Forward.
    for (long long i = 0; i < L; ++i) {
      const size_t u = static_cast<size_t>(i);
      run_gemm(ctx, fwd, weights + i * wsz, X[u], Y[u]);
      if (i + 1 < L) {
        ex::gelu_forward<<<grid_act, kThreads, 0, compute>>>(Y[u], X[u + 1], act);
        KERNELCHECK(ex::gelu_forward);
      }
    }
    ex::mse_loss<<<grid_act, kThreads, 0, compute>>>(Y[static_cast<size_t>(L - 1)], target, grad_a, losses + step, act,
                                                 1.0f / static_cast<float>(act));
    KERNELCHECK(ex::mse_loss);

    // Backward, last layer first. grad_a holds dL/dY[i] on entry to iteration i.
    for (long long i = L - 1; i >= 0; --i) {
      const size_t u = static_cast<size_t>(i);
      run_gemm(ctx, wgrad, grad_a, X[u], bucket(i));
      if (o.overlap) {  // this bucket is ready: reduce it while the backward pass goes on
        CUDACHECK(cudaEventRecord(grad_ready[u], compute));
        CUDACHECK(cudaStreamWaitEvent(comm_stream, grad_ready[u], 0));
        allreduce_bucket(i);
      }
      if (i > 0) {
        run_gemm(ctx, dgrad, weights + i * wsz, grad_a, grad_b);
        ex::gelu_backward<<<grid_act, kThreads, 0, compute>>>(grad_b, Y[u - 1], grad_a, act);
        KERNELCHECK(ex::gelu_backward);
      }
    }
    if (!o.overlap) {
      CUDACHECK(cudaEventRecord(backward_done, compute));
      CUDACHECK(cudaStreamWaitEvent(comm_stream, backward_done, 0));
      for (long long i = L - 1; i >= 0; --i) allreduce_bucket(i);
    }

    // The optimizer needs every bucket reduced.
    CUDACHECK(cudaEventRecord(reduced, comm_stream));
    CUDACHECK(cudaStreamWaitEvent(compute, reduced, 0));
    if (o.adam) {
      const float bias1 = 1.0f - std::pow(0.9f, static_cast<float>(step + 1));
      const float bias2 = 1.0f - std::pow(0.999f, static_cast<float>(step + 1));
      adam_step<<<grid_par, kThreads, 0, compute>>>(master, adam_m, adam_v, grads, weights, params, o.lr, 0.9f, 0.999f,
                                                    1e-8f, bias1, bias2);
      KERNELCHECK(adam_step);
    } else {
      sgd_step<<<grid_par, kThreads, 0, compute>>>(master, grads, weights, params, o.lr);
      KERNELCHECK(sgd_step);
    }

    // Only rank 0 saves: the other replicas hold the same weights.
    if (checkpoint != nullptr && (step + 1) % o.checkpoint_every == 0)
      CUDACHECK(cudaMemcpyAsync(checkpoint, master, static_cast<size_t>(params) * sizeof(float),
                                cudaMemcpyDeviceToHost, compute));

    CUDACHECK(cudaEventRecord(step_end[static_cast<size_t>(step)], 0));
    CUDACHECK(cudaEventSynchronize(step_end[static_cast<size_t>(step)]));
    float ms = 0.0f;
    CUDACHECK(cudaEventElapsedTime(&ms, step_start[static_cast<size_t>(step)], step_end[static_cast<size_t>(step)]));
    if (step > 0 || o.steps == 1) total_ms += ms;
    nvtxRangePop();
    if (rank == 0) {
      std::printf("step %d: %.3f ms\n", step, static_cast<double>(ms));
      std::fflush(stdout);
    }
  }
  nvtxMarkA("iteration");  // closes the last step

  // The losses come back through a pinned staging buffer.
  float* host_losses = nullptr;
  CUDACHECK(cudaMallocHost(&host_losses, static_cast<size_t>(o.steps) * sizeof(float)));
  CUDACHECK(cudaMemcpy(host_losses, losses, static_cast<size_t>(o.steps) * sizeof(float), cudaMemcpyDeviceToHost));
  if (rank == 0) {
    const int timed = o.steps > 1 ? o.steps - 1 : 1;
    const double mean_ms = total_ms / timed;
    const double flops = 6.0 * static_cast<double>(B) * static_cast<double>(params);  // fwd 2, bwd 4 per MAC
    std::printf("mean step time: %.3f ms\n", mean_ms);
    std::printf("throughput: %.1f TFLOP/s per GPU (GEMMs only), %.0f tokens/s in all\n",
                mean_ms > 0 ? flops / (mean_ms * 1e-3) / 1e12 : 0.0,
                mean_ms > 0 ? static_cast<double>(B) * world / (mean_ms * 1e-3) : 0.0);
    std::printf("loss (rank 0): step 0 %.6f, step %d %.6f\n", static_cast<double>(host_losses[0]), o.steps - 1,
                static_cast<double>(host_losses[o.steps - 1]));
  }
  CUDACHECK(cudaFreeHost(host_losses));
  if (checkpoint != nullptr) CUDACHECK(cudaFreeHost(checkpoint));
  CUDACHECK(cudaFree(managed_step));

  // Tear down.
  destroy_gemm(fwd);
  destroy_gemm(wgrad);
  destroy_gemm(dgrad);
  CUBLASCHECK(cublasLtMatmulPreferenceDestroy(pref));
  CUBLASCHECK(cublasLtDestroy(ctx.lt));
  NCCLCHECK(ncclCommFinalize(comm));
  NCCLCHECK(ncclCommDestroy(comm));
  for (cudaEvent_t e : grad_ready) CUDACHECK(cudaEventDestroy(e));
  for (int s = 0; s < o.steps; ++s) {
    CUDACHECK(cudaEventDestroy(step_start[static_cast<size_t>(s)]));
    CUDACHECK(cudaEventDestroy(step_end[static_cast<size_t>(s)]));
  }
  CUDACHECK(cudaEventDestroy(backward_done));
  CUDACHECK(cudaEventDestroy(reduced));
  for (size_t i = 0; i < X.size(); ++i) {
    CUDACHECK(cudaFree(X[i]));
    CUDACHECK(cudaFree(Y[i]));
  }
  for (void* p : {static_cast<void*>(target), static_cast<void*>(grad_a), static_cast<void*>(grad_b),
                  static_cast<void*>(weights), static_cast<void*>(grads), static_cast<void*>(master),
                  static_cast<void*>(adam_m), static_cast<void*>(adam_v), static_cast<void*>(losses), ctx.workspace})
    if (p != nullptr) CUDACHECK(cudaFree(p));
  CUDACHECK(cudaStreamDestroy(compute));
  CUDACHECK(cudaStreamDestroy(comm_stream));
  return 0;
}
