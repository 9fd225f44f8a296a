// Myriad's NCCL: communicators, groups, collectives and send/recv become ops for the `myriad`
// process (through the cudart shim's ClientTable, common/client_api.h), with NCCL's argument
// checks, error codes and NCCL_DEBUG output.
//
// Every function is defined as pncclX (NCCL's profiling name) and exported a second time as
// ncclX, a strong alias: an application that wraps ncclX and calls pncclX reaches the same code.
// Internal calls (ncclCommInitAll's group, ncclBcast) never go through the exported names.
//
// What becomes which op (wire.h, emulator/engine/host.cc):
//   ncclCommInitRank*   kCommInit (100) on the device current at the call: comm = the name
//                       "nccl-<hex of the id's first 16 bytes>", peer = rank, count = nranks.
//                       Outside a group and blocking: a call that waits for the engine's barrier;
//                       inside a group or non-blocking: submitted, the thread goes on (the
//                       engine orders everything later on that device after the join).
//   collectives         kCollective (12), send kSend (13), recv kRecv (14), on the
//                       communicator's device, stream = the cudart shim's id for the stream.
//   a group             at the outermost ncclGroupEnd, per device in first-use order:
//                       kGroupStart (15), that device's operations, kGroupEnd (16).
//   ncclCommSplit       see SplitExchange below (needs engine support).
//   ncclCommDestroy/Abort  kCommDestroy (103).
#include <dlfcn.h>
#include <nccl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/client_api.h"
#include "common/env.h"
#include "common/export.h"
#include "protocol/wire.h"

namespace {

using myriad::shim::Client;
using myriad::shim::ClientTable;
using myriad::wire::WireOp;

constexpr std::uint64_t kCommMagic = 0x4d5952494144434dULL;  // "MYRIADCM"
constexpr unsigned kConfigMagic = 0xcafebeef;                // NCCL_CONFIG_INITIALIZER's
constexpr unsigned kSimInfoMagic = 0x74685283;               // NCCL_SIM_INFO_INITIALIZER's

// Op kinds (emulator::OpKind numbering, and wire::WireKind for live-only calls).
constexpr std::uint8_t kKindCollective = 12;
constexpr std::uint8_t kKindSend = 13;
constexpr std::uint8_t kKindRecv = 14;
constexpr std::uint8_t kKindGroupStart = 15;
constexpr std::uint8_t kKindGroupEnd = 16;
constexpr std::uint8_t kKindHost = 17;
constexpr std::uint8_t kKindCommInit = static_cast<std::uint8_t>(myriad::wire::WireKind::kCommInit);
constexpr std::uint8_t kKindCommDestroy =
    static_cast<std::uint8_t>(myriad::wire::WireKind::kCommDestroy);

// The protocol's collective numbering (netmodel::CollectiveOp's), for ops and their data.
using Coll = myriad::wire::DataColl;

// ---------------------------------------------------------------------------------------------
// Formatting, NCCL_DEBUG and the last error.

__attribute__((format(printf, 1, 0))) std::string VFormat(const char* fmt, va_list args) {
  char small[512];
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(small, sizeof small, fmt, copy);
  va_end(copy);
  if (n < 0) return std::string();
  if (static_cast<size_t>(n) < sizeof small) return std::string(small, static_cast<size_t>(n));
  std::string out(static_cast<size_t>(n) + 1, '\0');
  std::vsnprintf(out.data(), out.size(), fmt, args);
  out.resize(static_cast<size_t>(n));
  return out;
}

__attribute__((format(printf, 1, 2))) std::string Format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string s = VFormat(fmt, args);
  va_end(args);
  return s;
}

// NCCL_DEBUG levels and NCCL_DEBUG_SUBSYS bits (NCCL's debug.h).
enum DebugLevel {
  kLevelNone = 0,
  kLevelVersion = 1,
  kLevelWarn = 2,
  kLevelInfo = 3,
  kLevelTrace = 5
};
constexpr std::uint64_t kSubsysInit = 1ULL << 0;
constexpr std::uint64_t kSubsysColl = 1ULL << 1;
constexpr std::uint64_t kSubsysBootstrap = 1ULL << 12;
constexpr std::uint64_t kSubsysEnv = 1ULL << 7;

struct SubsysName {
  const char* name;
  std::uint64_t bit;
};
constexpr SubsysName kSubsystems[] = {
    {"INIT", 1ULL << 0},       {"COLL", 1ULL << 1},   {"P2P", 1ULL << 2},
    {"SHM", 1ULL << 3},        {"NET", 1ULL << 4},    {"GRAPH", 1ULL << 5},
    {"TUNING", 1ULL << 6},     {"ENV", 1ULL << 7},    {"ALLOC", 1ULL << 8},
    {"CALL", 1ULL << 9},       {"PROXY", 1ULL << 10}, {"NVLS", 1ULL << 11},
    {"BOOTSTRAP", 1ULL << 12}, {"REG", 1ULL << 13},   {"PROFILE", 1ULL << 14},
    {"RAS", 1ULL << 15},       {"ALL", ~0ULL},
};

std::mutex g_debug_mutex;
std::atomic<int> g_debug_level{-1};  // -1: NCCL_DEBUG not read yet
std::uint64_t g_debug_mask = 0;
bool g_version_shown = false;

bool EqualsIgnoreCase(const std::string& a, const char* b) {
  if (a.size() != std::strlen(b)) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if ((a[i] | 0x20) != (b[i] | 0x20)) return false;
  return true;
}

// NCCL_DEBUG (VERSION, WARN, INFO, TRACE) and NCCL_DEBUG_SUBSYS (comma list, "^" inverts).
int DebugLevel() {
  int level = g_debug_level.load(std::memory_order_acquire);
  if (level >= 0) return level;
  std::lock_guard<std::mutex> lock(g_debug_mutex);
  level = g_debug_level.load(std::memory_order_relaxed);
  if (level >= 0) return level;
  level = kLevelNone;
  if (const char* env = std::getenv("NCCL_DEBUG")) {
    const std::string v = env;
    if (EqualsIgnoreCase(v, "VERSION"))
      level = kLevelVersion;
    else if (EqualsIgnoreCase(v, "WARN"))
      level = kLevelWarn;
    else if (EqualsIgnoreCase(v, "INFO"))
      level = kLevelInfo;
    else if (EqualsIgnoreCase(v, "TRACE"))
      level = kLevelTrace;
  }
  std::uint64_t mask = kSubsysInit | kSubsysBootstrap | kSubsysEnv;
  if (const char* env = std::getenv("NCCL_DEBUG_SUBSYS")) {
    std::string list = env;
    bool invert = false;
    if (!list.empty() && list[0] == '^') {
      invert = true;
      list.erase(0, 1);
    }
    mask = invert ? ~0ULL : 0;
    size_t start = 0;
    while (start <= list.size()) {
      size_t end = list.find(',', start);
      if (end == std::string::npos) end = list.size();
      const std::string item = list.substr(start, end - start);
      for (const SubsysName& s : kSubsystems)
        if (EqualsIgnoreCase(item, s.name)) mask = invert ? mask & ~s.bit : mask | s.bit;
      start = end + 1;
    }
  }
  g_debug_mask = mask;
  g_debug_level.store(level, std::memory_order_release);
  return level;
}

bool InfoEnabled(std::uint64_t subsys) {
  return DebugLevel() >= kLevelInfo && (g_debug_mask & subsys) != 0;
}

const std::string& HostName() {
  static const std::string name = [] {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0) return std::string("localhost");
    std::string s = buf;
    const size_t dot = s.find('.');
    return dot == std::string::npos ? s : s.substr(0, dot);
  }();
  return name;
}

int CurrentDeviceOrZero() {
  const ClientTable* client = Client();
  return client != nullptr ? client->current_device() : 0;
}

// One line on stdout, "host:pid:tid [dev] NCCL <LEVEL> text", as NCCL writes to its debug file.
void WriteLog(int device, const char* level, const std::string& text) {
  const std::string line =
      Format("%s:%d:%ld [%d] NCCL %s %s\n", HostName().c_str(), static_cast<int>(::getpid()),
             static_cast<long>(::syscall(SYS_gettid)), device, level, text.c_str());
  std::lock_guard<std::mutex> lock(g_debug_mutex);
  std::fputs(line.c_str(), stdout);
  std::fflush(stdout);
}

__attribute__((format(printf, 3, 4))) void Info(std::uint64_t subsys, int device, const char* fmt,
                                                ...) {
  if (!InfoEnabled(subsys)) return;
  va_list args;
  va_start(args, fmt);
  const std::string text = VFormat(fmt, args);
  va_end(args);
  WriteLog(device, "INFO", text);
}

std::string VersionString() {
  return Format("%d.%d.%d+cuda%d.%d", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, CUDART_VERSION / 1000,
                (CUDART_VERSION % 1000) / 10);
}

// "NCCL version ..." once, at the first communicator (NCCL's showVersion).
void ShowVersion(int device) {
  const int level = DebugLevel();
  {
    std::lock_guard<std::mutex> lock(g_debug_mutex);
    if (g_version_shown || level < kLevelVersion) return;
    g_version_shown = true;
  }
  const std::string text = "NCCL version " + VersionString() + " (Myriad)";
  if (level == kLevelVersion || level == kLevelWarn) {
    std::lock_guard<std::mutex> lock(g_debug_mutex);
    std::fprintf(stdout, "%s\n", text.c_str());
    std::fflush(stdout);
  } else {
    WriteLog(device, "INFO", text);
  }
}

// ncclGetLastError: the text of this thread's last failure.
thread_local std::string t_last_error;

// Records the failure as this thread's last error, says it at NCCL_DEBUG=WARN and above, and
// returns `code`.
__attribute__((format(printf, 2, 3))) ncclResult_t Fail(ncclResult_t code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  t_last_error = VFormat(fmt, args);
  va_end(args);
  if (DebugLevel() >= kLevelWarn) WriteLog(CurrentDeviceOrZero(), "WARN", t_last_error);
  return code;
}

ncclResult_t NoClient(const char* fn) {
  return Fail(ncclSystemError,
              "%s: Myriad's CUDA runtime is not available (libcudart.so.13 is not Myriad's shim, "
              "or the process does not run under `myriad run`)",
              fn);
}

ncclResult_t SendFailed(const char* fn, int rc) {
  return Fail(ncclSystemError, "%s: could not send the call to Myriad (cudaError %d)", fn, rc);
}

std::uint64_t Fnv1a(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Objects behind NCCL's opaque handles.

struct ncclComm {
  std::uint64_t magic = kCommMagic;
  std::string name;  // Myriad's communicator name (interned per thread at each use)
  int nranks = 0;
  int rank = 0;
  int device = 0;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  std::string comm_name;  // config.commName's text (config.commName points here)
  bool blocking = true;
  ncclResult_t async_error = ncclSuccess;
  bool finalized = false;
  std::uint64_t hash = 0;  // NCCL_DEBUG's commId
  std::uint64_t op_count = 0;
  int splits = 0;              // ncclCommSplit calls so far: every member counts the same
  std::vector<bool> user_ops;  // ncclRedOpCreatePreMulSum slots (op = ncclNumOps + slot)
  // Exchanges of real data so far (Exchange below): collectives, and messages per peer.
  std::uint64_t data_collectives = 0;
  std::map<int, std::uint64_t> data_sent, data_received;
  std::vector<void*> registrations;
};

struct ncclWindow_vidmem {
  ncclComm* comm;
  void* buff;
  size_t size;
  int flags;
};

namespace {

struct Registration {
  ncclComm* comm;
  void* buff;
  size_t size;
};

// ---------------------------------------------------------------------------------------------
// Groups: per calling thread, nestable.

struct PendingDevice {
  int device = 0;
  std::int32_t stream = 0;
  std::vector<WireOp> ops;
};

struct GroupState {
  int depth = 0;
  std::vector<PendingDevice> devices;  // first-use order
  ncclResult_t error = ncclSuccess;    // the first failure inside the group
  bool nonblocking = false;            // a non-blocking communicator took part
  std::vector<int> blocking_inits;     // devices whose blocking init ncclGroupEnd waits for
  // Small calls' data (Exchange), sent together at ncclGroupEnd: one thread may call for
  // every member of a communicator in one group, so no call can wait alone.
  std::vector<ClientTable::DataCall> data;
};

thread_local GroupState t_group;

void ClearGroup() {
  t_group.devices.clear();
  t_group.data.clear();
  t_group.blocking_inits.clear();
  t_group.error = ncclSuccess;
  t_group.nonblocking = false;
}

// Inside a group, a failing call also fails the group (ncclGroupEnd returns it).
ncclResult_t Record(ncclResult_t r) {
  if (r != ncclSuccess && r != ncclInProgress && t_group.depth > 0 && t_group.error == ncclSuccess)
    t_group.error = r;
  return r;
}

ncclResult_t CheckComm(const ncclComm* comm, const char* fn) {
  if (comm == nullptr) return Fail(ncclInvalidArgument, "%s : comm argument is NULL", fn);
  if (comm->magic != kCommMagic)
    return Fail(ncclInvalidArgument, "%s : corrupted comm object detected", fn);
  return ncclSuccess;
}

ncclResult_t CheckPtr(const void* p, const char* fn, const char* what) {
  if (p == nullptr) return Fail(ncclInvalidArgument, "%s : %s argument is NULL", fn, what);
  return ncclSuccess;
}

// ---------------------------------------------------------------------------------------------
// Unique ids and communicator names.
//
// Bytes 0..3 "MYRD", 4..7 the process index (big-endian), 8..15 a per-process counter
// (big-endian), the rest zero: distinct across calls and processes of one run, and the same run
// makes the same ids. The communicator's name is "nccl-" + hex of bytes 0..15, so every process
// that joins with the same id names the same communicator.

std::atomic<std::uint64_t> g_next_id{0};

void MakeUniqueId(int process, ncclUniqueId* id) {
  std::memset(id->internal, 0, sizeof id->internal);
  std::memcpy(id->internal, "MYRD", 4);
  const auto p = static_cast<std::uint32_t>(process);
  for (int i = 0; i < 4; ++i) id->internal[4 + i] = static_cast<char>((p >> (24 - 8 * i)) & 0xff);
  const std::uint64_t n = g_next_id.fetch_add(1);
  for (int i = 0; i < 8; ++i) id->internal[8 + i] = static_cast<char>((n >> (56 - 8 * i)) & 0xff);
}

std::string CommName(const ncclUniqueId& id) {
  static const char kHex[] = "0123456789abcdef";
  std::string name = "nccl-";
  for (int i = 0; i < 16; ++i) {
    const auto b = static_cast<unsigned char>(id.internal[i]);
    name += kHex[b >> 4];
    name += kHex[b & 15];
  }
  return name;
}

// ---------------------------------------------------------------------------------------------
// Configuration.

ncclResult_t ParseConfig(const ncclConfig_t* in, const char* fn, ncclComm* comm) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  if (in != nullptr) {
    if (in->magic != kConfigMagic)
      return Fail(ncclInvalidArgument,
                  "%s : ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER", fn);
    // Older headers have a shorter struct: take what the caller's version has.
    const size_t n = in->size < sizeof cfg ? in->size : sizeof cfg;
    std::memcpy(&cfg, in, n);
    cfg.size = sizeof cfg;
  }
  int blocking = cfg.blocking;
  if (blocking == NCCL_CONFIG_UNDEF_INT) {
    blocking = 1;
    if (const char* env = std::getenv("NCCL_COMM_BLOCKING")) blocking = std::atoi(env) != 0;
  }
  if (blocking != 0 && blocking != 1)
    return Fail(ncclInvalidArgument, "%s : invalid blocking attribute value %d", fn, blocking);
  cfg.blocking = blocking;
  comm->comm_name = cfg.commName != nullptr ? cfg.commName : "";
  cfg.commName = cfg.commName != nullptr ? comm->comm_name.c_str() : nullptr;
  cfg.netName = nullptr;  // not kept: the caller owns it
  comm->config = cfg;
  comm->blocking = blocking == 1;
  return ncclSuccess;
}

void InitComplete(const ncclComm* comm, const char* fn, const std::string& extra) {
  ShowVersion(comm->device);
  Info(kSubsysInit, comm->device,
       "%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %x commId 0x%llx%s - Init "
       "COMPLETE",
       fn, static_cast<const void*>(comm), comm->rank, comm->nranks, comm->device, comm->device, 0u,
       static_cast<unsigned long long>(comm->hash), extra.c_str());
}

// ---------------------------------------------------------------------------------------------
// Joining a communicator.

// NCCL_ALGO and NCCL_PROTO of this process, as the name a join carries ("ALGO\nPROTO"; 0 when
// neither is set): Myriad times the communicator's collectives within what they allow, and
// checks that its members agree, as NCCL needs them to.
std::uint32_t SelectionName(const ClientTable* client) {
  const char* algo = std::getenv("NCCL_ALGO");
  const char* proto = std::getenv("NCCL_PROTO");
  if ((algo == nullptr || *algo == '\0') && (proto == nullptr || *proto == '\0')) return 0;
  const std::string selection =
      std::string(algo != nullptr ? algo : "") + "\n" + (proto != nullptr ? proto : "");
  return client->intern(selection.c_str());
}

// The members of the communicator torch names `comm_name` (config.commName), as its hook
// described them to the preload library (preload/communicators.cc): their global ranks in
// order, as the name a join carries (0: not described, or no preload). Rank folding infers the
// mirrors' groups from them (docs/run.md, "Folding").
std::uint32_t MembersName(const ClientTable* client, const std::string& comm_name) {
  using MembersFn = long (*)(const char*, char*, unsigned long);
  static const auto members =
      reinterpret_cast<MembersFn>(dlsym(RTLD_DEFAULT, "myriad_communicator_members"));
  if (members == nullptr || comm_name.empty()) return 0;
  const long length = members(comm_name.c_str(), nullptr, 0);
  if (length < 0) return 0;
  std::string text(static_cast<size_t>(length) + 1, '\0');
  if (members(comm_name.c_str(), text.data(), text.size()) != length) return 0;
  text.resize(static_cast<size_t>(length));
  return client->intern(text.c_str());
}

// Everything checked before anything is sent, so a failed call leaves no half-joined state.
ncclResult_t CheckInitArgs(ncclComm_t* out, int nranks, int rank, const char* fn) {
  if (out == nullptr) return Fail(ncclInvalidArgument, "%s : newcomm argument is NULL", fn);
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return Fail(ncclInvalidArgument, "%s : invalid rank requested : %d/%d", fn, rank, nranks);
  return ncclSuccess;
}

ncclResult_t InitRankOn(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank, int device,
                        const ncclConfig_t* config, const char* fn) {
  if (ncclResult_t r = CheckInitArgs(out, nranks, rank, fn); r != ncclSuccess) return r;
  *out = nullptr;
  const ClientTable* client = Client();
  if (client == nullptr) return NoClient(fn);
  auto* comm = new ncclComm();
  if (ncclResult_t r = ParseConfig(config, fn, comm); r != ncclSuccess) {
    delete comm;
    return r;
  }
  comm->name = CommName(id);
  comm->nranks = nranks;
  comm->rank = rank;
  comm->device = device;
  comm->hash = Fnv1a(id.internal, sizeof id.internal);

  WireOp op;
  op.kind = kKindCommInit;
  op.comm = client->intern(comm->name.c_str());
  op.name = SelectionName(client);
  op.event2 = static_cast<std::int32_t>(MembersName(client, comm->comm_name));
  op.peer = rank;
  op.count = static_cast<std::uint64_t>(nranks);
  ncclResult_t result = ncclSuccess;
  if (t_group.depth > 0 || !comm->blocking) {
    // No wait: the engine's join is a barrier on the device side, and nothing this thread
    // sends to the device later runs before it.
    if (int rc = client->submit(&op, device); rc != 0) {
      delete comm;
      return SendFailed(fn, rc);
    }
    if (!comm->blocking) {
      if (t_group.depth > 0)
        t_group.nonblocking = true;
      else
        result = ncclInProgress;
    } else {
      t_group.blocking_inits.push_back(device);
    }
  } else {
    op.flags = myriad::wire::kWantsReply;
    myriad::wire::Reply reply;
    if (int rc = client->call(&op, device, &reply); rc != 0) {
      delete comm;
      return SendFailed(fn, rc);
    }
    if (reply.status != 0) {
      const std::string name = comm->name;
      delete comm;
      return Fail(ncclInvalidUsage, "%s : Myriad refused rank %d of %d of '%s' (status %d)", fn,
                  rank, nranks, name.c_str(), reply.status);
    }
  }
  // A non-blocking communicator is usable at once: Myriad orders every later op of its device
  // after the join. ncclCommGetAsyncError reports ncclSuccess.
  comm->async_error = ncclSuccess;
  *out = comm;
  InitComplete(comm, fn, std::string());
  return result;
}

// ---------------------------------------------------------------------------------------------
// ncclCommSplit: the exchange of (color, key) happens in Myriad's engine.
//
// Every member of the parent submits a blocking kCommInit with
//   comm  = "<parent>/split<k>" (k: the parent's split counter, the same on every member),
//   peer  = parent rank, count = parent size, root = color (NCCL_SPLIT_NOCOLOR = -1),
//   event = key.
// The engine treats a kCommInit whose name contains "/split" as a split: once every parent
// member has arrived it groups them by color, orders each group by (key, parent rank), creates
// the communicator "<parent>/split<k>/color<c>" for each color, and replies to every member
// value = (child rank << 32) | child size (0 for NCCL_SPLIT_NOCOLOR).

struct SplitAnswer {
  int rank = -1;
  int size = 0;
};

ncclResult_t SplitExchange(const ClientTable* client, const ncclComm* parent, int k, int color,
                           int key, const std::string& child_name, SplitAnswer* answer) {
  const std::string name = parent->name + "/split" + std::to_string(k);
  WireOp op;
  op.kind = kKindCommInit;
  op.flags = myriad::wire::kWantsReply;
  op.comm = client->intern(name.c_str());
  op.name = SelectionName(client);
  op.peer = parent->rank;
  op.count = static_cast<std::uint64_t>(parent->nranks);
  op.root = color;
  op.event = key;
  op.event2 = static_cast<std::int32_t>(MembersName(client, child_name));
  myriad::wire::Reply reply;
  if (int rc = client->call(&op, parent->device, &reply); rc != 0)
    return SendFailed("ncclCommSplit", rc);
  if (reply.status != 0)
    return Fail(ncclInvalidUsage, "ncclCommSplit : Myriad refused the split '%s' (status %d)",
                name.c_str(), reply.status);
  const auto value = static_cast<std::uint64_t>(reply.value);
  answer->rank = static_cast<int>(value >> 32);
  answer->size = static_cast<int>(value & 0xffffffffULL);
  return ncclSuccess;
}

std::string SplitChildName(const ncclComm* parent, int k, int color) {
  return parent->name + "/split" + std::to_string(k) + "/color" + std::to_string(color);
}

ncclResult_t CommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                       ncclConfig_t* config) {
  const char* fn = "ncclCommSplit";
  if (ncclResult_t r = CheckComm(comm, fn); r != ncclSuccess) return r;
  if (ncclResult_t r = CheckPtr(newcomm, fn, "newcomm"); r != ncclSuccess) return r;
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
    return Fail(ncclInvalidArgument, "%s : invalid color %d (must be >= 0 or NCCL_SPLIT_NOCOLOR)",
                fn, color);
  *newcomm = nullptr;
  if (t_group.depth > 0)
    return Fail(ncclInvalidUsage,
                "%s inside ncclGroupStart/ncclGroupEnd is not supported by Myriad yet", fn);
  const ClientTable* client = Client();
  if (client == nullptr) return NoClient(fn);
  auto* child = new ncclComm();
  if (ncclResult_t r = ParseConfig(config != nullptr ? config : &comm->config, fn, child);
      r != ncclSuccess) {
    delete child;
    return r;
  }
  const int k = comm->splits++;
  SplitAnswer answer;
  // The child's own name (torch's group name) describes its members; a child that inherits
  // its parent's configuration has none of its own.
  const std::string child_name = config != nullptr ? child->comm_name : std::string();
  if (ncclResult_t r = SplitExchange(client, comm, k, color, key, child_name, &answer);
      r != ncclSuccess) {
    delete child;
    return r;
  }
  if (color == NCCL_SPLIT_NOCOLOR) {
    delete child;
    return ncclSuccess;
  }
  if (answer.size < 1 || answer.rank < 0 || answer.rank >= answer.size) {
    delete child;
    return Fail(ncclInternalError,
                "%s : Myriad answered rank %d of %d for color %d of '%s' (the engine must "
                "support ncclCommSplit)",
                fn, answer.rank, answer.size, color, comm->name.c_str());
  }
  child->name = SplitChildName(comm, k, color);
  child->nranks = answer.size;
  child->rank = answer.rank;
  child->device = comm->device;
  child->hash = Fnv1a(child->name.data(), child->name.size());
  *newcomm = child;
  InitComplete(child, fn,
               Format(" parent %p splitCount %d color %d key %d", static_cast<const void*>(comm), k,
                      color, key));
  return ncclSuccess;
}

// ---------------------------------------------------------------------------------------------
// Collectives and send/recv.

struct Call {
  const char* name;  // NCCL's opName for NCCL_DEBUG: "AllReduce", "Send", ...
  std::uint8_t kind = kKindCollective;
  Coll coll = Coll::kAllReduce;
  bool reduces = false;
  bool rooted = false;
  bool p2p = false;
};

constexpr Call kAllReduce{"AllReduce", kKindCollective, Coll::kAllReduce, true, false, false};
constexpr Call kAllGather{"AllGather", kKindCollective, Coll::kAllGather, false, false, false};
constexpr Call kReduceScatter{
    "ReduceScatter", kKindCollective, Coll::kReduceScatter, true, false, false};
constexpr Call kBroadcast{"Broadcast", kKindCollective, Coll::kBroadcast, false, true, false};
constexpr Call kReduce{"Reduce", kKindCollective, Coll::kReduce, true, true, false};
constexpr Call kAlltoAll{"AlltoAll", kKindCollective, Coll::kAllToAll, false, false, false};
constexpr Call kGather{"Gather", kKindCollective, Coll::kGather, false, true, false};
constexpr Call kScatter{"Scatter", kKindCollective, Coll::kScatter, false, true, false};
constexpr Call kSend{"Send", kKindSend, Coll::kSendRecv, false, false, true};
constexpr Call kRecv{"Recv", kKindRecv, Coll::kSendRecv, false, false, true};

// Adds a grouped op to its device's list. Myriad's engine runs a group on one stream.
ncclResult_t AddToGroup(const WireOp& op, int device, const char* name) {
  for (PendingDevice& d : t_group.devices) {
    if (d.device != device) continue;
    if (d.stream != op.stream)
      return Fail(ncclInvalidUsage,
                  "nccl%s : a group with operations on two streams of device %d (Myriad stream "
                  "ids %d and %d) is not supported by Myriad: use one stream per device in a "
                  "group",
                  name, device, d.stream, op.stream);
    d.ops.push_back(op);
    return ncclSuccess;
  }
  PendingDevice d;
  d.device = device;
  d.stream = op.stream;
  d.ops.push_back(op);
  t_group.devices.push_back(std::move(d));
  return ncclSuccess;
}

// ---------------------------------------------------------------------------------------------
// Real data for small collectives: kernels are timed, not run, but a program that reads back on
// the host what a broadcast or an all-reduce delivered (PyTorch's DDP, broadcast_object_list)
// must see the true result. Collectives whose buffers are at most MYRIAD_COLLECTIVE_BYTES
// (default 64 KiB, at most wire::kMaxDataBytes) move their bytes through Myriad (every member
// decides alike: the size follows from the call's arguments). Larger ones are timed only: the
// receive buffers keep what they had.

std::size_t DataLimit() {
  static const std::size_t limit = std::min<std::size_t>(
      myriad::shim::EnvBytes("MYRIAD_COLLECTIVE_BYTES", std::size_t{64} << 10),
      myriad::wire::kMaxDataBytes);
  return limit;
}

std::size_t TypeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    default:
      return 8;
  }
}

// `bytes` at `p` lie in one device allocation (which is host memory under Myriad).
bool Addressable(const ClientTable* client, const void* p, std::size_t bytes) {
  void* base = nullptr;
  std::size_t size = 0;
  return p && client->address_range(p, &base, &size) &&
         static_cast<const char*>(p) + bytes <= static_cast<const char*>(base) + size;
}

// Exchanges the call's data if it is small; timing is Enqueue's. `user_op`: a PreMulSum, whose
// scalar Myriad does not apply, so its data is not exchanged.
ncclResult_t Exchange(const Call& call, const void* sendbuff, void* recvbuff, size_t count,
                      ncclDataType_t datatype, std::uint8_t redop, bool user_op, int root,
                      ncclComm_t comm, const char* fn) {
  const ClientTable* client = Client();
  if (client->version < 4 || client->exchange == nullptr) return ncclSuccess;
  const std::size_t size = TypeSize(datatype);
  const bool fp8 = datatype == ncclFloat8e4m3 || datatype == ncclFloat8e5m2;
  if (call.reduces && (user_op || fp8)) return ncclSuccess;
  if (count == 0) return ncclSuccess;

  myriad::wire::DataHeader h;
  h.coll = static_cast<std::uint8_t>(call.coll);
  h.dtype = static_cast<std::uint8_t>(datatype);
  h.redop = redop;
  h.rank = comm->rank;
  h.nranks = comm->nranks;
  h.root = root;
  h.count = count;
  // The largest buffer any member has (a rooted call's root's), from the arguments alone.
  const int largest = root >= 0 ? root : comm->rank;
  if (std::max(myriad::wire::SendElements(h, largest), myriad::wire::ReceiveElements(h, largest)) *
          size >
      DataLimit())
    return ncclSuccess;
  const void* send = sendbuff;
  void* recv = recvbuff;
  std::size_t send_bytes = count * size, recv_bytes = count * size;
  if (call.p2p) {
    const bool sends = call.kind == kKindSend;
    h.kind = sends ? myriad::wire::DataKind::kSend : myriad::wire::DataKind::kRecv;
    h.sequence = (sends ? comm->data_sent : comm->data_received)[root]++;
    (sends ? recv_bytes : send_bytes) = 0;
  } else {
    h.kind = myriad::wire::DataKind::kCollective;
    h.sequence = comm->data_collectives++;
    send_bytes = myriad::wire::SendElements(h, comm->rank) * size;
    recv_bytes = myriad::wire::ReceiveElements(h, comm->rank) * size;
  }
  if ((send_bytes > 0 && !Addressable(client, send, send_bytes)) ||
      (recv_bytes > 0 && !Addressable(client, recv, recv_bytes)))
    return ncclSuccess;  // not device memory (managed memory, say): timed only
  h.bytes = static_cast<std::uint32_t>(send_bytes);
  ClientTable::DataCall data{h, comm->name.c_str(), send, recv, recv_bytes};
  if (t_group.depth > 0) {
    t_group.data.push_back(data);
    return ncclSuccess;
  }
  if (client->exchange(&data, 1) != 0)
    return Fail(ncclInternalError, "%s : Myriad could not exchange the data of this call", fn);
  return ncclSuccess;
}

ncclResult_t Enqueue(const Call& call, const void* sendbuff, void* recvbuff, size_t count,
                     ncclDataType_t datatype, ncclRedOp_t redop, int root, ncclComm_t comm,
                     cudaStream_t stream) {
  char fn[64];
  std::snprintf(fn, sizeof fn, "nccl%s", call.name);
  if (ncclResult_t r = CheckComm(comm, fn); r != ncclSuccess) return r;
  if (comm->finalized)
    return Fail(ncclInvalidUsage, "%s : the communicator has been finalized", fn);
  if (static_cast<int>(datatype) < 0 || static_cast<int>(datatype) >= ncclNumTypes)
    return Fail(ncclInvalidArgument, "%s : invalid type %d", fn, static_cast<int>(datatype));
  std::uint8_t wire_redop = 0;
  bool user_op = false;
  if (call.reduces) {
    const int op = static_cast<int>(redop);
    if (op >= 0 && op < ncclNumOps) {
      wire_redop = static_cast<std::uint8_t>(op);
    } else {
      const long slot = static_cast<long>(op) - ncclNumOps;
      if (op < 0 || slot >= static_cast<long>(comm->user_ops.size()) ||
          !comm->user_ops[static_cast<size_t>(slot)])
        return Fail(ncclInvalidArgument, "%s : invalid reduction operation %d", fn, op);
      wire_redop = 0;  // ncclRedOpCreatePreMulSum: timed as a sum
      user_op = true;
    }
  }
  if ((call.rooted || call.p2p) && (root < 0 || root >= comm->nranks))
    return Fail(ncclInvalidArgument, "%s : invalid %s %d (%s should be in the 0..%d range)", fn,
                call.p2p ? "peer" : "root", root, call.p2p ? "peer" : "root", comm->nranks - 1);
  const ClientTable* client = Client();
  if (client == nullptr) return NoClient(fn);

  const std::uint64_t op_count = comm->op_count++;
  if (InfoEnabled(kSubsysColl))
    Info(kSubsysColl, comm->device,
         "%s: opCount %llx sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm %p "
         "[nranks=%d] stream %p",
         call.name, static_cast<unsigned long long>(op_count), sendbuff,
         static_cast<const void*>(recvbuff), count, static_cast<int>(datatype),
         static_cast<int>(redop), call.rooted || call.p2p ? root : 0,
         static_cast<const void*>(comm), comm->nranks, static_cast<const void*>(stream));
  // NCCL skips empty collectives; zero-byte send/recv still pair up.
  if (count == 0 && !call.p2p) return ncclSuccess;

  WireOp op;
  op.kind = call.kind;
  op.coll = static_cast<std::uint8_t>(call.coll);
  op.dtype = static_cast<std::uint8_t>(datatype);
  op.redop = wire_redop;
  op.stream = client->stream_id(stream);
  op.comm = client->intern(comm->name.c_str());
  op.count = count;
  op.root = call.rooted ? root : -1;
  op.peer = call.p2p ? root : -1;
  if (t_group.depth > 0) {
    if (!comm->blocking) t_group.nonblocking = true;
    if (ncclResult_t r = AddToGroup(op, comm->device, call.name); r != ncclSuccess) return r;
  } else if (int rc = client->submit(&op, comm->device); rc != 0) {
    return SendFailed(fn, rc);
  }
  return Exchange(call, sendbuff, recvbuff, count, datatype, wire_redop, user_op,
                  call.rooted || call.p2p ? root : -1, comm, fn);
}

// The outermost ncclGroupEnd: each device's operations as one engine group.
ncclResult_t FlushGroup(const char* fn) {
  std::vector<PendingDevice> devices = std::move(t_group.devices);
  std::vector<int> inits = std::move(t_group.blocking_inits);
  std::vector<ClientTable::DataCall> data = std::move(t_group.data);
  const bool nonblocking = t_group.nonblocking;
  ClearGroup();
  const ClientTable* client = Client();
  if (client == nullptr) return devices.empty() && inits.empty() ? ncclSuccess : NoClient(fn);
  for (const PendingDevice& d : devices) {
    WireOp start;
    start.kind = kKindGroupStart;
    start.stream = d.stream;
    if (int rc = client->submit(&start, d.device); rc != 0) return SendFailed(fn, rc);
    for (const WireOp& op : d.ops)
      if (int rc = client->submit(&op, d.device); rc != 0) return SendFailed(fn, rc);
    WireOp end;
    end.kind = kKindGroupEnd;
    end.stream = d.stream;
    if (int rc = client->submit(&end, d.device); rc != 0) return SendFailed(fn, rc);
  }
  // Like NCCL, a group that creates communicators returns once they exist: every member has
  // joined. Each device's join is a barrier the engine holds its ops behind, so a zero-length
  // host op answered on each device is answered after that device's join.
  for (int device : inits) {
    WireOp wait;
    wait.kind = kKindHost;
    wait.duration_ps = 0;
    wait.flags = myriad::wire::kWantsReply;
    myriad::wire::Reply reply;
    if (int rc = client->call(&wait, device, &reply); rc != 0) return SendFailed(fn, rc);
  }
  // The group's small calls' data, all at once (their ops went first).
  if (!data.empty() && client->exchange(data.data(), static_cast<int>(data.size())) != 0)
    return Fail(ncclInternalError, "%s : Myriad could not exchange the data of the group", fn);
  // Send what the group enqueued now: the thread may next wait on something Myriad cannot see
  // (a host barrier, MPI), and its peers must not wait for ops sitting in its buffer.
  if (inits.empty() && client->version >= 2 && client->flush) client->flush();
  return nonblocking ? ncclInProgress : ncclSuccess;
}

ncclResult_t GroupEnd(const char* fn, bool simulate) {
  if (t_group.depth == 0) return Fail(ncclInvalidUsage, "%s: not in a group call.", fn);
  if (--t_group.depth > 0) return ncclSuccess;
  if (t_group.error != ncclSuccess) {
    const ncclResult_t error = t_group.error;
    ClearGroup();  // NCCL aborts the whole group
    return error;
  }
  if (simulate) {
    ClearGroup();
    return ncclSuccess;
  }
  return FlushGroup(fn);
}

void SubmitDestroy(const ncclComm* comm) {
  const ClientTable* client = Client();
  if (client == nullptr) return;
  WireOp op;
  op.kind = kKindCommDestroy;
  op.comm = client->intern(comm->name.c_str());
  op.peer = comm->rank;
  op.count = static_cast<std::uint64_t>(comm->nranks);
  (void)client->submit(&op, comm->device);
}

void FreeComm(ncclComm* comm) {
  for (void* r : comm->registrations) delete static_cast<Registration*>(r);
  comm->magic = 0;
  delete comm;
}

}  // namespace

// =============================================================================================
// The exported API: pncclX defined here, ncclX an alias of it.

#define MYRIAD_NCCL_ALIAS(ret, name, params) \
  extern "C" MYRIAD_EXPORT ret name params __attribute__((alias("p" #name), copy(p##name)))

// --- version, errors ---------------------------------------------------------------------------

extern "C" MYRIAD_EXPORT ncclResult_t pncclGetVersion(int* version) {
  if (version == nullptr)
    return Fail(ncclInvalidArgument, "ncclGetVersion : version argument is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclGetVersion, (int* version));

extern "C" MYRIAD_EXPORT const char* pncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}
MYRIAD_NCCL_ALIAS(const char*, ncclGetErrorString, (ncclResult_t result));

extern "C" MYRIAD_EXPORT const char* pncclGetLastError(ncclComm_t) { return t_last_error.c_str(); }
MYRIAD_NCCL_ALIAS(const char*, ncclGetLastError, (ncclComm_t comm));

// Deprecated in nccl.h: makes the next call read NCCL_DEBUG and NCCL_DEBUG_SUBSYS again.
extern "C" MYRIAD_EXPORT void pncclResetDebugInit() {
  std::lock_guard<std::mutex> lock(g_debug_mutex);
  g_debug_level.store(-1, std::memory_order_release);
  g_version_shown = false;
}
MYRIAD_NCCL_ALIAS(void, ncclResetDebugInit, ());

// --- unique ids and communicators ---------------------------------------------------------------

extern "C" MYRIAD_EXPORT ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (ncclResult_t r = CheckPtr(uniqueId, "ncclGetUniqueId", "uniqueId"); r != ncclSuccess)
    return r;
  const ClientTable* client = Client();
  if (client == nullptr) return NoClient("ncclGetUniqueId");
  MakeUniqueId(client->process, uniqueId);
  return ncclSuccess;
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * uniqueId));

extern "C" MYRIAD_EXPORT ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks,
                                                              ncclUniqueId commId, int rank,
                                                              ncclConfig_t* config) {
  if (ncclResult_t r = CheckInitArgs(comm, nranks, rank, "ncclCommInitRankConfig");
      r != ncclSuccess)
    return Record(r);
  const ClientTable* client = Client();
  if (client == nullptr) return Record(NoClient("ncclCommInitRankConfig"));
  return Record(InitRankOn(comm, nranks, commId, rank, client->current_device(), config,
                           "ncclCommInitRankConfig"));
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclCommInitRankConfig,
                  (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank,
                   ncclConfig_t* config));

extern "C" MYRIAD_EXPORT ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks,
                                                        ncclUniqueId commId, int rank) {
  if (ncclResult_t r = CheckInitArgs(comm, nranks, rank, "ncclCommInitRank"); r != ncclSuccess)
    return Record(r);
  const ClientTable* client = Client();
  if (client == nullptr) return Record(NoClient("ncclCommInitRank"));
  return Record(InitRankOn(comm, nranks, commId, rank, client->current_device(), nullptr,
                           "ncclCommInitRank"));
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclCommInitRank,
                  (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank));

// Several ids spread NCCL's bootstrap; Myriad names the communicator after the first.
extern "C" MYRIAD_EXPORT ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks,
                                                                int myrank, int nId,
                                                                ncclUniqueId* commIds,
                                                                ncclConfig_t* config) {
  const char* fn = "ncclCommInitRankScalable";
  if (ncclResult_t r = CheckInitArgs(newcomm, nranks, myrank, fn); r != ncclSuccess)
    return Record(r);
  if (nId < 1) return Record(Fail(ncclInvalidArgument, "%s : invalid nId %d", fn, nId));
  if (ncclResult_t r = CheckPtr(commIds, fn, "commIds"); r != ncclSuccess) return Record(r);
  const ClientTable* client = Client();
  if (client == nullptr) return Record(NoClient(fn));
  return Record(
      InitRankOn(newcomm, nranks, commIds[0], myrank, client->current_device(), config, fn));
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclCommInitRankScalable,
                  (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                   ncclConfig_t* config));

// One process, one thread, ndev devices: a group of ncclCommInitRank, rank i on devlist[i]
// (or device i).
extern "C" MYRIAD_EXPORT ncclResult_t pncclCommInitAll(ncclComm_t* comms, int ndev,
                                                       const int* devlist) {
  const char* fn = "ncclCommInitAll";
  if (ncclResult_t r = CheckPtr(comms, fn, "comms"); r != ncclSuccess) return Record(r);
  if (ndev < 0)
    return Record(Fail(ncclInvalidArgument, "%s : invalid device count requested : %d", fn, ndev));
  if (ndev == 0) return ncclSuccess;
  const ClientTable* client = Client();
  if (client == nullptr) return Record(NoClient(fn));
  std::vector<int> devices(static_cast<size_t>(ndev));
  for (int i = 0; i < ndev; ++i) {
    const int d = devlist != nullptr ? devlist[i] : i;
    if (d < 0 || (client->devices > 0 && d >= client->devices))
      return Record(Fail(ncclInvalidArgument, "%s : invalid device %d (totalnDev=%d)", fn, d,
                         client->devices));
    for (int j = 0; j < i; ++j)
      if (devices[static_cast<size_t>(j)] == d)
        return Record(Fail(ncclInvalidUsage, "%s : duplicate device %d found in devlist", fn, d));
    devices[static_cast<size_t>(i)] = d;
  }
  ncclUniqueId id;
  MakeUniqueId(client->process, &id);
  ++t_group.depth;
  for (int i = 0; i < ndev; ++i)
    Record(InitRankOn(&comms[i], ndev, id, i, devices[static_cast<size_t>(i)], nullptr, fn));
  return GroupEnd(fn, false);
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclCommInitAll, (ncclComm_t * comm, int ndev, const int* devlist));

extern "C" MYRIAD_EXPORT ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key,
                                                     ncclComm_t* newcomm, ncclConfig_t* config) {
  return Record(CommSplit(comm, color, key, newcomm, config));
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclCommSplit,
                  (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config));

// Finalize: the communicator takes no more operations (its queued ones still run).
extern "C" MYRIAD_EXPORT ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  if (ncclResult_t r = CheckComm(comm, "ncclCommFinalize"); r != ncclSuccess) return Record(r);
  comm->finalized = true;
  return ncclSuccess;
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclCommFinalize, (ncclComm_t comm));

extern "C" MYRIAD_EXPORT ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  if (ncclResult_t r = CheckComm(comm, "ncclCommDestroy"); r != ncclSuccess) return r;
  Info(kSubsysInit, comm->device,
       "comm %p rank %d nRanks %d cudaDev %d busId %x - Destroy COMPLETE",
       static_cast<const void*>(comm), comm->rank, comm->nranks, comm->device, 0u);
  SubmitDestroy(comm);
  FreeComm(comm);
  return ncclSuccess;
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclCommDestroy, (ncclComm_t comm));

extern "C" MYRIAD_EXPORT ncclResult_t pncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  if (ncclResult_t r = CheckComm(comm, "ncclCommAbort"); r != ncclSuccess) return r;
  Info(kSubsysInit, comm->device, "comm %p rank %d nRanks %d cudaDev %d busId %x - Abort COMPLETE",
       static_cast<const void*>(comm), comm->rank, comm->nranks, comm->device, 0u);
  SubmitDestroy(comm);
  FreeComm(comm);
  return ncclSuccess;
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclCommAbort, (ncclComm_t comm));

extern "C" MYRIAD_EXPORT ncclResult_t pncclCommGetAsyncError(ncclComm_t comm,
                                                             ncclResult_t* asyncError) {
  if (ncclResult_t r = CheckComm(comm, "ncclCommGetAsyncError"); r != ncclSuccess) return r;
  if (ncclResult_t r = CheckPtr(asyncError, "ncclCommGetAsyncError", "asyncError");
      r != ncclSuccess)
    return r;
  *asyncError = comm->async_error;
  return ncclSuccess;
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError));

extern "C" MYRIAD_EXPORT ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  if (ncclResult_t r = CheckComm(comm, "ncclCommCount"); r != ncclSuccess) return r;
  if (ncclResult_t r = CheckPtr(count, "ncclCommCount", "count"); r != ncclSuccess) return r;
  *count = comm->nranks;
  return ncclSuccess;
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int* count));

extern "C" MYRIAD_EXPORT ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (ncclResult_t r = CheckComm(comm, "ncclCommCuDevice"); r != ncclSuccess) return r;
  if (ncclResult_t r = CheckPtr(device, "ncclCommCuDevice", "device"); r != ncclSuccess) return r;
  *device = comm->device;
  return ncclSuccess;
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int* device));

extern "C" MYRIAD_EXPORT ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (ncclResult_t r = CheckComm(comm, "ncclCommUserRank"); r != ncclSuccess) return r;
  if (ncclResult_t r = CheckPtr(rank, "ncclCommUserRank", "rank"); r != ncclSuccess) return r;
  *rank = comm->rank;
  return ncclSuccess;
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int* rank));

// --- buffer registration: recorded, no effect on timing ---------------------------------------

extern "C" MYRIAD_EXPORT ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff,
                                                        size_t size, void** handle) {
  if (ncclResult_t r = CheckComm(comm, "ncclCommRegister"); r != ncclSuccess) return r;
  if (ncclResult_t r = CheckPtr(handle, "ncclCommRegister", "handle"); r != ncclSuccess) return r;
  auto* reg = new Registration{comm, buff, size};
  comm->registrations.push_back(reg);
  *handle = reg;
  return ncclSuccess;
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclCommRegister,
                  (const ncclComm_t comm, void* buff, size_t size, void** handle));

extern "C" MYRIAD_EXPORT ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle) {
  if (ncclResult_t r = CheckComm(comm, "ncclCommDeregister"); r != ncclSuccess) return r;
  for (auto it = comm->registrations.begin(); it != comm->registrations.end(); ++it) {
    if (*it != handle) continue;
    delete static_cast<Registration*>(handle);
    comm->registrations.erase(it);
    return ncclSuccess;
  }
  return Fail(ncclInvalidArgument, "ncclCommDeregister : handle %p is not registered with comm %p",
              handle, static_cast<const void*>(comm));
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclCommDeregister, (const ncclComm_t comm, void* handle));

extern "C" MYRIAD_EXPORT ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff,
                                                              size_t size, ncclWindow_t* win,
                                                              int winFlags) {
  if (ncclResult_t r = CheckComm(comm, "ncclCommWindowRegister"); r != ncclSuccess)
    return Record(r);
  if (ncclResult_t r = CheckPtr(win, "ncclCommWindowRegister", "win"); r != ncclSuccess)
    return Record(r);
  *win = new ncclWindow_vidmem{comm, buff, size, winFlags};
  return ncclSuccess;
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclCommWindowRegister,
                  (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags));

extern "C" MYRIAD_EXPORT ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  if (ncclResult_t r = CheckComm(comm, "ncclCommWindowDeregister"); r != ncclSuccess)
    return Record(r);
  if (win == nullptr || win->comm != comm)
    return Record(Fail(ncclInvalidArgument,
                       "ncclCommWindowDeregister : window %p does not belong to comm %p",
                       static_cast<const void*>(win), static_cast<const void*>(comm)));
  delete win;
  return ncclSuccess;
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win));

// --- memory: the CUDA runtime's (Myriad's cudart shim) -----------------------------------------

extern "C" MYRIAD_EXPORT ncclResult_t pncclMemAlloc(void** ptr, size_t size) {
  if (ncclResult_t r = CheckPtr(ptr, "ncclMemAlloc", "ptr"); r != ncclSuccess) return r;
  if (cudaError_t e = cudaMalloc(ptr, size); e != cudaSuccess)
    return Fail(ncclUnhandledCudaError, "ncclMemAlloc : cudaMalloc of %zu bytes failed (%d)", size,
                static_cast<int>(e));
  return ncclSuccess;
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclMemAlloc, (void** ptr, size_t size));

extern "C" MYRIAD_EXPORT ncclResult_t pncclMemFree(void* ptr) {
  if (ptr == nullptr) return ncclSuccess;
  if (cudaError_t e = cudaFree(ptr); e != cudaSuccess)
    return Fail(ncclUnhandledCudaError, "ncclMemFree : cudaFree failed (%d)", static_cast<int>(e));
  return ncclSuccess;
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclMemFree, (void* ptr));

// --- custom reductions: ids from ncclNumOps up, per communicator, timed as sums ----------------

extern "C" MYRIAD_EXPORT ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar,
                                                                ncclDataType_t datatype,
                                                                ncclScalarResidence_t residence,
                                                                ncclComm_t comm) {
  const char* fn = "ncclRedOpCreatePreMulSum";
  if (ncclResult_t r = CheckComm(comm, fn); r != ncclSuccess) return r;
  if (ncclResult_t r = CheckPtr(op, fn, "op"); r != ncclSuccess) return r;
  if (ncclResult_t r = CheckPtr(scalar, fn, "scalar"); r != ncclSuccess) return r;
  if (static_cast<int>(datatype) < 0 || static_cast<int>(datatype) >= ncclNumTypes)
    return Fail(ncclInvalidArgument, "%s : invalid type %d", fn, static_cast<int>(datatype));
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate)
    return Fail(ncclInvalidArgument, "%s : invalid scalar residence %d", fn,
                static_cast<int>(residence));
  size_t slot = 0;
  while (slot < comm->user_ops.size() && comm->user_ops[slot]) ++slot;
  if (slot == comm->user_ops.size()) comm->user_ops.push_back(false);
  comm->user_ops[slot] = true;
  *op = static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(slot));
  return ncclSuccess;
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclRedOpCreatePreMulSum,
                  (ncclRedOp_t * op, void* scalar, ncclDataType_t datatype,
                   ncclScalarResidence_t residence, ncclComm_t comm));

extern "C" MYRIAD_EXPORT ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  const char* fn = "ncclRedOpDestroy";
  if (ncclResult_t r = CheckComm(comm, fn); r != ncclSuccess) return r;
  const int v = static_cast<int>(op);
  if (v >= 0 && v < ncclNumOps)
    return Fail(ncclInvalidArgument, "%s : operator is a NCCL builtin", fn);
  const long slot = static_cast<long>(v) - ncclNumOps;
  if (v < 0 || slot >= static_cast<long>(comm->user_ops.size()) ||
      !comm->user_ops[static_cast<size_t>(slot)])
    return Fail(ncclInvalidArgument, "%s : operator %d was not created by this communicator", fn,
                v);
  comm->user_ops[static_cast<size_t>(slot)] = false;
  return ncclSuccess;
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm));

// --- collectives and point-to-point -----------------------------------------------------------

extern "C" MYRIAD_EXPORT ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff,
                                                     size_t count, ncclDataType_t datatype,
                                                     ncclRedOp_t op, ncclComm_t comm,
                                                     cudaStream_t stream) {
  return Record(Enqueue(kAllReduce, sendbuff, recvbuff, count, datatype, op, -1, comm, stream));
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclAllReduce,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream));

extern "C" MYRIAD_EXPORT ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff,
                                                     size_t sendcount, ncclDataType_t datatype,
                                                     ncclComm_t comm, cudaStream_t stream) {
  return Record(
      Enqueue(kAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, -1, comm, stream));
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclAllGather,
                  (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                   ncclComm_t comm, cudaStream_t stream));

extern "C" MYRIAD_EXPORT ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff,
                                                         size_t recvcount, ncclDataType_t datatype,
                                                         ncclRedOp_t op, ncclComm_t comm,
                                                         cudaStream_t stream) {
  return Record(
      Enqueue(kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, -1, comm, stream));
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclReduceScatter,
                  (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream));

extern "C" MYRIAD_EXPORT ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff,
                                                     size_t count, ncclDataType_t datatype,
                                                     int root, ncclComm_t comm,
                                                     cudaStream_t stream) {
  return Record(
      Enqueue(kBroadcast, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream));
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclBroadcast,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                   int root, ncclComm_t comm, cudaStream_t stream));

// In-place broadcast.
extern "C" MYRIAD_EXPORT ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype,
                                                 int root, ncclComm_t comm, cudaStream_t stream) {
  return Record(Enqueue(kBroadcast, buff, buff, count, datatype, ncclSum, root, comm, stream));
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclBcast,
                  (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                   cudaStream_t stream));

extern "C" MYRIAD_EXPORT ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff,
                                                  size_t count, ncclDataType_t datatype,
                                                  ncclRedOp_t op, int root, ncclComm_t comm,
                                                  cudaStream_t stream) {
  return Record(Enqueue(kReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream));
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclReduce,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                   ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream));

extern "C" MYRIAD_EXPORT ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff,
                                                    size_t count, ncclDataType_t datatype,
                                                    ncclComm_t comm, cudaStream_t stream) {
  return Record(Enqueue(kAlltoAll, sendbuff, recvbuff, count, datatype, ncclSum, -1, comm, stream));
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclAlltoAll,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                   ncclComm_t comm, cudaStream_t stream));

extern "C" MYRIAD_EXPORT ncclResult_t pncclGather(const void* sendbuff, void* recvbuff,
                                                  size_t count, ncclDataType_t datatype, int root,
                                                  ncclComm_t comm, cudaStream_t stream) {
  return Record(Enqueue(kGather, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream));
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclGather,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                   int root, ncclComm_t comm, cudaStream_t stream));

extern "C" MYRIAD_EXPORT ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff,
                                                   size_t count, ncclDataType_t datatype, int root,
                                                   ncclComm_t comm, cudaStream_t stream) {
  return Record(
      Enqueue(kScatter, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream));
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclScatter,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                   int root, ncclComm_t comm, cudaStream_t stream));

extern "C" MYRIAD_EXPORT ncclResult_t pncclSend(const void* sendbuff, size_t count,
                                                ncclDataType_t datatype, int peer, ncclComm_t comm,
                                                cudaStream_t stream) {
  return Record(Enqueue(kSend, sendbuff, nullptr, count, datatype, ncclSum, peer, comm, stream));
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclSend,
                  (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                   ncclComm_t comm, cudaStream_t stream));

extern "C" MYRIAD_EXPORT ncclResult_t pncclRecv(void* recvbuff, size_t count,
                                                ncclDataType_t datatype, int peer, ncclComm_t comm,
                                                cudaStream_t stream) {
  return Record(Enqueue(kRecv, nullptr, recvbuff, count, datatype, ncclSum, peer, comm, stream));
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclRecv,
                  (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                   cudaStream_t stream));

// --- groups ------------------------------------------------------------------------------------

extern "C" MYRIAD_EXPORT ncclResult_t pncclGroupStart() {
  ++t_group.depth;
  return ncclSuccess;
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclGroupStart, ());

extern "C" MYRIAD_EXPORT ncclResult_t pncclGroupEnd() { return GroupEnd("ncclGroupEnd", false); }
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclGroupEnd, ());

// Ends the group without launching it. Myriad does not estimate the time here (the engine times
// collectives when every member reaches them), so estimatedTime is left as the caller set it.
extern "C" MYRIAD_EXPORT ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  if (simInfo != nullptr && simInfo->magic != kSimInfoMagic)
    return Fail(ncclInvalidArgument,
                "ncclGroupSimulateEnd : ncclSimInfo_t argument not initialized via "
                "NCCL_SIM_INFO_INITIALIZER");
  return GroupEnd("ncclGroupSimulateEnd", true);
}
MYRIAD_NCCL_ALIAS(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t * simInfo));
