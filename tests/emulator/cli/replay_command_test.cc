// `myriad replay` and `myriad trace convert` end to end, in-process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "tests/support/run_command.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MYRIAD_ASAN 1
#endif
#endif

namespace myriad::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Output {
  int status;
  std::string out;
  std::string err;
};

Output Call(int (*command)(const std::vector<std::string>&, std::ostream&, std::ostream&),
            const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int status = command(args, out, err);
  return {status, out.str(), err.str()};
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "myriad_replay_test_" + name;
}

constexpr const char* kOverlap = "tests/emulator/cli/data/overlap.jsonl";

// Regenerate after an intended change (from the repository root):
//   ./build/myriad replay tests/emulator/cli/data/overlap.jsonl --scenario scenarios/dgx-h100.toml
//       --report tests/emulator/cli/golden/overlap-report.json
//       > tests/emulator/cli/golden/overlap-summary.txt
TEST(ReplayCommandTest, SummaryAndReportMatchGoldens) {
  const std::string report = TempPath("report.json");
  const auto r =
      Call(RunReplay, {kOverlap, "--scenario", "scenarios/dgx-h100.toml", "--report", report});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, ReadFile("tests/emulator/cli/golden/overlap-summary.txt"));
  EXPECT_EQ(ReadFile(report), ReadFile("tests/emulator/cli/golden/overlap-report.json"));
}

TEST(ReplayCommandTest, ReportAndTimelineAreByteIdenticalAcrossRuns) {
  std::string files[2][2];
  for (int run = 0; run < 2; ++run) {
    files[run][0] = TempPath("det_report" + std::to_string(run) + ".json");
    files[run][1] = TempPath("det_timeline" + std::to_string(run) + ".json");
    const auto r = Call(RunReplay, {kOverlap, "--scenario", "scenarios/dgx-h100.toml", "--report",
                                    files[run][0], "--timeline", files[run][1]});
    ASSERT_EQ(r.status, 0) << r.err;
  }
  EXPECT_EQ(ReadFile(files[0][0]), ReadFile(files[1][0]));
  EXPECT_EQ(ReadFile(files[0][1]), ReadFile(files[1][1]));
  const std::string timeline = ReadFile(files[0][1]);
  EXPECT_THAT(timeline, HasSubstr("\"traceEvents\""));
  EXPECT_THAT(timeline, HasSubstr("\"name\": \"rank 1\""));
  EXPECT_THAT(timeline, HasSubstr("allreduce 67108864 B Ring/Simple"));
}

TEST(ReplayCommandTest, TheSameTraceComparesTwoClusters) {
  const auto h100 = Call(RunReplay, {kOverlap, "--scenario", "scenarios/dgx-h100.toml"});
  const auto a100 = Call(RunReplay, {kOverlap, "--scenario", "scenarios/dgx-a100.toml"});
  ASSERT_EQ(h100.status, 0) << h100.err;
  ASSERT_EQ(a100.status, 0) << a100.err;
  EXPECT_THAT(a100.out, HasSubstr("on dgx-a100"));
  EXPECT_NE(h100.out, a100.out);  // the AllReduce is slower on A100's NVLink
}

TEST(ReplayCommandTest, RunFailuresExitOneWithTheError) {
  const auto r = Call(RunReplay, {"tests/emulator/cli/data/mismatch.jsonl", "--scenario",
                                  "scenarios/dgx-h100.toml"});
  EXPECT_EQ(r.status, kExitFailure);
  EXPECT_EQ(r.err,
            "myriad: error: mismatched collective #0 on communicator 'dp': rank 0 called "
            "allreduce count=1024 dtype=float32 redop=sum on 'dp', rank 1 called allreduce "
            "count=2048 dtype=float32 redop=sum on 'dp'\n");
}

TEST(ReplayCommandTest, BadInputExitsTwo) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{kOverlap}, "missing --scenario"},
      {{"--scenario", "scenarios/dgx-h100.toml"}, "missing TRACE"},
      {{"no-such.jsonl", "--scenario", "scenarios/dgx-h100.toml"}, "no-such.jsonl"},
      {{kOverlap, "--scenario", "no-such.toml"}, "no-such.toml"},
      {{kOverlap, "--scenario", "scenarios/dgx-h100.toml", "--fidelity", "packet"},
       "--fidelity must be analytical or flow, got 'packet'"},
      {{kOverlap, "--scenario", "scenarios/dgx-h100.toml", "--overlap-slowdown", "-1"},
       "--overlap-slowdown needs a number >= 0"},
      {{kOverlap, "--scenario", "scenarios/dgx-h100.toml", "--kernel-profile", "nope.kdb"},
       "nope.kdb"},
  };
  for (const Case& c : cases) {
    const auto r = Call(RunReplay, c.args);
    EXPECT_NE(r.status, 0) << c.message;
    EXPECT_THAT(r.err, HasSubstr(c.message));
  }
  EXPECT_EQ(Call(RunReplay, {kOverlap}).status, kExitBadInput);
}

// traces/flow-contention.jsonl under the flow model: "a" and "b" share NICs and each take
// twice as long as "c"; the analytical model times them alike. The report and the timeline
// say so.
TEST(ReplayCommandTest, FlowFidelityShowsContentionInReportAndTimeline) {
  const std::string report = TempPath("flow-report.json");
  const std::string timeline = TempPath("flow-timeline.json");
  const auto r =
      Call(RunReplay, {"traces/flow-contention.jsonl", "--scenario", "scenarios/h100-x16.toml",
                       "--fidelity", "flow", "--report", report, "--timeline", timeline});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("collectives (network model: flow;"));
  EXPECT_THAT(r.out, HasSubstr("2.00x  Ring/Simple"));
  const std::string json = ReadFile(report);
  EXPECT_THAT(json, HasSubstr("\"network_fidelity\": \"flow\""));
  EXPECT_THAT(json, HasSubstr("\"comm\": \"a\", \"op\": \"allreduce\", \"bytes\": 1073741824, "
                              "\"calls\": 1, \"time_us\": 44775.643"));
  EXPECT_THAT(json, HasSubstr("\"slowdown\": 1.0000}"));
  EXPECT_THAT(ReadFile(timeline), HasSubstr("(flow; 22406.021 us alone, x2.00)"));
  const auto analytical =
      Call(RunReplay, {"traces/flow-contention.jsonl", "--scenario", "scenarios/h100-x16.toml"});
  ASSERT_EQ(analytical.status, 0) << analytical.err;
  EXPECT_THAT(analytical.out, HasSubstr("collectives (network model: analytical;"));
  EXPECT_THAT(analytical.out, Not(HasSubstr("slowdown")));
}

TEST(ReplayCommandTest, KernelProfilesTimeKernelsWithoutDurations) {
  const auto r = Call(RunReplay, {kOverlap, "--scenario", "scenarios/dgx-h100.toml",
                                  "--kernel-profile", "profiles/h100-example.kdb"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("profile profiles/h100-example.kdb"));
}

TEST(ReplayCommandTest, LogLinesCarryVirtualTime) {
  const auto [status, log] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) + " replay " + kOverlap +
      " --scenario scenarios/dgx-h100.toml --log-level debug 2>&1 >/dev/null");
  EXPECT_EQ(status, 0);
  // The AllReduce starts when both ranks' backward passes are done, at 1202 us.
  EXPECT_THAT(log, HasSubstr("[     1202.000000 us] [debug] allreduce count=33554432 "
                             "dtype=bfloat16 redop=sum on 'dp' (#0): all 2 ranks arrived"));
}

// Virtual time is bounded (2^62 ps, about 53 days): durations past it, or sums that would
// pass it, are an error naming the rank and the op, never a wrapped-around total; a long but
// legal run gets its true figure.
TEST(ReplayCommandTest, TimesPastTheClocksBoundAreAnErrorNamingTheOp) {
  const std::string header = "{\"myriad_trace\": 1, \"ranks\": 1}\n";
  const auto run = [&](const std::string& name, const std::string& ops) {
    const std::string path = TempPath(name);
    std::ofstream(path) << header << ops;
    return Call(RunReplay, {path, "--scenario", "scenarios/dgx-h100.toml"});
  };
  const auto kernel = [](const char* name, const char* us) {
    return std::string("{\"rank\": 0, \"op\": \"kernel\", \"name\": \"") + name +
           "\", \"duration_us\": " + us + "}\n";
  };
  const auto sum = run("sum.jsonl", kernel("a", "4e12") + kernel("b", "4e12"));
  EXPECT_EQ(sum.status, kExitFailure);
  EXPECT_THAT(sum.err, HasSubstr("rank 0: virtual time passes Myriad's bound of 2^62 ps (about "
                                 "53 days) at kernel 'b'"));
  const auto one = run("one.jsonl", kernel("a", "9e12"));
  EXPECT_EQ(one.status, kExitFailure);
  EXPECT_THAT(one.err, HasSubstr("at kernel 'a'"));
  const auto gemm = run("gemm.jsonl",
                        "{\"rank\": 0, \"op\": \"kernel\", \"name\": \"g\", \"gemm\": {\"m\": "
                        "9007199254740992, \"n\": 9007199254740992, \"k\": 9007199254740992}}\n");
  EXPECT_EQ(gemm.status, kExitFailure);  // it was a division by zero (SIGFPE)
  EXPECT_THAT(gemm.err, HasSubstr("at kernel 'g'"));
  // A collective's count x element size wrapped around 2^64 to nothing (total time 0).
  const std::string huge =
      ", \"coll\": \"allreduce\", \"count\": 9223372036854775807, "
      "\"dtype\": \"float32\"}\n";
  const std::string two =
      "{\"myriad_trace\": 1, \"ranks\": 2}\n"
      "{\"op\": \"comm\", \"comm\": \"dp\", \"ranks\": [0, 1]}\n";
  const std::string count_path = TempPath("count.jsonl");
  std::ofstream(count_path) << two << "{\"rank\": 0, \"op\": \"collective\", \"comm\": \"dp\""
                            << huge << "{\"rank\": 1, \"op\": \"collective\", \"comm\": \"dp\""
                            << huge;
  const auto count = Call(RunReplay, {count_path, "--scenario", "scenarios/dgx-h100.toml"});
  EXPECT_EQ(count.status, kExitFailure);
  EXPECT_THAT(count.err, HasSubstr("a buffer of count 9223372036854775807 x 4 bytes is out of "
                                   "range (at most 64 TiB per rank)"));
  const auto legal = run("legal.jsonl", kernel("a", "1e12") + kernel("b", "1e12"));
  ASSERT_EQ(legal.status, 0) << legal.err;
  EXPECT_THAT(legal.out, HasSubstr("total time       2000000000002.000 us"));
}

// Every other output writer (reports, timelines, gate summaries) also writes into what is
// there: a symbolic link stays a link to the file that gets the text, a FIFO is written into
// (read by whoever reads it), /dev/null stays a device.
TEST(ReplayCommandTest, EveryOutputWriterLeavesNonRegularFilesAlone) {
  const std::string target = TempPath("report_target.json");
  const std::string link = TempPath("report_link.json");
  std::remove(target.c_str());
  std::remove(link.c_str());
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  const std::string fifo = TempPath("timeline_fifo");
  std::remove(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto timeline = std::async(std::launch::async, [&] { return ReadFile(fifo); });
  const auto replay = Call(RunReplay, {kOverlap, "--scenario", "scenarios/dgx-h100.toml",
                                       "--report", link, "--timeline", fifo});
  ASSERT_EQ(replay.status, 0) << replay.err;
  EXPECT_THAT(timeline.get(), HasSubstr("traceEvents"));
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_THAT(ReadFile(target), HasSubstr("\"iteration_time_us\""));

  const std::string markdown_target = TempPath("gate_target.md");
  const std::string markdown_link = TempPath("gate_link.md");
  std::remove(markdown_target.c_str());
  std::remove(markdown_link.c_str());
  ASSERT_EQ(::symlink(markdown_target.c_str(), markdown_link.c_str()), 0);
  const auto gate = Call(RunGate, {"--baseline", target, "--current", target, "--markdown",
                                   markdown_link, "--benchmark-json", "/dev/null"});
  ASSERT_EQ(gate.status, 0) << gate.err;
  ASSERT_EQ(::lstat(markdown_link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_FALSE(ReadFile(markdown_target).empty());
  ASSERT_EQ(::lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

// A world too large for the address space the process may use is refused before anything is
// built, with what it needs and how to make it fit (1,048,576 ranks reserve 80 GiB).
TEST(ReplayCommandTest, AWorldThatCannotFitIsRefusedUpFront) {
#if defined(__SANITIZE_ADDRESS__) || defined(MYRIAD_ASAN)
  GTEST_SKIP() << "AddressSanitizer's shadow memory does not fit under ulimit -v";
#endif
  const std::string scenario = TempPath("million.toml");
  std::ofstream(scenario) << "include = \"" << MYRIAD_SOURCE_DIR
                          << "/scenarios/h100-x128.toml\"\n[cluster]\nnodes = 131072\n";
  const std::string trace = TempPath("million.jsonl");
  std::ofstream(trace) << "{\"myriad_trace\": 1, \"ranks\": 1048576}\n"
                       << "{\"rank\": 0, \"op\": \"kernel\", \"name\": \"k\", "
                          "\"duration_us\": 5}\n";
  const auto [status, out] =
      myriad::testing::RunCommand("ulimit -v 4000000 && " + std::string(MYRIAD_BINARY) +
                                  " replay " + trace + " --scenario " + scenario + " 2>&1");
  EXPECT_EQ(status, kExitFailure) << out;
  EXPECT_THAT(out, HasSubstr("1048576 ranks need about 80.0 GiB of address space (64 KiB of "
                             "fiber stack and about 16 KiB of state each), more than this "
                             "process may use (3.8 GiB, ulimit -v)"))
      << out;
}

TEST(TraceCommandTest, ConvertsToBinaryAndBackWithTheSamePrediction) {
  const std::string binary = TempPath("overlap.mtrace");
  const std::string jsonl = TempPath("overlap.jsonl");
  ASSERT_EQ(Call(RunTrace, {"convert", kOverlap, binary}).status, 0);
  ASSERT_EQ(Call(RunTrace, {"convert", binary, jsonl}).status, 0);
  const auto original = Call(RunReplay, {kOverlap, "--scenario", "scenarios/dgx-h100.toml"});
  const auto from_binary = Call(RunReplay, {binary, "--scenario", "scenarios/dgx-h100.toml"});
  const auto from_jsonl = Call(RunReplay, {jsonl, "--scenario", "scenarios/dgx-h100.toml"});
  ASSERT_EQ(from_binary.status, 0) << from_binary.err;
  // Only the first line names the trace file.
  auto body = [](const std::string& s) { return s.substr(s.find('\n')); };
  EXPECT_EQ(body(original.out), body(from_binary.out));
  EXPECT_EQ(body(original.out), body(from_jsonl.out));
  EXPECT_EQ(Call(RunTrace, {"convert", kOverlap}).status, kExitBadInput);
}

// An output that is not a regular file is written into, never replaced: a FIFO gets the
// trace (read by whoever reads it), a symbolic link keeps pointing at the file it names, which
// gets the trace, and /dev/null stays a device; a directory is refused.
TEST(TraceCommandTest, OutputsThatAreNotRegularFilesAreWrittenIntoNotReplaced) {
  const std::string reference = TempPath("reference.mtrace");
  ASSERT_EQ(Call(RunTrace, {"convert", kOverlap, reference}).status, 0);
  const std::string expected = ReadFile(reference);

  const std::string fifo = TempPath("fifo");
  std::remove(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto read = std::async(std::launch::async, [&] { return ReadFile(fifo); });
  EXPECT_EQ(Call(RunTrace, {"convert", kOverlap, fifo}).status, 0);
  EXPECT_EQ(read.get(), expected);
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));

  for (const char* format : {"binary", "jsonl"}) {
    const std::string target = TempPath(std::string("target.") + format);
    const std::string link = TempPath(std::string("link.") + format);
    std::remove(target.c_str());
    std::remove(link.c_str());
    ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);  // dangling until written
    const std::string input = std::string(format) == "binary" ? kOverlap : reference;
    ASSERT_EQ(Call(RunTrace, {"convert", input, link}).status, 0);
    ASSERT_EQ(::lstat(link.c_str(), &st), 0);
    EXPECT_TRUE(S_ISLNK(st.st_mode)) << format;
    EXPECT_FALSE(ReadFile(target).empty()) << format;
    ASSERT_EQ(Call(RunTrace, {"convert", input, link}).status, 0);  // over an existing target
    ASSERT_EQ(::lstat(link.c_str(), &st), 0);
    EXPECT_TRUE(S_ISLNK(st.st_mode)) << format;
  }

  EXPECT_EQ(Call(RunTrace, {"convert", kOverlap, "/dev/null"}).status, 0);
  ASSERT_EQ(::lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));

  // As inputs, such files are refused (/dev/zero never ends).
  const auto zero = Call(RunReplay, {"/dev/zero", "--scenario", "scenarios/dgx-h100.toml"});
  EXPECT_EQ(zero.status, kExitBadInput);
  EXPECT_THAT(zero.err, HasSubstr("/dev/zero: is not a regular file (a FIFO, device or socket)"));

  const auto directory = Call(RunTrace, {"convert", kOverlap, ::testing::TempDir()});
  EXPECT_EQ(directory.status, kExitFailure);
  EXPECT_THAT(directory.err, HasSubstr("is a directory"));
}

}  // namespace
}  // namespace myriad::cli
