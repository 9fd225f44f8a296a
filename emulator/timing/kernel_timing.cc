// The kernel timing chain (docs/kernel-timing.md): trace, profiles, PyTorch's kernels,
// library models, fallback.
#include "myriad/emulator/kernel_timing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <utility>

#include "myriad/netmodel/power.h"
#include "timing/code_counts.h"
#include "timing/kernel_names.h"
#include "timing/launch_guess.h"
#include "timing/library_model.h"
#include "timing/profile_database.h"
#include "timing/pytorch_kernels.h"

namespace myriad::emulator {
namespace {

bool IsTimed(OpKind kind) {
  return kind == OpKind::kKernel || kind == OpKind::kMemcpy || kind == OpKind::kMemset;
}

// Provider "trace": the duration the op source recorded (a trace's duration_us).
class TraceProvider : public DurationProvider {
 public:
  std::string_view name() const override { return "trace"; }
  bool measured() const override { return true; }
  std::optional<SimTime> Duration(const Op& op, const NameTable&) const override {
    if (op.duration >= 0) return op.duration;
    return std::nullopt;
  }
};

}  // namespace

KernelTimer::KernelTimer() : classes_(std::make_unique<timing::KernelClassCache>()) {}
KernelTimer::~KernelTimer() = default;

Result<std::unique_ptr<KernelTimer>> KernelTimer::Create(const netmodel::Cluster& cluster,
                                                         const KernelTimingOptions& options) {
  if (options.fallback_duration < 0) {
    return Status::InvalidArgument("kernel timing: the fallback duration must be >= 0");
  }
  auto timer = std::make_unique<KernelTimer>();
  // Model providers for a GPU at some clock; `profiles` adds the measured databases.
  const auto build = [&](const netmodel::Cluster& at, bool profiles,
                         std::vector<std::unique_ptr<DurationProvider>>* chain) -> Status {
    chain->push_back(std::make_unique<TraceProvider>());
    for (const std::string& path : options.profile_paths) {
      if (!profiles) {  // a placeholder keeps the chains' places aligned
        chain->push_back(std::make_unique<TraceProvider>());
        continue;
      }
      Result<std::vector<timing::ProfileRow>> rows = timing::ReadProfile(path);
      if (!rows.ok()) return rows.status();
      chain->push_back(
          std::make_unique<timing::ProfileProvider>("profile " + path, *rows, at.gpu.key));
    }
    chain->push_back(std::make_unique<timing::PytorchKernelProvider>(at.gpu));
    // Without the launch guess, kernels no family model knows take the fallback, counted or
    // not.
    if (options.launch_guess) {
      if (chain == &timer->chain_) timer->code_index_ = chain->size();
      chain->push_back(std::make_unique<timing::CodeCountsProvider>(at.gpu));
    }
    chain->push_back(std::make_unique<timing::LibraryModelProvider>(at));
    if (options.launch_guess)
      chain->push_back(std::make_unique<timing::LaunchGuessProvider>(at.gpu));
    return Status::Ok();
  };
  timer->fp8_.promotion = options.fp8_promotion;
  ClockStats& clocks = timer->clocks_;
  clocks.sustained = options.sustained_clocks;
  clocks.clock = options.sustained_clocks ? netmodel::SustainedTensorClock(cluster.gpu) : 1.0;
  clocks.power_limit = cluster.gpu.tensor_power > 0 ? cluster.gpu.power_limit : 0;
  netmodel::Cluster timed = cluster;
  if (clocks.clock < 1) timed.gpu = netmodel::AtSustainedClock(cluster.gpu);
  MYRIAD_RETURN_IF_ERROR(build(timed, true, &timer->chain_));
  if (clocks.clock < 1) MYRIAD_RETURN_IF_ERROR(build(cluster, false, &timer->boost_chain_));
  if (options.launch_guess) timer->guess_index_ = timer->chain_.size() - 1;
  for (const auto& provider : timer->chain_) {
    timer->stats_.push_back(ProviderStats{std::string(provider->name()), 0, 0});
    timer->measured_.push_back(provider->measured());
  }
  timer->stats_.push_back(ProviderStats{"fallback", 0, 0});
  timer->fallback_ = options.fallback_duration;
  timer->families_.assign(timing::kKernelGroups, timer->stats_);
  for (auto& family : timer->families_)
    for (ProviderStats& p : family) p.ops = 0, p.total = 0;
  timer->hbm_bytes_ = static_cast<std::uint64_t>(cluster.gpu.hbm_bytes);
  timer->gpu_promotes_fp8_ = timing::PromotesFp8Sums(cluster.gpu);
  return timer;
}

SimTime KernelTimer::Time(const Op& op, const NameTable& names) {
  assert(IsTimed(op.kind) && "KernelTimer::Time takes kernel, memcpy and memset ops only");
  if (!IsTimed(op.kind)) return 0;  // NDEBUG builds: nothing to time, nothing counted
  const bool fp8_gemm = op.gemm.m > 0 && timing::IsFp8(op.gemm.dtype);
  if (fp8_gemm && !op.gemm.fast_accumulation && !fp8_.promotion) {
    Op fast = op;  // --fp8-accumulation fast: every FP8 GEMM as if it asked for it
    fast.gemm.fast_accumulation = true;
    return Time(fast, names);
  }
  std::size_t by = chain_.size();  // the fallback's place
  SimTime duration = fallback_;
  for (std::size_t i = 0; i < chain_.size(); ++i) {
    if (const std::optional<SimTime> d = chain_[i]->Duration(op, names)) {
      by = i;
      duration = *d;
      break;
    }
  }
  // What promotion added: the same model's time with fast accumulation, on a GPU that
  // promotes (a measured duration is the GPU's own).
  if (fp8_gemm && by < chain_.size() && !measured_[by]) {
    ++fp8_.fp8_gemms;
    if (!op.gemm.fast_accumulation && gpu_promotes_fp8_) {
      Op fast = op;
      fast.gemm.fast_accumulation = true;
      if (const std::optional<SimTime> d = chain_[by]->Duration(fast, names); d && *d < duration)
        ++fp8_.promoted, fp8_.added += duration - *d;
    }
  }
  // Only work on tensor cores runs slower at the sustained clock; a measured duration is the
  // GPU's own.
  if (!boost_chain_.empty() && by < chain_.size() && !measured_[by] &&
      (op.gemm.m > 0 || op.attention.batch > 0 || op.counts.tensor_flops > 0)) {
    if (const std::optional<SimTime> boost = boost_chain_[by]->Duration(op, names))
      clocks_.added += std::max<SimTime>(0, duration - *boost);
  }
  Count(op, names, by, duration);
  return duration;
}

void KernelTimer::Count(const Op& op, const NameTable& names, std::size_t by, SimTime duration) {
  ++stats_[by].ops;
  stats_[by].total += duration;
  const timing::KernelGroup group = op.kind == OpKind::kKernel
                                        ? timing::GroupOf(op, classes_->Get(op.name, names))
                                        : timing::GroupOf(op, timing::KernelClass{});
  ProviderStats& family = families_[static_cast<std::size_t>(group)][by];
  ++family.ops;
  family.total += duration;
  // The coverage report names kernels; a copy only falls through when its link has no rate.
  if (op.kind != OpKind::kKernel) return;
  if (op.name >= kernels_.size())
    kernels_.resize(std::max<std::size_t>(names.size(), op.name + std::size_t{1}));
  PerKernel& k = kernels_[op.name];
  if (duration > k.longest) k.longest = duration, k.longest_by = by;
  // Only work the models derived (bytes from a family rule, the code or the launch) can be
  // wrong this way; a trace's or a profile's duration is a measurement.
  if (op.bytes > hbm_bytes_ && hbm_bytes_ > 0 && op.bytes > k.most_bytes && by < chain_.size() &&
      !measured_[by])
    k.most_bytes = op.bytes, k.most_bytes_by = by;
  if (by == guess_index_) ++k.guessed, k.guessed_total += duration;
  if (by == code_index_ && op.counts.assumed_loops > 0) ++k.assumed, k.assumed_total += duration;
  if (by == chain_.size()) ++k.uncovered;
}

std::vector<FamilyStats> KernelTimer::Families() const {
  std::vector<FamilyStats> families;
  for (std::size_t g = 0; g < families_.size(); ++g) {
    FamilyStats f;
    f.family = std::string(timing::ToString(static_cast<timing::KernelGroup>(g)));
    for (const ProviderStats& p : families_[g]) {
      if (p.ops == 0) continue;
      f.ops += p.ops;
      f.total += p.total;
      f.by_provider.push_back(p);
    }
    if (f.ops > 0) families.push_back(std::move(f));
  }
  std::sort(families.begin(), families.end(), [](const FamilyStats& a, const FamilyStats& b) {
    return a.total != b.total ? a.total > b.total : a.family < b.family;
  });
  return families;
}

std::vector<ImplausibleKernel> KernelTimer::Implausible(const NameTable& names,
                                                        SimTime step) const {
  std::vector<ImplausibleKernel> kernels;
  const auto provider = [&](std::size_t by) { return stats_[by].provider; };
  for (std::size_t id = 0; id < kernels_.size(); ++id) {
    const PerKernel& e = kernels_[id];
    const std::string name = names.Name(static_cast<NameId>(id));
    if (e.most_bytes > 0)
      kernels.push_back(
          {name, provider(e.most_bytes_by),
           fmt::format("its work was said to move {} bytes, more than the {:.2f} GiB the GPU holds",
                       e.most_bytes, static_cast<double>(hbm_bytes_) / (1ull << 30))});
    if (step > 0 && e.longest > step)
      kernels.push_back({name, provider(e.longest_by),
                         fmt::format("one launch took {:.3f} us, longer than the whole step "
                                     "({:.3f} us)",
                                     ToMicros(e.longest), ToMicros(step))});
  }
  return kernels;
}

std::vector<GuessedKernel> KernelTimer::Listed(const NameTable& names,
                                               std::uint64_t PerKernel::*count,
                                               SimTime PerKernel::*total) const {
  std::vector<GuessedKernel> kernels;
  for (std::size_t id = 0; id < kernels_.size(); ++id) {
    if (kernels_[id].*count == 0) continue;
    kernels.push_back(GuessedKernel{names.Name(static_cast<NameId>(id)), kernels_[id].*count,
                                    kernels_[id].*total});
  }
  std::sort(kernels.begin(), kernels.end(), [](const GuessedKernel& a, const GuessedKernel& b) {
    return a.total != b.total ? a.total > b.total : a.name < b.name;
  });
  return kernels;
}

std::vector<GuessedKernel> KernelTimer::Guessed(const NameTable& names) const {
  return Listed(names, &PerKernel::guessed, &PerKernel::guessed_total);
}

std::vector<GuessedKernel> KernelTimer::Assumed(const NameTable& names) const {
  return Listed(names, &PerKernel::assumed, &PerKernel::assumed_total);
}

std::vector<UncoveredKernel> KernelTimer::Uncovered(const NameTable& names) const {
  std::vector<UncoveredKernel> kernels;
  for (std::size_t id = 0; id < kernels_.size(); ++id) {
    if (kernels_[id].uncovered == 0) continue;
    kernels.push_back(UncoveredKernel{names.Name(static_cast<NameId>(id)), kernels_[id].uncovered});
  }
  std::sort(kernels.begin(), kernels.end(), [](const UncoveredKernel& a, const UncoveredKernel& b) {
    return a.count != b.count ? a.count > b.count : a.name < b.name;
  });
  return kernels;
}

}  // namespace myriad::emulator
