// tp_pp_toy: tensor + pipeline + data parallelism on a toy MLP, the way Megatron-style trainers
// lay them out.
//
// world = TP x PP x DP, one GPU per process, ranks ordered TP fastest, then PP, then DP. One
// global communicator (ncclCommInitRank) is split (ncclCommSplit) into TP groups, PP groups
// (consecutive stages talk through send/recv) and DP groups.
//
// Each pipeline stage holds `--blocks` Megatron MLP blocks, split over TP: a column-parallel
// GEMM (hidden -> ffn/TP), GeLU, a row-parallel GEMM (ffn/TP -> hidden) whose partial sums are
// combined with a TP AllReduce (or, with --tp-comm allgather, sequence parallelism: AllGather
// before the block and ReduceScatter after it). A training iteration runs M micro-batches
// through the stages with the 1F1B schedule, then AllReduces the gradients over DP and takes
// an SGD step. Iterations are timed with events on stream 0; rank 0 prints them together with
// the pipeline bubble fraction (p-1)/(m+p-1) that the schedule implies.
#include "../common/example_common.h"
#include "../common/kernels.cuh"

#include <cublas_v2.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#define CUBLASCHECK(call)                                                           \
  do {                                                                              \
    cublasStatus_t ex_st_ = (call);                                                 \
    if (ex_st_ != CUBLAS_STATUS_SUCCESS)                                            \
      ex::die(__FILE__, __LINE__, #call, cublasGetStatusString(ex_st_));            \
  } while (0)

namespace {

using ex::bf16;
using ex::kThreads;

struct Options {
  int tp = 1, pp = 1, dp = 0;  // dp 0: whatever the world size leaves
  int hidden = 4096;
  int ffn = 0;                 // 0: 4 x hidden
  int blocks = 2;              // MLP blocks per pipeline stage
  int micro_batches = 8;
  int mb_tokens = 1024;
  int iters = 5;
  bool sequence_parallel = false;
  float lr = 1e-4f;
};

void usage(FILE* out) {
  std::fprintf(out,
      "usage: tp_pp_toy [flags]\n"
      "  --tp N              tensor-parallel size (default 1)\n"
      "  --pp N              pipeline stages (default 1)\n"
      "  --dp N              data-parallel size (default: world size / (tp x pp))\n"
      "  --hidden N          hidden size (default 4096)\n"
      "  --ffn N             MLP inner size, split over TP (default 4 x hidden)\n"
      "  --blocks N          MLP blocks per stage (default 2)\n"
      "  --micro-batches N   micro-batches per iteration, the m of the 1F1B schedule (default 8)\n"
      "  --mb-tokens N       tokens per micro-batch (default 1024)\n"
      "  --iters N           training iterations (default 5)\n"
      "  --tp-comm MODE      allreduce (default) | allgather (sequence parallel: AllGather +\n"
      "                      ReduceScatter)\n"
      "  --lr X              SGD learning rate (default 1e-4)\n"
      "  -h, --help          this text\n"
      "Needs tp x pp x dp processes, one GPU each; ranks from RANK/WORLD_SIZE/LOCAL_RANK\n"
      "(torchrun), OMPI_COMM_WORLD_* (mpirun) or SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID (srun).\n"
      "The NCCL id travels through MYRIAD_EXAMPLE_ID_FILE (default: a file in /tmp named after\n"
      "MASTER_PORT).\n");
}

__global__ void sgd_bf16(bf16* w, const float* grad, long long n, float lr) {
  EX_GRID_STRIDE(i, n) { w[i] = __float2bfloat16(__bfloat162float(w[i]) - lr * grad[i]); }
}

template <typename T>
T* device_alloc(long long count) {
  T* p = nullptr;
  CUDACHECK(cudaMalloc(&p, static_cast<size_t>(count) * sizeof(T)));
  return p;
}

// One pipeline stage on one rank: its weight shards, saved activations and communicators.
struct Stage {
  // Shape.
  long long h = 0, f = 0;  // hidden, ffn / tp
  long long T = 0, Tl = 0; // tokens per micro-batch; tokens held locally (T / tp with SP)
  int blocks = 0, slots = 0;
  bool sp = false;
  int pp_rank = 0, pp = 1;
  // Handles.
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  ncclComm_t tp_comm = nullptr, pp_comm = nullptr, dp_comm = nullptr;
  unsigned grid = 1;
  // Parameters: block j's W1 [f x h] then W2 [h x f], column-major; fp32 gradients alike.
  bf16* weights = nullptr;
  float* grads = nullptr;
  long long params = 0;
  // Per in-flight micro-batch (slot): local inputs of each block plus the stage output
  // (blocks + 1 of [h x Tl]), full block inputs ([h x T], the same buffers without SP),
  // pre-activations and activations ([f x T]).
  std::vector<std::vector<bf16*>> in_local, in_full, pre, post;
  // Scratch shared by all micro-batches (used strictly in stream order).
  bf16 *gathered = nullptr, *partial = nullptr, *dact = nullptr;  // [h x T], [h x T], [f x T]
  bf16 *dout = nullptr, *g0 = nullptr, *g1 = nullptr;             // [h x Tl]
  bf16* target = nullptr;                                         // [h x Tl], last stage
  float* loss = nullptr;

  bf16* w1(int j) const { return weights + 2LL * j * h * f; }
  bf16* w2(int j) const { return w1(j) + h * f; }
  float* dw1(int j) const { return grads + 2LL * j * h * f; }
  float* dw2(int j) const { return dw1(j) + h * f; }

  // C (m x n) = op(A) op(B) + beta C, bf16 inputs, fp32 accumulation, packed leading dims.
  void gemm(cublasOperation_t ta, cublasOperation_t tb, long long m, long long n, long long k, const bf16* A,
            const bf16* B, void* C, cudaDataType_t ctype, float beta) const {
    const float alpha = 1.0f;
    CUBLASCHECK(cublasGemmEx(blas, ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), &alpha, A,
                             CUDA_R_16BF, static_cast<int>(ta == CUBLAS_OP_N ? m : k), B, CUDA_R_16BF,
                             static_cast<int>(tb == CUBLAS_OP_N ? k : n), &beta, C, ctype, static_cast<int>(m),
                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

  // Combine a block's row-parallel partial sums: AllReduce in place, or ReduceScatter to the
  // local token slice with sequence parallelism.
  void tp_reduce(bf16* partial_full, bf16* out_local) const {
    if (sp) NCCLCHECK(ncclReduceScatter(partial_full, out_local, static_cast<size_t>(h * Tl), ncclBfloat16, ncclSum,
                                        tp_comm, stream));
    else NCCLCHECK(ncclAllReduce(partial_full, out_local, static_cast<size_t>(h * T), ncclBfloat16, ncclSum, tp_comm,
                                 stream));
  }

  void forward(int slot) const {
    const auto& in = in_local[static_cast<size_t>(slot)];
    for (int j = 0; j < blocks; ++j) {
      const size_t u = static_cast<size_t>(j);
      bf16* x = in_full[static_cast<size_t>(slot)][u];
      if (sp) NCCLCHECK(ncclAllGather(in[u], x, static_cast<size_t>(h * Tl), ncclBfloat16, tp_comm, stream));
      bf16* hpre = pre[static_cast<size_t>(slot)][u];
      bf16* act = post[static_cast<size_t>(slot)][u];
      gemm(CUBLAS_OP_N, CUBLAS_OP_N, f, T, h, w1(j), x, hpre, CUDA_R_16BF, 0.0f);  // column-parallel
      ex::gelu_forward<<<grid, kThreads, 0, stream>>>(hpre, act, f * T);
      KERNELCHECK(ex::gelu_forward);
      bf16* z = sp ? partial : in[u + 1];  // without SP the AllReduce works in place
      gemm(CUBLAS_OP_N, CUBLAS_OP_N, h, T, f, w2(j), act, z, CUDA_R_16BF, 0.0f);  // row-parallel
      tp_reduce(z, in[u + 1]);
    }
  }

  // Backward of one micro-batch, starting from `dout` (gradient of the stage output); returns
  // the buffer holding the gradient of the stage input. Weight gradients accumulate (beta 1).
  bf16* backward(int slot) const {
    bf16* cur = dout;
    for (int j = blocks - 1; j >= 0; --j) {
      const size_t u = static_cast<size_t>(j);
      bf16* dz = cur;
      if (sp) {
        NCCLCHECK(ncclAllGather(cur, gathered, static_cast<size_t>(h * Tl), ncclBfloat16, tp_comm, stream));
        dz = gathered;
      }
      bf16* x = in_full[static_cast<size_t>(slot)][u];
      bf16* hpre = pre[static_cast<size_t>(slot)][u];
      bf16* act = post[static_cast<size_t>(slot)][u];
      gemm(CUBLAS_OP_N, CUBLAS_OP_T, h, f, T, dz, act, dw2(j), CUDA_R_32F, 1.0f);  // dW2 += dZ A^T
      gemm(CUBLAS_OP_T, CUBLAS_OP_N, f, T, h, w2(j), dz, dact, CUDA_R_16BF, 0.0f); // dA = W2^T dZ
      ex::gelu_backward<<<grid, kThreads, 0, stream>>>(dact, hpre, dact, f * T);
      KERNELCHECK(ex::gelu_backward);
      gemm(CUBLAS_OP_N, CUBLAS_OP_T, f, h, T, dact, x, dw1(j), CUDA_R_32F, 1.0f);  // dW1 += dH X^T
      bf16* next = cur == g0 ? g1 : g0;
      bf16* dx = sp ? partial : next;
      gemm(CUBLAS_OP_T, CUBLAS_OP_N, h, T, f, w1(j), dact, dx, CUDA_R_16BF, 0.0f);   // dX = W1^T dH
      tp_reduce(dx, next);
      cur = next;
    }
    return cur;
  }

  // Pipeline point-to-point traffic: each call is one NCCL group, so a send to a neighbour and
  // a receive from it can't deadlock against each other.
  void p2p(bf16* send_buf, int send_peer, bf16* recv_buf, int recv_peer) const {
    const size_t n = static_cast<size_t>(h * Tl);
    NCCLCHECK(ncclGroupStart());
    if (send_buf != nullptr) NCCLCHECK(ncclSend(send_buf, n, ncclBfloat16, send_peer, pp_comm, stream));
    if (recv_buf != nullptr) NCCLCHECK(ncclRecv(recv_buf, n, ncclBfloat16, recv_peer, pp_comm, stream));
    NCCLCHECK(ncclGroupEnd());
  }
  bool first() const { return pp_rank == 0; }
  bool last() const { return pp_rank == pp - 1; }
  bf16* input(int slot) const { return in_local[static_cast<size_t>(slot)][0]; }
  bf16* output(int slot) const { return in_local[static_cast<size_t>(slot)][static_cast<size_t>(blocks)]; }

  void recv_forward(int slot) const { if (!first()) p2p(nullptr, 0, input(slot), pp_rank - 1); }
  void send_forward(int slot) const { if (!last()) p2p(output(slot), pp_rank + 1, nullptr, 0); }
  void send_backward(bf16* dx) const { if (!first()) p2p(dx, pp_rank - 1, nullptr, 0); }
  void recv_backward(int slot) const {  // the last stage makes its gradient from the loss
    if (!last()) { p2p(nullptr, 0, dout, pp_rank + 1); return; }
    ex::mse_loss<<<grid, kThreads, 0, stream>>>(output(slot), target, dout, loss, h * Tl, 1.0f / static_cast<float>(h * Tl));
    KERNELCHECK(ex::mse_loss);
  }
  void send_forward_recv_backward(int slot) const {
    if (last()) recv_backward(slot);
    else p2p(output(slot), pp_rank + 1, dout, pp_rank + 1);
  }
  void send_backward_recv_forward(bf16* dx, int next_slot) const {
    if (!first()) p2p(dx, pp_rank - 1, input(next_slot), pp_rank - 1);
  }

  // One iteration of the non-interleaved 1F1B schedule (as in Megatron-LM): warm-up forwards,
  // steady state of one forward and one backward, cool-down backwards.
  void one_f_one_b(int m) const {
    const int warmup = std::min(pp - pp_rank - 1, m);
    const int steady = m - warmup;
    auto slot = [&](int mb) { return mb % slots; };
    for (int i = 0; i < warmup; ++i) {
      recv_forward(slot(i));
      forward(slot(i));
      send_forward(slot(i));
    }
    if (steady > 0) recv_forward(slot(warmup));
    for (int i = 0; i < steady; ++i) {
      const int fwd = warmup + i;
      forward(slot(fwd));
      send_forward_recv_backward(slot(fwd));
      bf16* dx = backward(slot(i));
      if (i == steady - 1) send_backward(dx);
      else send_backward_recv_forward(dx, slot(fwd + 1));  // slot(fwd+1) == slot(i), now free
    }
    for (int i = 0; i < warmup; ++i) {
      const int bwd = steady + i;
      recv_backward(slot(bwd));
      send_backward(backward(slot(bwd)));
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  ex::parse_flags(argc, argv, usage, [&](const std::string& f, const std::string& v) {
    if (f == "--tp") o.tp = ex::parse_int(f, v, 1, 1 << 20);
    else if (f == "--pp") o.pp = ex::parse_int(f, v, 1, 1 << 20);
    else if (f == "--dp") o.dp = ex::parse_int(f, v, 1, 1 << 20);
    else if (f == "--hidden") o.hidden = ex::parse_int(f, v, 8, 1 << 17);
    else if (f == "--ffn") o.ffn = ex::parse_int(f, v, 8, 1 << 20);
    else if (f == "--blocks") o.blocks = ex::parse_int(f, v, 1, 1024);
    else if (f == "--micro-batches") o.micro_batches = ex::parse_int(f, v, 1, 1 << 16);
    else if (f == "--mb-tokens") o.mb_tokens = ex::parse_int(f, v, 1, 1 << 24);
    else if (f == "--iters") o.iters = ex::parse_int(f, v, 1, 1 << 20);
    else if (f == "--tp-comm") {
      if (v != "allreduce" && v != "allgather") ex::bad_value(f, v);
      o.sequence_parallel = v == "allgather";
    } else if (f == "--lr") o.lr = static_cast<float>(ex::parse_double(f, v, 0.0, 10.0));
    else return false;
    return true;
  });

  const ex::Launch launch = ex::launch_from_env();
  const int rank = launch.rank, world = launch.size;
  if (world > 1) ex::g_rank = rank;
  if (o.dp == 0) {
    if (world % (o.tp * o.pp) != 0)
      ex::fail("world size " + std::to_string(world) + " is not a multiple of tp x pp = " + std::to_string(o.tp * o.pp));
    o.dp = world / (o.tp * o.pp);
  }
  if (o.tp * o.pp * o.dp != world)
    ex::fail("tp x pp x dp = " + std::to_string(o.tp * o.pp * o.dp) + " but " + std::to_string(world) +
             " process(es) were launched (one per GPU)");
  if (o.ffn == 0) o.ffn = 4 * o.hidden;
  if (o.ffn % o.tp != 0) ex::fail("--ffn must be a multiple of --tp");
  if (o.sequence_parallel && o.mb_tokens % o.tp != 0) ex::fail("--tp-comm allgather needs --mb-tokens divisible by --tp");

  const int tp_rank = rank % o.tp;
  const int pp_rank = (rank / o.tp) % o.pp;
  const int dp_rank = rank / (o.tp * o.pp);

  const int device = ex::pick_device(launch.local_rank, 1, 0);
  CUDACHECK(cudaSetDevice(device));
  int sm_count = 0;
  CUDACHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));

  // One global communicator, split three ways. Colours name the group, keys order its ranks:
  // TP groups share (pp, dp), PP groups share (tp, dp) and are ordered by stage, DP groups
  // share (tp, pp).
  const ncclUniqueId id = ex::exchange_unique_id("tp_pp_toy", rank, world);
  ncclComm_t global = nullptr;
  NCCLCHECK(ncclCommInitRank(&global, world, id, rank));
  ex::remove_id_file("tp_pp_toy", rank, world);
  Stage st;
  NCCLCHECK(ncclCommSplit(global, rank / o.tp, tp_rank, &st.tp_comm, nullptr));
  NCCLCHECK(ncclCommSplit(global, dp_rank * o.tp + tp_rank, pp_rank, &st.pp_comm, nullptr));
  NCCLCHECK(ncclCommSplit(global, pp_rank * o.tp + tp_rank, dp_rank, &st.dp_comm, nullptr));

  // A blocking stream: stream 0, where the iteration events go, waits for its work.
  CUDACHECK(cudaStreamCreate(&st.stream));
  CUBLASCHECK(cublasCreate(&st.blas));
  CUBLASCHECK(cublasSetStream(st.blas, st.stream));

  st.h = o.hidden;
  st.f = o.ffn / o.tp;
  st.T = o.mb_tokens;
  st.sp = o.sequence_parallel;
  st.Tl = st.sp ? st.T / o.tp : st.T;
  st.blocks = o.blocks;
  st.pp_rank = pp_rank;
  st.pp = o.pp;
  // 1F1B keeps at most pp - stage micro-batches in flight on a stage.
  st.slots = std::min(o.micro_batches, o.pp - pp_rank);
  st.grid = ex::grid_for(st.f * st.T, kThreads, sm_count);
  st.params = 2LL * o.blocks * st.h * st.f;
  st.weights = device_alloc<bf16>(st.params);
  st.grads = device_alloc<float>(st.params);
  ex::init_uniform<<<st.grid, kThreads, 0, st.stream>>>(st.weights, nullptr, st.params, 0.02f,
                                                        static_cast<unsigned>(pp_rank * o.tp + tp_rank));
  KERNELCHECK(ex::init_uniform);
  for (int s = 0; s < st.slots; ++s) {
    std::vector<bf16*> in_local, in_full, pre, post;
    for (int j = 0; j <= o.blocks; ++j) in_local.push_back(device_alloc<bf16>(st.h * st.Tl));
    for (int j = 0; j < o.blocks; ++j) {
      in_full.push_back(st.sp ? device_alloc<bf16>(st.h * st.T) : in_local[static_cast<size_t>(j)]);
      pre.push_back(device_alloc<bf16>(st.f * st.T));
      post.push_back(device_alloc<bf16>(st.f * st.T));
    }
    // The first stage's input: fixed data per slot, different per DP rank.
    ex::init_uniform<<<st.grid, kThreads, 0, st.stream>>>(in_local[0], nullptr, st.h * st.Tl, 1.0f,
                                                          1000u + static_cast<unsigned>(dp_rank * 64 + s));
    KERNELCHECK(ex::init_uniform);
    st.in_local.push_back(in_local);
    st.in_full.push_back(in_full);
    st.pre.push_back(pre);
    st.post.push_back(post);
  }
  st.gathered = device_alloc<bf16>(st.h * st.T);
  st.partial = device_alloc<bf16>(st.h * st.T);
  st.dact = device_alloc<bf16>(st.f * st.T);
  st.dout = device_alloc<bf16>(st.h * st.Tl);
  st.g0 = device_alloc<bf16>(st.h * st.Tl);
  st.g1 = device_alloc<bf16>(st.h * st.Tl);
  st.target = device_alloc<bf16>(st.h * st.Tl);
  st.loss = device_alloc<float>(1);
  ex::init_uniform<<<st.grid, kThreads, 0, st.stream>>>(st.target, nullptr, st.h * st.Tl, 0.5f, 7u);
  KERNELCHECK(ex::init_uniform);

  std::vector<cudaEvent_t> start(static_cast<size_t>(o.iters)), stop(static_cast<size_t>(o.iters));
  for (size_t i = 0; i < start.size(); ++i) {
    CUDACHECK(cudaEventCreate(&start[i]));
    CUDACHECK(cudaEventCreate(&stop[i]));
  }
  CUDACHECK(cudaDeviceSynchronize());

  const double bubble = static_cast<double>(o.pp - 1) / (o.micro_batches + o.pp - 1);
  if (rank == 0) {
    std::printf("tp_pp_toy: world %d = tp %d x pp %d x dp %d; %d MLP block(s)/stage, hidden %d, ffn %d (%lld per TP "
                "rank), %d micro-batches x %d tokens, TP %s\n",
                world, o.tp, o.pp, o.dp, o.blocks, o.hidden, o.ffn, st.f, o.micro_batches, o.mb_tokens,
                st.sp ? "AllGather/ReduceScatter (sequence parallel)" : "AllReduce");
    std::fflush(stdout);
  }

  double total_ms = 0.0;
  for (int it = 0; it < o.iters; ++it) {
    nvtxMarkA("iteration");  // an iteration boundary for profilers (and Myriad's report)
    const size_t u = static_cast<size_t>(it);
    CUDACHECK(cudaEventRecord(start[u], 0));
    CUDACHECK(cudaMemsetAsync(st.grads, 0, static_cast<size_t>(st.params) * sizeof(float), st.stream));
    CUDACHECK(cudaMemsetAsync(st.loss, 0, sizeof(float), st.stream));
    st.one_f_one_b(o.micro_batches);
    // Data parallelism: average the gradients of replicas of this shard, then step.
    NCCLCHECK(ncclAllReduce(st.grads, st.grads, static_cast<size_t>(st.params), ncclFloat32, ncclAvg, st.dp_comm,
                            st.stream));
    sgd_bf16<<<ex::grid_for(st.params, kThreads, sm_count), kThreads, 0, st.stream>>>(st.weights, st.grads, st.params,
                                                                                      o.lr);
    KERNELCHECK(sgd_bf16);
    CUDACHECK(cudaEventRecord(stop[u], 0));
    CUDACHECK(cudaEventSynchronize(stop[u]));
    float ms = 0.0f;
    CUDACHECK(cudaEventElapsedTime(&ms, start[u], stop[u]));
    if (it > 0 || o.iters == 1) total_ms += ms;
    if (rank == 0) {
      std::printf("iter %d: %.3f ms\n", it, static_cast<double>(ms));
      std::fflush(stdout);
    }
  }
  nvtxMarkA("iteration");  // closes the last iteration
  if (rank == 0) {
    std::printf("mean iteration time: %.3f ms\n", total_ms / (o.iters > 1 ? o.iters - 1 : 1));
    std::printf("pipeline bubble fraction (p-1)/(m+p-1) = %d/%d = %.4f\n", o.pp - 1, o.micro_batches + o.pp - 1,
                bubble);
  }

  // Tear down: finalize every communicator together, then free.
  NCCLCHECK(ncclGroupStart());
  for (ncclComm_t c : {st.tp_comm, st.pp_comm, st.dp_comm, global}) NCCLCHECK(ncclCommFinalize(c));
  NCCLCHECK(ncclGroupEnd());
  for (ncclComm_t c : {st.tp_comm, st.pp_comm, st.dp_comm, global}) NCCLCHECK(ncclCommDestroy(c));
  CUBLASCHECK(cublasDestroy(st.blas));
  for (size_t i = 0; i < start.size(); ++i) {
    CUDACHECK(cudaEventDestroy(start[i]));
    CUDACHECK(cudaEventDestroy(stop[i]));
  }
  for (int s = 0; s < st.slots; ++s) {
    const size_t u = static_cast<size_t>(s);
    for (bf16* p : st.in_local[u]) CUDACHECK(cudaFree(p));
    for (int j = 0; j < o.blocks; ++j) {
      const size_t v = static_cast<size_t>(j);
      if (st.sp) CUDACHECK(cudaFree(st.in_full[u][v]));
      CUDACHECK(cudaFree(st.pre[u][v]));
      CUDACHECK(cudaFree(st.post[u][v]));
    }
  }
  for (void* p : {static_cast<void*>(st.weights), static_cast<void*>(st.grads), static_cast<void*>(st.gathered),
                  static_cast<void*>(st.partial), static_cast<void*>(st.dact), static_cast<void*>(st.dout),
                  static_cast<void*>(st.g0), static_cast<void*>(st.g1), static_cast<void*>(st.target),
                  static_cast<void*>(st.loss)})
    CUDACHECK(cudaFree(p));
  CUDACHECK(cudaStreamDestroy(st.stream));
  return 0;
}
