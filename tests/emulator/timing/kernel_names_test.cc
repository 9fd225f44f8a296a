// Kernel names and the families a report groups them under (emulator/timing/kernel_names.h),
// on names recorded in real PyTorch profiler traces (../shared/traces: HolisticTraceAnalysis's
// test data) and on the names PyTorch, cuDNN, NCCL, Inductor and our own generator launch.
#include "timing/kernel_names.h"

#include <gtest/gtest.h>

#include <string>

namespace myriad::emulator::timing {
namespace {

KernelGroup Group(const std::string& name) { return ClassifyKernel(name).group; }

TEST(KernelNamesTest, DemanglesOnlyMangledNames) {
  EXPECT_EQ(DemangleKernelName("_Z4busyPf"), "busy(float*)");
  EXPECT_EQ(DemangleKernelName("ampere_sgemm_128x64_nn"), "ampere_sgemm_128x64_nn");
  EXPECT_EQ(DemangleKernelName("_Znot a name"), "_Znot a name");
}

TEST(KernelNamesTest, PyTorchFamiliesGiveTheirGroups) {
  EXPECT_EQ(Group("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<"
                  "float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, "
                  "std::array<char*, 3ul>)"),
            KernelGroup::kElementwise);
  EXPECT_EQ(Group("void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonym"
                  "ous namespace)::OpaqueType<4u>, unsigned int, 2, 128, 1>(...)"),
            KernelGroup::kCopy);
  EXPECT_EQ(Group("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, "
                  "float>(int, float, float const*, float const*, float const*, float*, float*, "
                  "float*)"),
            KernelGroup::kNormalization);
}

TEST(KernelNamesTest, LibraryAndCommunicationKernelsByTheirNames) {
  EXPECT_EQ(Group("ampere_sgemm_32x32_sliced1x4_tn"), KernelGroup::kGemm);
  EXPECT_EQ(Group("volta_sgemm_64x64_nt"), KernelGroup::kGemm);
  EXPECT_EQ(Group("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4>("
                  "cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4::Params)"),
            KernelGroup::kGemm);
  EXPECT_EQ(Group("void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, "
                  "false>(cublasSplitKParams<float>, float const*, float const*, float*)"),
            KernelGroup::kGemm);
  // An implicit-GEMM convolution is a convolution; a batch norm from cuDNN is a norm.
  EXPECT_EQ(Group("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_"
                  "tilesize128x128x16"),
            KernelGroup::kConvolution);
  EXPECT_EQ(Group("cudnn_infer_volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1"),
            KernelGroup::kConvolution);
  EXPECT_EQ(Group("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(...)"),
            KernelGroup::kNormalization);
  EXPECT_EQ(Group("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"),
            KernelGroup::kCommunication);
  EXPECT_EQ(Group("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            KernelGroup::kCommunication);
}

TEST(KernelNamesTest, InductorsTritonKernelsByTheirPrefixes) {
  EXPECT_EQ(Group("triton_poi_fused_add_mul_0"), KernelGroup::kElementwise);
  EXPECT_EQ(Group("triton_red_fused_sum_1"), KernelGroup::kReduction);
  EXPECT_EQ(Group("triton_per_fused__log_softmax_2"), KernelGroup::kSoftmax);
  EXPECT_EQ(Group("triton_tem_fused_mm_3"), KernelGroup::kGemm);
  EXPECT_EQ(Group("triton_tem_fused_flex_attention_0"), KernelGroup::kAttention);
  // Old Inductor names say nothing of what the kernel does.
  EXPECT_EQ(Group("triton__0d1d2d3d"), KernelGroup::kOther);
}

TEST(KernelNamesTest, AProgramsOwnKernelIsOther) {
  EXPECT_EQ(Group("_Z9my_kernelPfi"), KernelGroup::kOther);
  EXPECT_EQ(Group("_Z14stochastic_sgdPfPKfjf"), KernelGroup::kOptimizer);  // by its name
  EXPECT_EQ(ToString(KernelGroup::kOther), "other");
}

TEST(KernelNamesTest, OpsDescribedByALibraryCallAreGroupedByTheirWork) {
  Op op;
  op.kind = OpKind::kKernel;
  op.gemm.m = op.gemm.n = op.gemm.k = 128;
  EXPECT_EQ(GroupOf(op, ClassifyKernel("gemm_qkv")), KernelGroup::kGemm);
  Op copy;
  copy.kind = OpKind::kMemcpy;
  EXPECT_EQ(GroupOf(copy, KernelClass{}), KernelGroup::kMemcpy);
  Op set;
  set.kind = OpKind::kMemset;
  EXPECT_EQ(GroupOf(set, KernelClass{}), KernelGroup::kMemset);
}

}  // namespace
}  // namespace myriad::emulator::timing
