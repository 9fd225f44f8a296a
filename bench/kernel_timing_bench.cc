// Kernel timing per op: the providers' costs (docs/kernel-timing.md "Speed", issue 15's
// budget: a profile lookup under 200 ns).
#include <benchmark/benchmark.h>

#include <fstream>
#include <string>

#include "myriad/emulator/kernel_timing.h"
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

}  // namespace

BENCHMARK_MAIN();
