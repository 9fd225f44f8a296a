// A launch's work from its kernel's analysed code: for sampled threads spread over the grid,
// the loops' trip counts and the branches' directions are evaluated from the launch's shape
// and extents, block frequencies propagated through the control flow, and the blocks' counts
// summed; the mean over the samples times the threads is the launch's work.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernel_code/analysis.h"

namespace myriad::emulator {
namespace kernel_code {
namespace {

// Threads sampled per launch: enough to see a guard that idles part of the grid to 1/16.
constexpr int kSampledThreads = 16;
// Unknown: a branch is taken half the time (an assumption, counted in assumed_branches).
constexpr double kUnknownBranchProbability = 0.5;
// Expressions deeper than this are not followed (unknown): bounds the evaluation's stack.
constexpr int kMaxDepth = 256;

struct Value {
  bool known = false;
  double v = 0;  // integers as doubles: exact to 2^53, and no overflow to trap on
};

class Evaluator {
 public:
  Evaluator(const KernelCode::Impl& code, Dim3 grid, Dim3 block,
            std::span<const LaunchArgument> args)
      : code_(code), grid_(grid), block_(block), args_(args) {
    memo_.resize(code.nodes.size());
    state_.resize(code.nodes.size(), 0);
    trips_.resize(code.loops.size());
    trip_state_.resize(code.loops.size(), 0);
    taken_flow.resize(code.blocks.size());
    fall_flow.resize(code.blocks.size());
    double footprint = 0;
    for (std::size_t i = 0; i < code.params.size() && i < args.size(); ++i)
      if (code.params[i].address && args[i].known && args[i].value > 0)
        footprint += static_cast<double>(args[i].value);
    footprint_ = footprint;
  }

  void SetThread(double tid[3], double ctaid[3]) {
    for (int i = 0; i < 3; ++i) tid_[i] = tid[i], ctaid_[i] = ctaid[i];
    std::fill(state_.begin(), state_.end(), 0);
    std::fill(trip_state_.begin(), trip_state_.end(), 0);
    std::fill(taken_flow.begin(), taken_flow.end(), 0);
    std::fill(fall_flow.begin(), fall_flow.end(), 0);
  }

  Value Eval(std::int32_t id, int depth = 0) {
    if (id <= 0 || depth > kMaxDepth) return {};
    const auto i = static_cast<std::size_t>(id);
    if (state_[i] == 2) return memo_[i];
    if (state_[i] == 1) return {};  // a cycle: unknown
    state_[i] = 1;
    const Value v = Compute(code_.nodes[i], depth);
    memo_[i] = v;
    state_[i] = 2;
    return v;
  }

  // Per-thread trip count of a loop per entry; nullopt when the formula cannot be evaluated.
  std::optional<double> Trips(int l, int depth = 0) {
    const auto i = static_cast<std::size_t>(l);
    if (trip_state_[i] == 2) return trips_[i];
    if (trip_state_[i] == 1) return std::nullopt;
    trip_state_[i] = 1;
    trips_[i] = ComputeTrips(code_.loops[i], depth);
    trip_state_[i] = 2;
    return trips_[i];
  }

  double footprint() const { return footprint_; }
  // This thread's flow along each block's branch and its fall-through (join nodes read them).
  std::vector<double> taken_flow, fall_flow;

 private:
  std::optional<double> ComputeTrips(const Loop& loop, int depth) {
    if (!loop.formula_known) return std::nullopt;
    const auto k = static_cast<std::size_t>(loop.var);
    const Value init = Eval(loop.init[k], depth + 1);
    const Value offset = Eval(loop.offset, depth + 1);
    const Value step = Eval(loop.step[k], depth + 1);
    const Value bound = Eval(loop.bound, depth + 1);
    if (!init.known || !offset.known || !step.known || !bound.known) return std::nullopt;
    const double a = init.v + offset.v, s = step.v, b = bound.v;
    // The first iteration j at which cmp(a + j*s, b) fails.
    double fail = 0;
    switch (loop.cmp) {
      case Cmp::kLt:
        if (a >= b)
          fail = 0;
        else if (s > 0)
          fail = std::ceil((b - a) / s);
        else
          return std::nullopt;
        break;
      case Cmp::kLe:
        if (a > b)
          fail = 0;
        else if (s > 0)
          fail = std::floor((b - a) / s) + 1;
        else
          return std::nullopt;
        break;
      case Cmp::kGt:
        if (a <= b)
          fail = 0;
        else if (s < 0)
          fail = std::ceil((a - b) / -s);
        else
          return std::nullopt;
        break;
      case Cmp::kGe:
        if (a < b)
          fail = 0;
        else if (s < 0)
          fail = std::floor((a - b) / -s) + 1;
        else
          return std::nullopt;
        break;
      case Cmp::kNe: {
        if (a == b) {
          fail = 0;
          break;
        }
        if (s == 0) return std::nullopt;
        const double n = (b - a) / s;
        if (n < 0 || n != std::floor(n)) return std::nullopt;
        fail = n;
        break;
      }
      case Cmp::kEq:
        fail = a == b ? (s == 0 ? std::numeric_limits<double>::infinity() : 1) : 0;
        if (!std::isfinite(fail)) return std::nullopt;
        break;
    }
    // A test after the body (do-while) runs it once more than the test passes.
    return loop.do_while ? fail + 1 : fail;
  }

  Value Compute(const Node& n, int depth) {
    if (n.opaque) return {};
    switch (n.op) {
      case NodeOp::kUnknown:
        return {};
      case NodeOp::kConst:
        return {true, static_cast<double>(n.value)};
      case NodeOp::kParam: {
        const auto p = static_cast<std::size_t>(n.value);
        if (p >= args_.size() || !args_[p].known || code_.params[p].address) return {};
        return {true, static_cast<double>(args_[p].value)};
      }
      case NodeOp::kSpecial:
        return {true, SpecialValue(static_cast<Special>(n.value))};
      case NodeOp::kLoopVar:
      case NodeOp::kLoopExit: {
        const Loop& loop = code_.loops[static_cast<std::size_t>(n.a)];
        const auto k = static_cast<std::size_t>(n.b);
        const Value init = Eval(loop.init[k], depth + 1);
        if (!init.known) return {};
        if (loop.step[k] < 0) return n.op == NodeOp::kLoopVar ? init : Value{};
        const Value step = Eval(loop.step[k], depth + 1);
        const std::optional<double> trips = Trips(n.a, depth + 1);
        if (!step.known || !trips) return n.op == NodeOp::kLoopVar ? init : Value{};
        // Inside the loop: its mean iteration (exact on average for affine uses, such as a
        // triangular inner loop); after it: where it stopped.
        const double j =
            n.op == NodeOp::kLoopVar ? std::floor(std::max(0.0, *trips - 1) / 2) : *trips;
        return {true, init.v + j * step.v};
      }
      case NodeOp::kJoin:
        for (std::int32_t i = 0; i < n.b; ++i) {
          const JoinInput& in = code_.joins[static_cast<std::size_t>(n.a + i)];
          const auto from = static_cast<std::size_t>(in.block);
          if ((in.taken ? taken_flow[from] : fall_flow[from]) > 0) return Eval(in.value, depth + 1);
        }
        return {};
      default:
        break;
    }
    const Value a = Eval(n.a, depth + 1);
    if (!a.known) return {};
    if (n.op == NodeOp::kNeg) return {true, -a.v};
    if (n.op == NodeOp::kPNot) return {true, a.v != 0 ? 0.0 : 1.0};
    const Value b = Eval(n.b, depth + 1);
    if (!b.known) return {};
    const auto as_int = [](double x) { return static_cast<std::int64_t>(x); };
    switch (n.op) {
      case NodeOp::kAdd:
        return {true, a.v + b.v};
      case NodeOp::kSub:
        return {true, a.v - b.v};
      case NodeOp::kMul:
        return {true, a.v * b.v};
      case NodeOp::kMulHi:
        return {true, std::floor(a.v * b.v / 4294967296.0)};
      case NodeOp::kDiv:
        if (b.v == 0) return {};
        return {true, std::trunc(a.v / b.v)};
      case NodeOp::kRem:
        if (b.v == 0) return {};
        return {true, std::fmod(a.v, b.v)};
      case NodeOp::kShl:
        if (b.v < 0 || b.v > 62) return {};
        return {true, a.v * std::ldexp(1.0, as_int(b.v))};
      case NodeOp::kShr:
        if (b.v < 0 || b.v > 62) return {};
        return {true, std::floor(a.v / std::ldexp(1.0, as_int(b.v)))};
      case NodeOp::kAnd:
        if (std::fabs(a.v) > 9e15 || std::fabs(b.v) > 9e15) return {};
        return {true, static_cast<double>(as_int(a.v) & as_int(b.v))};
      case NodeOp::kMin:
        return {true, std::min(a.v, b.v)};
      case NodeOp::kMax:
        return {true, std::max(a.v, b.v)};
      case NodeOp::kCmp: {
        bool r = false;
        switch (n.cmp) {
          case Cmp::kLt:
            r = a.v < b.v;
            break;
          case Cmp::kLe:
            r = a.v <= b.v;
            break;
          case Cmp::kGt:
            r = a.v > b.v;
            break;
          case Cmp::kGe:
            r = a.v >= b.v;
            break;
          case Cmp::kEq:
            r = a.v == b.v;
            break;
          case Cmp::kNe:
            r = a.v != b.v;
            break;
        }
        return {true, r ? 1.0 : 0.0};
      }
      case NodeOp::kPAnd:
        return {true, (a.v != 0 && b.v != 0) ? 1.0 : 0.0};
      case NodeOp::kPOr:
        return {true, (a.v != 0 || b.v != 0) ? 1.0 : 0.0};
      default:
        return {};
    }
  }

  double SpecialValue(Special s) const {
    switch (s) {
      case Special::kTidX:
        return tid_[0];
      case Special::kTidY:
        return tid_[1];
      case Special::kTidZ:
        return tid_[2];
      case Special::kNtidX:
        return block_.x;
      case Special::kNtidY:
        return block_.y;
      case Special::kNtidZ:
        return block_.z;
      case Special::kCtaidX:
        return ctaid_[0];
      case Special::kCtaidY:
        return ctaid_[1];
      case Special::kCtaidZ:
        return ctaid_[2];
      case Special::kNctaidX:
        return grid_.x;
      case Special::kNctaidY:
        return grid_.y;
      case Special::kNctaidZ:
        return grid_.z;
      case Special::kLaneId:
        return std::fmod(tid_[0], 32);
      case Special::kWarpId:
        return std::floor(tid_[0] / 32);
    }
    return 0;
  }

  const KernelCode::Impl& code_;
  Dim3 grid_, block_;
  std::span<const LaunchArgument> args_;
  double tid_[3] = {}, ctaid_[3] = {};
  std::vector<Value> memo_;
  std::vector<std::uint8_t> state_;  // 0 not evaluated, 1 in progress, 2 done
  std::vector<std::optional<double>> trips_;
  std::vector<std::uint8_t> trip_state_;
  double footprint_ = 0;
};

}  // namespace
}  // namespace kernel_code

KernelWork KernelCode::Work(Dim3 grid, Dim3 block, std::span<const LaunchArgument> args) const {
  using namespace kernel_code;
  const Impl& code = *impl_;
  KernelWork work;
  const double per_block = static_cast<double>(block.x) * block.y * block.z;
  work.blocks = static_cast<double>(grid.x) * grid.y * grid.z;
  work.threads = work.blocks * per_block;
  work.tensor_dtype = code.tensor_dtype;
  if (!(work.threads > 0) || code.blocks.empty()) return work;

  Evaluator eval(code, grid, block, args);
  const double samples = std::min<double>(kSampledThreads, work.threads);
  std::vector<double> inflow(code.blocks.size() + 1);
  std::vector<double> loop_inflow(code.loops.size());
  Counts total;
  for (int k = 0; k < static_cast<int>(samples); ++k) {
    // The middle of the k-th of `samples` equal parts of the blocks and, within that block,
    // of its threads: the global index b * per_block + t spreads evenly over the grid, and
    // the threads within a block over the block (guards on threadIdx alone).
    const double b = std::min(work.blocks - 1, std::floor((k + 0.5) * work.blocks / samples));
    const double t = std::min(per_block - 1, std::floor((k + 0.5) * per_block / samples));
    double tid[3] = {std::fmod(t, block.x), std::fmod(std::floor(t / block.x), block.y),
                     std::floor(t / (static_cast<double>(block.x) * block.y))};
    double ctaid[3] = {std::fmod(b, grid.x), std::fmod(std::floor(b / grid.x), grid.y),
                       std::floor(b / (static_cast<double>(grid.x) * grid.y))};
    eval.SetThread(tid, ctaid);
    std::fill(inflow.begin(), inflow.end(), 0);
    inflow[0] = 1;
    const auto probability = [&](const PredRef& p, bool* assumed) {
      const Value v = eval.Eval(p.node);
      if (!v.known) {
        *assumed = true;
        return kUnknownBranchProbability;
      }
      const bool taken = (v.v != 0) != p.negated;
      return taken ? 1.0 : 0.0;
    };
    for (std::size_t bi = 0; bi < code.blocks.size(); ++bi) {
      const Block& blk = code.blocks[bi];
      double freq = inflow[bi];
      if (blk.header_of >= 0) {
        const auto l = static_cast<std::size_t>(blk.header_of);
        loop_inflow[l] = freq;
        if (freq == 0) continue;  // not entered by this thread: its trip count is moot
        std::optional<double> trips = eval.Trips(blk.header_of);
        if (!trips) {
          // Bounded by the allocations: the loop's global accesses sweep, across all threads,
          // the memory its kernel's pointers reach once; without either, one iteration.
          const Loop& loop = code.loops[l];
          // Loops the code leaves unbounded share the footprint.
          // Per iteration, over all threads, at the rate this thread enters the loop.
          const double per_iteration =
              loop.bytes_per_iteration * work.threads * freq * std::max(1, code.unbounded_loops);
          trips = per_iteration > 0 && eval.footprint() > 0
                      ? std::max(1.0 / freq, eval.footprint() / per_iteration)
                      : 1.0;
          if (k == 0) ++work.assumed_loops;
        }
        freq *= *trips;
      }
      if (freq == 0 && blk.latch_of < 0) continue;
      total.Add(blk.base, freq);
      bool assumed = false;
      for (const auto& [guard, counts] : blk.guarded)
        total.Add(counts, freq * probability(guard, &assumed));
      // Where the flow goes on.
      const auto leaves = [&](int target) {
        return blk.innermost_loop >= 0 &&
               (target < code.loops[static_cast<std::size_t>(blk.innermost_loop)].header ||
                target > code.loops[static_cast<std::size_t>(blk.innermost_loop)].latch);
      };
      const std::size_t next = bi + 1;
      const auto go = [&](std::size_t to, double amount, bool taken) {
        if (to < inflow.size()) inflow[to] += amount;
        (taken ? eval.taken_flow : eval.fall_flow)[bi] += amount;
      };
      if (blk.latch_of >= 0) {
        // The loop's flow leaves it once per entry, however it iterated.
        const Loop& loop = code.loops[static_cast<std::size_t>(blk.latch_of)];
        const double out = loop_inflow[static_cast<std::size_t>(blk.latch_of)];
        if (loop.exit_block >= 0) {  // tested at the top: out by the test's branch
          inflow[static_cast<std::size_t>(loop.exit_target)] += out;
          eval.taken_flow[static_cast<std::size_t>(loop.exit_block)] += out;
        } else {
          go(next, out, false);
        }
      } else {
        switch (blk.end) {
          case BlockEnd::kReturn:
            break;
          case BlockEnd::kFallThrough:
            go(next, freq, false);
            break;
          case BlockEnd::kBranch:
            // A `continue` back to a header is already counted by the loop's trips.
            if (!leaves(blk.target) && static_cast<std::size_t>(blk.target) > bi)
              go(static_cast<std::size_t>(blk.target), freq, true);
            break;
          case BlockEnd::kConditionalBranch: {
            if (leaves(blk.target) || static_cast<std::size_t>(blk.target) <= bi) {
              go(next, freq, false);  // an exit test or a break: the loop's exit counts it
              break;
            }
            const double p = probability(blk.branch, &assumed);
            go(static_cast<std::size_t>(blk.target), freq * p, true);
            go(next, freq * (1 - p), false);
            break;
          }
        }
      }
      if (assumed && k == 0) ++work.assumed_branches;
    }
  }
  const double scale = work.threads / samples;
  work.global_bytes = total.global_bytes * scale;
  work.fma_flops = total.fma_flops * scale;
  work.fp64_flops = total.fp64_flops * scale;
  work.tensor_flops = total.tensor_flops * scale;
  work.sfu_ops = total.sfu_ops * scale;
  work.instructions = total.instructions * scale;
  return work;
}

}  // namespace myriad::emulator
