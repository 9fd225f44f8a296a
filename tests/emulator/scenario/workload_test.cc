// [workload] in scenario files and the WorkloadSpec it becomes: presets, overrides, derived
// data parallelism, the checks of WorkloadSpec::Validate, and the parameter and FLOP counts.
#include "myriad/emulator/workload.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "myriad/emulator/scenario.h"

namespace myriad::emulator {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Writes `text` to a scenario file in a fresh temporary folder and loads it.
Result<Scenario> LoadText(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "myriad_workload_test";
  fs::create_directories(dir);
  const fs::path path = dir / name;
  std::ofstream(path) << text;
  return LoadScenario(path.string());
}

// One node of 8 H100, or `nodes` of them on a rail-optimized network, then `workload`.
std::string H100(int nodes, const std::string& workload) {
  std::string text =
      "[cluster]\ngpu = \"h100-sxm\"\nnodes = " + std::to_string(nodes) + "\ngpus_per_node = 8\n";
  if (nodes > 1) text += "[cluster.scale_out]\ntopology = \"rail-optimized\"\nnic = \"cx7-400g\"\n";
  return text + workload;
}

WorkloadSpec Megatron17b() {
  WorkloadSpec spec;
  spec.model = FindModelPreset("megatron-1.7b").value();
  spec.training.global_batch = 512;
  spec.training.recompute = Recompute::kFull;
  return spec;
}

TEST(WorkloadScenarioTest, NoWorkloadTable) {
  Result<Scenario> s = LoadText("none.toml", H100(1, ""));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_FALSE(s->workload.has_value());
}

TEST(WorkloadScenarioTest, PresetWithOverridesAndDerivedDataParallelism) {
  Result<Scenario> s = LoadText("preset.toml", H100(4, R"(
[workload]
model = "llama3-8b"
seq = 4096
layers = 16

[workload.parallel]
tp = 4
pp = 2
sequence_parallel = true

[workload.training]
micro_batch = 2
global_batch = 64
precision = "fp8"
recompute = "selective"
overlap_grad_reduce = false
iterations = 3
)"));
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE(s->workload.has_value());
  const WorkloadSpec& w = *s->workload;
  EXPECT_EQ(w.model.preset, "llama3-8b");
  EXPECT_EQ(w.model.layers, 16);  // overridden
  EXPECT_EQ(w.model.seq, 4096);   // overridden
  EXPECT_EQ(w.model.hidden, 4096);
  EXPECT_EQ(w.model.heads, 32);
  EXPECT_EQ(w.model.kv_heads, 8);
  EXPECT_EQ(w.model.ffn, 14336);
  EXPECT_EQ(w.model.activation, Activation::kSwiglu);
  EXPECT_EQ(w.model.vocab, 128256);
  EXPECT_FALSE(w.model.tied_embeddings);
  EXPECT_EQ(w.parallel.tp, 4);
  EXPECT_EQ(w.parallel.pp, 2);
  EXPECT_EQ(w.parallel.dp, 4);  // 32 GPUs / (4 x 2)
  EXPECT_TRUE(w.parallel.sequence_parallel);
  EXPECT_EQ(w.data_parallel(32), 4);
  EXPECT_EQ(w.micro_batches(), 8);  // 64 / (4 x 2)
  EXPECT_EQ(w.training.micro_batch, 2);
  EXPECT_EQ(w.training.global_batch, 64);
  EXPECT_EQ(w.training.precision, DataType::kFloat8e4m3);
  EXPECT_EQ(w.training.recompute, Recompute::kSelective);
  EXPECT_FALSE(w.training.overlap_grad_reduce);
  EXPECT_EQ(w.training.iterations, 3);

  EXPECT_EQ(s->Origin("workload.hidden"), "preset llama3-8b");
  EXPECT_THAT(std::string(s->Origin("workload.layers")), HasSubstr("override "));
  EXPECT_EQ(s->Origin("workload.parallel.dp"), "derived: GPUs / (tp x cp x pp)");
  EXPECT_EQ(s->Origin("workload.training.iterations").rfind("override ", 0), 0u);
}

TEST(WorkloadScenarioTest, Defaults) {
  Result<Scenario> s = LoadText("defaults.toml", H100(1, R"(
[workload]
layers = 4
hidden = 1024
heads = 16
vocab = 32000
seq = 2048
training.global_batch = 16
)"));
  ASSERT_TRUE(s.ok()) << s.status().message();
  const WorkloadSpec& w = *s->workload;
  EXPECT_EQ(w.model.preset, "");
  EXPECT_EQ(w.model.kv_heads, 16);  // no GQA
  EXPECT_EQ(w.model.ffn, 4096);     // 4 x hidden
  EXPECT_EQ(w.model.activation, Activation::kGelu);
  EXPECT_FALSE(w.model.tied_embeddings);
  EXPECT_EQ(w.parallel.tp, 1);
  EXPECT_EQ(w.parallel.pp, 1);
  EXPECT_EQ(w.parallel.dp, 8);
  EXPECT_FALSE(w.parallel.sequence_parallel);
  EXPECT_EQ(w.training.micro_batch, 1);
  EXPECT_EQ(w.micro_batches(), 2);
  EXPECT_EQ(w.training.precision, DataType::kBfloat16);
  EXPECT_EQ(w.training.recompute, Recompute::kNone);
  EXPECT_TRUE(w.training.overlap_grad_reduce);
}

TEST(WorkloadScenarioTest, ExplicitModelKeysAndInlineTables) {
  Result<Scenario> s = LoadText("explicit.toml", H100(2, R"(
[workload]
layers = 8
hidden = 2048
heads = 16
kv_heads = 4
ffn = 5632
activation = "swiglu"
vocab = 32000
seq = 4096
tied_embeddings = true
parallel = { tp = 4, dp = 4 }
training = { global_batch = 32, micro_batch = 4 }
)"));
  ASSERT_TRUE(s.ok()) << s.status().message();
  const WorkloadSpec& w = *s->workload;
  EXPECT_EQ(w.model.kv_heads, 4);
  EXPECT_EQ(w.model.ffn, 5632);
  EXPECT_EQ(w.model.activation, Activation::kSwiglu);
  EXPECT_TRUE(w.model.tied_embeddings);
  EXPECT_EQ(w.parallel.dp, 4);
  EXPECT_EQ(w.micro_batches(), 2);  // 32 / (4 x 4)
}

TEST(WorkloadScenarioTest, ValidationErrorsAreAtTheWorkloadTable) {
  const std::string workload = R"(
[workload]
model = "llama3-8b"
training.global_batch = 16
)";
  Result<Scenario> s = LoadText("bad.toml", H100(1, workload + "parallel.tp = 3\n"));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(),
              HasSubstr("bad.toml:6:1: workload: heads (32) is not divisible by parallel.tp (3)"));
  // Llama 3 8B's 8 key/value heads cannot be split 16 ways.
  s = LoadText("bad.toml", H100(2, workload + "parallel.tp = 16\n"));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(
      s.status().message(),
      HasSubstr("bad.toml:9:1: workload: kv_heads (8) is not divisible by parallel.tp (16)"));
}

TEST(WorkloadSpecTest, Presets) {
  for (const char* name : {"gpt3-175b", "llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b",
                           "deepseek-v3-like", "megatron-1.7b", "megatron-3.6b", "megatron-7.5b",
                           "megatron-18.4b", "megatron-39.1b", "megatron-76.1b", "megatron-145.6b",
                           "megatron-310.1b", "megatron-529.6b", "megatron-1008b"}) {
    SCOPED_TRACE(name);
    Result<ModelSpec> m = FindModelPreset(name);
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ(m->preset, name);
    EXPECT_EQ(m->hidden % m->heads, 0);
    EXPECT_EQ(m->heads % m->kv_heads, 0);
  }
  const ModelSpec l405 = FindModelPreset("llama3-405b").value();
  EXPECT_EQ(l405.layers, 126);
  EXPECT_EQ(l405.hidden, 16384);
  EXPECT_EQ(l405.heads, 128);
  EXPECT_EQ(l405.kv_heads, 8);
  EXPECT_EQ(l405.ffn, 53248);
  const ModelSpec m1008 = FindModelPreset("megatron-1008b").value();
  EXPECT_EQ(m1008.layers, 128);
  EXPECT_EQ(m1008.hidden, 25600);
  EXPECT_EQ(m1008.heads, 160);
  EXPECT_EQ(m1008.ffn, 4 * 25600);
  EXPECT_EQ(m1008.seq, 2048);
  EXPECT_EQ(m1008.vocab, 51200);
  EXPECT_THAT(FindModelPreset("gpt4").status().message(), HasSubstr("known: gpt3-175b,"));
  EXPECT_EQ(FindModelPreset("llama3-7b").status().message(),
            "unknown model 'llama3-7b' (did you mean 'llama3-8b'?)");
}

TEST(WorkloadSpecTest, ValidateNamesTheKey) {
  WorkloadSpec spec = Megatron17b();  // 24 layers, 24 heads
  EXPECT_TRUE(spec.Validate(32).ok());
  EXPECT_EQ(spec.data_parallel(32), 32);

  WorkloadSpec w = spec;
  w.parallel.tp = 16;
  EXPECT_EQ(w.Validate(32).message(), "heads (24) is not divisible by parallel.tp (16)");
  w = spec;
  w.parallel.pp = 5;
  EXPECT_EQ(w.Validate(40).message(), "layers (24) is not divisible by parallel.pp (5)");
  w = spec;
  w.parallel.tp = 8;
  EXPECT_EQ(w.Validate(12).message(),
            "the cluster's 12 GPUs are not divisible by parallel.tp x parallel.pp (8 x 1 = 8)");
  w = spec;
  w.parallel.dp = 8;
  EXPECT_EQ(w.Validate(32).message(),
            "parallel.tp x parallel.pp x parallel.dp (1 x 1 x 8 = 8) must equal the cluster's 32 "
            "GPUs");
  w = spec;
  w.training.global_batch = 48;
  w.training.micro_batch = 2;
  EXPECT_EQ(w.Validate(32).message(),
            "training.global_batch (48) is not divisible by parallel.dp x training.micro_batch "
            "(32 x 2 = 64)");
  w = spec;
  w.model.kv_heads = 5;
  EXPECT_EQ(w.Validate(32).message(), "heads (24) is not a multiple of kv_heads (5)");
  w = spec;
  w.model.seq = 0;
  EXPECT_EQ(w.Validate(32).message(), "seq must be at least 1, got 0");
  w = spec;
  w.training.global_batch = 0;
  EXPECT_EQ(w.Validate(32).message(), "training.global_batch must be at least 1, got 0");
  w = spec;
  w.training.precision = DataType::kFloat32;
  EXPECT_THAT(w.Validate(32).message(), HasSubstr("training.precision must be bf16 or fp8"));
}

TEST(WorkloadSpecTest, MicroBatches) {
  WorkloadSpec spec = Megatron17b();
  EXPECT_EQ(spec.micro_batches(), 0);  // dp not resolved yet
  spec.parallel.dp = 32;
  EXPECT_EQ(spec.micro_batches(), 16);  // 512 / 32
  spec.training.micro_batch = 4;
  EXPECT_EQ(spec.micro_batches(), 4);
}

// Megatron-1.7B, global batch 512 (SC'21 Table 1, first row): B = 512, s = 2048, l = 24,
// h = 2304, V = 51200. 96 B s l h^2 = 96 x 512 x 2048 x 24 x 2304^2 = 1.2824703626379264e16;
// s/(6h) = 2048/13824 = 0.148148; V/(16 l h) = 51200/884736 = 0.057870; so
// F = 1.2824703626379264e16 x 1.206019 = 1.54668e16 FLOPs per iteration. At the published
// 137 TFLOP/s on 32 GPUs that is a 3.53 s iteration.
TEST(WorkloadSpecTest, IterationFlopsMatchMegatronEquation3) {
  const WorkloadSpec spec = Megatron17b();
  const double B = 512, s = 2048, l = 24, h = 2304, V = 51200;
  const double base = 96 * B * s * l * h * h;
  EXPECT_DOUBLE_EQ(base, 1.2824703626379264e16);
  const double full = base * (1 + s / (6 * h) + V / (16 * l * h));
  EXPECT_NEAR(full, 1.54668e16, 1e11);
  EXPECT_NEAR(spec.iteration_flops() / full, 1.0, 1e-12);
  EXPECT_NEAR(spec.iteration_flops(Recompute::kFull) / full, 1.0, 1e-12);
  // Without recomputation: 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) = 1.17857e16.
  const double none = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  EXPECT_NEAR(spec.iteration_flops(Recompute::kNone) / none, 1.0, 1e-12);
  EXPECT_NEAR(none, 1.17857e16, 1e11);
  // Selective: plus the recomputed attention core, 4 B s^2 h l.
  EXPECT_NEAR(spec.iteration_flops(Recompute::kSelective) / (none + 4 * B * s * s * h * l), 1.0,
              1e-12);
  // A loaded scenario's recompute setting picks the formula.
  WorkloadSpec no_recompute = spec;
  no_recompute.training.recompute = Recompute::kNone;
  EXPECT_DOUBLE_EQ(no_recompute.iteration_flops(), spec.iteration_flops(Recompute::kNone));
}

TEST(WorkloadSpecTest, Parameters) {
  // GPT-3 175B: Megatron's 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)) = 174.6e9, plus the final
  // LayerNorm; within 1% of 175e9.
  WorkloadSpec gpt3;
  gpt3.model = FindModelPreset("gpt3-175b").value();
  const double l = 96, h = 12288, V = 51200, s = 2048;
  const double megatron = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
  EXPECT_DOUBLE_EQ(gpt3.parameters(), megatron + 2 * h);
  EXPECT_NEAR(gpt3.parameters() / 175e9, 1.0, 0.01);
  // Megatron-1.7B: 1.652e9 by the same formula.
  WorkloadSpec m17 = Megatron17b();
  EXPECT_NEAR(m17.parameters(), 1.652226048e9 + 2 * 2304, 1);
  // Llama 3 (SwiGLU, GQA, untied): the released checkpoints' counts exactly.
  WorkloadSpec llama;
  llama.model = FindModelPreset("llama3-8b").value();
  EXPECT_DOUBLE_EQ(llama.parameters(), 8030261248.0);
  llama.model = FindModelPreset("llama3-70b").value();
  EXPECT_DOUBLE_EQ(llama.parameters(), 70553706496.0);
  llama.model = FindModelPreset("llama3-405b").value();
  EXPECT_NEAR(llama.parameters() / 405e9, 1.0, 0.01);
}

// Mixture-of-experts models count every expert in parameters() and the top_k routed ones in
// active_parameters() and the FLOPs.
TEST(WorkloadSpecTest, MixtureOfExpertsParameters) {
  WorkloadSpec mixtral;
  mixtral.model = FindModelPreset("mixtral-8x7b").value();
  EXPECT_TRUE(mixtral.model.is_moe());
  EXPECT_EQ(mixtral.model.moe_layers(), 32);
  // The released checkpoint's count, and Mistral's "12.9B active parameters".
  EXPECT_DOUBLE_EQ(mixtral.parameters(), 46702792704.0);
  EXPECT_DOUBLE_EQ(mixtral.active_parameters(), 12879925248.0);
  // DeepSeek-V3: "671B total parameters, of which 37B are activated for each token"; MLA
  // approximated by plain attention over the same hidden size (spec.cc).
  WorkloadSpec deepseek;
  deepseek.model = FindModelPreset("deepseek-v3-like").value();
  EXPECT_EQ(deepseek.model.moe_layers(), 58);
  EXPECT_FALSE(deepseek.model.IsMoeLayer(2));
  EXPECT_TRUE(deepseek.model.IsMoeLayer(3));
  EXPECT_NEAR(deepseek.parameters() / 671e9, 1.0, 0.01);
  EXPECT_NEAR(deepseek.active_parameters() / 37e9, 1.0, 0.06);
  // FLOPs follow the active parameters: a top-2 of 8 model without attention or logits to
  // speak of does 6 x active GEMM weights per token.
  WorkloadSpec tiny;
  tiny.model = mixtral.model;
  tiny.model.seq = 1;
  tiny.model.vocab = 1;
  tiny.training.global_batch = 1;
  tiny.training.recompute = Recompute::kNone;
  const double gemm_weights = tiny.active_parameters() - 2.0 * 4096 - 32 * (2 * 4096 + 4096 * 8.0);
  EXPECT_NEAR(tiny.iteration_flops() / (6 * gemm_weights + 3 * 32 * 4.0 * 4096), 1.0, 1e-3);
  // moe_every: every other layer from the first.
  ModelSpec alternating = mixtral.model;
  alternating.moe_every = 2;
  EXPECT_EQ(alternating.moe_layers(), 16);
  EXPECT_TRUE(alternating.IsMoeLayer(0));
  EXPECT_FALSE(alternating.IsMoeLayer(1));
}

TEST(WorkloadSpecTest, RankOrderParsing) {
  EXPECT_EQ(ToString(ParseRankOrder("tp-dp-pp").value()), "tp-cp-ep-dp-pp");
  EXPECT_EQ(ToString(ParseRankOrder("dp-tp-pp").value()), "ep-dp-tp-cp-pp");
  EXPECT_EQ(ToString(ParseRankOrder("tp-ep-cp-dp-pp").value()), "tp-ep-cp-dp-pp");
  EXPECT_EQ(ParseRankOrder("tp-dp").status().message(),
            "'tp-dp': 'pp' missing (name tp, dp and pp once each and cp and ep at most once, "
            "fastest first, as in \"tp-cp-ep-dp-pp\")");
  EXPECT_THAT(ParseRankOrder("tp-xp-dp-pp").status().message(), HasSubstr("unknown axis 'xp'"));
  EXPECT_THAT(ParseRankOrder("tp-cp-cp-dp-pp").status().message(), HasSubstr("'cp' named twice"));
}

// Uneven stages (Llama 3's 126 layers on 16 stages) and interleaved chunks.
TEST(WorkloadSpecTest, StageAndChunkLayers) {
  WorkloadSpec spec;
  spec.model = FindModelPreset("llama3-405b").value();
  spec.parallel.pp = 16;
  spec.parallel.first_stage_layers = 7;
  spec.parallel.last_stage_layers = 7;
  EXPECT_EQ(spec.ChunkLayers(0, 0), (std::pair<int, int>{0, 7}));
  EXPECT_EQ(spec.ChunkLayers(1, 0), (std::pair<int, int>{7, 15}));
  EXPECT_EQ(spec.ChunkLayers(15, 0), (std::pair<int, int>{119, 126}));
  spec.parallel.last_stage_layers = 0;  // 126 - 7 = 119 over 15 stages does not split
  spec.training.global_batch = 16;
  EXPECT_THAT(spec.Validate(128).message(),
              HasSubstr("leaves 119 for the other 15 stages, which must split it evenly"));

  WorkloadSpec v = Megatron17b();  // 24 layers
  v.parallel.pp = 4;
  v.parallel.virtual_stages = 3;
  // Virtual stage c pp + s: 2 layers each; stage 1 holds layers 2-3, 10-11, 18-19.
  EXPECT_EQ(v.ChunkLayers(1, 0), (std::pair<int, int>{2, 4}));
  EXPECT_EQ(v.ChunkLayers(1, 2), (std::pair<int, int>{18, 20}));
  EXPECT_EQ(v.StageLayers(1), 6);
  EXPECT_TRUE(v.Validate(32).ok());  // dp 8, 64 micro-batches
  v.training.global_batch = 8 * 6;   // 6 micro-batches: not a multiple of pp
  EXPECT_EQ(v.Validate(32).message(),
            "interleaved 1F1B needs the micro-batches per iteration (6) to be a multiple of "
            "parallel.pp (4)");
  v.training.global_batch = 512;
  v.parallel.virtual_stages = 5;
  EXPECT_EQ(v.Validate(32).message(),
            "layers (24) is not divisible by parallel.pp x parallel.virtual_stages (4 x 5 = 20)");
}

TEST(WorkloadSpecTest, ValidateContextExpertAndShardingKeys) {
  WorkloadSpec spec = Megatron17b();
  WorkloadSpec w = spec;
  w.parallel.cp = 2;
  EXPECT_TRUE(w.Validate(32).ok());
  EXPECT_EQ(w.data_parallel(32), 16);
  w.training.flash_attention = false;
  EXPECT_EQ(w.Validate(32).message(),
            "parallel.cp > 1 needs training.attention = \"flash\" (ring attention)");
  w = spec;
  w.parallel.cp = 3;
  EXPECT_THAT(w.Validate(48).message(),
              HasSubstr("seq (2048) is not divisible by 2 x parallel.cp"));
  w = spec;
  w.parallel.ep = 2;
  EXPECT_EQ(w.Validate(32).message(), "parallel.ep (2) needs an MoE model (experts > 0)");
  w.model.experts = 6;
  w.model.top_k = 2;
  w.model.moe_ffn = 4096;
  EXPECT_TRUE(w.Validate(32).ok());
  w.parallel.ep = 4;
  EXPECT_EQ(w.Validate(32).message(), "experts (6) is not divisible by parallel.ep (4)");
  w.parallel.ep = 3;
  EXPECT_THAT(w.Validate(32).message(), HasSubstr("parallel.dp (32) is not divisible by"));
  w.parallel.ep = 1;
  w.model.top_k = 7;
  EXPECT_EQ(w.Validate(32).message(), "top_k (7) must be between 1 and experts (6)");
  w = spec;
  w.parallel.fsdp = true;
  w.parallel.distributed_optimizer = true;
  EXPECT_THAT(w.Validate(32).message(), HasSubstr("parallel.fsdp already shards"));
  w = spec;
  w.training.overlap_param_gather = true;
  EXPECT_THAT(w.Validate(32).message(), HasSubstr("needs parallel.distributed_optimizer"));
}

// Sharding: ZeRO-1 divides the optimizer state by dp x cp, FSDP everything (plus two gathered
// layers); experts are replicated over dp / ep x cp only.
TEST(WorkloadSpecTest, ShardedMemory) {
  WorkloadSpec spec = Megatron17b();
  spec.parallel.dp = 32;
  const WorkloadSpec::RankMemory plain = spec.rank_memory(32);
  spec.parallel.distributed_optimizer = true;
  const WorkloadSpec::RankMemory zero1 = spec.rank_memory(32);
  EXPECT_DOUBLE_EQ(zero1.optimizer, plain.optimizer / 32);
  EXPECT_DOUBLE_EQ(zero1.weights, plain.weights);
  spec.parallel.distributed_optimizer = false;
  spec.parallel.fsdp = true;
  const WorkloadSpec::RankMemory fsdp = spec.rank_memory(32);
  EXPECT_DOUBLE_EQ(fsdp.gradients, plain.gradients / 32);
  EXPECT_DOUBLE_EQ(fsdp.optimizer, plain.optimizer / 32);
  const double layer = spec.layer_dense_parameters(0);
  EXPECT_DOUBLE_EQ(fsdp.weights, plain.weights / 32 + 2 * 2 * layer);

  WorkloadSpec moe;
  moe.model = FindModelPreset("mixtral-8x7b").value();
  moe.parallel.ep = 8;
  moe.parallel.dp = 16;
  moe.parallel.distributed_optimizer = true;
  moe.training.global_batch = 16;
  const WorkloadSpec::RankMemory m = moe.rank_memory(16);
  const double experts = 32 * 8 * moe.expert_parameters() / 8;  // a rank's experts: one per layer
  const double dense = moe.parameters() - 32 * 8 * moe.expert_parameters();
  EXPECT_NEAR(m.weights / (2 * (dense + experts)), 1.0, 1e-12);
  EXPECT_NEAR(m.optimizer / (12 * (dense / 16 + experts / 2)), 1.0, 1e-12);
}

}  // namespace
}  // namespace myriad::emulator
