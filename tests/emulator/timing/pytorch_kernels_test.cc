// PyTorch's kernels: classification by name, work from the launch, and durations against the
// measurements in shared/reference/kernels.md (docs/kernel-timing.md, "PyTorch's kernels").
// Names are those torch 2.15's kernels register (demangled, or mangled as the shim sends them).
#include "timing/pytorch_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "interpose/protocol/kernel_signature.h"
#include "timing/library_model.h"

namespace myriad::emulator::timing {
namespace {

netmodel::GpuSpec Gpu(const char* key) { return netmodel::FindGpu(key).value(); }

constexpr char kCopyToBf16[] =
    "void at::native::vectorized_elementwise_kernel<8, "
    "at::native::converting_copy_kernel_cuda<float, c10::BFloat16>(at::TensorIteratorBase&)::"
    "{lambda(float)#1}, std::array<char*, 2ul>, false>(int, "
    "at::native::converting_copy_kernel_cuda<float, c10::BFloat16>(at::TensorIteratorBase&)::"
    "{lambda(float)#1}, std::array<char*, 2ul>)";
constexpr char kCopyToBf16Mangled[] =
    "_ZN2at6native29vectorized_elementwise_kernelILi8EZNS0_27converting_copy_kernel_cudaIfN3c108"
    "BFloat16EEEvRNS_18TensorIteratorBaseEEUlfE_St5arrayIPcLm2EELb0EEEviT0_T1_";
constexpr char kAddFloat[] =
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul>, false>(int, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul>)";
constexpr char kUnrolledAdd[] =
    "void at::native::unrolled_elementwise_kernel<at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul>, 4, TrivialOffsetCalculator<2, unsigned int>, "
    "TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<2>, "
    "at::native::memory::StoreWithCast<1> >(int, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul>, TrivialOffsetCalculator<2, unsigned int>, "
    "TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<2>, "
    "at::native::memory::StoreWithCast<1>)";
constexpr char kLayerNorm[] =
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float, false>"
    "(int, float, float const*, float const*, float const*, float*, float*, float*)";
constexpr char kGammaBeta[] =
    "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernelTemplate<float, float, "
    "32u, 32u, 256u, false, true, false>(long, long, float const*, float const*, float const*, "
    "float const*, float*, float*)";
constexpr char kLayerNormGradInput[] =
    "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<float, "
    "float, false>(float const*, float const*, float const*, float const*, float const*, "
    "float*, int)";
constexpr char kSoftmaxForward[] =
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, "
    "c10::BFloat16, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>"
    "(c10::BFloat16*, c10::BFloat16 const*, int)";
constexpr char kFlashForward[] =
    "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
    "cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, "
    "true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)";
constexpr char kFlashBackward[] =
    "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<64, "
    "128, 128, 8, 4, 4, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, "
    "8, cutlass::bfloat16_t> >, false, true, false, false, true, true, false>"
    "(pytorch_flash::Flash_bwd_params)";
constexpr char kFusedAdam[] =
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
    "namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::"
    "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float const*, double, "
    "double, double, double, double, bool, float const*, float const*>(at::native::(anonymous "
    "namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::"
    "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float const*, double, "
    "double, double, double, double, bool, float const*, float const*)";
constexpr char kReduceSum[] =
    "void at::native::reduce_kernel<128, 4, at::native::ReduceOp<c10::BFloat16, "
    "at::native::func_wrapper_t<c10::BFloat16, at::native::sum_functor<c10::BFloat16, float, "
    "c10::BFloat16>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, "
    "c10::BFloat16, 4, 8> >(at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<"
    "c10::BFloat16, at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()("
    "at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, c10::BFloat16, 4, 8>)";

Op Kernel(Dim3 grid, Dim3 block) {
  Op op;
  op.kind = OpKind::kKernel;
  op.grid = grid;
  op.block = block;
  return op;
}

std::uint64_t Bytes(const char* name, Dim3 grid, Dim3 block, std::vector<std::int64_t> args) {
  Op op = Kernel(grid, block);
  EXPECT_TRUE(DescribeKernelWork(ClassifyKernel(name), args, &op)) << name;
  return op.bytes;
}

// The model's duration of `name` with the given work, on `gpu`.
double Seconds(const char* name, const Op& work, const char* gpu) {
  NameTable names;
  Op op = work;
  op.name = names.Intern(name);
  const std::optional<SimTime> t = PytorchKernelProvider(Gpu(gpu)).Duration(op, names);
  EXPECT_TRUE(t.has_value()) << name;
  return t ? static_cast<double>(*t) / kPicosPerSecond : 0;
}

TEST(KernelSignatureTest, FindsTheIntegerParameters) {
  wire::IntegerParameters p = wire::FindIntegerParameters(kGammaBeta);
  ASSERT_EQ(p.count, 2);
  EXPECT_EQ(p.index[0], 0);
  EXPECT_EQ(p.index[1], 1);
  EXPECT_EQ(p.size[0], 8);
  EXPECT_TRUE(p.is_signed[0]);
  p = wire::FindIntegerParameters(kLayerNormGradInput);
  ASSERT_EQ(p.count, 1);
  EXPECT_EQ(p.index[0], 6);  // the last of seven
  EXPECT_EQ(p.size[0], 4);
  // Commas inside template arguments and lambdas do not split parameters.
  p = wire::FindIntegerParameters(kUnrolledAdd);
  ASSERT_EQ(p.count, 1);
  EXPECT_EQ(p.index[0], 0);
  EXPECT_EQ(wire::FindIntegerParameters(kFlashForward).count, 0);
  EXPECT_EQ(wire::FindIntegerParameters("busy_kernel").count, 0);  // extern "C": no list
  EXPECT_EQ(wire::FindIntegerParameters("void k(unsigned long, char*, bool)").size[0], 8);
  EXPECT_EQ(wire::FindIntegerParameters("void k(unsigned long, char*, bool)").count, 2);
}

// PyTorch before 2.1 (the traces of ../shared/traces): at::detail::Array for the operands, a
// ReduceOp of five template arguments; a reduction's input count, where a trace's shapes give
// it, is read once.
TEST(PytorchKernelsTest, OlderPyTorchNamesAndAReductionsKnownInput) {
  const char* neg =
      "void at::native::vectorized_elementwise_kernel<4, at::native::neg_kernel_cuda(at::"
      "TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#7}::operator()() const::"
      "{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::neg_kernel_cuda(at::"
      "TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#7}::operator()() const::"
      "{lambda(float)#1}, at::detail::Array<char*, 2>)";
  const KernelClass n = ClassifyKernel(neg);
  EXPECT_EQ(n.family, KernelFamily::kElementwise);
  EXPECT_EQ(n.operands, 2);
  EXPECT_EQ(Bytes(neg, {4, 1, 1}, {128, 1, 1}, {4096}), 4096u * 8);
  const char* sum =
      "void at::native::reduce_kernel<128, 4, at::native::ReduceOp<float, at::native::"
      "func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::"
      "TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::"
      "ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, "
      "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, "
      "4>)";
  const KernelClass r = ClassifyKernel(sum);
  ASSERT_EQ(r.family, KernelFamily::kReduction);
  EXPECT_EQ(r.elements_per_turn, 16);  // vt0 vectors of output_vec_size
  EXPECT_EQ(Bytes(sum, {8, 1, 1}, {32, 4, 1}, {}), 8u * 128 * 16 * 4);  // a turn per thread
  EXPECT_EQ(Bytes(sum, {8, 1, 1}, {32, 4, 1}, {1024 * 100}), 1024u * 100 * 4);
}

TEST(PytorchKernelsTest, ClassifiesByNameMangledOrNot) {
  EXPECT_EQ(ClassifyKernel(kCopyToBf16).family, KernelFamily::kElementwise);
  const KernelClass mangled = ClassifyKernel(kCopyToBf16Mangled);
  EXPECT_EQ(mangled.family, KernelFamily::kElementwise);
  EXPECT_EQ(mangled.operands, 2);
  EXPECT_EQ(mangled.bytes_per_element, 4 + 2);  // reads float, writes bfloat16
  EXPECT_EQ(ClassifyKernel(kAddFloat).bytes_per_element, 12);
  EXPECT_EQ(ClassifyKernel(kUnrolledAdd).family, KernelFamily::kElementwiseUnrolled);
  EXPECT_EQ(ClassifyKernel(kUnrolledAdd).bytes_per_element, 12);  // not the unsigned ints
  EXPECT_EQ(ClassifyKernel(kLayerNorm).family, KernelFamily::kNormForward);
  EXPECT_EQ(ClassifyKernel(kGammaBeta).family, KernelFamily::kNormBackward);
  EXPECT_EQ(ClassifyKernel(kSoftmaxForward).family, KernelFamily::kSoftmax);
  EXPECT_EQ(ClassifyKernel(kFusedAdam).family, KernelFamily::kMultiTensor);
  EXPECT_EQ(ClassifyKernel(kFusedAdam).depth, 4);
  const KernelClass foreach_divide = ClassifyKernel(
      "_ZN2at6native54_GLOBAL__N__8e11a5fb_21_ForeachPointwiseOp_cu_ef478fac25multi_tensor_apply_"
      "kernelINS1_28TensorListScalarListMetadataIfLi3EEENS1_28PointwiseOpScalarListFunctorIfLi3ELi3"
      "ELi0EEEJSt7dividesIfEEEEvT_T0_DpT1_");
  EXPECT_EQ(foreach_divide.family, KernelFamily::kMultiTensor);
  EXPECT_EQ(foreach_divide.depth, 3);  // TensorListScalarListMetadata<float, 3>
  EXPECT_EQ(foreach_divide.element_size, 4);
  EXPECT_EQ(ClassifyKernel(kReduceSum).family, KernelFamily::kReduction);
  EXPECT_EQ(ClassifyKernel(kReduceSum).elements_per_turn, 16);
  const KernelClass flash = ClassifyKernel(kFlashForward);
  EXPECT_EQ(flash.family, KernelFamily::kAttention);
  EXPECT_EQ(flash.head_dim, 64);
  EXPECT_EQ(flash.block_m, 128);
  EXPECT_TRUE(flash.causal);
  EXPECT_FALSE(flash.backward);
  EXPECT_TRUE(ClassifyKernel(kFlashBackward).backward);
  // Kernels no rule covers, and names that are not C++ at all.
  EXPECT_EQ(ClassifyKernel("void at::native::vectorized_gather_kernel<16, long>(char*, char*, "
                           "long*, int, long, long, long, long, bool)")
                .family,
            KernelFamily::kNone);
  EXPECT_EQ(ClassifyKernel("_Z4busyPf").family, KernelFamily::kNone);
  EXPECT_EQ(ClassifyKernel("triton_poi_fused_add_0").family, KernelFamily::kNone);
  EXPECT_EQ(ClassifyKernel("").family, KernelFamily::kNone);
  EXPECT_EQ(ClassifyKernel("void f<(>(").family, KernelFamily::kNone);
}

TEST(PytorchKernelsTest, WorkFromTheLaunch) {
  // Elementwise: (int N, ...) elements, each read and written at its operands' sizes.
  EXPECT_EQ(Bytes(kCopyToBf16Mangled, {6144}, {128}, {6291456}), 6291456u * 6);
  // Layer norm: one block per row, N from the parameter.
  EXPECT_EQ(Bytes(kLayerNorm, {8192}, {32, 4}, {768}),
            8192u * 768 * 2 * 4 + 2 * 8192 * 4 + 2 * 768 * 4);
  EXPECT_EQ(Bytes(kGammaBeta, {24}, {32, 32}, {8192, 768}),
            8192u * 768 * 2 * 4 + 2 * 8192 * 4 + 2 * 768 * 4);
  // Softmax: rows from the grid, classes from the parameter.
  EXPECT_EQ(Bytes(kSoftmaxForward, {8192}, {1024}, {50304}), 8192u * 50304 * 4);
  // Fused Adam: 65536-element chunks, four lists read, three written.
  EXPECT_EQ(Bytes(kFusedAdam, {10}, {512}, {}), 10u * 65536 * 7 * 4);
  // A rule that needs a parameter the launch did not report leaves the op alone.
  Op op = Kernel({6144}, {128});
  EXPECT_FALSE(DescribeKernelWork(ClassifyKernel(kAddFloat), {}, &op));
  EXPECT_EQ(op.bytes, 0u);
  EXPECT_FALSE(DescribeKernelWork(ClassifyKernel("_Z4busyPf"), std::vector<std::int64_t>{5}, &op));
  // Flash attention: the grid tiles queries by 128, over batch and heads.
  op = Kernel({8, 8, 12}, {128});
  ASSERT_TRUE(DescribeKernelWork(ClassifyKernel(kFlashForward), {}, &op));
  EXPECT_EQ(op.attention.batch, 8);
  EXPECT_EQ(op.attention.heads, 12);
  EXPECT_EQ(op.attention.seq_q, 1024);
  EXPECT_EQ(op.attention.seq_kv, 1024);
  EXPECT_EQ(op.attention.head_dim, 64);
  EXPECT_TRUE(op.attention.causal);
}

// Measured PyTorch kernels on H100 SXM (kernels.md §3.4, medians from TraceLens traces).
TEST(PytorchKernelsTest, ElementwiseKernelsMatchH100Traces) {
  struct Row {
    const char* what;
    const char* name;
    std::uint64_t bytes;
    double measured_us;
  };
  const Row rows[] = {
      {"§3.4 add (vectorized) 2 x [16,559,1024] BF16", kAddFloat, 55'000'000, 17.9},
      {"§3.4 copy_ FP32 -> BF16 [16,559,1024]", kCopyToBf16, 55'000'000, 18.2},
      {"§3.4 mul (vectorized) 2 x [16,559,2816] BF16", kAddFloat, 151'100'000, 51.3},
      {"§3.4 add (timesformer) 2 x [1,25089,768] BF16", kAddFloat, 115'600'000, 38.3},
      {"§3.4 mul by scalar [8,12,3137,3137] BF16", kCopyToBf16, 3'780'000'000, 1291.2},
      {"§3.4 copy_ BF16 -> FP32 (unrolled) [16,559,1024]", kUnrolledAdd, 55'000'000, 29.2},
      {"§3.4 softmax (cunn_SoftMaxForward, row 3137)", kSoftmaxForward, 3'780'000'000, 5707.0},
  };
  for (const Row& row : rows) {
    Op op = Kernel({1}, {1});
    op.bytes = row.bytes;
    const double us = Seconds(row.name, op, "h100-sxm") * 1e6;
    EXPECT_NEAR(us / row.measured_us, 1.0, 0.10) << row.what << ": " << us << " us";
  }
}

TEST(PytorchKernelsTest, SmallGridsWaitOnTheirMemoryRoundTrips) {
  const netmodel::GpuSpec a100 = Gpu("a100-sxm-80gb");
  const double floor = a100.kernel_floor, trip = a100.memory_latency;
  // 627 SM clocks at 1.41 GHz (Accel-Sim's A100 calibration, the L2 leg at its far half's).
  EXPECT_NEAR(trip, (37 + 224 * 1.75 + 198) / 1.41e9, 1e-12);
  // One block of a sum reading 409,600 bytes of BF16: 204,800 elements over 128 threads, 16
  // a turn (vt0 4 loads of output_vec_size 4: x spans outputs, so no block step along it):
  // 100 turns and the store, far longer than the bytes at HBM rate.
  Op sum = Kernel({1}, {128});
  sum.bytes = 409'600;
  EXPECT_NEAR(Seconds(kReduceSum, sum, "a100-sxm-80gb"), floor + 100 * trip, 1e-12);
  // The same split over 16 blocks of the grid's y: 7 turns each, the store, the partial and
  // its fence, the semaphore, and the last block's 16 loads of partials, one thread along y.
  sum.grid = Dim3{1, 16, 1};
  EXPECT_NEAR(Seconds(kReduceSum, sum, "a100-sxm-80gb"), floor + (7 + 1 + 2 + 16 - 1) * trip,
              1e-12);
  // PyTorch's full float sum in one block of 512 (the 80 GB trace's most common reduction):
  // 4,096 elements, 8 a thread in vector loads of 4 (input_vec_size), two trips; then the
  // block's nine halvings on chip (29 + 4 of the round trip's 627 SM clocks each), the store.
  const char* full_sum =
      "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::"
      "func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::"
      "TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4> >(at::native::"
      "ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, "
      "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, "
      "4, 4>)";
  EXPECT_EQ(ClassifyKernel(full_sum).elements_per_turn, 4);
  Op full = Kernel({1}, {512});
  full.bytes = 16'384;
  EXPECT_NEAR(Seconds(full_sum, full, "a100-sxm-80gb"), floor + (2 + 9 * 33.0 / 627) * trip, 1e-12);
  // A grid of two waves (128-thread blocks, 16 resident per SM, 108 SMs) waits twice.
  Op add = Kernel({108 * 16 + 1}, {128});
  add.bytes = 4096;
  EXPECT_NEAR(Seconds(kAddFloat, add, "a100-sxm-80gb"), floor + 3 * trip, 1e-12);
  // Bytes enough to stream for longer than the chain: the bandwidth decides.
  add.bytes = std::uint64_t{1} << 30;
  EXPECT_GT(Seconds(kAddFloat, add, "a100-sxm-80gb"), 1e-4);
}

TEST(PytorchKernelsTest, TheFloorBoundsTinyKernels) {
  Op op = Kernel({1}, {128});
  op.bytes = 512;
  // The floor (kernels.md §3.6: the shortest kernels on H100 take 1.1-2.3 us) and the one
  // round trip an add's loads make before its stores.
  const netmodel::GpuSpec h100 = Gpu("h100-sxm");
  EXPECT_NEAR(Seconds(kAddFloat, op, "h100-sxm"), h100.kernel_floor + h100.memory_latency, 1e-12);
  // Nothing known about the work: the provider does not answer.
  NameTable names;
  op.bytes = 0;
  op.name = names.Intern(kAddFloat);
  EXPECT_FALSE(PytorchKernelProvider(Gpu("h100-sxm")).Duration(op, names).has_value());
  // GPU-relative: the same bytes take longer on A100's 2.04 TB/s.
  op.bytes = 1'000'000'000;
  EXPECT_GT(Seconds(kAddFloat, op, "a100-sxm-80gb"), Seconds(kAddFloat, op, "h100-sxm"));
}

TEST(PytorchKernelsTest, FlashAttentionUsesTheAttentionModel) {
  Op op = Kernel({8, 8, 12}, {128});
  ASSERT_TRUE(DescribeKernelWork(ClassifyKernel(kFlashForward), {}, &op));
  EXPECT_NEAR(Seconds(kFlashForward, op, "h100-sxm"),
              AttentionSeconds(op.attention, Gpu("h100-sxm")), 1e-12);
}

}  // namespace
}  // namespace myriad::emulator::timing
