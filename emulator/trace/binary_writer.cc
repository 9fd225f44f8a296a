// Writes a Workload as a binary trace (layout in binary_format.h and docs/trace-format.md).
// Ranks are streamed one after another through a 1 MiB buffer, so memory stays flat however
// many ops the workload has; only the index (24 bytes per rank) is held until the end.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_set>

#include "myriad/emulator/trace.h"
#include "trace/binary_format.h"
#include "trace/trace_internal.h"

namespace myriad::emulator {
namespace {

using binary_trace::kAttentionBackward;
using binary_trace::kAttentionCausal;
using binary_trace::kAttentionKernelShift;
using binary_trace::kBlocking;
using binary_trace::kCopyKindShift;
using binary_trace::kHasAttention;
using binary_trace::kHasBlock;
using binary_trace::kHasBytes;
using binary_trace::kHasDuration;
using binary_trace::kHasGemm;
using binary_trace::kHasGrid;
using binary_trace::kHasPriority;
using binary_trace::kHasSharedMem;
using binary_trace::kHasStream;
using binary_trace::kHeaderSize;
using binary_trace::kIndexEntrySize;
using binary_trace::kMagic;
using binary_trace::kMaxAttentionDim;
using binary_trace::kMaxWorldSize;
using binary_trace::kNonBlocking;
using binary_trace::kOpCountAt;
using binary_trace::PutFixed;
using binary_trace::PutVarint;
using binary_trace::ZigZag;
using trace_internal::HasDuration;
using trace_internal::HasEvent;
using trace_internal::HasStream;

constexpr std::size_t kFlushBytes = 1u << 20;

class OpEncoder {
 public:
  explicit OpEncoder(const std::unordered_set<NameId>& comm_names) : comm_names_(comm_names) {}

  // Appends the op to `out`, or returns what makes it unwritable (empty when written).
  std::string Encode(const Op& op, std::string& out) {
    const int kind = static_cast<int>(op.kind);
    if (kind < 0 || kind >= kNumOpKinds) return fmt::format("unknown op kind {}", kind);
    std::uint8_t flags = 0;
    if (HasStream(op.kind) && op.stream != kLegacyStream) flags |= kHasStream;
    if (HasDuration(op.kind)) {
      if (op.duration < -1) return fmt::format("negative duration {} ps", op.duration);
      if (op.duration >= 0) flags |= kHasDuration;
    }
    switch (op.kind) {
      case OpKind::kKernel:
        if (op.grid != Dim3{}) flags |= kHasGrid;
        if (op.block != Dim3{}) flags |= kHasBlock;
        if (op.shared_mem != 0) flags |= kHasSharedMem;
        if (op.gemm.m != 0) flags |= kHasGemm;
        if (op.bytes != 0 || op.counts.counted) flags |= kHasBytes;
        if (op.attention.batch != 0) flags |= kHasAttention;
        break;
      case OpKind::kMemcpy:
        if (static_cast<int>(op.copy_kind) > 3) return "unknown memcpy kind";
        flags |= static_cast<std::uint8_t>(static_cast<int>(op.copy_kind) << kCopyKindShift);
        [[fallthrough]];
      case OpKind::kMemset:
        if (!op.async) flags |= kBlocking;
        break;
      case OpKind::kStreamCreate:
        if (op.stream <= 0)
          return fmt::format("a created stream needs an id > 0, not {}", op.stream);
        if (op.non_blocking) flags |= kNonBlocking;
        if (op.priority != 0) flags |= kHasPriority;
        break;
      case OpKind::kHost:
        if (op.duration < 0) return "host op without a duration";
        break;
      default:
        break;
    }
    out.push_back(static_cast<char>(kind));
    out.push_back(static_cast<char>(flags));
    if ((flags & kHasStream) != 0) PutVarint(out, ZigZag(op.stream));
    if ((flags & kHasDuration) != 0) PutVarint(out, static_cast<std::uint64_t>(op.duration));
    if (HasEvent(op.kind)) PutVarint(out, ZigZag(op.event));
    switch (op.kind) {
      case OpKind::kKernel:
        PutName(out, op.name);
        if ((flags & kHasGrid) != 0) PutDim(out, op.grid);
        if ((flags & kHasBlock) != 0) PutDim(out, op.block);
        if ((flags & kHasSharedMem) != 0) PutVarint(out, op.shared_mem);
        if ((flags & kHasGemm) != 0) {
          const GemmShape& g = op.gemm;
          if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 0) return "negative GEMM dimension";
          if (!ValidDataType(g.dtype, true)) return "unknown GEMM data type";
          for (std::int64_t v : {g.m, g.n, g.k, g.batch}) {
            PutVarint(out, static_cast<std::uint64_t>(v));
          }
          out.push_back(
              static_cast<char>(static_cast<std::uint8_t>(g.dtype) |
                                (g.fast_accumulation ? binary_trace::kGemmFastAccumulation : 0)));
        }
        if ((flags & kHasBytes) != 0) {
          PutVarint(out, op.bytes);
          out.push_back(static_cast<char>((op.bytes_guessed ? binary_trace::kBytesGuessed : 0) |
                                          (op.counts.counted ? binary_trace::kCountsFollow : 0)));
          if (op.counts.counted) {
            const KernelCounts& k = op.counts;
            if (!ValidDataType(k.tensor_dtype, true)) return "unknown tensor data type";
            out.push_back(static_cast<char>(k.tensor_dtype));
            for (double v :
                 {k.fma_flops, k.fp64_flops, k.tensor_flops, k.sfu_ops, k.instructions}) {
              if (!(v >= 0) || !std::isfinite(v))
                return "a kernel count that is not a finite number >= 0";
              char bytes[8];
              std::memcpy(bytes, &v, 8);
              out.append(bytes, 8);
            }
          }
        }
        if ((flags & kHasAttention) != 0) {
          const AttentionShape& a = op.attention;
          if (!ValidAttention(a)) return "attention dimension outside 1 .. 2^31-1";
          if (!ValidDataType(a.dtype)) return "unknown attention data type";
          for (std::int64_t v : {a.batch, a.heads, a.seq_q, a.seq_kv, a.head_dim}) {
            PutVarint(out, static_cast<std::uint64_t>(v));
          }
          out.push_back(static_cast<char>(a.dtype));
          out.push_back(static_cast<char>(
              (a.causal ? kAttentionCausal : 0) | (a.backward ? kAttentionBackward : 0) |
              (static_cast<unsigned>(a.kernel) << kAttentionKernelShift)));
        }
        break;
      case OpKind::kMemcpy:
      case OpKind::kMemset:
      case OpKind::kMalloc:
      case OpKind::kFree:
        PutVarint(out, op.bytes);
        break;
      case OpKind::kStreamCreate:
        if ((flags & kHasPriority) != 0) PutVarint(out, ZigZag(op.priority));
        break;
      case OpKind::kCollective: {
        if (std::string e = PutComm(out, op.comm); !e.empty()) return e;
        const int coll = static_cast<int>(op.coll);
        if (coll < 0 || coll >= netmodel::kNumCollectiveOps ||
            !trace_internal::IsTraceCollective(op.coll)) {
          return "not a trace collective (point-to-point traffic is send and recv ops)";
        }
        if (!ValidDataType(op.dtype)) return "unknown data type";
        out.push_back(static_cast<char>(coll));
        PutVarint(out, op.count);
        out.push_back(static_cast<char>(op.dtype));
        if (trace_internal::IsReducing(op.coll)) {
          if (static_cast<int>(op.redop) > static_cast<int>(ReduceOp::kAvg)) return "unknown redop";
          out.push_back(static_cast<char>(op.redop));
        }
        if (trace_internal::IsRooted(op.coll)) PutVarint(out, ZigZag(op.root));
        break;
      }
      case OpKind::kSend:
      case OpKind::kRecv:
        if (std::string e = PutComm(out, op.comm); !e.empty()) return e;
        if (!ValidDataType(op.dtype)) return "unknown data type";
        PutVarint(out, ZigZag(op.peer));
        PutVarint(out, op.count);
        out.push_back(static_cast<char>(op.dtype));
        break;
      case OpKind::kMarker:
        PutName(out, op.label);
        break;
      default:
        break;
    }
    return {};
  }

  NameId max_name() const { return max_name_; }

 private:
  static bool ValidAttention(const AttentionShape& a) {
    for (std::int64_t v : {a.batch, a.heads, a.seq_q, a.seq_kv, a.head_dim})
      if (v < 1 || v > kMaxAttentionDim) return false;
    return true;
  }
  // `gemm`: a GEMM's (or a tensor instruction's) type, which may be TF32, its math.
  static bool ValidDataType(DataType t, bool gemm = false) {
    return static_cast<int>(t) <=
           static_cast<int>(gemm ? DataType::kTfloat32 : DataType::kFloat8e5m2);
  }
  static void PutDim(std::string& out, const Dim3& d) {
    PutVarint(out, d.x);
    PutVarint(out, d.y);
    PutVarint(out, d.z);
  }
  void PutName(std::string& out, NameId id) {
    if (id > max_name_) max_name_ = id;
    PutVarint(out, id);
  }
  std::string PutComm(std::string& out, NameId id) {
    if (!comm_names_.contains(id)) {
      return fmt::format("communicator name id {} is not a declared communicator", id);
    }
    PutVarint(out, id);
    return {};
  }

  const std::unordered_set<NameId>& comm_names_;
  NameId max_name_ = 0;
};

}  // namespace

Status WriteBinaryTrace(Workload& workload, const std::string& path) {
  const int world = workload.world_size();
  if (world < 1 || static_cast<std::uint32_t>(world) > kMaxWorldSize) {
    return Status::InvalidArgument(
        fmt::format("{}: cannot write a trace of {} ranks (1 to {})", path, world, kMaxWorldSize));
  }
  const NameTable& names = workload.names();
  std::unordered_set<NameId> comm_names;
  for (const CommunicatorSpec& comm : workload.communicators()) {
    if (comm.name == 0 || comm.name >= names.size()) {
      return Status::InvalidArgument(
          fmt::format("{}: a communicator has no name (name id {})", path, comm.name));
    }
    if (!comm_names.insert(comm.name).second) {
      return Status::InvalidArgument(
          fmt::format("{}: communicator '{}' is declared twice", path, names.Name(comm.name)));
    }
    for (int r : comm.ranks) {
      if (r < 0 || r >= world) {
        return Status::InvalidArgument(
            fmt::format("{}: communicator '{}' has rank {}, outside the workload's {} ranks", path,
                        names.Name(comm.name), r, world));
      }
    }
  }

  trace_internal::AtomicFile file(path);
  TRACE_RETURN_IF_ERROR(file.Open());
  std::string buffer(kHeaderSize, '\0');  // the header is filled in last
  std::string index;
  index.reserve(static_cast<std::size_t>(world) * kIndexEntrySize);
  OpEncoder encoder(comm_names);
  std::uint64_t total_ops = 0;
  Op op;
  for (int rank = 0; rank < world; ++rank) {
    const std::uint64_t offset = file.size() + buffer.size();
    std::uint64_t count = 0;
    Result<std::unique_ptr<OpSource>> source = workload.OpenRank(rank);
    if (!source.ok()) return source.status();
    for (;; ++count) {
      Result<bool> more = source.value()->Next(op);
      if (!more.ok()) return more.status();
      if (!*more) break;
      if (std::string e = encoder.Encode(op, buffer); !e.empty()) {
        return Status::InvalidArgument(
            fmt::format("{}: rank {} op {} ({}): {}", path, rank, count, ToString(op.kind), e));
      }
      if (buffer.size() >= kFlushBytes) {
        TRACE_RETURN_IF_ERROR(file.Write(buffer.data(), buffer.size()));
        buffer.clear();
      }
    }
    PutFixed<std::uint64_t>(index, offset);
    PutFixed<std::uint64_t>(index, file.size() + buffer.size() - offset);
    PutFixed<std::uint64_t>(index, count);
    total_ops += count;
  }
  // Sources may intern names as they go, so the table is complete only now.
  if (encoder.max_name() >= names.size()) {
    return Status::InvalidArgument(
        fmt::format("{}: an op refers to name id {}, outside the name table ({} names)", path,
                    encoder.max_name(), names.size()));
  }

  const std::uint64_t names_offset = file.size() + buffer.size();
  PutFixed<std::uint32_t>(buffer, static_cast<std::uint32_t>(names.size() - 1));
  for (NameId id = 1; id < names.size(); ++id) {  // id 0 is always ""
    PutVarint(buffer, names.Name(id).size());
    buffer += names.Name(id);
  }
  const std::uint64_t comms_offset = file.size() + buffer.size();
  PutFixed<std::uint32_t>(buffer, static_cast<std::uint32_t>(workload.communicators().size()));
  for (const CommunicatorSpec& comm : workload.communicators()) {
    PutVarint(buffer, comm.name);
    PutVarint(buffer, comm.ranks.size());
    for (int r : comm.ranks) PutVarint(buffer, static_cast<std::uint64_t>(r));
  }
  const std::uint64_t index_offset = file.size() + buffer.size();
  buffer += index;
  TRACE_RETURN_IF_ERROR(file.Write(buffer.data(), buffer.size()));

  std::string header(kMagic, sizeof(kMagic));
  PutFixed<std::uint32_t>(header, kBinaryTraceVersion);
  PutFixed<std::uint32_t>(header, static_cast<std::uint32_t>(world));
  PutFixed<std::uint64_t>(header, file.size());
  PutFixed<std::uint64_t>(header, names_offset);
  PutFixed<std::uint64_t>(header, comms_offset);
  PutFixed<std::uint64_t>(header, index_offset);
  PutFixed<std::uint64_t>(header, total_ops);
  static_assert(kOpCountAt + 8 == kHeaderSize);
  TRACE_RETURN_IF_ERROR(file.WriteAt(0, header.data(), header.size()));
  return file.Commit();
}

}  // namespace myriad::emulator
