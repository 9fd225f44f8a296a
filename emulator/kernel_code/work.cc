// A launch's work from its kernel's analysed code: for sampled threads spread over the grid,
// the loops' trip counts and the branches' directions are evaluated from the launch's shape
// and extents, block frequencies propagated through the control flow, and the blocks' counts
// summed; the mean over the samples times the threads is the launch's work.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

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
// A geometric variable halves or doubles (at least) each trip: from any 64-bit value it
// reaches its fixed point (0, -1) or passes any bound well within this many; a loop still
// running after them is not counted (an assumption).
constexpr int kMaxGeometricTrips = 130;

struct Value {
  bool known = false;
  double v = 0;  // integers as doubles: exact to 2^53, and no overflow to trap on
};

bool Compare(Cmp cmp, double a, double b) {
  switch (cmp) {
    case Cmp::kLt:
      return a < b;
    case Cmp::kLe:
      return a <= b;
    case Cmp::kGt:
      return a > b;
    case Cmp::kGe:
      return a >= b;
    case Cmp::kEq:
      return a == b;
    case Cmp::kNe:
      return a != b;
  }
  return false;
}

// A geometric update, x >> c, x << c, x / c or x * c (kUnknown: x itself), with its operand
// resolved once: a step is then a multiply or a divide and a rounding, as Compute gives.
struct GeometricStep {
  NodeOp op = NodeOp::kUnknown;
  double factor = 1;
  bool valid = true;
  GeometricStep(NodeOp o, double arg) : op(o) {
    switch (op) {
      case NodeOp::kShr:
      case NodeOp::kShl:
        valid = arg >= 0 && arg <= 62;
        if (valid) factor = std::ldexp(1.0, static_cast<int>(arg));
        break;
      case NodeOp::kDiv:
        valid = arg != 0;
        factor = arg;
        break;
      case NodeOp::kMul:
        factor = arg;
        break;
      case NodeOp::kUnknown:
        break;
      default:
        valid = false;
    }
  }
  double operator()(double x) const {
    switch (op) {
      case NodeOp::kShr:
        return std::floor(x / factor);
      case NodeOp::kDiv:
        return std::trunc(x / factor);
      case NodeOp::kShl:
      case NodeOp::kMul:
        return x * factor;
      default:
        return x;
    }
  }
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
    trips_[i] = ComputeTrips(l, depth);
    trip_state_[i] = 2;
    return trips_[i];
  }

  double footprint() const { return footprint_; }

  // The share of a block's threads for which predicate `id` holds when it is a rank test
  // (threadIdx.x == 0, lane == 0, threadIdx.x % 32 != 0: the one thread a block or a warp
  // elects, which sampled threads would hardly ever be) or combines one with predicates this
  // thread evaluates (threadIdx.x == 0 && blockIdx.x == 0), taken as independent. nullopt
  // for any other predicate, or one that cannot be evaluated.
  std::optional<double> RankShare(std::int32_t id, int depth = 0) {
    if (id <= 0) return std::nullopt;
    const Node& n = code_.nodes[static_cast<std::size_t>(id)];
    if (n.value == kNoRankTest || depth > 16) return std::nullopt;
    const auto share = [&](std::int32_t x) -> std::optional<double> {
      if (auto s = RankShare(x, depth + 1)) return s;
      const Value v = Eval(x);
      if (!v.known) return std::nullopt;
      return v.v != 0 ? 1.0 : 0.0;
    };
    switch (n.op) {
      case NodeOp::kCmp: {
        const double group = RankGroup(n.value == kRankTestA ? n.a : n.b);
        const Value w = Eval(n.value == kRankTestA ? n.b : n.a);
        if (!(group > 0) || !w.known) return std::nullopt;
        const bool one = w.v >= 0 && w.v < group && w.v == std::floor(w.v);
        const double equal = one ? 1 / group : 0;
        return n.cmp == Cmp::kEq ? equal : 1 - equal;
      }
      case NodeOp::kPNot: {
        const std::optional<double> a = share(n.a);
        if (!a) return std::nullopt;
        return 1 - *a;
      }
      case NodeOp::kPAnd:
      case NodeOp::kPOr: {
        const std::optional<double> a = share(n.a), b = share(n.b);
        if (!a || !b) return std::nullopt;
        return n.op == NodeOp::kPAnd ? *a * *b : 1 - (1 - *a) * (1 - *b);
      }
      default:
        return std::nullopt;
    }
  }

  // This thread's flow along each block's branch and its fall-through (join nodes read them).
  std::vector<double> taken_flow, fall_flow;

 private:
  // A geometric loop's run for one thread: its inputs, its trips, and the sum of the compared
  // variable's values over them and its value after. Kept from one sampled thread to the next
  // (which mostly share a loop over the block's size).
  struct GeometricRun {
    bool valid = false;
    double init = 0, offset = 0, step = 0, bound = 0, arg = 0;
    std::optional<double> trips;
    double sum = 0, exit = 0;
    bool Same(const GeometricRun& o) const {
      return valid && init == o.init && offset == o.offset && step == o.step && bound == o.bound &&
             arg == o.arg;
    }
  };

  std::optional<double> ComputeTrips(int l, int depth) {
    const Loop& loop = code_.loops[static_cast<std::size_t>(l)];
    if (!loop.formula_known) return std::nullopt;
    const auto k = static_cast<std::size_t>(loop.var);
    const Value init = Eval(loop.init[k], depth + 1);
    const Value offset = Eval(loop.offset, depth + 1);
    const Value step = Eval(loop.step[k], depth + 1);
    const Value bound = Eval(loop.bound, depth + 1);
    if (!init.known || !offset.known || !step.known || !bound.known) return std::nullopt;
    if (loop.step_op[k] != NodeOp::kAdd) {
      // Geometric: run the variable through its values, as the loop does, until the test
      // fails.
      Value arg{true, 0};
      if (loop.compare_op != NodeOp::kUnknown) arg = Eval(loop.compare_arg, depth + 1);
      if (!arg.known) return std::nullopt;
      GeometricRun run;
      run.valid = true;
      run.init = init.v;
      run.offset = offset.v;
      run.step = step.v;
      run.bound = bound.v;
      run.arg = arg.v;
      if (runs_.empty()) runs_.resize(code_.loops.size());
      GeometricRun& last = runs_[static_cast<std::size_t>(l)];
      if (last.Same(run)) return last.trips;
      const GeometricStep compared(loop.compare_op, arg.v), next(loop.step_op[k], step.v);
      double x = init.v;
      for (int j = 0; j < kMaxGeometricTrips && compared.valid && next.valid; ++j) {
        if (!Compare(loop.cmp, compared(x) + offset.v, bound.v)) {
          run.trips = loop.do_while ? j + 1 : j;
          if (loop.do_while) run.sum += x;
          run.exit = loop.do_while ? next(x) : x;
          break;
        }
        run.sum += x;
        const double y = next(x);
        if (y == x) break;  // a fixed point: never leaves
        x = y;
      }
      last = run;
      return run.trips;
    }
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

  // A load from known contents: its bytes, little-endian, at the pointer's offset in them
  // plus the node's; unknown outside them.
  Value Load(const Node& n, int depth) {
    const auto p = static_cast<std::size_t>(n.a);
    if (p >= args_.size() || !args_[p].contents) return {};
    const Value offset = Eval(n.b, depth + 1);
    if (!offset.known || offset.v != std::floor(offset.v)) return {};
    const std::string& bytes = *args_[p].contents;
    const double at = static_cast<double>(args_[p].content_offset) + offset.v;
    const std::int64_t width = n.value & (kLoadSigned - 1);
    if (at < 0 || at + static_cast<double>(width) > static_cast<double>(bytes.size())) return {};
    std::uint64_t raw = 0;
    std::memcpy(&raw, bytes.data() + static_cast<std::size_t>(at), static_cast<std::size_t>(width));
    if ((n.value & kLoadSigned) && width < 8) {
      const std::uint64_t sign = std::uint64_t{1} << (8 * width - 1);
      raw = (raw ^ sign) - sign;  // sign-extended
    }
    return {true, (n.value & kLoadSigned) ? static_cast<double>(static_cast<std::int64_t>(raw))
                                          : static_cast<double>(raw)};
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
      case NodeOp::kLoad:
        return Load(n, depth);
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
        if (loop.step_op[k] != NodeOp::kAdd) {
          const bool inside = n.op == NodeOp::kLoopVar;
          if (n.b == loop.var) {  // the compared variable: its run gave the trips
            const GeometricRun& run = runs_[static_cast<std::size_t>(n.a)];
            if (inside && *trips <= 0) return init;
            return {true, inside ? run.sum / *trips : run.exit};
          }
          return GeometricValue(loop.step_op[k], init.v, step.v, *trips, inside);
        }
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
      case NodeOp::kOr:
        if (std::fabs(a.v) > 9e15 || std::fabs(b.v) > 9e15) return {};
        return {true, static_cast<double>(as_int(a.v) | as_int(b.v))};
      case NodeOp::kMin:
        return {true, std::min(a.v, b.v)};
      case NodeOp::kMax:
        return {true, std::max(a.v, b.v)};
      case NodeOp::kCmp:
        return {true, Compare(n.cmp, a.v, b.v) ? 1.0 : 0.0};
      case NodeOp::kPAnd:
        return {true, (a.v != 0 && b.v != 0) ? 1.0 : 0.0};
      case NodeOp::kPOr:
        return {true, (a.v != 0 || b.v != 0) ? 1.0 : 0.0};
      default:
        return {};
    }
  }

  // A geometric variable in the loop (the mean of its values over the trips: exact on
  // average for affine uses, `if (threadIdx.x < s)` in a tree reduction, an inner loop to s)
  // or after it (where it stopped).
  static Value GeometricValue(NodeOp op, double init, double step, double trips, bool inside) {
    if (inside && trips <= 0) return {true, init};
    const GeometricStep next(op, step);
    if (!next.valid) return {};
    double x = init, sum = 0;
    for (int j = 0; j < trips; ++j) {
      if (j >= kMaxGeometricTrips) return {};
      sum += x;
      const double y = next(x);
      if (y == x) {  // a fixed point: the rest of the trips keep it
        sum += x * (trips - j - 1);
        break;
      }
      x = y;
    }
    return {true, inside ? sum / trips : x};
  }

  // The number of threads (or blocks) among which node `id` is a rank (each value once):
  // threadIdx.x among the block's x, the lane among 32, blockIdx.x among the grid's x,
  // threadIdx.x & (2^k - 1) among 2^k; 0 if none.
  double RankGroup(std::int32_t id) const {
    const Node& n = code_.nodes[static_cast<std::size_t>(id)];
    const double block_threads = static_cast<double>(block_.x) * block_.y * block_.z;
    if (n.op == NodeOp::kSpecial) {
      if (n.value == static_cast<std::int64_t>(Special::kTidX)) return block_.x;
      if (n.value == static_cast<std::int64_t>(Special::kCtaidX)) return grid_.x;
      if (n.value == static_cast<std::int64_t>(Special::kLaneId))
        return std::min(32.0, block_threads);
      return 0;
    }
    if (n.op != NodeOp::kAnd) return 0;
    for (const auto& [x, m] : {std::pair{n.a, n.b}, std::pair{n.b, n.a}}) {
      const Node& mask = code_.nodes[static_cast<std::size_t>(m)];
      if (mask.op != NodeOp::kConst || mask.value < 0 || mask.value > (1 << 30)) continue;
      const double inner = RankGroup(x);
      if (inner > 0) return std::min(inner, static_cast<double>(mask.value) + 1);
    }
    return 0;
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
  std::vector<GeometricRun> runs_;  // by loop, once a geometric loop is run
  std::vector<std::uint8_t> trip_state_;
  double footprint_ = 0;
};

}  // namespace
}  // namespace kernel_code

namespace kernel_code {
namespace {

// Threads sampled instead where a loop's trip count reads known contents: every thread of a
// small grid, else this many spread over it by the golden ratio. Sixteen evenly spaced
// samples would see a few rows of a table that differs from row to row (a block mask's
// counts per query block, CSR row lengths), and can all land on the same row.
constexpr int kDataSampledThreads = 1024;
constexpr double kGoldenFraction = 0.6180339887498949;  // (sqrt(5) - 1) / 2

bool ReadsKnownContents(const KernelCode::Impl& code, std::span<const LaunchArgument> args) {
  bool contents = false;
  for (const LaunchArgument& a : args) contents = contents || a.contents != nullptr;
  if (!contents) return false;
  for (const Loop& loop : code.loops)
    if (loop.reads_memory) return true;
  return false;
}

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
  const bool by_data = ReadsKnownContents(code, args);
  const double samples =
      std::min<double>(by_data ? kDataSampledThreads : kSampledThreads, work.threads);
  std::vector<double> inflow(code.blocks.size() + 1);
  std::vector<double> loop_inflow(code.loops.size());
  // The sites where some sampled thread took an assumption: loops, then blocks (a block's
  // guards and its branch), then copies.
  const std::size_t block_sites = code.loops.size();
  const std::size_t copy_sites = block_sites + code.blocks.size();
  std::vector<std::uint8_t> assumed_at(copy_sites + static_cast<std::size_t>(code.copy_sites));
  Counts total;
  for (int k = 0; k < static_cast<int>(samples); ++k) {
    // The middle of the k-th of `samples` equal parts of the blocks and, within that block,
    // of its threads: the global index b * per_block + t spreads evenly over the grid, and
    // the threads within a block over the block (guards on threadIdx alone).
    double b = std::min(work.blocks - 1, std::floor((k + 0.5) * work.blocks / samples));
    double t = std::min(per_block - 1, std::floor((k + 0.5) * per_block / samples));
    if (by_data) {  // the k-th thread of the grid, or the golden ratio's k-th point in it
      const double g = samples == work.threads
                           ? k
                           : std::floor(std::fmod(0.5 + k * kGoldenFraction, 1.0) * work.threads);
      b = std::floor(g / per_block);
      t = std::fmod(g, per_block);
    }
    double tid[3] = {std::fmod(t, block.x), std::fmod(std::floor(t / block.x), block.y),
                     std::floor(t / (static_cast<double>(block.x) * block.y))};
    double ctaid[3] = {std::fmod(b, grid.x), std::fmod(std::floor(b / grid.x), grid.y),
                       std::floor(b / (static_cast<double>(grid.x) * grid.y))};
    eval.SetThread(tid, ctaid);
    std::fill(inflow.begin(), inflow.end(), 0);
    inflow[0] = 1;
    const auto probability = [&](const PredRef& p, bool* assumed) {
      if (const std::optional<double> share = eval.RankShare(p.node))
        return p.negated ? 1 - *share : *share;
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
          assumed_at[l] = 1;
        }
        freq *= *trips;
      }
      if (freq == 0 && blk.latch_of < 0) continue;
      total.Add(blk.base, freq);
      bool assumed = false;
      for (const auto& [guard, counts] : blk.guarded)
        total.Add(counts, freq * probability(guard, &assumed));
      for (const SizedCopy& c : blk.copies) {
        const double share = c.guarded ? freq * probability(c.guard, &assumed) : freq;
        if (share == 0) continue;
        const Value bytes = eval.Eval(c.bytes);
        if (bytes.known && bytes.v >= 0)
          total.global_bytes += bytes.v * c.times * share;
        else
          assumed_at[copy_sites + static_cast<std::size_t>(c.site)] = 1;
      }
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
      if (assumed) assumed_at[block_sites + bi] = 1;
    }
  }
  for (std::size_t i = 0; i < assumed_at.size(); ++i) {
    if (!assumed_at[i]) continue;
    if (i < block_sites)
      ++work.assumed_loops;
    else if (i < copy_sites)
      ++work.assumed_branches;
    else
      ++work.assumed_copies;
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
