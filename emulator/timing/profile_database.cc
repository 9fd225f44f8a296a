// Profile database reader and the provider that answers from it (docs/kernel-timing.md).
#include "timing/profile_database.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <tuple>
#include <utility>

#include "myriad/netmodel/hardware.h"
#include "timing/kernel_names.h"

namespace myriad::emulator::timing {
namespace {

// The column names joined by `separator`: tabs in the file, spaces in messages (v1 has no
// `gemm`).
std::string Columns(char separator, bool v1 = false) {
  std::string columns;
  for (std::string_view column : kProfileColumns) {
    if (v1 && column == "gemm") continue;
    if (!columns.empty()) columns += separator;
    columns += column;
  }
  return columns;
}

// "M,N,K,BATCH,DTYPE" (e.g. "4096,1024,8192,1,bfloat16").
std::string GemmText(const GemmShape& g) {
  return fmt::format("{},{},{},{},{}", g.m, g.n, g.k, g.batch, ToString(g.dtype));
}

std::vector<std::string_view> SplitTabs(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t tab = line.find('\t', start);
    if (tab == std::string_view::npos) {
      fields.push_back(line.substr(start));
      return fields;
    }
    fields.push_back(line.substr(start, tab - start));
    start = tab + 1;
  }
}

template <typename Int>
bool ParseInt(std::string_view text, Int* out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

// One launch dimension: "X", "X,Y" or "X,Y,Z", each a positive 32-bit integer (CUDA's dim3).
bool ParseDim3(std::string_view text, Dim3* out) {
  std::uint32_t v[3] = {1, 1, 1};
  int n = 0;
  std::size_t start = 0;
  while (true) {
    if (n == 3) return false;
    const std::size_t comma = text.find(',', start);
    const std::string_view part = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (!ParseInt(part, &v[n]) || v[n] == 0) return false;
    ++n;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  *out = Dim3{v[0], v[1], v[2]};
  return true;
}

bool ParseMicros(std::string_view text, double* out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && std::isfinite(*out) && *out >= 0;
}

std::string ShapeText(const ProfileRow& row) {
  if (row.gemm) return "gemm " + GemmText(*row.gemm);
  if (row.any_shape) return "*";
  return fmt::format("{},{},{} {},{},{} {}", row.grid.x, row.grid.y, row.grid.z, row.block.x,
                     row.block.y, row.block.z, row.shared_mem);
}

double Threads(const Dim3& grid, const Dim3& block) {
  // double: grid x block can exceed 2^64 in principle, and the value only orders shapes.
  return static_cast<double>(grid.x) * grid.y * grid.z * block.x * block.y * block.z;
}

class Parser {
 public:
  explicit Parser(std::string_view path) : path_(path) {}

  Result<std::vector<ProfileRow>> Parse(std::string_view text) {
    int line_no = 0;
    bool header_seen = false;
    std::size_t pos = 0;
    while (pos < text.size() || line_no == 0) {
      std::size_t end = text.find('\n', pos);
      if (end == std::string_view::npos) end = text.size();
      std::string_view line = text.substr(pos, end - pos);
      pos = end + 1;
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // CRLF files
      if (line_no == 1) {
        if (Status s = CheckMagic(line); !s.ok()) return s;
        continue;
      }
      if (line.empty() || line.front() == '#') continue;
      if (!header_seen) {
        if (line != Columns('\t', v1_)) {
          return Error(line_no,
                       "expected the column header line (tab-separated): " + Columns(' ', v1_));
        }
        header_seen = true;
        continue;
      }
      Result<ProfileRow> row = ParseRow(line, line_no);
      if (!row.ok()) return row.status();
      rows_.push_back(std::move(row).value());
    }
    if (!header_seen) return Error(line_no, "no column header line: " + Columns(' ', v1_));
    return std::move(rows_);
  }

 private:
  Status Error(int line, std::string_view message) const {
    return Status::InvalidArgument(fmt::format("{}:{}: {}", path_, line, message));
  }

  Status CheckMagic(std::string_view line) {
    const std::string expected = std::string(kProfileMagic) + " " + std::string(kProfileVersion);
    if (line == expected) return Status::Ok();
    if (line == std::string(kProfileMagic) + " " + std::string(kProfileVersionV1)) {
      v1_ = true;
      return Status::Ok();
    }
    if (line.starts_with(kProfileMagic) && line.size() > kProfileMagic.size() &&
        line[kProfileMagic.size()] == ' ') {
      return Error(1, fmt::format("unsupported profile version '{}' (this Myriad reads {} and {})",
                                  line.substr(kProfileMagic.size() + 1), kProfileVersionV1,
                                  kProfileVersion));
    }
    return Error(1,
                 fmt::format("not a Myriad kernel profile: the first line must be '{}'", expected));
  }

  Result<ProfileRow> ParseRow(std::string_view line, int line_no) {
    std::vector<std::string_view> f = SplitTabs(line);
    const int expected = v1_ ? kProfileFieldCountV1 : kProfileFieldCount;
    if (static_cast<int>(f.size()) != expected) {
      return Error(line_no,
                   fmt::format("expected {} tab-separated fields, found {}", expected, f.size()));
    }
    // From here on the fields are v2's: a v1 row has no GEMM.
    std::string_view gemm = "-";
    if (!v1_) {
      gemm = f[5];
      f.erase(f.begin() + 5);
    }
    ProfileRow row;
    row.line = line_no;
    Result<netmodel::GpuSpec> gpu = netmodel::FindGpu(f[0]);
    if (!gpu.ok()) return Error(line_no, gpu.status().message());
    row.gpu = std::string(f[0]);
    if (f[1].empty()) return Error(line_no, "empty kernel name");
    row.kernel = std::string(f[1]);

    const int wildcards = (f[2] == "*") + (f[3] == "*") + (f[4] == "*");
    if (wildcards == 3) {
      row.any_shape = true;
    } else if (wildcards != 0) {
      return Error(line_no, "shape '*' must be given for grid, block and shared_mem together");
    } else {
      if (!ParseDim3(f[2], &row.grid)) return BadDim(line_no, "grid", f[2]);
      if (!ParseDim3(f[3], &row.block)) return BadDim(line_no, "block", f[3]);
      if (!ParseInt(f[4], &row.shared_mem)) {
        return Error(
            line_no,
            fmt::format("shared_mem: expected bytes (an integer >= 0) or '*', found '{}'", f[4]));
      }
    }

    if (gemm != "-") {
      Result<GemmShape> shape = ParseGemm(gemm);
      if (!shape.ok()) return Error(line_no, shape.status().message());
      if (!row.any_shape) return Error(line_no, "a GEMM row's grid, block and shared_mem are '*'");
      row.gemm = *shape;
    }

    if (!ParseInt(f[5], &row.stats.samples) || row.stats.samples == 0) {
      return Error(line_no, fmt::format("samples: expected a positive integer, found '{}'", f[5]));
    }
    double* const values[] = {&row.stats.mean_us, &row.stats.median_us, &row.stats.min_us,
                              &row.stats.max_us, &row.stats.stddev_us};
    for (int i = 0; i < 5; ++i) {
      if (!ParseMicros(f[6 + i], values[i])) {
        return Error(line_no, fmt::format("{}: expected a number of microseconds >= 0, found '{}'",
                                          kProfileColumns[7 + i], f[6 + i]));
      }
    }
    const ProfileStats& s = row.stats;
    if (!(s.min_us <= s.median_us && s.median_us <= s.max_us && s.min_us <= s.mean_us &&
          s.mean_us <= s.max_us)) {
      return Error(line_no,
                   "statistics out of order: need min_us <= median_us <= max_us and "
                   "min_us <= mean_us <= max_us");
    }

    std::string key = row.gpu + '\t' + row.kernel + '\t' + ShapeText(row);
    const auto [it, inserted] = first_line_.emplace(std::move(key), line_no);
    if (!inserted) {
      return Error(line_no, fmt::format("duplicate row for GPU '{}', kernel '{}', shape {} "
                                        "(first at line {})",
                                        row.gpu, row.kernel, ShapeText(row), it->second));
    }
    return row;
  }

  static Result<GemmShape> ParseGemm(std::string_view text) {
    GemmShape g;
    std::int64_t* dims[] = {&g.m, &g.n, &g.k, &g.batch};
    std::size_t start = 0;
    for (std::int64_t* d : dims) {
      const std::size_t comma = text.find(',', start);
      if (comma == std::string_view::npos || !ParseInt(text.substr(start, comma - start), d) ||
          *d < 1 || *d > (std::int64_t{1} << 31))
        return Status::InvalidArgument(fmt::format(
            "gemm: expected '-' or M,N,K,BATCH,TYPE (each dimension 1 to 2^31), found '{}'", text));
      start = comma + 1;
    }
    Result<DataType> type = ParseDataType(text.substr(start));
    if (!type.ok())
      return Status::InvalidArgument(
          fmt::format("gemm: {} in '{}'", type.status().message(), text));
    g.dtype = *type;
    return g;
  }

  Status BadDim(int line_no, std::string_view field, std::string_view text) const {
    return Error(line_no,
                 fmt::format("{}: expected X, X,Y or X,Y,Z with positive integers, or '*', "
                             "found '{}'",
                             field, text));
  }

  std::string path_;
  bool v1_ = false;  // a v1 file: no `gemm` column
  std::vector<ProfileRow> rows_;
  std::unordered_map<std::string, int> first_line_;  // duplicate detection
};

}  // namespace

Result<std::vector<ProfileRow>> ParseProfile(std::string_view text, std::string_view path) {
  return Parser(path).Parse(text);
}

std::string FormatProfile(const std::vector<ProfileRow>& rows, std::string_view comment) {
  std::string out = fmt::format("{} {}\n", kProfileMagic, kProfileVersion);
  std::size_t start = 0;
  while (start < comment.size()) {
    const std::size_t end = std::min(comment.find('\n', start), comment.size());
    out += fmt::format("# {}\n", comment.substr(start, end - start));
    start = end + 1;
  }
  out += Columns('\t') + "\n";
  for (const ProfileRow& r : rows) {
    const auto dim = [](const Dim3& d) { return fmt::format("{},{},{}", d.x, d.y, d.z); };
    const bool any = r.any_shape || r.gemm.has_value();
    const ProfileStats& s = r.stats;
    out += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{:.3f}\t{:.3f}\t{:.3f}\t{:.3f}\t{:.3f}\n",
                       r.gpu, r.kernel, any ? "*" : dim(r.grid), any ? "*" : dim(r.block),
                       any ? "*" : std::to_string(r.shared_mem), r.gemm ? GemmText(*r.gemm) : "-",
                       s.samples, s.mean_us, s.median_us, s.min_us, s.max_us, s.stddev_us);
  }
  return out;
}

Result<std::vector<ProfileRow>> ReadProfile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::NotFound(
        fmt::format("{}: cannot read profile database: {}", path, std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return Status::Internal(
        fmt::format("{}: cannot read profile database: {}", path, std::strerror(errno)));
  }
  return ParseProfile(text.str(), path);
}

ProfileProvider::ProfileProvider(std::string provider_name, const std::vector<ProfileRow>& rows,
                                 std::string_view gpu_key)
    : name_(std::move(provider_name)) {
  for (const ProfileRow& row : rows) {
    if (row.gpu != gpu_key) continue;  // measured on another GPU model
    if (row.gemm) {
      const GemmShape& g = *row.gemm;
      gemms_.push_back(Gemm{std::min(g.m, g.n), std::max(g.m, g.n), g.k, g.batch, g.dtype,
                            FromMicros(row.stats.median_us),
                            2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) *
                                static_cast<double>(g.k) * static_cast<double>(g.batch)});
      continue;
    }
    // Names match demangled: a trace names kernels demangled (the PyTorch profiler) or mangled
    // (CUPTI, Myriad's own ops under `myriad run`).
    auto [it, inserted] =
        index_.emplace(DemangleKernelName(row.kernel), static_cast<std::uint32_t>(entries_.size()));
    if (inserted) entries_.emplace_back();
    Entry& entry = entries_[it->second];
    const SimTime duration = FromMicros(row.stats.median_us);
    if (row.any_shape) {
      entry.any_shape = duration;
    } else {
      entry.shapes.push_back(Shape{{row.grid.x, row.grid.y, row.grid.z, row.block.x, row.block.y,
                                    row.block.z, row.shared_mem},
                                   duration});
    }
  }
  std::sort(gemms_.begin(), gemms_.end());
  for (Entry& entry : entries_) {
    std::sort(entry.shapes.begin(), entry.shapes.end(), [](const Shape& a, const Shape& b) {
      return std::lexicographical_compare(std::begin(a.key), std::end(a.key), std::begin(b.key),
                                          std::end(b.key));
    });
    // One point per distinct thread count: the mean of those shapes' medians. Shapes are
    // visited in key order, so the sums (and the result) do not depend on the file's order.
    std::vector<std::pair<double, SimTime>> by_threads;
    for (const Shape& s : entry.shapes) {
      by_threads.emplace_back(
          Threads(Dim3{s.key[0], s.key[1], s.key[2]}, Dim3{s.key[3], s.key[4], s.key[5]}),
          s.duration);
    }
    std::stable_sort(by_threads.begin(), by_threads.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t i = 0; i < by_threads.size();) {
      std::size_t j = i;
      double sum = 0;
      while (j < by_threads.size() && by_threads[j].first == by_threads[i].first) {
        sum += static_cast<double>(by_threads[j].second);
        ++j;
      }
      entry.points.push_back(Point{by_threads[i].first, sum / static_cast<double>(j - i)});
      i = j;
    }
  }
}

bool ProfileProvider::Gemm::operator<(const Gemm& o) const {
  return std::tie(dtype, batch, mn_low, mn_high, k) <
         std::tie(o.dtype, o.batch, o.mn_low, o.mn_high, o.k);
}

std::optional<SimTime> ProfileProvider::GemmDuration(const GemmShape& g) const {
  if (gemms_.empty()) return std::nullopt;
  const Gemm key{std::min(g.m, g.n),
                 std::max(g.m, g.n),
                 g.k,
                 std::max<std::int64_t>(g.batch, 1),
                 g.dtype,
                 0,
                 0};
  const auto it = std::lower_bound(gemms_.begin(), gemms_.end(), key);
  if (it != gemms_.end() && !(key < *it)) return it->duration;
  if (const auto cached = nearest_cache_.find(key); cached != nearest_cache_.end())
    return cached->second;
  // No exact shape: the measured GEMM of the same type nearest in work, scaled by work (the
  // first of equals in sort order).
  const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) *
                       static_cast<double>(g.k) * static_cast<double>(key.batch);
  if (!(flops > 0)) return nearest_cache_[key] = std::nullopt;
  const Gemm* nearest = nullptr;
  double distance = 0;
  for (const Gemm& m : gemms_) {
    if (m.dtype != g.dtype) continue;
    const double d = std::abs(std::log(flops / m.flops));
    if (nearest == nullptr || d < distance) {
      nearest = &m;
      distance = d;
    }
  }
  if (nearest == nullptr) return nearest_cache_[key] = std::nullopt;
  return nearest_cache_[key] =
             std::llround(static_cast<double>(nearest->duration) * flops / nearest->flops);
}

const ProfileProvider::Entry* ProfileProvider::Find(NameId id, const NameTable& names) const {
  if (id >= by_name_.size()) by_name_.resize(std::max<std::size_t>(names.size(), id + 1), 0);
  std::uint32_t slot = by_name_[id];
  if (slot == 0) {
    const auto it = index_.find(DemangleKernelName(names.Name(id)));
    slot = it == index_.end() ? 1 : it->second + 2;
    by_name_[id] = slot;
  }
  return slot == 1 ? nullptr : &entries_[slot - 2];
}

SimTime ProfileProvider::Interpolate(const std::vector<Point>& points, double threads) {
  const Point& first = points.front();
  const Point& last = points.back();
  double duration;
  if (points.size() == 1 || threads <= first.threads) {
    // Smaller than anything measured: launch latency and the tail of one wave floor small
    // launches, so the smallest measurement is kept rather than scaled down.
    duration = first.duration;
  } else if (threads >= last.threads) {
    // Larger than anything measured: once the GPU is full, time grows with the work, so the
    // line through the two largest shapes continues (never downwards).
    const Point& prev = points[points.size() - 2];
    const double slope = (last.duration - prev.duration) / (last.threads - prev.threads);
    duration = last.duration + std::max(0.0, slope) * (threads - last.threads);
  } else {
    const auto hi = std::lower_bound(points.begin(), points.end(), threads,
                                     [](const Point& p, double t) { return p.threads < t; });
    const auto lo = hi - 1;
    const double w = (threads - lo->threads) / (hi->threads - lo->threads);
    duration = lo->duration + w * (hi->duration - lo->duration);
  }
  return std::llround(duration);
}

std::optional<SimTime> ProfileProvider::Duration(const Op& op, const NameTable& names) const {
  if (op.kind != OpKind::kKernel) return std::nullopt;
  const Entry* entry = entries_.empty() ? nullptr : Find(op.name, names);
  if (entry == nullptr) return op.gemm.m > 0 ? GemmDuration(op.gemm) : std::nullopt;
  const std::uint32_t key[7] = {op.grid.x,  op.grid.y,  op.grid.z,    op.block.x,
                                op.block.y, op.block.z, op.shared_mem};
  const auto it = std::lower_bound(
      entry->shapes.begin(), entry->shapes.end(), key, [](const Shape& s, const std::uint32_t* k) {
        return std::lexicographical_compare(std::begin(s.key), std::end(s.key), k, k + 7);
      });
  if (it != entry->shapes.end() && std::equal(std::begin(it->key), std::end(it->key), key)) {
    return it->duration;
  }
  if (entry->any_shape) return *entry->any_shape;
  if (entry->points.empty()) return std::nullopt;
  return Interpolate(entry->points, Threads(op.grid, op.block));
}

}  // namespace myriad::emulator::timing
