// The HTML report: every section from a run's figures, self-contained, names escaped.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "myriad/emulator/report.h"
#include "myriad/netmodel/cluster.h"

namespace myriad::emulator {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

RunResult TwoRanks() {
  RunResult result;
  result.world_size = 2;
  result.total_time = FromMicros(1000);
  for (int r = 0; r < 2; ++r) {
    RankResult rank;
    rank.rank = r;
    rank.end_time = FromMicros(1000);
    rank.compute = FromMicros(600);
    rank.exposed_comm = FromMicros(300);
    rank.idle = FromMicros(100);
    rank.peak_memory = 90ull << 30;  // over the 80 GiB of HBM: drawn red
    rank.exposed_by_comm = {{"tp.d0", FromMicros(200)}, {"dp.t0", FromMicros(100)}};
    result.ranks.push_back(rank);
  }
  result.kernel_timing = {{"library", 10, FromMicros(900)}, {"fallback", 1, FromMicros(100)}};
  CollectiveStats c;
  c.comm = "tp.d0";
  c.bytes = 1 << 20;
  c.calls = 3;
  c.duration = FromMicros(50);
  result.collectives.push_back(c);
  result.timeline = {{0, 0, "gemm", "kernel", 0, FromMicros(600), ""},
                     {0, 0, "allreduce count=1 dtype=bf16 on 'tp.d0'", "communication",
                      FromMicros(600), FromMicros(300), ""}};
  result.busiest_links = {{"nic3.tx", 1e9, 0.92}, {"leaf0.up0", 5e8, 0.4}};
  result.links_used = 12;
  return result;
}

TEST(ReportHtmlTest, EverySectionFromTheRunsFigures) {
  netmodel::Cluster cluster;
  cluster.gpu.name = "NVIDIA H100 <80GB>";
  cluster.gpu.hbm_bytes = 80.0 * (1ull << 30);
  RunContext context;
  context.command = "simulate";
  context.workload = "synthetic <test>";
  context.fidelity = "flow";
  context.cluster = &cluster;
  context.extra = {{"tokens_per_second", "1234.5"},
                   {"attention_flops", "\"full\""},
                   {"memory_per_gpu_bytes", "{\"total\": 1}"}};
  const std::string html = ReportHtml(TwoRanks(), context);
  for (const char* section :
       {"<h2>Where the time goes</h2>", "<h2>Timeline overview</h2>",
        "<h2>Communication per communicator family</h2>", "<h2>Memory per GPU against HBM</h2>",
        "<h2>Kernel-timing coverage</h2>", "<h2>Network links (flow model)</h2>"})
    EXPECT_THAT(html, HasSubstr(section));
  EXPECT_THAT(html, HasSubstr("Hottest link: <b>nic3.tx</b>, 92.0% busy"));
  EXPECT_THAT(html, HasSubstr("exposed tp communication"));
  EXPECT_THAT(html, HasSubstr("<dd>1234.5</dd>"));
  EXPECT_THAT(html, HasSubstr("<dd>full</dd>"));              // a JSON string, unquoted
  EXPECT_THAT(html, Not(HasSubstr("memory_per_gpu_bytes")));  // objects stay in the JSON
  EXPECT_THAT(html, HasSubstr("fill=\"#d7301f\""));           // over HBM
  EXPECT_THAT(html, HasSubstr("HBM 80.00 GiB"));
  EXPECT_THAT(html, HasSubstr("synthetic &lt;test&gt;"));
  EXPECT_THAT(html, HasSubstr("NVIDIA H100 &lt;80GB&gt;"));
  EXPECT_THAT(html, Not(HasSubstr("<test>")));
  // Self-contained: no script or style sheet from elsewhere, no network address but SVG's
  // namespace.
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  EXPECT_THAT(html, Not(HasSubstr("<link")));
  std::string rest = html;
  for (std::size_t at; (at = rest.find("http://www.w3.org/2000/svg")) != std::string::npos;)
    rest.erase(at, 26);
  EXPECT_THAT(rest, Not(HasSubstr("http")));
}

TEST(ReportHtmlTest, AnalyticalRunsHaveNoLinksSectionAndEqualRunsEqualPages) {
  RunContext context;
  context.command = "replay";
  RunResult result = TwoRanks();
  result.busiest_links.clear();
  const std::string html = ReportHtml(result, context);
  EXPECT_THAT(html, Not(HasSubstr("Network links")));
  EXPECT_EQ(html, ReportHtml(result, context));
}

}  // namespace
}  // namespace myriad::emulator
