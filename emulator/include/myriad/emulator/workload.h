// Synthetic LLM training workloads (`myriad simulate`): a transformer and how it is trained
// ([workload] in a scenario, docs/scenarios.md), and the op streams a Megatron-style framework
// would run for it on every rank, generated lazily.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "myriad/emulator/op.h"
#include "myriad/emulator/op_source.h"
#include "myriad/netmodel/cluster.h"
#include "myriad/status.h"

namespace myriad::emulator {

enum class Activation { kGelu, kSwiglu };
enum class Recompute { kNone, kSelective, kFull };

struct ModelSpec {
  std::string preset;  // the preset it came from, or "" when written out
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;  // = heads without GQA
  int ffn = 0;       // MLP inner size (default 4 x hidden)
  Activation activation = Activation::kGelu;
  int vocab = 0;
  int seq = 0;
  bool tied_embeddings = false;
};

struct ParallelSpec {
  int tp = 1;
  int pp = 1;
  int dp = 0;  // 0: world size / (tp x pp)
  bool sequence_parallel = false;
  // ZeRO-1 (Megatron's distributed optimizer): optimizer state sharded over DP; gradients
  // reduce-scattered and updated weights all-gathered instead of one AllReduce.
  bool distributed_optimizer = false;
  // TP collectives overlapped with the GEMMs next to them (Transformer Engine's userbuffers);
  // needs sequence_parallel.
  bool tp_comm_overlap = false;
  // How ranks (and GPUs) are numbered: the axes, fastest-varying first. Megatron's default
  // puts TP fastest so that a TP group shares a node's NVLink.
  std::array<std::string, 3> order = {"tp", "dp", "pp"};
};

struct TrainingSpec {
  int micro_batch = 1;   // sequences per micro-batch
  int global_batch = 0;  // sequences per iteration (gradient accumulation follows)
  DataType precision = DataType::kBfloat16;
  Recompute recompute = Recompute::kNone;
  bool overlap_grad_reduce = true;  // DP gradient reduction overlapped with the backward
  // Fused (FlashAttention-style) attention, or the unfused kind that materialises the
  // sequence x sequence scores (QK^T GEMM, softmax and dropout over them, AV GEMM), as
  // Megatron-LM ran before FlashAttention (2022).
  bool flash_attention = true;
  int iterations = 1;
};

struct WorkloadSpec {
  ModelSpec model;
  ParallelSpec parallel;
  TrainingSpec training;

  // Checks sizes against each other and the cluster; the message names the key relative to
  // [workload] ("heads (96) is not divisible by parallel.tp (5)"). Sizes positive; hidden a
  // multiple of heads, heads of kv_heads; heads, kv_heads and ffn divisible by tp; layers by
  // pp; tp x pp x dp (dp given or derived) = world_size; global_batch divisible by
  // dp x micro_batch; precision bf16 or fp8.
  Status Validate(int world_size) const;
  // Micro-batches per iteration on each pipeline (global batch / (dp x micro batch)); needs
  // parallel.dp set (a loaded Scenario has it), 0 while it is 0.
  int micro_batches() const;
  // parallel.dp, or world_size / (tp x pp) when it is 0.
  int data_parallel(int world_size) const;
  // Parameters of the whole model, counted from the shapes (spec.cc says how; for GPT models
  // Megatron's 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h)) plus the final LayerNorm).
  double parameters() const;
  // FLOPs per iteration (global_batch sequences) as Megatron counts them (Narayanan et al.,
  // SC'21, eq. 3, generalised to GQA and SwiGLU from the GEMM shapes), including the forward
  // work recomputed under training.recompute: full recomputation gives eq. 3,
  // 96 B s l h^2 (1 + s/(6h) + V/(16 l h)); none 72 B s l h^2 (1 + s/(6h) + V/(12 l h));
  // selective adds the recomputed attention core (4 B s^2 h l) to none.
  double iteration_flops() const;
  // The same under another recomputation setting; iteration_flops(Recompute::kNone) is the
  // model FLOPs that MFU divides by.
  double iteration_flops(Recompute recompute) const;

  // What one GPU holds, in bytes, with the layers split evenly over the stages (`world_size`
  // gives dp when parallel.dp is 0). Megatron's mixed-precision Adam: bf16 weights (2 B per
  // parameter), fp32 gradient buffers (4 B), fp32 master weights and two moments (12 B,
  // divided by dp under the distributed optimizer). Activations kept per micro-batch until its
  // backward, per layer in bytes per token and hidden unit (Korthikanti et al. 2022, table 2):
  // 2 under full recomputation (divided by tp with sequence parallelism); else 10 + 24 / tp,
  // or 34 / tp with sequence parallelism, plus 5 a s / (h tp) when unfused attention keeps
  // the s x s scores.
  struct RankMemory {
    double weights = 0;
    double gradients = 0;
    double optimizer = 0;
    double activations_per_micro_batch = 0;
    // The first stage of 1F1B holds min(pp, micro-batches) micro-batches at once.
    double peak_activations = 0;
    double peak() const { return weights + gradients + optimizer + peak_activations; }
  };
  RankMemory rank_memory(int world_size) const;
};

// Whether `order` names tp, dp and pp once each (a valid ParallelSpec::order).
bool IsRankOrder(const std::array<std::string, 3>& order);

// A named model (gpt3-175b, llama3-8b, llama3-70b, llama3-405b, the Megatron SC'21 rows as
// megatron-1.7b ... megatron-1008b), or an error listing the names.
Result<ModelSpec> FindModelPreset(const std::string& name);

// The op streams of every rank for `spec` on all of `cluster`'s GPUs. With
// `fold_data_parallel`, one data-parallel replica is simulated and the data-parallel
// collectives are timed on every replica's GPUs (replicas run identical op streams).
// `spec` and `cluster` must outlive the workload.
Result<std::unique_ptr<Workload>> MakeSyntheticWorkload(const WorkloadSpec& spec,
                                                        const netmodel::Cluster& cluster,
                                                        bool fold_data_parallel);

}  // namespace myriad::emulator
