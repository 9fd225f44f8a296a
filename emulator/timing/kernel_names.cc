// Kernel names (docs/kernel-timing.md, "Kernel names and families"): what a kernel's name
// says, for every provider and for the report.
#include "timing/kernel_names.h"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <memory>

#include "protocol/kernel_signature.h"

namespace myriad::emulator::timing {

std::string DemangleKernelName(std::string_view name) {
  if (name.substr(0, 2) != "_Z") return std::string(name);
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(std::string(name).c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

namespace {

void LowerCase(std::string* s) {
  std::transform(s->begin(), s->end(), s->begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
}

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

// K of "std::array<char*, Kul>" in the template arguments (PyTorch before 2.1 named it
// "at::detail::Array<char*, K>"); 0 if absent.
int ArrayOperands(const std::vector<std::string_view>& args) {
  for (std::string_view a : args) {
    if ((a.substr(0, 11) == "std::array<" || a.substr(0, 18) == "at::detail::Array<") &&
        a.find("char*") != std::string_view::npos) {
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
    // The strided path names no operand count: assumed a binary op (two reads, one write),
    // except a copy (direct_copy_kernel_cuda: one read, one write).
    const bool copy = arg(2).find("direct_copy_kernel") != std::string_view::npos;
    c.operands = copy ? 2 : 3;
    c.bytes_per_element = c.operands * FirstSize(arg(2));
    return family(KernelFamily::kElementwiseStrided);
  }
  if (base == "elementwise_kernel_with_index") {
    c.operands = 1;
    c.bytes_per_element = FirstSize(arg(1));
    return family(KernelFamily::kElementwiseIndexed);
  }
  if (base == "reduce_kernel") {
    // reduce_kernel<nt, output_vec_size, ReduceOp<scalar_t, ops_t, index_t, out_scalar_t,
    // vt0, input_vec_size>> (before PyTorch 1.13 ReduceOp had no input_vec_size)
    const std::vector<std::string_view> r = ClassArgs(arg(2));
    if (r.size() < 5) return c;
    // A thread's turn (the loads it issues before using any, read from libtorch_cuda's sm_80
    // SASS of the float sum): the vectorized-input loop loads one vector of input_vec_size a
    // trip, not unrolled; the other path loads vt0 vectors of output_vec_size, then reduces
    // them. The two paths are exclusive and the launch does not say which ran: the wider turn
    // (they agree whenever input_vec_size is vt0 and output_vec_size 1, the usual case).
    c.element_size = FirstSize(r[0]);
    const int vt0 = std::max(1, ParseInt(r[4]));
    const int input_vec_size = r.size() >= 6 ? std::max(1, ParseInt(r[5])) : vt0;
    const int output_vec_size = std::max(1, ParseInt(arg(1)));
    c.elements_per_turn = std::max(input_vec_size, vt0 * output_vec_size);
    c.output_vec_size = output_vec_size;
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

// Bytes of the element a pointer parameter points to ("float const*", "__nv_bfloat16*"); 0
// for a parameter that is not a pointer. Unknown element types (structs) count 4.
double PointeeSize(std::string_view type) {
  const std::size_t star = type.rfind('*');
  if (star == std::string_view::npos) return 0;
  std::string t(type.substr(0, star));
  for (const char* qualifier : {"const", "volatile", "__restrict__", "__restrict"}) {
    for (std::size_t at; (at = t.find(qualifier)) != std::string::npos;)
      t.erase(at, std::string_view(qualifier).size());
  }
  t.erase(std::remove(t.begin(), t.end(), ' '), t.end());
  if (t.find('*') != std::string::npos) return 8;  // a pointer to pointers: the pointers
  struct Known {
    std::string_view name;
    double size;
  };
  static constexpr Known kKnown[] = {{"double", 8},         {"float", 4},
                                     {"float2", 8},         {"float4", 16},
                                     {"double2", 16},       {"int", 4},
                                     {"unsignedint", 4},    {"unsigned", 4},
                                     {"int4", 16},          {"int2", 8},
                                     {"long", 8},           {"unsignedlong", 8},
                                     {"longlong", 8},       {"unsignedlonglong", 8},
                                     {"short", 2},          {"unsignedshort", 2},
                                     {"__half", 2},         {"half", 2},
                                     {"__nv_bfloat16", 2},  {"__half2", 4},
                                     {"__nv_bfloat162", 4}, {"c10::Half", 2},
                                     {"c10::BFloat16", 2},  {"char", 1},
                                     {"signedchar", 1},     {"unsignedchar", 1},
                                     {"bool", 1},           {"__nv_fp8_e4m3", 1},
                                     {"__nv_fp8_e5m2", 1},  {"int8_t", 1},
                                     {"uint8_t", 1},        {"int64_t", 8},
                                     {"int32_t", 4},        {"uint32_t", 4},
                                     {"size_t", 8},         {"void", 4}};
  for (const Known& k : kKnown)
    if (t == k.name) return k.size;
  return 4;
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

double ArrayElementBytes(std::string_view demangled) {
  double element_bytes = 0;
  wire::ForEachParameter(demangled,
                         [&](std::string_view type) { element_bytes += PointeeSize(type); });
  return element_bytes;
}

std::string_view ToString(KernelGroup group) {
  switch (group) {
    case KernelGroup::kGemm:
      return "gemm";
    case KernelGroup::kConvolution:
      return "convolution";
    case KernelGroup::kAttention:
      return "attention";
    case KernelGroup::kElementwise:
      return "elementwise";
    case KernelGroup::kReduction:
      return "reduction";
    case KernelGroup::kNormalization:
      return "normalization";
    case KernelGroup::kSoftmax:
      return "softmax";
    case KernelGroup::kOptimizer:
      return "optimizer";
    case KernelGroup::kCopy:
      return "copy kernel";
    case KernelGroup::kCommunication:
      return "nccl kernel";
    case KernelGroup::kMemcpy:
      return "memcpy";
    case KernelGroup::kMemset:
      return "memset";
    case KernelGroup::kOther:
      break;
  }
  return "other";
}

KernelGroup GroupOfName(std::string_view demangled, KernelFamily family) {
  switch (family) {
    case KernelFamily::kElementwise:
    case KernelFamily::kElementwiseUnrolled:
    case KernelFamily::kElementwiseStrided:
    case KernelFamily::kElementwiseIndexed:
      return KernelGroup::kElementwise;
    case KernelFamily::kReduction:
      return KernelGroup::kReduction;
    case KernelFamily::kNormForward:
    case KernelFamily::kNormBackward:
      return KernelGroup::kNormalization;
    case KernelFamily::kSoftmax:
      return KernelGroup::kSoftmax;
    case KernelFamily::kAttention:
    case KernelFamily::kAttentionAux:
      return KernelGroup::kAttention;
    case KernelFamily::kCat:
      return KernelGroup::kCopy;
    case KernelFamily::kMultiTensor:
      // A norm over tensor lists (gradient clipping) reads and sums; the rest are updates.
      return demangled.find("Norm") != std::string_view::npos ? KernelGroup::kReduction
                                                              : KernelGroup::kOptimizer;
    case KernelFamily::kNone:
      break;
  }
  // The function's own name, lower-cased: "void cudnn::bn_fw_tr_1C11_kernel_NCHW<...>(...)"
  // is looked at as "cudnn::bn_fw_tr_1c11_kernel_nchw" (template and call arguments name
  // types, which say nothing of what the kernel does).
  std::string name(demangled);
  for (std::size_t at; (at = name.find("(anonymous namespace)::")) != std::string::npos;)
    name.erase(at, 23);
  name.erase(std::min(name.size(), name.find_first_of("<(")));
  if (const std::size_t space = name.rfind(' '); space != std::string::npos)
    name.erase(0, space + 1);
  LowerCase(&name);
  const auto has = [&](std::initializer_list<std::string_view> words) {
    for (std::string_view w : words)
      if (name.find(w) != std::string::npos) return true;
    return false;
  };
  // Ordered: a batch norm from cuDNN is a norm, not a convolution; an implicit-GEMM
  // convolution is a convolution, not a GEMM; a GEMM's split-K reduction is the GEMM's.
  if (name.substr(0, 4) == "nccl") return KernelGroup::kCommunication;
  if (has({"softmax", "cross_entropy"})) return KernelGroup::kSoftmax;
  if (has({"flash", "fmha", "attention", "attn"})) return KernelGroup::kAttention;
  if (has({"layer_norm", "layernorm", "rms_norm", "rmsnorm", "batch_norm", "batchnorm",
           "group_norm", "gammabeta", "bn_fw", "bn_bw"}))
    return KernelGroup::kNormalization;
  if (has({"scudnn", "conv", "fprop", "dgrad", "wgrad", "winograd", "fft2d", "fft_"}))
    return KernelGroup::kConvolution;
  if (has({"gemm", "gemv", "cutlass", "matmul", "splitkreduce", "triton_tem_fused_mm",
           "triton_tem_fused_bmm", "triton_tem_fused_addmm"}))
    return KernelGroup::kGemm;
  if (has({"adam", "sgd", "lamb", "optimizer"})) return KernelGroup::kOptimizer;
  if (has({"reduce", "triton_red_", "triton_per_", "pool", "scan"})) return KernelGroup::kReduction;
  if (has({"elementwise", "triton_poi_", "dropout", "gelu", "silu", "swiglu", "relu"}))
    return KernelGroup::kElementwise;
  if (has({"cat", "copy", "transpose", "permute", "gather", "scatter", "index", "embedding",
           "nchwtonhwc", "nhwctonchw"}))
    return KernelGroup::kCopy;
  return KernelGroup::kOther;
}

bool NamesTf32TensorCores(std::string_view name) {
  std::string lower(name.substr(0, std::min<std::size_t>(name.size(), 512)));
  LowerCase(&lower);
  return lower.find("tf32") != std::string::npos || lower.find("tensorop") != std::string::npos;
}

KernelGroup GroupOf(const Op& op, const KernelClass& kernel) {
  if (op.kind == OpKind::kMemcpy) return KernelGroup::kMemcpy;
  if (op.kind == OpKind::kMemset) return KernelGroup::kMemset;
  if (op.gemm.m > 0) return KernelGroup::kGemm;
  if (op.attention.batch > 0) return KernelGroup::kAttention;
  return kernel.group;
}

KernelClass ClassifyKernel(std::string_view name) {
  const std::string demangled = DemangleKernelName(name);
  KernelClass c = Classify(demangled);
  c.group = GroupOfName(demangled, c.family);
  c.array_element_bytes = ArrayElementBytes(demangled);  // for the launch guess
  const wire::IntegerParameters ints = wire::FindIntegerParameters(demangled);
  const wire::PointerParameters pointers = wire::FindPointerParameters(demangled);
  c.int_positions.assign(ints.index, ints.index + ints.count);
  c.pointer_positions.assign(pointers.index, pointers.index + pointers.count);
  return c;
}

const KernelClass& KernelClassCache::Get(NameId name, const NameTable& names) {
  if (name >= classes_.size()) classes_.resize(static_cast<std::size_t>(name) + 1);
  std::optional<KernelClass>& c = classes_[name];
  if (!c) c = ClassifyKernel(names.Name(name));
  return *c;
}

}  // namespace myriad::emulator::timing
