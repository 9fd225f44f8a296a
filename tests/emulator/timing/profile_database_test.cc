// Profile database format (docs/kernel-timing.md "Profile databases") and lookup rules.
#include "timing/profile_database.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

namespace myriad::emulator::timing {
namespace {

const std::string kMagic = "# myriad-kernel-profile v1\n";
const std::string kHeader =
    "gpu\tkernel\tgrid\tblock\tshared_mem\tsamples\tmean_us\tmedian_us\tmin_us\tmax_us\t"
    "stddev_us\n";
const std::string kColumns =
    "gpu kernel grid block shared_mem samples mean_us median_us min_us max_us stddev_us";

// A row whose statistics are all `median_us` (consistent by construction).
std::string Row(const std::string& gpu, const std::string& kernel, const std::string& grid,
                const std::string& block, const std::string& smem, const std::string& median) {
  return gpu + "\t" + kernel + "\t" + grid + "\t" + block + "\t" + smem + "\t10\t" + median + "\t" +
         median + "\t" + median + "\t" + median + "\t0\n";
}

std::string ParseError(const std::string& text) {
  Result<std::vector<ProfileRow>> rows = ParseProfile(text, "p.kdb");
  EXPECT_FALSE(rows.ok()) << "parsed: " << text;
  return rows.ok() ? "" : rows.status().message();
}

Op Kernel(NameTable& names, const std::string& name, Dim3 grid, Dim3 block,
          std::uint32_t smem = 0) {
  Op op;
  op.kind = OpKind::kKernel;
  op.name = names.Intern(name);
  op.grid = grid;
  op.block = block;
  op.shared_mem = smem;
  return op;
}

TEST(ProfileFormat, ParsesRowsWithCppNamesCommentsBlankLinesAndCrlf) {
  const std::string name =
      "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
      "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)";
  const std::string text = kMagic + "# a comment\n\n" + kHeader + "# another\n" + "h100-sxm\t" +
                           name + "\t132,2\t256,1,1\t49152\t200\t12.5\t12.25\t" +
                           "11.75\t20\t0.5\r\n" +
                           "h200-sxm\tflash fwd (bf16)\t*\t*\t*\t3\t1\t1\t1\t1\t0\n";
  Result<std::vector<ProfileRow>> rows = ParseProfile(text, "p.kdb");
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 2u);
  const ProfileRow& r = (*rows)[0];
  EXPECT_EQ(r.gpu, "h100-sxm");
  EXPECT_EQ(r.kernel, name);
  EXPECT_FALSE(r.any_shape);
  EXPECT_EQ(r.grid, (Dim3{132, 2, 1}));
  EXPECT_EQ(r.block, (Dim3{256, 1, 1}));
  EXPECT_EQ(r.shared_mem, 49152u);
  EXPECT_EQ(r.stats.samples, 200u);
  EXPECT_DOUBLE_EQ(r.stats.mean_us, 12.5);
  EXPECT_DOUBLE_EQ(r.stats.median_us, 12.25);
  EXPECT_DOUBLE_EQ(r.stats.min_us, 11.75);
  EXPECT_DOUBLE_EQ(r.stats.max_us, 20);
  EXPECT_DOUBLE_EQ(r.stats.stddev_us, 0.5);
  EXPECT_EQ(r.line, 6);
  EXPECT_EQ((*rows)[1].kernel, "flash fwd (bf16)");
  EXPECT_TRUE((*rows)[1].any_shape);
  EXPECT_EQ((*rows)[1].line, 7);
}

TEST(ProfileFormat, HeaderOnlyIsAnEmptyDatabase) {
  Result<std::vector<ProfileRow>> rows = ParseProfile(kMagic + kHeader, "p.kdb");
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  EXPECT_TRUE(rows->empty());
}

TEST(ProfileFormat, ErrorsNameFileAndLine) {
  const std::string ok_row = Row("h100-sxm", "k", "1", "32", "0", "5");
  EXPECT_EQ(ParseError(""),
            "p.kdb:1: not a Myriad kernel profile: the first line must be "
            "'# myriad-kernel-profile v2'");
  EXPECT_EQ(ParseError("gpu\tkernel\n"),
            "p.kdb:1: not a Myriad kernel profile: the first line must be "
            "'# myriad-kernel-profile v2'");
  EXPECT_EQ(ParseError("# myriad-kernel-profile v3\n" + kHeader),
            "p.kdb:1: unsupported profile version 'v3' (this Myriad reads v1 and v2)");
  EXPECT_EQ(ParseError(kMagic + ok_row),
            "p.kdb:2: expected the column header line (tab-separated): " + kColumns);
  EXPECT_EQ(ParseError(kMagic + "# only comments\n"),
            "p.kdb:2: no column header line: " + kColumns);
  EXPECT_EQ(ParseError(kMagic + kHeader + ok_row + "h100-sxm\tk\t1\t32\t0\t10\t5\t5\t5\t5\n"),
            "p.kdb:4: expected 11 tab-separated fields, found 10");
  // A kernel name holding a tab cannot be written: it shifts every later field.
  EXPECT_EQ(ParseError(kMagic + kHeader + Row("h100-sxm", "a\tb", "1", "32", "0", "5")),
            "p.kdb:3: expected 11 tab-separated fields, found 12");
  EXPECT_EQ(ParseError(kMagic + kHeader + Row("h100-sxm", "", "1", "32", "0", "5")),
            "p.kdb:3: empty kernel name");
  EXPECT_EQ(ParseError(kMagic + kHeader + Row("h100", "k", "1", "32", "0", "5")),
            "p.kdb:3: unknown GPU 'h100' (known: a100-sxm-80gb, a100-sxm-40gb, h100-sxm, h200-sxm, b200, gb200)");
  EXPECT_EQ(ParseError(kMagic + kHeader + Row("h100-sxm", "k", "0,1,1", "32", "0", "5")),
            "p.kdb:3: grid: expected X, X,Y or X,Y,Z with positive integers, or '*', found "
            "'0,1,1'");
  EXPECT_EQ(ParseError(kMagic + kHeader + Row("h100-sxm", "k", "1", "1,2,3,4", "0", "5")),
            "p.kdb:3: block: expected X, X,Y or X,Y,Z with positive integers, or '*', found "
            "'1,2,3,4'");
  EXPECT_EQ(ParseError(kMagic + kHeader + Row("h100-sxm", "k", "1", "32 ", "0", "5")),
            "p.kdb:3: block: expected X, X,Y or X,Y,Z with positive integers, or '*', found "
            "'32 '");
  EXPECT_EQ(ParseError(kMagic + kHeader + Row("h100-sxm", "k", "*", "*", "0", "5")),
            "p.kdb:3: shape '*' must be given for grid, block and shared_mem together");
  EXPECT_EQ(ParseError(kMagic + kHeader + Row("h100-sxm", "k", "1", "32", "-1", "5")),
            "p.kdb:3: shared_mem: expected bytes (an integer >= 0) or '*', found '-1'");
  EXPECT_EQ(ParseError(kMagic + kHeader + "h100-sxm\tk\t1\t32\t0\t0\t5\t5\t5\t5\t0\n"),
            "p.kdb:3: samples: expected a positive integer, found '0'");
  EXPECT_EQ(ParseError(kMagic + kHeader + Row("h100-sxm", "k", "1", "32", "0", "-5")),
            "p.kdb:3: mean_us: expected a number of microseconds >= 0, found '-5'");
  EXPECT_EQ(ParseError(kMagic + kHeader + "h100-sxm\tk\t1\t32\t0\t1\t5\t5\t5\t5\tnan\n"),
            "p.kdb:3: stddev_us: expected a number of microseconds >= 0, found 'nan'");
  EXPECT_EQ(ParseError(kMagic + kHeader + "h100-sxm\tk\t1\t32\t0\t9\t5\t6\t4\t5.5\t1\n"),
            "p.kdb:3: statistics out of order: need min_us <= median_us <= max_us and "
            "min_us <= mean_us <= max_us");
  EXPECT_EQ(ParseError(kMagic + kHeader + ok_row + "# same key again\n" +
                       Row("h100-sxm", "k", "1,1,1", "32,1", "0", "7")),
            "p.kdb:5: duplicate row for GPU 'h100-sxm', kernel 'k', shape 1,1,1 32,1,1 0 "
            "(first at line 3)");
  EXPECT_EQ(ParseError(kMagic + kHeader + Row("h100-sxm", "k", "*", "*", "*", "1") +
                       Row("h100-sxm", "k", "*", "*", "*", "2")),
            "p.kdb:4: duplicate row for GPU 'h100-sxm', kernel 'k', shape * (first at line 3)");
}

TEST(ProfileFormat, SameKernelOnAnotherGpuIsNotADuplicate) {
  Result<std::vector<ProfileRow>> rows =
      ParseProfile(kMagic + kHeader + Row("h100-sxm", "k", "1", "32", "0", "5") +
                       Row("h200-sxm", "k", "1", "32", "0", "4"),
                   "p.kdb");
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  EXPECT_EQ(rows->size(), 2u);
}

TEST(ProfileFormat, ReadProfileReportsAMissingFile) {
  Result<std::vector<ProfileRow>> rows = ReadProfile("/nonexistent/dir/x.kdb");
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().message(),
            "/nonexistent/dir/x.kdb: cannot read profile database: No such file or directory");
}

TEST(ProfileFormat, ReadProfileReadsAFile) {
  const std::string path = ::testing::TempDir() + "/read_profile_test.kdb";
  std::ofstream(path) << kMagic << kHeader << Row("h100-sxm", "k", "1", "32", "0", "5");
  Result<std::vector<ProfileRow>> rows = ReadProfile(path);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].kernel, "k");
}

std::vector<ProfileRow> Rows(const std::string& body) {
  Result<std::vector<ProfileRow>> rows = ParseProfile(kMagic + kHeader + body, "p.kdb");
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  return rows.ok() ? *rows : std::vector<ProfileRow>{};
}

TEST(ProfileLookup, UsesTheMedianOfTheExactShape) {
  const std::vector<ProfileRow> rows =
      Rows("h100-sxm\tgemm\t132\t384\t1024\t50\t9\t7.5\t7\t40\t4\n" +
           Row("h100-sxm", "gemm", "132", "384", "0", "3"));
  ProfileProvider p("profile x", rows, "h100-sxm");
  NameTable names;
  EXPECT_EQ(p.name(), "profile x");
  EXPECT_EQ(p.Duration(Kernel(names, "gemm", {132, 1, 1}, {384, 1, 1}, 1024), names),
            FromMicros(7.5));
  EXPECT_EQ(p.Duration(Kernel(names, "gemm", {132, 1, 1}, {384, 1, 1}, 0), names), FromMicros(3));
}

TEST(ProfileLookup, ExactBeatsWildcardBeatsOtherShapes) {
  const std::vector<ProfileRow> rows =
      Rows(Row("h100-sxm", "k", "10", "100", "0", "5") + Row("h100-sxm", "k", "*", "*", "*", "8") +
           Row("h100-sxm", "j", "10", "100", "0", "5"));
  ProfileProvider p("profile x", rows, "h100-sxm");
  NameTable names;
  EXPECT_EQ(p.Duration(Kernel(names, "k", {10, 1, 1}, {100, 1, 1}), names), FromMicros(5));
  EXPECT_EQ(p.Duration(Kernel(names, "k", {10, 1, 1}, {100, 1, 1}, 16), names), FromMicros(8));
  EXPECT_EQ(p.Duration(Kernel(names, "k", {20, 1, 1}, {100, 1, 1}), names), FromMicros(8));
  // Without a wildcard row, another shape of the same name answers (here the only one).
  EXPECT_EQ(p.Duration(Kernel(names, "j", {20, 1, 1}, {100, 1, 1}), names), FromMicros(5));
}

TEST(ProfileLookup, InterpolatesInTotalThreadsAcrossOtherShapes) {
  // 1,000 threads: 10 us; 3,000 threads: 30 us (as 30 x 100 and as 3 x 1,000: mean 30).
  const std::vector<ProfileRow> rows = Rows(Row("h100-sxm", "k", "10", "100", "0", "10") +
                                            Row("h100-sxm", "k", "30", "100", "0", "25") +
                                            Row("h100-sxm", "k", "3", "1000", "0", "35"));
  ProfileProvider p("profile x", rows, "h100-sxm");
  NameTable names;
  // Between two measured thread counts: on the line through them.
  EXPECT_EQ(p.Duration(Kernel(names, "k", {20, 1, 1}, {100, 1, 1}), names), FromMicros(20));
  EXPECT_EQ(p.Duration(Kernel(names, "k", {1, 15, 1}, {100, 1, 1}, 4096), names), FromMicros(15));
  // The same thread count as measured shapes, in another arrangement: their mean.
  EXPECT_EQ(p.Duration(Kernel(names, "k", {6, 1, 1}, {500, 1, 1}), names), FromMicros(30));
  // Below the smallest: the smallest's duration, not scaled down.
  EXPECT_EQ(p.Duration(Kernel(names, "k", {1, 1, 1}, {100, 1, 1}), names), FromMicros(10));
  // Above the largest: the last segment's line continues (0.01 us per thread).
  EXPECT_EQ(p.Duration(Kernel(names, "k", {50, 1, 1}, {100, 1, 1}), names), FromMicros(50));
}

TEST(ProfileLookup, ExtrapolationNeverGoesDownAndOneShapeIsConstant) {
  const std::vector<ProfileRow> rows = Rows(Row("h100-sxm", "dec", "10", "100", "0", "10") +
                                            Row("h100-sxm", "dec", "20", "100", "0", "8") +
                                            Row("h100-sxm", "one", "10", "100", "0", "4"));
  ProfileProvider p("profile x", rows, "h100-sxm");
  NameTable names;
  EXPECT_EQ(p.Duration(Kernel(names, "dec", {1000, 1, 1}, {100, 1, 1}), names), FromMicros(8));
  EXPECT_EQ(p.Duration(Kernel(names, "one", {1000, 1, 1}, {1024, 1, 1}), names), FromMicros(4));
  EXPECT_EQ(p.Duration(Kernel(names, "one", {1, 1, 1}, {1, 1, 1}), names), FromMicros(4));
}

TEST(ProfileLookup, KeepsOnlyRowsOfTheClustersGpu) {
  const std::vector<ProfileRow> rows =
      Rows(Row("h100-sxm", "k", "1", "32", "0", "5") + Row("h200-sxm", "k", "1", "32", "0", "4") +
           Row("h200-sxm", "only-h200", "*", "*", "*", "9"));
  NameTable names;
  const Op k = Kernel(names, "k", {1, 1, 1}, {32, 1, 1});
  const Op other = Kernel(names, "only-h200", {1, 1, 1}, {32, 1, 1});
  ProfileProvider h100("profile x", rows, "h100-sxm");
  ProfileProvider h200("profile x", rows, "h200-sxm");
  ProfileProvider b200("profile x", rows, "b200");
  EXPECT_EQ(h100.kernel_count(), 1u);
  EXPECT_EQ(h200.kernel_count(), 2u);
  EXPECT_EQ(h100.Duration(k, names), FromMicros(5));
  EXPECT_EQ(h200.Duration(k, names), FromMicros(4));
  EXPECT_EQ(h100.Duration(other, names), std::nullopt);
  EXPECT_EQ(h200.Duration(other, names), FromMicros(9));
  EXPECT_EQ(b200.Duration(k, names), std::nullopt);
}

TEST(ProfileLookup, NamesInternedAfterTheFirstLookupAreFound) {
  const std::vector<ProfileRow> rows = Rows(Row("h100-sxm", "early", "*", "*", "*", "1") +
                                            Row("h100-sxm", "late", "*", "*", "*", "2"));
  ProfileProvider p("profile x", rows, "h100-sxm");
  NameTable names;
  const Op unknown = Kernel(names, "unknown", {1, 1, 1}, {1, 1, 1});
  EXPECT_EQ(p.Duration(unknown, names), std::nullopt);
  EXPECT_EQ(p.Duration(unknown, names), std::nullopt);  // from the cache this time
  EXPECT_EQ(p.Duration(Kernel(names, "early", {1, 1, 1}, {1, 1, 1}), names), FromMicros(1));
  for (int i = 0; i < 1000; ++i) names.Intern("filler " + std::to_string(i));
  EXPECT_EQ(p.Duration(Kernel(names, "late", {1, 1, 1}, {1, 1, 1}), names), FromMicros(2));
  EXPECT_EQ(p.Duration(Kernel(names, "early", {1, 1, 1}, {1, 1, 1}), names), FromMicros(1));
}

TEST(ProfileLookup, AnswersKernelsOnly) {
  const std::vector<ProfileRow> rows = Rows(Row("h100-sxm", "x", "*", "*", "*", "1"));
  ProfileProvider p("profile x", rows, "h100-sxm");
  NameTable names;
  Op copy = Kernel(names, "x", {1, 1, 1}, {1, 1, 1});
  EXPECT_EQ(p.Duration(copy, names), FromMicros(1));
  copy.kind = OpKind::kMemcpy;
  EXPECT_EQ(p.Duration(copy, names), std::nullopt);
  copy.kind = OpKind::kMemset;
  EXPECT_EQ(p.Duration(copy, names), std::nullopt);
}

TEST(ProfileLookup, ResultsDoNotDependOnRowOrder) {
  std::vector<std::string> lines = {
      Row("h100-sxm", "k", "10", "100", "0", "10"), Row("h100-sxm", "k", "30", "100", "0", "25"),
      Row("h100-sxm", "k", "3", "1000", "0", "35"), Row("h100-sxm", "k", "7", "1000", "0", "41"),
      Row("h100-sxm", "k", "70", "100", "0", "47"), Row("h200-sxm", "k", "10", "100", "0", "1")};
  std::sort(lines.begin(), lines.end());
  std::vector<std::vector<SimTime>> results;
  do {
    std::string body;
    for (const std::string& line : lines) body += line;
    ProfileProvider p("profile x", Rows(body), "h100-sxm");
    NameTable names;
    std::vector<SimTime> r;
    for (std::uint32_t g : {1u, 10u, 15u, 30u, 33u, 50u, 70u, 99u, 1000u}) {
      r.push_back(p.Duration(Kernel(names, "k", {g, 1, 1}, {100, 1, 1}), names).value());
    }
    results.push_back(r);
  } while (std::next_permutation(lines.begin(), lines.end()) && results.size() < 50);
  for (const auto& r : results) EXPECT_EQ(r, results.front());
  // 5,000 threads: between 3,000 (mean of 25 and 35) and 7,000 (mean of 41 and 47).
  EXPECT_EQ(results.front()[4], FromMicros(30 + (44 - 30) * 300.0 / 4000.0));
}

// Format v2: a `gemm` column. GEMM rows answer GEMM ops by shape whatever their kernel's name
// (a live run's cuBLAS call has Myriad's name for it, a trace the real kernel's).
const std::string kMagicV2 = "# myriad-kernel-profile v2\n";
const std::string kHeaderV2 =
    "gpu\tkernel\tgrid\tblock\tshared_mem\tgemm\tsamples\tmean_us\tmedian_us\tmin_us\tmax_us\t"
    "stddev_us\n";

std::string GemmRow(const std::string& gemm, const std::string& median) {
  return "h100-sxm\tsm90_xmma_gemm\t*\t*\t*\t" + gemm + "\t4\t" + median + "\t" + median + "\t" +
         median + "\t" + median + "\t0\n";
}

Op GemmOp(NameTable& names, std::int64_t m, std::int64_t n, std::int64_t k,
          DataType dtype = DataType::kBfloat16) {
  Op op = Kernel(names, "cublas_gemm_bf16bf16bf16_32f_NN", Dim3{1, 1, 1}, Dim3{1, 1, 1});
  op.gemm = GemmShape{m, n, k, 1, dtype};
  return op;
}

TEST(ProfileFormatV2, GemmRowsAnswerByShapeThenByNearestWork) {
  const std::string text = kMagicV2 + kHeaderV2 + GemmRow("4096,1024,8192,1,bfloat16", "100") +
                           GemmRow("1024,1024,1024,1,bfloat16", "8") +
                           "h100-sxm\tk\t1\t32\t0\t-\t10\t5\t5\t5\t5\t0\n";
  Result<std::vector<ProfileRow>> rows = ParseProfile(text, "p.kdb");
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 3u);
  ASSERT_TRUE((*rows)[0].gemm.has_value());
  EXPECT_EQ((*rows)[0].gemm->k, 8192);
  EXPECT_FALSE((*rows)[2].gemm.has_value());
  const ProfileProvider provider("profile p.kdb", *rows, "h100-sxm");
  EXPECT_EQ(provider.gemm_count(), 2u);
  EXPECT_EQ(provider.kernel_count(), 1u);
  NameTable names;
  // Exact shape, M and N either way round (cuBLAS's column-major m, n).
  EXPECT_EQ(provider.Duration(GemmOp(names, 4096, 1024, 8192), names), FromMicros(100));
  EXPECT_EQ(provider.Duration(GemmOp(names, 1024, 4096, 8192), names), FromMicros(100));
  // Another shape: the nearest in work, scaled by work (twice 1024^3's work: 16 us).
  EXPECT_EQ(provider.Duration(GemmOp(names, 2048, 1024, 1024), names), FromMicros(16));
  // Another type: no answer.
  EXPECT_EQ(provider.Duration(GemmOp(names, 1024, 1024, 1024, DataType::kFloat32), names),
            std::nullopt);
  // Round trip through the writer.
  Result<std::vector<ProfileRow>> again = ParseProfile(FormatProfile(*rows, "two GEMMs"), "q");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(FormatProfile(*again, "two GEMMs"), FormatProfile(*rows, "two GEMMs"));
}

// A row written demangled answers the mangled name a live run's op carries, and the other way.
TEST(ProfileFormatV2, NamesMatchDemangled) {
  const std::string text = kMagicV2 + kHeaderV2 +
                           "h100-sxm\tbusy(float*)\t*\t*\t*\t-\t1\t5\t5\t5\t5\t0\n" +
                           "h100-sxm\t_Z4stepPf\t*\t*\t*\t-\t1\t7\t7\t7\t7\t0\n";
  Result<std::vector<ProfileRow>> rows = ParseProfile(text, "p.kdb");
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  const ProfileProvider provider("profile p.kdb", *rows, "h100-sxm");
  NameTable names;
  EXPECT_EQ(provider.Duration(Kernel(names, "_Z4busyPf", Dim3{1, 1, 1}, Dim3{32, 1, 1}), names),
            FromMicros(5));
  EXPECT_EQ(provider.Duration(Kernel(names, "step(float*)", Dim3{1, 1, 1}, Dim3{32, 1, 1}), names),
            FromMicros(7));
}

TEST(ProfileFormatV2, Errors) {
  EXPECT_EQ(ParseError(kMagicV2 + kHeaderV2 + GemmRow("4096,1024,8192,bfloat16", "1")),
            "p.kdb:3: gemm: expected '-' or M,N,K,BATCH,TYPE (each dimension 1 to 2^31), found "
            "'4096,1024,8192,bfloat16'");
  EXPECT_EQ(ParseError(kMagicV2 + kHeaderV2 +
                       "h100-sxm\tk\t1\t32\t0\t8,8,8,1,bfloat16\t1\t1\t1\t1\t1\t0\n"),
            "p.kdb:3: a GEMM row's grid, block and shared_mem are '*'");
  EXPECT_EQ(ParseError(kMagicV2 + kHeaderV2 + GemmRow("8,8,8,1,bfloat16", "1") +
                       GemmRow("8,8,8,1,bfloat16", "2")),
            "p.kdb:4: duplicate row for GPU 'h100-sxm', kernel 'sm90_xmma_gemm', shape gemm "
            "8,8,8,1,bfloat16 (first at line 3)");
  EXPECT_EQ(ParseError(kMagicV2 + kHeaderV2 + Row("h100-sxm", "k", "1", "32", "0", "5")),
            "p.kdb:3: expected 12 tab-separated fields, found 11");
}

}  // namespace
}  // namespace myriad::emulator::timing
