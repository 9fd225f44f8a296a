// The example programs, unmodified, under `myriad run` (issue 4's acceptance): the collective
// benchmark prints what `myriad collective` predicts, however the GPUs are spread over
// processes and threads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "tests/support/run_command.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// size -> busbw from nccl-tests-style rows (an optional "[rank 0] " prefix is skipped).
std::map<long long, double> BusBandwidths(const std::string& output, bool only_rank0) {
  std::map<long long, double> rows;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("[rank ", 0) == 0) {
      if (only_rank0 && line.rfind("[rank 0] ", 0) != 0) continue;
      line = line.substr(line.find(']') + 1);
    }
    std::istringstream fields(line);
    long long size = 0, count = 0;
    std::string type, redop, root;
    double time = 0, algbw = 0, busbw = 0;
    if (fields >> size >> count >> type >> redop >> root >> time >> algbw >> busbw)
      rows[size] = busbw;
  }
  return rows;
}

// `env` goes to the program's environment only; `collective_args` to `myriad collective`.
void ExpectMatchesCollective(const std::string& run_args, const std::string& scenario,
                             const std::string& env = "", const std::string& collective_args = "") {
  const auto [status, out] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) + " run " + scenario + " " +
      (env.empty() ? run_args
                   : run_args.substr(0, run_args.find("-- ") + 3) + "env " + env + " " +
                         run_args.substr(run_args.find("-- ") + 3)) +
      " 2>&1");
  ASSERT_EQ(status, 0) << out;
  const auto [cstatus, predicted] =
      myriad::testing::RunCommand(std::string(MYRIAD_BINARY) + " collective " + scenario +
                                  " --op allreduce -b 1M -e 1G -f 32 " + collective_args + " 2>&1");
  ASSERT_EQ(cstatus, 0) << predicted;
  const auto measured = BusBandwidths(out, true);
  const auto expected = BusBandwidths(predicted, false);
  ASSERT_EQ(expected.size(), 3u) << predicted;
  for (const auto& [size, busbw] : expected) {
    ASSERT_TRUE(measured.count(size)) << size << "\n" << out;
    EXPECT_NEAR(measured.at(size), busbw, 0.02 * busbw) << size;
  }
}

const std::string kBench = MYRIAD_COLLECTIVE_BENCH;
const std::string kBenchArgs = " -b 1M -e 1G -f 32 -w 1 -n 20";

TEST(ExamplesRunTest, CollectiveBenchOneProcessEightGpus) {
  ExpectMatchesCollective(
      "--processes 1 --devices-per-process 8 -- " + kBench + kBenchArgs + " -g 8",
      "scenarios/dgx-h100.toml");
}

// nccl-tests' -t 2 -g 4: two host threads of one process, each driving four GPUs, meeting at
// a barrier (a mutex and a condition variable) before each timed loop. It gives what one
// thread driving eight GPUs gives, and ten runs in a row are byte-identical; none hangs.
TEST(ExamplesRunTest, SeveralHostThreadsPerProcessAreDeterministic) {
  ExpectMatchesCollective("--processes 1 --devices-per-process 8 --timeout 120 -- " + kBench +
                              kBenchArgs + " -t 2 -g 4",
                          "scenarios/dgx-h100.toml");
  std::string first;
  for (int run = 0; run < 10; ++run) {
    const std::string report =
        ::testing::TempDir() + "myriad_threads_" + std::to_string(run) + ".json";
    const auto [status, out] = myriad::testing::RunCommand(
        std::string(MYRIAD_BINARY) +
        " run scenarios/dgx-h100.toml --devices-per-process 8 --timeout 120 --report " + report +
        " -- " + kBench + kBenchArgs + " -t 2 -g 4 2>&1");
    ASSERT_EQ(status, 0) << "run " << run << "\n" << out;
    std::ifstream in(report);
    const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (run == 0) first = json;
    EXPECT_EQ(json, first) << "run " << run << " differs";
  }
}

// nccl-tests' MPI build under --env mpi: the processes are started through the real mpirun,
// so MPI_Init forms one world of eight; rank 0's NCCL id reaches the others by MPI_Bcast, and
// the rows are what `myriad collective` predicts.
TEST(ExamplesRunTest, AnMpiWorldOfEightFormsAndMatchesTheModel) {
#ifndef MYRIAD_COLLECTIVE_BENCH_MPI
  GTEST_SKIP() << "MPI is not installed (scripts/setup.sh installs Open MPI)";
#else
  const std::string bench = MYRIAD_COLLECTIVE_BENCH_MPI;
  ExpectMatchesCollective("--processes 8 --env mpi --timeout 120 -- " + bench + kBenchArgs,
                          "scenarios/dgx-h100.toml");
  const auto [status, out] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) + " run scenarios/dgx-h100.toml --processes 8 --env mpi " +
      "--timeout 120 -- " + bench + " -b 1M -e 1M 2>&1");
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("# MPI world: 8 processes, 1 rows"));
  EXPECT_THAT(out, HasSubstr("8 ranks |"));
#endif
}

TEST(ExamplesRunTest, ScenarioLaunchSectionRunsItsCommand) {
  // scenarios/dgx-h100-collective-bench.toml: [launch] names the program and its layout.
  const auto [status, out] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) + " run scenarios/dgx-h100-collective-bench.toml 2>&1");
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("8 rank(s) = 1 process(es) x 1 thread(s) x 8 GPU(s)"));
  EXPECT_EQ(BusBandwidths(out, true).size(), 3u) << out;
}

TEST(ExamplesRunTest, CollectiveBench128GpusAs16ProcessesOf8) {
  ExpectMatchesCollective(
      "--processes 16 --devices-per-process 8 -- " + kBench + kBenchArgs + " -g 8",
      "scenarios/h100-x16.toml");
}

// NCCL_ALGO / NCCL_PROTO in the program's environment are honoured as NCCL would.
TEST(ExamplesRunTest, NcclAlgoInTheProgramsEnvironmentIsHonoured) {
  ExpectMatchesCollective("--processes 8 -- " + kBench + kBenchArgs, "scenarios/dgx-h100.toml",
                          "NCCL_ALGO=ring", "--algo ring");
  ExpectMatchesCollective("--processes 1 -- " + kBench + kBenchArgs + " -g 8",
                          "scenarios/h100-x16.toml", "NCCL_PROTO=Simple NCCL_ALGO=^nvls",
                          "--proto simple --algo ^nvls --nodes 1");
}

// One process may drive any number of GPUs (a per-device table of 64 once overflowed).
TEST(ExamplesRunTest, CollectiveBench128GpusInOneProcess) {
  ExpectMatchesCollective(
      "--processes 1 --devices-per-process 128 -- " + kBench + kBenchArgs + " -g 128",
      "scenarios/h100-x16.toml");
  const auto [status, out] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) + " run scenarios/h100-x16.toml --devices-per-process 256 -- " +
      kBench + " -g 256 2>&1");
  EXPECT_EQ(status, 2) << out;
  EXPECT_THAT(out, HasSubstr("1 processes x 256 devices need 256 GPUs; the cluster has 128"));
}

TEST(ExamplesRunTest, CollectiveBench128GpusAs128Processes) {
  ExpectMatchesCollective("--processes 128 --devices-per-process 1 -- " + kBench + kBenchArgs,
                          "scenarios/h100-x16.toml");
}

double PrintedMs(const std::string& output, const std::string& label) {
  const auto at = output.find("[rank 0] " + label + ": ");
  if (at == std::string::npos) return -1;
  return std::stod(output.substr(at + label.size() + 11));
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(ExamplesRunTest, DdpTrainStepTimeIsTheReportsIterationTime) {
  const std::string report = ::testing::TempDir() + "myriad_ddp_report.json";
  const std::string timeline = ::testing::TempDir() + "myriad_ddp_timeline.json";
  const auto [status, out] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) + " run scenarios/h100-x16.toml --processes 64 --report " +
      report + " --timeline " + timeline + " -- " + MYRIAD_DDP_TRAIN + " 2>&1");
  ASSERT_EQ(status, 0) << out;
  // The program's own events and Myriad's iteration markers (NVTX) agree within 1%.
  const double printed_ms = PrintedMs(out, "mean step time");
  ASSERT_GT(printed_ms, 0) << out;
  const double report_ms = ReadJson(report)["iteration_time_us"].get<double>() / 1000;
  EXPECT_NEAR(printed_ms, report_ms, 0.01 * report_ms);
  // The bucketed AllReduces overlap the backward GEMMs (another stream, same time).
  int overlaps = 0;
  const nlohmann::json events = ReadJson(timeline)["traceEvents"];
  for (const auto& c : events) {
    if (c["ph"] != "X" || c["pid"] != 0 || c["cat"] != "communication") continue;
    for (const auto& g : events) {
      if (g["ph"] != "X" || g["pid"] != 0 || g["tid"] == c["tid"] ||
          g["name"].get<std::string>().find("cublasLt_matmul") == std::string::npos)
        continue;
      const double cs = c["ts"], ce = cs + c["dur"].get<double>();
      const double gs = g["ts"], ge = gs + g["dur"].get<double>();
      if (gs < ce && cs < ge) ++overlaps;
    }
  }
  EXPECT_GT(overlaps, 0);
}

// Rank folding (--fold dp): the data-parallel trainer on 16 ranks over 2 nodes from one live
// process predicts what 16 processes do, to the picosecond: iteration time and every per-rank
// figure. With a mesh of 4 replicas of 4 ranks, 4 processes run; the result is the same.
TEST(ExamplesRunTest, AFoldedDdpRunEqualsTheUnfoldedOne) {
  const std::string dir = ::testing::TempDir();
  auto run = [&](const std::string& flags, const std::string& name) {
    const std::string report = dir + "myriad_fold_" + name + ".json";
    const auto [status, out] = myriad::testing::RunCommand(
        std::string(MYRIAD_BINARY) + " run tests/examples/data/h100-2-nodes.toml " + flags +
        " --timeout 120 --report " + report + " -- " + MYRIAD_DDP_TRAIN + " 2>&1");
    EXPECT_EQ(status, 0) << out;
    return std::make_pair(ReadJson(report), out);
  };
  const auto [unfolded, unfolded_out] = run("", "unfolded");
  const auto [one, one_out] = run("--fold dp", "one");
  const auto [four, four_out] = run("--fold dp --mesh tp=4,dp=4", "four");
  // The program sizes itself for the whole world, and one process ran.
  EXPECT_THAT(one_out, HasSubstr("ddp_train: 16 rank(s)"));
  EXPECT_THAT(one_out, HasSubstr("rank 0 ran as a process; the other 15 ranks"));
  EXPECT_THAT(four_out, HasSubstr("ranks 0-3 ran as processes; the other 12 ranks"));
  ASSERT_EQ(unfolded["ranks"].size(), 16u);
  for (const auto* folded : {&one, &four}) {
    const int live = folded == &one ? 1 : 4;
    ASSERT_EQ((*folded)["ranks"].size(), 16u);
    for (const char* key : {"iteration_time_us", "iterations", "total_time_us", "simulated_ops",
                            "breakdown_us", "peak_memory_bytes", "kernel_timing", "collectives"})
      EXPECT_EQ((*folded)[key], unfolded[key]) << key << " with " << live << " live";
    for (int r = 0; r < 16; ++r) {
      nlohmann::json rank = (*folded)["ranks"][r];
      if (r < live) {
        EXPECT_FALSE(rank.contains("mirror_of"));
      } else {
        EXPECT_EQ(rank["mirror_of"], r % live);
        rank.erase("mirror_of");
      }
      EXPECT_EQ(rank, unfolded["ranks"][r]) << "rank " << r << " with " << live << " live";
    }
    EXPECT_EQ((*folded)["notes"][0], unfolded["notes"][0]);  // the bytes copied back
    EXPECT_THAT((*folded)["notes"].dump(), HasSubstr("rank folding"));
  }
  // Under the flow model the mirrors' traffic is on the links as the processes' would be.
  const auto flow_unfolded = run("--fidelity flow", "flow_unfolded").first;
  const auto flow_folded = run("--fold dp --fidelity flow", "flow_folded").first;
  EXPECT_EQ(flow_folded["iteration_time_us"], flow_unfolded["iteration_time_us"]);
  EXPECT_EQ(flow_folded["collectives"], flow_unfolded["collectives"]);
  for (int r = 0; r < 16; ++r)
    EXPECT_EQ(flow_folded["ranks"][r]["end_time_us"], flow_unfolded["ranks"][r]["end_time_us"]);
}

// Kernels that take a per-rank seed changing every step (dropout masks, stochastic rounding)
// are timed from their code, where the seed reaches no loop bound or branch: every rank and
// every step takes the same time, and the folded run equals the unfolded one to the
// nanosecond (issue 28).
TEST(ExamplesRunTest, SeededKernelsTakeTheSameTimeOnEveryRankAndFoldExactly) {
  const std::string dir = ::testing::TempDir();
  auto run = [&](const std::string& flags, const std::string& name) {
    const std::string report = dir + "myriad_seeded_" + name + ".json";
    const auto [status, out] = myriad::testing::RunCommand(
        std::string(MYRIAD_BINARY) + " run tests/examples/data/h100-2-nodes.toml " + flags +
        " --timeout 120 --report " + report + " -- " + MYRIAD_SEEDED_SGD + " 2>&1");
    EXPECT_EQ(status, 0) << out;
    return std::make_pair(ReadJson(report), out);
  };
  const auto [unfolded, out] = run("", "unfolded");
  const auto [folded, folded_out] = run("--fold dp", "folded");
  // Five kernels a step, 3 steps, 16 ranks: all counted from the code in the binary's fatbin.
  ASSERT_TRUE(unfolded["kernel_timing"].is_array());
  for (const auto& p : unfolded["kernel_timing"]) {
    if (p["provider"] == "kernel code") {
      EXPECT_EQ(p["ops"], 16 * 3 * 5);
    } else if (p["provider"] == "launch guess" || p["provider"] == "fallback") {
      EXPECT_EQ(p["ops"], 0);
    }
  }
  std::set<std::string> step_times;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (line.find(" step ") != std::string::npos && line.find(" ms") != std::string::npos)
      step_times.insert(line.substr(line.rfind(": ") + 2));
  EXPECT_EQ(step_times.size(), 1u) << out;
  for (int r = 1; r < 16; ++r)
    EXPECT_EQ(unfolded["ranks"][r]["compute_us"], unfolded["ranks"][0]["compute_us"]) << r;
  for (const char* key : {"iteration_time_us", "total_time_us", "simulated_ops", "breakdown_us",
                          "kernel_timing", "collectives"})
    EXPECT_EQ(folded[key], unfolded[key]) << key;
}

// --check-fold runs the program as two replicas, folded and not, before the real run: a
// trainer whose rank 0 alone saves checkpoints (a device-to-host copy of its weights) has
// replicas that differ, which the check names by the first op that differs; without checkpoints the
// fold is confirmed.
TEST(ExamplesRunTest, AFoldCheckFindsReplicasThatDoNotDoAlikeWork) {
  const std::string base =
      std::string(MYRIAD_BINARY) + " run tests/examples/data/h100-2-nodes.toml ";
  const auto [status, out] =
      myriad::testing::RunCommand(base + "--fold dp --check-fold --timeout 120 -- " +
                                  MYRIAD_DDP_TRAIN + " --checkpoint-every 2 2>&1");
  EXPECT_EQ(status, 1) << out;
  // The first op rank 0 alone does is named: its checkpoint's copy to the host.
  EXPECT_THAT(out, HasSubstr("fold check failed: as two data-parallel replicas (mesh dp=2), "
                             "the replicas do not launch the same work: rank 1's op "));
  EXPECT_THAT(out, HasSubstr("where rank 0's is memcpy d2h of "));
  EXPECT_THAT(out, Not(HasSubstr("ddp_train: 16 rank(s)")));  // the long run did not start
  const auto [ok_status, ok_out] = myriad::testing::RunCommand(
      base + "--fold dp --check-fold --timeout 120 -- " + MYRIAD_DDP_TRAIN + " 2>&1");
  EXPECT_EQ(ok_status, 0) << ok_out;
  EXPECT_THAT(ok_out, HasSubstr("fold check: as two data-parallel replicas (mesh dp=2, 2 ranks), "
                                "the run with the second replica mirrored gave every rank the "
                                "figures the run with both as processes did"));
  EXPECT_THAT(ok_out, HasSubstr("ddp_train: 16 rank(s)"));
  // --program-output puts the program's lines in a file instead of among Myriad's.
  const std::string log = ::testing::TempDir() + "myriad_program_output.log";
  const auto [log_status, log_out] = myriad::testing::RunCommand(
      base + "--fold dp --program-output " + log + " -- " + MYRIAD_DDP_TRAIN + " 2>&1");
  EXPECT_EQ(log_status, 0) << log_out;
  EXPECT_THAT(log_out, Not(HasSubstr("ddp_train: 16 rank(s)")));
  std::ifstream log_file(log);
  const std::string logged((std::istreambuf_iterator<char>(log_file)), {});
  EXPECT_THAT(logged, HasSubstr("ddp_train: 16 rank(s)"));
  // With TP inside each replica the check keeps the replica's layout.
  const auto [tp_status, tp_out] = myriad::testing::RunCommand(
      base + "--fold dp --mesh tp=4,dp=4 --check-fold --timeout 120 -- " + MYRIAD_DDP_TRAIN +
      " 2>&1");
  EXPECT_EQ(tp_status, 0) << tp_out;
  EXPECT_THAT(tp_out, HasSubstr("(mesh tp=4,dp=2, 8 ranks)"));
  // The same from the scenario: [launch] fold and check_fold.
  const std::string scenario = ::testing::TempDir() + "myriad_check_fold.toml";
  std::ofstream(scenario)
      << "include = \""
      << std::filesystem::absolute("tests/examples/data/h100-2-nodes.toml").string()
      << "\"\n[launch]\nfold = [\"dp\"]\ncheck_fold = true\n";
  const auto [sc_status, sc_out] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) + " run " + scenario + " --timeout 120 -- " + MYRIAD_DDP_TRAIN +
      " --checkpoint-every 2 2>&1");
  EXPECT_EQ(sc_status, 1) << sc_out;
  EXPECT_THAT(sc_out, HasSubstr("fold check failed"));
  // A check needs a fold to check.
  const auto [bad_status, bad_out] =
      myriad::testing::RunCommand(base + "--check-fold -- " + MYRIAD_DDP_TRAIN + " 2>&1");
  EXPECT_EQ(bad_status, 2) << bad_out;
  EXPECT_THAT(bad_out, HasSubstr("--check-fold checks a fold: it needs --fold dp"));
}

// Folding at scale: 2,048 ranks on 256 nodes from one process, every rank in the report.
TEST(ExamplesRunTest, AFoldedRunReportsEveryRank) {
  const std::string report = ::testing::TempDir() + "myriad_fold_2048.json";
  const auto [status, out] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) + " run scenarios/h100-x1024.toml --processes 2048 --fold dp " +
      "--timeout 300 --report " + report + " -- " + MYRIAD_DDP_TRAIN + " 2>&1");
  ASSERT_EQ(status, 0) << out;
  const nlohmann::json json = ReadJson(report);
  EXPECT_EQ(json["world_size"], 2048);
  ASSERT_EQ(json["ranks"].size(), 2048u);
  for (int r = 1; r < 2048; ++r) EXPECT_EQ(json["ranks"][r]["mirror_of"], 0) << r;
  EXPECT_EQ(json["ranks"][2047]["ops"], json["ranks"][0]["ops"]);
  EXPECT_THAT(out, HasSubstr("ddp_train: 2048 rank(s)"));
}

// tp_pp_toy as TP 8 x PP 4 x DP 4 (128 ranks) from its 32 live processes, its three
// ncclCommSplit groups inferred (TP and PP groups inside each replica, DP groups across
// them), predicts what 128 processes do: the iteration time and every rank's figures. The
// mirrors' in-replica groups carry other names ("/replica<k>"), so the collectives compare
// by what they did.
TEST(ExamplesRunTest, AFoldedTensorPipelineDataParallelRunEqualsTheUnfoldedOne) {
  const std::string dir = ::testing::TempDir();
  auto run = [&](const std::string& flags, const std::string& name) {
    const std::string report = dir + "myriad_fold_tp_" + name + ".json";
    const auto [status, out] = myriad::testing::RunCommand(
        std::string(MYRIAD_BINARY) + " run scenarios/h100-x16.toml " + flags +
        " --timeout 300 --report " + report + " -- " + MYRIAD_TP_PP_TOY + " --tp 8 --pp 4 2>&1");
    EXPECT_EQ(status, 0) << out;
    return ReadJson(report);
  };
  const nlohmann::json unfolded = run("", "unfolded");
  const nlohmann::json folded = run("--fold dp --mesh tp=8,pp=4,dp=4", "folded");
  for (const char* key : {"iteration_time_us", "iterations", "total_time_us", "simulated_ops",
                          "breakdown_us", "peak_memory_bytes", "kernel_timing"})
    EXPECT_EQ(folded[key], unfolded[key]) << key;
  ASSERT_EQ(folded["ranks"].size(), 128u);
  for (int r = 0; r < 128; ++r) {
    nlohmann::json rank = folded["ranks"][r];
    EXPECT_EQ(rank.contains("mirror_of"), r >= 32);
    rank.erase("mirror_of");
    EXPECT_EQ(rank, unfolded["ranks"][r]) << "rank " << r;
  }
  const auto what = [](const nlohmann::json& report) {
    std::multiset<std::string> done;
    for (const auto& c : report["collectives"])
      done.insert(c["op"].dump() + " " + c["bytes"].dump() + " x" + c["calls"].dump() + " " +
                  c["time_us"].dump());
    return done;
  };
  EXPECT_EQ(what(folded), what(unfolded));
}

// A process may drive several GPUs under folding: nccl-tests' pattern (-g 8, one communicator
// of all 128 GPUs made with ncclCommInitRank per GPU in a group) as 16 processes of 8 GPUs,
// folded as TP 8 x DP 16, runs one process and predicts what the 16 do, rank by rank.
TEST(ExamplesRunTest, AFoldedRunOfProcessesWithEightGpusEqualsTheUnfoldedOne) {
  const std::string dir = ::testing::TempDir();
  auto run = [&](const std::string& flags, const std::string& name) {
    const std::string report = dir + "myriad_fold_g8_" + name + ".json";
    const auto [status, out] = myriad::testing::RunCommand(
        std::string(MYRIAD_BINARY) + " run scenarios/h100-x16.toml --processes 16 " +
        "--devices-per-process 8 " + flags + " --timeout 120 --report " + report + " -- " + kBench +
        kBenchArgs + " -g 8 2>&1");
    EXPECT_EQ(status, 0) << out;
    return std::make_pair(ReadJson(report), out);
  };
  const auto [unfolded, unfolded_out] = run("", "unfolded");
  const auto [folded, folded_out] = run("--fold dp --mesh tp=8,dp=16", "folded");
  EXPECT_THAT(folded_out, HasSubstr("ranks 0-7 ran as processes; the other 120 ranks"));
  EXPECT_EQ(BusBandwidths(folded_out, true), BusBandwidths(unfolded_out, true));
  for (const char* key : {"iteration_time_us", "iterations", "total_time_us", "simulated_ops",
                          "breakdown_us", "peak_memory_bytes", "kernel_timing", "collectives"})
    EXPECT_EQ(folded[key], unfolded[key]) << key;
  ASSERT_EQ(folded["ranks"].size(), 128u);
  for (int r = 0; r < 128; ++r) {
    nlohmann::json rank = folded["ranks"][r];
    EXPECT_EQ(rank.contains("mirror_of"), r >= 8);
    rank.erase("mirror_of");
    EXPECT_EQ(rank, unfolded["ranks"][r]) << "rank " << r;
  }
  // Point-to-point across the replicas: nccl-tests' sendrecv is a ring over the world (each
  // rank sends to the next), alltoall sends to every rank; a mirror's peers are its source's
  // shifted by its distance from it, so both fold.
  for (const std::string op : {"sendrecv", "alltoall"}) {
    const std::string args = " -b 1M -e 16M -f 4 -w 1 -n 5 -g 8 -o " + op;
    auto p2p = [&](const std::string& flags, const std::string& name) {
      const std::string report = dir + "myriad_fold_g8_" + op + name + ".json";
      const auto [status, out] = myriad::testing::RunCommand(
          std::string(MYRIAD_BINARY) + " run scenarios/h100-x16.toml --processes 16 " +
          "--devices-per-process 8 " + flags + " --timeout 120 --report " + report + " -- " +
          kBench + args + " 2>&1");
      EXPECT_EQ(status, 0) << out;
      return ReadJson(report);
    };
    const nlohmann::json whole = p2p("", "unfolded");
    const nlohmann::json mirrored = p2p("--fold dp --mesh tp=8,dp=16", "folded");
    EXPECT_EQ(mirrored["iteration_time_us"], whole["iteration_time_us"]) << op;
    ASSERT_EQ(mirrored["ranks"].size(), 128u) << op;
    for (int r = 0; r < 128; ++r) {
      nlohmann::json rank = mirrored["ranks"][r];
      rank.erase("mirror_of");
      EXPECT_EQ(rank, whole["ranks"][r]) << op << " rank " << r;
    }
  }
  // A replica that is not whole processes is refused.
  const auto [status, out] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) + " run scenarios/h100-x16.toml --processes 16 " +
      "--devices-per-process 8 --fold dp --mesh tp=4,dp=32 -- " + kBench + " -g 8 2>&1");
  EXPECT_EQ(status, 2) << out;
  EXPECT_THAT(out, HasSubstr("needs each process's ranks to be all live or all mirrors, and "
                             "process 0 holds 4 live rank(s) of mesh tp=4,dp=32 (live ranks "
                             "0-3)"));
}

// What folding cannot take is refused up front with a clear error: a mesh that does not fit
// the world, an axis it lacks, a pipeline axis, a group it cannot place.
TEST(ExamplesRunTest, FoldingErrorsNameWhatCannotBeFolded) {
  const auto [status, out] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) + " run tests/examples/data/h100-2-nodes.toml --fold dp --mesh " +
      "tp=3,dp=4 -- " + MYRIAD_DDP_TRAIN + " 2>&1");
  EXPECT_EQ(status, 2) << out;
  EXPECT_THAT(out, HasSubstr("mesh 'tp=3,dp=4' has 12 ranks, the world has 16"));
  const auto [tp_status, tp_out] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) + " run tests/examples/data/h100-2-nodes.toml --fold tp -- " +
      MYRIAD_DDP_TRAIN + " 2>&1");
  EXPECT_EQ(tp_status, 2) << tp_out;
  EXPECT_THAT(tp_out, HasSubstr("--fold tp: mesh 'dp=16' has no tp axis"));
  const auto [pp_status, pp_out] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) + " run tests/examples/data/h100-2-nodes.toml --fold pp,dp " +
      "--mesh pp=2,dp=8 -- " + MYRIAD_DDP_TRAIN + " 2>&1");
  EXPECT_EQ(pp_status, 2) << pp_out;
  EXPECT_THAT(pp_out, HasSubstr("cannot mirror each other"));
  // A live axis slower than a folded one spreads the live ranks out (0 and 2 here): the
  // world's communicator is placed from its size, its splits only from their members, which
  // only PyTorch's hook names.
  const auto [order_status, order_out] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) + " run tests/examples/data/h100-2-nodes.toml --fold tp,dp " +
      "--mesh tp=2,pp=2,dp=4 -- " + MYRIAD_TP_PP_TOY + " --tp 2 --pp 2 --iters 1 2>&1");
  EXPECT_NE(order_status, 0) << order_out;
  EXPECT_THAT(order_out, HasSubstr("under --fold tp,dp: Myriad needs the child's members"));
}

// A recorded live run (communicators made and destroyed, NCCL collectives, cuBLAS GEMMs)
// replays to the same iteration time: what --record keeps is what the engine simulated.
TEST(ExamplesRunTest, ARecordedDdpRunReplaysToTheSameIterationTime) {
  const std::string dir = ::testing::TempDir();
  const auto [status, out] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) + " run scenarios/dgx-h100.toml --processes 8 --report " + dir +
      "myriad_recorded_run.json --record " + dir + "myriad_recorded.mtrace -- " + MYRIAD_DDP_TRAIN +
      " 2>&1");
  ASSERT_EQ(status, 0) << out;
  const auto [replay_status, replayed] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) + " replay " + dir +
      "myriad_recorded.mtrace --scenario scenarios/dgx-h100.toml --report " + dir +
      "myriad_replayed.json 2>&1");
  ASSERT_EQ(replay_status, 0) << replayed;
  EXPECT_EQ(ReadJson(dir + "myriad_recorded_run.json")["iteration_time_us"],
            ReadJson(dir + "myriad_replayed.json")["iteration_time_us"])
      << replayed;
}

// A live binary under the default modelled host time: repeated runs write byte-identical
// reports and timelines (what makes gating a run's report in CI trustworthy). Several runs,
// since a race between the processes and the engine shows only now and then.
// Steps named as trainers name them (NVTX ranges "Train step N"), managed and pinned memory
// freed at shutdown: the run succeeds, --iteration-marker "Train step" takes the ranges, and the
// summary says that the losses it printed were read back as zeros.
TEST(ExamplesRunTest, DdpTrainStepsAreFoundByTheirNames) {
  const std::string report = ::testing::TempDir() + "myriad_ddp_named_steps.json";
  const auto [status, out] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) +
      " run scenarios/h100-x16.toml --processes 8 --iteration-marker 'Train step' --report " +
      report + " -- " + MYRIAD_DDP_TRAIN + " --steps 4 2>&1");
  ASSERT_EQ(status, 0) << out;
  const double printed_ms = PrintedMs(out, "mean step time");
  const nlohmann::json json = ReadJson(report);
  EXPECT_EQ(json["iterations"].get<int>(), 3);  // four ranges: three intervals between them
  EXPECT_NEAR(printed_ms, json["iteration_time_us"].get<double>() / 1000, 0.01 * printed_ms);
  EXPECT_THAT(out, HasSubstr("bytes were copied back from device memory"));
  EXPECT_THAT(out, HasSubstr("loss (rank 0): step 0 0.000000"));
}

TEST(ExamplesRunTest, LiveRunsGiveByteIdenticalReportsAndTimelines) {
  auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  // The first line where two files differ, so a failure says what moved.
  auto first_difference = [](const std::string& a, const std::string& b) {
    std::istringstream sa(a), sb(b);
    std::string la, lb;
    for (int line = 1;; ++line) {
      const bool more_a = static_cast<bool>(std::getline(sa, la));
      const bool more_b = static_cast<bool>(std::getline(sb, lb));
      if (!more_a && !more_b) return std::string("none");
      if (la != lb || more_a != more_b)
        return "line " + std::to_string(line) + ": " + la.substr(0, 200) + " vs " +
               lb.substr(0, 200);
    }
  };
  std::string first[2];
  for (int run = 0; run < 4; ++run) {
    const std::string report =
        ::testing::TempDir() + "myriad_live_report" + std::to_string(run) + ".json";
    const std::string timeline =
        ::testing::TempDir() + "myriad_live_timeline" + std::to_string(run) + ".json";
    const auto [status, out] = myriad::testing::RunCommand(
        std::string(MYRIAD_BINARY) + " run scenarios/h100-x16.toml --processes 16 --report " +
        report + " --timeline " + timeline + " -- " + MYRIAD_DDP_TRAIN + " --steps 3 2>&1");
    ASSERT_EQ(status, 0) << out;
    const std::string files[2] = {read(report), read(timeline)};
    for (int f = 0; f < 2; ++f) {
      ASSERT_FALSE(files[f].empty());
      if (run == 0) first[f] = files[f];
      EXPECT_TRUE(files[f] == first[f])
          << (f == 0 ? "report" : "timeline") << " of run " << run << " differs from run 0 at "
          << first_difference(first[f], files[f]);
    }
  }
}

TEST(ExamplesRunTest, TpPpToyOn128RanksShowsThePipelineBubble) {
  const std::string report = ::testing::TempDir() + "myriad_tp_pp_report.json";
  const auto [status, out] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) + " run scenarios/h100-x16.toml --processes 128 --report " +
      report + " -- " + MYRIAD_TP_PP_TOY + " --tp 8 --pp 4 --dp 4 2>&1");
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("[rank 0] pipeline bubble fraction (p-1)/(m+p-1) = 3/11"));
  const nlohmann::json r = ReadJson(report);
  EXPECT_EQ(r["world_size"], 128);
  EXPECT_NEAR(PrintedMs(out, "mean iteration time"), r["iteration_time_us"].get<double>() / 1000,
              0.01 * r["iteration_time_us"].get<double>() / 1000);
  // Stages wait for each other: idle time differs across ranks by more than a micro-batch.
  const auto& idle = r["breakdown_us"]["idle"];
  EXPECT_GT(idle["max"].get<double>() - idle["min"].get<double>(), 1000.0);
}

}  // namespace
