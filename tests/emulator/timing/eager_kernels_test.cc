// The kernels `myriad simulate` emits for eager PyTorch (emulator/workload/eager_kernels.h)
// are classified as the same kernels launched under `myriad run` are, so that PyTorch's kernel
// model times both alike.
#include "workload/eager_kernels.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "timing/kernel_names.h"

namespace myriad::emulator::timing {
namespace {

using workload::EagerKernel;

TEST(EagerKernelsTest, EachNameIsTheFamilyPyTorchsModelTimes) {
  const std::map<EagerKernel, KernelFamily> expected = {
      {EagerKernel::kNormForward, KernelFamily::kNormForward},
      {EagerKernel::kNormBackwardInput, KernelFamily::kNormBackward},
      {EagerKernel::kNormBackwardWeight, KernelFamily::kNormBackward},
      {EagerKernel::kAdd, KernelFamily::kElementwise},
      {EagerKernel::kMul, KernelFamily::kElementwise},
      {EagerKernel::kSilu, KernelFamily::kElementwise},
      {EagerKernel::kSiluBackward, KernelFamily::kElementwise},
      {EagerKernel::kGelu, KernelFamily::kElementwise},
      {EagerKernel::kGeluBackward, KernelFamily::kElementwise},
      {EagerKernel::kStridedCopy, KernelFamily::kElementwiseStrided},
      {EagerKernel::kToFloat, KernelFamily::kElementwise},
      {EagerKernel::kToBfloat16, KernelFamily::kElementwise},
      {EagerKernel::kComplexMul, KernelFamily::kElementwiseStrided},
      {EagerKernel::kLogSoftmaxForward, KernelFamily::kSoftmax},
      {EagerKernel::kLogSoftmaxBackward, KernelFamily::kSoftmax},
  };
  ASSERT_EQ(expected.size(), workload::kAllEagerKernels.size());
  for (EagerKernel kernel : workload::kAllEagerKernels) {
    const std::string name(workload::EagerKernelName(kernel));
    EXPECT_EQ(ClassifyKernel(name).family, expected.at(kernel)) << name;
  }
  EXPECT_EQ(ClassifyKernel(std::string(workload::EagerKernelName(EagerKernel::kNormForward))).group,
            KernelGroup::kNormalization);
}

// A strided copy reads one element and writes one; other strided kernels are taken as binary.
TEST(EagerKernelsTest, AStridedCopyMovesTwoElementsNotThree) {
  const KernelClass copy =
      ClassifyKernel(std::string(workload::EagerKernelName(EagerKernel::kStridedCopy)));
  EXPECT_EQ(copy.operands, 2);
  EXPECT_EQ(copy.bytes_per_element, 2 * 2);  // BF16
  const KernelClass product =
      ClassifyKernel(std::string(workload::EagerKernelName(EagerKernel::kComplexMul)));
  EXPECT_EQ(product.operands, 3);
}

}  // namespace
}  // namespace myriad::emulator::timing
