// The op streams of a Megatron-style training iteration, generated lazily per rank:
// tensor-parallel layers (column/row-parallel GEMMs with an AllReduce after each block),
// 1F1B pipeline schedule with send/recv between stages, data-parallel gradient AllReduce
// (bucketed per layer and overlapped with the last micro-batch's backward, if asked), an
// optimizer step. docs/workloads.md describes every op.
//
// Rank folding: data-parallel replicas run identical op streams, so by default one replica
// is simulated (its ranks placed on the GPUs of replica 0) and the data-parallel collectives
// are timed on all replicas' GPUs.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "myriad/emulator/workload.h"

namespace myriad::emulator {
namespace {

constexpr std::int32_t kComputeStream = 0;
constexpr std::int32_t kGradStream = 1;
constexpr std::int32_t kTpCommStream = 2;  // TP collectives overlapped with GEMMs
// Events of the TP overlap: the compute stream's state before the GEMM (fork) and the
// collective's end (join). Reused: a wait refers to the event's latest record.
constexpr std::int32_t kTpForkEvent = 1 << 21;
constexpr std::int32_t kTpJoinEvent = (1 << 21) + 1;
// The gradient stream's reductions are done (events 1..layers mark each layer's gradients).
constexpr std::int32_t kGradsReducedEvent = 1 << 20;

enum class Step : std::uint8_t {
  kRecvForward,
  kForward,
  kSendForward,
  kSendForwardRecvBackward,
  kBackward,
  kSendBackward,
  kSendBackwardRecvForward,
  kRecvBackward,
};

struct Dims {
  int tp, pp, dp, dp_sim;
};

// Coordinates on the parallel axes, indexed by Axis.
enum Axis { kTpAxis = 0, kDpAxis = 1, kPpAxis = 2 };
using Coord = std::array<int, 3>;

class SyntheticWorkload;

class RankSource : public OpSource {
 public:
  RankSource(const SyntheticWorkload& w, int rank);
  RankSource(const SyntheticWorkload& w, int rank, const Coord& coord);
  Result<bool> Next(Op& op) override;

 private:
  void Expand();  // fills buffer_ with the next step's ops
  void Forward(int micro_batch);
  void Backward(int micro_batch);
  void Layer(bool forward);
  void Gemm(const char* name, std::int64_t m, std::int64_t n, std::int64_t k);
  void Streaming(const char* name, double bytes);
  void Attention(bool backward);
  void RecordEvent(std::int32_t stream, std::int32_t event);
  void WaitEvent(std::int32_t stream, std::int32_t event);
  void Collective(std::int32_t stream, NameId comm, netmodel::CollectiveOp coll,
                  std::uint64_t count, DataType dtype);
  void GradientReduce(std::int32_t stream, double params);
  void TpCollective(netmodel::CollectiveOp coll);
  void ForkedTpCollective(netmodel::CollectiveOp coll);
  void GatherReceived();
  void TpGather();
  void TpReduce();
  void P2p(OpKind kind, int peer_stage);
  void Group(const std::vector<std::pair<OpKind, int>>& calls);

  const SyntheticWorkload& w_;
  const int rank_, tp_i_, dp_i_, pp_i_;
  // This rank's communicators, and figures every iteration needs (derived once).
  NameId tp_comm_ = 0, pp_comm_ = 0, dp_comm_ = 0;
  bool sharded_ = false;  // distributed optimizer over more than one replica
  double params_ = 0;     // parameters on this rank
  double layer_params_ = 0;
  std::uint64_t state_bytes_ = 0;       // weights, gradients, optimizer state
  std::uint64_t activation_bytes_ = 0;  // kept per micro-batch until its backward
  int iteration_ = 0;
  std::vector<std::pair<Step, int>> schedule_;  // this stage's 1F1B schedule
  std::size_t step_ = 0;
  int phase_ = 0;  // 0 set-up, 1 schedule, 2 iteration end, 3 done
  std::vector<Op> buffer_;
  std::size_t next_ = 0;
  bool last_micro_batch_ = false;
  bool in_group_ = false;
  bool join_after_next_gemm_ = false;
};

class SyntheticWorkload : public Workload {
 public:
  SyntheticWorkload(const WorkloadSpec& spec, const netmodel::Cluster& cluster, Dims dims)
      : spec_(spec), cluster_(cluster), dims_(dims) {
    const ModelSpec& m = spec.model;
    for (size_t i = 0; i < 3; ++i) {
      const std::string& axis = spec.parallel.order[i];
      order_[i] = axis == "tp" ? kTpAxis : axis == "dp" ? kDpAxis : kPpAxis;
    }
    head_dim_ = m.hidden / m.heads;
    tokens_ = static_cast<std::int64_t>(spec.training.micro_batch) * m.seq;
    // Communicators: TP within (dp, pp), PP across stages of (tp, dp), DP across replicas.
    for (int pp = 0; pp < dims.pp; ++pp)
      for (int dp = 0; dp < dims.dp_sim; ++dp) {
        CommunicatorSpec c{names_.Intern(fmt::format("tp.d{}.p{}", dp, pp)), {}, {}};
        for (int tp = 0; tp < dims.tp; ++tp) c.ranks.push_back(Rank(tp, dp, pp));
        comms_.push_back(std::move(c));
      }
    for (int tp = 0; tp < dims.tp; ++tp)
      for (int dp = 0; dp < dims.dp_sim; ++dp) {
        CommunicatorSpec c{names_.Intern(fmt::format("pp.t{}.d{}", tp, dp)), {}, {}};
        for (int pp = 0; pp < dims.pp; ++pp) c.ranks.push_back(Rank(tp, dp, pp));
        comms_.push_back(std::move(c));
      }
    for (int pp = 0; pp < dims.pp; ++pp)
      for (int tp = 0; tp < dims.tp; ++tp) {
        CommunicatorSpec c{names_.Intern(fmt::format("dp.t{}.p{}", tp, pp)), {}, {}};
        for (int dp = 0; dp < dims.dp_sim; ++dp) c.ranks.push_back(Rank(tp, dp, pp));
        // Folded: the replicas' collective spans every replica's GPU of this (tp, pp).
        if (dims.dp_sim != dims.dp)
          for (int dp = 0; dp < dims.dp; ++dp) c.gpus.push_back(Gpu(tp, dp, pp));
        comms_.push_back(std::move(c));
      }
  }

  int world_size() const override { return dims_.tp * dims_.pp * dims_.dp_sim; }
  int gpu_of(int rank) const override {
    const Coord c = Decode(rank, SimSizes());
    return Gpu(c[kTpAxis], c[kDpAxis], c[kPpAxis]);
  }
  const std::vector<CommunicatorSpec>& communicators() const override { return comms_; }
  NameTable& names() override { return names_; }
  std::string description() const override {
    return fmt::format("synthetic {} (tp {} pp {} dp {}{})",
                       spec_.model.preset.empty() ? "transformer" : spec_.model.preset, dims_.tp,
                       dims_.pp, dims_.dp,
                       dims_.dp_sim != dims_.dp ? ", one data-parallel replica simulated" : "");
  }
  Result<std::unique_ptr<OpSource>> OpenRank(int rank) override {
    return std::unique_ptr<OpSource>(std::make_unique<RankSource>(*this, rank));
  }

  // Ranks and GPUs are numbered along parallel.order, fastest axis first (Megatron's default:
  // TP, then DP, then PP). Simulated ranks count the simulated replicas only.
  Coord SimSizes() const { return {dims_.tp, dims_.dp_sim, dims_.pp}; }
  Coord FullSizes() const { return {dims_.tp, dims_.dp, dims_.pp}; }
  int Linear(const Coord& c, const Coord& sizes) const {
    int index = 0;
    for (int i = 2; i >= 0; --i) {
      const int axis = order_[static_cast<size_t>(i)];
      index = index * sizes[static_cast<size_t>(axis)] + c[static_cast<size_t>(axis)];
    }
    return index;
  }
  Coord Decode(int index, const Coord& sizes) const {
    Coord c{};
    for (int i = 0; i < 3; ++i) {
      const auto axis = static_cast<size_t>(order_[static_cast<size_t>(i)]);
      c[axis] = index % sizes[axis];
      index /= sizes[axis];
    }
    return c;
  }
  int Rank(int tp, int dp, int pp) const { return Linear({tp, dp, pp}, SimSizes()); }
  int Gpu(int tp, int dp, int pp) const { return Linear({tp, dp, pp}, FullSizes()); }
  NameId Name(const std::string& name) const { return names_.Intern(name); }

  const WorkloadSpec& spec_;
  const netmodel::Cluster& cluster_;
  Dims dims_;
  int head_dim_ = 0;
  std::int64_t tokens_ = 0;  // per micro-batch
  mutable NameTable names_;
  std::vector<CommunicatorSpec> comms_;
  Coord order_{};  // axes, fastest first
};

RankSource::RankSource(const SyntheticWorkload& w, int rank)
    : RankSource(w, rank, w.Decode(rank, w.SimSizes())) {}

RankSource::RankSource(const SyntheticWorkload& w, int rank, const Coord& coord)
    : w_(w), rank_(rank), tp_i_(coord[kTpAxis]), dp_i_(coord[kDpAxis]), pp_i_(coord[kPpAxis]) {
  const WorkloadSpec& spec = w.spec_;
  tp_comm_ = w.Name(fmt::format("tp.d{}.p{}", dp_i_, pp_i_));
  pp_comm_ = w.Name(fmt::format("pp.t{}.d{}", tp_i_, dp_i_));
  dp_comm_ = w.Name(fmt::format("dp.t{}.p{}", tp_i_, pp_i_));
  sharded_ = spec.parallel.distributed_optimizer && w.dims_.dp > 1;
  params_ = spec.parameters() / (w.dims_.tp * w.dims_.pp);
  layer_params_ = spec.parameters() / (spec.model.layers * static_cast<double>(w.dims_.tp));
  const WorkloadSpec::RankMemory mem = spec.rank_memory(w.cluster_.total_gpus());
  state_bytes_ = static_cast<std::uint64_t>(mem.weights + mem.gradients + mem.optimizer);
  activation_bytes_ = static_cast<std::uint64_t>(mem.activations_per_micro_batch);
  // Megatron's forward_backward_pipelining_without_interleaving.
  const int p = w.dims_.pp, m = w.spec_.micro_batches();
  const bool first = pp_i_ == 0, last = pp_i_ == p - 1;
  const int warmup = std::min(p - pp_i_ - 1, m);
  const int remaining = m - warmup;
  int f = 0, b = 0;
  for (int i = 0; i < warmup; ++i) {
    if (!first) schedule_.push_back({Step::kRecvForward, f});
    schedule_.push_back({Step::kForward, f});
    if (!last) schedule_.push_back({Step::kSendForward, f});
    ++f;
  }
  if (remaining > 0 && !first) schedule_.push_back({Step::kRecvForward, f});
  for (int i = 0; i < remaining; ++i) {
    schedule_.push_back({Step::kForward, f++});
    if (!last) schedule_.push_back({Step::kSendForwardRecvBackward, b});
    schedule_.push_back({Step::kBackward, b});
    // The first stage has no previous stage to send gradients to or receive inputs from.
    if (!first)
      schedule_.push_back(
          {i == remaining - 1 ? Step::kSendBackward : Step::kSendBackwardRecvForward,
           i == remaining - 1 ? b : f});
    ++b;
  }
  for (int i = 0; i < warmup; ++i) {
    if (!last) schedule_.push_back({Step::kRecvBackward, b});
    schedule_.push_back({Step::kBackward, b});
    if (!first) schedule_.push_back({Step::kSendBackward, b});
    ++b;
  }
}

void RankSource::Gemm(const char* name, std::int64_t m, std::int64_t n, std::int64_t k) {
  Op op;
  op.kind = OpKind::kKernel;
  op.stream = kComputeStream;
  op.name = w_.Name(name);
  op.gemm = {m, n, k, 1, w_.spec_.training.precision};
  buffer_.push_back(op);
  if (join_after_next_gemm_) {
    join_after_next_gemm_ = false;
    WaitEvent(kComputeStream, kTpJoinEvent);
  }
}

void RankSource::RecordEvent(std::int32_t stream, std::int32_t event) {
  Op op;
  op.kind = OpKind::kEventRecord;
  op.stream = stream;
  op.event = event;
  buffer_.push_back(op);
}

void RankSource::WaitEvent(std::int32_t stream, std::int32_t event) {
  Op op;
  op.kind = OpKind::kStreamWaitEvent;
  op.stream = stream;
  op.event = event;
  buffer_.push_back(op);
}

void RankSource::Collective(std::int32_t stream, NameId comm, netmodel::CollectiveOp coll,
                            std::uint64_t count, DataType dtype) {
  Op op;
  op.kind = OpKind::kCollective;
  op.stream = stream;
  op.comm = comm;
  op.coll = coll;
  op.count = count;
  op.dtype = dtype;
  buffer_.push_back(op);
}

// Runs TP collective `coll` on the side stream, forked from the compute stream's work so far,
// and records the join event.
void RankSource::ForkedTpCollective(netmodel::CollectiveOp coll) {
  RecordEvent(kComputeStream, kTpForkEvent);
  WaitEvent(kTpCommStream, kTpForkEvent);
  TpCollective(coll);
  buffer_.back().stream = kTpCommStream;
  RecordEvent(kTpCommStream, kTpJoinEvent);
}

void RankSource::Streaming(const char* name, double bytes) {
  Op op;
  op.kind = OpKind::kKernel;
  op.stream = kComputeStream;
  op.name = w_.Name(name);
  op.bytes = static_cast<std::uint64_t>(bytes);
  buffer_.push_back(op);
}

void RankSource::Attention(bool backward) {
  const ModelSpec& m = w_.spec_.model;
  if (!w_.spec_.training.flash_attention) {
    // Scores of b x heads x s x s, in bf16: two batched GEMMs around the scale-mask-softmax
    // and dropout kernels that stream them (read and write, plus the dropout mask).
    const std::int64_t heads = m.heads / w_.dims_.tp, s = m.seq, hd = w_.head_dim_;
    const std::int64_t batch = static_cast<std::int64_t>(w_.spec_.training.micro_batch) * heads;
    const double scores = static_cast<double>(batch) * static_cast<double>(s) * s * 2;
    auto batched = [&](const char* name, std::int64_t mm, std::int64_t nn, std::int64_t kk) {
      Gemm(name, mm, nn, kk);
      buffer_.back().gemm.batch = batch;
    };
    if (!backward) {
      batched("gemm_attention_scores", s, s, hd);
      Streaming("scale_mask_softmax", 2 * scores);
      Streaming("attention_dropout", 2.5 * scores);
      batched("gemm_attention_values", s, hd, s);
    } else {
      batched("gemm_attention_values_dgrad", s, s, hd);
      batched("gemm_attention_values_wgrad", s, hd, s);
      Streaming("attention_dropout_backward", 2.5 * scores);
      Streaming("scale_mask_softmax_backward", 3 * scores);
      batched("gemm_attention_scores_dgrad", s, hd, s);
      batched("gemm_attention_scores_wgrad", s, hd, s);
    }
    return;
  }
  Op op;
  op.kind = OpKind::kKernel;
  op.stream = kComputeStream;
  op.name = w_.Name(backward ? "flash_attention_backward" : "flash_attention_forward");
  op.attention.batch = w_.spec_.training.micro_batch;
  op.attention.heads = m.heads / w_.dims_.tp;
  op.attention.seq_q = op.attention.seq_kv = m.seq;
  op.attention.head_dim = w_.head_dim_;
  op.attention.causal = true;
  op.attention.backward = backward;
  op.attention.dtype = w_.spec_.training.precision == DataType::kFloat8e4m3
                           ? DataType::kBfloat16  // attention stays in bf16 under FP8 training
                           : w_.spec_.training.precision;
  buffer_.push_back(op);
}

// Data-parallel gradient reduction of `params` gradients: an AllReduce, or a ReduceScatter
// to the optimizer shards with the distributed optimizer.
void RankSource::GradientReduce(std::int32_t stream, double params) {
  const bool scatter = w_.spec_.parallel.distributed_optimizer;
  // Megatron accumulates and reduces main_grad in fp32.
  Collective(stream, dp_comm_,
             scatter ? netmodel::CollectiveOp::kReduceScatter : netmodel::CollectiveOp::kAllReduce,
             static_cast<std::uint64_t>(scatter ? params / w_.dims_.dp : params),
             DataType::kFloat32);
}

void RankSource::TpCollective(netmodel::CollectiveOp coll) {
  // NCCL counts: the whole activation for AllReduce, one rank's share for the others.
  const std::uint64_t elements =
      static_cast<std::uint64_t>(w_.tokens_) * static_cast<std::uint64_t>(w_.spec_.model.hidden);
  Collective(kComputeStream, tp_comm_, coll,
             coll == netmodel::CollectiveOp::kAllReduce
                 ? elements
                 : elements / static_cast<std::uint64_t>(w_.dims_.tp),
             DataType::kBfloat16);
}

// Into a tensor-parallel block: with sequence parallelism the sequence-sharded activation is
// gathered; without it nothing moves.
void RankSource::TpGather() {
  if (w_.dims_.tp == 1 || !w_.spec_.parallel.sequence_parallel) return;
  if (!w_.spec_.parallel.tp_comm_overlap) {
    TpCollective(netmodel::CollectiveOp::kAllGather);
    return;
  }
  // Overlapped (Transformer Engine's userbuffers pipeline the gather with the GEMM that
  // consumes it, chunk by chunk): the gather runs beside the next GEMM, which is joined.
  ForkedTpCollective(netmodel::CollectiveOp::kAllGather);
  join_after_next_gemm_ = true;
}

// Out of one: the partial sums are all-reduced, or reduce-scattered back to sequence shards.
void RankSource::TpReduce() {
  if (w_.dims_.tp == 1) return;
  if (!w_.spec_.parallel.tp_comm_overlap) {
    TpCollective(w_.spec_.parallel.sequence_parallel ? netmodel::CollectiveOp::kReduceScatter
                                                     : netmodel::CollectiveOp::kAllReduce);
    return;
  }
  // Overlapped: the reduce-scatter runs beside the GEMM just emitted (the one producing its
  // input, chunk by chunk), and the compute stream joins it after that GEMM.
  const Op gemm = buffer_.back();
  buffer_.pop_back();
  ForkedTpCollective(netmodel::CollectiveOp::kReduceScatter);
  buffer_.push_back(gemm);
  WaitEvent(kComputeStream, kTpJoinEvent);
}

// One transformer layer's forward (or its backward) on this TP rank.
void RankSource::Layer(bool forward) {
  const ModelSpec& m = w_.spec_.model;
  const int tp = w_.dims_.tp;
  const std::int64_t t = w_.tokens_, h = m.hidden, hd = w_.head_dim_;
  const std::int64_t qkv = (m.heads / tp + 2 * (m.kv_heads / tp > 0 ? m.kv_heads / tp : 1)) * hd;
  const std::int64_t attn = m.heads / tp * hd;
  const std::int64_t up = (m.activation == Activation::kSwiglu ? 2 : 1) * m.ffn / tp;
  const std::int64_t down = m.ffn / tp;
  // Element-wise and normalisation kernels outside the TP blocks see the whole sequence, or
  // 1/tp of it under sequence parallelism.
  const double act_bytes = static_cast<double>(t) * static_cast<double>(h) * 2 /
                           (w_.spec_.parallel.sequence_parallel ? tp : 1);
  if (forward) {
    Streaming("layernorm", 2 * act_bytes);
    TpGather();
    Gemm("gemm_qkv", t, qkv, h);
    Attention(false);
    Gemm("gemm_attention_out", t, h, attn);
    TpReduce();
    Streaming("bias_dropout_add", 3 * act_bytes);  // residual branch: bias, dropout, sum
    Streaming("layernorm", 2 * act_bytes);
    TpGather();
    Gemm("gemm_mlp_up", t, up, h);
    Streaming(m.activation == Activation::kSwiglu ? "swiglu" : "gelu",
              static_cast<double>(t) * static_cast<double>(up + down) * 2);
    Gemm("gemm_mlp_down", t, h, down);
    TpReduce();
    Streaming("bias_dropout_add", 3 * act_bytes);
    return;
  }
  // Backward, in reverse: input gradient (dgrad) and weight gradient (wgrad) per GEMM. Each
  // collective's backward is its dual: a reduce-scatter's is an all-gather, an all-gather's a
  // reduce-scatter, and without sequence parallelism the column-parallel block's input
  // gradient is all-reduced.
  Streaming("bias_dropout_add_backward", 3 * act_bytes);
  TpGather();
  Gemm("gemm_mlp_down_dgrad", t, down, h);
  Gemm("gemm_mlp_down_wgrad", h, down, t);
  Streaming(m.activation == Activation::kSwiglu ? "swiglu_backward" : "gelu_backward",
            static_cast<double>(t) * static_cast<double>(up + down) * 3);
  Gemm("gemm_mlp_up_dgrad", t, h, up);
  Gemm("gemm_mlp_up_wgrad", up, h, t);
  TpReduce();
  Streaming("layernorm_backward", 3 * act_bytes);
  Streaming("bias_dropout_add_backward", 3 * act_bytes);
  TpGather();
  Gemm("gemm_attention_out_dgrad", t, attn, h);
  Gemm("gemm_attention_out_wgrad", h, attn, t);
  // Selective recomputation keeps no attention-core activations: rerun its forward first.
  if (w_.spec_.training.recompute == Recompute::kSelective) Attention(false);
  Attention(true);
  Gemm("gemm_qkv_dgrad", t, h, qkv);
  Gemm("gemm_qkv_wgrad", qkv, h, t);
  TpReduce();
  Streaming("layernorm_backward", 3 * act_bytes);
}

void RankSource::P2p(OpKind kind, int peer_stage) {
  Op op;
  op.kind = kind;
  op.stream = kComputeStream;
  op.comm = pp_comm_;
  op.peer = peer_stage;
  // Megatron's scatter/gather optimisation (SC'21, section 4.1): each TP rank sends 1/tp of
  // the activation and the receivers all-gather it over NVLink (sequence parallelism keeps it
  // sharded anyway).
  op.count = static_cast<std::uint64_t>(w_.tokens_) *
             static_cast<std::uint64_t>(w_.spec_.model.hidden) /
             static_cast<std::uint64_t>(w_.dims_.tp);
  op.dtype = DataType::kBfloat16;
  buffer_.push_back(op);
  if (kind == OpKind::kRecv && !in_group_) GatherReceived();
}

void RankSource::GatherReceived() {
  if (w_.dims_.tp > 1 && !w_.spec_.parallel.sequence_parallel)
    TpCollective(netmodel::CollectiveOp::kAllGather);
}

// Send and receive as one NCCL group, as Megatron batches them (no ordering deadlock).
void RankSource::Group(const std::vector<std::pair<OpKind, int>>& calls) {
  Op start;
  start.kind = OpKind::kGroupStart;
  buffer_.push_back(start);
  in_group_ = true;
  for (const auto& [kind, peer] : calls) P2p(kind, peer);
  in_group_ = false;
  Op end;
  end.kind = OpKind::kGroupEnd;
  buffer_.push_back(end);
  for (const auto& call : calls)
    if (call.first == OpKind::kRecv) GatherReceived();
}

int LayersPerStage(const WorkloadSpec& spec, int pp) { return spec.model.layers / pp; }

void RankSource::Forward(int micro_batch) {
  (void)micro_batch;
  const ModelSpec& m = w_.spec_.model;
  const int layers = LayersPerStage(w_.spec_, w_.dims_.pp);
  const double tokens = static_cast<double>(w_.tokens_);
  if (pp_i_ == 0) Streaming("embedding", tokens * m.hidden * 2 * 2);
  for (int l = 0; l < layers; ++l) Layer(true);
  if (pp_i_ == w_.dims_.pp - 1) {
    Gemm("gemm_logits", w_.tokens_, m.vocab / w_.dims_.tp, m.hidden);
    Streaming("cross_entropy", tokens * (m.vocab / w_.dims_.tp) * 4.0 * 2);
  }
}

void RankSource::Backward(int micro_batch) {
  const ModelSpec& m = w_.spec_.model;
  const WorkloadSpec& spec = w_.spec_;
  const int layers = LayersPerStage(spec, w_.dims_.pp);
  const bool last = micro_batch == spec.micro_batches() - 1;
  const bool overlap = spec.training.overlap_grad_reduce && w_.dims_.dp > 1;
  if (pp_i_ == w_.dims_.pp - 1) {
    const double tokens = static_cast<double>(w_.tokens_);
    Streaming("cross_entropy_backward", tokens * (m.vocab / w_.dims_.tp) * 4.0 * 2);
    Gemm("gemm_logits_dgrad", w_.tokens_, m.hidden, m.vocab / w_.dims_.tp);
    Gemm("gemm_logits_wgrad", m.vocab / w_.dims_.tp, m.hidden, w_.tokens_);
  }
  for (int l = 0; l < layers; ++l) {
    if (spec.training.recompute == Recompute::kFull) Layer(true);
    Layer(false);
    if (last && overlap) {
      // This layer's gradients are final: reduce them on the gradient stream meanwhile.
      RecordEvent(kComputeStream, l + 1);
      WaitEvent(kGradStream, l + 1);
      GradientReduce(kGradStream, layer_params_);
    }
  }
}

void RankSource::Expand() {
  buffer_.clear();
  next_ = 0;
  const WorkloadSpec& spec = w_.spec_;
  if (phase_ == 0) {
    Op create;
    create.kind = OpKind::kStreamCreate;
    create.stream = kGradStream;
    create.non_blocking = true;
    buffer_.push_back(create);
    if (spec.parallel.tp_comm_overlap) {
      create.stream = kTpCommStream;
      buffer_.push_back(create);
    }
    // Weights, gradient buffers and optimizer state (WorkloadSpec::rank_memory).
    Op weights;
    weights.kind = OpKind::kMalloc;
    weights.bytes = state_bytes_;
    buffer_.push_back(weights);
    Op marker;
    marker.kind = OpKind::kMarker;
    marker.label = w_.Name("iteration");
    buffer_.push_back(marker);
    phase_ = 1;
    return;
  }
  if (phase_ == 1 && step_ < schedule_.size()) {
    const auto [step, mb] = schedule_[step_++];
    const int prev = pp_i_ - 1, next = pp_i_ + 1;
    switch (step) {
      case Step::kRecvForward:
        P2p(OpKind::kRecv, prev);
        break;
      case Step::kSendForward:
        P2p(OpKind::kSend, next);
        break;
      case Step::kRecvBackward:
        P2p(OpKind::kRecv, next);
        break;
      case Step::kSendBackward:
        P2p(OpKind::kSend, prev);
        break;
      case Step::kSendForwardRecvBackward:
        Group({{OpKind::kSend, next}, {OpKind::kRecv, next}});
        break;
      case Step::kSendBackwardRecvForward:
        Group({{OpKind::kSend, prev}, {OpKind::kRecv, prev}});
        break;
      case Step::kForward: {
        Op keep;
        keep.kind = OpKind::kMalloc;  // the activations kept for the backward pass
        keep.bytes = activation_bytes_;
        buffer_.push_back(keep);
        Forward(mb);
        break;
      }
      case Step::kBackward: {
        Backward(mb);
        Op drop;
        drop.kind = OpKind::kFree;
        drop.bytes = activation_bytes_;
        buffer_.push_back(drop);
        break;
      }
    }
    return;
  }
  if (phase_ == 1) {
    // Gradients: reduced across replicas (what the overlap did not already send), then the
    // optimizer step once the reductions are done.
    const bool overlap = spec.training.overlap_grad_reduce && w_.dims_.dp > 1;
    if (w_.dims_.dp > 1 && !overlap) GradientReduce(kComputeStream, params_);
    if (overlap) {
      RecordEvent(kGradStream, kGradsReducedEvent);
      WaitEvent(kComputeStream, kGradsReducedEvent);
    }
    // Adam reads and writes weights, gradients, master weights and moments (18 B / param)
    // of its shard: all parameters, or 1/dp of them with the distributed optimizer, which
    // then all-gathers the updated weights.
    Streaming("optimizer_adam", params_ / (sharded_ ? w_.dims_.dp : 1) * 18 * 2);
    if (sharded_)
      Collective(kComputeStream, dp_comm_, netmodel::CollectiveOp::kAllGather,
                 static_cast<std::uint64_t>(params_ / w_.dims_.dp), DataType::kBfloat16);
    Op sync;
    sync.kind = OpKind::kDeviceSync;
    buffer_.push_back(sync);
    Op marker;
    marker.kind = OpKind::kMarker;
    marker.label = w_.Name("iteration");
    buffer_.push_back(marker);
    if (++iteration_ < spec.training.iterations) {
      step_ = 0;
    } else {
      phase_ = 3;
    }
    return;
  }
}

Result<bool> RankSource::Next(Op& op) {
  while (next_ >= buffer_.size()) {
    if (phase_ == 3) return false;
    Expand();
  }
  op = buffer_[next_++];
  return true;
}

}  // namespace

Result<std::unique_ptr<Workload>> MakeSyntheticWorkload(const WorkloadSpec& spec,
                                                        const netmodel::Cluster& cluster,
                                                        bool fold_data_parallel) {
  const int world = cluster.total_gpus();
  if (Status st = spec.Validate(world); !st.ok()) return st;
  const int dp = spec.data_parallel(world);
  const Dims dims{spec.parallel.tp, spec.parallel.pp, dp, fold_data_parallel ? 1 : dp};
  return std::unique_ptr<Workload>(std::make_unique<SyntheticWorkload>(spec, cluster, dims));
}

}  // namespace myriad::emulator
