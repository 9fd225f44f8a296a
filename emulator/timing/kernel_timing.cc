// The kernel timing chain (docs/kernel-timing.md): trace, profiles, PyTorch's kernels,
// library models, fallback.
#include "myriad/emulator/kernel_timing.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "timing/code_counts.h"
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
  std::optional<SimTime> Duration(const Op& op, const NameTable&) const override {
    if (op.duration >= 0) return op.duration;
    return std::nullopt;
  }
};

}  // namespace

Result<std::unique_ptr<KernelTimer>> KernelTimer::Create(const netmodel::Cluster& cluster,
                                                         const KernelTimingOptions& options) {
  if (options.fallback_duration < 0) {
    return Status::InvalidArgument("kernel timing: the fallback duration must be >= 0");
  }
  auto timer = std::make_unique<KernelTimer>();
  timer->chain_.push_back(std::make_unique<TraceProvider>());
  for (const std::string& path : options.profile_paths) {
    Result<std::vector<timing::ProfileRow>> rows = timing::ReadProfile(path);
    if (!rows.ok()) return rows.status();
    timer->chain_.push_back(
        std::make_unique<timing::ProfileProvider>("profile " + path, *rows, cluster.gpu.key));
  }
  timer->chain_.push_back(std::make_unique<timing::PytorchKernelProvider>(cluster.gpu));
  // Without the launch guess, kernels no family model knows take the fallback, counted or not.
  if (options.launch_guess)
    timer->chain_.push_back(std::make_unique<timing::CodeCountsProvider>(cluster.gpu));
  timer->chain_.push_back(std::make_unique<timing::LibraryModelProvider>(cluster));
  if (options.launch_guess) {
    timer->chain_.push_back(std::make_unique<timing::LaunchGuessProvider>(cluster.gpu));
    timer->guess_index_ = timer->chain_.size() - 1;
  }
  for (const auto& provider : timer->chain_) {
    timer->stats_.push_back(ProviderStats{std::string(provider->name()), 0, 0});
  }
  timer->stats_.push_back(ProviderStats{"fallback", 0, 0});
  timer->fallback_ = options.fallback_duration;
  return timer;
}

SimTime KernelTimer::Time(const Op& op, const NameTable& names) {
  assert(IsTimed(op.kind) && "KernelTimer::Time takes kernel, memcpy and memset ops only");
  if (!IsTimed(op.kind)) return 0;  // NDEBUG builds: nothing to time, nothing counted
  for (std::size_t i = 0; i < chain_.size(); ++i) {
    if (const std::optional<SimTime> duration = chain_[i]->Duration(op, names)) {
      ++stats_[i].ops;
      stats_[i].total += *duration;
      if (i == guess_index_) {  // the coverage report names the guessed kernels
        if (op.name >= guessed_.size())
          guessed_.resize(std::max<std::size_t>(names.size(), op.name + std::size_t{1}));
        ++guessed_[op.name].first;
        guessed_[op.name].second += *duration;
      }
      return *duration;
    }
  }
  ProviderStats& fallback = stats_.back();
  ++fallback.ops;
  fallback.total += fallback_;
  // The coverage report names kernels; a copy only falls through when its link has no rate.
  if (op.kind == OpKind::kKernel) {
    if (op.name >= uncovered_counts_.size()) {
      uncovered_counts_.resize(std::max<std::size_t>(names.size(), op.name + std::size_t{1}), 0);
    }
    ++uncovered_counts_[op.name];
  }
  return fallback_;
}

std::vector<GuessedKernel> KernelTimer::Guessed(const NameTable& names) const {
  std::vector<GuessedKernel> kernels;
  for (std::size_t id = 0; id < guessed_.size(); ++id) {
    if (guessed_[id].first == 0) continue;
    kernels.push_back(GuessedKernel{names.Name(static_cast<NameId>(id)), guessed_[id].first,
                                    guessed_[id].second});
  }
  std::sort(kernels.begin(), kernels.end(), [](const GuessedKernel& a, const GuessedKernel& b) {
    return a.total != b.total ? a.total > b.total : a.name < b.name;
  });
  return kernels;
}

std::vector<UncoveredKernel> KernelTimer::Uncovered(const NameTable& names) const {
  std::vector<UncoveredKernel> kernels;
  for (std::size_t id = 0; id < uncovered_counts_.size(); ++id) {
    if (uncovered_counts_[id] == 0) continue;
    kernels.push_back(UncoveredKernel{names.Name(static_cast<NameId>(id)), uncovered_counts_[id]});
  }
  std::sort(kernels.begin(), kernels.end(), [](const UncoveredKernel& a, const UncoveredKernel& b) {
    return a.count != b.count ? a.count > b.count : a.name < b.name;
  });
  return kernels;
}

}  // namespace myriad::emulator
