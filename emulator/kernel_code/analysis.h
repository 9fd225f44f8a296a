// What the analysis of one .entry keeps (KernelCode::Impl): an expression pool of the
// integer values that decide control flow, the basic blocks with their per-thread counts,
// and the loops with their trip-count formulas. Read by work.cc at each launch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "myriad/emulator/kernel_code.h"

namespace myriad::emulator::kernel_code {

enum class NodeOp : std::uint8_t {
  kUnknown,  // a value the code reads from memory, a float, or anything not followed
  kConst,
  kParam,     // value: the parameter's index
  kSpecial,   // value: a Special
  kLoopVar,   // a register a loop updates, inside it: a = loop, b = variable
  kLoopExit,  // its value after the loop: init + trips x step
  kAdd,
  kSub,
  kMul,
  kMulHi,  // the high half of a 32 x 32 product (division by a constant)
  kDiv,
  kRem,
  kShl,
  kShr,
  kAnd,  // with a low-bit mask (a remainder by a power of two)
  kOr,   // bitwise (LLVM writes an add of disjoint bit fields as an or: Triton's indices)
  kMin,
  kMax,
  kNeg,
  kCmp,   // cmp: a Cmp of a and b; value: kNoRankTest, kRankTestA or kRankTestB
  kPAnd,  // predicates; value: kRankTestA when an operand is or holds a rank test
  kPOr,
  kPNot,
  // Where control flow joins with different values: the value of the first incoming edge
  // (in layout order) that the evaluated thread takes; a = first of b JoinInputs.
  kJoin,
  // An integer a global load reads: a = the pointer parameter it is based on, b = the byte
  // offset from it (a node); value = its width in bytes, plus kLoadSigned. Known only where
  // the launch names the memory's contents (LaunchArgument::contents).
  kLoad,
};
constexpr std::int64_t kLoadSigned = 1 << 8;

enum class Special : std::uint8_t {
  kTidX,
  kTidY,
  kTidZ,
  kNtidX,
  kNtidY,
  kNtidZ,
  kCtaidX,
  kCtaidY,
  kCtaidZ,
  kNctaidX,
  kNctaidY,
  kNctaidZ,
  kLaneId,
  kWarpId,
};

enum class Cmp : std::uint8_t { kLt, kLe, kGt, kGe, kEq, kNe };

// A kCmp node's value: whether it is an equality (kEq, kNe) of a rank within a group
// (threadIdx.x, %laneid, threadIdx.x & (2^k - 1); blockIdx.x among the grid's) and a value
// the whole group shares (constants, parameters, the launch's shape): one thread of each
// group passes `threadIdx.x == 0`, which is counted as that share of the threads rather than
// sampled.
constexpr std::int64_t kNoRankTest = 0;
constexpr std::int64_t kRankTestA = 1;  // a is the rank
constexpr std::int64_t kRankTestB = 2;  // b is the rank

struct Node {
  NodeOp op = NodeOp::kUnknown;
  Cmp cmp = Cmp::kLt;
  // Depends on something no launch tells (memory, a float) or passes through a hash (xor, a
  // multiply by a large constant): never evaluated, so per-rank data cannot reach a count.
  bool opaque = true;
  bool loaded = false;  // depends on a kLoad: known only from the launch's known contents
  std::int32_t a = 0, b = 0;
  std::int64_t value = 0;
  std::uint64_t loops = 0;  // bit (loop % 64) for each loop whose variables it reads
};

// A predicate as a branch or a guard uses it.
struct PredRef {
  std::int32_t node = 0;
  bool negated = false;
};

// Per-thread counts of one execution of a block (or of its guarded instructions).
struct Counts {
  double global_bytes = 0;
  double fma_flops = 0;
  double fp64_flops = 0;
  double tensor_flops = 0;
  double sfu_ops = 0;
  double instructions = 0;
  void Add(const Counts& o, double times) {
    global_bytes += o.global_bytes * times;
    fma_flops += o.fma_flops * times;
    fp64_flops += o.fp64_flops * times;
    tensor_flops += o.tensor_flops * times;
    sfu_ops += o.sfu_ops * times;
    instructions += o.instructions * times;
  }
};

// Global bytes whose count is a value of the code, evaluated per launch: a bulk copy's size
// operand, or (for a kernel whose tensor-map copies complete on mbarriers) the bytes an
// `expect_tx` tells a barrier to expect. `bytes` 0: not knowable from the code (a tensor
// map's box): counted as no bytes and reported as an assumption (`assumed_copies`).
struct SizedCopy {
  std::int32_t bytes = 0;  // node
  double times = 1;        // 2 for a reduction into global memory (read and written)
  bool guarded = false;    // a predicated instruction: runs when `guard` holds
  PredRef guard;
  int site = 0;  // index among the kernel's copy sites
  int line = 0;
};

// An edge into a join: out of `block`, by its branch (taken) or by falling through.
struct JoinInput {
  int block = 0;
  bool taken = false;
  std::int32_t value = 0;
};

enum class BlockEnd : std::uint8_t { kFallThrough, kReturn, kBranch, kConditionalBranch };

struct Block {
  int line = 0;
  Counts base;
  std::vector<std::pair<PredRef, Counts>> guarded;  // predicated instructions
  std::vector<SizedCopy> copies;
  BlockEnd end = BlockEnd::kFallThrough;
  int target = -1;  // branch target block
  PredRef branch;   // conditional branch: taken when true (or false if negated)
  int innermost_loop = -1;
  int header_of = -1;  // the loop this block heads
  int latch_of = -1;   // the loop whose back edge ends this block
};

struct Loop {
  int header = 0, latch = 0, line = 0;
  int exit_block = -1;    // the block whose branch leaves a loop tested at the top
  int exit_target = -1;   // where the loop's flow goes on (the latch's next block, or the
                          // exit test's target for a loop whose back edge is unconditional)
  std::vector<int> vars;  // registers written inside
  std::vector<std::int32_t> init;  // node of each variable at entry
  // Per variable, its update per iteration: x + step (step_op kAdd: an induction variable),
  // or a geometric one, x >> step, x << step, x / step or x * step (kShr, kShl, kDiv, kMul:
  // `s >>= 1` not unrolled). step -1: neither.
  std::vector<std::int32_t> step;
  std::vector<NodeOp> step_op;
  // The trip count: iterate while cmp(value_j, bound) after iteration j (do-while) or before
  // it (a test at the top), value_j the compared variable's value in iteration j, through
  // compare_op (kUnknown: itself; a geometric variable's next value, `(s >> 1) != 0`, is
  // compare_op(value_j, compare_arg)), plus offset; formula_known false when it could not be
  // read.
  bool formula_known = false;
  bool do_while = true;
  Cmp cmp = Cmp::kLt;
  int var = -1;  // the variable compared
  NodeOp compare_op = NodeOp::kUnknown;
  std::int32_t compare_arg = 0;    // node
  std::int32_t offset = 0;         // node
  std::int32_t bound = 0;          // node
  double bytes_per_iteration = 0;  // per thread, unguarded global bytes in the body
  // The formula reads memory (kLoad): its trip count is known only from known contents, and
  // then differs from thread to thread as the data does.
  bool reads_memory = false;
};

}  // namespace myriad::emulator::kernel_code

namespace myriad::emulator {

struct KernelCode::Impl {
  std::string name;
  std::vector<KernelCodeParam> params;
  int instruction_count = 0;
  int unbounded_loops = 0;       // loops whose trip count has no formula, or one that reads memory
  bool writes_anywhere = false;  // a global store whose address no parameter is the base of
  std::vector<std::string> notes;
  DataType tensor_dtype = DataType::kBfloat16;
  std::vector<kernel_code::Node> nodes;
  std::vector<kernel_code::Block> blocks;
  std::vector<kernel_code::Loop> loops;
  std::vector<kernel_code::JoinInput> joins;
  int copy_sites = 0;  // SizedCopy entries over all blocks
};

}  // namespace myriad::emulator
