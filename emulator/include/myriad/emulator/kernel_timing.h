// Kernel durations: a chain of providers, first answer wins (DESIGN.md "Kernel durations").
//   1. the op's own duration (a trace that recorded it)
//   2. profile databases (measured on a GPU model; docs/kernel-timing.md)
//   3. PyTorch's own kernels by family; library models: GEMM, attention, memory-bound kernels,
//      memcpy and memset
//   4. a guess from the launch for kernels no model knows (their bytes guessed when the op
//      arrived), reported as such
//   5. a configurable fallback, with a coverage report of the kernels that had no answer
// The chain also times memcpy and memset ops.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "myriad/emulator/op.h"
#include "myriad/netmodel/cluster.h"
#include "myriad/status.h"

namespace myriad::emulator {

namespace timing {
class KernelClassCache;
}

class DurationProvider {
 public:
  virtual ~DurationProvider() = default;
  virtual std::string_view name() const = 0;  // "trace", "profile h100.kdb", "gemm-model", ...
  // A duration for a kernel, memcpy or memset op, or nullopt to pass it on.
  virtual std::optional<SimTime> Duration(const Op& op, const NameTable& names) const = 0;
  // Whether its durations are measurements (a trace's, a profile's) rather than a model's:
  // no physical bound second-guesses them (KernelTimer::Implausible).
  virtual bool measured() const { return false; }
};

struct ProviderStats {
  std::string provider;
  std::uint64_t ops = 0;
  SimTime total = 0;
};

struct UncoveredKernel {
  std::string name;
  std::uint64_t count = 0;
};

// A kernel whose duration was guessed from its launch (provider "launch guess").
struct GuessedKernel {
  std::string name;
  std::uint64_t count = 0;
  SimTime total = 0;
};

// Kernel time of one family (timing/kernel_names.h's KernelGroup: "gemm", "elementwise", ...)
// and which providers timed it: how much of the prediction each model carries.
struct FamilyStats {
  std::string family;
  std::uint64_t ops = 0;
  SimTime total = 0;
  std::vector<ProviderStats> by_provider;  // those that timed any of it, in chain order
};

// A kernel whose duration breaks a physical bound: its work moves more bytes than the GPU
// holds, or one launch takes longer than a whole step. An error the report lists, not a figure.
struct ImplausibleKernel {
  std::string name;
  std::string provider;  // the model that timed it
  std::string why;       // "1.2e12 bytes, more than the 80.00 GiB the GPU holds"
};

struct KernelTimingOptions {
  std::vector<std::string> profile_paths;  // profile databases, searched in order
  SimTime fallback_duration = 10 * kPicosPerMicro;
  // Kernels no family model knows: counted from their code or guessed from their launch
  // (true), or the fallback (false).
  bool launch_guess = true;
  // Tensor-core work at the clock a sustained load holds under the GPU's power limit
  // (netmodel/power.h), or at the rates' (short-benchmark) clock.
  bool sustained_clocks = true;
  // FP8 GEMMs accumulated as the program asked (cuBLASLt's default promotes partial sums to
  // FP32 on Hopper, which slows the main loop: docs/kernel-timing.md, "FP8 accumulation on
  // Hopper"), or all with fast accumulation (false).
  bool fp8_promotion = true;
};

// What the power limit cost: tensor-core kernels ran at `clock` of the rates' clock under a
// `power_limit`-watt limit, and took `added` longer in all than at that clock.
struct ClockStats {
  bool sustained = false;  // the timing options' sustained_clocks
  double power_limit = 0;  // watts; 0: the GPU has no power model
  double clock = 1;
  SimTime added = 0;
};

// What FP8 accumulation cost: `promoted` FP8 GEMMs on a GPU that promotes (Hopper) took
// `added` longer in all than with fast accumulation; `promotion`: the timing options'
// fp8_promotion.
struct Fp8AccumulationStats {
  bool promotion = true;
  std::uint64_t fp8_gemms = 0;  // FP8 GEMMs timed by a model
  std::uint64_t promoted = 0;
  SimTime added = 0;
};

class KernelTimer {
 public:
  // Builds the chain for `cluster`'s GPU; fails if a profile database cannot be read.
  static Result<std::unique_ptr<KernelTimer>> Create(const netmodel::Cluster& cluster,
                                                     const KernelTimingOptions& options);

  // Duration of a kernel, memcpy or memset op; counts which provider answered.
  SimTime Time(const Op& op, const NameTable& names);

  // Per provider, in chain order (providers that answered nothing included).
  const std::vector<ProviderStats>& stats() const { return stats_; }
  // Kernels the fallback timed, most frequent first (ties by name).
  std::vector<UncoveredKernel> Uncovered(const NameTable& names) const;
  // Kernels the launch guess timed, largest total first (ties by name).
  std::vector<GuessedKernel> Guessed(const NameTable& names) const;
  // Kernels timed from their code with loops over data Myriad does not know (a bound a
  // kernel computed on the GPU: KernelCounts::assumed_loops), largest total first.
  std::vector<GuessedKernel> Assumed(const NameTable& names) const;
  // Kernel time by family, largest first (ties by name), with the providers that timed each.
  std::vector<FamilyStats> Families() const;
  // The clock tensor-core kernels ran at, and what it added to their time.
  const ClockStats& clocks() const { return clocks_; }
  // The FP8 GEMMs whose partial sums were promoted to FP32, and what that added.
  const Fp8AccumulationStats& fp8_accumulation() const { return fp8_; }
  // Kernels past a physical bound (by name): more bytes than the GPU holds, or, given a step
  // time (> 0), one launch longer than it.
  std::vector<ImplausibleKernel> Implausible(const NameTable& names, SimTime step) const;

  KernelTimer();
  ~KernelTimer();

 private:
  // Counts a timed op: its provider (chain place; chain_.size() for the fallback), its
  // family, and its extremes.
  void Count(const Op& op, const NameTable& names, std::size_t by, SimTime duration);

  std::vector<std::unique_ptr<DurationProvider>> chain_;
  // The same models at the rates' clock, when the sustained clock is lower: what each
  // tensor-core kernel would have taken there (empty otherwise).
  std::vector<std::unique_ptr<DurationProvider>> boost_chain_;
  ClockStats clocks_;
  Fp8AccumulationStats fp8_;
  std::vector<ProviderStats> stats_;
  std::vector<bool> measured_;  // by chain place: DurationProvider::measured()
  SimTime fallback_ = 0;
  std::size_t guess_index_ = SIZE_MAX;  // the launch guess's place in chain_ (none: SIZE_MAX)
  std::size_t code_index_ = SIZE_MAX;   // the code-count model's place in chain_
  std::unique_ptr<timing::KernelClassCache> classes_;  // for each op's family
  std::vector<std::vector<ProviderStats>> families_;   // by KernelGroup, then chain place
  std::uint64_t hbm_bytes_ = 0;                        // what the GPU holds
  bool gpu_promotes_fp8_ = false;                      // timing::PromotesFp8Sums of the GPU: Hopper
  // What the coverage report and the bounds need of each kernel name (by NameId).
  struct PerKernel {
    std::uint64_t uncovered = 0;  // launches the fallback timed
    std::uint64_t guessed = 0;    // launches the launch guess timed, and their total
    SimTime guessed_total = 0;
    std::uint64_t assumed = 0;  // launches counted from their code with assumed loops
    SimTime assumed_total = 0;
    SimTime longest = -1;  // the longest launch, and its provider (chain place)
    std::size_t longest_by = 0;
    std::uint64_t most_bytes = 0;   // the most bytes a model said a launch moves past what
    std::size_t most_bytes_by = 0;  // the GPU holds (0: none)
  };
  std::vector<PerKernel> kernels_;
  // The kernels with a nonzero `count`, with it and their `total`, largest total first.
  std::vector<GuessedKernel> Listed(const NameTable& names, std::uint64_t PerKernel::*count,
                                    SimTime PerKernel::*total) const;
};

}  // namespace myriad::emulator
