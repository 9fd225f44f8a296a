// A kernel's own code, read for its work: the PTX that fatbins and modules carry, analysed
// once per kernel into per-thread counts (global bytes, FLOPs by kind, SFU operations,
// instructions) whose loops and branches are expressions of the launch's shape and of the
// integer parameters the code shows to be extents; evaluated per launch into the work the
// roofline times (docs/kernel-timing.md, "Kernels timed from their code").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "myriad/emulator/op.h"
#include "myriad/status.h"

namespace myriad::emulator {

// One launch's work, summed over its threads.
struct KernelWork {
  double threads = 0;
  double blocks = 0;
  double global_bytes = 0;  // global (and generic) loads and stores, atomics twice
  double fma_flops = 0;     // FP32/FP16/BF16 on the CUDA cores (an FMA is 2)
  double fp64_flops = 0;    // FP64
  double tensor_flops = 0;  // mma / wmma / wgmma
  DataType tensor_dtype = DataType::kBfloat16;  // the input type of the most tensor FLOPs
  double sfu_ops = 0;       // ex2, lg2, rsqrt, rcp, sin, cos, tanh (approximate forms)
  double instructions = 0;  // thread-instructions executed (each issues as 1/32 of a warp's)
  // How many of the kernel's loops, branches (a block's guards and its branch are one) and
  // bulk copies this launch could not evaluate for at least one sampled thread (a bound read
  // from memory, a hashed value, a tensor map's box): those took the documented assumptions.
  // Each counts once however many sampled threads made it.
  int assumed_loops = 0;
  int assumed_branches = 0;
  int assumed_copies = 0;  // counted as no bytes
};

// A parameter of a kernel as its PTX declares it.
struct KernelCodeParam {
  std::string name;
  int size = 0;          // bytes
  bool address = false;  // the code dereferences it (a pointer)
  bool extent = false;   // the code bounds a loop or a branch, or sizes a copy, with it
  bool written = false;  // the code stores, or reduces atomically, through it
};

// What a launch tells about a parameter: an integer's value, or for an address the bytes of
// its allocation from the pointer on (what the kernel can reach through it), and where the
// pointer points into known device contents (bytes a copy from the host put there), those
// bytes and the pointer's offset in them: the code's loads from them are evaluated.
struct LaunchArgument {
  LaunchArgument() = default;
  LaunchArgument(bool is_known, std::int64_t v) : known(is_known), value(v) {}
  bool known = false;
  std::int64_t value = 0;
  std::shared_ptr<const std::string> contents;
  std::int64_t content_offset = 0;
};

class KernelCode {
 public:
  struct Impl;
  explicit KernelCode(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

  const std::string& name() const;  // the .entry's (mangled) name
  const std::vector<KernelCodeParam>& params() const;
  int instructions() const;  // in the code
  int loops() const;
  // Whether a global store's address is based on no parameter (a pointer read from memory):
  // the kernel may write anywhere.
  bool writes_anywhere() const;
  // Why parts of the count are assumptions, one line each ("loop at line 40: its bound is
  // read from memory; bounded by the allocations it reads").
  const std::vector<std::string>& notes() const;

  // The work of a launch of `grid` x `block` threads with `args` (by parameter index;
  // missing or unknown ones are not extents for this launch). Sampled threads spread over
  // the grid stand for all: loops and branches are evaluated for each, the counts averaged.
  KernelWork Work(Dim3 grid, Dim3 block, std::span<const LaunchArgument> args) const;

 private:
  std::shared_ptr<const Impl> impl_;
};

// Every .entry of a PTX module, analysed. Fails on text that is not PTX (no .version) or a
// function whose body does not close; instructions it does not know are counted as issued
// instructions of no other kind.
Result<std::vector<KernelCode>> AnalyzePtx(std::string_view ptx);

// The PTX modules in a fatbin (`__cudaRegisterFatBinary`'s image, or an .nv_fatbin section:
// one or more fatbins back to back), decompressed (nvcc compresses with zstd by default).
// Fails on a damaged fatbin; a fatbin with only SASS gives no modules.
Result<std::vector<std::string>> PtxInFatbin(std::span<const std::byte> fatbin);

// The PTX modules of every fatbin in an ELF file's .nv_fatbin sections, and a cubin's own PTX
// in .nv_debug_ptx_txt (ptxas -lineinfo, as Triton compiles); none when the file has neither.
// Files or sections over `max_section_bytes` are skipped (none is read).
Result<std::vector<std::string>> PtxInElfFile(const std::string& path,
                                              std::size_t max_section_bytes);

}  // namespace myriad::emulator
