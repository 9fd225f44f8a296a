// The synthetic training workload: Megatron's rank layout and communicators, a FLOP count
// that adds up to Megatron's formula, matched pipeline sends and receives, and data-parallel
// rank folding that predicts exactly what the unfolded run predicts.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "myriad/emulator/engine.h"
#include "myriad/emulator/scenario.h"
#include "myriad/emulator/workload.h"
#include "tests/emulator/workload/workload_fixture.h"
#include "workload/eager_kernels.h"

namespace myriad::emulator {
namespace {

TEST(SyntheticWorkloadTest, RankLayoutAndCommunicatorsFollowMegatron) {
  Scenario s = Load("layout.toml", 2, "tp = 2\npp = 2", "global_batch = 32");
  auto w = MakeSyntheticWorkload(*s.workload, s.cluster, /*fold_data_parallel=*/false);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ((*w)->world_size(), 16);
  std::map<std::string, std::vector<int>> comms;
  for (const CommunicatorSpec& c : (*w)->communicators())
    comms[(*w)->names().Name(c.name)] = c.ranks;
  // TP fastest, then DP (4 replicas), then PP.
  EXPECT_EQ(comms.at("tp.d1.p0"), (std::vector<int>{2, 3}));
  EXPECT_EQ(comms.at("dp.t1.p1"), (std::vector<int>{9, 11, 13, 15}));
  EXPECT_EQ(comms.at("pp.t0.d3"), (std::vector<int>{6, 14}));
  EXPECT_EQ(comms.size(), 4u * 2 + 2 * 4 + 2 * 2);
}

// Another rank order renumbers ranks and GPUs: with DP fastest, a TP group spans replicas'
// GPUs (and nodes), and the prediction changes accordingly.
TEST(SyntheticWorkloadTest, RankOrderIsConfigurable) {
  Scenario s = Load("order.toml", 2, "tp = 2\npp = 2\norder = \"dp-tp-pp\"", "global_batch = 32");
  auto w = MakeSyntheticWorkload(*s.workload, s.cluster, false);
  ASSERT_TRUE(w.ok()) << w.status().message();
  std::map<std::string, std::vector<int>> comms;
  for (const CommunicatorSpec& c : (*w)->communicators())
    comms[(*w)->names().Name(c.name)] = c.ranks;
  EXPECT_EQ(comms.at("dp.t1.p0"), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(comms.at("tp.d1.p0"), (std::vector<int>{1, 5}));
  EXPECT_EQ(comms.at("pp.t0.d3"), (std::vector<int>{3, 11}));
  // Folded: replica 0's ranks sit on the GPUs the unfolded order gives them.
  auto folded = MakeSyntheticWorkload(*s.workload, s.cluster, true);
  ASSERT_TRUE(folded.ok());
  EXPECT_EQ((*folded)->gpu_of(1), 4);  // tp 1, dp 0, pp 0
  EXPECT_EQ((*folded)->gpu_of(2), 8);  // tp 0, dp 0, pp 1
  auto a = RunEngine(**w, s.cluster, EngineOptions{});
  auto b = RunEngine(**folded, s.cluster, EngineOptions{});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->iteration_time(), b->iteration_time());
}

class FlopTest : public ::testing::TestWithParam<std::string> {};

// Every GEMM and attention kernel the generator emits adds up to Megatron's per-iteration
// FLOP count, for each recomputation and attention kind.
TEST_P(FlopTest, KernelFlopsAddUpToMegatronsFormula) {
  Scenario s = Load("flops.toml", 1, "tp = 2\npp = 2", "global_batch = 8\n" + GetParam());
  auto w = MakeSyntheticWorkload(*s.workload, s.cluster, false);
  ASSERT_TRUE(w.ok()) << w.status().message();
  double flops = 0;
  for (int r = 0; r < (*w)->world_size(); ++r) flops += Count(**w, r).flops;
  EXPECT_NEAR(flops / s.workload->iteration_flops(), 1.0, 1e-9) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Settings, FlopTest,
                         ::testing::Values("recompute = \"none\"", "recompute = \"full\"",
                                           "recompute = \"selective\"",
                                           "recompute = \"full\"\nattention = \"unfused\"",
                                           "recompute = \"selective_op\"",
                                           "recompute = \"selective_op\"\nkernels = \"eager\""));

// The attention FLOP convention behind TFLOP/s and MFU: Megatron's full s x s square by
// default, the computed causal half with attention_flops = "causal" (3 x 2 s h per token and
// layer less, forward and backward, without recomputation).
TEST(SyntheticWorkloadTest, CausalAttentionFlopsCountHalfTheSquare) {
  const WorkloadSpec full = *Load("full.toml", 1, "tp = 2\npp = 2", "global_batch = 8").workload;
  const WorkloadSpec causal =
      *Load("causal.toml", 1, "tp = 2\npp = 2", "global_batch = 8\nattention_flops = \"causal\"")
           .workload;
  const ModelSpec& m = full.model;
  const double tokens = 8.0 * m.seq;
  EXPECT_NEAR(full.iteration_flops(Recompute::kNone) - causal.iteration_flops(Recompute::kNone),
              tokens * m.layers * 3 * 2.0 * m.seq * m.hidden, 1.0);
  EXPECT_FALSE(full.training.causal_attention_flops);
}

// Eager PyTorch's kernels for a Llama layer under op-level selective checkpointing: per layer
// the forward's ops twice (once more in the recompute), and the backward's, as torchtitan's
// Llama 3 8B launches them under `myriad run` (docs/workloads.md, "Eager kernels"); the
// loss's log-softmax in FP32 once each way.
TEST(SyntheticWorkloadTest, EagerKernelsAreTheOpsEagerPyTorchLaunchesPerLayer) {
  constexpr const char* kSmallLlama =
      "layers = 2\nhidden = 512\nheads = 8\nkv_heads = 2\nffn = 1536\nactivation = "
      "\"swiglu\"\nvocab = 32000\nseq = 1024\n";
  Scenario s =
      Load("eager.toml", 1, "fsdp = true",
           "global_batch = 8\nrecompute = \"selective_op\"\nkernels = \"eager\"", kSmallLlama);
  auto w = MakeSyntheticWorkload(*s.workload, s.cluster, false);
  ASSERT_TRUE(w.ok()) << w.status().message();
  std::map<std::string, int> kernels;
  std::map<std::string, double> bytes;
  auto source = (*w)->OpenRank(0);
  ASSERT_TRUE(source.ok());
  Op op;
  for (Result<bool> more = (*source)->Next(op); more.ok() && *more; more = (*source)->Next(op)) {
    if (op.kind != OpKind::kKernel) continue;
    const std::string name((*w)->names().Name(op.name));
    ++kernels[name];
    bytes[name] += static_cast<double>(op.bytes);
  }
  using workload::EagerKernel;
  const auto count = [&](EagerKernel k) {
    return kernels[std::string(workload::EagerKernelName(k))];
  };
  const int layers = 2;
  EXPECT_EQ(count(EagerKernel::kNormForward), layers * 4 + 1);  // forward, recompute, final norm
  EXPECT_EQ(count(EagerKernel::kNormBackwardInput), layers * 2 + 1);
  EXPECT_EQ(count(EagerKernel::kAdd), layers * 7);  // 2 forward, 2 recompute, 3 backward
  EXPECT_EQ(count(EagerKernel::kMul), layers * 4);
  EXPECT_EQ(count(EagerKernel::kSilu), layers * 2);
  EXPECT_EQ(count(EagerKernel::kSiluBackward), layers);
  EXPECT_EQ(count(EagerKernel::kStridedCopy), layers * 9);
  EXPECT_EQ(count(EagerKernel::kComplexMul), layers * 6);
  EXPECT_EQ(count(EagerKernel::kToFloat), layers * 6 + 1);  // and the logits
  EXPECT_EQ(count(EagerKernel::kLogSoftmaxForward), 1);
  EXPECT_EQ(count(EagerKernel::kLogSoftmaxBackward), 1);
  // The matmuls that rerun: the output projection and SwiGLU's up projection.
  EXPECT_EQ(kernels["gemm_attention_out_recompute"], layers);
  EXPECT_EQ(kernels["gemm_mlp_up_recompute"], layers);
  // The logits' upcast: 2 B read and 4 B written per logit of one micro-batch.
  const double logits = 1.0 * 1024 * 32000;
  EXPECT_EQ(bytes[std::string(workload::EagerKernelName(EagerKernel::kLogSoftmaxForward))],
            logits * 8);
  // Fused kernels (Megatron's) have none of them.
  Scenario fused = Load("fused.toml", 1, "fsdp = true", "global_batch = 8", kSmallLlama);
  auto f = MakeSyntheticWorkload(*fused.workload, fused.cluster, false);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->names().Find(workload::EagerKernelName(EagerKernel::kAdd)), 0u);
}

// FSDP2 (per-parameter sharding) copies around its collectives: each gather's input cast in
// from the FP32 shard (6 B a shard parameter), its output copied out to the parameters (4 B a
// parameter), each reduce-scatter's input copied in from the gradients in the reduce type (2
// + 4 B a parameter); the flat layout gathers and reduces in place.
TEST(SyntheticWorkloadTest, PerParameterFsdpCopiesAroundItsCollectives) {
  auto copies = [](const char* layout) {
    Scenario s =
        Load(std::string("fsdp_") + layout + ".toml", 1,
             std::string("fsdp = true\nfsdp_layout = \"") + layout + "\"", "global_batch = 8");
    auto w = MakeSyntheticWorkload(*s.workload, s.cluster, false);
    EXPECT_TRUE(w.ok());
    Tally t = Count(**w, 0);
    std::map<std::string, double> bytes = t.kernel_bytes;
    bytes["gathered"] = 8.0 * t.counts["dp allgather"];  // parameters, summed over gathers
    bytes["reduced"] = 8.0 * t.counts["dp reducescatter"];
    return bytes;
  };
  std::map<std::string, double> flat = copies("flat"), per = copies("per-parameter");
  EXPECT_EQ(flat["fsdp_all_gather_copy_out"], 0);
  EXPECT_EQ(flat["fsdp_grad_chunk_cat"], 0);
  EXPECT_NEAR(per["fsdp_all_gather_copy_out"], 4 * per["gathered"], 64);
  EXPECT_NEAR(per["fsdp_all_gather_copy_in"], 6 * per["gathered"] / 8, 64);
  EXPECT_NEAR(per["fsdp_grad_chunk_cat"], (2 + 4) * per["reduced"], 64);
  WorkloadSpec bad = *Load("bad_layout.toml", 1, "tp = 2\npp = 1", "global_batch = 16").workload;
  bad.parallel.fsdp_per_parameter = true;
  EXPECT_EQ(bad.Validate(8).message(),
            "parallel.fsdp_layout = \"per-parameter\" needs parallel.fsdp = true");
}

// FSDP2 under pipelining (torch.distributed.pipelining's stage turns gradient sync and
// resharding after the backward off until the last micro-batch): without resharding after the
// forward, each unit's weights are gathered once a step and its gradients reduce-scattered once,
// after the stage's last backward, where resharding gathers them every forward and backward and
// a flat layout (FSDP1, Megatron-FSDP) reduces every micro-batch. The kept weights and unsharded
// gradients are counted in memory.
TEST(SyntheticWorkloadTest, PipelinedFsdp2GathersOnceAndReducesAfterTheLastMicroBatch) {
  auto load = [](const std::string& name, const std::string& fsdp) {
    return Load(name + ".toml", 1, "pp = 2\nfsdp = true\n" + fsdp, "global_batch = 16");
  };
  Scenario kept =
      load("kept", "fsdp_layout = \"per-parameter\"\nfsdp_reshard_after_forward = false");
  Scenario resharded = load("resharded", "fsdp_layout = \"per-parameter\"");
  Scenario flat = load("flat", "");
  const int m = kept.workload->micro_batches();
  ASSERT_EQ(m, 4);  // 16 sequences over dp 4
  auto tally = [](Scenario& s) {
    auto w = MakeSyntheticWorkload(*s.workload, s.cluster, false);
    EXPECT_TRUE(w.ok());
    return Count(**w, 0);  // stage 0: the embedding and 4 layers
  };
  const Tally k = tally(kept), r = tally(resharded), f = tally(flat);
  const int units = k.calls.at("dp allgather");
  EXPECT_EQ(units, 5);
  EXPECT_EQ(r.calls.at("dp allgather"), units * m * 2);
  EXPECT_EQ(k.calls.at("dp reducescatter"), units);
  EXPECT_EQ(r.calls.at("dp reducescatter"), units);
  EXPECT_EQ(f.calls.at("dp reducescatter"), units * m);
  EXPECT_DOUBLE_EQ(k.counts.at("dp reducescatter") * m, f.counts.at("dp reducescatter"));
  // Memory: the kept weights, and under pipelining FSDP2's unsharded gradients.
  const WorkloadSpec::RankMemory kept_mem = kept.workload->rank_memory(16);
  const WorkloadSpec::RankMemory resharded_mem = resharded.workload->rank_memory(16);
  const WorkloadSpec::RankMemory flat_mem = flat.workload->rank_memory(16);
  EXPECT_GT(kept_mem.weights, resharded_mem.weights);
  EXPECT_EQ(resharded_mem.weights, flat_mem.weights);
  EXPECT_EQ(kept_mem.gradients, resharded_mem.gradients);
  EXPECT_GT(resharded_mem.gradients, flat_mem.gradients);
  WorkloadSpec bad = *Load("bad_reshard.toml", 1, "tp = 2\npp = 1", "global_batch = 16").workload;
  bad.parallel.fsdp_reshard_after_forward = false;
  EXPECT_EQ(bad.Validate(8).message(),
            "parallel.fsdp_reshard_after_forward = false needs parallel.fsdp = true");
}

// Op-level selective checkpointing keeps, per token and layer, the layer's input and the
// down projection's output (h each), the QKV output, attention's output and the gate
// projection's output, all BF16: here (512 + 512 + 768 + 512 + 1536) x 2 B.
TEST(SyntheticWorkloadTest, OpLevelCheckpointingKeepsTheUnrecomputedOutputs) {
  constexpr const char* kSmallLlama =
      "layers = 2\nhidden = 512\nheads = 8\nkv_heads = 2\nffn = 1536\nactivation = "
      "\"swiglu\"\nvocab = 32000\nseq = 1024\n";
  const WorkloadSpec spec = *Load("op.toml", 1, "fsdp = true",
                                  "global_batch = 8\nrecompute = \"selective_op\"", kSmallLlama)
                                 .workload;
  EXPECT_DOUBLE_EQ(spec.activation_bytes(0, 2), 2 * 1024.0 * (512 + 512 + 768 + 512 + 1536) * 2);
}

// Without op-level checkpointing a layer keeps what its ops save for the backward, counted from
// its shapes. For a GPT layer (GeLU MLP of 4 h, multi-head attention, dropout) that is Korthikanti
// et al.'s 34 h bytes per token with sequence parallelism and 10 h + 24 h / t without; a Llama
// 3.1 405B layer (SwiGLU MLP of 3.25 h, 8 key/value heads of 128, no dropout) keeps 12 + 4 kv/h
// + 6 f/h = 31.75 h, and 27.5 h with FP8 linear layers (their inputs as FP8 copies, attention's
// output kept in BF16 beside the output projection's FP8 copy).
TEST(SyntheticWorkloadTest, ActivationsAreTheTensorsEachLayerKeeps) {
  auto per_token = [](const std::string& preset, int tp, bool sp, DataType precision) {
    WorkloadSpec spec;
    spec.model = *FindModelPreset(preset);
    spec.parallel.tp = tp;
    spec.parallel.sequence_parallel = sp;
    spec.training.recompute = Recompute::kSelective;
    spec.training.precision = precision;
    const double tokens = spec.model.seq;  // one sequence a micro-batch
    return spec.activation_bytes(0, 1) / (tokens * spec.model.hidden);
  };
  EXPECT_DOUBLE_EQ(per_token("megatron-7.5b", 4, true, DataType::kBfloat16), 34.0 / 4);
  EXPECT_DOUBLE_EQ(per_token("megatron-7.5b", 4, false, DataType::kBfloat16), 10 + 24.0 / 4);
  EXPECT_DOUBLE_EQ(per_token("llama3-405b", 8, true, DataType::kBfloat16), 31.75 / 8);
  EXPECT_DOUBLE_EQ(per_token("llama3-405b", 8, true, DataType::kFloat8e4m3), 27.5 / 8);
  // A model written out without a preset trains with dropout when its MLP is GeLU.
  const std::string llama_like =
      "layers = 2\nhidden = 512\nheads = 8\nffn = 2048\nvocab = 32000\nseq = 1024\n";
  EXPECT_TRUE(
      Load("gelu.toml", 1, "tp = 1", "global_batch = 8", llama_like).workload->model.dropout);
  EXPECT_FALSE(
      Load("swiglu.toml", 1, "tp = 1", "global_batch = 8", llama_like + "activation = \"swiglu\"\n")
          .workload->model.dropout);
  EXPECT_FALSE(
      Load("nodrop.toml", 1, "tp = 1", "global_batch = 8", llama_like + "dropout = false\n")
          .workload->model.dropout);
}

// FP8 weights (fp8_param_gather): the distributed optimizer gathers the layers' weights as FP8,
// 1 B a parameter, and the embedding and output layer as BF16; the layers keep no BF16 copy, so
// the weights take what BF16 training's do, 2 B a parameter, where FP8 training with BF16
// weights adds the FP8 copy and its transpose.
TEST(SyntheticWorkloadTest, Fp8WeightsAreGatheredAsFp8) {
  auto load = [](bool fp8_params) {
    return Load(std::string("fp8_params_") + (fp8_params ? "on" : "off") + ".toml", 1,
                "tp = 2\npp = 1\ndistributed_optimizer = true",
                std::string("global_batch = 16\nprecision = \"fp8\"\nfp8_param_gather = ") +
                    (fp8_params ? "true" : "false"));
  };
  auto gathered = [](Scenario& s) {
    std::map<DataType, double> bytes;
    auto w = MakeSyntheticWorkload(*s.workload, s.cluster, false);
    EXPECT_TRUE(w.ok());
    auto source = (*w)->OpenRank(0);
    Op op;
    while (*(*source)->Next(op))
      if (op.kind == OpKind::kCollective && op.coll == netmodel::CollectiveOp::kAllGather &&
          (*w)->names().Name(op.comm).substr(0, 2) == "dp")
        bytes[op.dtype] += static_cast<double>(op.count) * SizeOf(op.dtype);
    return bytes;
  };
  Scenario on = load(true), off = load(false);
  const auto on_bytes = gathered(on), off_bytes = gathered(off);
  EXPECT_EQ(off_bytes.count(DataType::kFloat8e4m3), 0u);
  ASSERT_GT(on_bytes.at(DataType::kFloat8e4m3), 0);
  // The layers' gather halves; the embedding and output layer's stays.
  EXPECT_DOUBLE_EQ(2 * on_bytes.at(DataType::kFloat8e4m3) + on_bytes.at(DataType::kBfloat16),
                   off_bytes.at(DataType::kBfloat16));
  Scenario bf16 = Load("fp8_params_bf16.toml", 1, "tp = 2\npp = 1\ndistributed_optimizer = true",
                       "global_batch = 16");
  EXPECT_DOUBLE_EQ(on.workload->rank_memory(8).weights, bf16.workload->rank_memory(8).weights);
  EXPECT_GT(off.workload->rank_memory(8).weights, on.workload->rank_memory(8).weights);
}

// Tensor-parallel overlap by ring exchange (Transformer Engine's userbuffers, PyTorch's async
// TP): the six GEMMs next to a gather or a forward reduce-scatter run as tp chunks of the
// tokens, and each ring reduce-scatter ends with the sum of the tp partial chunks; the other
// GEMMs stay whole.
TEST(SyntheticWorkloadTest, RingExchangeSplitsTheOverlappedGemmsIntoTpChunks) {
  auto kernels = [](bool overlap) {
    Scenario s = Load(std::string("ring_") + (overlap ? "on" : "off") + ".toml", 1,
                      std::string("tp = 4\npp = 1\nsequence_parallel = true\ntp_comm_overlap = ") +
                          (overlap ? "true" : "false"),
                      "global_batch = 2");
    auto w = MakeSyntheticWorkload(*s.workload, s.cluster, false);
    EXPECT_TRUE(w.ok());
    std::map<std::string, std::vector<std::int64_t>> rows;  // GEMM name -> m of each launch
    auto source = (*w)->OpenRank(0);
    Op op;
    while (*(*source)->Next(op))
      if (op.kind == OpKind::kKernel)
        rows[std::string((*w)->names().Name(op.name))].push_back(op.gemm.m);
    return rows;
  };
  const auto whole = kernels(false), ring = kernels(true);
  const int layers = 8, tp = 4;  // the fixture's model; one micro-batch a replica
  for (const char* name : {"gemm_qkv", "gemm_mlp_up", "gemm_attention_out_dgrad",
                           "gemm_mlp_down_dgrad", "gemm_attention_out", "gemm_mlp_down"}) {
    ASSERT_EQ(whole.at(name).size(), static_cast<size_t>(layers)) << name;
    ASSERT_EQ(ring.at(name).size(), static_cast<size_t>(layers * tp)) << name;
    EXPECT_EQ(ring.at(name)[0] * tp, whole.at(name)[0]) << name;
  }
  EXPECT_EQ(ring.at("gemm_qkv_dgrad"), whole.at("gemm_qkv_dgrad"));
  EXPECT_EQ(ring.at("gemm_mlp_up_wgrad"), whole.at("gemm_mlp_up_wgrad"));
  EXPECT_EQ(ring.at("userbuffers_reduce").size(), static_cast<size_t>(2 * layers));
  EXPECT_EQ(whole.count("userbuffers_reduce"), 0u);
}

// PyTorch's async TP fuses a collective only with the matmul beside it: the backward's
// reduce-scatter of the column-parallel layers' summed input gradients runs alone on the
// compute stream, where Transformer Engine's userbuffers overlap it with the weight gradient.
// FP8 training gathers the forward's activations as FP8 and the backward's gradients as BF16.
TEST(SyntheticWorkloadTest, AsyncTpLeavesTheInputGradientReduceScatterOnTheComputeStream) {
  struct Seen {
    std::map<DataType, int> gathers;  // by dtype
    int compute_stream_reduces = 0;
    int side_stream_reduces = 0;
    int async_tp_reduces = 0;
  };
  auto seen = [](const char* name, const std::string& by, const char* precision) {
    Scenario s = Load(std::string(name) + ".toml", 1,
                      "tp = 4\npp = 1\nsequence_parallel = true\ntp_comm_overlap = true\n" + by,
                      std::string("global_batch = 2\nprecision = \"") + precision + "\"");
    auto w = MakeSyntheticWorkload(*s.workload, s.cluster, false);
    EXPECT_TRUE(w.ok()) << w.status().message();
    Seen out;
    auto source = (*w)->OpenRank(0);
    Op op;
    while (*(*source)->Next(op)) {
      if (op.kind == OpKind::kKernel && (*w)->names().Name(op.name) == "async_tp_reduce")
        ++out.async_tp_reduces;
      if (op.kind != OpKind::kCollective || (*w)->names().Name(op.comm).substr(0, 2) != "tp")
        continue;
      if (op.coll == netmodel::CollectiveOp::kAllGather) ++out.gathers[op.dtype];
      if (op.coll == netmodel::CollectiveOp::kReduceScatter)
        ++(op.stream == 0 ? out.compute_stream_reduces : out.side_stream_reduces);
    }
    return out;
  };
  const int layers = 8;
  const Seen te = seen("te", "", "bf16");
  const Seen pytorch = seen("pytorch", "tp_comm_overlap_by = \"pytorch\"", "bf16");
  EXPECT_EQ(te.compute_stream_reduces, 0);
  EXPECT_EQ(te.side_stream_reduces, 4 * layers);
  EXPECT_EQ(pytorch.compute_stream_reduces, 2 * layers);  // attention's and the MLP's
  EXPECT_EQ(pytorch.side_stream_reduces, 2 * layers);
  EXPECT_EQ(pytorch.async_tp_reduces, 2 * layers);
  EXPECT_EQ(te.gathers.at(DataType::kBfloat16), 4 * layers);
  const Seen fp8 = seen("fp8", "", "fp8");
  EXPECT_EQ(fp8.gathers.at(DataType::kFloat8e4m3), 2 * layers);  // forward: activations
  EXPECT_EQ(fp8.gathers.at(DataType::kBfloat16), 2 * layers);    // backward: gradients
  WorkloadSpec bad = *Load("bad_by.toml", 1, "tp = 2\npp = 1", "global_batch = 16").workload;
  bad.parallel.tp_comm_overlap_pytorch = true;
  EXPECT_EQ(bad.Validate(8).message(),
            "parallel.tp_comm_overlap_by needs parallel.tp_comm_overlap = true");
}

TEST(SyntheticWorkloadTest, PipelineSendsMatchReceivesAndIterationsAreMarked) {
  Scenario s = Load("pipeline.toml", 1, "tp = 1\npp = 4", "global_batch = 16\niterations = 3");
  auto w = MakeSyntheticWorkload(*s.workload, s.cluster, false);
  ASSERT_TRUE(w.ok()) << w.status().message();
  const int m = s.workload->micro_batches();  // 16 / (dp 2 x 1)
  ASSERT_EQ(m, 8);
  for (int stage = 0; stage < 4; ++stage) {
    // Rank of stage `stage` in replica 0; each boundary carries m activations forward and m
    // gradients back per iteration.
    Tally t = Count(**w, stage * 2);
    const int boundaries = (stage > 0) + (stage < 3);
    EXPECT_EQ(t.by_kind["send"], 3 * m * boundaries) << "stage " << stage;
    EXPECT_EQ(t.by_kind["recv"], 3 * m * boundaries) << "stage " << stage;
    // A marker opens each iteration and one closes the last.
    EXPECT_EQ(t.by_kind["iter"], 3 + 1) << "stage " << stage;
  }
}

// Sequence parallelism turns each TP AllReduce into a ReduceScatter and an AllGather moving
// the same bytes; the distributed optimizer reduce-scatters gradients and all-gathers weights.
TEST(SyntheticWorkloadTest, SequenceParallelismAndDistributedOptimizerChangeTheCollectives) {
  auto collectives = [](bool sp, bool zero1) {
    Scenario s =
        Load(std::string("coll") + (sp ? "_sp" : "") + (zero1 ? "_zero1" : "") + ".toml", 1,
             std::string("tp = 2\npp = 1\nsequence_parallel = ") + (sp ? "true" : "false") +
                 "\ndistributed_optimizer = " + (zero1 ? "true" : "false"),
             "global_batch = 8");
    auto w = MakeSyntheticWorkload(*s.workload, s.cluster, false);
    EXPECT_TRUE(w.ok());
    std::map<std::string, double> bytes;  // "tp allreduce" -> bytes moved per rank
    auto source = (*w)->OpenRank(0);
    Op op;
    while (*(*source)->Next(op)) {
      if (op.kind != OpKind::kCollective) continue;
      const std::string comm = (*w)->names().Name(op.comm).substr(0, 2);
      const bool whole = op.coll == netmodel::CollectiveOp::kAllReduce;
      const int ranks = comm == "tp" ? 2 : 4;
      bytes[comm + " " + std::string(netmodel::ToString(op.coll))] +=
          static_cast<double>(op.count) * SizeOf(op.dtype) * (whole ? 1 : ranks);
    }
    return bytes;
  };
  const auto plain = collectives(false, false), sp = collectives(true, true);
  EXPECT_FALSE(sp.count("tp allreduce"));
  EXPECT_FALSE(sp.count("dp allreduce"));
  EXPECT_GT(plain.at("tp allreduce"), 0);
  // A ring AllReduce moves what a ReduceScatter and an AllGather of the same buffer move.
  EXPECT_DOUBLE_EQ(sp.at("tp reducescatter"), plain.at("tp allreduce"));
  EXPECT_DOUBLE_EQ(sp.at("tp allgather"), plain.at("tp allreduce"));
  EXPECT_NEAR(sp.at("dp reducescatter") / plain.at("dp allreduce"), 1.0, 1e-6);
  EXPECT_GT(sp.at("dp allgather"), 0);
}

// Gradients reduce in fp32 by default (Megatron-LM with --bf16, NeMo); grad_reduce_dtype = bf16
// halves the reduction's bytes and the gradient buffer.
TEST(SyntheticWorkloadTest, GradientReductionDtypeSetsTheBytesAndTheBuffer) {
  auto dp_bytes = [](const char* dtype, WorkloadSpec::RankMemory* mem) {
    Scenario s = Load(std::string("grad_") + dtype + ".toml", 1, "tp = 2\npp = 1",
                      std::string("global_batch = 8\ngrad_reduce_dtype = \"") + dtype + "\"");
    *mem = s.workload->rank_memory(s.cluster.total_gpus());
    auto w = MakeSyntheticWorkload(*s.workload, s.cluster, false);
    EXPECT_TRUE(w.ok());
    double bytes = 0;
    auto source = (*w)->OpenRank(0);
    Op op;
    while (*(*source)->Next(op)) {
      if (op.kind != OpKind::kCollective) continue;
      if ((*w)->names().Name(op.comm).substr(0, 2) != "dp") continue;
      EXPECT_EQ(op.dtype, std::string(dtype) == "bf16" ? DataType::kBfloat16 : DataType::kFloat32);
      bytes += static_cast<double>(op.count) * SizeOf(op.dtype);
    }
    return bytes;
  };
  WorkloadSpec::RankMemory fp32_mem, bf16_mem;
  const double fp32 = dp_bytes("fp32", &fp32_mem);
  const double bf16 = dp_bytes("bf16", &bf16_mem);
  EXPECT_GT(fp32, 0);
  EXPECT_DOUBLE_EQ(bf16, fp32 / 2);
  EXPECT_DOUBLE_EQ(fp32_mem.gradients, 2 * fp32_mem.weights);
  EXPECT_DOUBLE_EQ(bf16_mem.gradients, bf16_mem.weights);
}

// ZeRO-2 (shard_gradients): every micro-batch's gradients are reduce-scattered into the shards,
// so the data-parallel bytes grow with the micro-batches, and the gradient buffer shrinks to
// the shard plus the largest layer's whole gradients. It needs the distributed optimizer.
TEST(SyntheticWorkloadTest, ShardedGradientsReduceEveryMicroBatchIntoTheShards) {
  auto run = [](bool zero2, WorkloadSpec::RankMemory* mem) {
    Scenario s = Load(std::string("zero") + (zero2 ? "2" : "1") + ".toml", 1,
                      std::string("tp = 2\npp = 1\ndistributed_optimizer = true\n"
                                  "shard_gradients = ") +
                          (zero2 ? "true" : "false"),
                      "global_batch = 16");  // dp 4, 4 micro-batches
    *mem = s.workload->rank_memory(s.cluster.total_gpus());
    auto w = MakeSyntheticWorkload(*s.workload, s.cluster, false);
    EXPECT_TRUE(w.ok());
    double bytes = 0;
    auto source = (*w)->OpenRank(0);
    Op op;
    while (*(*source)->Next(op))
      if (op.kind == OpKind::kCollective && op.coll == netmodel::CollectiveOp::kReduceScatter &&
          (*w)->names().Name(op.comm).substr(0, 2) == "dp")
        bytes += static_cast<double>(op.count) * SizeOf(op.dtype);
    return bytes;
  };
  WorkloadSpec::RankMemory zero1_mem, zero2_mem;
  const double zero1 = run(false, &zero1_mem);
  const double zero2 = run(true, &zero2_mem);
  EXPECT_NEAR(zero2 / zero1, 4.0, 1e-9);
  EXPECT_LT(zero2_mem.gradients, zero1_mem.gradients / 2);
  EXPECT_GT(zero2_mem.gradients, zero1_mem.gradients / 4);  // the shard and one whole layer
  EXPECT_EQ(zero2_mem.weights, zero1_mem.weights);
  WorkloadSpec bad = *Load("bad.toml", 1, "tp = 2\npp = 1", "global_batch = 16").workload;
  bad.parallel.shard_gradients = true;
  EXPECT_EQ(bad.Validate(8).message(),
            "parallel.shard_gradients (ZeRO-2) needs parallel.distributed_optimizer = true");
}

// FP8 training (Transformer Engine style): the linear layers' GEMMs in FP8, the output layer in
// BF16; cast-and-transpose kernels for unfused GEMM inputs and output gradients, and for the
// weights once per iteration (first micro-batch); cached FP8 weights add 2 B per layer
// parameter. Faster than BF16, far from twice as fast.
TEST(SyntheticWorkloadTest, Fp8TrainingQuantizesTheLinearLayers) {
  auto load = [](const char* precision) {
    return Load(std::string("fp8_") + precision + ".toml", 1, "tp = 2\npp = 1",
                std::string("global_batch = 16\nprecision = \"") + precision + "\"");
  };
  Scenario fp8 = load("fp8"), bf16 = load("bf16");
  auto w = MakeSyntheticWorkload(*fp8.workload, fp8.cluster, false);
  ASSERT_TRUE(w.ok());
  std::map<std::string, DataType> gemm_dtype;
  int weight_casts = 0, casts = 0;
  auto source = (*w)->OpenRank(0);
  Op op;
  while (*(*source)->Next(op)) {
    if (op.kind != OpKind::kKernel) continue;
    const std::string name((*w)->names().Name(op.name));
    if (op.gemm.m > 0) gemm_dtype[name] = op.gemm.dtype;
    weight_casts += name == "fp8_cast_transpose_weight";
    casts += name == "fp8_cast_transpose";
  }
  EXPECT_EQ(gemm_dtype.at("gemm_qkv"), DataType::kFloat8e4m3);
  EXPECT_EQ(gemm_dtype.at("gemm_mlp_down_wgrad"), DataType::kFloat8e4m3);
  EXPECT_EQ(gemm_dtype.at("gemm_logits"), DataType::kBfloat16);
  const int layers = fp8.workload->model.layers, micro_batches = 16 / 4;
  EXPECT_EQ(weight_casts, layers * 4);  // qkv, attention out, mlp up, mlp down; once
  // Per micro-batch and layer: the attention-out input, four dgrad output gradients.
  EXPECT_EQ(casts, micro_batches * layers * (1 + 4));
  const WorkloadSpec::RankMemory m8 = fp8.workload->rank_memory(8),
                                 m16 = bf16.workload->rank_memory(8);
  EXPECT_GT(m8.weights, m16.weights);
  EXPECT_LT(m8.weights, 2 * m16.weights);
  auto time = [](Scenario& s) {
    auto wl = MakeSyntheticWorkload(*s.workload, s.cluster, true);
    EXPECT_TRUE(wl.ok());
    auto r = RunEngine(**wl, s.cluster, EngineOptions{});
    EXPECT_TRUE(r.ok());
    return r.ok() ? static_cast<double>(r->iteration_time()) : 0.0;
  };
  // On a model of realistic width (small GEMMs do not pay for their casts).
  const std::string wide = "layers = 4\nhidden = 8192\nheads = 64\nvocab = 32000\nseq = 4096\n";
  Scenario wide8 =
      Load("wide_fp8.toml", 1, "tp = 2\npp = 1", "global_batch = 16\nprecision = \"fp8\"", wide);
  Scenario wide16 = Load("wide_bf16.toml", 1, "tp = 2\npp = 1", "global_batch = 16", wide);
  const double t8 = time(wide8), t16 = time(wide16);
  EXPECT_LT(t8, t16 / 1.1);
  EXPECT_GT(t8, t16 / 2);
}

// Current scaling (Transformer Engine's FP8-CS, torchao's dynamic float8): each cast needs its
// tensor's amax first, a pass of its own where no kernel before wrote it; the norm and
// activation outputs are cast on their own (their kernel finds the amax, but cannot cast with
// it), the column-parallel inputs on one rank's share of the sequence, and with their amax
// reduced over the tensor-parallel group. The forward's FP8 GEMMs accumulate fast, the
// backward's promote to FP32.
TEST(SyntheticWorkloadTest, Fp8CurrentScalingFindsEachAmaxBeforeItsCast) {
  auto count = [](const char* scaling) {
    Scenario s = Load(
        std::string("fp8_") + scaling + ".toml", 1, "tp = 2\npp = 1\nsequence_parallel = true",
        std::string("global_batch = 16\nprecision = \"fp8\"\nfp8_scaling = \"") + scaling + "\"");
    auto w = MakeSyntheticWorkload(*s.workload, s.cluster, false);
    EXPECT_TRUE(w.ok());
    std::map<std::string, int> kernels;
    std::map<std::string, bool> fast;
    int amax_reductions = 0;
    auto source = (*w)->OpenRank(0);
    Op op;
    while (*(*source)->Next(op)) {
      if (op.kind == OpKind::kCollective && op.count == 1 && op.dtype == DataType::kFloat32)
        ++amax_reductions;
      if (op.kind != OpKind::kKernel) continue;
      const std::string name((*w)->names().Name(op.name));
      ++kernels[name];
      if (op.gemm.m > 0) fast[name] = op.gemm.fast_accumulation;
    }
    kernels["amax reductions"] = amax_reductions;
    kernels["layers x micro-batches"] = s.workload->model.layers * (16 / 4);
    kernels["qkv fast"] = fast.at("gemm_qkv");
    kernels["qkv dgrad fast"] = fast.at("gemm_qkv_dgrad");
    kernels["mlp down wgrad fast"] = fast.at("gemm_mlp_down_wgrad");
    return kernels;
  };
  std::map<std::string, int> delayed = count("delayed"), current = count("current");
  const int n = current["layers x micro-batches"];
  EXPECT_EQ(delayed["fp8_amax_reduce"], 0);
  EXPECT_EQ(delayed["amax reductions"], 0);
  EXPECT_EQ(delayed["fp8_cast_transpose"], n * (1 + 4));
  // The attention-out input and four output gradients: an amax pass, then the cast; the QKV,
  // MLP-up and MLP-down inputs: a cast of their own; QKV's and MLP-up's amax reduced over TP.
  EXPECT_EQ(current["fp8_amax_reduce"], n * (1 + 4));
  EXPECT_EQ(current["fp8_cast_transpose"], n * (1 + 4 + 3));
  EXPECT_EQ(current["amax reductions"], n * 2);
  EXPECT_EQ(current["qkv fast"], 1);
  EXPECT_EQ(current["qkv dgrad fast"], 0);
  EXPECT_EQ(current["mlp down wgrad fast"], 0);
  WorkloadSpec bad = *Load("bad_scaling.toml", 1, "tp = 2\npp = 1", "global_batch = 16").workload;
  bad.training.fp8_scaling = Fp8Scaling::kCurrent;
  EXPECT_EQ(bad.Validate(8).message(),
            "training.fp8_scaling = \"current\" needs training.precision = \"fp8\"");
}

// The engine's peak memory on the first stage is the planned split: weights, gradients and
// optimizer state plus min(pp, m) micro-batches of activations.
TEST(SyntheticWorkloadTest, PeakMemoryMatchesThePlannedSplit) {
  Scenario s = Load("memory.toml", 1, "tp = 2\npp = 2\ndistributed_optimizer = true",
                    "global_batch = 16\nrecompute = \"selective\"");
  const WorkloadSpec::RankMemory mem = s.workload->rank_memory(s.cluster.total_gpus());
  EXPECT_DOUBLE_EQ(mem.gradients, 2 * mem.weights);
  EXPECT_DOUBLE_EQ(mem.optimizer, 6 * mem.weights / 2);  // 12 B / param over dp 2
  EXPECT_DOUBLE_EQ(mem.peak_activations, 2 * mem.activations_per_micro_batch);
  auto w = MakeSyntheticWorkload(*s.workload, s.cluster, true);
  ASSERT_TRUE(w.ok());
  auto r = RunEngine(**w, s.cluster, EngineOptions{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NEAR(static_cast<double>(r->ranks[0].peak_memory), mem.peak(), 4.0);  // rounding
}

// TP communication overlap runs each TP collective beside its GEMM: the same collectives and
// FLOPs, little exposed TP communication (only where a collective outlasts its GEMM), a
// shorter iteration.
TEST(SyntheticWorkloadTest, TpCommOverlapHidesTpCollectivesBehindGemms) {
  auto run = [](bool overlap) {
    Scenario s = Load(overlap ? "overlap.toml" : "plain.toml", 1,
                      std::string("tp = 8\npp = 1\nsequence_parallel = true\ntp_comm_overlap = ") +
                          (overlap ? "true" : "false"),
                      "global_batch = 4", kWideGpt);
    auto w = MakeSyntheticWorkload(*s.workload, s.cluster, true);
    EXPECT_TRUE(w.ok());
    const double flops = Count(**w, 0).flops;
    auto r = RunEngine(**w, s.cluster, EngineOptions{});
    EXPECT_TRUE(r.ok()) << r.status().message();
    SimTime tp_exposed = 0;
    for (const auto& [comm, time] : r->ranks[0].exposed_by_comm)
      if (comm.rfind("tp.", 0) == 0) tp_exposed += time;
    return std::tuple(flops, r->iteration_time(), tp_exposed, r->collectives.size());
  };
  const auto [flops_plain, time_plain, exposed_plain, colls_plain] = run(false);
  const auto [flops_overlap, time_overlap, exposed_overlap, colls_overlap] = run(true);
  EXPECT_DOUBLE_EQ(flops_overlap, flops_plain);
  EXPECT_EQ(colls_overlap, colls_plain);
  EXPECT_GT(exposed_plain, 0);
  EXPECT_LT(exposed_overlap, exposed_plain / 4);
  EXPECT_LT(time_overlap, time_plain);
}

// Folding simulates one replica; the prediction must not change.
TEST(SyntheticWorkloadTest, FoldingDataParallelReplicasPredictsTheSameIterationTime) {
  Scenario s = Load("fold.toml", 2, "tp = 2\npp = 2", "global_batch = 32\niterations = 2");
  auto full = MakeSyntheticWorkload(*s.workload, s.cluster, false);
  auto folded = MakeSyntheticWorkload(*s.workload, s.cluster, true);
  ASSERT_TRUE(full.ok() && folded.ok());
  EXPECT_EQ((*folded)->world_size(), 4);
  EXPECT_EQ((*folded)->gpu_of(3), 1 + 2 * 4);  // tp 1, dp 0, pp 1 on 4 replicas
  auto a = RunEngine(**full, s.cluster, EngineOptions{});
  auto b = RunEngine(**folded, s.cluster, EngineOptions{});
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_GT(a->iteration_time(), 0);
  EXPECT_EQ(a->iteration_time(), b->iteration_time());
  EXPECT_LT(b->simulated_ops, a->simulated_ops);
  // Exposed communication is attributed to the communicators in flight: each at most the
  // rank's total, and together at least it.
  for (const RankResult& rank : b->ranks) {
    SimTime sum = 0;
    for (const auto& [comm, time] : rank.exposed_by_comm) {
      EXPECT_LE(time, rank.exposed_comm) << comm;
      sum += time;
    }
    EXPECT_GE(sum, rank.exposed_comm) << "rank " << rank.rank;
    EXPECT_GT(rank.exposed_comm, 0);
  }
}

// The iteration a pipeline leaves idle follows the textbook 1F1B bubble (p - 1) / (m + p - 1)
// when compute dominates communication (a wide model on one NVSwitch node, no TP).
TEST(SyntheticWorkloadTest, PipelineBubbleFollowsTheTextbookFraction) {
  for (int pp : {2, 4, 8}) {
    const int m = 8;
    Scenario s =
        Load("bubble" + std::to_string(pp) + ".toml", 1,
             "tp = 1\npp = " + std::to_string(pp) + "\ndp = " + std::to_string(8 / pp),
             "global_batch = " + std::to_string(m * 8 / pp) + "\niterations = 2", kWideGpt);
    ASSERT_EQ(s.workload->micro_batches(), m);
    auto w = MakeSyntheticWorkload(*s.workload, s.cluster, true);
    ASSERT_TRUE(w.ok()) << w.status().message();
    auto r = RunEngine(**w, s.cluster, EngineOptions{});
    ASSERT_TRUE(r.ok()) << r.status().message();
    // Busy time per iteration of the middle stage (the first and last also run the embedding
    // and the logits).
    const RankResult& middle = r->ranks[static_cast<size_t>(pp / 2 * (*w)->world_size() / pp)];
    const double busy = static_cast<double>(middle.compute) / 2;
    const double bubble = 1 - busy / static_cast<double>(r->iteration_time());
    EXPECT_NEAR(bubble, (pp - 1.0) / (m + pp - 1.0), 0.05) << "pp " << pp;
  }
}

// Twice the replicas at the same batch per replica: the same throughput per GPU, give or take
// the larger gradient AllReduce (non-blocking fabric, reduction overlapped with the backward).
TEST(SyntheticWorkloadTest, DoublingDataParallelismKeepsThroughputPerGpu) {
  auto per_gpu = [](int nodes) {
    Scenario s = Load("dp" + std::to_string(nodes) + ".toml", nodes, "tp = 2\npp = 2",
                      "global_batch = " + std::to_string(8 * 2 * nodes) + "\niterations = 2");
    auto w = MakeSyntheticWorkload(*s.workload, s.cluster, true);
    EXPECT_TRUE(w.ok());
    auto r = RunEngine(**w, s.cluster, EngineOptions{});
    EXPECT_TRUE(r.ok());
    const double tokens = static_cast<double>(s.workload->training.global_batch) * 1024;
    return tokens / static_cast<double>(r->iteration_time()) / s.cluster.total_gpus();
  };
  const double two = per_gpu(2), four = per_gpu(4);
  EXPECT_NEAR(four / two, 1.0, 0.05);
}

}  // namespace
}  // namespace myriad::emulator

namespace myriad::emulator {
namespace {

// The progress display's time left rests on the op count a workload expects; a synthetic one
// counts one rank per pipeline stage. It must be what the run simulates, and asking for it (a
// display is shown) must not change the run.
TEST(SyntheticWorkloadTest, ExpectedOpsAreTheOpsTheRunSimulatesAndAskingChangesNothing) {
  for (const char* path :
       {"scenarios/mixtral-8x7b-h100-x64.toml", "scenarios/llama3-405b-h100-x1024.toml",
        "scenarios/llama3-8b-h100-x64.toml"}) {
    Result<Scenario> s = LoadScenario(path);
    ASSERT_TRUE(s.ok()) << s.status().message();
    auto quiet = MakeSyntheticWorkload(*s->workload, s->cluster, true);
    auto counted = MakeSyntheticWorkload(*s->workload, s->cluster, true);
    ASSERT_TRUE(quiet.ok() && counted.ok());
    const std::uint64_t expected = (*counted)->expected_ops();
    EngineOptions shown;
    int calls = 0;
    shown.on_progress = [&](const Progress&) { ++calls; };
    auto a = RunEngine(**quiet, s->cluster, EngineOptions{});
    auto b = RunEngine(**counted, s->cluster, shown);
    ASSERT_TRUE(a.ok() && b.ok()) << path;
    EXPECT_EQ(expected, b->simulated_ops) << path;
    EXPECT_GE(calls, 1) << path;  // at least the last one
    EXPECT_EQ(a->iteration_time(), b->iteration_time()) << path;
    EXPECT_EQ(a->simulated_ops, b->simulated_ops) << path;
  }
}

}  // namespace
}  // namespace myriad::emulator
