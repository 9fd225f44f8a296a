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

class DurationProvider {
 public:
  virtual ~DurationProvider() = default;
  virtual std::string_view name() const = 0;  // "trace", "profile h100.kdb", "gemm-model", ...
  // A duration for a kernel, memcpy or memset op, or nullopt to pass it on.
  virtual std::optional<SimTime> Duration(const Op& op, const NameTable& names) const = 0;
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

struct KernelTimingOptions {
  std::vector<std::string> profile_paths;  // profile databases, searched in order
  SimTime fallback_duration = 10 * kPicosPerMicro;
  // Kernels no family model knows: counted from their code or guessed from their launch
  // (true), or the fallback (false).
  bool launch_guess = true;
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

 private:
  std::vector<std::unique_ptr<DurationProvider>> chain_;
  std::vector<ProviderStats> stats_;
  SimTime fallback_ = 0;
  std::vector<std::uint64_t> uncovered_counts_;  // by NameId
  std::size_t guess_index_ = SIZE_MAX;  // the launch guess's place in chain_ (none: SIZE_MAX)
  std::vector<std::pair<std::uint64_t, SimTime>> guessed_;  // by NameId: count, total
};

}  // namespace myriad::emulator
