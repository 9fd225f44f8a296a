// PyTorch's own kernels (docs/kernel-timing.md, "PyTorch's kernels").
#include "timing/pytorch_kernels.h"

#include <cxxabi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>

#include "protocol/kernel_signature.h"
#include "timing/launch_guess.h"
#include "timing/library_model.h"

namespace myriad::emulator::timing {
namespace {

// Fractions of HBM bandwidth, from PyTorch's kernels on H100 (shared/reference/kernels.md;
// bytes = all tensor reads and writes, over the 3.35 TB/s peak).
// §3.4: add (vectorized) 2 x [16,559,1024] BF16, 3.07 TB/s; copy FP32 -> BF16 3.02 TB/s.
constexpr double kVectorizedEfficiency = 0.9;
// §3.4: copy BF16 -> FP32 through the unrolled (casting) kernel, 1.88 TB/s.
constexpr double kUnrolledEfficiency = 0.56;
// §3.4: permute-copy to contiguous through the strided kernel, 1.36 TB/s.
constexpr double kStridedEfficiency = 0.41;
// §3.4: mean over the last dimension [16,559,1024] FP32, 2.43 TB/s.
constexpr double kReductionEfficiency = 0.73;
// §3.3: PyTorch's LayerNorm (HF module) forward, 4096 x 16384 FP32, 1750 GB/s.
constexpr double kNormForwardEfficiency = 0.52;
// §3.2: PyTorch's LayerNorm backward, 1024 x 12288 BF16 on H200, 1245 of 4800 GB/s.
constexpr double kNormBackwardEfficiency = 0.26;
// §3.4: cunn_SoftMaxForward, rows of 3137 BF16, 0.66 TB/s.
constexpr double kSoftmaxEfficiency = 0.2;
// Assumed: multi_tensor_apply's vector loads stream like the vectorized elementwise kernels
// (§3.5's fused Adam, 2.1 TB/s derived under its stated assumptions, is consistent).
constexpr double kMultiTensorEfficiency = kVectorizedEfficiency;
// Assumed: flash backward's pre/post-processing and cat's copies stream like vectorized code.
constexpr double kStreamingEfficiency = kVectorizedEfficiency;

// Elements one block of multi_tensor_apply_kernel takes (kChunkSize, PyTorch's
// aten/src/ATen/native/cuda/MultiTensorApply.cuh): the grid counts chunks.
constexpr std::int64_t kMultiTensorChunk = 65536;

}  // namespace

std::string DemangleKernelName(std::string_view name) {
  if (name.substr(0, 2) != "_Z") return std::string(name);
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(std::string(name).c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

namespace {

std::string Demangle(std::string_view name) { return DemangleKernelName(name); }

bool IsIdentifier(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Splits "a, b<c, d>, e" at its top-level commas.
std::vector<std::string_view> SplitTopLevel(std::string_view list) {
  std::vector<std::string_view> parts;
  wire::ForEachTopLevel(list, std::numeric_limits<int>::max(),
                        [&](std::string_view part) { parts.push_back(part); });
  return parts;
}

// The function's unqualified name and its template arguments: "void ns::f<int, 2>(float)"
// gives "f" and {"int", "2"}.
struct FunctionName {
  std::string_view base;
  std::vector<std::string_view> template_args;
};
FunctionName ParseFunctionName(std::string_view demangled) {
  FunctionName f;
  const std::size_t i = wire::ParameterListOpen(demangled);
  if (i == std::string_view::npos || i == 0) return f;
  std::size_t end = i;  // one past the name (and its template arguments)
  if (demangled[end - 1] == '>') {
    std::size_t j = end - 1;
    int angle = 0;
    for (;; --j) {
      if (demangled[j] == '>') ++angle;
      if (demangled[j] == '<' && --angle == 0) break;
      if (j == 0) return f;
    }
    f.template_args = SplitTopLevel(demangled.substr(j + 1, end - 1 - (j + 1)));
    end = j;
  }
  std::size_t start = end;
  while (start > 0 && IsIdentifier(demangled[start - 1])) --start;
  f.base = demangled.substr(start, end - start);
  return f;
}

// The template arguments of a class named in `type` ("ns::Traits<64, 128>" gives {"64",
// "128"}).
std::vector<std::string_view> ClassArgs(std::string_view type) {
  const std::size_t open = type.find('<');
  if (open == std::string_view::npos || type.back() != '>') return {};
  return SplitTopLevel(type.substr(open + 1, type.size() - open - 2));
}

int ParseInt(std::string_view text) {
  int value = 0;
  bool any = false;
  for (char c : text) {
    if (c < '0' || c > '9') break;
    value = value * 10 + (c - '0');
    any = true;
    if (value > 1'000'000) return 0;
  }
  return any ? value : 0;
}

struct Scalar {
  int size;
  DataType dtype;
};

// The data types `text` names, in order: "converting_copy<float, c10::BFloat16>" gives 4 then
// 2. Pointers and references are left out (they are parameters, not elements).
std::vector<Scalar> ScalarsIn(std::string_view text) {
  struct Known {
    std::string_view name;
    Scalar scalar;
  };
  static constexpr Known kKnown[] = {
      {"c10::BFloat16", {2, DataType::kBfloat16}},
      {"cutlass::bfloat16_t", {2, DataType::kBfloat16}},
      {"__nv_bfloat16", {2, DataType::kBfloat16}},
      {"c10::Half", {2, DataType::kFloat16}},
      {"cutlass::half_t", {2, DataType::kFloat16}},
      {"__half", {2, DataType::kFloat16}},
      {"float", {4, DataType::kFloat32}},
      {"double", {8, DataType::kFloat64}},
      {"c10::Float8_e4m3fn", {1, DataType::kFloat8e4m3}},
      {"c10::Float8_e5m2", {1, DataType::kFloat8e5m2}},
      {"long", {8, DataType::kInt64}},
      {"int", {4, DataType::kInt32}},
      {"short", {2, DataType::kInt32}},
      {"bool", {1, DataType::kUint8}},
      {"char", {1, DataType::kInt8}},
  };
  std::vector<Scalar> found;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!IsIdentifier(text[i]) || (text[i] >= '0' && text[i] <= '9')) {
      ++i;
      continue;
    }
    std::size_t end = i;  // a qualified identifier: letters, digits, '_' and "::"
    while (end < text.size() &&
           (IsIdentifier(text[end]) ||
            (text[end] == ':' && end + 1 < text.size() && text[end + 1] == ':'))) {
      end += text[end] == ':' ? 2 : 1;
    }
    std::string_view word = text.substr(i, end - i);
    // "unsigned int", "long long", "signed char": the last word names the size.
    while ((word == "unsigned" || word == "signed" || word == "long") && end < text.size() &&
           text[end] == ' ' && end + 1 < text.size() && IsIdentifier(text[end + 1])) {
      std::size_t next = end + 1;
      while (next < text.size() && IsIdentifier(text[next])) ++next;
      const std::string_view second = text.substr(end + 1, next - end - 1);
      if (second != "int" && second != "long" && second != "char" && second != "short") break;
      word = second == "long" ? "long" : second;
      end = next;
    }
    std::size_t after = end;
    while (after < text.size() && text[after] == ' ') ++after;
    const bool indirect = after < text.size() && (text[after] == '*' || text[after] == '&');
    const bool qualified_before = i >= 2 && text[i - 1] == ':' && text[i - 2] == ':';
    if (!indirect && !qualified_before) {
      for (const Known& k : kKnown) {
        if (word == k.name) {
          found.push_back(k.scalar);
          break;
        }
      }
    }
    i = end;
  }
  return found;
}

// Bytes per element over `operands` tensors whose types `text` names in order; the last
// named type stands for the rest (a functor names its input type once), 4 bytes if none.
int OperandBytes(std::string_view text, int operands) {
  const std::vector<Scalar> scalars = ScalarsIn(text);
  int bytes = 0;
  for (int k = 0; k < operands; ++k) {
    if (scalars.empty()) {
      bytes += 4;
    } else {
      bytes += scalars[std::min<std::size_t>(static_cast<std::size_t>(k), scalars.size() - 1)].size;
    }
  }
  return bytes;
}

int FirstSize(std::string_view text, int otherwise = 4) {
  const std::vector<Scalar> scalars = ScalarsIn(text);
  return scalars.empty() ? otherwise : scalars.front().size;
}

// K of "std::array<char*, Kul>" in the template arguments; 0 if absent.
int ArrayOperands(const std::vector<std::string_view>& args) {
  for (std::string_view a : args) {
    if (a.substr(0, 11) == "std::array<" && a.find("char*") != std::string_view::npos) {
      const std::vector<std::string_view> inner = ClassArgs(a);
      if (inner.size() == 2) return ParseInt(inner[1]);
    }
  }
  return 0;
}

bool ParseFlashTraits(std::string_view traits, KernelClass* c) {
  const std::vector<std::string_view> t = ClassArgs(traits);
  if (t.size() < 3) return false;
  c->head_dim = ParseInt(t[0]);
  c->block_m = ParseInt(t[1]);
  c->block_n = ParseInt(t[2]);
  c->dtype =
      traits.find("half_t") != std::string_view::npos ? DataType::kFloat16 : DataType::kBfloat16;
  c->element_size = 2;
  return c->head_dim > 0 && c->block_m > 0 && c->block_n > 0;
}

KernelClass Classify(std::string_view demangled) {
  KernelClass c;
  const FunctionName f = ParseFunctionName(demangled);
  const std::vector<std::string_view>& a = f.template_args;
  const auto arg = [&](std::size_t i) { return i < a.size() ? a[i] : std::string_view(); };
  const std::string_view base = f.base;
  const auto family = [&](KernelFamily fam) {
    c.family = fam;
    return c;
  };

  if (base == "vectorized_elementwise_kernel" ||
      base == "vectorized_templated_elementwise_kernel" || base == "unrolled_elementwise_kernel") {
    const bool unrolled = base == "unrolled_elementwise_kernel";
    c.operands = ArrayOperands(a);
    if (c.operands <= 0) return c;
    c.bytes_per_element = OperandBytes(arg(unrolled ? 0 : 1), c.operands);
    return family(unrolled ? KernelFamily::kElementwiseUnrolled : KernelFamily::kElementwise);
  }
  if (base == "elementwise_kernel") {
    // The strided path names no operand count: assumed a binary op (two reads, one write).
    c.operands = 3;
    c.bytes_per_element = 3 * FirstSize(arg(2));
    return family(KernelFamily::kElementwiseStrided);
  }
  if (base == "elementwise_kernel_with_index") {
    c.operands = 1;
    c.bytes_per_element = FirstSize(arg(1));
    return family(KernelFamily::kElementwiseIndexed);
  }
  if (base == "reduce_kernel") {
    // reduce_kernel<nt, output_vec_size, ReduceOp<scalar_t, ops_t, index_t, out_scalar_t,
    // vt0, input_vec_size>>
    const std::vector<std::string_view> r = ClassArgs(arg(2));
    if (r.size() < 6) return c;
    c.element_size = FirstSize(r[0]);
    c.elements_per_thread = std::max(1, ParseInt(r[4])) * std::max(1, ParseInt(r[5]));
    return family(KernelFamily::kReduction);
  }
  if (base == "vectorized_layer_norm_kernel" || base == "LayerNormForwardCUDAKernel" ||
      base == "RowwiseMomentsCUDAKernel") {
    c.element_size = FirstSize(arg(0));
    c.accumulator_size = FirstSize(arg(1));
    c.reads_only = base == "RowwiseMomentsCUDAKernel";
    return family(KernelFamily::kNormForward);
  }
  if (base == "layer_norm_grad_input_kernel" || base == "layer_norm_grad_input_kernel_vectorized" ||
      base.substr(0, 17) == "GammaBetaBackward") {
    c.element_size = FirstSize(arg(0));
    c.accumulator_size = FirstSize(arg(1));
    c.depth = base.substr(0, 17) == "GammaBetaBackward" ? 2 : 3;  // tensors of M x N touched
    return family(KernelFamily::kNormBackward);
  }
  if (base == "cunn_SoftMaxForward" || base == "cunn_SoftMaxForwardSmem" ||
      base == "cunn_SoftMaxBackward") {
    // <ILP, scalar_t, accscalar_t, outscalar_t, Epilogue>
    c.backward = base == "cunn_SoftMaxBackward";
    const int in = FirstSize(arg(1)), out = FirstSize(arg(3));
    c.bytes_per_element = c.backward ? in + 2 * out : in + out;
    return family(KernelFamily::kSoftmax);
  }
  if (base == "softmax_warp_forward" || base == "softmax_warp_backward") {
    // <input_t, output_t, acc_t, log2_elements, ...>
    c.backward = base == "softmax_warp_backward";
    c.warp_softmax = true;
    const int in = FirstSize(arg(0)), out = FirstSize(arg(1));
    c.bytes_per_element = c.backward ? in + 2 * out : in + out;
    return family(KernelFamily::kSoftmax);
  }
  if (base == "multi_tensor_apply_kernel") {
    // TensorListMetadata<depth>, FusedOptimizerTensorListMetadata<depth>,
    // TensorListScalarListMetadata<scalar_t, depth>: the depth is the integer argument.
    for (std::string_view m : ClassArgs(arg(0))) c.depth = std::max(c.depth, ParseInt(m));
    if (c.depth <= 0) return c;
    c.element_size = FirstSize(arg(1));
    c.reads_only = arg(1).find("Norm") != std::string_view::npos;
    return family(KernelFamily::kMultiTensor);
  }
  if (base == "flash_fwd_kernel" || base == "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel") {
    // <Kernel_traits, Is_dropout, Is_causal, ...>
    if (!ParseFlashTraits(arg(0), &c)) return c;
    c.causal = arg(2) == "true";
    c.backward = base != "flash_fwd_kernel";
    return family(KernelFamily::kAttention);
  }
  if (base == "flash_bwd_dot_do_o_kernel" || base == "flash_bwd_convert_dq_kernel") {
    const bool dot = base == "flash_bwd_dot_do_o_kernel";
    if (!ParseFlashTraits(arg(dot ? 1 : 0), &c)) return c;
    c.clears_accumulator = dot && arg(0) == "true";
    c.backward = !dot;  // here: the dQ conversion
    return family(KernelFamily::kAttentionAux);
  }
  if (base.substr(0, 19) == "CatArrayBatchedCopy") {
    const std::vector<std::string_view> opaque = ClassArgs(arg(0));
    c.element_size = opaque.empty() ? 4 : std::max(1, ParseInt(opaque[0]));
    return family(KernelFamily::kCat);
  }
  return c;
}

double ThreadCount(const Op& op) {
  return static_cast<double>(op.grid.x) * op.grid.y * op.grid.z * op.block.x * op.block.y *
         op.block.z;
}

}  // namespace

std::string_view ToString(KernelFamily family) {
  switch (family) {
    case KernelFamily::kNone:
      return "none";
    case KernelFamily::kElementwise:
      return "elementwise";
    case KernelFamily::kElementwiseUnrolled:
      return "elementwise (unrolled)";
    case KernelFamily::kElementwiseStrided:
      return "elementwise (strided)";
    case KernelFamily::kElementwiseIndexed:
      return "elementwise (indexed)";
    case KernelFamily::kReduction:
      return "reduction";
    case KernelFamily::kNormForward:
      return "norm forward";
    case KernelFamily::kNormBackward:
      return "norm backward";
    case KernelFamily::kSoftmax:
      return "softmax";
    case KernelFamily::kMultiTensor:
      return "multi-tensor";
    case KernelFamily::kAttention:
      return "attention";
    case KernelFamily::kAttentionAux:
      return "attention pre/post";
    case KernelFamily::kCat:
      return "cat";
  }
  return "none";
}

KernelClass ClassifyKernel(std::string_view name) {
  const std::string demangled = Demangle(name);
  KernelClass c = Classify(demangled);
  c.array_element_bytes = ArrayElementBytes(demangled);  // for the launch guess
  const wire::IntegerParameters ints = wire::FindIntegerParameters(demangled);
  const wire::PointerParameters pointers = wire::FindPointerParameters(demangled);
  c.int_positions.assign(ints.index, ints.index + ints.count);
  c.pointer_positions.assign(pointers.index, pointers.index + pointers.count);
  return c;
}

double FamilyEfficiency(KernelFamily family) {
  switch (family) {
    case KernelFamily::kElementwise:
    case KernelFamily::kElementwiseIndexed:
      return kVectorizedEfficiency;
    case KernelFamily::kElementwiseUnrolled:
      return kUnrolledEfficiency;
    case KernelFamily::kElementwiseStrided:
      return kStridedEfficiency;
    case KernelFamily::kReduction:
      return kReductionEfficiency;
    case KernelFamily::kNormForward:
      return kNormForwardEfficiency;
    case KernelFamily::kNormBackward:
      return kNormBackwardEfficiency;
    case KernelFamily::kSoftmax:
      return kSoftmaxEfficiency;
    case KernelFamily::kMultiTensor:
      return kMultiTensorEfficiency;
    case KernelFamily::kAttentionAux:
    case KernelFamily::kCat:
      return kStreamingEfficiency;
    case KernelFamily::kAttention:
    case KernelFamily::kNone:
      break;
  }
  return kH100HbmEfficiency;
}

bool DescribeKernelWork(const KernelClass& c, std::span<const std::int64_t> int_args, Op* op) {
  const auto int_arg = [&](std::size_t i) -> double {
    return i < int_args.size() && int_args[i] > 0 ? static_cast<double>(int_args[i]) : -1;
  };
  const double rows = op->grid.x;
  double bytes = 0;
  switch (c.family) {
    case KernelFamily::kNone:
      return false;
    case KernelFamily::kElementwise:
    case KernelFamily::kElementwiseUnrolled:
    case KernelFamily::kElementwiseStrided:
    case KernelFamily::kElementwiseIndexed: {
      const double n = int_arg(0);  // (int N, ...)
      if (n < 0) return false;
      bytes = n * c.bytes_per_element;
      break;
    }
    case KernelFamily::kReduction:
      // The launch does not say how many inputs each thread loops over: at least one vector
      // load per thread (a guess that undercounts long reductions).
      bytes = ThreadCount(*op) * c.elements_per_thread * c.element_size;
      break;
    case KernelFamily::kNormForward: {
      const double n = int_arg(0);  // (N, eps, X, ...); one block per row
      if (n < 0) return false;
      const double tensors = c.reads_only ? 1 : 2;
      bytes = rows * n * tensors * c.element_size + 2 * rows * c.accumulator_size +
              (c.reads_only ? 0 : 2 * n * c.element_size);
      break;
    }
    case KernelFamily::kNormBackward: {
      double m = rows, n = int_arg(0);  // grad input: (..., int N), one block per row
      if (c.depth == 2) m = int_arg(0), n = int_arg(1);  // gamma/beta: (M, N, ...)
      if (m < 0 || n < 0) return false;
      bytes =
          m * n * c.depth * c.element_size + 2 * m * c.accumulator_size + 2 * n * c.element_size;
      break;
    }
    case KernelFamily::kSoftmax: {
      // cunn: (out, in, classes), one block per row; warp: (out, in, batch, stride, count)
      const double batch = c.warp_softmax ? int_arg(0) : rows;
      const double classes = c.warp_softmax ? int_arg(2) : int_arg(0);
      if (batch < 0 || classes < 0) return false;
      bytes = batch * classes * c.bytes_per_element;
      break;
    }
    case KernelFamily::kMultiTensor: {
      // Each block is one chunk of one tensor; a norm reads each list, an update reads every
      // list and writes all but the gradient's (depth 1: in place, read and written).
      const double accesses = c.reads_only ? c.depth : c.depth == 1 ? 2 : 2 * c.depth - 1;
      bytes = static_cast<double>(op->grid.x) * kMultiTensorChunk * accesses * c.element_size;
      break;
    }
    case KernelFamily::kAttention: {
      AttentionShape& at = op->attention;
      at.batch = op->grid.y;
      at.heads = op->grid.z;
      // The grid tiles the queries (forward) or the keys (backward); self-attention assumed:
      // the parameter struct that holds both lengths is not read.
      at.seq_q = at.seq_kv =
          static_cast<std::int64_t>(op->grid.x) * (c.backward ? c.block_n : c.block_m);
      at.head_dim = c.head_dim;
      at.causal = c.causal;
      at.backward = c.backward;
      at.dtype = c.dtype;
      at.kernel = AttentionKernel::kFlash2;  // PyTorch's flash kernels are FlashAttention-2's
      return true;
    }
    case KernelFamily::kAttentionAux: {
      const double positions = static_cast<double>(op->grid.x) * c.block_m * op->grid.y *
                               op->grid.z;  // batch x heads x queries
      if (c.backward) {                     // dQ: read the fp32 accumulator, write dQ
        bytes = positions * c.head_dim * (4 + c.element_size);
      } else {  // read dO and O, write the row sums (and clear the dQ accumulator)
        bytes =
            positions * (c.head_dim * (2.0 * c.element_size + (c.clears_accumulator ? 4 : 0)) + 4);
      }
      break;
    }
    case KernelFamily::kCat:
      // Grid-stride copies: one element per thread read and written (a guess).
      bytes = ThreadCount(*op) * 2 * c.element_size;
      break;
  }
  if (!(bytes > 0) || !std::isfinite(bytes) || bytes > 1e18) return false;
  op->bytes = static_cast<std::uint64_t>(bytes);
  return true;
}

const KernelClass& KernelClassCache::Get(NameId name, const NameTable& names) {
  if (name >= classes_.size()) classes_.resize(static_cast<std::size_t>(name) + 1);
  std::optional<KernelClass>& c = classes_[name];
  if (!c) c = ClassifyKernel(names.Name(name));
  return *c;
}

std::optional<SimTime> PytorchKernelProvider::Duration(const Op& op, const NameTable& names) const {
  if (op.kind != OpKind::kKernel || op.gemm.m > 0) return std::nullopt;
  const KernelClass& c = cache_.Get(op.name, names);
  if (c.family == KernelFamily::kNone) return std::nullopt;
  double seconds = 0;
  if (c.family == KernelFamily::kAttention) {
    if (op.attention.batch <= 0) return std::nullopt;
    seconds = AttentionSeconds(op.attention, gpu_);
  } else {
    if (op.bytes == 0) return std::nullopt;
    // A streaming kernel's own duration is its transfer; the floor (the shortest kernels'
    // duration, kernels.md §3.6) bounds it from below rather than adding to it, because a
    // queued launch's set-up overlaps the kernel before it.
    seconds = std::max(kKernelFloorSeconds, static_cast<double>(op.bytes) /
                                                (gpu_.hbm_bandwidth * FamilyEfficiency(c.family) *
                                                 gpu_.hbm_efficiency / kH100HbmEfficiency));
  }
  if (!std::isfinite(seconds)) return std::nullopt;
  return SecondsToSim(seconds);
}

}  // namespace myriad::emulator::timing
