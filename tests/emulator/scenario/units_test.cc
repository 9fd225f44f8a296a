#include "myriad/emulator/units.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace myriad::emulator {
namespace {

using Case = std::pair<const char*, double>;

void ExpectParses(Result<double> (*parse)(std::string_view), const std::vector<Case>& cases) {
  for (const auto& [text, expected] : cases) {
    SCOPED_TRACE(text);
    const Result<double> value = parse(text);
    ASSERT_TRUE(value.ok()) << value.status().message();
    EXPECT_DOUBLE_EQ(*value, expected);
  }
}

void ExpectRejects(Result<double> (*parse)(std::string_view), const std::vector<const char*>& bad) {
  for (const char* text : bad) {
    SCOPED_TRACE(text);
    const Result<double> value = parse(text);
    ASSERT_FALSE(value.ok()) << "parsed as " << *value;
    EXPECT_EQ(value.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(value.status().message().find(std::string("'") + text + "'"), std::string::npos)
        << value.status().message();
    EXPECT_EQ(value.status().message().find('\n'), std::string::npos);
  }
}

TEST(ParseBandwidthTest, BitsPerSecondAreDecimal) {
  ExpectParses(ParseBandwidth, {{"8bps", 1},
                                {"8Kbps", 1e3},
                                {"8kbps", 1e3},
                                {"8Mbps", 1e6},
                                {"400Gbps", 50e9},
                                {"800Gbps", 100e9},
                                {"1.6Tbps", 200e9}});
}

TEST(ParseBandwidthTest, BytesPerSecondAreDecimal) {
  ExpectParses(ParseBandwidth, {{"50B/s", 50},
                                {"50KB/s", 50e3},
                                {"50kB/s", 50e3},
                                {"50MB/s", 50e6},
                                {"50GB/s", 50e9},
                                {"3.35TB/s", 3.35e12},
                                {"50Bps", 50},
                                {"50KBps", 50e3},
                                {"50kBps", 50e3},
                                {"50MBps", 50e6},
                                {"50GBps", 50e9},
                                {"2TBps", 2e12}});
}

TEST(ParseBandwidthTest, BinaryBytesPerSecond) {
  ExpectParses(ParseBandwidth, {{"1KiB/s", 1024},
                                {"1MiB/s", 1024.0 * 1024},
                                {"50GiB/s", 50.0 * 1024 * 1024 * 1024},
                                {"1TiB/s", 1024.0 * 1024 * 1024 * 1024}});
}

TEST(ParseBandwidthTest, SpacesBetweenNumberAndUnit) {
  ExpectParses(ParseBandwidth, {{"50 GB/s", 50e9}, {"400  Gbps", 50e9}, {"1.5\tGB/s", 1.5e9}});
}

TEST(ParseBandwidthTest, RejectsMalformed) {
  ExpectRejects(ParseBandwidth, {"", "GB/s", "5 parsecs", "-3GB/s", "+3GB/s", "1..2GB/s", "1.GB/s",
                                 ".5GB/s", "1e3GB/s", "50", " 50GB/s", "50GB/s ", "50 GB / s",
                                 "50GiBps", "400gbps", "50gb/s", "50GB", "inf GB/s", "nanGB/s"});
}

TEST(ParseBandwidthTest, MessageNamesTheTextAndExamples) {
  EXPECT_EQ(ParseBandwidth("5 parsecs").status().message(),
            "bad bandwidth '5 parsecs': expected a number and a unit such as 400Gbps, 50GB/s");
}

TEST(ParseBandwidthTest, WrongCaseGetsAHint) {
  EXPECT_EQ(ParseBandwidth("400gbps").status().message(),
            "bad bandwidth '400gbps': expected a number and a unit such as 400Gbps, 50GB/s "
            "(units are case-sensitive: did you mean 'Gbps'?)");
  EXPECT_NE(ParseBandwidth("50gib/s").status().message().find("did you mean 'GiB/s'"),
            std::string::npos);
}

TEST(ParseDurationTest, AllUnits) {
  ExpectParses(ParseDuration, {{"500ns", 500e-9},
                               {"2us", 2e-6},
                               {"2\u00b5s", 2e-6},
                               {"2\u03bcs", 2e-6},
                               {"0.5us", 0.5e-6},
                               {"1.5ms", 1.5e-3},
                               {"3s", 3},
                               {"10 us", 10e-6},
                               {"0ns", 0}});
}

TEST(ParseDurationTest, RejectsMalformed) {
  ExpectRejects(ParseDuration,
                {"", "us", "5", "5 parsecs", "-1us", "1..2ms", "2 min", "2sec", "2US", "2Ms"});
  EXPECT_EQ(ParseDuration("5 parsecs").status().message(),
            "bad duration '5 parsecs': expected a number and a unit such as 500ns, 2us, 1.5ms");
}

TEST(ParseBytesTest, DecimalAndBinaryUnits) {
  ExpectParses(ParseBytes, {{"1024B", 1024},
                            {"1KB", 1e3},
                            {"1kB", 1e3},
                            {"1MB", 1e6},
                            {"80GB", 80e9},
                            {"2TB", 2e12},
                            {"512KiB", 512.0 * 1024},
                            {"1.5MiB", 1.5 * 1024 * 1024},
                            {"80GiB", 80.0 * 1024 * 1024 * 1024},
                            {"1TiB", 1024.0 * 1024 * 1024 * 1024},
                            {"80 GiB", 80.0 * 1024 * 1024 * 1024}});
}

TEST(ParseBytesTest, NcclTestsSuffixesAreBinary) {
  ExpectParses(ParseBytes, {{"8", 8},
                            {"8K", 8192},
                            {"8k", 8192},
                            {"1M", 1 << 20},
                            {"1m", 1 << 20},
                            {"8G", 8.0 * (1 << 30)},
                            {"8g", 8.0 * (1 << 30)},
                            {"1T", 1024.0 * (1 << 30)}});
}

TEST(ParseBytesTest, RejectsMalformed) {
  ExpectRejects(ParseBytes, {"", "GB", "KiB", "-3GB", "1..2GB", "8X", "80 gigabytes", "80gib",
                             "1.5.GB", "8 K B", "0x10", "8 ", " 8"});
  EXPECT_EQ(ParseBytes("-3GB").status().message(),
            "bad size '-3GB': expected a number and an optional unit such as 80GiB, 512KiB, 8M");
}

TEST(ParseFlopsTest, AllUnits) {
  ExpectParses(ParseFlops, {{"1FLOPS", 1},
                            {"1KFLOPS", 1e3},
                            {"1MFLOPS", 1e6},
                            {"1GFLOPS", 1e9},
                            {"989.4TFLOPS", 989.4e12},
                            {"2PFLOPS", 2e15},
                            {"1FLOP/s", 1},
                            {"1KFLOP/s", 1e3},
                            {"1MFLOP/s", 1e6},
                            {"19.5GFLOP/s", 19.5e9},
                            {"312 TFLOP/s", 312e12},
                            {"1PFLOP/s", 1e15}});
}

TEST(ParseFlopsTest, RejectsMalformed) {
  ExpectRejects(ParseFlops, {"", "989.4", "TFLOPS", "989tflops", "-1TFLOPS", "1 TFLOP"});
}

TEST(FormatTest, Bytes) {
  EXPECT_EQ(FormatBytes(80.0 * (1 << 30)), "80 GiB");
  EXPECT_EQ(FormatBytes(141.0 * (1 << 30)), "141 GiB");
  EXPECT_EQ(FormatBytes(512.0 * 1024), "512 KiB");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1024.0 * 1024 - 0.001), "1 MiB");  // not "1024 KiB"
  EXPECT_EQ(FormatBytes(80e9), "74.51 GiB");
}

TEST(FormatTest, Bandwidth) {
  EXPECT_EQ(FormatBandwidth(450e9), "450 GB/s");
  EXPECT_EQ(FormatBandwidth(370.8e9), "370.8 GB/s");
  EXPECT_EQ(FormatBandwidth(48e9), "48 GB/s");
  EXPECT_EQ(FormatBandwidth(3.35e12), "3.35 TB/s");
  EXPECT_EQ(FormatBandwidth(999.999e9), "1 TB/s");
  EXPECT_EQ(FormatBandwidth(12.5e6), "12.5 MB/s");
  EXPECT_EQ(FormatBandwidth(0), "0 B/s");
}

TEST(FormatTest, Duration) {
  EXPECT_EQ(FormatDuration(500e-9), "500 ns");
  EXPECT_EQ(FormatDuration(2e-6), "2 us");
  EXPECT_EQ(FormatDuration(1.4e-6), "1.4 us");
  EXPECT_EQ(FormatDuration(1.5e-3), "1.5 ms");
  EXPECT_EQ(FormatDuration(3), "3 s");
  EXPECT_EQ(FormatDuration(120), "120 s");
  EXPECT_EQ(FormatDuration(0.5e-9), "0.5 ns");
  EXPECT_EQ(FormatDuration(0), "0 s");
}

TEST(FormatTest, Flops) {
  EXPECT_EQ(FormatFlops(989.4e12), "989.4 TFLOP/s");
  EXPECT_EQ(FormatFlops(4500e12), "4500 TFLOP/s");
  EXPECT_EQ(FormatFlops(19.5e9), "19.5 GFLOP/s");
}

TEST(FormatTest, Number) {
  EXPECT_EQ(FormatNumber(0.824), "0.824");
  EXPECT_EQ(FormatNumber(20.6 / 25), "0.824");
  EXPECT_EQ(FormatNumber(2.0), "2");
  EXPECT_EQ(FormatNumber(1.26, 1), "1.3");
  EXPECT_EQ(FormatNumber(-0.0001), "0");
}

TEST(FormatTest, OutputParsesBack) {
  for (double rate : {1e3, 25e9, 48e9, 450e9, 900e9, 3.35e12}) {
    SCOPED_TRACE(rate);
    const Result<double> back = ParseBandwidth(FormatBandwidth(rate));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_DOUBLE_EQ(*back, rate);
  }
  for (double seconds : {500e-9, 2e-6, 1.5e-3, 3.0}) {
    const Result<double> back = ParseDuration(FormatDuration(seconds));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_DOUBLE_EQ(*back, seconds);
  }
  for (double bytes : {1024.0, 80.0 * (1 << 30), 512.0 * 1024}) {
    const Result<double> back = ParseBytes(FormatBytes(bytes));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_DOUBLE_EQ(*back, bytes);
  }
  const Result<double> flops = ParseFlops(FormatFlops(989.4e12));
  ASSERT_TRUE(flops.ok()) << flops.status().message();
  EXPECT_DOUBLE_EQ(*flops, 989.4e12);
}

}  // namespace
}  // namespace myriad::emulator
