// A real trace's kernels replayed through Myriad's models (docs/validation.md, "Kernel models
// against real traces"): each kernel's work from what the trace says of it, timed by the
// chain `myriad run` uses, beside the duration the GPU measured.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "myriad/emulator/kernel_timing.h"
#include "myriad/emulator/profiling.h"
#include "myriad/netmodel/hardware.h"
#include "myriad/netmodel/overlap.h"
#include "timing/kernel_names.h"
#include "timing/launch_guess.h"
#include "timing/pytorch_kernels.h"

namespace myriad::emulator::profiling {
namespace {

// Element counts beyond this are not sizes a trace's tensors have (and would not fit int64).
constexpr double kMaxCount = 1e18;

double Numel(const std::vector<std::int64_t>& dims) {
  double n = 1;
  for (std::int64_t d : dims) n *= static_cast<double>(d);
  return n;
}

// The integer arguments a launch of this family would have reported under `myriad run` (the
// sizes PyTorch passes its kernels), from the ATen op's recorded input shapes: what
// DescribeKernelWork reads. Empty when the shapes were not recorded, or the family needs none.
std::vector<std::int64_t> IntArgsFromShapes(const timing::KernelClass& c, const KernelRecord& r) {
  if (r.input_dims.empty()) return {};
  const std::vector<std::int64_t>& first = r.input_dims.front();
  double largest = 0;  // the iteration size of a broadcasting elementwise op
  for (const auto& dims : r.input_dims) largest = std::max(largest, Numel(dims));
  const std::int64_t last = first.empty() ? 1 : first.back();
  // An empty tensor (a zero dimension) has no work to derive; nor has a count past int64.
  if (last <= 0 || !(largest > 0) || largest > kMaxCount || Numel(first) > kMaxCount) return {};
  const auto rows = static_cast<std::int64_t>(Numel(first) / static_cast<double>(last));
  switch (c.family) {
    case timing::KernelFamily::kElementwise:
    case timing::KernelFamily::kElementwiseUnrolled:
    case timing::KernelFamily::kElementwiseStrided:
    case timing::KernelFamily::kElementwiseIndexed:
      return {static_cast<std::int64_t>(largest)};  // (int N, ...)
    case timing::KernelFamily::kNormForward:
      return {last};  // (N, eps, X, ...), a block per row
    case timing::KernelFamily::kNormBackward:
      if (c.depth == 2) return {rows, last};  // GammaBetaBackward(M, N, ...)
      return {last};                          // grad input (..., N)
    case timing::KernelFamily::kReduction:
      return {static_cast<std::int64_t>(Numel(first))};  // the input, read once
    case timing::KernelFamily::kSoftmax:
      if (c.warp_softmax) return {rows, last, last};  // (batch, stride, elements)
      return {last};                                  // (classes), a block per row
    default:
      return {};
  }
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto at = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(at, v.size() - 1)];
}

}  // namespace

Result<KernelValidation> ValidateKernels(const std::vector<TraceRead>& traces,
                                         std::string_view gpu_key) {
  auto gpu = netmodel::FindGpu(gpu_key);
  if (!gpu.ok()) return gpu.status();
  netmodel::Cluster cluster;
  cluster.gpu = *gpu;
  cluster.nodes = 1;
  cluster.gpus_per_node = 1;
  KernelTimingOptions options;  // no profiles: the models alone, the launch guess on
  auto timer = KernelTimer::Create(cluster, options);
  if (!timer.ok()) return timer.status();
  NameTable names;
  timing::KernelClassCache classes;
  KernelValidation result;
  result.gpu_key = std::string(gpu_key);

  // Times `op`, and says which provider answered (the one whose count moved).
  std::vector<std::uint64_t> ops_before;
  const auto time = [&](const Op& op, std::string* model) {
    const std::vector<ProviderStats>& stats = (*timer)->stats();
    ops_before.resize(stats.size());
    for (std::size_t i = 0; i < stats.size(); ++i) ops_before[i] = stats[i].ops;
    const SimTime t = (*timer)->Time(op, names);
    for (std::size_t i = 0; i < stats.size(); ++i)
      if (stats[i].ops != ops_before[i]) *model = stats[i].provider;
    return ToMicros(t);
  };

  for (const TraceRead& trace : traces) {
    // Kernels another stream's kernel overlapped: sorted by start, each pair that overlaps is
    // found from the one that starts first.
    std::vector<std::size_t> order(trace.kernels.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return trace.kernels[a].start_us < trace.kernels[b].start_us;
    });
    std::vector<bool> overlapped(trace.kernels.size(), false);
    std::vector<bool> nccl(trace.kernels.size(), false);
    for (std::size_t i = 0; i < nccl.size(); ++i)
      nccl[i] = classes.Get(names.Intern(trace.kernels[i].name), names).group ==
                timing::KernelGroup::kCommunication;
    // Beside NCCL: the most blocks of one NCCL kernel, and the overlapped time.
    std::vector<int> nccl_blocks(trace.kernels.size(), 0);
    std::vector<double> nccl_us(trace.kernels.size(), 0);
    const auto beside = [&](std::size_t kernel, std::size_t comm, double us) {
      if (!nccl[comm] || nccl[kernel]) return;
      const Dim3& g = trace.kernels[comm].grid;
      const double blocks = static_cast<double>(g.x) * g.y * g.z;
      nccl_blocks[kernel] = std::max(nccl_blocks[kernel], static_cast<int>(std::min(blocks, 1e6)));
      nccl_us[kernel] += us;
    };
    for (std::size_t i = 0; i < order.size(); ++i) {
      const KernelRecord& a = trace.kernels[order[i]];
      for (std::size_t j = i + 1; j < order.size(); ++j) {
        const KernelRecord& b = trace.kernels[order[j]];
        if (b.start_us >= a.start_us + a.duration_us) break;
        if (b.stream == a.stream) continue;
        overlapped[order[i]] = overlapped[order[j]] = true;
        const double us =
            std::min(a.start_us + a.duration_us, b.start_us + b.duration_us) - b.start_us;
        beside(order[i], order[j], us);
        beside(order[j], order[i], us);
      }
    }
    // A GEMM call is checked whole: its kernels' measured sum against the model's call.
    std::map<std::int64_t, std::size_t> call_check;
    for (std::size_t index = 0; index < trace.kernels.size(); ++index) {
      const KernelRecord& r = trace.kernels[index];
      Op op;
      op.kind = OpKind::kKernel;
      op.name = names.Intern(r.name);
      op.grid = r.grid;
      op.block = r.block;
      op.shared_mem = r.shared_mem;
      if (r.gemm_call >= 0 && static_cast<std::size_t>(r.gemm_call) < trace.gemm_calls.size()) {
        const auto [at, first] = call_check.emplace(r.gemm_call, result.checks.size());
        if (!first) {
          KernelCheck& call = result.checks[at->second];
          call.measured_us += r.duration_us;
          call.overlapped = call.overlapped || overlapped[index];
          call.nccl_blocks = std::max(call.nccl_blocks, nccl_blocks[index]);
          call.nccl_overlap += nccl_us[index];  // in us until the call is whole (below)
          ++call.kernels;
          continue;
        }
        op.gemm = trace.gemm_calls[static_cast<std::size_t>(r.gemm_call)];
        // FP32 operands on tensor cores: the math mode cuBLAS was given (allow_tf32), which
        // only the kernel's name records.
        if (op.gemm.dtype == DataType::kFloat32 && timing::NamesTf32TensorCores(r.name))
          op.gemm.dtype = DataType::kTfloat32;
      } else {
        const timing::KernelClass& c = classes.Get(op.name, names);
        const std::vector<std::int64_t> args = IntArgsFromShapes(c, r);
        const bool described =
            c.family != timing::KernelFamily::kNone && timing::DescribeKernelWork(c, args, &op);
        // As under `myriad run` for a kernel whose code is not at hand: its launch guessed
        // (without the allocations' reach, which a trace does not record).
        if (!described) timing::GuessKernelWork(c.array_element_bytes, {}, &op);
      }
      const timing::KernelGroup group = timing::GroupOf(op, classes.Get(op.name, names));
      if (group == timing::KernelGroup::kCommunication) {
        // A trace records no collective's size, and an NCCL kernel's duration includes its
        // wait for the other ranks: not a kernel model's to predict.
        ++result.communication_kernels;
        result.communication_us += r.duration_us;
        continue;
      }
      KernelCheck check;
      check.name = r.name;
      check.family =
          std::string(timing::ToString(timing::GroupOf(op, classes.Get(op.name, names))));
      check.measured_us = r.duration_us;
      check.overlapped = overlapped[index];
      check.nccl_blocks = nccl_blocks[index];
      check.nccl_overlap = nccl_us[index];
      check.tensor = op.gemm.m > 0 || op.attention.batch > 0 || op.counts.tensor_flops > 0;
      check.grid = r.grid;
      check.block = r.block;
      check.bytes = op.bytes;
      check.predicted_us = time(op, &check.model);
      result.checks.push_back(std::move(check));
    }
  }

  // Overlapped time as a share of each check's measured time (a GEMM call's kernels summed).
  for (KernelCheck& c : result.checks)
    c.nccl_overlap = c.measured_us > 0 ? std::min(1.0, c.nccl_overlap / c.measured_us) : 0;

  // The same tensor-core kernel and launch beside NCCL and alone: the slowdown measured,
  // free of any kernel model's error, against the shared model's.
  {
    struct Launches {
      std::vector<double> beside, alone, blocks;
      std::size_t order = 0;
    };
    std::map<std::tuple<std::string, std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t,
                        std::uint32_t, std::uint32_t>,
             Launches>
        launches;
    for (const KernelCheck& c : result.checks) {
      if (!c.tensor) continue;
      const auto key =
          std::make_tuple(c.name, c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z);
      auto [it, added] = launches.try_emplace(key);
      if (added) it->second.order = launches.size();
      if (c.nccl_blocks == 0) {
        it->second.alone.push_back(c.measured_us);
      } else if (c.nccl_overlap > 0.9) {
        it->second.beside.push_back(c.measured_us);
        it->second.blocks.push_back(c.nccl_blocks);
      }
    }
    std::vector<std::pair<std::size_t, BesideNcclPair>> pairs;
    for (const auto& [key, l] : launches) {
      if (l.beside.size() < 2 || l.alone.size() < 2) continue;
      const double alone = Median(l.alone);
      if (alone <= 0) continue;
      BesideNcclPair p;
      p.name = std::get<0>(key);
      p.grid = {std::get<1>(key), std::get<2>(key), std::get<3>(key)};
      p.block = {std::get<4>(key), std::get<5>(key), std::get<6>(key)};
      p.beside = l.beside.size();
      p.alone = l.alone.size();
      p.nccl_blocks = static_cast<int>(std::lround(Median(l.blocks)));
      p.measured_ratio = Median(l.beside) / alone;
      p.model_ratio = netmodel::TensorKernelStretch(cluster.gpu, p.nccl_blocks);
      pairs.emplace_back(l.order, std::move(p));
    }
    std::stable_sort(pairs.begin(), pairs.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [order, p] : pairs) result.beside_nccl.push_back(std::move(p));
  }

  // Per family and model.
  std::map<std::pair<std::string, std::string>, std::vector<const KernelCheck*>> groups;
  std::map<std::string, double> family_time;
  for (const KernelCheck& c : result.checks) {
    groups[{c.family, c.model}].push_back(&c);
    family_time[c.family] += c.measured_us;
  }
  for (const auto& [key, checks] : groups) {
    FamilyCheck f;
    f.family = key.first;
    f.model = key.second;
    std::vector<double> errors, magnitudes, long_errors, isolated_errors, nccl_errors,
        nccl_shared_errors;
    for (const KernelCheck* c : checks) {
      ++f.checks;
      f.measured_us += c->measured_us;
      f.predicted_us += c->predicted_us;
      if (c->measured_us <= 0) continue;
      const double e = c->predicted_us / c->measured_us - 1;
      errors.push_back(e);
      magnitudes.push_back(std::abs(e));
      if (c->measured_us >= kLongKernelUs) long_errors.push_back(e);
      if (!c->overlapped) isolated_errors.push_back(e);
      if (c->tensor && c->nccl_blocks > 0) {
        nccl_errors.push_back(e);
        const double stretch = netmodel::TensorKernelStretch(cluster.gpu, c->nccl_blocks);
        nccl_shared_errors.push_back(
            c->predicted_us * (1 + (stretch - 1) * c->nccl_overlap) / c->measured_us - 1);
      }
    }
    f.nccl_checks = nccl_errors.size();
    f.nccl_median_error = Median(nccl_errors);
    f.nccl_shared_median_error = Median(nccl_shared_errors);
    f.isolated_checks = isolated_errors.size();
    f.isolated_median_error = Median(isolated_errors);
    f.long_checks = long_errors.size();
    f.long_median_error = Median(long_errors);
    f.median_error = Median(errors);
    f.median_abs_error = Median(magnitudes);
    f.p90_abs_error = Percentile(magnitudes, 0.9);
    result.families.push_back(std::move(f));
  }
  std::stable_sort(result.families.begin(), result.families.end(),
                   [&](const FamilyCheck& a, const FamilyCheck& b) {
                     const double ta = family_time[a.family], tb = family_time[b.family];
                     if (ta != tb) return ta > tb;
                     if (a.family != b.family) return a.family < b.family;
                     return a.measured_us > b.measured_us;
                   });
  return result;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace myriad::emulator::profiling
