// What the driver shim reads from a cubin a program loads (cuModuleLoad, cuModuleLoadData):
// each kernel's parameter layout, from its .nv.info.<kernel> section's KPARAM_INFO records,
// so that a launch through the driver (Triton's, Inductor's) reports its integer arguments
// and its pointers' reach as a runtime launch does (docs/kernel-timing.md, "Kernels loaded
// through the driver").
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace myriad::shim {

// One kernel parameter: where it lies in the parameter block and how many bytes it has.
struct CubinParam {
  std::uint16_t offset = 0;
  std::uint16_t size = 0;
};

// A cubin's kernels' parameters, by kernel name, in parameter order.
using CubinLayouts = std::map<std::string, std::vector<CubinParam>, std::less<>>;

// The bytes an ELF cubin image spans, from its headers (the section and program header tables
// end it); 0 when `image` is not a 64-bit ELF file or its headers reach past `limit` bytes.
std::size_t CubinImageSize(const unsigned char* image, std::size_t limit);

// The parameter layouts of the kernels in an ELF cubin of `size` bytes (the EIATTR_KPARAM_INFO
// records: id 0x17, a 12-byte payload of u32 index, u16 ordinal, u16 offset, u32 flags whose
// top 14 bits are the size). Kernels whose records are malformed are left out.
CubinLayouts ReadCubinLayouts(const unsigned char* image, std::size_t size);

// The PTX a cubin carries in its .nv_debug_ptx_txt section (ptxas -lineinfo: Triton's default,
// nvcc -lineinfo), NUL-separated lines as ptxas writes them; empty when it has none.
std::string CubinPtx(const unsigned char* image, std::size_t size);

}  // namespace myriad::shim
