// What the trace readers and writers share: which fields belong to which op kind (both formats
// store exactly these, so a JSON Lines -> binary -> JSON Lines trip keeps every op equal), and
// the two format-specific openers behind OpenTrace.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "myriad/emulator/op.h"
#include "myriad/emulator/op_source.h"
#include "myriad/netmodel/collective.h"
#include "myriad/status.h"

// Returns the Status of `expr` from the enclosing function when it is an error.
#define TRACE_RETURN_IF_ERROR(expr)                             \
  do {                                                          \
    if (Status status_ = (expr); !status_.ok()) return status_; \
  } while (0)

namespace myriad::emulator::trace_internal {

constexpr std::uint32_t Bit(OpKind kind) { return 1u << static_cast<unsigned>(kind); }

// Ops that run on (or create) a stream. The others act on an event, the whole device, the
// host or the rank's bookkeeping, so a stream in them would mean nothing.
inline constexpr std::uint32_t kStreamKinds =
    Bit(OpKind::kKernel) | Bit(OpKind::kMemcpy) | Bit(OpKind::kMemset) | Bit(OpKind::kEventRecord) |
    Bit(OpKind::kStreamWaitEvent) | Bit(OpKind::kStreamSync) | Bit(OpKind::kStreamCreate) |
    Bit(OpKind::kCollective) | Bit(OpKind::kSend) | Bit(OpKind::kRecv);
// Ops whose duration a trace may give (kernel, memcpy, memset: optional; host: required).
inline constexpr std::uint32_t kDurationKinds =
    Bit(OpKind::kKernel) | Bit(OpKind::kHost) | Bit(OpKind::kMemcpy) | Bit(OpKind::kMemset);
inline constexpr std::uint32_t kEventKinds = Bit(OpKind::kEventRecord) |
                                             Bit(OpKind::kStreamWaitEvent) |
                                             Bit(OpKind::kEventSync) | Bit(OpKind::kEventQuery);

inline bool HasStream(OpKind kind) { return (kStreamKinds & Bit(kind)) != 0; }
inline bool HasDuration(OpKind kind) { return (kDurationKinds & Bit(kind)) != 0; }
inline bool HasEvent(OpKind kind) { return (kEventKinds & Bit(kind)) != 0; }

// Collectives that take a root (communicator rank), and those that take a reduction.
inline bool IsRooted(netmodel::CollectiveOp op) {
  using netmodel::CollectiveOp;
  return op == CollectiveOp::kBroadcast || op == CollectiveOp::kReduce ||
         op == CollectiveOp::kGather || op == CollectiveOp::kScatter;
}
inline bool IsReducing(netmodel::CollectiveOp op) {
  using netmodel::CollectiveOp;
  return op == CollectiveOp::kAllReduce || op == CollectiveOp::kReduce ||
         op == CollectiveOp::kReduceScatter;
}

// Point-to-point traffic is written as send and recv ops (they match by peer and sequence), so
// a "sendrecv" collective has no place in a trace.
inline bool IsTraceCollective(netmodel::CollectiveOp op) {
  return op != netmodel::CollectiveOp::kSendRecv;
}

Result<std::unique_ptr<Workload>> OpenJsonlTrace(const std::string& path, std::string text);
Result<std::unique_ptr<Workload>> OpenBinaryTrace(const std::string& path);

// Where a trace is written. A regular file (or a new one) is written to a temporary file
// next to it, then renamed onto it, so a failed conversion never leaves a half-written trace
// behind; a symbolic link gets the same done to the file it names (the link stays). Anything
// else (a FIFO, /dev/stdout, /dev/null) is written into, never replaced: the bytes are kept
// in memory and written in order at Commit, since such a file cannot seek. A directory is
// refused.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();  // removes the temporary file unless Commit succeeded
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  Status Open();
  Status Write(const void* data, std::size_t size);
  Status WriteAt(std::uint64_t offset, const void* data, std::size_t size);
  std::uint64_t size() const { return size_; }
  Status Commit();

 private:
  Status Error(const std::string& what) const;
  std::string path_;         // as given, for messages
  std::string target_;       // the file written: path_, or what its link names
  std::string temp_path_;    // empty when writing into a file that is not regular
  std::FILE* file_ = nullptr;
  std::string buffered_;     // what goes into a file that is not regular, at Commit
  std::uint64_t size_ = 0;
  bool committed_ = false;
};

}  // namespace myriad::emulator::trace_internal
