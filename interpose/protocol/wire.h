// The wire protocol between the shims (inside the training process) and the `myriad` process.
// Header-only, plain C++ with fixed-size little-endian records, so the shims need nothing but
// libc and libstdc++ to speak it.
//
// A connection carries frames: FrameHeader followed by `length` bytes of payload.
//   client -> server: kHello once, then kNames, kOps and kThread frames; a kOps frame whose
//                     last op has kWantsReply set, and a kThread frame of a thread that sleeps,
//                     are answered by one kReply frame before the client goes on.
//   server -> client: kReply, or kFatal (one line of text) when the run has failed.
// Every frame is at most kMaxFrameBytes; the server drops a connection that sends more.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace myriad::wire {

inline constexpr std::uint32_t kMagic = 0x4452594d;  // "MYRD"
inline constexpr std::uint32_t kVersion = 12;
inline constexpr std::uint32_t kMaxFrameBytes = 1u << 20;

enum class FrameType : std::uint32_t {
  kHello = 1,
  kNames = 2,      // interned strings: repeated {u32 id, u32 length, bytes}
  kOps = 3,        // OpsHeader then its count of WireOps
  kReply = 4,      // Reply
  kFatal = 5,      // text
  kThread = 6,     // ThreadState: a host thread started, waits on the host, resumed, or ended
  kData = 7,       // DataHeader, the communicator's name, then the bytes this rank contributes
  kDataReply = 8,  // DataReply, then the bytes this rank receives
  kTimer = 9,      // TimerReply: a sleep or a timed wait reached its deadline
  // The errors the process's CUDA calls returned, at its exit: repeated {u32 count, u32
  // length, the error's name}, for the report.
  kErrors = 10,
  // A module the process loaded from a file (cuModuleLoad): {u32 module id}, then its path,
  // whose cubin or PTX beside it holds the code of the kernels it launches through the driver.
  kModule = 11,
  // A module the process loaded from memory (cuModuleLoadData): {u32 module id}, then the PTX
  // its cubin carries.
  kModulePtx = 12,
  // Device memory whose bytes are known: {u32 contents id}, then the bytes a copy from the
  // host put there (at most kMaxKnownContents). A launch names the contents its pointers point
  // into (WireOp::content_*), so that a kernel's code reading them (a loop bound in memory)
  // can be evaluated. Kernels are timed, not run, so only copies make device bytes known.
  kDeviceContents = 13,
};
inline constexpr std::uint32_t kMaxKnownContents = 64 * 1024;
inline constexpr std::uint32_t kMaxModulePath = 4096;

// The data of a small collective or send/recv, so that what a program reads back on the host
// is the real result (nccl.cc decides what is small). Myriad matches the members' frames by
// (communicator, sequence) and answers each with its part of the result; a send is not
// answered, a receive is answered with the matching send's bytes. This is apart from timing:
// the collective's op is timed by the engine as any other. While it waits for its answer the
// thread holds no virtual time back; it resumes at the latest clock among the members' calls
// (a receive: the later of its own and its send's), which the answer carries.
enum class DataKind : std::uint8_t { kCollective = 0, kSend = 1, kRecv = 2 };
struct DataHeader {
  DataKind kind = DataKind::kCollective;
  std::uint8_t coll = 0;   // emulator::CollectiveKind
  std::uint8_t dtype = 0;  // ncclDataType_t
  std::uint8_t redop = 0;  // ncclRedOp_t (sum, prod, max, min, avg)
  std::int32_t rank = 0;
  std::int32_t nranks = 0;
  std::int32_t root = -1;      // rooted collectives; send/recv: the peer
  std::uint64_t sequence = 0;  // the communicator's collective count; send/recv: per pair
  std::uint64_t count = 0;     // elements, as the NCCL call's count argument
  std::uint32_t comm_length = 0;
  std::uint32_t bytes = 0;  // contributed bytes after the name
  // The sender's number for the call, echoed in the answer: a thread that sends a group's
  // calls at once (ncclGroupEnd) matches the answers, which come as each call completes.
  std::uint32_t tag = 0;
  std::uint32_t thread = 0;  // the calling host thread (ThreadState::thread)
  std::int64_t time_ps = 0;  // its virtual clock at the call
};
struct DataReply {
  std::int32_t status = 0;  // 0 ok; otherwise the exchange failed (the run fails too)
  std::uint32_t bytes = 0;
  std::uint32_t tag = 0;  // the call's DataHeader::tag
  std::uint32_t reserved = 0;
  std::int64_t time_ps = 0;  // when the thread resumes: the latest of the members' clocks
};
// Collectives as WireOp::coll and DataHeader::coll number them: netmodel::CollectiveOp's
// numbering (checked by a static_assert in the server).
enum class DataColl : std::uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSendRecv,
  kGather,
  kScatter,
};
// What each member sends and receives in a collective's exchange, in elements (of `count`
// for `nranks` members): both ends compute it from the call's arguments alone.
inline std::uint64_t SendElements(const DataHeader& h, int rank) {
  const auto n = static_cast<std::uint64_t>(h.nranks);
  switch (static_cast<DataColl>(h.coll)) {
    case DataColl::kBroadcast:
      return rank == h.root ? h.count : 0;
    case DataColl::kReduceScatter:
    case DataColl::kAllToAll:
      return n * h.count;
    case DataColl::kScatter:
      return rank == h.root ? n * h.count : 0;
    default:
      return h.count;
  }
}
inline std::uint64_t ReceiveElements(const DataHeader& h, int rank) {
  const auto n = static_cast<std::uint64_t>(h.nranks);
  switch (static_cast<DataColl>(h.coll)) {
    case DataColl::kReduce:
      return rank == h.root ? h.count : 0;
    case DataColl::kAllGather:
    case DataColl::kAllToAll:
      return n * h.count;
    case DataColl::kGather:
      return rank == h.root ? n * h.count : 0;
    default:
      return h.count;
  }
}

// The most bytes one rank may send or receive in one exchange.
inline constexpr std::uint32_t kMaxDataBytes = 64u << 20;

// A host thread's state, as its process sees it. Sent by the thread itself, or by the thread
// that wakes it (before that one goes on), or by the thread that creates it; `version` orders
// the reports about one thread, which may come over different connections.
enum class HostState : std::int32_t {
  kRunning = 0,  // may send ops from `time` on
  kBlocked = 1,  // waits on the host for another thread (a barrier, a condition, a join)
  kExited = 2,
  kSleeping = 3,  // sleeps until `time` (virtual): Myriad answers with a kTimer at that time
  kOutside = 4,   // waits on something Myriad does not see (a file descriptor)
  // A timed wait (a condition or a semaphore) until `time`: a waker's report may end it
  // first; if none does, Myriad answers with a kTimer once virtual time reaches `time`.
  kWaitingUntil = 5,
};
struct ThreadState {
  std::uint32_t thread = 0;
  std::uint32_t version = 0;
  HostState state = HostState::kRunning;
  std::int32_t reserved = 0;
  std::int64_t time = 0;
};

// The answer to a sleep or a timed wait: the report of `version` about the thread reached
// its deadline `time`. A timed wait that a waker ended may still get its (stale) answer: the
// client drops a kTimer whose version is not the wait's.
struct TimerReply {
  std::uint32_t version = 0;
  std::uint32_t reserved = 0;
  std::int64_t time = 0;
};

struct FrameHeader {
  FrameType type;
  std::uint32_t length;
};

struct Hello {
  std::uint32_t magic = kMagic;
  std::uint32_t version = kVersion;
  std::int32_t process = 0;  // index given by the launcher (MYRIAD_PROCESS)
  std::int32_t pid = 0;
  std::int32_t devices = 0;  // virtual devices this process drives
  // 1: a process that `process` started (torchrun's workers): Myriad gives it an index of its
  // own, the same for every connection of its pid, seeing the GPUs `process` sees.
  std::int32_t descendant = 0;
};

// Who sends a batch: host threads keep their own virtual clocks, and a thread blocked waiting
// for a reply cannot send anything else, which is what lets the engine run ahead of it.
struct OpsHeader {
  std::int32_t device = 0;          // the process's device the ops are for
  std::uint32_t thread = 0;         // the sending thread, numbered by the client from 0
  std::int64_t thread_time_ps = 0;  // the thread's virtual clock when it sent the batch
  std::uint32_t count = 0;
  // The version of the report that last said the sending thread runs (its creation, a wake,
  // a resume). That report may travel over another thread's connection (its waker's, its
  // creator's), and the batch must not be taken before it: Myriad holds the batch until it
  // has that report, so the waker's earlier ops come first.
  std::uint32_t state_version = 0;
  // The sending thread's ops so far, this batch's included: its position in its own stream of
  // ops, which another thread's batch may have to come after (below).
  std::uint64_t ops_sent = 0;
  // A batch of no ops on no device (device -1) orders what follows it on its connection after
  // thread `after_thread`'s first `after_ops` ops: the sender took a lock, semaphore or
  // condition that thread had let go of, so the work it enqueued before letting go comes
  // first, however the two connections' bytes reach Myriad.
  std::uint64_t after_ops = 0;
  std::uint32_t after_thread = 0;
  std::uint32_t reserved = 0;  // no padding: the header goes on the wire as it is
};
inline constexpr std::int32_t kNoDevice = -1;

// Op kinds on the wire: emulator::OpKind values, plus calls only live processes make.
enum class WireKind : std::uint8_t {
  // 0 .. 18: emulator::OpKind, same numbering (checked by a static_assert in the server).
  kCommInit = 100,      // join communicator `comm` as `peer` of `count` ranks (blocking)
  kEventElapsed = 101,  // reply value: completion(event2) - completion(event), picoseconds
  kStreamQuery = 102,   // reply value: 1 if the stream's work is done at the host's time
  kCommDestroy = 103,
};

enum WireFlags : std::uint8_t {
  kAsync = 1,        // memcpy/memset: the asynchronous variant
  kWantsReply = 2,   // the client blocks until the server answers this op
  kNonBlocking = 4,  // stream create: cudaStreamNonBlocking
  // An event or stream query of something the thread already found not ready at its current
  // clock (a polling loop): "not ready" again moves its clock to the next completion.
  kRepeatedPoll = 8,
};

// One op, as emulator::Op, with names as ids from this connection's kNames frames.
struct WireOp {
  std::uint8_t kind = 0;
  std::uint8_t flags = 0;
  std::uint8_t copy_kind = 0;
  std::uint8_t coll = 0;
  std::uint8_t dtype = 0;
  std::uint8_t redop = 0;
  std::uint8_t gemm_dtype = 0;
  std::uint8_t int_arg_count = 0;  // kernel: how many of int_args hold values
  std::int32_t stream = 0;
  std::uint32_t name = 0;  // kernel name or marker label
  std::uint32_t comm = 0;  // communicator name
  std::uint32_t grid[3] = {1, 1, 1};
  std::uint32_t block[3] = {1, 1, 1};
  std::uint32_t shared_mem = 0;
  std::int32_t event = 0;
  std::int32_t event2 = 0;
  std::int32_t priority = 0;
  std::int32_t root = -1;
  std::int32_t peer = -1;  // send/recv peer; comm init: this rank's communicator rank
  std::int64_t duration_ps = -1;
  std::uint64_t bytes = 0;
  std::uint64_t count = 0;  // elements; comm init: communicator size
  std::int64_t gemm_m = 0, gemm_n = 0, gemm_k = 0, gemm_batch = 1;
  std::int64_t host_ps = -1;  // the sending thread's clock when it made the call (-1: unknown)
  // kernel: the values of its first integer parameters (kernel_signature.h), for the models
  // of kernels whose work they give (an element count, a row length)
  std::int64_t int_args[8] = {};
  // kernel: for each of its first pointer parameters (kernel_signature.h), the bytes of the
  // allocation it points into from the pointer on (0: not device, managed or pinned memory)
  std::uint8_t pointer_arg_count = 0;
  // kernel loaded through the driver (a cubin's parameter layout, not a mangled name): how
  // many parameters it has, and which of its first 32 are pointers (bit i: parameter i), so
  // that int_args and pointer_bytes are those of its non-pointer and pointer parameters in
  // order; 0 for a kernel whose name gives its parameters.
  std::uint8_t param_count = 0;
  // kernel loaded through the driver: the id of the module its function came from (the
  // kModule or kModulePtx frame that carried it; several modules may hold kernels of one
  // name, as Triton's autotuning variants do), 0 when not known.
  std::uint16_t module = 0;
  std::uint32_t pointer_mask = 0;
  // As many as pointer_mask marks: Inductor's flex-attention templates take 12 to 17 pointers,
  // and traffic is bounded by their reach only when every one is measured.
  std::uint64_t pointer_bytes[32] = {};
  // kernel: its pointer parameters that point into known device contents (kDeviceContents):
  // the parameter's position in the kernel's parameter list, the contents' id, and the
  // pointer's offset into them.
  std::uint8_t content_ref_count = 0;
  std::uint8_t content_param[8] = {};
  std::uint32_t content_id[8] = {};
  std::uint32_t content_offset[8] = {};
  // GEMM: 1 when its FP8 products are accumulated fast (cuBLASLt's FAST_ACCUM), not promoted
  std::uint8_t gemm_fast_accum = 0;
};
static_assert(std::is_trivially_copyable_v<WireOp>);

// The largest payload a frame of `type` may carry: the server checks it before allocating.
inline std::uint32_t MaxPayload(FrameType type);

struct Reply {
  std::int64_t host_time_ps = 0;  // the rank's virtual host time after the op
  std::int32_t status = 0;        // 0 ok; otherwise a CUDA-style error code
  std::int32_t reserved = 0;
  std::int64_t value = 0;  // kind-specific (elapsed time, query result)
};

inline std::uint32_t MaxPayload(FrameType type) {
  switch (type) {
    case FrameType::kHello:
      return sizeof(Hello);
    case FrameType::kReply:
      return sizeof(Reply);
    case FrameType::kThread:
      return sizeof(ThreadState);
    case FrameType::kTimer:
      return sizeof(TimerReply);
    case FrameType::kNames:
    case FrameType::kOps:
    case FrameType::kFatal:
    case FrameType::kErrors:
      return kMaxFrameBytes;
    case FrameType::kData:
    case FrameType::kDataReply:
      return sizeof(DataHeader) + 4096 + kMaxDataBytes;  // a name of up to 4 KiB
    case FrameType::kModule:
      return sizeof(std::uint32_t) + kMaxModulePath;
    case FrameType::kModulePtx:
      return kMaxFrameBytes;
    case FrameType::kDeviceContents:
      return sizeof(std::uint32_t) + kMaxKnownContents;
  }
  return 0;  // an unknown type carries nothing
}

// Appends a trivially copyable record to a byte buffer.
template <typename T>
void Append(std::string& buffer, const T& record) {
  static_assert(std::is_trivially_copyable_v<T>);
  buffer.append(reinterpret_cast<const char*>(&record), sizeof(T));
}

// Reads a record at `offset`, advancing it; false when the buffer is too short.
template <typename T>
bool Read(const std::string& buffer, std::size_t& offset, T& record) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (buffer.size() < offset + sizeof(T)) return false;
  std::memcpy(&record, buffer.data() + offset, sizeof(T));
  offset += sizeof(T);
  return true;
}

}  // namespace myriad::wire
