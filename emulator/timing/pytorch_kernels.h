// PyTorch's own CUDA kernels (elementwise, reductions, norms, softmax, fused optimizers, flash
// attention): recognised by their (demangled) names, their work derived from the launch shape
// and integer parameters, timed as memory-bound work or by the attention model. Every rule
// and constant is listed, with its source, in docs/kernel-timing.md ("PyTorch's kernels").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "myriad/emulator/kernel_timing.h"
#include "myriad/emulator/op.h"
#include "myriad/netmodel/hardware.h"

namespace myriad::emulator::timing {

// Kernel families, each with its own rule for the bytes it moves and its own efficiency.
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
  int operands = 0;                // elementwise: tensors read or written (std::array<char*, K>)
  int bytes_per_element = 0;       // summed over the operands
  int element_size = 0;            // the kernel's (first) data type
  double array_element_bytes = 0;  // any kernel: its pointer parameters' element sizes, summed
  int accumulator_size = 0;        // norms: T_ACC
  int elements_per_thread = 1;     // reductions: vt0 x input_vec_size
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

// Fills op->bytes (memory-bound families) or op->attention (kAttention) from the launch shape
// (op->grid, op->block) and the launch's integer parameters; returns false when the rule
// needs a parameter the launch did not report (the op is left alone).
bool DescribeKernelWork(const KernelClass& kernel, std::span<const std::int64_t> int_args, Op* op);

// Fraction of HBM bandwidth a family reaches (docs/kernel-timing.md cites each).
double FamilyEfficiency(KernelFamily family);

// Names interned once, classified once: the live server's and the provider's cache.
class KernelClassCache {
 public:
  const KernelClass& Get(NameId name, const NameTable& names);

 private:
  std::vector<std::optional<KernelClass>> classes_;
};

// Provider "pytorch kernels": kernels of a KernelFamily whose work is known (op.bytes, or
// op.attention for the attention kernels), as that work over the family's share of HBM
// bandwidth plus the kernel floor, or by the attention model.
class PytorchKernelProvider : public DurationProvider {
 public:
  explicit PytorchKernelProvider(const netmodel::GpuSpec& gpu) : gpu_(gpu) {}
  std::string_view name() const override { return "pytorch kernels"; }
  std::optional<SimTime> Duration(const Op& op, const NameTable& names) const override;

 private:
  netmodel::GpuSpec gpu_;
  mutable KernelClassCache cache_;
};

}  // namespace myriad::emulator::timing
