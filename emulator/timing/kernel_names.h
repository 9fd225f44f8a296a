// Kernel names: demangling, what a name says about its kernel (PyTorch's family, data types,
// which parameters a launch reports), and the family a report groups it under. Every duration
// provider, the live server and the report take kernel names from here
// (docs/kernel-timing.md, "Kernel names and families").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "myriad/emulator/op.h"

namespace myriad::emulator::timing {

// What a kernel does, coarsely, for every kernel of any origin: the rows of the report's
// "kernel time by family" table and of docs/validation.md's error tables. Set from the name
// (KernelClass::group) and, for ops whose work a library call described, from the op
// (GroupOf).
enum class KernelGroup : std::uint8_t {
  kGemm,           // cuBLAS/cuBLASLt/CUTLASS matrix multiplies, Inductor's mm templates
  kConvolution,    // cuDNN's convolutions (fprop, dgrad, wgrad)
  kAttention,      // flash/fused attention, flex attention
  kElementwise,    // pointwise kernels (PyTorch's, Inductor's triton_poi_)
  kReduction,      // reductions (reduce_kernel, Inductor's triton_red_/triton_per_, norms of
                   // tensor lists)
  kNormalization,  // layer, RMS and batch norms
  kSoftmax,        // softmax and log-softmax
  kOptimizer,      // fused and foreach optimizer steps (multi_tensor_apply)
  kCopy,           // copies done by kernels: cat, transposes, gathers
  kCommunication,  // NCCL's kernels (in traces; live collectives are timed by the network)
  kMemcpy,         // copies by the copy engines
  kMemset,
  kOther,  // anything else (a program's own kernels)
};
inline constexpr int kKernelGroups = static_cast<int>(KernelGroup::kOther) + 1;
std::string_view ToString(KernelGroup group);

// PyTorch's kernel families (timing/pytorch_kernels.h), each with its own rule for the bytes it
// moves and its own efficiency.
enum class KernelFamily : std::uint8_t {
  kNone,                 // not one of PyTorch's kernels that a rule covers
  kElementwise,          // vectorized_elementwise_kernel: contiguous, vector loads
  kElementwiseUnrolled,  // unrolled_elementwise_kernel: contiguous, casting loads
  kElementwiseStrided,   // elementwise_kernel: strided (TensorIterator offsets)
  kElementwiseIndexed,   // elementwise_kernel_with_index (arange): writes only
  kReduction,            // reduce_kernel
  kNormForward,          // layer norm forward, row moments
  kNormBackward,         // layer norm input and weight gradients
  kSoftmax,              // cunn_SoftMax{Forward,Backward}, softmax_warp_{forward,backward}
  kMultiTensor,          // multi_tensor_apply_kernel (foreach and fused optimizers, norms)
  kAttention,            // pytorch_flash forward and backward main kernels
  kAttentionAux,         // flash backward's pre- and post-processing (memory-bound)
  kCat,                  // CatArrayBatchedCopy
};
std::string_view ToString(KernelFamily family);

// What a kernel's name tells, parsed once per name.
struct KernelClass {
  KernelFamily family = KernelFamily::kNone;
  KernelGroup group = KernelGroup::kOther;
  int operands = 0;                // elementwise: tensors read or written (std::array<char*, K>)
  int bytes_per_element = 0;       // summed over the operands
  int element_size = 0;            // the kernel's (first) data type
  double array_element_bytes = 0;  // any kernel: its pointer parameters' element sizes, summed
  int accumulator_size = 0;        // norms: T_ACC
  int elements_per_turn = 1;       // reductions: elements a thread loads before using any
  int output_vec_size = 1;         // reductions: outputs a thread holds (> 1: x spans outputs)
  int depth = 0;                   // multi-tensor: tensor lists
  bool reads_only = false;         // multi-tensor norms, row moments
  bool backward = false;           // softmax, attention
  bool warp_softmax = false;       // softmax_warp_*: int args are (batch, stride, elements)
  int block_m = 0, block_n = 0;    // flash attention tiles
  int head_dim = 0;
  bool causal = false;
  bool clears_accumulator = false;  // flash_bwd_dot_do_o_kernel<true, ...>
  DataType dtype = DataType::kBfloat16;
  // Any kernel: the positions in its parameter list of the integer and pointer parameters
  // whose values a launch reports (WireOp::int_args, pointer_bytes; found as the CUDA shim
  // finds them, protocol/kernel_signature.h), for the count from its code.
  std::vector<int> int_positions, pointer_positions;
};

// A kernel's name demangled (`_ZN...` through abi::__cxa_demangle), or as given.
std::string DemangleKernelName(std::string_view name);

// Classifies a kernel name, mangled (`_ZN2at6native...`) or demangled.
KernelClass ClassifyKernel(std::string_view name);

// A kernel's group from its name alone (KernelClass::group holds it once classified).
KernelGroup GroupOfName(std::string_view demangled, KernelFamily family);

// The group an op is reported under: copies and memsets by kind, a GEMM or attention call by
// the work its library call described, a kernel by its name.
KernelGroup GroupOf(const Op& op, const KernelClass& kernel);

// Whether a GEMM kernel's name says it multiplies FP32 operands on TF32 tensor cores (cuBLAS's
// and CUTLASS's "tf32" and "tensorop" kernels, e.g. cutlass_80_tensorop_s1688gemm) rather than
// on the CUDA cores ("sgemm"): the math mode a trace does not record otherwise.
bool NamesTf32TensorCores(std::string_view name);

// The sizes of the element types a kernel's pointer parameters point to, summed, from its
// demangled name ("f(float*, __nv_bfloat16 const*, int)": 6); 0 when it takes no pointers.
// Worked out once per kernel name (KernelClass::array_element_bytes).
double ArrayElementBytes(std::string_view demangled);

// Names interned once, classified once: the live server's and the provider's cache.
class KernelClassCache {
 public:
  const KernelClass& Get(NameId name, const NameTable& names);

 private:
  std::vector<std::optional<KernelClass>> classes_;
};

}  // namespace myriad::emulator::timing
