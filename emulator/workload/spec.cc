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
  return m;
}

// Megatron-LM's GPT vocabulary: GPT-2's 50,257 BPE tokens padded to 51,200.
constexpr int kMegatronVocab = 51200;
constexpr int kMegatronSeq = 2048;

ModelSpec Megatron(int heads, int hidden, int layers) {
  return Gpt(layers, hidden, heads, kMegatronVocab, kMegatronSeq);
}

const std::array<Preset, 14>& Presets() {
  static const std::array<Preset, 14> kPresets = {{
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

// Weights of one transformer layer's GEMMs (no biases, no norms): Q and O are hidden x hidden,
// K and V hidden x (kv_heads x head size); the MLP has two (GeLU) or three (SwiGLU) matrices
// of hidden x ffn.
double LayerGemmWeights(const ModelSpec& m) {
  const double h = m.hidden;
  const double kv = static_cast<double>(m.kv_heads) * (m.hidden / m.heads);
  const double attention = 2 * h * h + 2 * h * kv;
  const double mlp = (m.activation == Activation::kSwiglu ? 3.0 : 2.0) * h * m.ffn;
  return attention + mlp;
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

bool IsRankOrder(const std::array<std::string, 3>& order) {
  std::array<std::string, 3> axes = order;
  std::sort(axes.begin(), axes.end());
  return axes == std::array<std::string, 3>{"dp", "pp", "tp"};
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
  if (!IsRankOrder(parallel.order))
    return invalid(fmt::format("parallel.order must name tp, dp and pp once each, got '{}'",
                               fmt::join(parallel.order, "-")));
  const std::array<std::pair<std::string_view, int>, 5> counts = {
      {{"parallel.tp", parallel.tp},
       {"parallel.pp", parallel.pp},
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

  // Model shapes.
  if (m.hidden % m.heads != 0) {
    return invalid(fmt::format("{} is not a multiple of {}", Count("hidden", m.hidden),
                               Count("heads", m.heads)));
  }
  if (m.heads % m.kv_heads != 0) {
    return invalid(fmt::format("{} is not a multiple of {}", Count("heads", m.heads),
                               Count("kv_heads", m.kv_heads)));
  }

  // Tensor parallelism splits heads, key/value groups and the MLP; pipeline parallelism
  // splits layers.
  const int tp = parallel.tp;
  const int pp = parallel.pp;
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
  if (m.layers % pp != 0) {
    return invalid(fmt::format("{} is not divisible by {}", Count("layers", m.layers),
                               Count("parallel.pp", pp)));
  }

  // The parallel axes tile the cluster.
  const long long model_parallel = static_cast<long long>(tp) * pp;
  if (world_size % model_parallel != 0) {
    return invalid(
        fmt::format("the cluster's {} GPUs are not divisible by parallel.tp x "
                    "parallel.pp ({} x {} = {})",
                    world_size, tp, pp, model_parallel));
  }
  const int dp = data_parallel(world_size);
  if (model_parallel * dp != world_size) {
    return invalid(
        fmt::format("parallel.tp x parallel.pp x parallel.dp ({} x {} x {} = {}) must "
                    "equal the cluster's {} GPUs",
                    tp, pp, dp, model_parallel * dp, world_size));
  }
  const long long per_step = static_cast<long long>(dp) * training.micro_batch;
  if (training.global_batch % per_step != 0) {
    return invalid(
        fmt::format("training.global_batch ({}) is not divisible by parallel.dp x "
                    "training.micro_batch ({} x {} = {})",
                    training.global_batch, dp, training.micro_batch, per_step));
  }
  return Status::Ok();
}

int WorkloadSpec::data_parallel(int world_size) const {
  if (parallel.dp > 0) return parallel.dp;
  const long long model_parallel = static_cast<long long>(parallel.tp) * parallel.pp;
  return model_parallel > 0 ? static_cast<int>(world_size / model_parallel) : 0;
}

int WorkloadSpec::micro_batches() const {
  const long long per_step = static_cast<long long>(parallel.dp) * training.micro_batch;
  return per_step > 0 ? static_cast<int>(training.global_batch / per_step) : 0;
}

// Counted from the shapes. GeLU models are GPT-style (biases on every GEMM, two LayerNorms of
// weight and bias per layer, learned position embeddings); SwiGLU models are Llama-style (no
// biases, RMSNorm weights only, rotary positions). Both count the final norm. For a GPT model
// this is Megatron's 12 l h^2 (1 + 13/(12 h) + (V + s)/(12 l h)) plus the final LayerNorm's 2h.
double WorkloadSpec::parameters() const {
  const ModelSpec& m = model;
  if (m.heads < 1) return 0;
  const double h = m.hidden;
  const bool gpt = m.activation == Activation::kGelu;
  double layer = LayerGemmWeights(m);
  if (gpt) {
    const double kv = static_cast<double>(m.kv_heads) * (m.hidden / m.heads);
    layer += h + 2 * kv + h;  // Q, K, V and output projection biases
    layer += m.ffn + h;       // MLP biases
    layer += 2 * 2 * h;       // two LayerNorms, weight and bias
  } else {
    layer += 2 * h;  // two RMSNorm weights
  }
  double total = m.layers * layer;
  total += static_cast<double>(m.vocab) * h * (m.tied_embeddings ? 1 : 2);
  if (gpt) total += static_cast<double>(m.seq) * h;  // learned position embeddings
  total += gpt ? 2 * h : h;                          // final norm
  return total;
}

double WorkloadSpec::iteration_flops() const { return iteration_flops(training.recompute); }

// Per token and layer, the forward pass is 2 FLOPs per GEMM weight plus the attention core
// (Q K^T and scores x V: 2 x 2 s h, the full s x s square, as Megatron counts it), and the
// logits add 2 h V. Backward is twice the forward. Full recomputation runs every layer's
// forward again (not the logits); selective recomputation only the attention core. For a GPT
// model with full recomputation this is eq. 3 of Narayanan et al. (SC'21):
//   F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)),
// and without recomputation 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
double WorkloadSpec::iteration_flops(Recompute recompute) const {
  const ModelSpec& m = model;
  if (m.heads < 1) return 0;
  const double tokens = static_cast<double>(training.global_batch) * m.seq;
  const double h = m.hidden;
  const double attention_core = 4.0 * m.seq * h;
  const double layer_forward = 2 * LayerGemmWeights(m) + attention_core;
  const double logits_forward = 2 * h * m.vocab;
  double per_token = 3 * (m.layers * layer_forward + logits_forward);
  if (recompute == Recompute::kFull) per_token += m.layers * layer_forward;
  if (recompute == Recompute::kSelective) per_token += m.layers * attention_core;
  return tokens * per_token;
}

WorkloadSpec::RankMemory WorkloadSpec::rank_memory(int world_size) const {
  const int tp = parallel.tp, pp = parallel.pp, dp = data_parallel(world_size);
  const double params = parameters() / (static_cast<double>(tp) * pp);
  RankMemory mem;
  mem.weights = 2 * params;
  mem.gradients = 4 * params;
  mem.optimizer = 12 * params / (parallel.distributed_optimizer ? dp : 1);
  const bool sp = parallel.sequence_parallel;
  const bool keeps_scores = !training.flash_attention && training.recompute == Recompute::kNone;
  const double scores = keeps_scores ? 5.0 * model.heads * model.seq / model.hidden / tp : 0.0;
  const double per_token = training.recompute == Recompute::kFull
                               ? 2.0 / (sp ? tp : 1)
                               : (sp ? 34.0 / tp : 10.0 + 24.0 / tp) + scores;
  const double tokens = static_cast<double>(training.micro_batch) * model.seq;
  mem.activations_per_micro_batch =
      tokens * model.hidden * per_token * (static_cast<double>(model.layers) / pp);
  const int micro_batches = training.global_batch / (dp * training.micro_batch);
  mem.peak_activations = mem.activations_per_micro_batch * std::min(pp, micro_batches);
  return mem;
}

}  // namespace myriad::emulator
