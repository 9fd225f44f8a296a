// Profiles from GPU traces (docs/kernel-timing.md, "Importing a profile"): the Kineto and
// Nsight readers on fixtures written here in each format's schema, the database they build,
// and `myriad profile import` feeding `--profile` and `[timing] profiles`.
#include "myriad/emulator/profiling.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/run_command.h"
#include "timing/profile_database.h"

namespace myriad::emulator::profiling {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string TempPath(const std::string& name) {
  return (fs::path(::testing::TempDir()) / ("myriad_profiling_" + name)).string();
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A PyTorch profiler trace in Kineto's schema (kernels.md 5.2): two calls of a Linear layer
// (aten::linear around aten::addmm, each launching one cuBLAS kernel on the same thread),
// three launches of an elementwise kernel and a kernel whose launch was not recorded.
std::string KinetoTrace() {
  nlohmann::json events = nlohmann::json::array();
  auto add = [&](nlohmann::json e) {
    e["ph"] = "X";
    events.push_back(e);
  };
  const nlohmann::json addmm_args = {
      {"External id", 7},
      {"Input Dims",
       {{1024}, {8192, 4096}, {4096, 1024}, nlohmann::json::array(), nlohmann::json::array()}},
      {"Input type", {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"}}};
  for (int call = 0; call < 2; ++call) {
    const double t0 = 1000.0 * call;
    add({{"cat", "cpu_op"},
         {"name", "aten::linear"},
         {"pid", 7},
         {"tid", 7},
         {"ts", t0},
         {"dur", 100}});
    add({{"cat", "cpu_op"},
         {"name", "aten::addmm"},
         {"pid", 7},
         {"tid", 7},
         {"ts", t0 + 10},
         {"dur", 80},
         {"args", addmm_args}});
    add({{"cat", "cuda_runtime"},
         {"name", "cudaLaunchKernelExC"},
         {"pid", 7},
         {"tid", 7},
         {"ts", t0 + 20},
         {"dur", 5},
         {"args", {{"correlation", 100 + call}}}});
    add({{"cat", "kernel"},
         {"name", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cgasize1x2x1"},
         {"pid", 0},
         {"tid", 7},
         {"ts", t0 + 30},
         {"dur", call == 0 ? 50.5 : 49.5},
         {"args",
          {{"correlation", 100 + call},
           {"grid", {8, 64, 1}},
           {"block", {384, 1, 1}},
           {"shared memory", 213000}}}});
  }
  for (int i = 0; i < 3; ++i) {
    add({{"cat", "cuda_runtime"},
         {"name", "cudaLaunchKernel"},
         {"pid", 7},
         {"tid", 7},
         {"ts", 3000 + 10 * i},
         {"dur", 3},
         {"args", {{"correlation", 200 + i}}}});
    add({{"cat", "kernel"},
         {"name",
          "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>"},
         {"pid", 0},
         {"tid", 7},
         {"ts", 3005 + 10 * i},
         {"dur", 3 + i},
         {"args",
          {{"correlation", 200 + i},
           {"grid", {1024, 1, 1}},
           {"block", {128, 1, 1}},
           {"shared memory", 0}}}});
  }
  add({{"cat", "kernel"},
       {"name", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"},
       {"pid", 0},
       {"tid", 8},
       {"ts", 4000},
       {"dur", 12},
       {"args", {{"grid", {2, 1, 1}}, {"block", {256, 1, 1}}}}});
  nlohmann::json doc = {
      {"schemaVersion", 1},
      {"deviceProperties", {{{"id", 0}, {"name", "NVIDIA H100 80GB HBM3"}, {"numSms", 132}}}},
      {"traceEvents", events}};
  return doc.dump(1);
}

void WriteGzip(const std::string& path, const std::string& text, std::size_t keep) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  if (keep > 0) fs::resize_file(path, keep);  // cut short: a truncated download
}

TEST(KinetoReader, KernelsAndTheMatrixProductsThatLaunchedThem) {
  const std::string path = TempPath("trace.json");
  WriteText(path, KinetoTrace());
  auto read = ReadTrace(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->format, "kineto");
  EXPECT_EQ(read->device_name, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(read->kernels.size(), 6u);
  // The innermost op around each GEMM launch is aten::addmm: M 8192, N 1024, K 4096, bf16.
  ASSERT_EQ(read->gemm_calls.size(), 2u);
  EXPECT_EQ(read->gemm_calls[0].m, 8192);
  EXPECT_EQ(read->gemm_calls[0].n, 1024);
  EXPECT_EQ(read->gemm_calls[0].k, 4096);
  EXPECT_EQ(read->gemm_calls[0].dtype, DataType::kBfloat16);
  EXPECT_EQ(read->kernels[0].gemm_call, 0);
  EXPECT_EQ(read->kernels[1].gemm_call, 1);
  EXPECT_EQ(read->kernels[0].grid, (Dim3{8, 64, 1}));
  EXPECT_EQ(read->kernels[0].shared_mem, 213000u);
  EXPECT_EQ(read->kernels[2].gemm_call, -1);  // elementwise: its op is not a product
  EXPECT_EQ(read->kernels[5].gemm_call, -1);  // no recorded launch

  auto built = BuildProfile({*read}, "h100-sxm", path);
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_EQ(built->kernels, 6u);
  EXPECT_EQ(built->kernel_rows, 3u);
  EXPECT_EQ(built->gemm_calls, 2u);
  EXPECT_EQ(built->gemm_rows, 1u);
  auto rows = timing::ParseProfile(built->database, "built.kdb");
  ASSERT_TRUE(rows.ok()) << rows.status().message() << "\n" << built->database;
  // The elementwise kernel: three samples, median 4; the GEMM: two calls, median 50.
  bool saw_gelu = false, saw_gemm = false;
  for (const auto& r : *rows) {
    if (r.kernel.find("Gelu") != std::string::npos) {
      saw_gelu = true;
      EXPECT_EQ(r.stats.samples, 3u);
      EXPECT_DOUBLE_EQ(r.stats.median_us, 4);
      EXPECT_DOUBLE_EQ(r.stats.min_us, 3);
      EXPECT_DOUBLE_EQ(r.stats.max_us, 5);
    }
    if (r.gemm) {
      saw_gemm = true;
      EXPECT_EQ(r.stats.samples, 2u);
      EXPECT_DOUBLE_EQ(r.stats.median_us, 50);
      EXPECT_EQ(r.gemm->m, 8192);
    }
  }
  EXPECT_TRUE(saw_gelu);
  EXPECT_TRUE(saw_gemm);
  // The same trace gzip-compressed, as the profiler writes `.json.gz`, reads the same.
  WriteGzip(TempPath("trace.json.gz"), KinetoTrace(), 0);
  auto gz = ReadTrace(TempPath("trace.json.gz"));
  ASSERT_TRUE(gz.ok()) << gz.status().message();
  auto built_gz = BuildProfile({*gz}, "h100-sxm", path);
  ASSERT_TRUE(built_gz.ok());
  EXPECT_EQ(built_gz->database, built->database);
}

TEST(KinetoReader, DamagedTracesAreOneLineErrors) {
  const std::string text = KinetoTrace();
  WriteGzip(TempPath("cut.json.gz"), text, 200);
  auto cut = ReadTrace(TempPath("cut.json.gz"));
  ASSERT_FALSE(cut.ok());
  EXPECT_THAT(cut.status().message(), HasSubstr("cut.json.gz: truncated gzip stream"));
  WriteText(TempPath("half.json"), text.substr(0, text.size() / 2));
  auto half = ReadTrace(TempPath("half.json"));
  ASSERT_FALSE(half.ok());
  EXPECT_THAT(half.status().message(), HasSubstr("half.json: not JSON"));
  WriteText(TempPath("other.json"), R"({"events": []})");
  EXPECT_THAT(ReadTrace(TempPath("other.json")).status().message(),
              HasSubstr("no 'traceEvents' list: not a Chrome trace from the PyTorch profiler"));
  WriteText(TempPath("nodur.json"),
            R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1}]})");
  EXPECT_THAT(ReadTrace(TempPath("nodur.json")).status().message(),
              HasSubstr("event 1 (a kernel) has no name, 'ts' or 'dur'"));
  EXPECT_THAT(ReadTrace(TempPath("missing.json")).status().message(),
              HasSubstr("missing.json: cannot read"));
  for (const auto* status : {&cut, &half})
    EXPECT_EQ(status->status().message().find('\n'), std::string::npos);
}

// An Nsight Systems SQLite export, written by hand with its tables' documented columns.
void WriteNsight(const std::string& path, bool with_kernels_table) {
  fs::remove(path);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::string sql =
      "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
      "INSERT INTO StringIds VALUES (1, 'void gemv_kernel<float>(float*)'), (2, 'gemv'),"
      " (3, 'ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn'), (4, 'gemm');"
      "CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT);"
      "INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA A100-SXM4-80GB');";
  if (with_kernels_table)
    sql +=
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,"
        " deviceId INTEGER, streamId INTEGER, correlationId INTEGER, gridX INTEGER, gridY INTEGER,"
        " gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER,"
        " staticSharedMemory INTEGER, dynamicSharedMemory INTEGER, demangledName INTEGER,"
        " shortName INTEGER);"
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES"
        " (1000, 8000, 0, 7, 1, 64, 1, 1, 256, 1, 1, 0, 1024, 1, 2),"
        " (9000, 15500, 0, 7, 2, 64, 1, 1, 256, 1, 1, 0, 1024, 1, 2),"
        " (20000, 120000, 0, 7, 3, 16, 16, 1, 256, 1, 1, 49152, 73728, 3, 4);";
  char* message = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message), SQLITE_OK) << message;
  sqlite3_close(db);
}

TEST(NsightReader, KernelsFromTheCuptiTableWithTheirNames) {
  const std::string path = TempPath("report.sqlite");
  WriteNsight(path, true);
  auto read = ReadTrace(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->format, "nsight");
  EXPECT_EQ(read->device_name, "NVIDIA A100-SXM4-80GB");
  ASSERT_EQ(read->kernels.size(), 3u);
  EXPECT_EQ(read->kernels[0].name, "void gemv_kernel<float>(float*)");
  EXPECT_DOUBLE_EQ(read->kernels[0].duration_us, 7);
  EXPECT_EQ(read->kernels[2].grid, (Dim3{16, 16, 1}));
  EXPECT_EQ(read->kernels[2].shared_mem, 73728u);  // the launch's dynamic shared memory
  EXPECT_EQ(*GpuKeyForDevice(read->device_name), "a100-sxm-80gb");
  auto built = BuildProfile({*read}, "a100-sxm-80gb", path);
  ASSERT_TRUE(built.ok());
  EXPECT_EQ(built->kernel_rows, 2u);
  // A database without the kernels' table is not an export of a CUDA run.
  WriteNsight(TempPath("nocuda.sqlite"), false);
  EXPECT_THAT(ReadTrace(TempPath("nocuda.sqlite")).status().message(),
              HasSubstr("no CUPTI_ACTIVITY_KIND_KERNEL and StringIds tables"));
  EXPECT_THAT(GpuKeyForDevice("Tesla V100-SXM2-16GB").status().message(),
              HasSubstr("the trace's GPU 'Tesla V100-SXM2-16GB' is none of the catalog's: give "
                        "--gpu KEY"));
}

// `myriad profile import`, then a replay whose GEMM (cuBLAS's column-major 1024 x 8192 x 4096,
// the trace's 8192 x 1024) is timed by the profile, named in the report's kernel timing, via
// --profile and via [timing] profiles.
TEST(ProfileCommand, ImportThenTimeAReplayWithTheProfile) {
  const std::string trace = TempPath("cmd_trace.json");
  WriteText(trace, KinetoTrace());
  const std::string kdb = TempPath("cmd.kdb");
  const auto [status, out] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) + " profile import " + trace + " -o " + kdb + " 2>&1");
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("6 kernels (3 rows by name and launch shape) and 2 GEMM calls (1 "
                             "shapes), 0.124 ms of kernel time, from 1 trace (kineto), for "
                             "h100-sxm"));
  // The same figures with --json, as every command that prints figures has it.
  const auto [jstatus, jout] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) + " profile import " + trace + " -o " + kdb + " --json 2>&1");
  ASSERT_EQ(jstatus, 0) << jout;
  EXPECT_THAT(jout, HasSubstr("\"kernels\": 6,"));
  EXPECT_THAT(jout, HasSubstr("\"gemm_rows\": 1,"));
  EXPECT_THAT(jout, HasSubstr("\"gpu\": \"h100-sxm\","));
  const std::string replay = TempPath("gemm.jsonl");
  WriteText(replay,
            "{\"myriad_trace\": 1, \"ranks\": 1}\n"
            "{\"rank\": 0, \"op\": \"kernel\", \"name\": \"cublas_gemm_bf16bf16bf16_32f_NN\", "
            "\"gemm\": {\"m\": 1024, \"n\": 8192, \"k\": 4096}}\n");
  const std::string report = TempPath("gemm_report.json");
  const auto [rstatus, rout] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) + " replay " + replay +
      " --scenario scenarios/dgx-h100.toml --profile " + kdb + " --report " + report + " 2>&1");
  ASSERT_EQ(rstatus, 0) << rout;
  EXPECT_THAT(rout, HasSubstr("profile " + kdb));
  std::ifstream in(report);
  const nlohmann::json json = nlohmann::json::parse(in);
  bool timed = false;
  for (const auto& p : json["kernel_timing"])
    if (p["provider"] == "profile " + kdb) {
      timed = true;
      EXPECT_EQ(p["ops"], 1);
      EXPECT_DOUBLE_EQ(p["time_us"].get<double>(), 50.0);
    }
  EXPECT_TRUE(timed) << json["kernel_timing"].dump();
  // The same from the scenario's [timing] profiles, the path relative to the scenario.
  const std::string scenario = TempPath("with_profile.toml");
  WriteText(scenario, "include = \"" + fs::absolute("scenarios/dgx-h100.toml").string() +
                          "\"\n[timing]\nprofiles = [\"" + fs::path(kdb).filename().string() +
                          "\"]\n");
  const auto [sstatus, sout] = myriad::testing::RunCommand(
      std::string(MYRIAD_BINARY) + " replay " + replay + " --scenario " + scenario + " 2>&1");
  ASSERT_EQ(sstatus, 0) << sout;
  EXPECT_THAT(sout, HasSubstr("profile " + kdb));
  // Errors: no output file; a trace from a GPU outside the catalog without --gpu.
  EXPECT_EQ(
      myriad::testing::RunCommand(std::string(MYRIAD_BINARY) + " profile import " + trace + " 2>&1")
          .first,
      2);
}

// What the recorder writes (interpose/recorder/): per kernel and launch shape, the launches
// and the first durations in ns; read like any trace.
TEST(RecordingReader, KernelsFromTheRecorder) {
  const std::string path = TempPath("recording.txt");
  WriteText(path,
            "# myriad-kernel-record v1\n"
            "_Z4busyPf\t1024,1,1\t256,1,1\t0\t40\t2000,2100,1900\n"
            "_Z4stepPf\t8,1,1\t128,1,1\t4096\t1\t7500\n");
  auto read = ReadTrace(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->format, "cupti");
  ASSERT_EQ(read->kernels.size(), 4u);
  EXPECT_EQ(read->kernels[0].grid, (Dim3{1024, 1, 1}));
  EXPECT_DOUBLE_EQ(read->kernels[3].duration_us, 7.5);
  EXPECT_EQ(read->kernels[3].shared_mem, 4096u);
  auto built = BuildProfile({*read}, "h100-sxm", path);
  ASSERT_TRUE(built.ok());
  EXPECT_EQ(built->kernel_rows, 2u);
  auto rows = timing::ParseProfile(built->database, "r.kdb");
  ASSERT_TRUE(rows.ok());
  EXPECT_DOUBLE_EQ((*rows)[0].stats.median_us, 2);
  WriteText(TempPath("bad_recording.txt"),
            "# myriad-kernel-record v1\n_Z4busyPf\t1024,1\t256,1,1\t0\t40\t2000\n");
  EXPECT_THAT(ReadTrace(TempPath("bad_recording.txt")).status().message(),
              HasSubstr("bad_recording.txt:2: bad grid"));
}

TEST(ProfileCommand, RecordWithoutAGpuSaysSo) {
  const auto [status, out] =
      myriad::testing::RunCommand(std::string(MYRIAD_BINARY) + " profile record -- true 2>&1");
  if (fs::exists("/dev/nvidiactl")) GTEST_SKIP() << "this machine has an NVIDIA GPU";
  EXPECT_EQ(status, 2) << out;
  EXPECT_THAT(out, HasSubstr("myriad profile record: no NVIDIA GPU here"));
  EXPECT_EQ(out.find('\n'), out.size() - 1);  // one line
}

}  // namespace
}  // namespace myriad::emulator::profiling
