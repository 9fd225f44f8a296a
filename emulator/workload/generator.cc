// The op streams of a Megatron-style training iteration, generated lazily per rank:
// tensor-parallel layers (column/row-parallel GEMMs with a collective after each block),
// ring attention over context-parallel ranks, MoE layers with AllToAll dispatch and combine
// over expert-parallel ranks, the 1F1B pipeline schedule (plain or interleaved over virtual
// stages) with send/recv between stages, data-parallel gradient reduction (bucketed per layer
// and overlapped with the last micro-batch's backward, if asked), ZeRO-1 or FSDP parameter
// gathers, an optimizer step. docs/workloads.md describes every op.
//
// Rank folding: expert-data-parallel replicas (all data-parallel replicas, without expert
// parallelism) run identical op streams, so by default one is simulated (its ranks placed on
// the GPUs of replica 0) and the data-parallel collectives are timed on all replicas' GPUs.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "myriad/emulator/workload.h"
#include "workload/eager_kernels.h"

namespace myriad::emulator {
namespace {

constexpr std::int32_t kComputeStream = 0;
constexpr std::int32_t kGradStream = 1;
constexpr std::int32_t kTpCommStream = 2;  // TP collectives overlapped with GEMMs
constexpr std::int32_t kCpCommStream = 3;  // ring attention's key/value exchange
constexpr std::int32_t kGatherStream = 4;  // parameter all-gathers ahead of their layer
// Overlapped pipeline sends and receives (overlap_p2p_comm): one stream per peer stage, as
// PyTorch gives each pair of ranks exchanging unbatched isend/irecv its own NCCL communicator.
constexpr std::int32_t kPpPrevStream = 5;
constexpr std::int32_t kPpNextStream = 6;
// Events of the side streams: the compute stream's state before the overlapped work (fork)
// and the side stream's end (join). Reused: a wait refers to the event's latest record, and
// each wait here is enqueued before the next record of its event.
constexpr std::int32_t kTpForkEvent = 1 << 21;
constexpr std::int32_t kTpJoinEvent = (1 << 21) + 1;
constexpr std::int32_t kCpForkEvent = (1 << 21) + 2;
constexpr std::int32_t kCpJoinEvent = (1 << 21) + 3;
// The compute stream started a unit (the next unit's gather may begin), and a gather is done.
constexpr std::int32_t kUnitStartedEvent = (1 << 21) + 4;
constexpr std::int32_t kGatheredEvent = (1 << 21) + 5;
// Overlapped pipeline communication: the compute stream's state before a batch of sends and
// receives, and the end of the latest forward-direction (activations) and backward-direction
// (gradients) ops on each peer's stream, which the next forward and backward wait for;
// indexed [direction][peer], forward and previous first.
constexpr std::int32_t kPpForkEvent = (1 << 21) + 6;
constexpr std::int32_t kPpJoinEvents[2][2] = {{(1 << 21) + 7, (1 << 21) + 8},
                                              {(1 << 21) + 9, (1 << 21) + 10}};
// The gradient stream's reductions are done; kGradReadyEvent marks a unit's final gradients.
constexpr std::int32_t kGradsReducedEvent = 1 << 20;
constexpr std::int32_t kGradReadyEvent = (1 << 20) + 1;

// One entry of a stage's pipeline schedule: a forward or backward of a model chunk for a
// micro-batch, or one batch of pipeline sends and receives (Megatron's p2p_communication call).
struct Action {
  enum Kind : std::uint8_t { kForward, kBackward, kComm };
  // The sends and receives of a kComm: activations to the next stage and from the previous
  // one, gradients to the previous stage and from the next one.
  enum Comm : std::uint8_t {
    kSendNext = 1,
    kRecvPrev = 2,
    kSendPrev = 4,
    kRecvNext = 8,
  };
  Kind kind;
  std::uint8_t comm;
  int micro_batch;
  int chunk;
};

void Push(std::vector<Action>& out, Action::Kind kind, int micro_batch, int chunk) {
  out.push_back({kind, 0, micro_batch, chunk});
}
void PushComm(std::vector<Action>& out, unsigned comm) {
  if (comm != 0) out.push_back({Action::kComm, static_cast<std::uint8_t>(comm), 0, 0});
}

// Megatron's forward_backward_pipelining_without_interleaving for stage `stage` of `p`, over
// `m` micro-batches.
std::vector<Action> OneForwardOneBackward(int p, int m, int stage) {
  std::vector<Action> s;
  const bool first = stage == 0, last = stage == p - 1;
  const int warmup = std::min(p - stage - 1, m);
  const int remaining = m - warmup;
  int f = 0, b = 0;
  for (int i = 0; i < warmup; ++i) {
    if (!first) PushComm(s, Action::kRecvPrev);
    Push(s, Action::kForward, f++, 0);
    if (!last) PushComm(s, Action::kSendNext);
  }
  if (remaining > 0 && !first) PushComm(s, Action::kRecvPrev);
  for (int i = 0; i < remaining; ++i) {
    Push(s, Action::kForward, f++, 0);
    if (!last) PushComm(s, Action::kSendNext | Action::kRecvNext);
    Push(s, Action::kBackward, b++, 0);
    // The first stage has no previous stage to send gradients to or receive inputs from.
    if (!first) PushComm(s, Action::kSendPrev | (i == remaining - 1 ? 0 : Action::kRecvPrev));
  }
  for (int i = 0; i < warmup; ++i) {
    if (!last) PushComm(s, Action::kRecvNext);
    Push(s, Action::kBackward, b++, 0);
    if (!first) PushComm(s, Action::kSendPrev);
  }
  return s;
}

// Megatron's forward_backward_pipelining_with_interleaving (without overlapped p2p) for stage
// `stage` of `p`, `v` model chunks per stage, `m` micro-batches (a multiple of p). Virtual
// micro-batch k runs chunk (k mod pv) / p forward (reversed backward) on micro-batch
// (k / pv) p + k mod p; the last stage's chunk c feeds the first stage's chunk c + 1.
std::vector<Action> InterleavedOneForwardOneBackward(int p, int v, int m, int stage) {
  std::vector<Action> s;
  const int total = m * v, group = p * v;
  const bool first = stage == 0, last = stage == p - 1;
  auto chunk_of = [&](int k, bool forward) {
    const int c = ((k % group) + group) % group / p;  // Python's modulo, as Megatron's
    return forward ? c : v - 1 - c;
  };
  auto micro_batch_of = [&](int k) { return k / group * p + k % p; };
  const bool all_warmup = m == p;
  const int warmup = all_warmup ? total : std::min(2 * (p - stage - 1) + (v - 1) * p, total);
  const int remaining = total - warmup;
  // Chunk 0 of the first stage reads the data loader; chunk v - 1 of the last stage ends the
  // model (no activation to send on, no gradient to receive).
  auto sends_forward = [&](int chunk) { return !(last && chunk == v - 1); };
  auto sends_backward = [&](int chunk) { return !(first && chunk == 0); };

  if (!first) PushComm(s, Action::kRecvPrev);
  for (int k = 0; k < warmup; ++k) {
    const int chunk = chunk_of(k, true);
    Push(s, Action::kForward, micro_batch_of(k), chunk);
    bool recv_prev = !(first && chunk_of(k + 1, true) == 0) && k != total - 1;
    unsigned comm =
        (sends_forward(chunk) ? Action::kSendNext : 0) | (recv_prev ? Action::kRecvPrev : 0);
    if (k == warmup - 1 && !all_warmup && !last) comm |= Action::kRecvNext;
    PushComm(s, comm);
  }
  for (int k = 0; k < remaining; ++k) {
    const int fk = k + warmup, bk = k;
    const int fchunk = chunk_of(fk, true), bchunk = chunk_of(bk, false);
    Push(s, Action::kForward, micro_batch_of(fk), fchunk);
    Push(s, Action::kBackward, micro_batch_of(bk), bchunk);
    bool recv_prev = !(first && chunk_of(fk - (p - 1), true) == v - 1);
    const bool recv_next = !(last && chunk_of(bk - (p - 1), false) == 0);
    if (k == remaining - 1) recv_prev = false;
    PushComm(s, (sends_forward(fchunk) ? Action::kSendNext : 0) |
                    (recv_prev ? Action::kRecvPrev : 0) |
                    (sends_backward(bchunk) ? Action::kSendPrev : 0) |
                    (recv_next ? Action::kRecvNext : 0));
  }
  if (all_warmup && !last) PushComm(s, Action::kRecvNext);
  for (int k = remaining; k < total; ++k) {
    const int chunk = chunk_of(k, false);
    Push(s, Action::kBackward, micro_batch_of(k), chunk);
    const bool recv_next = !(last && chunk_of(k + 1, false) == v - 1) && k != total - 1;
    PushComm(s,
             (sends_backward(chunk) ? Action::kSendPrev : 0) | (recv_next ? Action::kRecvNext : 0));
  }
  return s;
}

// What a model chunk computes, in forward order: the embedding (first stage, first chunk),
// transformer layers, the output layer (last stage, last chunk). Parameters are this rank's
// share: dense over tp, experts over tp x ep.
struct Unit {
  enum Kind : std::uint8_t { kEmbedding, kLayer, kOutput };
  Kind kind;
  int layer;
  double dense_params;
  double expert_params;
};

using Coord = std::array<int, kAxes>;

struct Dims {
  Coord full;  // sizes per axis
  Coord sim;   // simulated sizes (the expert-data-parallel axis folded to 1)
  // Data-parallel replicas of the dense layers: ep x edp.
  int dp() const { return full[kEpAxis] * full[kEdpAxis]; }
};

class SyntheticWorkload;

class RankSource : public OpSource {
 public:
  RankSource(const SyntheticWorkload& w, int rank);
  RankSource(const SyntheticWorkload& w, int rank, const Coord& coord);
  Result<bool> Next(Op& op) override;

 private:
  void Expand();  // fills buffer_ with the next step's ops
  void Forward(int micro_batch, int chunk);
  void Backward(int micro_batch, int chunk);
  void UnitForward(const Unit& unit);
  void UnitBackward(const Unit& unit);
  void Layer(int layer, bool forward);
  void DenseMlp(bool forward);
  void MoeMlp(bool forward);
  void Gemm(const char* name, std::int64_t m, std::int64_t n, std::int64_t k,
            std::int64_t batch = 1);
  void Streaming(const char* name, double bytes, std::int32_t stream = kComputeStream);
  void Eager(workload::EagerKernel kernel, double bytes);
  void Norm(bool forward, double act_bytes);
  void Residual(bool forward, double act_bytes);
  void Rope(bool forward);
  void LayerForwardRecompute(bool moe);
  void MlpActivation(bool forward, double inner);
  double ActivationBytes() const;
  void Attention(bool backward);
  void FlashAttention(bool backward, std::int64_t seq_q, std::int64_t seq_kv, bool causal);
  void RecordEvent(std::int32_t stream, std::int32_t event);
  void WaitEvent(std::int32_t stream, std::int32_t event);
  void Collective(std::int32_t stream, NameId comm, netmodel::CollectiveOp coll,
                  std::uint64_t count, DataType dtype);
  void GradientReduce(std::int32_t stream, double dense, double experts);
  void DataParallelCollective(std::int32_t stream, netmodel::CollectiveOp coll, DataType dtype,
                              double dense, double experts);
  void GatherWeights(std::int32_t stream, double dense, double experts, double layer_dense);
  void ParamGather(const Unit& unit, bool first_visit, bool fsdp_kept = false);
  void TpCollective(netmodel::CollectiveOp coll, DataType dtype = DataType::kBfloat16);
  void ForkedTpCollective(netmodel::CollectiveOp coll, DataType dtype = DataType::kBfloat16);
  void GatherReceived();
  void TpGather(bool gradient = false);
  void TpReduce(bool input_gradient = false);
  void P2p(std::int32_t stream, NameId comm, OpKind kind, int peer, std::uint64_t count);
  void GroupBoundary(OpKind kind);  // ncclGroupStart / ncclGroupEnd
  // Enqueues one batch of pipeline sends and receives on `stream`; returns the receives.
  int PipelineComm(unsigned comm, std::int32_t stream);
  // Megatron's overlap_p2p_comm: each send and receive of the batch alone on its peer's
  // stream, forked from the compute stream's work so far; the next compute of its direction
  // waits for them (WaitPipeline).
  void OverlappedPipelineComm(unsigned comm, bool forward_direction);
  void WaitPipeline(bool forward_direction);

  const SyntheticWorkload& w_;
  const Coord at_;  // this rank's coordinates
  // This rank's communicators, and figures every iteration needs (derived once).
  NameId tp_comm_ = 0, pp_comm_ = 0, dp_comm_ = 0, cp_comm_ = 0, ep_comm_ = 0, edp_comm_ = 0;
  // PyTorch's kernel names, interned on first use (by EagerKernel; 0: not yet).
  std::array<NameId, workload::kAllEagerKernels.size()> eager_names_{};
  int dense_shards_ = 1, expert_shards_ = 1;  // ranks a dense / expert weight is shared by
  bool zero1_ = false;                        // distributed optimizer over > 1 rank
  bool fsdp_ = false;                         // FSDP over > 1 rank
  // FSDP2 under torch.distributed.pipelining, which keeps each stage's gathered weights and
  // gradients from micro-batch to micro-batch and reduces the gradients after the last.
  bool pipelined_fsdp2_ = false;
  bool zero2_ = false;              // ZeRO-2: gradients sharded too
  bool overlap_p2p_ = false;        // pipeline sends/receives on their stream
  bool first_micro_batch_ = false;  // in the first micro-batch's forward
  // Overlapped ops not yet waited for, per direction (forward, backward): the peers' streams
  // they ran on (bit 0 previous, bit 1 next) and the receives whose TP gather is to run.
  std::array<unsigned, 2> pipeline_streams_ = {0, 0};
  std::array<int, 2> pipeline_recvs_ = {0, 0};
  double dense_params_ = 0, expert_params_ = 0;  // on this rank
  double layer_dense_params_ = 0;                // of them, the transformer layers'
  std::vector<std::vector<Unit>> chunks_;        // the units of each model chunk
  std::uint64_t state_bytes_ = 0;                // weights, gradients, optimizer state
  std::vector<std::uint64_t> activation_bytes_;  // per chunk, kept per micro-batch
  int iteration_ = 0;
  std::vector<Action> schedule_;  // this stage's pipeline schedule
  std::size_t step_ = 0;
  int phase_ = 0;  // 0 set-up, 1 schedule, 2 iteration end, 3 done
  std::vector<Op> buffer_;
  std::size_t next_ = 0;
  bool join_after_next_gemm_ = false;
  int last_gemm_ops_ = 0;  // the kernels the last Gemm call emitted (its ring-exchange chunks)
};

class SyntheticWorkload : public Workload {
 public:
  SyntheticWorkload(const WorkloadSpec& spec, const netmodel::Cluster& cluster, Dims dims)
      : spec_(spec), cluster_(cluster), dims_(dims) {
    const ModelSpec& m = spec.model;
    head_dim_ = m.hidden / m.heads;
    tokens_ = static_cast<std::int64_t>(spec.training.micro_batch) * m.seq / spec.parallel.cp;
    // Communicators, each named after the coordinates its members share: TP, CP and EP
    // groups vary one axis; PP groups the stages; DP the dense layers' replicas (cp x ep x
    // edp: the ranks holding the same dense weights); EDP an expert's replicas (cp x edp).
    const Coord& sim = dims.sim;
    ForEach(sim, [&](const Coord& c) {
      if (c[kTpAxis] == 0) AddGroup("tp", c, {kTpAxis}, false);
      if (c[kPpAxis] == 0) AddGroup("pp", c, {kPpAxis}, false);
      if (c[kCpAxis] == 0 && c[kEpAxis] == 0 && c[kEdpAxis] == 0)
        AddGroup("dp", c, {kCpAxis, kEpAxis, kEdpAxis}, true);
      if (sim[kCpAxis] > 1 && c[kCpAxis] == 0) AddGroup("cp", c, {kCpAxis}, false);
      if (sim[kEpAxis] > 1 && c[kEpAxis] == 0) AddGroup("ep", c, {kEpAxis}, false);
      if (sim[kEpAxis] > 1 && c[kCpAxis] == 0 && c[kEdpAxis] == 0)
        AddGroup("edp", c, {kCpAxis, kEdpAxis}, true);
    });
  }

  int world_size() const override {
    int n = 1;
    for (int size : dims_.sim) n *= size;
    return n;
  }
  int gpu_of(int rank) const override { return Linear(Decode(rank, dims_.sim), dims_.full); }
  const std::vector<CommunicatorSpec>& communicators() const override { return comms_; }
  NameTable& names() override { return names_; }
  std::string description() const override {
    const ParallelSpec& p = spec_.parallel;
    std::string axes = fmt::format("tp {} pp {} dp {}", p.tp, p.pp, dims_.dp());
    if (p.cp > 1) axes += fmt::format(" cp {}", p.cp);
    if (p.ep > 1) axes += fmt::format(" ep {}", p.ep);
    if (p.virtual_stages > 1) axes += fmt::format(", {} virtual stages", p.virtual_stages);
    return fmt::format(
        "synthetic {} ({}{})", spec_.model.preset.empty() ? "transformer" : spec_.model.preset,
        axes,
        dims_.sim[kEdpAxis] != dims_.full[kEdpAxis] ? ", one data-parallel replica simulated" : "");
  }
  Result<std::unique_ptr<OpSource>> OpenRank(int rank) override {
    return std::unique_ptr<OpSource>(std::make_unique<RankSource>(*this, rank));
  }
  // For the progress display's time left: one rank of each pipeline stage is generated and
  // counted (the ranks of a stage run programs of one shape).
  std::uint64_t expected_ops() const override {
    std::uint64_t total = 0;
    const int stages = dims_.sim[kPpAxis];
    for (int stage = 0; stage < stages; ++stage) {
      Coord c{};
      c[kPpAxis] = stage;
      RankSource source(*this, Linear(c, dims_.sim), c);
      Op op;
      std::uint64_t n = 0;
      for (Result<bool> more = source.Next(op); more.ok() && *more; more = source.Next(op)) ++n;
      total += n * static_cast<std::uint64_t>(world_size() / stages);
    }
    return total;
  }

  // Ranks and GPUs are numbered along parallel.order, fastest axis first (Megatron's default:
  // TP, CP, EP, DP, PP). Simulated ranks count the simulated replicas only.
  int Linear(const Coord& c, const Coord& sizes) const {
    int index = 0;
    for (int i = kAxes - 1; i >= 0; --i) {
      const auto axis = static_cast<size_t>(spec_.parallel.order[static_cast<size_t>(i)]);
      index = index * sizes[axis] + c[axis];
    }
    return index;
  }
  Coord Decode(int index, const Coord& sizes) const {
    Coord c{};
    for (Axis a : spec_.parallel.order) {
      const auto axis = static_cast<size_t>(a);
      c[axis] = index % sizes[axis];
      index /= sizes[axis];
    }
    return c;
  }
  // The communicator of `kind` through coordinates `c` (the axes it spans are ignored).
  std::string GroupName(const char* kind, const Coord& c) const {
    const std::string_view k = kind;
    const int dp_index = c[kEpAxis] + dims_.full[kEpAxis] * c[kEdpAxis];
    const bool cp = dims_.full[kCpAxis] > 1;
    std::string name(kind);
    if (k != "tp") name += fmt::format(".t{}", c[kTpAxis]);
    if (cp && (k == "tp" || k == "pp" || k == "ep")) name += fmt::format(".c{}", c[kCpAxis]);
    if (k == "tp" || k == "pp" || k == "cp") name += fmt::format(".d{}", dp_index);
    if (k == "ep") name += fmt::format(".x{}", c[kEdpAxis]);
    if (k == "edp") name += fmt::format(".e{}", c[kEpAxis]);
    if (k != "pp") name += fmt::format(".p{}", c[kPpAxis]);
    return name;
  }
  NameId Name(const std::string& name) const { return names_.Intern(name); }

  const WorkloadSpec& spec_;
  const netmodel::Cluster& cluster_;
  Dims dims_;
  int head_dim_ = 0;
  std::int64_t tokens_ = 0;  // per micro-batch on one rank (seq / cp of each sequence)
  mutable NameTable names_;
  std::vector<CommunicatorSpec> comms_;

 private:
  // Every coordinate within `sizes`, the last axis slowest.
  template <typename F>
  static void ForEach(const Coord& sizes, F&& f) {
    Coord c{};
    while (true) {
      f(c);
      int axis = 0;
      while (axis < kAxes && ++c[static_cast<size_t>(axis)] == sizes[static_cast<size_t>(axis)])
        c[static_cast<size_t>(axis++)] = 0;
      if (axis == kAxes) return;
    }
  }
  // Adds the communicator of ranks through `base` varying `axes`; `folded` ones are timed on
  // the full axes' GPUs when the simulated replicas are fewer.
  void AddGroup(const char* kind, const Coord& base, std::vector<Axis> axes, bool folded) {
    CommunicatorSpec spec{names_.Intern(GroupName(kind, base)), {}, {}};
    auto members = [&](const Coord& sizes, bool gpus) {
      Coord extent{};
      extent.fill(1);
      for (Axis a : axes) extent[static_cast<size_t>(a)] = sizes[static_cast<size_t>(a)];
      // Members in rank order.
      std::vector<int> out;
      ForEach(extent, [&](const Coord& offset) {
        Coord c = base;
        for (Axis a : axes) c[static_cast<size_t>(a)] = offset[static_cast<size_t>(a)];
        out.push_back(gpus ? Linear(c, dims_.full) : Linear(c, dims_.sim));
      });
      std::sort(out.begin(), out.end());
      return out;
    };
    spec.ranks = members(dims_.sim, false);
    if (folded && dims_.sim != dims_.full) spec.gpus = members(dims_.full, true);
    comms_.push_back(std::move(spec));
  }
};

RankSource::RankSource(const SyntheticWorkload& w, int rank)
    : RankSource(w, rank, w.Decode(rank, w.dims_.sim)) {}

RankSource::RankSource(const SyntheticWorkload& w, int /*rank*/, const Coord& coord)
    : w_(w), at_(coord) {
  const WorkloadSpec& spec = w.spec_;
  const ModelSpec& m = spec.model;
  const ParallelSpec& par = spec.parallel;
  tp_comm_ = w.Name(w.GroupName("tp", at_));
  pp_comm_ = w.Name(w.GroupName("pp", at_));
  dp_comm_ = w.Name(w.GroupName("dp", at_));
  if (par.cp > 1) cp_comm_ = w.Name(w.GroupName("cp", at_));
  if (par.ep > 1) {
    ep_comm_ = w.Name(w.GroupName("ep", at_));
    edp_comm_ = w.Name(w.GroupName("edp", at_));
  }
  dense_shards_ = par.dense_shards(w.dims_.dp());
  expert_shards_ = par.expert_shards(w.dims_.dp());
  zero1_ = par.distributed_optimizer && dense_shards_ > 1;
  fsdp_ = par.fsdp && dense_shards_ > 1;
  pipelined_fsdp2_ = fsdp_ && par.fsdp_per_parameter && par.pp > 1;
  zero2_ = zero1_ && par.shard_gradients;
  overlap_p2p_ = w.spec_.training.overlap_p2p_comm && par.pp > 1 && par.virtual_stages > 1;

  // The units of each chunk with this rank's parameters, as WorkloadSpec::rank_memory counts
  // them: the first stage holds the embeddings, the last the final norm and the output layer
  // (a tied model keeps a copy of the embedding there when pp > 1).
  const int stage = at_[kPpAxis], pp = par.pp;
  const double tp = par.tp, h = m.hidden;
  const bool gpt = m.activation == Activation::kGelu;
  const double experts = spec.expert_parameters() * m.experts / (tp * par.ep);
  for (int c = 0; c < par.virtual_stages; ++c) {
    std::vector<Unit> units;
    const auto [first, end] = spec.ChunkLayers(stage, c);
    if (stage == 0 && c == 0)
      units.push_back({Unit::kEmbedding, -1, (m.vocab * h + (gpt ? m.seq * h : 0.0)) / tp, 0.0});
    for (int l = first; l < end; ++l)
      units.push_back(
          {Unit::kLayer, l, spec.layer_dense_parameters(l) / tp, m.IsMoeLayer(l) ? experts : 0.0});
    if (stage == pp - 1 && c == par.virtual_stages - 1) {
      const double output = (!m.tied_embeddings || pp > 1) ? m.vocab * h : 0.0;
      units.push_back({Unit::kOutput, -1, (output + (gpt ? 2 * h : h)) / tp, 0.0});
    }
    for (const Unit& u : units) {
      if (u.kind == Unit::kLayer) layer_dense_params_ += u.dense_params;
      dense_params_ += u.dense_params;
      expert_params_ += u.expert_params;
    }
    chunks_.push_back(std::move(units));
    activation_bytes_.push_back(static_cast<std::uint64_t>(spec.activation_bytes(first, end)));
  }
  const WorkloadSpec::RankMemory mem = spec.rank_memory(w.cluster_.total_gpus(), stage);
  state_bytes_ = static_cast<std::uint64_t>(mem.weights + mem.gradients + mem.optimizer);
  const int micro = spec.micro_batches();
  schedule_ = par.virtual_stages > 1
                  ? InterleavedOneForwardOneBackward(pp, par.virtual_stages, micro, stage)
                  : OneForwardOneBackward(pp, micro, stage);
}

// FP8 training as Transformer Engine runs it: the linear layers' GEMMs (forward, dgrad,
// wgrad) in FP8, the output layer, the MoE router and unfused attention in BF16. Each FP8 GEMM
// needs its operands quantized with a transposed copy for the backward (TE's cast_transpose:
// read 2 B, write 1 + 1 B per element): a forward GEMM's input unless the kernel before it
// writes FP8 itself (TE fuses the cast into LayerNormLinear's norm and LayerNormMLP's
// activation), a dgrad GEMM's output gradient, and the weights once per iteration (TE caches
// them from the first micro-batch).
enum class Fp8Role { kBf16, kForward, kForwardFusedInput, kDgrad, kWgrad };

Fp8Role RoleOf(std::string_view name) {
  for (std::string_view bf16 :
       {"gemm_logits", "gemm_moe_router", "gemm_attention_scores", "gemm_attention_values"})
    if (name.substr(0, bf16.size()) == bf16) return Fp8Role::kBf16;
  auto ends = [&](std::string_view suffix) {
    return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
  };
  if (ends("_dgrad")) return Fp8Role::kDgrad;
  if (ends("_wgrad")) return Fp8Role::kWgrad;
  for (std::string_view fused : {"gemm_qkv", "gemm_mlp_up", "gemm_mlp_down",
                                 "gemm_shared_expert_up", "gemm_shared_expert_down"})
    if (name == fused) return Fp8Role::kForwardFusedInput;
  return Fp8Role::kForward;
}

// Current scaling (Fp8Scaling::kCurrent) needs a tensor's amax before its cast: a pass that
// reads it (TE's nvte_compute_amax, then the cast), except where the kernel before writes the
// BF16 tensor and its amax together (TE's FUSED_NORM_AMAX_FP8 norm and its activations with
// current scaling), which then is cast on its own instead of in that kernel. With sequence
// parallelism the column-parallel layers' inputs are cast before their gather, on one rank's
// share of the tokens, and their amax is reduced over the tensor-parallel group so that every
// rank casts with the same scale (TE's amax reduction group: column-parallel and
// sequence-parallel).
constexpr double kFp8AmaxBytesPerElement = 2;  // bf16 in

bool ColumnParallelInput(std::string_view name) {
  return name == "gemm_qkv" || name == "gemm_mlp_up" || name == "gemm_shared_expert_up";
}

constexpr double kFp8CastBytesPerElement = 2 + 1 + 1;   // bf16 in, fp8 and its transpose out
constexpr double kFp8TransposeBytesPerElement = 1 + 1;  // fp8 in, its transpose out

// The GEMMs whose tensor-parallel collective Transformer Engine's userbuffers overlap by ring
// exchange: the gathers before the QKV and MLP up projections' forward and the output and down
// projections' input gradients, and the reduce-scatters after the output and down projections'
// forward (TE's qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad, proj_fprop, fc2_fprop; Megatron-
// Bridge's H100 configs for Llama 3 70B and 3.1 405B, FP8 and BF16, name RingExchangeOverlapCfg
// with aggregate=False for all six). TE runs each as tp GEMMs over a tp-th of the tokens: the
// chunk just received, or the chunk to send on (CommOverlapP2PBase::split_overlap_ag/_rs).
bool RingExchangeGemm(std::string_view name) {
  for (std::string_view ring : {"gemm_qkv", "gemm_mlp_up", "gemm_attention_out_dgrad",
                                "gemm_mlp_down_dgrad", "gemm_attention_out", "gemm_mlp_down"})
    if (name == ring) return true;
  return false;
}

void RankSource::Gemm(const char* name, std::int64_t m, std::int64_t n, std::int64_t k,
                      std::int64_t batch) {
  const bool fp8 = w_.spec_.training.precision == DataType::kFloat8e4m3;
  const Fp8Role role = fp8 ? RoleOf(name) : Fp8Role::kBf16;
  const double elements = static_cast<double>(m) * static_cast<double>(k) * batch;
  const ParallelSpec& par = w_.spec_.parallel;
  const bool current = fp8 && w_.spec_.training.fp8_scaling == Fp8Scaling::kCurrent;
  if (current && role == Fp8Role::kForwardFusedInput) {
    const bool gathered = par.tp > 1 && par.sequence_parallel && ColumnParallelInput(name);
    Streaming("fp8_cast_transpose", elements / (gathered ? par.tp : 1) * kFp8CastBytesPerElement);
    if (gathered)
      Collective(kComputeStream, tp_comm_, netmodel::CollectiveOp::kAllReduce, 1,
                 DataType::kFloat32);
  }
  if (role == Fp8Role::kForward || role == Fp8Role::kDgrad) {
    if (current) Streaming("fp8_amax_reduce", elements * kFp8AmaxBytesPerElement);
    Streaming("fp8_cast_transpose", elements * kFp8CastBytesPerElement);
  }
  if ((role == Fp8Role::kForward || role == Fp8Role::kForwardFusedInput) && first_micro_batch_)
    Streaming("fp8_cast_transpose_weight",
              static_cast<double>(n) * static_cast<double>(k) * batch *
                  (w_.spec_.training.fp8_param_gather ? kFp8TransposeBytesPerElement
                                                      : kFp8CastBytesPerElement));
  Op op;
  op.kind = OpKind::kKernel;
  op.stream = kComputeStream;
  op.name = w_.Name(name);
  op.gemm = {m, n, k, batch,
             fp8 && role == Fp8Role::kBf16 ? DataType::kBfloat16 : w_.spec_.training.precision};
  // Transformer Engine and torchao accumulate the forward's FP8 products fast and promote the
  // backward's to FP32 (TE's _2X_ACC_FPROP = False, _2X_ACC_DGRAD = _2X_ACC_WGRAD = True;
  // torchao's Float8LinearConfig: use_fast_accum for the output GEMM only).
  op.gemm.fast_accumulation = role == Fp8Role::kForward || role == Fp8Role::kForwardFusedInput;
  const int chunks = par.tp_comm_overlap && par.tp > 1 && RingExchangeGemm(name) ? par.tp : 1;
  for (int c = 0; c < chunks; ++c) {  // the tokens split as evenly as they go
    op.gemm.m = m / chunks + (c < m % chunks ? 1 : 0);
    buffer_.push_back(op);
  }
  last_gemm_ops_ = chunks;
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
void RankSource::ForkedTpCollective(netmodel::CollectiveOp coll, DataType dtype) {
  RecordEvent(kComputeStream, kTpForkEvent);
  WaitEvent(kTpCommStream, kTpForkEvent);
  TpCollective(coll, dtype);
  buffer_.back().stream = kTpCommStream;
  RecordEvent(kTpCommStream, kTpJoinEvent);
}

void RankSource::Streaming(const char* name, double bytes, std::int32_t stream) {
  Op op;
  op.kind = OpKind::kKernel;
  op.stream = stream;
  op.name = w_.Name(name);
  op.bytes = static_cast<std::uint64_t>(bytes);
  buffer_.push_back(op);
}

// The BF16 activations the element-wise and normalisation kernels outside the TP blocks see:
// the whole sequence, or 1/tp of it under sequence parallelism.
double RankSource::ActivationBytes() const {
  return static_cast<double>(w_.tokens_) * w_.spec_.model.hidden * 2 /
         (w_.spec_.parallel.sequence_parallel ? w_.spec_.parallel.tp : 1);
}

// One of PyTorch's own kernels, named as PyTorch names it so that its kernel model times it.
void RankSource::Eager(workload::EagerKernel kernel, double bytes) {
  Op op;
  op.kind = OpKind::kKernel;
  op.stream = kComputeStream;
  NameId& name = eager_names_[static_cast<std::size_t>(kernel)];
  if (name == 0) name = w_.Name(std::string(workload::EagerKernelName(kernel)));
  op.name = name;
  op.bytes = static_cast<std::uint64_t>(bytes);
  buffer_.push_back(op);
}

// A normalisation over the activations (act_bytes of BF16 on this rank): Transformer Engine's
// fused kernel, or PyTorch's layer-norm kernels (which nn.RMSNorm runs), their bytes as the
// PyTorch kernel model counts them: the rows read and written, two FP32 statistics a row, the
// weight (and its gradient).
void RankSource::Norm(bool forward, double act_bytes) {
  if (w_.spec_.training.kernels == LayerKernels::kFused) {
    Streaming(forward ? "layernorm" : "layernorm_backward", (forward ? 2 : 3) * act_bytes);
    return;
  }
  const double n = w_.spec_.model.hidden, rows = act_bytes / (2 * n);
  if (forward) {
    Eager(workload::EagerKernel::kNormForward, 2 * act_bytes + 2 * rows * 4 + 2 * n * 2);
    return;
  }
  Eager(workload::EagerKernel::kNormBackwardInput, 3 * act_bytes + 2 * rows * 4 + 2 * n * 2);
  Eager(workload::EagerKernel::kNormBackwardWeight, 2 * act_bytes + 2 * rows * 4 + 2 * n * 2);
}

// A residual connection: the sum in the forward, the sum of the two gradients that reach its
// input in the backward (the skip path's and the branch's); fused with bias and dropout in
// Megatron.
void RankSource::Residual(bool forward, double act_bytes) {
  if (w_.spec_.training.kernels == LayerKernels::kFused) {
    Streaming(forward ? "bias_dropout_add" : "bias_dropout_add_backward", 3 * act_bytes);
    return;
  }
  Eager(workload::EagerKernel::kAdd, 3 * act_bytes);
}

// Rotary embeddings as torchtitan's Llama applies them in eager PyTorch: the fused QKV
// output's query, key and value views copied to contiguous tensors, query and key upcast to
// FP32, multiplied as complex numbers by the frequencies (a small table that stays in L2:
// one complex read and one written per pair) and cast back; the backward runs the same
// chain on their gradients and copies the three into the QKV gradient. Megatron fuses all of
// it into the attention kernels' neighbours (not counted).
void RankSource::Rope(bool forward) {
  if (w_.spec_.training.kernels == LayerKernels::kFused) return;
  const ModelSpec& m = w_.spec_.model;
  const int tp = w_.spec_.parallel.tp;
  const double t = static_cast<double>(w_.tokens_);
  const double q = static_cast<double>(m.heads / tp) * w_.head_dim_;
  const double kv = static_cast<double>(std::max(1, m.kv_heads / tp)) * w_.head_dim_;
  using workload::EagerKernel;
  const auto copies = [&] {
    for (double width : {q, kv, kv}) Eager(EagerKernel::kStridedCopy, t * width * 2 * 2);
  };
  if (forward) copies();
  for (double width : {q, kv}) Eager(EagerKernel::kToFloat, t * width * (2 + 4));
  for (double width : {q, kv}) Eager(EagerKernel::kComplexMul, t * width * (4 + 4));
  for (double width : {q, kv}) Eager(EagerKernel::kToBfloat16, t * width * (4 + 2));
  if (!forward) copies();
}

// The forward ops op-level selective checkpointing reruns before a layer's backward: every
// elementwise and normalisation op, and the layer's second and fourth matmuls (the output
// projection; SwiGLU's up projection, GeLU's down projection). The recomputed tensors are
// the backward's own, so no collective reruns with them (the TP all-gathers do not repeat).
void RankSource::LayerForwardRecompute(bool moe) {
  const ModelSpec& m = w_.spec_.model;
  const int tp = w_.spec_.parallel.tp;
  const std::int64_t t = w_.tokens_, h = m.hidden;
  const std::int64_t attn = m.heads / tp * w_.head_dim_;
  const double act_bytes = ActivationBytes();
  Norm(true, act_bytes);
  Rope(true);
  Gemm("gemm_attention_out_recompute", t, h, attn);
  Residual(true, act_bytes);
  Norm(true, act_bytes);
  if (moe) return;
  const bool swiglu = m.activation == Activation::kSwiglu;
  const double inner = static_cast<double>(t) * static_cast<double>(m.ffn / tp);
  if (swiglu) {
    Gemm("gemm_mlp_up_recompute", t, m.ffn / tp, h);
  } else {
    Gemm("gemm_mlp_down_recompute", t, h, m.ffn / tp);
  }
  MlpActivation(true, inner);
  Residual(true, act_bytes);
}

void RankSource::FlashAttention(bool backward, std::int64_t seq_q, std::int64_t seq_kv,
                                bool causal) {
  const ModelSpec& m = w_.spec_.model;
  Op op;
  op.kind = OpKind::kKernel;
  op.stream = kComputeStream;
  op.name = w_.Name(backward ? "flash_attention_backward" : "flash_attention_forward");
  op.attention.batch = w_.spec_.training.micro_batch;
  op.attention.heads = m.heads / w_.spec_.parallel.tp;
  op.attention.seq_q = seq_q;
  op.attention.seq_kv = seq_kv;
  op.attention.head_dim = w_.head_dim_;
  op.attention.causal = causal;
  op.attention.backward = backward;
  op.attention.kernel = w_.spec_.training.attention_kernel;
  op.attention.dtype = w_.spec_.training.precision == DataType::kFloat8e4m3
                           ? DataType::kBfloat16  // attention stays in bf16 under FP8 training
                           : w_.spec_.training.precision;
  buffer_.push_back(op);
}

void RankSource::Attention(bool backward) {
  const ModelSpec& m = w_.spec_.model;
  const int tp = w_.spec_.parallel.tp, cp = w_.spec_.parallel.cp;
  if (!w_.spec_.training.flash_attention) {
    // Scores of b x heads x s x s, in bf16: two batched GEMMs around the scale-mask-softmax
    // and dropout kernels that stream them (read and write, plus the dropout mask).
    const std::int64_t heads = m.heads / tp, s = m.seq, hd = w_.head_dim_;
    const std::int64_t batch = static_cast<std::int64_t>(w_.spec_.training.micro_batch) * heads;
    const double scores = static_cast<double>(batch) * static_cast<double>(s) * s * 2;
    if (!backward) {
      Gemm("gemm_attention_scores", s, s, hd, batch);
      Streaming("scale_mask_softmax", 2 * scores);
      Streaming("attention_dropout", 2.5 * scores);
      Gemm("gemm_attention_values", s, hd, s, batch);
    } else {
      Gemm("gemm_attention_values_dgrad", s, s, hd, batch);
      Gemm("gemm_attention_values_wgrad", s, hd, s, batch);
      Streaming("attention_dropout_backward", 2.5 * scores);
      Streaming("scale_mask_softmax_backward", 3 * scores);
      Gemm("gemm_attention_scores_dgrad", s, hd, s, batch);
      Gemm("gemm_attention_scores_wgrad", s, hd, s, batch);
    }
    return;
  }
  if (cp == 1) {
    FlashAttention(backward, m.seq, m.seq, true);
    return;
  }
  // Ring attention (Megatron's context parallelism): the sequence is cut into 2 cp chunks and
  // rank c holds chunks c and 2 cp - 1 - c, so causal work is balanced. Step 0 attends the
  // local queries to the local keys (causal); each of the cp - 1 later steps to the keys and
  // values received from the previous rank, of which the causal mask keeps half. Each step's
  // exchange (send to the next rank, receive from the previous, on a side stream) overlaps
  // the step before it. The backward pass also carries the key/value gradients.
  const std::int64_t local = w_.tokens_ / w_.spec_.training.micro_batch;  // seq / cp
  const std::uint64_t kv = 2 * static_cast<std::uint64_t>(w_.tokens_) *
                           static_cast<std::uint64_t>(m.kv_heads / tp) *
                           static_cast<std::uint64_t>(w_.head_dim_) * (backward ? 2 : 1);
  const int c = at_[kCpAxis];
  for (int step = 0; step < cp; ++step) {
    const bool exchange = step + 1 < cp;
    if (exchange) {
      RecordEvent(kComputeStream, kCpForkEvent);
      WaitEvent(kCpCommStream, kCpForkEvent);
      GroupBoundary(OpKind::kGroupStart);
      P2p(kCpCommStream, cp_comm_, OpKind::kSend, (c + 1) % cp, kv);
      P2p(kCpCommStream, cp_comm_, OpKind::kRecv, (c + cp - 1) % cp, kv);
      GroupBoundary(OpKind::kGroupEnd);
      RecordEvent(kCpCommStream, kCpJoinEvent);
    }
    FlashAttention(backward, local, step == 0 ? local : local / 2, step == 0);
    if (exchange) WaitEvent(kComputeStream, kCpJoinEvent);
  }
}

// Collective `coll` over the ranks sharing this rank's weights: dense parameters over the dp
// group, expert parameters over the edp group when expert parallelism splits it from dp
// (without it, with the dense ones). NCCL counts: all of them for an AllReduce, one shard for
// the others. Nothing moves for a group of one.
void RankSource::DataParallelCollective(std::int32_t stream, netmodel::CollectiveOp coll,
                                        DataType dtype, double dense, double experts) {
  auto one = [&](NameId comm, double params, int shards) {
    if (shards <= 1 || params <= 0) return;
    const double count = coll == netmodel::CollectiveOp::kAllReduce ? params : params / shards;
    Collective(stream, comm, coll, static_cast<std::uint64_t>(count), dtype);
  };
  if (w_.spec_.parallel.ep > 1) {
    one(dp_comm_, dense, dense_shards_);
    one(edp_comm_, experts, expert_shards_);
  } else {
    one(dp_comm_, dense + experts, dense_shards_);
  }
}

// Data-parallel reduction of gradients in training.grad_reduce_dtype (fp32 by default, as
// Megatron reduces main_grad): an AllReduce, or a ReduceScatter to the shards with the
// distributed optimizer or FSDP.
void RankSource::GradientReduce(std::int32_t stream, double dense, double experts) {
  const ParallelSpec& par = w_.spec_.parallel;
  // FSDP2 copies the gradients into the reduce-scatter's input, rank by rank, in the reduce
  // type (torch._chunk_cat in foreach_reduce, on its reduce-scatter stream).
  if (fsdp_ && par.fsdp_per_parameter)
    Streaming("fsdp_grad_chunk_cat",
              (dense + experts) * (2 + SizeOf(w_.spec_.training.grad_reduce_dtype)), stream);
  DataParallelCollective(stream,
                         par.distributed_optimizer || par.fsdp
                             ? netmodel::CollectiveOp::kReduceScatter
                             : netmodel::CollectiveOp::kAllReduce,
                         w_.spec_.training.grad_reduce_dtype, dense, experts);
}

// The weights gathered from their shards: BF16, or with fp8_param_gather the transformer
// layers' as FP8 (their own buffers, so their own collectives) and the rest as BF16.
void RankSource::GatherWeights(std::int32_t stream, double dense, double experts,
                               double layer_dense) {
  if (!w_.spec_.training.fp8_param_gather) {
    DataParallelCollective(stream, netmodel::CollectiveOp::kAllGather, DataType::kBfloat16, dense,
                           experts);
    return;
  }
  DataParallelCollective(stream, netmodel::CollectiveOp::kAllGather, DataType::kFloat8e4m3,
                         layer_dense, experts);
  DataParallelCollective(stream, netmodel::CollectiveOp::kAllGather, DataType::kBfloat16,
                         dense - layer_dense, 0.0);
}

// The bf16 weights of `unit` gathered from their shards before it computes: FSDP on every
// visit (each forward and backward) unless it kept them gathered (`fsdp_kept`), the
// distributed optimizer's updated weights on the first
// forward of an iteration when overlap_param_gather defers them from the optimizer step. With
// overlap_param_gather the gather runs on its own stream as soon as the compute stream starts
// the unit before.
void RankSource::ParamGather(const Unit& unit, bool first_visit, bool fsdp_kept) {
  const bool overlap = w_.spec_.training.overlap_param_gather;
  const bool gather = (fsdp_ && !fsdp_kept) || (zero1_ && overlap && first_visit);
  const std::int32_t stream = overlap ? kGatherStream : kComputeStream;
  // FSDP2 (per-parameter sharding) casts the FP32 shards into the all-gather's BF16 input
  // (foreach_all_gather's copy-in, on its gather stream) and copies the gathered rows out to
  // each parameter (split_with_sizes_copy, on the compute stream once the gather is done).
  const bool copies = fsdp_ && w_.spec_.parallel.fsdp_per_parameter;
  if (gather) {
    if (overlap) WaitEvent(kGatherStream, kUnitStartedEvent);
    if (copies)
      Streaming("fsdp_all_gather_copy_in",
                (unit.dense_params / dense_shards_ + unit.expert_params / expert_shards_) * (4 + 2),
                stream);
    GatherWeights(stream, unit.dense_params, unit.expert_params,
                  unit.kind == Unit::kLayer ? unit.dense_params : 0.0);
    if (overlap) {
      RecordEvent(kGatherStream, kGatheredEvent);
      WaitEvent(kComputeStream, kGatheredEvent);
    }
    if (copies)
      Streaming("fsdp_all_gather_copy_out", (unit.dense_params + unit.expert_params) * (2 + 2));
  }
  if (overlap) RecordEvent(kComputeStream, kUnitStartedEvent);
}

void RankSource::TpCollective(netmodel::CollectiveOp coll, DataType dtype) {
  // NCCL counts: the whole activation for AllReduce, one rank's share for the others.
  const std::uint64_t elements =
      static_cast<std::uint64_t>(w_.tokens_) * static_cast<std::uint64_t>(w_.spec_.model.hidden);
  Collective(kComputeStream, tp_comm_, coll,
             coll == netmodel::CollectiveOp::kAllReduce
                 ? elements
                 : elements / static_cast<std::uint64_t>(w_.spec_.parallel.tp),
             dtype);
}

// Into a tensor-parallel block: with sequence parallelism the sequence-sharded activation is
// gathered (or, backward, the output gradient of the block's row-parallel GEMM); without it
// nothing moves. FP8 training casts the activation on its shard and gathers it as FP8
// (Transformer Engine's FP8 norm output; torchao's PrepareFloat8ModuleInput); gradients are
// gathered as BF16.
void RankSource::TpGather(bool gradient) {
  if (w_.spec_.parallel.tp == 1 || !w_.spec_.parallel.sequence_parallel) return;
  const DataType dtype = !gradient && w_.spec_.training.precision == DataType::kFloat8e4m3
                             ? DataType::kFloat8e4m3
                             : DataType::kBfloat16;
  if (!w_.spec_.parallel.tp_comm_overlap) {
    TpCollective(netmodel::CollectiveOp::kAllGather, dtype);
    return;
  }
  // Overlapped (Transformer Engine's userbuffers pipeline the gather with the GEMM that
  // consumes it, chunk by chunk): the gather runs beside the next GEMM, which is joined.
  ForkedTpCollective(netmodel::CollectiveOp::kAllGather, dtype);
  join_after_next_gemm_ = true;
}

// Out of one: the partial sums are all-reduced, or reduce-scattered back to sequence shards.
// `input_gradient`: the backward's, of the block's input (the column-parallel GEMMs' summed
// input gradients).
void RankSource::TpReduce(bool input_gradient) {
  const ParallelSpec& par = w_.spec_.parallel;
  if (par.tp == 1) return;
  // PyTorch's async TP fuses a reduce-scatter only with the matmul that produces its input;
  // the input gradient is a sum of matmuls (q, k and v; gate and up), so it is reduced alone.
  if (!par.tp_comm_overlap || (par.tp_comm_overlap_pytorch && input_gradient)) {
    TpCollective(w_.spec_.parallel.sequence_parallel ? netmodel::CollectiveOp::kReduceScatter
                                                     : netmodel::CollectiveOp::kAllReduce);
    return;
  }
  // Overlapped: the reduce-scatter runs beside the GEMM just emitted (the one producing its
  // input, chunk by chunk), and the compute stream joins it after that GEMM. A ring exchange
  // then sums the tp partial chunks it received into this rank's shard (TE's reduce_bf16:
  // read tp chunks, write one, BF16).
  const std::vector<Op> gemm(buffer_.end() - last_gemm_ops_, buffer_.end());
  buffer_.resize(buffer_.size() - static_cast<size_t>(last_gemm_ops_));
  ForkedTpCollective(netmodel::CollectiveOp::kReduceScatter);
  buffer_.insert(buffer_.end(), gemm.begin(), gemm.end());
  WaitEvent(kComputeStream, kTpJoinEvent);
  if (gemm.size() > 1) {
    const double output = static_cast<double>(w_.tokens_) * static_cast<double>(gemm[0].gemm.n);
    Streaming(par.tp_comm_overlap_pytorch ? "async_tp_reduce" : "userbuffers_reduce",
              2 * output * (1 + 1.0 / static_cast<double>(gemm.size())));
  }
}

// The dense MLP of a layer on this TP rank (column-parallel up, row-parallel down), forward or
// backward.
void RankSource::DenseMlp(bool forward) {
  const ModelSpec& m = w_.spec_.model;
  const int tp = w_.spec_.parallel.tp;
  const std::int64_t t = w_.tokens_, h = m.hidden;
  const std::int64_t up = (m.activation == Activation::kSwiglu ? 2 : 1) * m.ffn / tp;
  const std::int64_t down = m.ffn / tp;
  const double inner = static_cast<double>(t) * static_cast<double>(down);
  TpGather(!forward);
  if (forward) {
    Gemm("gemm_mlp_up", t, up, h);
    MlpActivation(true, inner);
    Gemm("gemm_mlp_down", t, h, down);
  } else {
    Gemm("gemm_mlp_down_dgrad", t, down, h);
    Gemm("gemm_mlp_down_wgrad", h, down, t);
    MlpActivation(false, inner);
    Gemm("gemm_mlp_up_dgrad", t, h, up);
    Gemm("gemm_mlp_up_wgrad", up, h, t);
    // Eager SwiGLU's gate and up projections are two matmuls on one input: its gradient is
    // their two input gradients' sum.
    if (w_.spec_.training.kernels == LayerKernels::kEager && m.activation == Activation::kSwiglu)
      Eager(workload::EagerKernel::kAdd, 3.0 * static_cast<double>(t) * h * 2);
  }
  TpReduce(!forward);
}

// The MLP's activation over its inner width (inner = tokens x ffn / tp elements): one fused
// kernel that reads the up projection's output (both halves for SwiGLU) and writes the
// activation, or eager PyTorch's silu and gate product (gelu), and their backward: the gate
// product's two gradients, then silu's (or gelu's).
void RankSource::MlpActivation(bool forward, double inner) {
  const bool swiglu = w_.spec_.model.activation == Activation::kSwiglu;
  if (w_.spec_.training.kernels == LayerKernels::kFused) {
    const double act = inner * (swiglu ? 3 : 2);
    if (forward) {
      Streaming(swiglu ? "swiglu" : "gelu", act * 2);
    } else {
      Streaming(swiglu ? "swiglu_backward" : "gelu_backward", act * 3);
    }
    return;
  }
  using workload::EagerKernel;
  if (!swiglu) {
    Eager(forward ? EagerKernel::kGelu : EagerKernel::kGeluBackward, inner * 2 * (forward ? 2 : 3));
    return;
  }
  if (forward) {
    Eager(EagerKernel::kSilu, inner * 2 * 2);
    Eager(EagerKernel::kMul, inner * 2 * 3);
    return;
  }
  Eager(EagerKernel::kMul, inner * 2 * 3);
  Eager(EagerKernel::kMul, inner * 2 * 3);
  Eager(EagerKernel::kSiluBackward, inner * 2 * 3);
}

// An MoE layer's MLP on this rank (Megatron's alltoall token dispatcher): the router scores
// the tokens (sequence-sharded under sequence parallelism); the TP group's tokens are
// gathered, permuted by expert and sent to the experts' ranks by an AllToAll over the ep
// group; each rank's E / ep local experts run as one grouped GEMM (each expert TP-split like
// the dense MLP) on t x top_k x capacity / (E / ep) tokens apiece; a second AllToAll brings
// the outputs back, they are unpermuted, the shared expert (if any) adds its MLP, and the TP
// block ends as a dense MLP does.
void RankSource::MoeMlp(bool forward) {
  const ModelSpec& m = w_.spec_.model;
  const ParallelSpec& par = w_.spec_.parallel;
  const int tp = par.tp, ep = par.ep;
  const std::int64_t t = w_.tokens_, h = m.hidden;
  const bool swiglu = m.activation == Activation::kSwiglu;
  const std::int64_t router_tokens = par.sequence_parallel ? t / tp : t;
  const double routed = static_cast<double>(t) * m.top_k * m.moe_capacity_factor;
  const std::int64_t local_experts = m.experts / ep;
  const auto per_expert = static_cast<std::int64_t>(std::ceil(routed / local_experts));
  const std::int64_t up = (swiglu ? 2 : 1) * m.moe_ffn / tp, down = m.moe_ffn / tp;
  const std::int64_t shared_up = (swiglu ? 2 : 1) * m.moe_shared_ffn / tp;
  const std::int64_t shared_down = m.moe_shared_ffn / tp;
  const double permuted_bytes = routed * static_cast<double>(h) * 2;
  auto all_to_all = [&]() {
    if (ep == 1) return;
    // NCCL's count is per peer: each rank sends its routed copies, 1/ep to each.
    Collective(kComputeStream, ep_comm_, netmodel::CollectiveOp::kAllToAll,
               static_cast<std::uint64_t>(routed * static_cast<double>(h) / ep),
               DataType::kBfloat16);
  };
  const double expert_act = routed * static_cast<double>(up + down);
  const double shared_act = static_cast<double>(t) * static_cast<double>(shared_up + shared_down);
  if (forward) {
    Gemm("gemm_moe_router", router_tokens, m.experts, h);
    TpGather();
    Streaming("moe_permute", 2 * permuted_bytes);
    all_to_all();
    Gemm("gemm_expert_up", per_expert, up, h, local_experts);
    Streaming(swiglu ? "swiglu" : "gelu", expert_act * 2);
    Gemm("gemm_expert_down", per_expert, h, down, local_experts);
    all_to_all();
    Streaming("moe_unpermute", 2 * permuted_bytes);
    if (m.moe_shared_ffn > 0) {
      Gemm("gemm_shared_expert_up", t, shared_up, h);
      Streaming(swiglu ? "swiglu" : "gelu", shared_act * 2);
      Gemm("gemm_shared_expert_down", t, h, shared_down);
    }
    TpReduce();
    return;
  }
  TpGather(true);
  if (m.moe_shared_ffn > 0) {
    Gemm("gemm_shared_expert_down_dgrad", t, shared_down, h);
    Gemm("gemm_shared_expert_down_wgrad", h, shared_down, t);
    Streaming(swiglu ? "swiglu_backward" : "gelu_backward", shared_act * 3);
    Gemm("gemm_shared_expert_up_dgrad", t, h, shared_up);
    Gemm("gemm_shared_expert_up_wgrad", shared_up, h, t);
  }
  Streaming("moe_unpermute_backward", 2 * permuted_bytes);
  all_to_all();
  Gemm("gemm_expert_down_dgrad", per_expert, down, h, local_experts);
  Gemm("gemm_expert_down_wgrad", h, down, per_expert, local_experts);
  Streaming(swiglu ? "swiglu_backward" : "gelu_backward", expert_act * 3);
  Gemm("gemm_expert_up_dgrad", per_expert, h, up, local_experts);
  Gemm("gemm_expert_up_wgrad", up, h, per_expert, local_experts);
  all_to_all();
  Streaming("moe_permute_backward", 2 * permuted_bytes);
  Gemm("gemm_moe_router_dgrad", router_tokens, h, m.experts);
  Gemm("gemm_moe_router_wgrad", m.experts, h, router_tokens);
  TpReduce(true);
}

// One transformer layer's forward (or its backward) on this TP rank.
void RankSource::Layer(int layer, bool forward) {
  const ModelSpec& m = w_.spec_.model;
  const int tp = w_.spec_.parallel.tp;
  const std::int64_t t = w_.tokens_, h = m.hidden, hd = w_.head_dim_;
  const std::int64_t qkv = (m.heads / tp + 2 * (m.kv_heads / tp > 0 ? m.kv_heads / tp : 1)) * hd;
  const std::int64_t attn = m.heads / tp * hd;
  const bool moe = m.IsMoeLayer(layer);
  const double act_bytes = ActivationBytes();
  if (forward) {
    Norm(true, act_bytes);
    TpGather();
    Gemm("gemm_qkv", t, qkv, h);
    Rope(true);
    Attention(false);
    Gemm("gemm_attention_out", t, h, attn);
    TpReduce();
    Residual(true, act_bytes);  // fused: bias, dropout and the sum
    Norm(true, act_bytes);
    moe ? MoeMlp(true) : DenseMlp(true);
    Residual(true, act_bytes);
    return;
  }
  if (w_.spec_.training.recompute == Recompute::kSelectiveOp) LayerForwardRecompute(moe);
  // Backward, in reverse: input gradient (dgrad) and weight gradient (wgrad) per GEMM. Each
  // collective's backward is its dual: a reduce-scatter's is an all-gather, an all-gather's a
  // reduce-scatter, and without sequence parallelism the column-parallel block's input
  // gradient is all-reduced.
  const bool fused = w_.spec_.training.kernels == LayerKernels::kFused;
  if (fused) Residual(false, act_bytes);
  moe ? MoeMlp(false) : DenseMlp(false);
  Norm(false, act_bytes);
  Residual(false, act_bytes);
  TpGather(true);
  Gemm("gemm_attention_out_dgrad", t, attn, h);
  Gemm("gemm_attention_out_wgrad", h, attn, t);
  // Selective recomputation keeps no attention-core activations: rerun its forward first.
  if (w_.spec_.training.recompute == Recompute::kSelective) Attention(false);
  Attention(true);
  Rope(false);
  Gemm("gemm_qkv_dgrad", t, h, qkv);
  Gemm("gemm_qkv_wgrad", qkv, h, t);
  TpReduce(true);
  Norm(false, act_bytes);
  if (!fused) Residual(false, act_bytes);
}

void RankSource::P2p(std::int32_t stream, NameId comm, OpKind kind, int peer, std::uint64_t count) {
  Op op;
  op.kind = kind;
  op.stream = stream;
  op.comm = comm;
  op.peer = peer;
  op.count = count;
  op.dtype = DataType::kBfloat16;
  buffer_.push_back(op);
}

void RankSource::GroupBoundary(OpKind kind) {
  Op op;
  op.kind = kind;
  buffer_.push_back(op);
}

void RankSource::GatherReceived() {
  if (w_.spec_.parallel.tp > 1 && !w_.spec_.parallel.sequence_parallel)
    TpCollective(netmodel::CollectiveOp::kAllGather);
}

// One batch of pipeline sends and receives: a lone send or receive, or an NCCL group as
// Megatron batches them (no ordering deadlock). Each TP rank sends 1/tp of the activation and
// the receivers all-gather it over NVLink (Megatron's scatter/gather optimisation, SC'21,
// section 4.1; sequence parallelism keeps it sharded anyway). The stages form a ring:
// interleaved schedules send from the last stage to the first.
int RankSource::PipelineComm(unsigned comm, std::int32_t stream) {
  const int pp = w_.spec_.parallel.pp, stage = at_[kPpAxis];
  const int next = (stage + 1) % pp, prev = (stage + pp - 1) % pp;
  const std::uint64_t count = static_cast<std::uint64_t>(w_.tokens_) *
                              static_cast<std::uint64_t>(w_.spec_.model.hidden) /
                              static_cast<std::uint64_t>(w_.spec_.parallel.tp);
  // Sends first, then receives (the order of a group does not matter to NCCL).
  const std::array<std::pair<unsigned, std::pair<OpKind, int>>, 4> calls = {{
      {Action::kSendNext, {OpKind::kSend, next}},
      {Action::kSendPrev, {OpKind::kSend, prev}},
      {Action::kRecvPrev, {OpKind::kRecv, prev}},
      {Action::kRecvNext, {OpKind::kRecv, next}},
  }};
  int ops = 0, recvs = 0;
  for (const auto& call : calls)
    if (comm & call.first) ++ops;
  const bool group = ops > 1;
  if (group) GroupBoundary(OpKind::kGroupStart);
  for (const auto& [bit, call] : calls) {
    if (!(comm & bit)) continue;
    P2p(stream, pp_comm_, call.first, call.second, count);
    recvs += call.first == OpKind::kRecv;
  }
  if (group) GroupBoundary(OpKind::kGroupEnd);
  return recvs;
}

void RankSource::OverlappedPipelineComm(unsigned comm, bool forward_direction) {
  if (comm == 0) return;
  const int direction = forward_direction ? 0 : 1;
  RecordEvent(kComputeStream, kPpForkEvent);
  for (unsigned bit :
       {Action::kSendNext, Action::kRecvPrev, Action::kSendPrev, Action::kRecvNext}) {
    if (!(comm & bit)) continue;
    const int peer = bit == Action::kSendNext || bit == Action::kRecvNext ? 1 : 0;
    const std::int32_t stream = peer == 1 ? kPpNextStream : kPpPrevStream;
    WaitEvent(stream, kPpForkEvent);
    pipeline_recvs_[direction] += PipelineComm(bit, stream);
    RecordEvent(stream, kPpJoinEvents[direction][peer]);
    pipeline_streams_[direction] |= 1u << peer;
  }
}

void RankSource::WaitPipeline(bool forward_direction) {
  const int direction = forward_direction ? 0 : 1;
  for (int peer = 0; peer < 2; ++peer)
    if (pipeline_streams_[direction] & (1u << peer))
      WaitEvent(kComputeStream, kPpJoinEvents[direction][peer]);
  for (int i = 0; i < pipeline_recvs_[direction]; ++i) GatherReceived();
  pipeline_streams_[direction] = 0;
  pipeline_recvs_[direction] = 0;
}

void RankSource::UnitForward(const Unit& unit) {
  const ModelSpec& m = w_.spec_.model;
  const double tokens = static_cast<double>(w_.tokens_);
  const std::int64_t vocab = m.vocab / w_.spec_.parallel.tp;
  switch (unit.kind) {
    case Unit::kEmbedding:
      Streaming("embedding", tokens * m.hidden * 2 * 2);
      break;
    case Unit::kLayer:
      Layer(unit.layer, true);
      break;
    case Unit::kOutput:
      // The final norm, counted for eager kernels only (the fused inventory leaves it out:
      // one norm against two a layer).
      if (w_.spec_.training.kernels == LayerKernels::kEager) Norm(true, ActivationBytes());
      Gemm("gemm_logits", w_.tokens_, vocab, m.hidden);
      if (w_.spec_.training.kernels == LayerKernels::kEager) {
        // logits.float(), then log-softmax in FP32 (the loss's NLL reads one value a row).
        const double logits = tokens * static_cast<double>(vocab);
        Eager(workload::EagerKernel::kToFloat, logits * (2 + 4));
        Eager(workload::EagerKernel::kLogSoftmaxForward, logits * (4 + 4));
        break;
      }
      Streaming("cross_entropy", tokens * static_cast<double>(vocab) * 4.0 * 2);
      break;
  }
}

void RankSource::UnitBackward(const Unit& unit) {
  const ModelSpec& m = w_.spec_.model;
  const double tokens = static_cast<double>(w_.tokens_);
  const std::int64_t vocab = m.vocab / w_.spec_.parallel.tp;
  switch (unit.kind) {
    case Unit::kEmbedding:
      break;  // a scatter-add of the first layer's input gradient, not modelled
    case Unit::kLayer:
      if (w_.spec_.training.recompute == Recompute::kFull) Layer(unit.layer, true);
      Layer(unit.layer, false);
      break;
    case Unit::kOutput:
      if (w_.spec_.training.kernels == LayerKernels::kEager) {
        const double logits = tokens * static_cast<double>(vocab);
        Eager(workload::EagerKernel::kLogSoftmaxBackward, logits * (4 + 2 * 4));
        Eager(workload::EagerKernel::kToBfloat16, logits * (4 + 2));
      } else {
        Streaming("cross_entropy_backward", tokens * static_cast<double>(vocab) * 4.0 * 2);
      }
      Gemm("gemm_logits_dgrad", w_.tokens_, m.hidden, vocab);
      Gemm("gemm_logits_wgrad", vocab, m.hidden, w_.tokens_);
      if (w_.spec_.training.kernels == LayerKernels::kEager) Norm(false, ActivationBytes());
      break;
  }
}

void RankSource::Forward(int micro_batch, int chunk) {
  Op keep;
  keep.kind = OpKind::kMalloc;  // the activations kept for the backward pass
  keep.bytes = activation_bytes_[static_cast<size_t>(chunk)];
  buffer_.push_back(keep);
  first_micro_batch_ = micro_batch == 0;
  // Weights kept from an earlier micro-batch need no gather: FSDP2 keeps them when it neither
  // reshards after the forward nor after the backward (the pipelining stage's setting).
  const bool kept =
      pipelined_fsdp2_ && !w_.spec_.parallel.fsdp_reshard_after_forward && micro_batch > 0;
  for (const Unit& unit : chunks_[static_cast<size_t>(chunk)]) {
    ParamGather(unit, micro_batch == 0, kept);
    UnitForward(unit);
  }
  first_micro_batch_ = false;
}

void RankSource::Backward(int micro_batch, int chunk) {
  const WorkloadSpec& spec = w_.spec_;
  const bool last = micro_batch == spec.micro_batches() - 1;
  const bool overlap = spec.training.overlap_grad_reduce && dense_shards_ > 1;
  // FSDP and ZeRO-2 reduce-scatter every micro-batch's gradients into the shards; the others
  // reduce the accumulated gradients once, overlapped with the last micro-batch's backward or
  // after it. Under pipelining, FSDP2 accumulates unsharded gradients and reduce-scatters
  // every unit's once the stage's last backward is done (PipelineStage turns gradient sync
  // off, then runs each parameter group's post-backward).
  const bool reduce = !pipelined_fsdp2_ && (fsdp_ || zero2_ || (overlap && last));
  const std::vector<Unit>& units = chunks_[static_cast<size_t>(chunk)];
  for (auto it = units.rbegin(); it != units.rend(); ++it) {
    if (fsdp_) ParamGather(*it, false, !w_.spec_.parallel.fsdp_reshard_after_forward);
    UnitBackward(*it);
    if (!reduce) continue;
    if (overlap) {
      // This unit's gradients are final: reduce them on the gradient stream meanwhile.
      RecordEvent(kComputeStream, kGradReadyEvent);
      WaitEvent(kGradStream, kGradReadyEvent);
      GradientReduce(kGradStream, it->dense_params, it->expert_params);
    } else {
      GradientReduce(kComputeStream, it->dense_params, it->expert_params);
    }
  }
  if (pipelined_fsdp2_ && last) {
    const std::int32_t stream = overlap ? kGradStream : kComputeStream;
    if (overlap) {
      RecordEvent(kComputeStream, kGradReadyEvent);
      WaitEvent(kGradStream, kGradReadyEvent);
    }
    for (auto it = units.rbegin(); it != units.rend(); ++it)
      GradientReduce(stream, it->dense_params, it->expert_params);
  }
  Op drop;
  drop.kind = OpKind::kFree;
  drop.bytes = activation_bytes_[static_cast<size_t>(chunk)];
  buffer_.push_back(drop);
}

void RankSource::Expand() {
  buffer_.clear();
  next_ = 0;
  const WorkloadSpec& spec = w_.spec_;
  const ParallelSpec& par = spec.parallel;
  if (phase_ == 0) {
    Op create;
    create.kind = OpKind::kStreamCreate;
    create.non_blocking = true;
    for (const auto& [stream, wanted] : std::array<std::pair<std::int32_t, bool>, 6>{
             {{kGradStream, true},
              {kTpCommStream, par.tp_comm_overlap},
              {kCpCommStream, par.cp > 1},
              {kGatherStream, spec.training.overlap_param_gather},
              {kPpPrevStream, overlap_p2p_},
              {kPpNextStream, overlap_p2p_}}}) {
      if (!wanted) continue;
      create.stream = stream;
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
    if (spec.training.overlap_param_gather) RecordEvent(kComputeStream, kUnitStartedEvent);
    phase_ = 1;
    return;
  }
  if (phase_ == 1 && step_ < schedule_.size()) {
    const Action action = schedule_[step_++];
    switch (action.kind) {
      case Action::kComm:
        if (overlap_p2p_) {
          // Activations travel with the forward direction, gradients with the backward.
          OverlappedPipelineComm(action.comm & (Action::kSendNext | Action::kRecvPrev), true);
          OverlappedPipelineComm(action.comm & (Action::kSendPrev | Action::kRecvNext), false);
        } else {
          for (int i = PipelineComm(action.comm, kComputeStream); i > 0; --i) GatherReceived();
        }
        break;
      case Action::kForward:
        WaitPipeline(true);
        Forward(action.micro_batch, action.chunk);
        break;
      case Action::kBackward:
        WaitPipeline(false);
        Backward(action.micro_batch, action.chunk);
        break;
    }
    return;
  }
  if (phase_ == 1) {
    // The last overlapped sends are done before the step ends.
    WaitPipeline(true);
    WaitPipeline(false);
    // Gradients: reduced across replicas (what the overlap did not already send), then the
    // optimizer step once the reductions are done.
    const bool overlap = spec.training.overlap_grad_reduce && dense_shards_ > 1;
    if (!overlap && !fsdp_ && !zero2_)
      GradientReduce(kComputeStream, dense_params_, expert_params_);
    if (overlap) {
      RecordEvent(kGradStream, kGradsReducedEvent);
      WaitEvent(kComputeStream, kGradsReducedEvent);
    }
    // Adam reads and writes weights, gradients, master weights and moments (18 B / param)
    // of its shard: all parameters, or their shards with the distributed optimizer (which
    // then all-gathers the updated weights, unless the next forward does) or FSDP.
    const bool sharded = par.distributed_optimizer || par.fsdp;
    const double shard = sharded ? dense_params_ / dense_shards_ + expert_params_ / expert_shards_
                                 : dense_params_ + expert_params_;
    Streaming("optimizer_adam", shard * 18 * 2);
    if (zero1_ && !spec.training.overlap_param_gather)
      GatherWeights(kComputeStream, dense_params_, expert_params_, layer_dense_params_);
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
  const ParallelSpec& p = spec.parallel;
  const int dp = spec.data_parallel(world);
  Dims dims;
  dims.full = {p.tp, p.cp, p.ep, dp / p.ep, p.pp};
  dims.sim = dims.full;
  if (fold_data_parallel) dims.sim[kEdpAxis] = 1;
  return std::unique_ptr<Workload>(std::make_unique<SyntheticWorkload>(spec, cluster, dims));
}

}  // namespace myriad::emulator
