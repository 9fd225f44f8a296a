// Kernel parameter layouts from cubins (interpose/cuda/cubin.h), on a cubin nvcc makes here
// from programs/driver_kernels.cu, and on damaged images.
#include "cuda/cubin.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace myriad::shim {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string kCubin = std::string(MYRIAD_TEST_PROGRAMS) + "/driver_kernels.cubin";

TEST(CubinTest, ParameterLayoutsFromKparamInfo) {
  const std::string image = ReadFile(kCubin);
  ASSERT_FALSE(image.empty());
  const auto* bytes = reinterpret_cast<const unsigned char*>(image.data());
  const std::size_t size = CubinImageSize(bytes, image.size());
  EXPECT_EQ(size, image.size());  // the headers end the file
  const CubinLayouts layouts = ReadCubinLayouts(bytes, size);
  ASSERT_EQ(layouts.count("scale_add"), 1u);
  const std::vector<CubinParam>& p = layouts.at("scale_add");
  // scale_add(float* out, const float* in, int n, float a)
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].size, 8);
  EXPECT_EQ(p[1].size, 8);
  EXPECT_EQ(p[1].offset, 8);
  EXPECT_EQ(p[2].size, 4);
  EXPECT_EQ(p[2].offset, 16);
  EXPECT_EQ(p[3].size, 4);
  EXPECT_EQ(p[3].offset, 20);
}

// A cubin ptxas made with -lineinfo carries its PTX; one without it does not.
TEST(CubinTest, ThePtxACubinCarries) {
  const std::string with =
      ReadFile(std::string(MYRIAD_TEST_PROGRAMS) + "/driver_kernels_lineinfo.cubin");
  ASSERT_FALSE(with.empty());
  const std::string ptx =
      CubinPtx(reinterpret_cast<const unsigned char*>(with.data()), with.size());
  EXPECT_NE(ptx.find(".entry scale_add"), std::string::npos);
  const std::string without = ReadFile(kCubin);
  EXPECT_TRUE(
      CubinPtx(reinterpret_cast<const unsigned char*>(without.data()), without.size()).empty());
}

TEST(CubinTest, DamagedImagesGiveNoLayouts) {
  const std::string image = ReadFile(kCubin);
  ASSERT_GT(image.size(), 256u);
  const auto* bytes = reinterpret_cast<const unsigned char*>(image.data());
  EXPECT_EQ(CubinImageSize(bytes, 100), 0u);  // headers past the limit
  for (std::size_t cut : {std::size_t{0}, std::size_t{16}, std::size_t{64}, image.size() / 2})
    EXPECT_TRUE(ReadCubinLayouts(bytes, cut).size() <= 1u) << cut;  // never past `cut`
  const std::string text = "not an ELF file at all, but long enough to hold a header......";
  EXPECT_EQ(CubinImageSize(reinterpret_cast<const unsigned char*>(text.data()), text.size()), 0u);
  EXPECT_TRUE(
      ReadCubinLayouts(reinterpret_cast<const unsigned char*>(text.data()), text.size()).empty());
  // Every byte flipped in turn: no crash, no read outside the image.
  std::string damaged = image;
  for (std::size_t i = 0; i < damaged.size(); i += 7) {
    damaged[i] = static_cast<char>(~damaged[i]);
    ReadCubinLayouts(reinterpret_cast<const unsigned char*>(damaged.data()), damaged.size());
    CubinPtx(reinterpret_cast<const unsigned char*>(damaged.data()), damaged.size());
    damaged[i] = image[i];
  }
}

}  // namespace
}  // namespace myriad::shim
