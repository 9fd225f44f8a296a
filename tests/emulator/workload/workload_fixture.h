// Helpers of the synthetic-workload tests: a scenario of a GPT on H100 nodes written to a
// folder per test, and a tally of what one rank's op stream holds.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "myriad/emulator/scenario.h"
#include "myriad/emulator/workload.h"

namespace myriad::emulator {

constexpr const char* kSmallGpt =
    "layers = 8\nhidden = 512\nheads = 8\nvocab = 32000\nseq = 1024\n";
// Large enough that kernels, not launch and link latencies, dominate; a small vocabulary keeps
// the last stage's logits from unbalancing the pipeline.
constexpr const char* kWideGpt =
    "layers = 8\nhidden = 8192\nheads = 64\nvocab = 1024\nseq = 2048\n";

// A GPT (`model`, default 8 layers of hidden 512) on `nodes` x 8 H100 with `parallel` and
// `training`.
inline Scenario Load(const std::string& name, int nodes, const std::string& parallel,
                     const std::string& training, const std::string& model = kSmallGpt) {
  std::string text =
      "[cluster]\ngpu = \"h100-sxm\"\nnodes = " + std::to_string(nodes) + "\ngpus_per_node = 8\n";
  if (nodes > 1) text += "[cluster.scale_out]\ntopology = \"rail-optimized\"\nnic = \"cx7-400g\"\n";
  text += "[workload]\n" + model;
  text += "[workload.parallel]\n" + parallel + "\n[workload.training]\n" + training + "\n";
  // One folder per test: ctest runs the tests (and each parameter) in parallel processes.
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string folder = std::string(test->test_suite_name()) + "." + test->name();
  for (char& c : folder)
    if (c == '/') c = '_';
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "myriad_generator_test" / folder;
  std::filesystem::create_directories(dir);
  std::ofstream(dir / name) << text;
  Result<Scenario> s = LoadScenario((dir / name).string());
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::move(s).value();
}

struct Tally {
  double flops = 0;                    // GEMMs and attention, as Megatron counts them
  double router_flops = 0;             // MoE routers (not in Megatron's count)
  std::map<std::string, int> by_kind;  // "send", "recv", "collective", "iteration", ...
  // "ep alltoall" (communicator kind and collective) or "cp send": calls and elements.
  std::map<std::string, int> calls;
  std::map<std::string, double> counts;
  std::map<std::string, int> kernels;          // launches by kernel name
  std::map<std::string, double> kernel_bytes;  // a memory-bound kernel's bytes, by name
  std::uint64_t ops = 0;
};

inline Tally Count(Workload& w, int rank) {
  Tally t;
  auto source = w.OpenRank(rank);
  EXPECT_TRUE(source.ok());
  Op op;
  while (true) {
    Result<bool> more = (*source)->Next(op);
    EXPECT_TRUE(more.ok());
    if (!more.ok() || !*more) break;
    ++t.ops;
    ++t.by_kind[std::string(ToString(op.kind))];
    if (op.kind == OpKind::kMarker && w.names().Name(op.label) == "iteration") ++t.by_kind["iter"];
    if (op.kind == OpKind::kKernel) {
      const std::string name(w.names().Name(op.name));
      ++t.kernels[name];
      t.kernel_bytes[name] += static_cast<double>(op.bytes);
    }
    if (op.gemm.m > 0) {
      const double f = 2.0 * op.gemm.m * op.gemm.n * op.gemm.k * op.gemm.batch;
      (w.names().Name(op.name).rfind("gemm_moe_router", 0) == 0 ? t.router_flops : t.flops) += f;
    }
    if (op.attention.batch > 0) {
      // Megatron counts causal attention as the full square, twice the work done: 4 b h s^2 d
      // forward, twice that back. A block with no mask (ring attention's later steps) counts
      // double for the same reason.
      const AttentionShape& a = op.attention;
      t.flops += (a.causal ? 1.0 : 2.0) * (a.backward ? 8.0 : 4.0) * a.batch * a.heads * a.seq_q *
                 a.seq_kv * a.head_dim;
    }
    if (op.kind == OpKind::kCollective || op.kind == OpKind::kSend || op.kind == OpKind::kRecv) {
      const std::string& comm = w.names().Name(op.comm);
      const std::string key =
          comm.substr(0, comm.find('.')) + " " +
          (op.kind == OpKind::kCollective ? std::string(netmodel::ToString(op.coll))
                                          : std::string(ToString(op.kind)));
      ++t.calls[key];
      t.counts[key] += static_cast<double>(op.count);
    }
  }
  return t;
}

}  // namespace myriad::emulator
