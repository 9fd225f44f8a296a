// Profile databases: measured kernel durations per GPU model, kernel name and launch shape.
// The text format and the lookup rules are specified in docs/kernel-timing.md.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "myriad/emulator/kernel_timing.h"
#include "myriad/emulator/op.h"
#include "myriad/status.h"

namespace myriad::emulator::timing {

// The first line of every profile database; the number is the format version. v2 adds the
// `gemm` column; v1 files (without it) are still read.
inline constexpr std::string_view kProfileMagic = "# myriad-kernel-profile";
inline constexpr std::string_view kProfileVersion = "v2";
inline constexpr std::string_view kProfileVersionV1 = "v1";
// The column header line that must precede the rows (fields separated by one tab each).
inline constexpr std::string_view kProfileColumns[] = {
    "gpu",     "kernel",  "grid",      "block",  "shared_mem", "gemm",
    "samples", "mean_us", "median_us", "min_us", "max_us",     "stddev_us"};
inline constexpr int kProfileFieldCount = 12;
// v1's header: the same without `gemm`.
inline constexpr int kProfileFieldCountV1 = 11;

// Statistics of the measured durations of one (GPU, kernel, shape), in microseconds.
struct ProfileStats {
  std::uint64_t samples = 0;
  double mean_us = 0;
  double median_us = 0;
  double min_us = 0;
  double max_us = 0;
  double stddev_us = 0;
};

struct ProfileRow {
  std::string gpu;         // catalog key, e.g. "h100-sxm"
  std::string kernel;      // exactly as the launch names it (may hold spaces, commas, <>, ())
  bool any_shape = false;  // the row's shape is `*`: it answers for every launch shape
  Dim3 grid;
  Dim3 block;
  std::uint32_t shared_mem = 0;
  // A GEMM row (v2 `gemm` column): a matrix product as the program asked for it (the sum of
  // the kernels one `aten::mm` launched), answering GEMM ops of that shape whatever their
  // kernel's name; its shape is `*` and `kernel` names the first kernel it launched.
  std::optional<GemmShape> gemm;
  ProfileStats stats;
  int line = 0;  // 1-based line in the file
};

// The database's text (v2) for `rows`, in their order: what `myriad profile import` writes.
std::string FormatProfile(const std::vector<ProfileRow>& rows, std::string_view comment);

// Parses a whole database. `path` only names the file in errors, which are one line:
// "PATH:LINE: message".
Result<std::vector<ProfileRow>> ParseProfile(std::string_view text, std::string_view path);
// Reads and parses the file at `path`.
Result<std::vector<ProfileRow>> ReadProfile(const std::string& path);

// Answers kernels from the rows of one database that were measured on `gpu_key`.
// Lookup (docs/kernel-timing.md "Lookup"): exact shape, else the name's `*` row, else a
// piecewise-linear interpolation in total threads over the name's other shapes.
class ProfileProvider : public DurationProvider {
 public:
  ProfileProvider(std::string provider_name, const std::vector<ProfileRow>& rows,
                  std::string_view gpu_key);

  std::string_view name() const override { return name_; }
  std::optional<SimTime> Duration(const Op& op, const NameTable& names) const override;
  bool measured() const override { return true; }

  // Distinct kernel names with rows for this GPU.
  std::size_t kernel_count() const { return entries_.size(); }
  // GEMM rows for this GPU.
  std::size_t gemm_count() const { return gemms_.size(); }

 private:
  struct Shape {
    std::uint32_t key[7];  // grid x, y, z, block x, y, z, shared memory: the sort order
    SimTime duration;
  };
  struct Point {
    double threads;   // grid x block, all three dimensions
    double duration;  // picoseconds
  };
  struct Entry {
    std::vector<Shape> shapes;  // sorted by key
    std::optional<SimTime> any_shape;
    std::vector<Point> points;  // sorted by threads, one per distinct thread count
  };
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  // A measured GEMM: M and N unordered (cuBLAS's column-major m, n are the row-major
  // program's n, m), K, batch and type.
  struct Gemm {
    std::int64_t mn_low, mn_high, k, batch;
    DataType dtype;
    SimTime duration;
    double flops;
    bool operator<(const Gemm& o) const;
  };

  const Entry* Find(NameId id, const NameTable& names) const;
  static SimTime Interpolate(const std::vector<Point>& points, double threads);
  std::optional<SimTime> GemmDuration(const GemmShape& gemm) const;

  std::string name_;
  std::vector<Entry> entries_;
  std::unordered_map<std::string, std::uint32_t, StringHash, std::equal_to<>> index_;
  // NameId -> entry, filled on first sight of a name because the NameTable grows during a
  // run: 0 = not looked up yet, 1 = no rows for this name, i + 2 = entries_[i]. A vector
  // indexed by the dense NameId costs one load per op where a hash map costs a hash.
  mutable std::vector<std::uint32_t> by_name_;
  std::vector<Gemm> gemms_;  // sorted: exact shapes by binary search, else the nearest in work
  // Answers for shapes without a row, by shape: the nearest-in-work scan runs once per shape.
  struct GemmKeyHash {
    std::size_t operator()(const Gemm& g) const {
      std::size_t h = std::hash<std::int64_t>{}(g.mn_low);
      for (std::int64_t v : {g.mn_high, g.k, g.batch, static_cast<std::int64_t>(g.dtype)})
        h = h * 1000003u ^ std::hash<std::int64_t>{}(v);
      return h;
    }
  };
  struct GemmKeyEqual {
    bool operator()(const Gemm& a, const Gemm& b) const { return !(a < b) && !(b < a); }
  };
  mutable std::unordered_map<Gemm, std::optional<SimTime>, GemmKeyHash, GemmKeyEqual>
      nearest_cache_;
};

}  // namespace myriad::emulator::timing
