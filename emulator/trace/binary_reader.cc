// Reads binary traces lazily: the file is memory-mapped, the header, tables and index are
// checked at open, and each rank's ops are decoded only as its OpSource asks for them, so
// opening rank r touches rank r's block alone and memory does not grow with ranks x ops.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "myriad/emulator/trace.h"
#include "trace/binary_format.h"
#include "trace/trace_internal.h"

namespace myriad::emulator::trace_internal {
namespace {

using binary_trace::GetFixed;
using binary_trace::kMaxOpBytes;
using binary_trace::UnZigZag;
namespace bt = binary_trace;

// Pages a source has read past are dropped from the process every this many bytes, and at the
// end of its block: they are clean file pages, so the kernel reloads them if anything (a
// neighbouring rank sharing a page) reads them again. Without this, a replay that walks every
// rank would end up with the whole file resident.
constexpr std::size_t kReleaseBytes = 64u << 10;
// A page fault maps more than the faulting page: Linux maps pages around it (fault-around) and
// whole large folios of the page cache, up to 2 MiB on ext4 and xfs. Reading a block's first
// page therefore maps pages of the blocks before it again, so a source releases from the start
// of the 2 MiB window around its block when it reaches the block's end. (Measured: walking
// 16,384 ranks x 1,000 ops kept 160 MiB resident with a 64 KiB window, 5 MiB with this one.)
constexpr std::size_t kFaultWindowBytes = 2u << 20;

class Mapping {
 public:
  Mapping(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  ~Mapping() {
    if (size_ != 0) ::munmap(const_cast<std::uint8_t*>(data_), size_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
};

// What every source of one trace shares; sources keep it alive after the workload is gone.
struct TraceFile {
  std::string path;
  std::unique_ptr<Mapping> map;
  std::uint32_t name_count = 0;  // ids below this are in the file's name table
  std::uint32_t version = kBinaryTraceVersion;
  std::vector<std::uint8_t> is_comm;  // by name id: 1 if a declared communicator
};

// Flags each kind may carry; anything else is corruption.
constexpr std::array<std::uint8_t, kNumOpKinds> AllowedFlags() {
  std::array<std::uint8_t, kNumOpKinds> allowed{};
  for (int i = 0; i < kNumOpKinds; ++i) {
    const auto kind = static_cast<OpKind>(i);
    if ((kStreamKinds & Bit(kind)) != 0) allowed[i] |= bt::kHasStream;
    if ((kDurationKinds & Bit(kind)) != 0) allowed[i] |= bt::kHasDuration;
  }
  allowed[static_cast<int>(OpKind::kKernel)] |= bt::kHasGrid | bt::kHasBlock | bt::kHasSharedMem |
                                                bt::kHasGemm | bt::kHasBytes | bt::kHasAttention;
  allowed[static_cast<int>(OpKind::kMemcpy)] |= bt::kCopyKindMask | bt::kBlocking;
  allowed[static_cast<int>(OpKind::kMemset)] |= bt::kBlocking;
  allowed[static_cast<int>(OpKind::kStreamCreate)] |= bt::kNonBlocking | bt::kHasPriority;
  return allowed;
}
constexpr std::array<std::uint8_t, kNumOpKinds> kAllowedFlags = AllowedFlags();

// Reads fields without bounds checks: the caller guarantees kMaxOpBytes readable bytes, and
// checks afterwards that the op ended inside its block. Malformed values set `bad`.
struct Cursor {
  const std::uint8_t* p;
  bool bad = false;

  std::uint64_t Varint() {
    std::uint64_t b = *p++;
    if (b < 0x80) [[likely]]
      return b;
    std::uint64_t v = b & 0x7f;
    for (int shift = 7; shift <= 63; shift += 7) {
      b = *p++;
      v |= (b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
    bad = true;  // more than 10 bytes
    return 0;
  }
  std::int32_t Int32() {
    const std::int64_t v = UnZigZag(Varint());
    if (v < std::numeric_limits<std::int32_t>::min() ||
        v > std::numeric_limits<std::int32_t>::max()) {
      bad = true;
    }
    return static_cast<std::int32_t>(v);
  }
  std::uint32_t Uint32() {
    const std::uint64_t v = Varint();
    if (v > std::numeric_limits<std::uint32_t>::max()) bad = true;
    return static_cast<std::uint32_t>(v);
  }
  std::int64_t NonNegative() {
    const std::uint64_t v = Varint();
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) bad = true;
    return static_cast<std::int64_t>(v);
  }
  std::uint8_t Byte() { return *p++; }
  double Double() {
    double v = 0;
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
    return v;
  }
  Dim3 Dim() {
    Dim3 d{Uint32(), Uint32(), Uint32()};
    if (d.x == 0 || d.y == 0 || d.z == 0) bad = true;
    return d;
  }
};

// Decodes one op; returns null, or what is wrong with it.
const char* DecodeOp(Cursor& c, const TraceFile& file, Op& op) {
  op = Op{};
  const std::uint8_t kind = c.Byte();
  if (kind >= kNumOpKinds) return "unknown op kind";
  const std::uint8_t flags = c.Byte();
  if ((flags & ~kAllowedFlags[kind]) != 0) return "flags not defined for this op kind";
  op.kind = static_cast<OpKind>(kind);
  if ((flags & bt::kHasStream) != 0) op.stream = c.Int32();
  if ((flags & bt::kHasDuration) != 0) op.duration = c.NonNegative();
  if ((kEventKinds & Bit(op.kind)) != 0) op.event = c.Int32();
  const auto name = [&](NameId* out) {
    const std::uint64_t id = c.Varint();
    if (id >= file.name_count) c.bad = true;
    *out = static_cast<NameId>(id);
  };
  const auto comm = [&](NameId* out) {
    const std::uint64_t id = c.Varint();
    if (id >= file.name_count || file.is_comm[id] == 0) c.bad = true;
    *out = static_cast<NameId>(id);
  };
  // `gemm`: a GEMM's type, which may be TF32 (its math); no data is stored or sent in TF32.
  const auto data_type = [&](bool gemm = false) {
    const std::uint8_t t = c.Byte();
    const auto last = gemm ? DataType::kTfloat32 : DataType::kFloat8e5m2;
    if (t > static_cast<std::uint8_t>(last)) c.bad = true;
    return static_cast<DataType>(t);
  };
  switch (op.kind) {
    case OpKind::kKernel:
      name(&op.name);
      if ((flags & bt::kHasGrid) != 0) op.grid = c.Dim();
      if ((flags & bt::kHasBlock) != 0) op.block = c.Dim();
      if ((flags & bt::kHasSharedMem) != 0) op.shared_mem = c.Uint32();
      if ((flags & bt::kHasGemm) != 0) {
        op.gemm.m = c.NonNegative();
        op.gemm.n = c.NonNegative();
        op.gemm.k = c.NonNegative();
        op.gemm.batch = c.NonNegative();
        const std::uint8_t type = c.Byte();
        op.gemm.fast_accumulation = (type & bt::kGemmFastAccumulation) != 0;
        op.gemm.dtype = static_cast<DataType>(type & ~bt::kGemmFastAccumulation);
        if (op.gemm.dtype > DataType::kTfloat32) c.bad = true;
      }
      if ((flags & bt::kHasBytes) != 0) {
        op.bytes = c.Varint();
        if (file.version >= 2) {
          const std::uint8_t bits = c.Byte();
          if ((bits & ~(bt::kBytesGuessed | bt::kCountsFollow)) != 0) c.bad = true;
          op.bytes_guessed = (bits & bt::kBytesGuessed) != 0;
          if ((bits & bt::kCountsFollow) != 0) {
            KernelCounts& k = op.counts;
            k.counted = true;
            k.tensor_dtype = data_type(true);
            for (double* v :
                 {&k.fma_flops, &k.fp64_flops, &k.tensor_flops, &k.sfu_ops, &k.instructions}) {
              *v = c.Double();
              if (!(*v >= 0) || !std::isfinite(*v)) c.bad = true;
            }
          }
        }
      }
      if ((flags & bt::kHasAttention) != 0) {
        AttentionShape& a = op.attention;
        for (std::int64_t* v : {&a.batch, &a.heads, &a.seq_q, &a.seq_kv, &a.head_dim}) {
          *v = c.NonNegative();
          if (*v < 1 || *v > bt::kMaxAttentionDim) c.bad = true;
        }
        a.dtype = data_type();
        const std::uint8_t bits = c.Byte();
        const std::uint8_t known = bt::kAttentionCausal | bt::kAttentionBackward |
                                   (file.version >= 2 ? bt::kAttentionKernelMask : 0);
        if ((bits & ~known) != 0) c.bad = true;
        a.causal = (bits & bt::kAttentionCausal) != 0;
        a.backward = (bits & bt::kAttentionBackward) != 0;
        a.kernel = static_cast<AttentionKernel>((bits & bt::kAttentionKernelMask) >>
                                                bt::kAttentionKernelShift);
      }
      break;
    case OpKind::kMemcpy:
      op.copy_kind = static_cast<MemcpyKind>((flags & bt::kCopyKindMask) >> bt::kCopyKindShift);
      [[fallthrough]];
    case OpKind::kMemset:
      op.async = (flags & bt::kBlocking) == 0;
      [[fallthrough]];
    case OpKind::kMalloc:
    case OpKind::kFree:
      op.bytes = c.Varint();
      break;
    case OpKind::kStreamCreate:
      if (op.stream <= 0) c.bad = true;
      op.non_blocking = (flags & bt::kNonBlocking) != 0;
      if ((flags & bt::kHasPriority) != 0) op.priority = c.Int32();
      break;
    case OpKind::kCollective: {
      comm(&op.comm);
      const std::uint8_t coll = c.Byte();
      if (coll >= netmodel::kNumCollectiveOps) return "unknown collective";
      op.coll = static_cast<netmodel::CollectiveOp>(coll);
      if (!IsTraceCollective(op.coll)) return "unknown collective";
      op.count = c.Varint();
      op.dtype = data_type();
      if (IsReducing(op.coll)) {
        const std::uint8_t redop = c.Byte();
        if (redop > static_cast<std::uint8_t>(ReduceOp::kAvg)) return "unknown reduction";
        op.redop = static_cast<ReduceOp>(redop);
      }
      if (IsRooted(op.coll)) op.root = c.Int32();
      break;
    }
    case OpKind::kSend:
    case OpKind::kRecv:
      comm(&op.comm);
      op.peer = c.Int32();
      op.count = c.Varint();
      op.dtype = data_type();
      break;
    case OpKind::kMarker:
      name(&op.label);
      break;
    case OpKind::kHost:
      if ((flags & bt::kHasDuration) == 0) return "host op without a duration";
      break;
    default:
      break;
  }
  if (c.bad) return "malformed or out-of-range field (name, communicator, number or dimension)";
  return nullptr;
}

class BinaryRankSource : public OpSource {
 public:
  BinaryRankSource(std::shared_ptr<const TraceFile> file, int rank, std::uint64_t offset,
                   std::uint64_t length, std::uint64_t count)
      : file_(std::move(file)),
        rank_(rank),
        p_(file_->map->data() + offset),
        end_(p_ + length),
        remaining_(count),
        block_end_(offset + length),
        released_(offset & ~(PageSize() - 1)),
        window_start_(offset & ~(std::max(kFaultWindowBytes, PageSize()) - 1)) {}

  Result<bool> Next(Op& op) override {
    if (remaining_ == 0) {
      if (p_ != end_) {
        return Error(fmt::format("{} bytes left after the rank's last op",
                                 static_cast<std::size_t>(end_ - p_)));
      }
      released_ = std::min(released_, window_start_);
      Release(std::min(file_->map->size(), (block_end_ + PageSize() - 1) & ~(PageSize() - 1)));
      return false;
    }
    if (!in_tail_ && static_cast<std::size_t>(end_ - p_) < kMaxOpBytes) EnterTail();
    Cursor cursor{p_};
    const char* problem = DecodeOp(cursor, *file_, op);
    if (problem == nullptr && cursor.p > end_) problem = "truncated op (the block ends inside it)";
    if (problem != nullptr) return Error(problem);
    p_ = cursor.p;
    --remaining_;
    ++index_;
    if (!in_tail_) MaybeRelease();
    return true;
  }

 private:
  static std::size_t PageSize() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }

  Status Error(std::string_view problem) const {
    return Status::InvalidArgument(
        fmt::format("{}: rank {} op {}: {}", file_->path, rank_, index_, problem));
  }

  // The last ops of a block are decoded from a zero-padded copy, so the unchecked cursor never
  // reads past the block (or the mapping).
  void EnterTail() {
    const auto left = static_cast<std::size_t>(end_ - p_);
    std::memcpy(tail_.data(), p_, left);
    p_ = tail_.data();
    end_ = p_ + left;
    in_tail_ = true;
  }

  void MaybeRelease() {
    const auto offset = static_cast<std::size_t>(p_ - file_->map->data());
    if (offset - released_ >= kReleaseBytes) Release(offset & ~(PageSize() - 1));
  }
  // Drops the pages of [released_, upto), file offsets, upto page-aligned or the file's end.
  void Release(std::size_t upto) {
    if (upto <= released_) return;
    ::madvise(const_cast<std::uint8_t*>(file_->map->data()) + released_, upto - released_,
              MADV_DONTNEED);
    released_ = upto;
  }

  std::shared_ptr<const TraceFile> file_;
  int rank_;
  const std::uint8_t* p_;
  const std::uint8_t* end_;
  std::uint64_t remaining_;
  std::uint64_t index_ = 0;
  std::size_t block_end_;     // file offset
  std::size_t released_;      // file offset below which this source has dropped its pages
  std::size_t window_start_;  // where the fault window around the block starts
  bool in_tail_ = false;
  std::array<std::uint8_t, 2 * kMaxOpBytes> tail_{};
};

// Bounds-checked reading of the header tables (read once, so clarity beats speed).
struct TableReader {
  const std::uint8_t* p;
  const std::uint8_t* end;
  bool ok = true;

  std::uint64_t Varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift <= 63; shift += 7) {
      if (p == end) break;
      const std::uint8_t b = *p++;
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
    ok = false;
    return 0;
  }
  std::uint32_t U32() {
    if (end - p < 4) {
      ok = false;
      return 0;
    }
    const auto v = GetFixed<std::uint32_t>(p);
    p += 4;
    return v;
  }
  std::string_view Bytes(std::uint64_t n) {
    if (static_cast<std::uint64_t>(end - p) < n) {
      ok = false;
      return {};
    }
    std::string_view s(reinterpret_cast<const char*>(p), n);
    p += n;
    return s;
  }
};

class BinaryTraceWorkload : public Workload {
 public:
  static Result<std::unique_ptr<Workload>> Open(const std::string& path);

  int world_size() const override { return world_; }
  const std::vector<CommunicatorSpec>& communicators() const override { return comms_; }
  NameTable& names() override { return names_; }
  std::string description() const override { return "trace " + file_->path; }

  Result<std::unique_ptr<OpSource>> OpenRank(int rank) override {
    if (rank < 0 || rank >= world_) {
      return Status::InvalidArgument(
          fmt::format("{}: rank {} is outside the trace's {} ranks", file_->path, rank, world_));
    }
    const std::uint8_t* entry =
        file_->map->data() + index_offset_ + static_cast<std::size_t>(rank) * bt::kIndexEntrySize;
    return std::unique_ptr<OpSource>(std::make_unique<BinaryRankSource>(
        file_, rank, GetFixed<std::uint64_t>(entry), GetFixed<std::uint64_t>(entry + 8),
        GetFixed<std::uint64_t>(entry + 16)));
  }

 private:
  std::shared_ptr<const TraceFile> file_;
  int world_ = 0;
  std::uint64_t index_offset_ = 0;
  NameTable names_;
  std::vector<CommunicatorSpec> comms_;
};

Result<std::unique_ptr<Workload>> BinaryTraceWorkload::Open(const std::string& path) {
  const auto error = [&](const std::string& message) {
    return Status::InvalidArgument(fmt::format("{}: {}", path, message));
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::NotFound(
        fmt::format("{}: cannot open trace file: {}", path, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return error(fmt::format("cannot stat: {}", std::strerror(errno)));
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size < bt::kHeaderSize) {
    ::close(fd);
    return error(fmt::format("truncated binary trace ({} bytes, shorter than its {}-byte header)",
                             size, bt::kHeaderSize));
  }
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);  // the mapping keeps the file open
  if (data == MAP_FAILED) return error(fmt::format("cannot map: {}", std::strerror(errno)));
  auto file = std::make_shared<TraceFile>();
  file->path = path;
  file->map = std::make_unique<Mapping>(static_cast<const std::uint8_t*>(data), size);
  const std::uint8_t* base = file->map->data();

  if (std::memcmp(base, bt::kMagic, sizeof(bt::kMagic)) != 0) {
    return error("not a Myriad binary trace (bad magic bytes; expected \"MYRTRACE\")");
  }
  const auto version = GetFixed<std::uint32_t>(base + bt::kVersionAt);
  if (version < kOldestBinaryTraceVersion || version > kBinaryTraceVersion) {
    return error(
        fmt::format("unsupported binary trace version {} (this Myriad reads versions {} to {})",
                    version, kOldestBinaryTraceVersion, kBinaryTraceVersion));
  }
  file->version = version;
  const auto world = GetFixed<std::uint32_t>(base + bt::kWorldSizeAt);
  const auto file_size = GetFixed<std::uint64_t>(base + bt::kFileSizeAt);
  const auto names_at = GetFixed<std::uint64_t>(base + bt::kNamesAt);
  const auto comms_at = GetFixed<std::uint64_t>(base + bt::kCommsAt);
  const auto index_at = GetFixed<std::uint64_t>(base + bt::kIndexAt);
  const auto op_count = GetFixed<std::uint64_t>(base + bt::kOpCountAt);
  if (size < file_size) {
    return error(fmt::format("truncated binary trace ({} of its {} bytes)", size, file_size));
  }
  if (size > file_size) {
    return error(fmt::format("{} unexpected bytes after the end of the binary trace ({} bytes)",
                             size - file_size, file_size));
  }
  if (world == 0 || world > bt::kMaxWorldSize) {
    return error(fmt::format("corrupt header: world size {}", world));
  }
  if (!(bt::kHeaderSize <= names_at && names_at <= comms_at && comms_at <= index_at &&
        index_at <= size && size - index_at == world * bt::kIndexEntrySize)) {
    return error("corrupt header: its section offsets do not fit the file");
  }

  auto workload = std::make_unique<BinaryTraceWorkload>();
  workload->world_ = static_cast<int>(world);
  workload->index_offset_ = index_at;

  TableReader names{base + names_at, base + comms_at};
  const std::uint32_t name_count = names.U32();
  for (std::uint32_t i = 1; names.ok && i <= name_count; ++i) {
    const std::string_view name = names.Bytes(names.Varint());
    if (!names.ok) break;
    if (workload->names_.Intern(name) != i) {
      return error(
          fmt::format("corrupt name table: name {} ('{}') repeats an earlier one", i, name));
    }
  }
  if (!names.ok || names.p != names.end) return error("corrupt name table");
  file->name_count = name_count + 1;
  file->is_comm.assign(file->name_count, 0);

  TableReader comms{base + comms_at, base + index_at};
  const std::uint32_t comm_count = comms.U32();
  std::vector<std::uint32_t> seen_in(world, 0);  // per rank: 1 + the last communicator it was in
  for (std::uint32_t c = 0; comms.ok && c < comm_count; ++c) {
    CommunicatorSpec spec;
    const std::uint64_t name = comms.Varint();
    const std::uint64_t members = comms.Varint();
    if (!comms.ok || name == 0 || name >= file->name_count || file->is_comm[name] != 0 ||
        members == 0 || members > world) {
      return error(fmt::format("corrupt communicator table (communicator {})", c));
    }
    spec.name = static_cast<NameId>(name);
    file->is_comm[name] = 1;
    for (std::uint64_t m = 0; m < members; ++m) {
      const std::uint64_t rank = comms.Varint();
      if (!comms.ok || rank >= world || seen_in[rank] == c + 1) {
        return error(fmt::format("corrupt communicator table (communicator '{}')",
                                 workload->names_.Name(spec.name)));
      }
      seen_in[rank] = c + 1;
      spec.ranks.push_back(static_cast<int>(rank));
    }
    workload->comms_.push_back(std::move(spec));
  }
  if (!comms.ok || comms.p != comms.end) return error("corrupt communicator table");

  std::uint64_t total = 0;
  for (std::uint32_t r = 0; r < world; ++r) {
    const std::uint8_t* entry = base + index_at + r * bt::kIndexEntrySize;
    const auto offset = GetFixed<std::uint64_t>(entry);
    const auto length = GetFixed<std::uint64_t>(entry + 8);
    const auto count = GetFixed<std::uint64_t>(entry + 16);
    // Every op takes at least its kind and flags bytes.
    if (offset < bt::kHeaderSize || offset > names_at || length > names_at - offset ||
        count > length / 2) {
      return error(fmt::format("corrupt index entry for rank {}", r));
    }
    total += count;
  }
  if (total != op_count) {
    return error(fmt::format("corrupt index: {} ops, the header says {}", total, op_count));
  }
  workload->file_ = std::move(file);
  return std::unique_ptr<Workload>(std::move(workload));
}

}  // namespace

Result<std::unique_ptr<Workload>> OpenBinaryTrace(const std::string& path) {
  return BinaryTraceWorkload::Open(path);
}

}  // namespace myriad::emulator::trace_internal
