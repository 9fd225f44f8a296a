// [workload] specs: the model presets, the checks on a spec, and its parameter and FLOP counts
// (docs/scenarios.md, "[workload]").
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "myriad/emulator/did_you_mean.h"
#include "myriad/emulator/workload.h"

namespace myriad::emulator {
namespace {

struct Preset {
  std::string_view name;
  ModelSpec model;
};

// A GPT-style model: GeLU MLP of 4 x hidden, multi-head attention, tied embeddings.
ModelSpec Gpt(int layers, int hidden, int heads, int vocab, int seq) {
  ModelSpec m;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.ffn = 4 * hidden;
  m.activation = Activation::kGelu;
  m.vocab = vocab;
  m.seq = seq;
  m.tied_embeddings = true;
  m.dropout = true;  // Megatron-LM's hidden_dropout and attention_dropout, 0.1 each
  return m;
}

// A Llama-3-style model: SwiGLU MLP, grouped-query attention, untied embeddings.
ModelSpec Llama(int layers, int hidden, int heads, int kv_heads, int ffn) {
  ModelSpec m;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn = ffn;
  m.activation = Activation::kSwiglu;
  m.vocab = 128256;  // the released tokenizer (params.json); the paper rounds it to "128K"
  m.seq = 8192;      // pre-training context length
  m.tied_embeddings = false;
  m.dropout = false;  // Meta's and Megatron-Bridge's Llama recipes train without dropout
  return m;
}

// Megatron-LM's GPT vocabulary: GPT-2's 50,257 BPE tokens padded to 51,200.
constexpr int kMegatronVocab = 51200;
constexpr int kMegatronSeq = 2048;

ModelSpec Megatron(int heads, int hidden, int layers) {
  return Gpt(layers, hidden, heads, kMegatronVocab, kMegatronSeq);
}

// Mixtral 8x7B: Jiang et al., "Mixtral of Experts" (2024), Table 1 (dim 4096, 32 layers, head
// dim 128, hidden dim 14336, 32 heads, 8 KV heads, vocabulary 32,000, 8 experts, top 2). Its
// context is 32K; the preset trains on 4,096-token sequences (set seq to change it).
ModelSpec Mixtral8x7b() {
  ModelSpec m = Llama(32, 4096, 32, 8, 14336);
  m.vocab = 32000;
  m.seq = 4096;
  m.experts = 8;
  m.top_k = 2;
  m.moe_ffn = 14336;
  return m;
}

// DeepSeek-V3-like: DeepSeek-AI, "DeepSeek-V3 Technical Report" (2024), section 4.2: 61
// layers, hidden 7168, 128 heads; the first 3 layers dense (FFN 18432), the others 1 shared
// and 256 routed experts of FFN 2048, 8 routed per token; vocabulary 129,280 (the released
// config.json); 4,096-token pre-training sequences. Multi-head latent attention is modelled
// as plain multi-head attention of 128 heads over the same hidden size (head size 56): its
// weights count 4 h^2 = 206M per layer against MLA's ~187M, and its attention core is
// narrower than MLA's 192-wide query-key heads. Multi-token prediction is not modelled.
ModelSpec DeepSeekV3Like() {
  ModelSpec m = Llama(61, 7168, 128, 128, 18432);
  m.vocab = 129280;
  m.seq = 4096;
  m.experts = 256;
  m.top_k = 8;
  m.moe_ffn = 2048;
  m.moe_shared_ffn = 2048;
  m.moe_first_dense = 3;
  return m;
}

const std::array<Preset, 16>& Presets() {
  static const std::array<Preset, 16> kPresets = {{
      // GPT-3 175B: Brown et al., "Language Models are Few-Shot Learners" (2020), Table 2.1
      // (96 layers, d_model 12288, 96 heads of 128, context 2048); GPT-2's tokenizer, padded
      // to 51,200 as Megatron-LM trains it.
      {"gpt3-175b", Gpt(96, 12288, 96, kMegatronVocab, 2048)},
      // Llama 3: Dubey et al., "The Llama 3 Herd of Models" (2024), Table 3 (layers, model
      // dimension, FFN dimension, attention heads, 8 key/value heads), and Meta's released
      // params.json (vocabulary 128,256; 8,192-token pre-training sequences).
      {"llama3-8b", Llama(32, 4096, 32, 8, 14336)},
      {"llama3-70b", Llama(80, 8192, 64, 8, 28672)},
      {"llama3-405b", Llama(126, 16384, 128, 8, 53248)},
      {"mixtral-8x7b", Mixtral8x7b()},
      {"deepseek-v3-like", DeepSeekV3Like()},
      // Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
      // Using Megatron-LM", SC'21, Table 1 (shared/reference/training.md): heads, hidden size,
      // layers; sequence 2048, vocabulary 51,200.
      {"megatron-1.7b", Megatron(24, 2304, 24)},
      {"megatron-3.6b", Megatron(32, 3072, 30)},
      {"megatron-7.5b", Megatron(32, 4096, 36)},
      {"megatron-18.4b", Megatron(48, 6144, 40)},
      {"megatron-39.1b", Megatron(64, 8192, 48)},
      {"megatron-76.1b", Megatron(80, 10240, 60)},
      {"megatron-145.6b", Megatron(96, 12288, 80)},
      {"megatron-310.1b", Megatron(128, 16384, 96)},
      {"megatron-529.6b", Megatron(128, 20480, 105)},
      {"megatron-1008b", Megatron(160, 25600, 128)},
  }};
  return kPresets;
}

// Weights of one layer's attention GEMMs (no biases): Q and O are hidden x hidden, K and V
// hidden x (kv_heads x head size).
double AttentionWeights(const ModelSpec& m) {
  const double h = m.hidden;
  const double kv = static_cast<double>(m.kv_heads) * (m.hidden / m.heads);
  return 2 * h * h + 2 * h * kv;
}

// An MLP of inner size `inner`: two (GeLU) or three (SwiGLU) matrices of hidden x inner.
double MlpWeights(const ModelSpec& m, int inner) {
  return (m.activation == Activation::kSwiglu ? 3.0 : 2.0) * m.hidden * inner;
}

// GEMM weights a token passes through in layer `layer`: attention and the MLP, or in an MoE
// layer its top_k experts and the shared expert (the router is not counted, as Megatron's
// FLOP formula does not count it).
double ActiveLayerGemmWeights(const ModelSpec& m, int layer) {
  if (!m.IsMoeLayer(layer)) return AttentionWeights(m) + MlpWeights(m, m.ffn);
  return AttentionWeights(m) + m.top_k * MlpWeights(m, m.moe_ffn) + MlpWeights(m, m.moe_shared_ffn);
}

// A layer's parameters outside its routed experts: attention, norms, the dense MLP or the
// router and shared expert, and GPT-style biases (dense MLPs only).
double DenseLayerParameters(const ModelSpec& m, int layer) {
  const double h = m.hidden;
  const bool gpt = m.activation == Activation::kGelu;
  const bool moe = m.IsMoeLayer(layer);
  double p = AttentionWeights(m);
  p += moe ? h * m.experts + MlpWeights(m, m.moe_shared_ffn) : MlpWeights(m, m.ffn);
  if (gpt) {
    const double kv = static_cast<double>(m.kv_heads) * (m.hidden / m.heads);
    p += h + 2 * kv + h;       // Q, K, V and output projection biases
    if (!moe) p += m.ffn + h;  // MLP biases
    p += 2 * 2 * h;            // two LayerNorms, weight and bias
  } else {
    p += 2 * h;  // two RMSNorm weights
  }
  return p;
}

std::string Count(std::string_view what, int value) { return fmt::format("{} ({})", what, value); }

}  // namespace

Result<ModelSpec> FindModelPreset(const std::string& name) {
  std::vector<std::string_view> names;
  for (const Preset& preset : Presets()) {
    if (preset.name == name) {
      ModelSpec model = preset.model;
      model.preset = name;
      return model;
    }
    names.push_back(preset.name);
  }
  const std::string_view suggestion = ClosestMatch(name, names);
  if (!suggestion.empty()) {
    return Status::NotFound(
        fmt::format("unknown model '{}' (did you mean '{}'?)", name, suggestion));
  }
  return Status::NotFound(
      fmt::format("unknown model '{}' (known: {})", name, fmt::join(names, ", ")));
}

namespace {

constexpr std::array<std::string_view, kAxes> kAxisNames = {"tp", "cp", "ep", "dp", "pp"};

// Micro-batches per iteration that a simulation generates (each a forward and a backward of
// every stage): a global batch of 2^31 sequences grew memory by 0.6 GB/s. Real jobs run tens
// to thousands (docs/scenarios.md, "Bounds").
constexpr long long kMaxMicroBatches = 16384;

}  // namespace

Result<AxisOrder> ParseRankOrder(const std::string& text) {
  auto bad = [&](std::string why) {
    return Status::InvalidArgument(
        fmt::format("'{}': {} (name tp, dp and pp once each and cp and ep at most once, fastest "
                    "first, as in \"tp-cp-ep-dp-pp\")",
                    text, why));
  };
  std::vector<Axis> named;
  std::size_t start = 0;
  while (true) {
    const std::size_t dash = text.find('-', start);
    const std::string_view part =
        std::string_view(text).substr(start, dash == std::string::npos ? dash : dash - start);
    const auto it = std::find(kAxisNames.begin(), kAxisNames.end(), part);
    if (it == kAxisNames.end()) return bad(fmt::format("unknown axis '{}'", part));
    const Axis axis = static_cast<Axis>(it - kAxisNames.begin());
    if (std::find(named.begin(), named.end(), axis) != named.end())
      return bad(fmt::format("'{}' named twice", part));
    named.push_back(axis);
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  for (Axis required : {kTpAxis, kEdpAxis, kPpAxis})
    if (std::find(named.begin(), named.end(), required) == named.end())
      return bad(fmt::format("'{}' missing", kAxisNames[required]));
  // Left out, cp goes right after tp and ep right before dp (their places in Megatron's
  // default), so "tp-dp-pp" means what it meant before CP and EP existed.
  auto insert_after = [&](Axis axis, Axis anchor, int offset) {
    if (std::find(named.begin(), named.end(), axis) != named.end()) return;
    const auto at = std::find(named.begin(), named.end(), anchor);
    named.insert(at + offset, axis);
  };
  insert_after(kCpAxis, kTpAxis, 1);
  insert_after(kEpAxis, kEdpAxis, 0);
  AxisOrder order{};
  std::copy(named.begin(), named.end(), order.begin());
  return order;
}

std::string ToString(const AxisOrder& order) {
  std::vector<std::string_view> names;
  for (Axis axis : order) names.push_back(kAxisNames[axis]);
  return fmt::format("{}", fmt::join(names, "-"));
}

int ModelSpec::moe_layers() const {
  int count = 0;
  for (int l = 0; l < layers; ++l) count += IsMoeLayer(l);
  return count;
}

Status WorkloadSpec::Validate(int world_size) const {
  auto invalid = [](std::string message) { return Status::InvalidArgument(std::move(message)); };
  const ModelSpec& m = model;
  const std::array<std::pair<std::string_view, int>, 7> sizes = {{{"layers", m.layers},
                                                                  {"hidden", m.hidden},
                                                                  {"heads", m.heads},
                                                                  {"kv_heads", m.kv_heads},
                                                                  {"ffn", m.ffn},
                                                                  {"vocab", m.vocab},
                                                                  {"seq", m.seq}}};
  for (const auto& [key, value] : sizes) {
    if (value < 1) return invalid(fmt::format("{} must be at least 1, got {}", key, value));
  }
  if (parallel.tp_comm_overlap && !parallel.sequence_parallel)
    return invalid("parallel.tp_comm_overlap needs parallel.sequence_parallel = true");
  const std::array<std::pair<std::string_view, int>, 8> counts = {
      {{"parallel.tp", parallel.tp},
       {"parallel.pp", parallel.pp},
       {"parallel.cp", parallel.cp},
       {"parallel.ep", parallel.ep},
       {"parallel.virtual_stages", parallel.virtual_stages},
       {"training.micro_batch", training.micro_batch},
       {"training.global_batch", training.global_batch},
       {"training.iterations", training.iterations}}};
  for (const auto& [key, value] : counts) {
    if (value < 1) return invalid(fmt::format("{} must be at least 1, got {}", key, value));
  }
  if (parallel.dp < 0) {
    return invalid(fmt::format("parallel.dp must be at least 1, got {}", parallel.dp));
  }
  if (world_size < 1) return invalid(fmt::format("no GPUs to run on (world size {})", world_size));
  if (training.precision != DataType::kBfloat16 && training.precision != DataType::kFloat8e4m3) {
    return invalid(fmt::format("training.precision must be bf16 or fp8, got {}",
                               ToString(training.precision)));
  }
  if (parallel.shard_gradients && !parallel.distributed_optimizer)
    return invalid("parallel.shard_gradients (ZeRO-2) needs parallel.distributed_optimizer = true");
  if (parallel.fsdp_per_parameter && !parallel.fsdp)
    return invalid("parallel.fsdp_layout = \"per-parameter\" needs parallel.fsdp = true");
  if (parallel.tp_comm_overlap_pytorch && !parallel.tp_comm_overlap)
    return invalid("parallel.tp_comm_overlap_by needs parallel.tp_comm_overlap = true");
  if (!parallel.fsdp_reshard_after_forward && !parallel.fsdp)
    return invalid("parallel.fsdp_reshard_after_forward = false needs parallel.fsdp = true");
  if (parallel.fsdp && parallel.distributed_optimizer)
    return invalid(
        "parallel.fsdp already shards the optimizer state; drop parallel.distributed_optimizer");
  if (training.fp8_param_gather && training.precision != DataType::kFloat8e4m3)
    return invalid("training.fp8_param_gather needs training.precision = \"fp8\"");
  if (training.fp8_scaling == Fp8Scaling::kCurrent && training.precision != DataType::kFloat8e4m3)
    return invalid("training.fp8_scaling = \"current\" needs training.precision = \"fp8\"");
  if (training.overlap_param_gather && !parallel.fsdp && !parallel.distributed_optimizer)
    return invalid(
        "training.overlap_param_gather needs parallel.distributed_optimizer or parallel.fsdp "
        "(without them no parameters are gathered)");

  // Model shapes.
  if (m.hidden % m.heads != 0) {
    return invalid(fmt::format("{} is not a multiple of {}", Count("hidden", m.hidden),
                               Count("heads", m.heads)));
  }
  if (m.heads % m.kv_heads != 0) {
    return invalid(fmt::format("{} is not a multiple of {}", Count("heads", m.heads),
                               Count("kv_heads", m.kv_heads)));
  }
  if (m.is_moe()) {
    if (m.top_k < 1 || m.top_k > m.experts)
      return invalid(
          fmt::format("top_k ({}) must be between 1 and {}", m.top_k, Count("experts", m.experts)));
    if (m.moe_ffn < 1) return invalid(fmt::format("moe_ffn must be at least 1, got {}", m.moe_ffn));
    if (m.moe_shared_ffn < 0)
      return invalid(fmt::format("moe_shared_ffn must be at least 0, got {}", m.moe_shared_ffn));
    if (m.moe_every < 1)
      return invalid(fmt::format("moe_every must be at least 1, got {}", m.moe_every));
    if (m.moe_first_dense < 0 || m.moe_first_dense >= m.layers)
      return invalid(fmt::format("moe_first_dense ({}) must leave at least one of the {} MoE",
                                 m.moe_first_dense, Count("layers", m.layers)));
    if (!(m.moe_capacity_factor > 0))
      return invalid(
          fmt::format("moe_capacity_factor must be positive, got {}", m.moe_capacity_factor));
  } else if (m.experts < 0) {
    return invalid(fmt::format("experts must be at least 0, got {}", m.experts));
  }

  // Tensor parallelism splits heads, key/value groups and the MLPs; pipeline parallelism
  // splits layers; context parallelism the sequence; expert parallelism the experts.
  const int tp = parallel.tp;
  const int pp = parallel.pp;
  const int cp = parallel.cp;
  const int ep = parallel.ep;
  const int v = parallel.virtual_stages;
  if (m.heads % tp != 0) {
    return invalid(fmt::format("{} is not divisible by {}", Count("heads", m.heads),
                               Count("parallel.tp", tp)));
  }
  if (m.kv_heads % tp != 0) {
    return invalid(
        fmt::format("{} is not divisible by {} (each tensor-parallel rank holds "
                    "whole key/value heads)",
                    Count("kv_heads", m.kv_heads), Count("parallel.tp", tp)));
  }
  if (m.ffn % tp != 0) {
    return invalid(
        fmt::format("{} is not divisible by {}", Count("ffn", m.ffn), Count("parallel.tp", tp)));
  }
  if (m.is_moe() && (m.moe_ffn % tp != 0 || m.moe_shared_ffn % tp != 0)) {
    return invalid(fmt::format("moe_ffn ({}) and moe_shared_ffn ({}) must be divisible by {}",
                               m.moe_ffn, m.moe_shared_ffn, Count("parallel.tp", tp)));
  }
  if (ep > 1 && !m.is_moe())
    return invalid(fmt::format("parallel.ep ({}) needs an MoE model (experts > 0)", ep));
  if (m.is_moe() && m.experts % ep != 0) {
    return invalid(fmt::format("{} is not divisible by {}", Count("experts", m.experts),
                               Count("parallel.ep", ep)));
  }
  if (cp > 1) {
    if (!training.flash_attention)
      return invalid("parallel.cp > 1 needs training.attention = \"flash\" (ring attention)");
    if (m.seq % (2 * cp) != 0)
      return invalid(
          fmt::format("{} is not divisible by 2 x parallel.cp ({}): each context-"
                      "parallel rank holds two balanced chunks",
                      Count("seq", m.seq), 2 * cp));
  }
  const bool uneven = parallel.first_stage_layers > 0 || parallel.last_stage_layers > 0;
  if (parallel.first_stage_layers < 0 || parallel.last_stage_layers < 0)
    return invalid("parallel.first_stage_layers and last_stage_layers must be at least 0");
  if (v > 1 && pp < 2) return invalid("parallel.virtual_stages > 1 needs parallel.pp > 1");
  if (uneven) {
    if (pp < 2) return invalid("parallel.first_stage_layers and last_stage_layers need pp > 1");
    // With interleaving they are the first and last virtual stages' layers.
    const int fixed = (parallel.first_stage_layers > 0) + (parallel.last_stage_layers > 0);
    const int rest = m.layers - parallel.first_stage_layers - parallel.last_stage_layers;
    const int others = pp * v - fixed;
    if (others == 0 ? rest != 0 : rest < others || rest % others != 0)
      return invalid(fmt::format(
          "{} less parallel.first_stage_layers ({}) and last_stage_layers ({}) leaves {} for "
          "the other {} {}stages, which must split it evenly (at least one each)",
          Count("layers", m.layers), parallel.first_stage_layers, parallel.last_stage_layers, rest,
          others, v > 1 ? "virtual " : ""));
  } else if (v > 1) {
    if (m.layers % (pp * v) != 0)
      return invalid(
          fmt::format("{} is not divisible by parallel.pp x parallel.virtual_stages "
                      "({} x {} = {})",
                      Count("layers", m.layers), pp, v, pp * v));
  } else if (m.layers % pp != 0) {
    return invalid(fmt::format("{} is not divisible by {}", Count("layers", m.layers),
                               Count("parallel.pp", pp)));
  }

  // The parallel axes tile the cluster (cp named only when it is used).
  const long long model_parallel = static_cast<long long>(tp) * cp * pp;
  const std::string axes =
      cp > 1 ? "parallel.tp x parallel.cp x parallel.pp" : "parallel.tp x parallel.pp";
  const std::string sizes_of =
      cp > 1 ? fmt::format("{} x {} x {}", tp, cp, pp) : fmt::format("{} x {}", tp, pp);
  if (world_size % model_parallel != 0) {
    return invalid(fmt::format("the cluster's {} GPUs are not divisible by {} ({} = {})",
                               world_size, axes, sizes_of, model_parallel));
  }
  const int dp = data_parallel(world_size);
  if (model_parallel * dp != world_size) {
    return invalid(fmt::format("{} x parallel.dp ({} x {} = {}) must equal the cluster's {} GPUs",
                               axes, sizes_of, dp, model_parallel * dp, world_size));
  }
  if (dp % ep != 0) {
    return invalid(
        fmt::format("parallel.dp ({}) is not divisible by {}: expert parallelism "
                    "splits the data-parallel replicas",
                    dp, Count("parallel.ep", ep)));
  }
  const long long per_step = static_cast<long long>(dp) * training.micro_batch;
  if (training.global_batch % per_step != 0) {
    return invalid(
        fmt::format("training.global_batch ({}) is not divisible by parallel.dp x "
                    "training.micro_batch ({} x {} = {})",
                    training.global_batch, dp, training.micro_batch, per_step));
  }
  const long long micro = training.global_batch / per_step;
  if (micro > kMaxMicroBatches) {
    return invalid(fmt::format(
        "training.global_batch ({}) makes {} micro-batches per iteration (global_batch / "
        "(parallel.dp x training.micro_batch)); at most {} are simulated",
        training.global_batch, micro, kMaxMicroBatches));
  }
  if (v > 1 && micro % pp != 0) {
    return invalid(
        fmt::format("interleaved 1F1B needs the micro-batches per iteration ({}) to "
                    "be a multiple of parallel.pp ({})",
                    micro, pp));
  }
  return Status::Ok();
}

int WorkloadSpec::data_parallel(int world_size) const {
  if (parallel.dp > 0) return parallel.dp;
  const long long model_parallel = static_cast<long long>(parallel.tp) * parallel.cp * parallel.pp;
  return model_parallel > 0 ? static_cast<int>(world_size / model_parallel) : 0;
}

int WorkloadSpec::micro_batches() const {
  const long long per_step = static_cast<long long>(parallel.dp) * training.micro_batch;
  return per_step > 0 ? static_cast<int>(training.global_batch / per_step) : 0;
}

// Virtual stage g = chunk x pp + stage (the stage itself without interleaving). The first and
// last virtual stages hold first_stage_layers and last_stage_layers when set; the others split
// the rest evenly.
std::pair<int, int> WorkloadSpec::ChunkLayers(int stage, int chunk) const {
  const int stages = parallel.pp * parallel.virtual_stages;
  const int g = chunk * parallel.pp + stage;
  const int first_n = parallel.first_stage_layers, last_n = parallel.last_stage_layers;
  const int others = stages - (first_n > 0) - (last_n > 0);
  const int middle = others > 0 ? (model.layers - first_n - last_n) / others : 0;
  const int begin = first_n > 0 ? (g > 0 ? first_n + (g - 1) * middle : 0) : g * middle;
  const int size = g == 0 && first_n > 0           ? first_n
                   : g == stages - 1 && last_n > 0 ? last_n
                                                   : middle;
  return {begin, begin + size};
}

int WorkloadSpec::StageLayers(int stage) const {
  int count = 0;
  for (int c = 0; c < parallel.virtual_stages; ++c) {
    const auto [first, end] = ChunkLayers(stage, c);
    count += end - first;
  }
  return count;
}

// Counted from the shapes. GeLU models are GPT-style (biases on every dense GEMM, two
// LayerNorms of weight and bias per layer, learned position embeddings); SwiGLU models are
// Llama-style (no biases, RMSNorm weights only, rotary positions). Both count the final norm.
// For a GPT model this is Megatron's 12 l h^2 (1 + 13/(12 h) + (V + s)/(12 l h)) plus the
// final LayerNorm's 2h.
double WorkloadSpec::parameters() const {
  const ModelSpec& m = model;
  if (m.heads < 1) return 0;
  const double h = m.hidden;
  const bool gpt = m.activation == Activation::kGelu;
  double total = 0;
  for (int l = 0; l < m.layers; ++l) total += DenseLayerParameters(m, l);
  total += m.moe_layers() * static_cast<double>(m.experts) * expert_parameters();
  total += static_cast<double>(m.vocab) * h * (m.tied_embeddings ? 1 : 2);
  if (gpt) total += static_cast<double>(m.seq) * h;  // learned position embeddings
  total += gpt ? 2 * h : h;                          // final norm
  return total;
}

double WorkloadSpec::layer_dense_parameters(int layer) const {
  return DenseLayerParameters(model, layer);
}

double WorkloadSpec::expert_parameters() const {
  return model.is_moe() ? MlpWeights(model, model.moe_ffn) : 0.0;
}

double WorkloadSpec::active_parameters() const {
  return parameters() - model.moe_layers() * static_cast<double>(model.experts - model.top_k) *
                            expert_parameters();
}

double WorkloadSpec::iteration_flops() const { return iteration_flops(training.recompute); }

// Per token and layer, the forward pass is 2 FLOPs per GEMM weight a token passes through
// plus the attention core (Q K^T and scores x V: 2 x 2 s h, the full s x s square, as Megatron
// counts it; half that with training.causal_attention_flops), and the logits add 2 h V. Backward is
// twice the forward. Full recomputation runs every layer's forward again (not the logits);
// selective recomputation only the attention core. For a GPT model with full recomputation this is
// eq. 3 of Narayanan et al. (SC'21):
//   F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)),
// and without recomputation 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
double WorkloadSpec::iteration_flops(Recompute recompute) const {
  const ModelSpec& m = model;
  if (m.heads < 1) return 0;
  const double tokens = static_cast<double>(training.global_batch) * m.seq;
  const double h = m.hidden;
  const double attention_core = (training.causal_attention_flops ? 2.0 : 4.0) * m.seq * h;
  double layers_forward = 0;
  for (int l = 0; l < m.layers; ++l) layers_forward += 2 * ActiveLayerGemmWeights(m, l);
  layers_forward += m.layers * attention_core;
  const double logits_forward = 2 * h * m.vocab;
  double per_token = 3 * (layers_forward + logits_forward);
  if (recompute == Recompute::kFull) per_token += layers_forward;
  if (recompute == Recompute::kSelective) per_token += m.layers * attention_core;
  if (recompute == Recompute::kSelectiveOp) {
    // The layer's second and fourth matmuls in forward order (QKV, output projection, then
    // the MLP's gate and up projections, or a GPT MLP's two): the output projection and the
    // up projection (SwiGLU) or the down projection (GeLU), each h x ffn. An MoE layer's
    // router and experts are kept: only its output projection reruns.
    for (int l = 0; l < m.layers; ++l)
      per_token += 2 * h * h + (m.IsMoeLayer(l) ? 0.0 : 2 * h * m.ffn);
  }
  return tokens * per_token;
}

// Per token, the bytes a layer keeps for its backward: the tensors its ops save (Korthikanti et
// al. 2022, section 4.1, counted from the layer's shapes), divided by tp where the tensor is split
// over the tensor-parallel ranks and, with sequence parallelism, in the norm regions too.
double WorkloadSpec::activation_bytes(int first, int end) const {
  const ModelSpec& m = model;
  const int tp = parallel.tp, cp = parallel.cp;
  const double seq_split = parallel.sequence_parallel ? tp : 1;  // the norm regions' divisor
  const double h = m.hidden, kv = static_cast<double>(m.kv_heads) * (h / m.heads);
  const bool fp8 = training.precision == DataType::kFloat8e4m3;
  const double mask = m.dropout ? 1.0 : 0.0;  // a dropout mask, 1 B an element
  // Transformer Engine's FP8 linear layers keep their input for the weight gradient as the FP8
  // copy (1 B an element), not the BF16 tensor.
  const double linear_input = fp8 ? 1.0 : 2.0;
  // Unfused attention without recomputation keeps the a x s scores of each query: the softmax's
  // output (2 B), and with dropout its mask and output (1 + 2 B).
  const bool keeps_scores = !training.flash_attention && training.recompute == Recompute::kNone;
  const double scores = keeps_scores ? (m.dropout ? 5.0 : 2.0) * m.heads * m.seq / h / tp : 0.0;
  // An MLP of inner size f keeps its up projection's output (both halves with a gated
  // activation, which recomputes the activation in its backward) and the down projection's
  // input; a dense MLP also its own input, an expert its copy of the token (BF16: experts are
  // left unquantized).
  const double up_output = m.activation == Activation::kSwiglu ? 4.0 : 2.0;
  auto mlp = [&](double ffn, double down_input) { return (up_output + down_input) * ffn / h / tp; };
  const double tokens = static_cast<double>(training.micro_batch) * m.seq / cp;
  double per_token_layers = 0;
  for (int l = first; l < end; ++l) {
    if (training.recompute == Recompute::kFull) {
      per_token_layers += 2.0 / seq_split;
      continue;
    }
    if (training.recompute == Recompute::kSelectiveOp && !m.IsMoeLayer(l)) {
      // Op-level selective checkpointing keeps the layer's input, the outputs of the matmuls
      // it does not rerun (QKV, the gate projection, the down projection) and attention's
      // output, all BF16; everything else is recomputed in the backward.
      per_token_layers += (2 * 2 * h / seq_split + 2 * (h + 2 * kv + h + m.ffn) / tp) / h;
      continue;
    }
    double per = 2.0 * 2 / seq_split;  // the two norms' inputs
    // Attention: the QKV projection's input; Q, K and V (attention's backward reads them; the
    // attention core itself is fused or recomputed); attention's output, which its backward
    // reads too, and the output projection's FP8 copy of it; the hidden dropout's mask.
    per += linear_input / seq_split + (2 + 4 * kv / h) / tp + (fp8 ? 3.0 : 2.0) / tp +
           mask / seq_split + scores;
    if (m.IsMoeLayer(l)) {
      // The router's input; per routed copy of a token the expert's input and MLP, and the
      // shared expert's MLP on the router's input.
      const double routed = m.top_k * m.moe_capacity_factor;
      per += 2.0 / seq_split + routed * (2.0 / tp + mlp(m.moe_ffn, 2.0)) +
             mlp(m.moe_shared_ffn, 2.0) + mask / seq_split;
    } else {
      per += linear_input / seq_split + mlp(m.ffn, linear_input) + mask / seq_split;
    }
    per_token_layers += per;
  }
  return tokens * h * per_token_layers;
}

WorkloadSpec::RankMemory WorkloadSpec::rank_memory(int world_size, int stage) const {
  const ModelSpec& m = model;
  const int tp = parallel.tp, pp = parallel.pp, v = parallel.virtual_stages;
  const int dp = data_parallel(world_size);
  const double h = m.hidden;
  // Parameters on one GPU of the stage: its layers' dense parameters over tp, its experts
  // over tp x ep; the first stage holds the embeddings, the last the final norm and the
  // output layer (a tied model keeps a copy of the embedding there when pp > 1).
  // FSDP also holds the gathered weights of its largest layer twice (computing, prefetched).
  double dense = 0, experts = 0, largest_layer = 0;
  for (int c = 0; c < v; ++c) {
    const auto [first, end] = ChunkLayers(stage, c);
    for (int l = first; l < end; ++l) {
      const double layer_dense = DenseLayerParameters(m, l);
      const double layer_experts =
          m.IsMoeLayer(l) ? static_cast<double>(m.experts) * expert_parameters() : 0.0;
      dense += layer_dense;
      experts += layer_experts;
      largest_layer =
          std::max(largest_layer, layer_dense / tp + layer_experts / (tp * parallel.ep));
    }
  }
  // The layers' weights on this rank, which FP8 training also keeps as cached FP8 copies.
  const double layer_weights = dense / tp + experts / (static_cast<double>(tp) * parallel.ep);
  const bool gpt = m.activation == Activation::kGelu;
  if (stage == 0) dense += static_cast<double>(m.vocab) * h + (gpt ? m.seq * h : 0.0);
  if (stage == pp - 1) {
    dense += gpt ? 2 * h : h;
    if (!m.tied_embeddings || pp > 1) dense += static_cast<double>(m.vocab) * h;
  }
  dense /= tp;
  experts /= static_cast<double>(tp) * parallel.ep;
  const double all = dense + experts;
  const double sharded = dense / parallel.dense_shards(dp) + experts / parallel.expert_shards(dp);
  RankMemory mem;
  mem.weights = parallel.fsdp ? 2 * sharded + 2 * 2 * largest_layer : 2 * all;
  // Without resharding after the forward, every layer's gathered weights stay from its forward
  // to its backward, so all of them at the turn; FSDP2 under pipelining also accumulates the
  // stage's whole gradients (upcast to the reduce type) until the last micro-batch's backward
  // reduce-scatters them.
  if (parallel.fsdp && !parallel.fsdp_reshard_after_forward) mem.weights = 2 * sharded + 2 * all;
  const bool unsharded_gradients = parallel.fsdp && parallel.fsdp_per_parameter && pp > 1;
  // Transformer Engine caches each FP8 weight and its transpose (1 + 1 B per parameter) beside
  // the BF16 one; with FP8 parameters those two are the layer's weights.
  if (training.precision == DataType::kFloat8e4m3 && !parallel.fsdp && !training.fp8_param_gather)
    mem.weights += 2 * layer_weights;
  // ZeRO-2 keeps the shard plus the whole gradients of the unit being reduce-scattered.
  mem.gradients =
      SizeOf(training.grad_reduce_dtype) * (unsharded_gradients        ? sharded + all
                                            : parallel.fsdp            ? sharded
                                            : parallel.shard_gradients ? sharded + largest_layer
                                                                       : all);
  mem.optimizer = 12 * (parallel.fsdp || parallel.distributed_optimizer ? sharded : all);
  std::vector<double> chunk_bytes(static_cast<size_t>(v));  // one micro-batch's, per chunk
  for (int c = 0; c < v; ++c) {
    const auto [first, end] = ChunkLayers(stage, c);
    chunk_bytes[static_cast<size_t>(c)] = activation_bytes(first, end);
    mem.activations_per_micro_batch += chunk_bytes[static_cast<size_t>(c)];
  }
  const int micro_batches = training.global_batch / (dp * training.micro_batch);
  if (v == 1) {
    mem.in_flight = std::min(pp - stage, micro_batches);
    mem.peak_activations = mem.activations_per_micro_batch * mem.in_flight;
  } else {
    // Megatron's interleaved schedule: a warm-up of 2 (pp - s - 1) + (v - 1) pp forwards (all
    // of them when m = pp), then one forward and one backward per step. Forward k runs chunk
    // (k mod pv) / pp, backward k chunk v - 1 - (k mod pv) / pp; the peak follows the chunks in
    // flight after each forward (their layers differ when the ends are uneven).
    const int total = micro_batches * v, group = pp * v;
    const int warmup =
        micro_batches == pp ? total : std::min(total, 2 * (pp - stage - 1) + (v - 1) * pp);
    double held = 0;
    int count = 0, backwards = 0;
    for (int k = 0; k < total; ++k) {
      held += chunk_bytes[static_cast<size_t>(k % group / pp)];
      ++count;
      if (held > mem.peak_activations) mem.peak_activations = held;
      mem.in_flight = std::max(mem.in_flight, count);
      if (k >= warmup) {  // the steady state's backward after this forward
        held -= chunk_bytes[static_cast<size_t>(v - 1 - backwards % group / pp)];
        ++backwards;
        --count;
      }
    }
  }
  return mem;
}

int WorkloadSpec::fullest_stage(int world_size) const {
  int best = 0;
  double most = -1;
  for (int s = 0; s < parallel.pp; ++s) {
    const double peak = rank_memory(world_size, s).peak();
    if (peak > most) {
      most = peak;
      best = s;
    }
  }
  return best;
}

}  // namespace myriad::emulator
