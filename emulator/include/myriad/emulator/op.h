// Ops: what one logical rank asks of its host thread and its GPU, in program order.
// Every op source (trace, live process, mirror, synthetic workload) produces these.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "myriad/netmodel/collective.h"
#include "myriad/status.h"

namespace myriad::emulator {

// Virtual time in picoseconds: integers keep every run bit-identical, and 2^63 ps is 106 days.
using SimTime = std::int64_t;
inline constexpr SimTime kPicosPerNano = 1'000;
inline constexpr SimTime kPicosPerMicro = 1'000'000;
inline constexpr SimTime kPicosPerSecond = 1'000'000'000'000;
// The clock's bound: 2^62 ps, about 53 days. Every duration is clamped to it and every time
// the engine reaches is checked against it (the run fails naming the op), so a sum of two never
// overflows and an absurd input gets an error, not a wrapped-around figure.
inline constexpr SimTime kMaxSimTime = SimTime{1} << 62;
// Picoseconds to the clock, rounded, clamped to [-kMaxSimTime, kMaxSimTime] (NaN: the bound).
inline SimTime ClampedPicos(double ps) {
  if (!(ps < static_cast<double>(kMaxSimTime))) return kMaxSimTime;
  if (ps <= -static_cast<double>(kMaxSimTime)) return -kMaxSimTime;
  return static_cast<SimTime>(ps + (ps >= 0 ? 0.5 : -0.5));
}
inline SimTime FromMicros(double us) {
  return ClampedPicos(us * static_cast<double>(kPicosPerMicro));
}
inline double ToMicros(SimTime t) {
  return static_cast<double>(t) / static_cast<double>(kPicosPerMicro);
}

enum class OpKind : std::uint8_t {
  kKernel,
  kMemcpy,
  kMemset,
  kEventRecord,
  kStreamWaitEvent,
  kEventSync,
  kEventQuery,
  kStreamSync,
  kDeviceSync,
  kStreamCreate,
  kMalloc,
  kFree,
  kCollective,
  kSend,
  kRecv,
  kGroupStart,
  kGroupEnd,
  kHost,
  kMarker,
  // Calls only live processes make (not in traces): they answer the process.
  kCommInit,      // join communicator `comm` as communicator rank `peer` of `count` (blocking)
  kEventElapsed,  // time between the completions of `event` and `event2`
  kStreamQuery,   // is `stream`'s work done at the host's time?
};
// Kinds a trace can hold: kKernel .. kMarker.
inline constexpr int kNumOpKinds = 19;
std::string_view ToString(OpKind kind);  // trace names: "kernel", "stream_wait_event", ...
Result<OpKind> ParseOpKind(std::string_view name);

enum class MemcpyKind : std::uint8_t { kHostToDevice, kDeviceToHost, kDeviceToDevice, kPeer };
std::string_view ToString(MemcpyKind kind);  // "h2d", "d2h", "d2d", "peer"
Result<MemcpyKind> ParseMemcpyKind(std::string_view name);

// NCCL data types (ncclDataType_t order).
enum class DataType : std::uint8_t {
  kInt8,
  kUint8,
  kInt32,
  kUint32,
  kInt64,
  kUint64,
  kFloat16,
  kFloat32,
  kFloat64,
  kBfloat16,
  kFloat8e4m3,
  kFloat8e5m2,
  // FP32 operands multiplied on TF32 tensor cores (a GEMM's math, cuBLAS's
  // CUBLAS_COMPUTE_32F_FAST_TF32): stored as FP32, not a collective's type.
  kTfloat32,
};
int SizeOf(DataType type);
std::string_view ToString(DataType type);  // "int8", ..., "float16", "float32", "bfloat16", ...
Result<DataType> ParseDataType(std::string_view name);  // also accepts half, float, double, bf16...

enum class ReduceOp : std::uint8_t { kSum, kProd, kMax, kMin, kAvg };
std::string_view ToString(ReduceOp op);
Result<ReduceOp> ParseReduceOp(std::string_view name);

struct Dim3 {
  std::uint32_t x = 1, y = 1, z = 1;
  bool operator==(const Dim3&) const = default;
};

// What a library model needs to time a cuBLAS/cuBLASLt GEMM (m = 0: not a GEMM).
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t batch = 1;
  DataType dtype = DataType::kBfloat16;
  // FP8 only: the products summed in the tensor cores' own accumulator (cuBLASLt's
  // CUBLASLT_MATMUL_DESC_FAST_ACCUM, torch._scaled_mm's use_fast_accum), not promoted to FP32
  // registers every few K steps, which is cuBLASLt's default (docs/kernel-timing.md, "FP8
  // accumulation on Hopper").
  bool fast_accumulation = false;
};

// What the attention model needs to time a fused (flash-attention style) attention kernel
// (batch = 0: not attention).
// Which fused-attention implementation runs (docs/kernel-timing.md, "Attention").
enum class AttentionKernel : std::uint8_t {
  kDefault,  // the GPU's usual one: cuDNN's on Hopper and later, FlashAttention-2 before
  kFlash2,   // FlashAttention-2 (and PyTorch's flash kernels, which are its code)
  kFlash3,   // FlashAttention-3 (Hopper only; FlashAttention-2 elsewhere)
  kCudnn,    // cuDNN's fused attention (Transformer Engine's default on Hopper)
};

std::string_view ToString(AttentionKernel kernel);  // "default", "fa2", "fa3", "cudnn"
Result<AttentionKernel> ParseAttentionKernel(std::string_view name);

struct AttentionShape {
  std::int64_t batch = 0;
  std::int64_t heads = 0;   // query heads on this GPU
  std::int64_t seq_q = 0;   // query positions
  std::int64_t seq_kv = 0;  // key/value positions
  std::int64_t head_dim = 0;
  bool causal = true;
  bool backward = false;
  DataType dtype = DataType::kBfloat16;
  AttentionKernel kernel = AttentionKernel::kDefault;
};

// A kernel's compute as its own code counts it (docs/kernel-timing.md, "Kernels timed from
// their code"): with Op::bytes (its global traffic), what the roofline times it by.
struct KernelCounts {
  bool counted = false;
  DataType tensor_dtype = DataType::kBfloat16;  // the tensor-core instructions' input type
  double fma_flops = 0;                         // FP32/FP16/BF16 on the CUDA cores
  double fp64_flops = 0;
  double tensor_flops = 0;  // mma / wmma / wgmma
  double sfu_ops = 0;       // ex2, lg2, rsqrt, rcp, sin, cos, tanh
  double instructions = 0;  // thread-instructions executed
  // Loops whose trip count the code reads from memory Myriad does not know (a kernel wrote
  // it): each assumed to sweep the allocations its loads reach once (kernel_code.h).
  int assumed_loops = 0;
  bool operator==(const KernelCounts&) const = default;
};

// Stream 0 is the legacy default stream; kPerThreadStream the per-thread default stream.
inline constexpr std::int32_t kLegacyStream = 0;
inline constexpr std::int32_t kPerThreadStream = -2;

// Names (kernels, communicators, labels) are interned once and referred to by id.
using NameId = std::uint32_t;

struct Op {
  OpKind kind = OpKind::kHost;
  std::int32_t stream = kLegacyStream;
  // kernel: name, launch shape, and either a duration or what a model needs.
  NameId name = 0;
  Dim3 grid;
  Dim3 block;
  std::uint32_t shared_mem = 0;
  SimTime duration = -1;  // kernel/host: given duration; -1 = ask the kernel timing chain
  GemmShape gemm;
  AttentionShape attention;
  // memcpy, memset, malloc, free; a kernel that states only its bytes is memory-bound
  std::uint64_t bytes = 0;
  MemcpyKind copy_kind = MemcpyKind::kDeviceToDevice;
  bool async = true;  // memcpy/memset: cudaMemcpyAsync (true) or blocking cudaMemcpy (false)
  // kernel: `bytes` is a guess from the launch (a kernel no model knows; docs/kernel-timing.md,
  // "Kernels no model knows"), timed as such and reported as a guess.
  bool bytes_guessed = false;
  // kernel: its work counted from its code (a kernel no family model knows, under myriad run).
  KernelCounts counts;
  // events; stream create
  std::int32_t event = 0;
  bool non_blocking = false;  // stream create: cudaStreamNonBlocking
  std::int32_t priority = 0;
  // collective, send, recv
  NameId comm = 0;
  netmodel::CollectiveOp coll = netmodel::CollectiveOp::kAllReduce;
  std::uint64_t count = 0;  // elements, as the NCCL call passes them
  DataType dtype = DataType::kFloat32;
  ReduceOp redop = ReduceOp::kSum;
  std::int32_t root = -1;  // communicator rank; -1 = not rooted
  std::int32_t peer = -1;  // send/recv: communicator rank of the other side
  // marker: label (iteration boundaries use the label "iteration")
  NameId label = 0;
  // Live processes: the second event of kEventElapsed, and whether the process waits for the
  // engine's answer (OpSource::Reply) after this op.
  std::int32_t event2 = 0;
  // Live processes, comm init: the communicator's members as PyTorch named them ("0,8,16":
  // global ranks in order; 0 when nobody did), for rank folding (docs/run.md, "Folding").
  NameId members = 0;
  bool wants_reply = false;
  // Live processes: an event or stream query that repeats one the thread made at the same
  // clock (wire::kRepeatedPoll): a polling loop, whose clock the engine must move on.
  bool repeated_poll = false;
  // Live processes: the issuing host thread's clock; the rank's host clock catches up to it
  // (a thread that drives several devices moves all of their clocks).
  SimTime not_before = -1;
};

// What the engine tells a live process after an op it waits on.
struct OpReply {
  SimTime host_time = 0;   // the rank's virtual host time after the op
  int status = 0;          // 0, or a CUDA-style error code
  std::int64_t value = 0;  // kEventElapsed: picoseconds; queries: 1 ready, 0 not ready
};

// Interned strings shared by all ranks of one run.
class NameTable {
 public:
  NameTable() { Intern(""); }
  NameId Intern(std::string_view name);
  // The id of a name already interned, or 0 (the empty name's) when it has none.
  NameId Find(std::string_view name) const;
  const std::string& Name(NameId id) const { return names_[id]; }
  std::size_t size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, NameId> ids_;
};

}  // namespace myriad::emulator
