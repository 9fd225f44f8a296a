// Kernel timing per op: the providers' costs (docs/kernel-timing.md "Speed", issue 15's
// budget: a profile lookup under 200 ns).
#include <benchmark/benchmark.h>

#include <fstream>
#include <string>

#include "myriad/emulator/kernel_timing.h"
#include "myriad/netmodel/cluster.h"
#include "myriad/netmodel/hardware.h"
#include "timing/library_model.h"
#include "timing/profile_database.h"

namespace {

using namespace myriad::emulator;
namespace netmodel = myriad::netmodel;

netmodel::GpuSpec H100() { return myriad::netmodel::FindGpu("h100-sxm").value(); }

// A database of 64 kernels with 16 shapes each and 256 GEMM shapes.
std::vector<timing::ProfileRow> Rows() {
  std::string text =
      "# myriad-kernel-profile v2\n"
      "gpu\tkernel\tgrid\tblock\tshared_mem\tgemm\tsamples\tmean_us\tmedian_us\t"
      "min_us\tmax_us\tstddev_us\n";
  for (int k = 0; k < 64; ++k)
    for (int s = 1; s <= 16; ++s)
      text += "h100-sxm\tkernel" + std::to_string(k) + "\t" + std::to_string(s * 64) +
              "\t256\t0\t-\t5\t3\t3\t3\t3\t0\n";
  for (int g = 1; g <= 256; ++g)
    text += "h100-sxm\tgemm\t*\t*\t*\t" + std::to_string(g * 128) +
            ",4096,4096,1,bfloat16\t5\t9\t9\t9\t9\t0\n";
  return timing::ParseProfile(text, "bench.kdb").value();
}

void BM_ProfileExactShape(benchmark::State& state) {
  const timing::ProfileProvider provider("profile bench.kdb", Rows(), "h100-sxm");
  NameTable names;
  Op op;
  op.kind = OpKind::kKernel;
  op.name = names.Intern("kernel17");
  op.grid = Dim3{640, 1, 1};
  op.block = Dim3{256, 1, 1};
  for (auto _ : state) benchmark::DoNotOptimize(provider.Duration(op, names));
}
BENCHMARK(BM_ProfileExactShape);

void BM_ProfileGemmExact(benchmark::State& state) {
  const timing::ProfileProvider provider("profile bench.kdb", Rows(), "h100-sxm");
  NameTable names;
  Op op;
  op.kind = OpKind::kKernel;
  op.name = names.Intern("cublas_gemm_bf16bf16bf16_32f_NN");
  op.gemm = GemmShape{4096, 12800, 4096, 1, DataType::kBfloat16};
  for (auto _ : state) benchmark::DoNotOptimize(provider.Duration(op, names));
}
BENCHMARK(BM_ProfileGemmExact);

void BM_ProfileGemmNearest(benchmark::State& state) {
  const timing::ProfileProvider provider("profile bench.kdb", Rows(), "h100-sxm");
  NameTable names;
  Op op;
  op.kind = OpKind::kKernel;
  op.name = names.Intern("cublas_gemm_bf16bf16bf16_32f_NN");
  op.gemm = GemmShape{4096, 12801, 4096, 1, DataType::kBfloat16};
  for (auto _ : state) benchmark::DoNotOptimize(provider.Duration(op, names));
}
BENCHMARK(BM_ProfileGemmNearest);

void BM_GemmModel(benchmark::State& state) {
  const netmodel::GpuSpec gpu = H100();
  const GemmShape shape{8192, 1280, 8192, 1, DataType::kBfloat16};
  for (auto _ : state) benchmark::DoNotOptimize(timing::EstimateGemm(shape, gpu).seconds);
}
BENCHMARK(BM_GemmModel);

void BM_AttentionModel(benchmark::State& state) {
  const netmodel::GpuSpec gpu = H100();
  AttentionShape a;
  a.batch = 1;
  a.heads = 8;
  a.seq_q = a.seq_kv = 8192;
  a.head_dim = 128;
  for (auto _ : state) benchmark::DoNotOptimize(timing::AttentionSeconds(a, gpu));
}
BENCHMARK(BM_AttentionModel);

// The whole chain per op, as the engine calls it (KernelTimer::Time: the providers in turn,
// the provider and family statistics, the extremes per kernel name): a PyTorch elementwise
// kernel (the "pytorch kernels" provider, third in the chain) and a kernel counted from its
// code (the fourth). The budget: under 100 ns a launch (issue 28).
netmodel::Cluster OneGpu() {
  netmodel::Cluster c;
  c.gpu = H100();
  c.nodes = 1;
  c.gpus_per_node = 1;
  return c;
}

void BM_KernelTimerPytorchKernel(benchmark::State& state) {
  auto timer = KernelTimer::Create(OneGpu(), KernelTimingOptions{}).value();
  NameTable names;
  Op op;
  op.kind = OpKind::kKernel;
  op.name = names.Intern(
      "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
      "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)");
  op.grid = Dim3{4096, 1, 1};
  op.block = Dim3{128, 1, 1};
  op.bytes = 3 * 4 * (1 << 21);
  for (auto _ : state) benchmark::DoNotOptimize(timer->Time(op, names));
}
BENCHMARK(BM_KernelTimerPytorchKernel);

void BM_KernelTimerCountedKernel(benchmark::State& state) {
  auto timer = KernelTimer::Create(OneGpu(), KernelTimingOptions{}).value();
  NameTable names;
  Op op;
  op.kind = OpKind::kKernel;
  op.name = names.Intern("triton_poi_fused_gelu_0");
  op.grid = Dim3{256, 1, 1};
  op.block = Dim3{128, 1, 1};
  op.bytes = 2097152;
  op.counts.counted = true;
  op.counts.fma_flops = 4980736;
  op.counts.sfu_ops = 131072;
  op.counts.instructions = 8880128;
  for (auto _ : state) benchmark::DoNotOptimize(timer->Time(op, names));
}
BENCHMARK(BM_KernelTimerCountedKernel);

}  // namespace

BENCHMARK_MAIN();
