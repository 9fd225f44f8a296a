// The kernels eager PyTorch launches for a transformer layer's elementwise and normalisation
// ops (docs/workloads.md, "Eager kernels"), named as PyTorch 2.x's CUDA build names them
// (demangled), so that the PyTorch kernel model (timing/pytorch_kernels.cc) times them in
// `myriad simulate` as it times the same kernels under `myriad run`.
#ifndef MYRIAD_EMULATOR_WORKLOAD_EAGER_KERNELS_H_
#define MYRIAD_EMULATOR_WORKLOAD_EAGER_KERNELS_H_

#include <array>
#include <string_view>

namespace myriad::emulator::workload {

enum class EagerKernel {
  kNormForward,         // nn.RMSNorm / LayerNorm forward (BF16 in and out, FP32 statistics)
  kNormBackwardInput,   // its input gradient
  kNormBackwardWeight,  // its weight gradient
  kAdd,                 // BF16 a + b (residual connections, gradient accumulation)
  kMul,                 // BF16 a * b (SwiGLU's gate, and its backward)
  kSilu,                // BF16 silu(x)
  kSiluBackward,        // BF16 silu'(x) * grad
  kGelu,                // BF16 gelu(x)
  kGeluBackward,        // BF16 gelu'(x) * grad
  kStridedCopy,         // BF16 copy of a strided view into a contiguous tensor
  kToFloat,             // BF16 -> FP32 (x.float())
  kToBfloat16,          // FP32 -> BF16 (x.type_as(bf16))
  kComplexMul,          // complex64 product (RoPE as torch.view_as_complex(x) * freqs_cis)
  kLogSoftmaxForward,   // FP32 log-softmax over the vocabulary (cross-entropy)
  kLogSoftmaxBackward,  // and its backward
};

inline constexpr std::array kAllEagerKernels = {
    EagerKernel::kNormForward,
    EagerKernel::kNormBackwardInput,
    EagerKernel::kNormBackwardWeight,
    EagerKernel::kAdd,
    EagerKernel::kMul,
    EagerKernel::kSilu,
    EagerKernel::kSiluBackward,
    EagerKernel::kGelu,
    EagerKernel::kGeluBackward,
    EagerKernel::kStridedCopy,
    EagerKernel::kToFloat,
    EagerKernel::kToBfloat16,
    EagerKernel::kComplexMul,
    EagerKernel::kLogSoftmaxForward,
    EagerKernel::kLogSoftmaxBackward,
};

// The kernel's name as a launch under `myriad run` reports it (demangled).
std::string_view EagerKernelName(EagerKernel kernel);

}  // namespace myriad::emulator::workload

#endif  // MYRIAD_EMULATOR_WORKLOAD_EAGER_KERNELS_H_
