// PyTorch's eager kernels, by name (eager_kernels.h). The names are those PyTorch 2.15's CUDA
// build (the PyPI wheel) launched for torchtitan 0.3.0's Llama 3 8B under `myriad run`,
// demangled; GeLU's, which that run does not launch, are written in the same form from
// ActivationGeluKernel.cu (their lambdas' numbering does not change how they are timed).
#include "workload/eager_kernels.h"

namespace myriad::emulator::workload {

std::string_view EagerKernelName(EagerKernel kernel) {
  switch (kernel) {
    case EagerKernel::kNormForward:
      return "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, "
             "float, true>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, "
             "c10::BFloat16 const*, float*, float*, c10::BFloat16*)";
    case EagerKernel::kNormBackwardInput:
      return "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<"
             "c10::BFloat16, float, true>(c10::BFloat16 const*, c10::BFloat16 const*, float "
             "const*, float const*, c10::BFloat16 const*, c10::BFloat16*, int)";
    case EagerKernel::kNormBackwardWeight:
      return "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernelTemplate<"
             "c10::BFloat16, float, 32u, 32u, 256u, false, true, true>(long, long, c10::BFloat16 "
             "const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16*, "
             "c10::BFloat16*)";
    case EagerKernel::kAdd:
      return "void at::native::vectorized_elementwise_kernel<8, "
             "at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>, false>(int, "
             "at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)";
    case EagerKernel::kMul:
      return "void at::native::vectorized_elementwise_kernel<8, "
             "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
             "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>, "
             "false>(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
             "c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, "
             "3ul>)";
    case EagerKernel::kSilu:
      return "void at::native::vectorized_elementwise_kernel<8, at::native::(anonymous "
             "namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() "
             "const::{lambda()#6}::operator()() const::{lambda(c10::BFloat16)#1}, "
             "std::array<char*, 2ul>, false>(int, at::native::(anonymous "
             "namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() "
             "const::{lambda()#6}::operator()() const::{lambda(c10::BFloat16)#1}, "
             "std::array<char*, 2ul>)";
    case EagerKernel::kSiluBackward:
      return "void at::native::vectorized_elementwise_kernel<8, at::native::(anonymous "
             "namespace)::silu_backward_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()"
             "() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, "
             "c10::BFloat16)#1}, std::array<char*, 3ul>, false>(int, at::native::(anonymous "
             "namespace)::silu_backward_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()"
             "() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, "
             "c10::BFloat16)#1}, std::array<char*, 3ul>)";
    case EagerKernel::kGelu:
      return "void at::native::vectorized_elementwise_kernel<8, "
             "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
             "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() "
             "const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>, false>(int, "
             "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
             "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() "
             "const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)";
    case EagerKernel::kGeluBackward:
      return "void at::native::vectorized_elementwise_kernel<8, "
             "at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, "
             "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() "
             "const::{lambda(c10::BFloat16, c10::BFloat16)#1}, std::array<char*, 3ul>, "
             "false>(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, "
             "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() "
             "const::{lambda(c10::BFloat16, c10::BFloat16)#1}, std::array<char*, 3ul>)";
    case EagerKernel::kStridedCopy:
      return "void at::native::elementwise_kernel<128, 4, "
             "at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::"
             "TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() "
             "const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, "
             "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::"
             "operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1} "
             "const&)::{lambda(int)#1}>(int, "
             "at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::"
             "TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() "
             "const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, "
             "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::"
             "operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1} "
             "const&)::{lambda(int)#1})";
    case EagerKernel::kToFloat:
      return "void at::native::vectorized_elementwise_kernel<4, "
             "at::native::converting_copy_kernel_cuda<c10::BFloat16, "
             "float>(at::TensorIteratorBase&)::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>, "
             "false>(int, at::native::converting_copy_kernel_cuda<c10::BFloat16, "
             "float>(at::TensorIteratorBase&)::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)";
    case EagerKernel::kToBfloat16:
      return "void at::native::vectorized_elementwise_kernel<8, "
             "at::native::converting_copy_kernel_cuda<float, "
             "c10::BFloat16>(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul>, "
             "false>(int, at::native::converting_copy_kernel_cuda<float, "
             "c10::BFloat16>(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul>)";
    case EagerKernel::kComplexMul:
      return "void at::native::elementwise_kernel<128, 2, "
             "at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10::complex<float>, "
             "c10::complex<float>, c10::complex<float>, "
             "at::native::binary_internal::MulFunctor<c10::complex<float> > > "
             ">(at::TensorIteratorBase&, at::native::BinaryFunctor<c10::complex<float>, "
             "c10::complex<float>, c10::complex<float>, "
             "at::native::binary_internal::MulFunctor<c10::complex<float> > > const&)::{lambda(int)"
             "#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10::complex<"
             "float>, c10::complex<float>, c10::complex<float>, "
             "at::native::binary_internal::MulFunctor<c10::complex<float> > > "
             ">(at::TensorIteratorBase&, at::native::BinaryFunctor<c10::complex<float>, "
             "c10::complex<float>, c10::complex<float>, "
             "at::native::binary_internal::MulFunctor<c10::complex<float> > > const&)::{lambda(int)"
             "#1})";
    case EagerKernel::kLogSoftmaxForward:
      return "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
             "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, "
             "int)";
    case EagerKernel::kLogSoftmaxBackward:
      return "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, "
             "float, at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*, float "
             "const*, float const*, long)";
  }
  return "";
}

}  // namespace myriad::emulator::workload
