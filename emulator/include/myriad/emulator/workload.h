// Synthetic LLM training workloads (`myriad simulate`): a transformer and how it is trained
// ([workload] in a scenario, docs/scenarios.md), and the op streams a Megatron-style framework
// would run for it on every rank, generated lazily.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "myriad/emulator/op.h"
#include "myriad/emulator/op_source.h"
#include "myriad/netmodel/cluster.h"
#include "myriad/status.h"

namespace myriad::emulator {

enum class Activation { kGelu, kSwiglu };
// Activation recomputation: kSelective recomputes the attention core (Korthikanti et al.,
// 2022; Megatron's), kFull each layer's forward, kSelectiveOp every op of a layer but every
// second matmul (torchtitan's op-level selective checkpointing: the outputs of the other
// matmuls and of attention are kept, the elementwise ops rerun).
enum class Recompute { kNone, kSelective, kFull, kSelectiveOp };
// How a layer's elementwise and normalisation work reaches the GPU: as the fused kernels of
// Megatron with Transformer Engine (kFused), or one PyTorch kernel per op, as eager PyTorch
// runs torchtitan's model (kEager; docs/workloads.md, "Eager kernels").
enum class LayerKernels { kFused, kEager };
// How FP8 training scales its tensors: from past iterations' amaxes (Transformer Engine's
// DelayedScaling, its default), or from each tensor's own amax, found in a pass before its
// cast (TE's Float8CurrentScaling, Megatron-Bridge's FP8-CS recipes; torchao's dynamic
// tensorwise float8, torchtitan's). docs/workloads.md, "FP8 training".
enum class Fp8Scaling { kDelayed, kCurrent };

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
  // Dropout in training (attention probabilities and the two hidden-state dropouts): Megatron-LM's
  // GPT defaults (0.1 each) keep their masks for the backward; Llama trains without.
  bool dropout = false;

  // Mixture of experts: `experts` = 0 is a dense model. An MoE layer replaces the MLP with a
  // router over `experts` experts of inner size `moe_ffn` (same activation as the MLP), each
  // token sent to `top_k` of them, plus an always-on shared expert of inner size
  // `moe_shared_ffn` (DeepSeek; 0: none). Layers from `moe_first_dense` on, every
  // `moe_every`-th, are MoE (DeepSeek's first_k_dense_replace, Megatron's moe_layer_freq).
  // `moe_capacity_factor` scales the tokens each expert processes relative to even routing:
  // 1 is perfectly balanced dropless routing, 1.25 a padded capacity (or the slowest
  // expert's imbalance).
  int experts = 0;
  int top_k = 0;
  int moe_ffn = 0;
  int moe_shared_ffn = 0;
  int moe_first_dense = 0;
  int moe_every = 1;
  double moe_capacity_factor = 1.0;

  bool is_moe() const { return experts > 0; }
  // Whether layer `layer` (0-based) is an MoE layer.
  bool IsMoeLayer(int layer) const {
    return is_moe() && layer >= moe_first_dense && (layer - moe_first_dense) % moe_every == 0;
  }
  int moe_layers() const;
};

// The parallel axes a rank has coordinates on. EP is carved out of DP (Megatron before MoE
// parallel folding): the dp data-parallel replicas of the dense layers are ep expert-parallel
// ranks times dp / ep expert-data-parallel replicas ("edp", called "dp" in an order string).
enum Axis { kTpAxis = 0, kCpAxis, kEpAxis, kEdpAxis, kPpAxis, kAxes };
using AxisOrder = std::array<Axis, kAxes>;
// Megatron's default, fastest first: tp, cp, ep, dp, pp.
constexpr AxisOrder kMegatronOrder = {kTpAxis, kCpAxis, kEpAxis, kEdpAxis, kPpAxis};

struct ParallelSpec {
  int tp = 1;
  int pp = 1;
  int dp = 0;  // 0: world size / (tp x cp x pp)
  int cp = 1;  // context parallelism: the sequence split over cp ranks (ring attention)
  int ep = 1;  // expert parallelism: the experts split over ep of the dp replicas
  // Interleaved 1F1B: each stage holds this many model chunks (Megatron's virtual pipeline
  // stages); 1 is the plain 1F1B schedule.
  int virtual_stages = 1;
  // Uneven pipelines (Megatron's decoder_first/last_pipeline_num_layers): the first and last
  // stages hold this many layers and the others split the rest evenly; 0 splits evenly. With
  // virtual stages, the first and last virtual stages (chunk 0 of stage 0, chunk v - 1 of the
  // last stage).
  int first_stage_layers = 0;
  int last_stage_layers = 0;
  bool sequence_parallel = false;
  // ZeRO-1 (Megatron's distributed optimizer): optimizer state sharded over DP; gradients
  // reduce-scattered and updated weights all-gathered instead of one AllReduce.
  bool distributed_optimizer = false;
  // ZeRO-2 (with distributed_optimizer): gradients sharded over DP too. Each unit's gradients
  // are reduce-scattered into the shards after every micro-batch's backward (there is no
  // whole gradient buffer to accumulate into) and only one unit's whole gradients exist at a
  // time; weights stay whole, gathered after the optimizer step as with ZeRO-1.
  bool shard_gradients = false;
  // TP collectives overlapped with the GEMMs next to them (Transformer Engine's userbuffers);
  // needs sequence_parallel.
  bool tp_comm_overlap = false;
  // Who overlaps them: Transformer Engine's userbuffers (false) overlap every TP collective;
  // PyTorch's async TP (true; Inductor's micro-pipelining pass) only those that a matmul feeds
  // or consumes directly, which leaves the backward's reduce-scatter of the column-parallel
  // layers' summed input gradients on the compute stream.
  bool tp_comm_overlap_pytorch = false;
  // ZeRO-3 / FSDP: weights, gradients and optimizer state sharded over the data-parallel
  // group; each layer's weights all-gathered before its forward and again before its
  // backward, its gradients reduce-scattered after every micro-batch's backward.
  bool fsdp = false;
  // FSDP's sharding is per parameter (PyTorch's FSDP2, torchtitan's): each all-gather's input
  // is copied in from the parameters' shards and its output copied out to the parameters, and
  // each reduce-scatter's input copied in from the gradients (cast to the reduce type), where
  // a flat layout (FSDP1's FlatParameter, Megatron-FSDP's buffers) gathers and reduces in
  // place. Needs fsdp.
  bool fsdp_per_parameter = false;
  // FSDP2's reshard_after_forward: true frees each layer's gathered weights after its forward
  // and gathers them again for its backward; false keeps them until the backward is done
  // (torchtitan's choice under pipeline parallelism). Needs fsdp.
  bool fsdp_reshard_after_forward = true;
  // How ranks (and GPUs) are numbered: the axes, fastest-varying first. Megatron's default
  // puts TP fastest so that a TP group shares a node's NVLink.
  AxisOrder order = kMegatronOrder;

  // Ranks over which a dense (non-expert) weight is replicated: dp x cp.
  int dense_shards(int dp_size) const { return dp_size * cp; }
  // ... and an expert weight: dp / ep x cp.
  int expert_shards(int dp_size) const { return dp_size / ep * cp; }
};

struct TrainingSpec {
  int micro_batch = 1;   // sequences per micro-batch
  int global_batch = 0;  // sequences per iteration (gradient accumulation follows)
  DataType precision = DataType::kBfloat16;
  Recompute recompute = Recompute::kNone;
  LayerKernels kernels = LayerKernels::kFused;
  bool overlap_grad_reduce = true;  // DP gradient reduction overlapped with the backward
  // Interleaved 1F1B's pipeline sends and receives on their own stream, overlapped with the
  // compute of the other direction; a forward (backward) waits only for the latest batch of
  // activations (gradients). Megatron-LM's overlap_p2p_comm, on by default for interleaved
  // schedules; the plain 1F1B schedule ignores it, as Megatron's does.
  bool overlap_p2p_comm = true;
  // Parameter all-gathers (the distributed optimizer's updated weights, FSDP's per-layer
  // gathers) on a side stream, each started while the layer before it computes.
  bool overlap_param_gather = false;
  // FP8 training whose linear layers' weights are FP8 tensors (Megatron's fp8_param_gather,
  // on in Megatron-Bridge's FP8 recipes): the distributed optimizer or FSDP gathers them as
  // FP8 (1 B a parameter), the layers keep no BF16 copy beside the FP8 one and its transpose,
  // and the per-iteration weight cast only transposes. Needs precision = fp8.
  bool fp8_param_gather = false;
  Fp8Scaling fp8_scaling = Fp8Scaling::kDelayed;  // needs precision = fp8 to be kCurrent
  // Fused (FlashAttention-style) attention, or the unfused kind that materialises the
  // sequence x sequence scores (QK^T GEMM, softmax and dropout over them, AV GEMM), as
  // Megatron-LM ran before FlashAttention (2022).
  bool flash_attention = true;
  // The type gradients accumulate and reduce in over data parallelism, which is also the
  // gradient buffer's: fp32 is Megatron-LM's with --bf16 (arguments.py turns on
  // accumulate_allreduce_grads_in_fp32 unless --grad-reduce-in-bf16) and NeMo's
  // (grad_reduce_in_fp32 = True); bf16 halves the bytes.
  DataType grad_reduce_dtype = DataType::kFloat32;
  // How the model FLOPs behind TFLOP/s and MFU count the attention core (Q K^T and scores x V)
  // of a causal model: over the full s x s square, 4 s h FLOPs per token and layer forward, as
  // Megatron-LM (Narayanan et al. 2021, eq. 3), PaLM's MFU and torchtitan count it (false); or
  // over the causal half that is computed, 2 s h, as FlashAttention's papers count it (true).
  bool causal_attention_flops = false;
  // Which fused kernel (op.h's AttentionKernel; kDefault: the GPU's usual one).
  AttentionKernel attention_kernel = AttentionKernel::kDefault;
  int iterations = 1;
};

struct WorkloadSpec {
  ModelSpec model;
  ParallelSpec parallel;
  TrainingSpec training;

  // Checks sizes against each other and the cluster; the message names the key relative to
  // [workload] ("heads (96) is not divisible by parallel.tp (5)"). Sizes positive; hidden a
  // multiple of heads, heads of kv_heads; heads, kv_heads, ffn and the expert sizes divisible
  // by tp; layers over the stages (and virtual stages); experts by ep, dp by ep; tp x cp x pp
  // x dp (dp given or derived) = world_size; global_batch divisible by dp x micro_batch;
  // interleaving needs micro-batches a multiple of pp; cp needs flash attention and a sequence
  // divisible by 2 cp; precision bf16 or fp8.
  Status Validate(int world_size) const;
  // Micro-batches per iteration on each pipeline (global batch / (dp x micro batch)); needs
  // parallel.dp set (a loaded Scenario has it), 0 while it is 0.
  int micro_batches() const;
  // parallel.dp, or world_size / (tp x cp x pp) when it is 0.
  int data_parallel(int world_size) const;
  // The layers pipeline stage `stage` holds in model chunk `chunk` (interleaved 1F1B gives
  // each stage parallel.virtual_stages chunks, chunk c of stage s being virtual stage
  // c pp + s): [first, end).
  std::pair<int, int> ChunkLayers(int stage, int chunk) const;
  // Layers of a stage over all its chunks.
  int StageLayers(int stage) const;
  // Parameters of the whole model, counted from the shapes (spec.cc says how; for GPT models
  // Megatron's 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h)) plus the final LayerNorm).
  double parameters() const;
  // Parameters of one expert (its MLP matrices); all experts of all MoE layers are
  // experts x moe_layers times this, the rest of parameters() is dense.
  double expert_parameters() const;
  // Parameters of layer `layer` outside its routed experts (attention, norms, biases, the
  // dense MLP or the router and shared expert).
  double layer_dense_parameters(int layer) const;
  // Parameters a token passes through (the top_k experts instead of all of them): what the
  // FLOP count and "active parameters" use.
  double active_parameters() const;
  // FLOPs per iteration (global_batch sequences) as Megatron counts them (Narayanan et al.,
  // SC'21, eq. 3, generalised to GQA, SwiGLU and routed experts from the GEMM shapes),
  // including the forward work recomputed under training.recompute: full recomputation gives
  // eq. 3, 96 B s l h^2 (1 + s/(6h) + V/(16 l h)); none 72 B s l h^2 (1 + s/(6h) +
  // V/(12 l h)); selective adds the recomputed attention core (4 B s^2 h l) to none.
  double iteration_flops() const;
  // The same under another recomputation setting; iteration_flops(Recompute::kNone) is the
  // model FLOPs that MFU divides by.
  double iteration_flops(Recompute recompute) const;

  // What one GPU of pipeline stage `stage` holds, in bytes (`world_size` gives dp when
  // parallel.dp is 0). Megatron's mixed-precision Adam: bf16 weights (2 B per parameter),
  // fp32 gradient buffers (4 B), fp32 master weights and two moments (12 B, divided by the
  // data-parallel shards, dp x cp, under the distributed optimizer; expert weights by
  // dp / ep x cp). FSDP shards all three and adds two layers of gathered bf16 weights.
  // Activations kept per micro-batch until its backward, per layer in bytes per token and
  // hidden unit (Korthikanti et al. 2022, table 2), over the seq / cp tokens a rank holds: 2
  // under full recomputation (divided by tp with sequence parallelism); else 10 + 24 / tp, or
  // 34 / tp with sequence parallelism, plus 5 a s / (h tp) when unfused attention keeps the
  // s x s scores; an MoE layer's expert activations scale with top_k x capacity factor.
  struct RankMemory {
    double weights = 0;
    double gradients = 0;
    double optimizer = 0;
    double activations_per_micro_batch = 0;  // all of the stage's layers
    // What is in flight at once: stage s of 1F1B holds min(pp - s, micro-batches)
    // micro-batches; interleaved, min(m v, 2 (pp - s - 1) + (v - 1) pp + 1) model chunks.
    double peak_activations = 0;
    int in_flight = 0;  // micro-batches (or chunks, interleaved) held at the peak
    double peak() const { return weights + gradients + optimizer + peak_activations; }
  };
  RankMemory rank_memory(int world_size, int stage = 0) const;
  // The stage whose GPUs hold the most (the first, unless experts or uneven stages say
  // otherwise).
  int fullest_stage(int world_size) const;
  // Activation bytes one micro-batch leaves on a rank for layers [first, end).
  double activation_bytes(int first, int end) const;
};

// Parses "tp-cp-ep-dp-pp" (the axes fastest first; tp, dp and pp each once, cp and ep at most
// once, in Megatron's place when left out), or says what is wrong.
Result<AxisOrder> ParseRankOrder(const std::string& text);
// "tp-cp-ep-dp-pp".
std::string ToString(const AxisOrder& order);

// A named model (gpt3-175b, llama3-8b, llama3-70b, llama3-405b, mixtral-8x7b,
// deepseek-v3-like, the Megatron SC'21 rows as megatron-1.7b ... megatron-1008b), or an error
// listing the names.
Result<ModelSpec> FindModelPreset(const std::string& name);

// The op streams of every rank for `spec` on all of `cluster`'s GPUs. With
// `fold_data_parallel`, one data-parallel replica is simulated and the data-parallel
// collectives are timed on every replica's GPUs (replicas run identical op streams).
// `spec` and `cluster` must outlive the workload.
Result<std::unique_ptr<Workload>> MakeSyntheticWorkload(const WorkloadSpec& spec,
                                                        const netmodel::Cluster& cluster,
                                                        bool fold_data_parallel);

}  // namespace myriad::emulator
