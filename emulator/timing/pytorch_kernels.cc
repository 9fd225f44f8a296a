// PyTorch's own kernels (docs/kernel-timing.md, "PyTorch's kernels").
#include "timing/pytorch_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>

#include "timing/launch_guess.h"
#include "timing/library_model.h"

namespace myriad::emulator::timing {
namespace {

// Fractions of HBM bandwidth, from PyTorch's kernels on H100 (shared/reference/kernels.md;
// bytes = all tensor reads and writes, over the 3.35 TB/s peak).
// §3.4: add (vectorized) 2 x [16,559,1024] BF16, 3.07 TB/s; copy FP32 -> BF16 3.02 TB/s.
constexpr double kVectorizedEfficiency = 0.9;
// §3.4: copy BF16 -> FP32 through the unrolled (casting) kernel, 1.88 TB/s.
constexpr double kUnrolledEfficiency = 0.56;
// §3.4: permute-copy to contiguous through the strided kernel, 1.36 TB/s.
constexpr double kStridedEfficiency = 0.41;
// §3.4: mean over the last dimension [16,559,1024] FP32, 2.43 TB/s.
constexpr double kReductionEfficiency = 0.73;
// §3.3: PyTorch's LayerNorm (HF module) forward, 4096 x 16384 FP32, 1750 GB/s.
constexpr double kNormForwardEfficiency = 0.52;
// §3.2: PyTorch's LayerNorm backward, 1024 x 12288 BF16 on H200, 1245 of 4800 GB/s.
constexpr double kNormBackwardEfficiency = 0.26;
// §3.4: cunn_SoftMaxForward, rows of 3137 BF16, 0.66 TB/s.
constexpr double kSoftmaxEfficiency = 0.2;
// Assumed: multi_tensor_apply's vector loads stream like the vectorized elementwise kernels
// (§3.5's fused Adam, 2.1 TB/s derived under its stated assumptions, is consistent).
constexpr double kMultiTensorEfficiency = kVectorizedEfficiency;
// Assumed: flash backward's pre/post-processing and cat's copies stream like vectorized code.
constexpr double kStreamingEfficiency = kVectorizedEfficiency;

// Elements one block of multi_tensor_apply_kernel takes (kChunkSize, PyTorch's
// aten/src/ATen/native/cuda/MultiTensorApply.cuh): the grid counts chunks.
constexpr std::int64_t kMultiTensorChunk = 65536;

double ThreadCount(const Op& op) {
  return static_cast<double>(op.grid.x) * op.grid.y * op.grid.z * op.block.x * op.block.y *
         op.block.z;
}

// Resident threads and blocks per SM for compute capabilities 8.0 to 10.0 (CUDA C++
// Programming Guide, "Technical Specifications per Compute Capability"); registers and shared
// memory, which can only lower them, are not read.
constexpr double kMaxThreadsPerSm = 2048;
constexpr double kMaxBlocksPerSm = 32;
// A step of a block's reduction on chip, in global round trips: a shared-memory load (or a
// warp shuffle, assumed the same) and the add that uses it, 29 + 4 SM clocks in Accel-Sim's
// A100 calibration (gpgpu_smem_latency, ptx_opcode_latency_fp; the file kMemoryLatencyClocks
// cites in netmodel/catalog/gpus.cc) against the 627-clock global round trip made from it.
constexpr double kBlockReduceStepTrips = (29.0 + 4.0) / 627.0;

// The kernel's chain of dependent global-memory round trips per thread: however few bytes it
// moves, each takes GpuSpec::memory_latency. Loads issued together overlap (PyTorch's kernels
// issue all of one turn's loads before using any); the stores that end a thread are one more.
double RoundTrips(const KernelClass& c, const Op& op) {
  if (c.family != KernelFamily::kReduction) return 2;  // the loads, then the stores
  // A reduction's thread takes turns of loads (elements_per_turn) until its share of the
  // input is read; its block then combines its threads' values (Reduce.cuh's block_x_reduce
  // and block_y_reduce: a shared-memory step or a warp shuffle per halving), and it stores.
  // Threads along x reduce unless each holds several outputs (output_vec_size > 1), when x
  // spans outputs and y reduces.
  const double threads = ThreadCount(op);
  const double per_thread = threads > 0 && c.element_size > 0
                                ? static_cast<double>(op.bytes) / c.element_size / threads
                                : 1;
  const double turns = std::max(1.0, std::ceil(per_thread / std::max(1, c.elements_per_turn)));
  const bool x_spans_outputs = c.output_vec_size > 1;
  const double reducing = std::max(1u, x_spans_outputs ? op.block.y : op.block.x);
  const double block_steps = std::ceil(std::log2(reducing)) * kBlockReduceStepTrips;
  double trips = turns + block_steps + 1;
  if (op.grid.y > 1) {
    // Split over grid.y blocks per output (ReduceConfig's ctas_per_output): each block stores
    // its partial and fences, takes a semaphore with an atomic, and the last block loads the
    // partials, its reducing threads taking them in turn, and combines them as before.
    const double partial_loads = std::ceil(op.grid.y / reducing);
    trips += 2 + partial_loads + block_steps;
  }
  return trips;
}

// The duration the chain sets: the floor (the shortest kernels, whose threads make one trip:
// a store) plus the further trips, once per wave of resident blocks.
double LatencySeconds(const KernelClass& c, const Op& op, const netmodel::GpuSpec& gpu) {
  const double block = static_cast<double>(op.block.x) * op.block.y * op.block.z;
  const double blocks = static_cast<double>(op.grid.x) * op.grid.y * op.grid.z;
  if (!(block > 0) || !(blocks > 0) || gpu.sm_count <= 0) return gpu.kernel_floor;
  const double resident =
      std::max(1.0, std::min(kMaxBlocksPerSm, std::floor(kMaxThreadsPerSm / block)));
  const double waves = std::ceil(blocks / (resident * gpu.sm_count));
  return gpu.kernel_floor + (waves * RoundTrips(c, op) - 1) * gpu.memory_latency;
}

}  // namespace

double FamilyEfficiency(KernelFamily family) {
  switch (family) {
    case KernelFamily::kElementwise:
    case KernelFamily::kElementwiseIndexed:
      return kVectorizedEfficiency;
    case KernelFamily::kElementwiseUnrolled:
      return kUnrolledEfficiency;
    case KernelFamily::kElementwiseStrided:
      return kStridedEfficiency;
    case KernelFamily::kReduction:
      return kReductionEfficiency;
    case KernelFamily::kNormForward:
      return kNormForwardEfficiency;
    case KernelFamily::kNormBackward:
      return kNormBackwardEfficiency;
    case KernelFamily::kSoftmax:
      return kSoftmaxEfficiency;
    case KernelFamily::kMultiTensor:
      return kMultiTensorEfficiency;
    case KernelFamily::kAttentionAux:
    case KernelFamily::kCat:
      return kStreamingEfficiency;
    case KernelFamily::kAttention:
    case KernelFamily::kNone:
      break;
  }
  return kH100HbmEfficiency;
}

bool DescribeKernelWork(const KernelClass& c, std::span<const std::int64_t> int_args, Op* op) {
  const auto int_arg = [&](std::size_t i) -> double {
    return i < int_args.size() && int_args[i] > 0 ? static_cast<double>(int_args[i]) : -1;
  };
  const double rows = op->grid.x;
  double bytes = 0;
  switch (c.family) {
    case KernelFamily::kNone:
      return false;
    case KernelFamily::kElementwise:
    case KernelFamily::kElementwiseUnrolled:
    case KernelFamily::kElementwiseStrided:
    case KernelFamily::kElementwiseIndexed: {
      const double n = int_arg(0);  // (int N, ...)
      if (n < 0) return false;
      bytes = n * c.bytes_per_element;
      break;
    }
    case KernelFamily::kReduction:
      // The input's element count when it is known (a trace's recorded shapes: the input is
      // read once); a launch does not say it (the sizes travel inside the ReduceOp struct),
      // so there at least one turn of loads per thread (a guess that undercounts long
      // reductions).
      if (const double n = int_arg(0); n > 0) {
        bytes = n * c.element_size;
      } else {
        bytes = ThreadCount(*op) * c.elements_per_turn * c.element_size;
      }
      break;
    case KernelFamily::kNormForward: {
      const double n = int_arg(0);  // (N, eps, X, ...); one block per row
      if (n < 0) return false;
      const double tensors = c.reads_only ? 1 : 2;
      bytes = rows * n * tensors * c.element_size + 2 * rows * c.accumulator_size +
              (c.reads_only ? 0 : 2 * n * c.element_size);
      break;
    }
    case KernelFamily::kNormBackward: {
      double m = rows, n = int_arg(0);  // grad input: (..., int N), one block per row
      if (c.depth == 2) m = int_arg(0), n = int_arg(1);  // gamma/beta: (M, N, ...)
      if (m < 0 || n < 0) return false;
      bytes =
          m * n * c.depth * c.element_size + 2 * m * c.accumulator_size + 2 * n * c.element_size;
      break;
    }
    case KernelFamily::kSoftmax: {
      // cunn: (out, in, classes), one block per row; warp: (out, in, batch, stride, count)
      const double batch = c.warp_softmax ? int_arg(0) : rows;
      const double classes = c.warp_softmax ? int_arg(2) : int_arg(0);
      if (batch < 0 || classes < 0) return false;
      bytes = batch * classes * c.bytes_per_element;
      break;
    }
    case KernelFamily::kMultiTensor: {
      // Each block is one chunk of one tensor; a norm reads each list, an update reads every
      // list and writes all but the gradient's (depth 1: in place, read and written).
      const double accesses = c.reads_only ? c.depth : c.depth == 1 ? 2 : 2 * c.depth - 1;
      bytes = static_cast<double>(op->grid.x) * kMultiTensorChunk * accesses * c.element_size;
      break;
    }
    case KernelFamily::kAttention: {
      AttentionShape& at = op->attention;
      at.batch = op->grid.y;
      at.heads = op->grid.z;
      // The grid tiles the queries (forward) or the keys (backward); self-attention assumed:
      // the parameter struct that holds both lengths is not read.
      at.seq_q = at.seq_kv =
          static_cast<std::int64_t>(op->grid.x) * (c.backward ? c.block_n : c.block_m);
      at.head_dim = c.head_dim;
      at.causal = c.causal;
      at.backward = c.backward;
      at.dtype = c.dtype;
      at.kernel = AttentionKernel::kFlash2;  // PyTorch's flash kernels are FlashAttention-2's
      return true;
    }
    case KernelFamily::kAttentionAux: {
      const double positions = static_cast<double>(op->grid.x) * c.block_m * op->grid.y *
                               op->grid.z;  // batch x heads x queries
      if (c.backward) {                     // dQ: read the fp32 accumulator, write dQ
        bytes = positions * c.head_dim * (4 + c.element_size);
      } else {  // read dO and O, write the row sums (and clear the dQ accumulator)
        bytes =
            positions * (c.head_dim * (2.0 * c.element_size + (c.clears_accumulator ? 4 : 0)) + 4);
      }
      break;
    }
    case KernelFamily::kCat:
      // Grid-stride copies: one element per thread read and written (a guess).
      bytes = ThreadCount(*op) * 2 * c.element_size;
      break;
  }
  if (!(bytes > 0) || !std::isfinite(bytes) || bytes > 1e18) return false;
  op->bytes = static_cast<std::uint64_t>(bytes);
  return true;
}

std::optional<SimTime> PytorchKernelProvider::Duration(const Op& op, const NameTable& names) const {
  // Guessed bytes are the launch guess's to time, and to report as a guess.
  if (op.kind != OpKind::kKernel || op.gemm.m > 0 || op.bytes_guessed) return std::nullopt;
  const KernelClass& c = cache_.Get(op.name, names);
  if (c.family == KernelFamily::kNone) return std::nullopt;
  double seconds = 0;
  if (c.family == KernelFamily::kAttention) {
    if (op.attention.batch <= 0) return std::nullopt;
    seconds = AttentionSeconds(op.attention, gpu_);
  } else {
    if (op.bytes == 0) return std::nullopt;
    // A streaming kernel's own duration is its transfer; its chain of memory round trips from
    // the floor (the shortest kernels' duration) bounds it from below rather than adding to
    // it: other warps' transfers overlap one warp's wait, and a queued launch's set-up
    // overlaps the kernel before it.
    seconds =
        std::max(LatencySeconds(c, op, gpu_),
                 static_cast<double>(op.bytes) / (gpu_.hbm_bandwidth * FamilyEfficiency(c.family) *
                                                  gpu_.hbm_efficiency / kH100HbmEfficiency));
  }
  if (!std::isfinite(seconds)) return std::nullopt;
  return SecondsToSim(seconds);
}

}  // namespace myriad::emulator::timing
