// Engine throughput on generated op streams: kernels and collectives on tensor-parallel
// (8 ranks in a node) and data-parallel (one rank per node) communicators, the shape of a
// training step. The op source generates each rank's ops on the fly, so memory stays flat.
//
//   ./build/bench/engine_bench                       Google Benchmark: simulated ops per second
//   ./build/bench/engine_bench --scale RANKS OPS     one large run, wall time and peak RSS
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "myriad/emulator/engine.h"
#include "tests/netmodel/test_clusters.h"

namespace {

using myriad::emulator::CommunicatorSpec;
using myriad::emulator::EngineOptions;
using myriad::emulator::NameId;
using myriad::emulator::Op;
using myriad::emulator::OpKind;

// Per step: 6 compute kernels, a TP AllReduce after the 3rd and 6th, and a DP AllReduce of
// the gradients on a second stream, then a stream sync: 10 ops a step.
class TrainingStepWorkload : public myriad::emulator::Workload {
 public:
  TrainingStepWorkload(int ranks, int ops_per_rank) : ranks_(ranks), steps_(ops_per_rank / 10) {
    kernel_ = names_.Intern("sm90_xmma_gemm_bf16bf16_bf16f32");
    for (int node = 0; node < ranks / 8; ++node) {
      CommunicatorSpec tp{names_.Intern("tp" + std::to_string(node)), {}, {}};
      for (int i = 0; i < 8; ++i) tp.ranks.push_back(node * 8 + i);
      comms_.push_back(tp);
    }
    for (int local = 0; local < 8; ++local) {
      CommunicatorSpec dp{names_.Intern("dp" + std::to_string(local)), {}, {}};
      for (int node = 0; node < ranks / 8; ++node) dp.ranks.push_back(node * 8 + local);
      comms_.push_back(dp);
    }
  }
  int world_size() const override { return ranks_; }
  const std::vector<CommunicatorSpec>& communicators() const override { return comms_; }
  myriad::emulator::NameTable& names() override { return names_; }
  std::string description() const override { return "generated training steps"; }
  myriad::Result<std::unique_ptr<myriad::emulator::OpSource>> OpenRank(int rank) override {
    return std::unique_ptr<myriad::emulator::OpSource>(std::make_unique<Source>(*this, rank));
  }

 private:
  class Source : public myriad::emulator::OpSource {
   public:
    Source(const TrainingStepWorkload& w, int rank)
        : w_(w),
          tp_(w.comms_[static_cast<size_t>(rank / 8)].name),
          dp_(w.comms_[static_cast<size_t>(w.ranks_ / 8 + rank % 8)].name) {}
    myriad::Result<bool> Next(Op& op) override {
      if (!created_) {
        created_ = true;
        op = Op();
        op.kind = OpKind::kStreamCreate;
        op.stream = 1;
        op.non_blocking = true;
        return true;
      }
      if (step_ >= w_.steps_) return false;
      op = Op();
      switch (slot_) {
        case 3:
        case 7:
          op.kind = OpKind::kCollective;
          op.comm = tp_;
          op.count = 4 << 20;
          op.dtype = myriad::emulator::DataType::kBfloat16;
          break;
        case 8:
          op.kind = OpKind::kCollective;
          op.stream = 1;
          op.comm = dp_;
          op.count = 16 << 20;
          op.dtype = myriad::emulator::DataType::kBfloat16;
          break;
        case 9:
          op.kind = OpKind::kStreamSync;
          op.stream = 1;
          break;
        default:
          op.kind = OpKind::kKernel;
          op.name = w_.kernel_;
          op.duration = 150 * myriad::emulator::kPicosPerMicro;
      }
      if (++slot_ == 10) slot_ = 0, ++step_;
      return true;
    }

   private:
    const TrainingStepWorkload& w_;
    NameId tp_, dp_;
    bool created_ = false;
    int step_ = 0, slot_ = 0;
  };

  int ranks_;
  int steps_;
  NameId kernel_ = 0;
  std::vector<CommunicatorSpec> comms_;
  myriad::emulator::NameTable names_;
};

void BM_Engine(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const int ops = static_cast<int>(state.range(1));
  const auto cluster = myriad::netmodel::testing::DgxCluster("h100-sxm", ranks / 8);
  std::uint64_t simulated = 0;
  for (auto _ : state) {
    TrainingStepWorkload w(ranks, ops);
    auto result = myriad::emulator::RunEngine(w, cluster, EngineOptions());
    if (!result.ok()) state.SkipWithError(result.status().message().c_str());
    simulated += result.ok() ? result->simulated_ops : 0;
  }
  state.counters["ops_per_second"] =
      benchmark::Counter(static_cast<double>(simulated), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Engine)
    ->Args({8, 1000})
    ->Args({64, 1000})
    ->Args({1024, 100})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();  // the engine runs on its own thread

int Scale(int ranks, int ops) {
  const auto cluster = myriad::netmodel::testing::DgxCluster("h100-sxm", ranks / 8);
  TrainingStepWorkload w(ranks, ops);
  const auto start = std::chrono::steady_clock::now();
  auto result = myriad::emulator::RunEngine(w, cluster, EngineOptions());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!result.ok()) {
    std::fprintf(stderr, "error: %s\n", result.status().message().c_str());
    return 1;
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf(
      "%d ranks x %d ops: %llu ops in %.2f s wall (%.2f M ops/s), peak RSS %.0f MiB, "
      "predicted iteration %.3f us\n",
      ranks, ops, static_cast<unsigned long long>(result->simulated_ops), seconds,
      static_cast<double>(result->simulated_ops) / seconds / 1e6,
      static_cast<double>(usage.ru_maxrss) / 1024.0,
      myriad::emulator::ToMicros(result->total_time) / (ops / 10));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--scale") == 0)
    return Scale(std::atoi(argv[2]), std::atoi(argv[3]));
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
