// The CUDA runtime API on virtual devices: device memory is address space with no contents,
// streams and events are handles Myriad's engine knows by id, and everything that touches
// the GPU becomes an op for the engine. Synchronising calls wait for the engine's answer,
// which carries the thread's new virtual time.
#include <cuda_runtime_api.h>
#include <cxxabi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/env.h"
#include "common/export.h"
#include "common/unsupported.h"
#include "cudart/client.h"
#include "cudart/known_contents.h"
#include "protocol/kernel_signature.h"

namespace myriad::shim {
namespace {

// Op kinds, as emulator::OpKind numbers them.
enum Kind : std::uint8_t {
  kKernel = 0,
  kMemcpy = 1,
  kMemset = 2,
  kEventRecord = 3,
  kStreamWaitEvent = 4,
  kEventSync = 5,
  kEventQuery = 6,
  kStreamSync = 7,
  kDeviceSync = 8,
  kStreamCreate = 9,
  kMalloc = 10,
  kFree = 11,
  kMarker = 18,
};
enum CopyKind : std::uint8_t { kH2D = 0, kD2H = 1, kD2D = 2, kPeer = 3 };
constexpr std::int32_t kLegacyStreamId = 0;
constexpr std::int32_t kPerThreadStreamId = -2;
// cudaStreamLegacy and cudaStreamPerThread, without the header's C-style casts.
constexpr std::uintptr_t kLegacyHandle = 0x1;
constexpr std::uintptr_t kPerThreadHandle = 0x2;
constexpr std::uint32_t kStreamMagic = 0x5354524d;  // "MRTS"
constexpr std::uint32_t kEventMagic = 0x5645524d;

thread_local cudaError_t last_error = cudaSuccess;

cudaError_t Fail(cudaError_t e) {
  if (e != cudaSuccess) {
    last_error = e;
    CountError(e);
  }
  return e;
}

// --- Device memory: host address space, reserved but committed only where written ---
// Kernels are timed, not run, so device memory holds what copies and memsets put there (and
// collectives below the exchange threshold, nccl.cc): a host that reads back what it wrote,
// or what a broadcast brought, sees real bytes. Untouched pages cost nothing (MAP_NORESERVE);
// freed blocks give their pages back.
class DeviceMemory {
 public:
  static DeviceMemory& Get() {
    static DeviceMemory* memory = new DeviceMemory();
    return *memory;
  }
  void* Allocate(std::size_t bytes, int device) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::size_t size = RoundUp(std::max<std::size_t>(bytes, 1), kAlign);
    std::uintptr_t address = 0;
    auto reuse = free_.find(size);
    if (reuse != free_.end() && !reuse->second.empty()) {
      address = reuse->second.back();
      reuse->second.pop_back();
    } else {
      address = BumpLocked(size, kAlign);
      if (address == 0) return nullptr;
    }
    blocks_[address] = {bytes, size, device, false};
    UsedLocked(device) += bytes;
    return reinterpret_cast<void*>(address);
  }
  // Address space for the driver's VMM calls: not counted (cuMemCreate counts what is mapped).
  void* Reserve(std::size_t bytes, std::size_t alignment) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::size_t size = RoundUp(std::max<std::size_t>(bytes, 1), kAlign);
    const std::uintptr_t address = BumpLocked(size, std::max(alignment, kAlign));
    if (address == 0) return nullptr;
    blocks_[address] = {bytes, size, -1, true};
    return reinterpret_cast<void*>(address);
  }
  bool Unreserve(void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == blocks_.end() || !it->second.reservation) return false;
    Discard(it->first, it->second.size);
    blocks_.erase(it);  // address space is not reused: a stale mapping never aliases
    return true;
  }
  // The bytes and device of a block, or false if `p` is not one.
  bool Free(void* p, std::size_t* bytes, int* device) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == blocks_.end() || it->second.reservation) return false;
    *bytes = it->second.bytes;
    *device = it->second.device;
    UsedLocked(*device) -= it->second.bytes;
    Discard(it->first, it->second.size);
    free_[it->second.size].push_back(it->first);
    blocks_.erase(it);
    return true;
  }
  bool Contains(const void* p) const {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    return a >= base_ && a < base_ + reserve_;
  }
  // The block (allocation or reservation) that holds `p`.
  bool Range(const void* p, std::uintptr_t* start, std::size_t* bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto it = blocks_.upper_bound(a);
    if (it == blocks_.begin()) return false;
    --it;
    if (a >= it->first + it->second.size) return false;
    *start = it->first;
    *bytes = it->second.bytes;
    return true;
  }
  std::uint64_t Used(int device) {
    std::lock_guard<std::mutex> lock(mu_);
    return UsedLocked(device);
  }
  // Managed memory (and the driver's physical allocations) count against their device.
  void Count(int device, std::size_t bytes, bool allocated) {
    std::lock_guard<std::mutex> lock(mu_);
    if (allocated)
      UsedLocked(device) += bytes;
    else
      UsedLocked(device) -= bytes;
  }

 private:
  static constexpr std::size_t kAlign = 512;  // cudaMalloc returns 256-byte aligned at least
  // Address space tried in turn: 16 TiB, or less where the kernel refuses that much.
  static constexpr std::size_t kReserves[] = {std::size_t{1} << 44, std::size_t{1} << 40,
                                              std::size_t{1} << 38};
  // Freed blocks at least this large give their pages back to the kernel.
  static constexpr std::size_t kDiscardBytes = 64 * 1024;
  struct Block {
    std::size_t bytes, size;
    int device;
    bool reservation;
  };
  static std::size_t RoundUp(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }
  std::uintptr_t BumpLocked(std::size_t size, std::size_t alignment) {
    const std::uintptr_t address = RoundUp(next_, alignment);
    if (base_ == 0 || address + size > base_ + reserve_) return 0;
    next_ = address + size;
    return address;
  }
  static void Discard(std::uintptr_t address, std::size_t size) {
    if (size >= kDiscardBytes) ::madvise(reinterpret_cast<void*>(address), size, MADV_DONTNEED);
  }
  // Bytes allocated on `device` (any ordinal the process has; the table grows to fit).
  std::uint64_t& UsedLocked(int device) {
    const auto d = static_cast<std::size_t>(std::max(device, 0));
    if (d >= used_.size()) used_.resize(d + 1, 0);
    return used_[d];
  }
  DeviceMemory() {
    for (const std::size_t reserve : kReserves) {
      void* base = ::mmap(nullptr, reserve, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (base == MAP_FAILED) continue;
      base_ = reinterpret_cast<std::uintptr_t>(base);
      reserve_ = reserve;
      break;
    }
    next_ = base_;
  }
  std::mutex mu_;
  std::uintptr_t base_ = 0, next_ = 0;
  std::size_t reserve_ = 0;
  std::map<std::size_t, std::vector<std::uintptr_t>> free_;
  std::map<std::uintptr_t, Block> blocks_;
  std::vector<std::uint64_t> used_;
};

// Copies and memsets of at most this many bytes move real bytes (MYRIAD_COPY_BYTES, default
// 64 MiB); larger ones are timed only, so that memory stays bounded: a large copy to the host
// reads zeros, one to the device leaves what was there.
std::size_t RealCopyBytes() {
  static const std::size_t limit = EnvBytes("MYRIAD_COPY_BYTES", std::size_t{64} << 20);
  return limit;
}

// Devices the process has used: the driver's primary context is active on them. Without a
// lock: cudaSetDevice, which marks them, is called all the time (PyTorch's device guards).
std::atomic<bool>* ActiveDevices() {
  static auto* active = new std::atomic<bool>[static_cast<std::size_t>(GetSettings().devices)]();
  return active;
}
void MarkActive(int device) {
  if (device >= 0 && device < GetSettings().devices)
    ActiveDevices()[device].store(true, std::memory_order_relaxed);
}
int DeviceActive(int device) {
  return device >= 0 && device < GetSettings().devices &&
         ActiveDevices()[device].load(std::memory_order_relaxed);
}

// --- Host memory the runtime knows: pinned (cudaMallocHost, cudaHostAlloc, cudaHostRegister)
// and managed (cudaMallocManaged). It is real memory the program reads and writes; managed
// memory also counts against its device's HBM, as if it lived there.
class HostMemory {
 public:
  enum class Kind { kPinned, kRegistered, kManaged };
  struct Block {
    std::size_t bytes = 0;
    Kind kind = Kind::kPinned;
    int device = 0;
    unsigned flags = 0;
  };
  static HostMemory& Get() {
    static HostMemory* memory = new HostMemory();
    return *memory;
  }
  void Add(void* p, const Block& block) {
    std::lock_guard<std::mutex> lock(mu_);
    blocks_[reinterpret_cast<std::uintptr_t>(p)] = block;
  }
  // The block starting at `p`, removed; false if there is none.
  bool Remove(const void* p, Block* block) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == blocks_.end()) return false;
    *block = it->second;
    blocks_.erase(it);
    return true;
  }
  // The block that contains `p` (any address inside it), if any, and where it starts.
  bool Find(const void* p, Block* block, std::uintptr_t* start = nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto it = blocks_.upper_bound(a);
    if (it == blocks_.begin()) return false;
    --it;
    if (a >= it->first + std::max<std::size_t>(it->second.bytes, 1)) return false;
    *block = it->second;
    if (start) *start = it->first;
    return true;
  }

 private:
  std::mutex mu_;
  std::map<std::uintptr_t, Block> blocks_;
};

// --- Streams and events: handles with the engine's ids ---
struct StreamHandle {
  std::uint32_t magic = kStreamMagic;
  int device = 0;
  std::int32_t id = 0;
  unsigned flags = 0;
  int priority = 0;
};
struct EventHandle {
  std::uint32_t magic = kEventMagic;
  int device = 0;
  std::int32_t id = 0;
  unsigned flags = 0;
};

std::mutex ids_mu;
std::int32_t next_stream_id = 1;
std::int32_t next_event_id = 1;

// A stream handle's device and engine id; false for a handle that is not a stream.
bool Resolve(cudaStream_t stream, int* device, std::int32_t* id) {
  const auto value = reinterpret_cast<std::uintptr_t>(stream);
  if (value == 0 || value == kLegacyHandle) {
    *device = CurrentDevice();
    *id = kLegacyStreamId;
    return true;
  }
  if (value == kPerThreadHandle) {
    *device = CurrentDevice();
    *id = kPerThreadStreamId;
    return true;
  }
  auto* h = reinterpret_cast<StreamHandle*>(stream);
  if (h->magic != kStreamMagic) return false;
  *device = h->device;
  *id = h->id;
  return true;
}

EventHandle* AsEvent(cudaEvent_t event) {
  auto* h = reinterpret_cast<EventHandle*>(event);
  return h && h->magic == kEventMagic ? h : nullptr;
}

wire::WireOp Op(std::uint8_t kind, std::int32_t stream = 0) {
  wire::WireOp op;
  op.kind = kind;
  op.stream = stream;
  return op;
}

// --- Kernels: names from registration ---
struct KernelRecord {
  explicit KernelRecord(std::string kernel_name) : name(std::move(kernel_name)) {}
  std::string name;
  // Where its integer parameters are, read from the demangled name at the first launch
  // (demangling all of a library's kernels at registration would slow every import).
  std::once_flag parsed;
  wire::IntegerParameters int_params;
  wire::PointerParameters pointer_params;
  // A kernel loaded through the driver: its parameters' sizes from its cubin (set before its
  // first launch, under kernels_mu), which say where its arguments are instead of its name.
  std::atomic<bool> has_layout{false};
  std::vector<std::uint16_t> param_sizes;
  std::uint16_t module = 0;  // the module it came from (ClientTable::kernel_in_module), or 0
};

void ParseSignature(KernelRecord* kernel) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(kernel->name.c_str(), nullptr, nullptr, &status);
  if (status == 0 && demangled) {
    kernel->int_params = wire::FindIntegerParameters(demangled);
    kernel->pointer_params = wire::FindPointerParameters(demangled);
  }
  std::free(demangled);
}

// The bytes of the allocation `p` points into, from `p` to its end: device memory, or memory
// the runtime gave the host (managed, pinned); 0 for anything else.
std::uint64_t AllocationBytesFrom(const void* p);

// The value of an integer parameter of `size` bytes at `at` (8 for any other size).
std::int64_t IntegerAt(const void* at, int size, bool is_signed) {
  switch (size) {
    case 1:
      return is_signed ? *static_cast<const std::int8_t*>(at)
                       : *static_cast<const std::uint8_t*>(at);
    case 2:
      return is_signed ? *static_cast<const std::int16_t*>(at)
                       : *static_cast<const std::uint16_t*>(at);
    case 4:
      return is_signed ? *static_cast<const std::int32_t*>(at)
                       : *static_cast<const std::uint32_t*>(at);
    default: {
      std::int64_t v = 0;
      std::memcpy(&v, at, sizeof(v));
      return v;
    }
  }
}

// The reach of device or runtime-given host memory from `p` (declared below).
std::optional<std::uint64_t> ReachFrom(const void* p, bool host_memory);

// A pointer parameter (at `position` in the kernel's parameter list) that points into known
// device contents: named in the launch, for the code that reads them.
void NameContents(const void* pointer, std::size_t position, wire::WireOp* op) {
  std::uint32_t id = 0, offset = 0;
  if (op->content_ref_count >= std::size(op->content_id) || position > 255 ||
      !ContentsAt(pointer, &id, &offset))
    return;
  const std::size_t k = op->content_ref_count++;
  op->content_param[k] = static_cast<std::uint8_t>(position);
  op->content_id[k] = id;
  op->content_offset[k] = offset;
}

// A launch of a kernel loaded through the driver, by its cubin's parameter sizes: an 8-byte
// parameter that points into memory Myriad gave the program is a pointer (its reach
// reported), any other parameter an integer (its value). The server maps them onto the
// kernel's PTX parameters with the pointer mask.
void ReadArgsByLayout(const KernelRecord* kernel, void** args, wire::WireOp* op) {
  op->module = kernel->module;
  const std::vector<std::uint16_t>& sizes = kernel->param_sizes;
  op->param_count = static_cast<std::uint8_t>(std::min<std::size_t>(sizes.size(), 255));
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const void* at = args[i];
    if (!at) return;
    if (sizes[i] == 8) {
      void* pointer = nullptr;
      std::memcpy(&pointer, at, sizeof pointer);
      if (const auto reach = ReachFrom(pointer, true); reach.has_value() && pointer) {
        if (i < 32) op->pointer_mask |= std::uint32_t{1} << i;
        if (op->pointer_arg_count < std::size(op->pointer_bytes))
          op->pointer_bytes[op->pointer_arg_count++] = *reach;
        NameContents(pointer, i, op);
        continue;
      }
    }
    // A struct (a tensor map) is no integer.
    const std::int64_t v = sizes[i] == 1 || sizes[i] == 2 || sizes[i] == 4 || sizes[i] == 8
                               ? IntegerAt(at, sizes[i], true)
                               : 0;
    if (op->int_arg_count < std::size(op->int_args)) op->int_args[op->int_arg_count++] = v;
  }
}

// The launch's integer parameters, as FindIntegerParameters located them in `args`, and its
// pointer parameters' reach.
void ReadIntegerArgs(KernelRecord* kernel, void** args, wire::WireOp* op) {
  if (!args) return;
  if (kernel->has_layout.load(std::memory_order_acquire)) return ReadArgsByLayout(kernel, args, op);
  std::call_once(kernel->parsed, ParseSignature, kernel);
  const wire::IntegerParameters& p = kernel->int_params;
  for (int i = 0; i < p.count; ++i) {
    const void* at = args[p.index[i]];
    if (!at) return;
    op->int_args[i] = IntegerAt(at, p.size[i], p.is_signed[i]);
    op->int_arg_count = static_cast<std::uint8_t>(i + 1);
  }
  // Pointers: what they can reach, which bounds what a kernel can move through them.
  const wire::PointerParameters& q = kernel->pointer_params;
  for (int i = 0; i < q.count; ++i) {
    const void* at = args[q.index[i]];
    if (!at) return;
    void* pointer = nullptr;
    std::memcpy(&pointer, at, sizeof pointer);
    op->pointer_bytes[i] = AllocationBytesFrom(pointer);
    op->pointer_arg_count = static_cast<std::uint8_t>(i + 1);
    NameContents(pointer, static_cast<std::size_t>(q.index[i]), op);
  }
}
std::mutex kernels_mu;
std::unordered_map<const void*, KernelRecord*>& Kernels() {
  static auto* kernels = new std::unordered_map<const void*, KernelRecord*>();
  return *kernels;
}
KernelRecord* KernelFor(const void* host_function) {
  std::lock_guard<std::mutex> lock(kernels_mu);
  auto it = Kernels().find(host_function);
  if (it != Kernels().end()) return it->second;
  // A launch of something never registered still gets a (stable) name.
  auto* record = new KernelRecord("unregistered_kernel");
  Kernels()[host_function] = record;
  return record;
}

thread_local struct {
  dim3 grid, block;
  std::size_t shared = 0;
  cudaStream_t stream = nullptr;
} pushed_configuration;

// CUDA's limits on a launch's shape (compute capability 5.0 and later): what lies outside
// them fails with cudaErrorInvalidConfiguration, as on a real GPU.
constexpr unsigned kMaxGridX = 2147483647u, kMaxGridYZ = 65535u;
constexpr unsigned kMaxBlockXY = 1024u, kMaxBlockZ = 64u, kMaxBlockThreads = 1024u;
bool ValidConfiguration(dim3 grid, dim3 block) {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0)
    return false;
  if (grid.x > kMaxGridX || grid.y > kMaxGridYZ || grid.z > kMaxGridYZ) return false;
  if (block.x > kMaxBlockXY || block.y > kMaxBlockXY || block.z > kMaxBlockZ) return false;
  return static_cast<std::uint64_t>(block.x) * block.y * block.z <= kMaxBlockThreads;
}

cudaError_t Launch(KernelRecord* kernel, dim3 grid, dim3 block, void** args, std::size_t shared,
                   cudaStream_t stream, bool per_thread_default) {
  if (!ValidConfiguration(grid, block)) return Fail(cudaErrorInvalidConfiguration);
  int device = 0;
  std::int32_t id = 0;
  if (per_thread_default && stream == nullptr)
    stream = reinterpret_cast<cudaStream_t>(kPerThreadHandle);
  if (!Resolve(stream, &device, &id)) return Fail(cudaErrorInvalidResourceHandle);
  wire::WireOp op = Op(kKernel, id);
  op.name = Intern(kernel->name);
  op.grid[0] = grid.x, op.grid[1] = grid.y, op.grid[2] = grid.z;
  op.block[0] = block.x, op.block[1] = block.y, op.block[2] = block.z;
  op.shared_mem = static_cast<std::uint32_t>(shared);
  ReadIntegerArgs(kernel, args, &op);
  return Fail(static_cast<cudaError_t>(Submit(op, device)));
}

// The bytes from `p` to the end of the live device allocation it points into (a cudaMalloc
// block, a VMM reservation, a device variable), or, if `host_memory`, of the memory the runtime
// gave the host that it points into (pinned, registered, managed: the device reaches it);
// nullopt for a freed block or an address nothing allocated.
std::optional<std::uint64_t> ReachFrom(const void* p, bool host_memory) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::uintptr_t start = 0;
  std::size_t size = 0;
  if (DeviceMemory::Get().Contains(p)) {
    if (!DeviceMemory::Get().Range(p, &start, &size)) return std::nullopt;
    return size - (a - start);
  }
  HostMemory::Block block;
  if (!host_memory || !HostMemory::Get().Find(p, &block, &start)) return std::nullopt;
  return block.bytes - (a - start);
}

std::uint64_t AllocationBytesFrom(const void* p) { return ReachFrom(p, true).value_or(0); }

// Whether `bytes` at `p` lie inside one allocation ReachFrom knows. A freed block, an address
// nothing allocated and a range that runs past its block are not: CUDA refuses copies and
// memsets there with cudaErrorInvalidValue (they used to succeed, or write where nothing was).
bool Reachable(const void* p, std::size_t bytes, bool host_memory) {
  const std::optional<std::uint64_t> reach = ReachFrom(p, host_memory);
  return reach && bytes <= *reach;
}
// The device side of a copy must be reachable; the host side may be any host memory, but not
// device memory that is no longer (or never was) allocated.
bool CopyEndsValid(const void* dst, std::size_t dst_bytes, const void* src, std::size_t src_bytes,
                   CopyKind kind) {
  const auto end_ok = [](const void* p, std::size_t bytes, bool device_side) {
    if (device_side) return Reachable(p, bytes, true);
    return !DeviceMemory::Get().Contains(p) || Reachable(p, bytes, false);
  };
  return end_ok(dst, dst_bytes, kind == kH2D || kind == kD2D) &&
         end_ok(src, src_bytes, kind == kD2H || kind == kD2D);
}

CopyKind KindOf(const void* dst, const void* src, cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToDevice:
      return kH2D;
    case cudaMemcpyDeviceToHost:
      return kD2H;
    case cudaMemcpyDeviceToDevice:
      return kD2D;
    default: {
      const bool d = DeviceMemory::Get().Contains(dst), s = DeviceMemory::Get().Contains(src);
      return d && s ? kD2D : d ? kH2D : s ? kD2H : kD2D;
    }
  }
}

// Device memory is a private anonymous mapping, so a page given back (MADV_DONTNEED) reads as
// zeros again: zeroing device bytes gives back the whole pages inside the range instead of
// writing them, and a copy from device pages never written (never resident) zeroes its
// destination the same way. A large model's zeroed gradients and copies of
// kernel-initialised parameters then hold no host memory (405B's FSDP stages otherwise
// commit gigabytes of zeros per process).
std::size_t PageBytes() {
  static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

void ZeroDeviceBytes(void* dst, std::size_t bytes) {
  const std::size_t page = PageBytes();
  const auto begin = reinterpret_cast<std::uintptr_t>(dst), end = begin + bytes;
  const std::uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (first >= last) {
    std::memset(dst, 0, bytes);
    return;
  }
  std::memset(dst, 0, first - begin);
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  std::memset(reinterpret_cast<void*>(last), 0, end - last);
}

// Whether no page of [p, p + bytes) of device memory has been written (none is resident).
bool NeverWritten(const void* p, std::size_t bytes) {
  const std::size_t page = PageBytes();
  const auto begin = reinterpret_cast<std::uintptr_t>(p) / page * page;
  const auto end = reinterpret_cast<std::uintptr_t>(p) + bytes;
  const std::size_t pages = (end - begin + page - 1) / page;
  std::vector<unsigned char> resident(pages);
  if (::mincore(reinterpret_cast<void*>(begin), end - begin, resident.data()) != 0) return false;
  for (unsigned char r : resident)
    if (r & 1) return false;
  return true;
}

// Moves the bytes now, at enqueue: nothing on the device writes memory (kernels are timed,
// not run), so what the copy would read at its turn on the stream is what is there now.
void MoveBytes(void* dst, const void* src, std::size_t bytes) {
  const bool real = bytes <= RealCopyBytes();
  if (real && DeviceMemory::Get().Contains(dst) && DeviceMemory::Get().Contains(src) &&
      NeverWritten(src, bytes)) {
    ZeroDeviceBytes(dst, bytes);
  } else if (real) {
    std::memmove(dst, src, bytes);
  } else if (!DeviceMemory::Get().Contains(dst)) {
    std::memset(dst, 0, bytes);  // a timed-only copy to the host reads zeros, not garbage
  }
  if (DeviceMemory::Get().Contains(dst))
    ContentsCopied(dst, bytes, real && !DeviceMemory::Get().Contains(src));
}

// The copy op of `bytes` on `stream` (resolved to `device`, `id`), once its bytes have moved.
cudaError_t SubmitCopy(std::size_t bytes, CopyKind kind, int device, std::int32_t id, bool async) {
  wire::WireOp op = Op(kMemcpy, id);
  op.bytes = bytes;
  op.copy_kind = kind;
  if (async) {
    op.flags = wire::kAsync;
    return Fail(static_cast<cudaError_t>(Submit(op, device)));
  }
  return Fail(static_cast<cudaError_t>(Call(op, device, nullptr)));
}

cudaError_t Copy(void* dst, const void* src, std::size_t bytes, CopyKind kind, cudaStream_t stream,
                 bool async) {
  if (bytes == 0) return cudaSuccess;
  if (!dst || !src) return Fail(cudaErrorInvalidValue);
  int device = 0;
  std::int32_t id = 0;
  if (!Resolve(stream, &device, &id)) return Fail(cudaErrorInvalidResourceHandle);
  if (!CopyEndsValid(dst, bytes, src, bytes, kind)) return Fail(cudaErrorInvalidValue);
  MoveBytes(dst, src, bytes);
  return SubmitCopy(bytes, kind, device, id, async);
}

// A copy of `height` rows of `width` bytes between pitched buffers (cudaMemcpy2D): the rows'
// bytes move as a copy's do, and it is timed as one copy of width x height bytes.
cudaError_t Copy2D(void* dst, std::size_t dpitch, const void* src, std::size_t spitch,
                   std::size_t width, std::size_t height, cudaMemcpyKind kind, cudaStream_t stream,
                   bool async) {
  if (width == 0 || height == 0) return cudaSuccess;
  if (!dst || !src) return Fail(cudaErrorInvalidValue);
  if (width > dpitch || width > spitch) return Fail(cudaErrorInvalidPitchValue);
  if (height > std::numeric_limits<std::size_t>::max() / width) return Fail(cudaErrorInvalidValue);
  int device = 0;
  std::int32_t id = 0;
  if (!Resolve(stream, &device, &id)) return Fail(cudaErrorInvalidResourceHandle);
  // Each side spans its rows up to the last row's end.
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  if (height - 1 > (kMax - width) / dpitch || height - 1 > (kMax - width) / spitch)
    return Fail(cudaErrorInvalidValue);
  const CopyKind copy_kind = KindOf(dst, src, kind);
  if (!CopyEndsValid(dst, (height - 1) * dpitch + width, src, (height - 1) * spitch + width,
                     copy_kind))
    return Fail(cudaErrorInvalidValue);
  for (std::size_t row = 0; row < height; ++row)
    MoveBytes(static_cast<char*>(dst) + row * dpitch, static_cast<const char*>(src) + row * spitch,
              width);
  return SubmitCopy(width * height, copy_kind, device, id, async);
}

// --- __device__ variables: each registered one gets device memory (reserved, not counted,
// as a module's static data is not an allocation) on first use of its address ---
struct Symbol {
  std::size_t size = 0;
  std::map<int, void*> address;  // by device
};
std::mutex symbols_mu;
std::unordered_map<const void*, Symbol>& Symbols() {
  static auto* symbols = new std::unordered_map<const void*, Symbol>();
  return *symbols;
}
cudaError_t SymbolAddress(const void* symbol, void** address, std::size_t* size) {
  std::lock_guard<std::mutex> lock(symbols_mu);
  auto it = Symbols().find(symbol);
  if (it == Symbols().end()) return cudaErrorInvalidSymbol;
  void*& at = it->second.address[CurrentDevice()];
  if (!at) at = DeviceMemory::Get().Reserve(std::max<std::size_t>(it->second.size, 1), 256);
  if (!at) return cudaErrorMemoryAllocation;
  *address = at;
  *size = it->second.size;
  return cudaSuccess;
}
// Where `count` bytes at `offset` of `symbol` are, or an error if they are not inside it.
cudaError_t SymbolRange(const void* symbol, std::size_t count, std::size_t offset, char** at) {
  void* address = nullptr;
  std::size_t size = 0;
  if (const cudaError_t e = SymbolAddress(symbol, &address, &size); e != cudaSuccess) return e;
  if (offset > size || count > size - offset) return cudaErrorInvalidValue;
  *at = static_cast<char*>(address) + offset;
  return cudaSuccess;
}

// A memset of `count` elements of `width` bytes (1, 2 or 4: the driver's D8/D16/D32) to `value`.
cudaError_t Set(void* dst, unsigned value, std::size_t width, std::size_t count,
                cudaStream_t stream, bool async) {
  const std::size_t bytes = width * count;
  if (bytes == 0) return cudaSuccess;
  int device = 0;
  std::int32_t id = 0;
  if (!Resolve(stream, &device, &id)) return Fail(cudaErrorInvalidResourceHandle);
  // Device memory, or managed memory (not pinned or registered host memory).
  HostMemory::Block managed;
  const bool in_managed =
      HostMemory::Get().Find(dst, &managed) && managed.kind == HostMemory::Kind::kManaged;
  if (!Reachable(dst, bytes, in_managed)) return Fail(cudaErrorInvalidValue);
  ContentsForgotten(dst, bytes);
  if (bytes <= RealCopyBytes()) {
    auto* out = static_cast<unsigned char*>(dst);
    if (value == 0 && !in_managed && DeviceMemory::Get().Contains(dst)) {
      ZeroDeviceBytes(dst, bytes);
    } else if (width == 1) {
      std::memset(out, static_cast<int>(value & 0xff), bytes);
    } else {
      for (std::size_t i = 0; i < count; ++i) std::memcpy(out + i * width, &value, width);
    }
  }
  wire::WireOp op = Op(kMemset, id);
  op.bytes = bytes;
  if (async) {
    op.flags = wire::kAsync;
    return Fail(static_cast<cudaError_t>(Submit(op, device)));
  }
  return Fail(static_cast<cudaError_t>(Call(op, device, nullptr)));
}

cudaError_t AllocateOn(void** ptr, std::size_t bytes, int device) {
  if (!ptr) return Fail(cudaErrorInvalidValue);
  // More than the whole GPU never fits, as on a real one (SIZE_MAX used to round to 0 and
  // succeed); what fits alone but not beside the rest is the engine's predicted OOM.
  if (bytes > GetSettings().gpu_memory) return Fail(cudaErrorMemoryAllocation);
  void* p = DeviceMemory::Get().Allocate(bytes, device);
  if (!p) return Fail(cudaErrorMemoryAllocation);
  MarkActive(device);
  wire::WireOp op = Op(kMalloc);
  op.bytes = bytes;
  *ptr = p;
  return Fail(static_cast<cudaError_t>(Submit(op, device)));
}

cudaError_t Allocate(void** ptr, std::size_t bytes) {
  return AllocateOn(ptr, bytes, CurrentDevice());
}

cudaError_t Release(void* p) {
  if (!p) return cudaSuccess;  // cudaFree(0) initialises the context
  std::size_t bytes = 0;
  int device = 0;
  if (std::uintptr_t start = 0; DeviceMemory::Get().Range(p, &start, &bytes))
    ContentsForgotten(reinterpret_cast<const void*>(start), bytes);
  if (!DeviceMemory::Get().Free(p, &bytes, &device)) {
    // cudaFree takes managed memory too (not pinned host memory: that is cudaFreeHost's).
    HostMemory::Block block;
    if (!HostMemory::Get().Find(p, &block) || block.kind != HostMemory::Kind::kManaged ||
        !HostMemory::Get().Remove(p, &block))
      return Fail(cudaErrorInvalidValue);
    std::free(p);
    bytes = block.bytes;
    device = block.device;
    DeviceMemory::Get().Count(device, bytes, false);
  }
  wire::WireOp op = Op(kFree);
  op.bytes = bytes;
  return Fail(static_cast<cudaError_t>(Submit(op, device)));
}

int StreamIdForTable(cudaStream_t stream) {
  int device = 0;
  std::int32_t id = 0;
  return Resolve(stream, &device, &id) ? id : kLegacyStreamId;
}

int SubmitForTable(const wire::WireOp* op, int device) { return Submit(*op, device); }
int CallForTable(const wire::WireOp* op, int device, wire::Reply* reply) {
  return Call(*op, device, reply);
}
std::uint32_t InternForTable(const char* name) { return Intern(name); }

void* KernelNamed(const char* name) {
  static auto* by_name = new std::unordered_map<std::string, KernelRecord*>();
  std::lock_guard<std::mutex> lock(kernels_mu);
  KernelRecord*& record = (*by_name)[name ? name : "kernel"];
  if (!record) record = new KernelRecord(name ? name : "kernel");
  return record;
}
void* KernelInModule(const char* name, int module) {
  if (module <= 0 || module > 0xffff) return KernelNamed(name);
  static auto* by_module = new std::map<std::pair<int, std::string>, KernelRecord*>();
  std::lock_guard<std::mutex> lock(kernels_mu);
  KernelRecord*& record = (*by_module)[{module, name ? name : "kernel"}];
  if (!record) {
    record = new KernelRecord(name ? name : "kernel");
    record->module = static_cast<std::uint16_t>(module);
  }
  return record;
}
void KernelParamsForTable(void* kernel, const std::uint16_t* sizes, int count) {
  auto* record = static_cast<KernelRecord*>(kernel);
  if (!record || !sizes || count <= 0) return;
  std::lock_guard<std::mutex> lock(kernels_mu);
  if (record->has_layout.load(std::memory_order_relaxed)) return;  // the same name loaded again
  record->param_sizes.assign(sizes, sizes + count);
  record->has_layout.store(true, std::memory_order_release);
}
void* ReserveForTable(std::size_t bytes, std::size_t alignment) {
  return DeviceMemory::Get().Reserve(bytes, alignment);
}
void UnreserveForTable(void* p) { DeviceMemory::Get().Unreserve(p); }
int AccountForTable(int device, std::int64_t bytes) {
  const auto size = static_cast<std::size_t>(bytes < 0 ? -bytes : bytes);
  DeviceMemory::Get().Count(device, size, bytes > 0);
  MarkActive(device);
  wire::WireOp op = Op(bytes > 0 ? kMalloc : kFree);
  op.bytes = size;
  return Submit(op, device);
}
int AddressRangeForTable(const void* p, void** base, std::size_t* bytes) {
  std::uintptr_t start = 0;
  if (!DeviceMemory::Get().Range(p, &start, bytes)) return 0;
  *base = reinterpret_cast<void*>(start);
  return 1;
}

void SetLastErrorFromUnsupported(int error) { last_error = static_cast<cudaError_t>(error); }
[[maybe_unused]] const bool hook_registered = [] {
  SetCudartLastErrorHook(SetLastErrorFromUnsupported);
  return true;
}();

}  // namespace

const ClientTable& Table() {
  static const ClientTable table = {8,
                                    SubmitForTable,
                                    CallForTable,
                                    InternForTable,
                                    CurrentDevice,
                                    StreamIdForTable,
                                    ThreadTime,
                                    GetSettings().identity,
                                    GetSettings().devices,
                                    Flush,
                                    ThreadCreated,
                                    ThreadAdopt,
                                    ThreadExited,
                                    ThreadSelf,
                                    ThreadEnded,
                                    ThreadClock,
                                    HostBlock,
                                    HostWaitOutside,
                                    HostResume,
                                    HostWake,
                                    SleepUntil,
                                    StartTime,
                                    KernelNamed,
                                    ReserveForTable,
                                    UnreserveForTable,
                                    AccountForTable,
                                    DeviceActive,
                                    AddressRangeForTable,
                                    Exchange,
                                    WaitUntil,
                                    WaitOutcome,
                                    OpsEnqueued,
                                    OrderAfter,
                                    KernelParamsForTable,
                                    ModuleFile,
                                    ModulePtx,
                                    KernelInModule};
  return table;
}

}  // namespace myriad::shim

using myriad::shim::Fail;  // NOLINT: the API below reads better without qualification
namespace shim = myriad::shim;
namespace wire = myriad::wire;

extern "C" {

// ---- Errors and versions ----
MYRIAD_EXPORT cudaError_t cudaGetLastError() {
  const cudaError_t e = shim::last_error;
  shim::last_error = cudaSuccess;
  return e;
}
MYRIAD_EXPORT cudaError_t cudaPeekAtLastError() { return shim::last_error; }
MYRIAD_EXPORT const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidPitchValue:
      return "cudaErrorInvalidPitchValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorNoDevice:
      return "cudaErrorNoDevice";
    case cudaErrorStreamCaptureUnsupported:
      return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorIllegalState:
      return "cudaErrorIllegalState";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    case cudaErrorNotSupported:
      return "cudaErrorNotSupported";
    case cudaErrorUnknown:
      return "cudaErrorUnknown";
    default:
      return "cudaErrorUnknown";
  }
}
MYRIAD_EXPORT const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidPitchValue:
      return "invalid pitch argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorNoDevice:
      return "no CUDA-capable device is detected";
    case cudaErrorStreamCaptureUnsupported:
      return "operation not permitted when stream is capturing";
    case cudaErrorIllegalState:
      return "the operation cannot be performed in the present state";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorNotReady:
      return "device not ready";
    case cudaErrorNotSupported:
      return "operation not supported (by Myriad)";
    default:
      return "unknown error";
  }
}
MYRIAD_EXPORT cudaError_t cudaRuntimeGetVersion(int* v) {
  if (!v) return Fail(cudaErrorInvalidValue);
  *v = CUDART_VERSION;
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaDriverGetVersion(int* v) { return cudaRuntimeGetVersion(v); }
MYRIAD_EXPORT cudaError_t cudaGetExportTable(const void** table, const cudaUUID_t* id) {
  if (!table || !id) return Fail(cudaErrorInvalidValue);
  if (std::memcmp(id->bytes, shim::kClientTableId.bytes, sizeof(id->bytes)) == 0) {
    *table = &shim::Table();
    return cudaSuccess;
  }
  return Fail(cudaErrorNotSupported);
}

// ---- Devices ----
MYRIAD_EXPORT cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return Fail(cudaErrorInvalidValue);
  *count = shim::GetSettings().devices;
  return *count > 0 ? cudaSuccess : Fail(cudaErrorNoDevice);  // CUDA_VISIBLE_DEVICES hid all
}
MYRIAD_EXPORT cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= shim::GetSettings().devices) return Fail(cudaErrorInvalidDevice);
  shim::SetCurrentDevice(device);
  shim::MarkActive(device);  // CUDA 12 and later: cudaSetDevice initialises the primary context
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaGetDevice(int* device) {
  if (!device) return Fail(cudaErrorInvalidValue);
  *device = shim::CurrentDevice();
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaSetDeviceFlags(unsigned) { return cudaSuccess; }
MYRIAD_EXPORT cudaError_t cudaGetDeviceFlags(unsigned* flags) {
  if (!flags) return Fail(cudaErrorInvalidValue);
  *flags = 0;
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaDeviceReset() { return cudaSuccess; }
MYRIAD_EXPORT cudaError_t cudaDeviceCanAccessPeer(int* can, int device, int peer) {
  const int n = shim::GetSettings().devices;
  if (!can || device < 0 || device >= n || peer < 0 || peer >= n)
    return Fail(cudaErrorInvalidDevice);
  *can = device != peer;
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaDeviceEnablePeerAccess(int, unsigned) { return cudaSuccess; }
MYRIAD_EXPORT cudaError_t cudaDeviceDisablePeerAccess(int) { return cudaSuccess; }
MYRIAD_EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  const std::uint64_t memory = shim::GetSettings().gpu_memory;
  const std::uint64_t used = shim::DeviceMemory::Get().Used(shim::CurrentDevice());
  if (free_bytes) *free_bytes = used >= memory ? 0 : memory - used;
  if (total) *total = memory;
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaDeviceSynchronize() {
  return Fail(static_cast<cudaError_t>(shim::Call(shim::Op(shim::kDeviceSync), -1, nullptr)));
}

// ---- Memory ----
MYRIAD_EXPORT cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  return shim::Allocate(ptr, bytes);
}
MYRIAD_EXPORT cudaError_t cudaFree(void* p) { return shim::Release(p); }
// ---- Stream-ordered allocation and memory pools ----
// A pool is its device, its attributes and what is allocated from it: allocations are device
// memory as cudaMalloc's (the pool caches nothing, so reserved equals used).
struct CUmemPoolHandle_st {
  int device = 0;
  bool is_default = false;
  std::uint64_t release_threshold = 0;
  int reuse[3] = {1, 1, 1};  // follow event dependencies, opportunistic, internal dependencies
  std::uint64_t used = 0, used_high = 0, reserved_high = 0;
};
namespace myriad::shim {
namespace {
std::mutex pools_mu;
struct Pools {
  std::map<int, cudaMemPool_t> default_pool, current_pool;  // by device
  std::set<cudaMemPool_t> live;  // the default pools made so far, and created ones not destroyed
  std::map<const void*, std::pair<cudaMemPool_t, std::size_t>> allocations;
};
Pools& AllPools() {
  static auto* pools = new Pools();
  return *pools;
}
bool ValidDevice(int device) { return device >= 0 && device < GetSettings().devices; }
cudaMemPool_t DefaultPoolLocked(int device) {
  cudaMemPool_t& pool = AllPools().default_pool[device];
  if (!pool) {
    pool = new CUmemPoolHandle_st();
    pool->device = device;
    pool->is_default = true;
    AllPools().live.insert(pool);
  }
  return pool;
}
cudaMemPool_t CurrentPoolLocked(int device) {
  auto it = AllPools().current_pool.find(device);
  return it != AllPools().current_pool.end() ? it->second : DefaultPoolLocked(device);
}
bool ValidPoolLocked(cudaMemPool_t pool) { return AllPools().live.count(pool) > 0; }
cudaError_t AllocateFromPool(void** ptr, std::size_t bytes, cudaMemPool_t pool) {
  if (const cudaError_t e = AllocateOn(ptr, bytes, pool->device); e != cudaSuccess) return e;
  std::lock_guard<std::mutex> lock(pools_mu);
  pool->used += bytes;
  pool->used_high = std::max(pool->used_high, pool->used);
  pool->reserved_high = std::max(pool->reserved_high, pool->used);
  AllPools().allocations[*ptr] = {pool, bytes};
  return cudaSuccess;
}
}  // namespace
}  // namespace myriad::shim

MYRIAD_EXPORT cudaError_t cudaMallocAsync(void** ptr, size_t bytes, cudaStream_t) {
  cudaMemPool_t pool = nullptr;
  {
    std::lock_guard<std::mutex> lock(shim::pools_mu);
    pool = shim::CurrentPoolLocked(shim::CurrentDevice());
  }
  return shim::AllocateFromPool(ptr, bytes, pool);
}
MYRIAD_EXPORT cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t bytes, cudaMemPool_t pool,
                                                  cudaStream_t) {
  {
    std::lock_guard<std::mutex> lock(shim::pools_mu);
    if (!shim::ValidPoolLocked(pool)) return Fail(cudaErrorInvalidValue);
  }
  return shim::AllocateFromPool(ptr, bytes, pool);
}
MYRIAD_EXPORT cudaError_t cudaFreeAsync(void* p, cudaStream_t) {
  {
    std::lock_guard<std::mutex> lock(shim::pools_mu);
    auto it = shim::AllPools().allocations.find(p);
    if (it != shim::AllPools().allocations.end()) {
      if (it->second.first) it->second.first->used -= it->second.second;
      shim::AllPools().allocations.erase(it);
    }
  }
  return shim::Release(p);
}
MYRIAD_EXPORT cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
  if (!pool) return Fail(cudaErrorInvalidValue);
  if (!shim::ValidDevice(device)) return Fail(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> lock(shim::pools_mu);
  *pool = shim::DefaultPoolLocked(device);
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* pool, int device) {
  if (!pool) return Fail(cudaErrorInvalidValue);
  if (!shim::ValidDevice(device)) return Fail(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> lock(shim::pools_mu);
  *pool = shim::CurrentPoolLocked(device);
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t pool) {
  if (!shim::ValidDevice(device)) return Fail(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> lock(shim::pools_mu);
  if (!pool || pool->device != device || !shim::ValidPoolLocked(pool))
    return Fail(cudaErrorInvalidValue);
  shim::AllPools().current_pool[device] = pool;
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaMemPoolCreate(cudaMemPool_t* pool, const cudaMemPoolProps* props) {
  if (!pool || !props || props->location.type != cudaMemLocationTypeDevice)
    return Fail(cudaErrorInvalidValue);
  if (!shim::ValidDevice(props->location.id)) return Fail(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> lock(shim::pools_mu);
  *pool = new CUmemPoolHandle_st();
  (*pool)->device = props->location.id;
  shim::AllPools().live.insert(*pool);
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool) {
  std::lock_guard<std::mutex> lock(shim::pools_mu);
  // A device's default pool cannot be destroyed; nor a pool still some device's current one.
  if (!shim::ValidPoolLocked(pool) || pool->is_default) return Fail(cudaErrorInvalidValue);
  for (const auto& [device, current] : shim::AllPools().current_pool)
    if (current == pool) return Fail(cudaErrorInvalidValue);
  shim::AllPools().live.erase(pool);
  // Its allocations stay valid until freed (as CUDA defers the pool's release until then);
  // they no longer count anywhere.
  for (auto& [address, allocation] : shim::AllPools().allocations)
    if (allocation.first == pool) allocation.first = nullptr;
  delete pool;
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t) {
  std::lock_guard<std::mutex> lock(shim::pools_mu);
  // Nothing is cached: nothing to give back.
  return shim::ValidPoolLocked(pool) ? cudaSuccess : Fail(cudaErrorInvalidValue);
}
MYRIAD_EXPORT cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr,
                                                  void* value) {
  std::lock_guard<std::mutex> lock(shim::pools_mu);
  if (!value || !shim::ValidPoolLocked(pool)) return Fail(cudaErrorInvalidValue);
  switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies:
      pool->reuse[attr - cudaMemPoolReuseFollowEventDependencies] = *static_cast<int*>(value);
      return cudaSuccess;
    case cudaMemPoolAttrReleaseThreshold:
      pool->release_threshold = *static_cast<std::uint64_t*>(value);
      return cudaSuccess;
    case cudaMemPoolAttrReservedMemHigh:
    case cudaMemPoolAttrUsedMemHigh:
      // Only a reset to the current value is allowed (the value must be 0).
      if (*static_cast<std::uint64_t*>(value) != 0) return Fail(cudaErrorInvalidValue);
      (attr == cudaMemPoolAttrUsedMemHigh ? pool->used_high : pool->reserved_high) = pool->used;
      return cudaSuccess;
    default:
      return Fail(cudaErrorInvalidValue);
  }
}
MYRIAD_EXPORT cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr,
                                                  void* value) {
  std::lock_guard<std::mutex> lock(shim::pools_mu);
  if (!value || !shim::ValidPoolLocked(pool)) return Fail(cudaErrorInvalidValue);
  switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies:
      *static_cast<int*>(value) = pool->reuse[attr - cudaMemPoolReuseFollowEventDependencies];
      return cudaSuccess;
    case cudaMemPoolAttrReleaseThreshold:
      *static_cast<std::uint64_t*>(value) = pool->release_threshold;
      return cudaSuccess;
    case cudaMemPoolAttrReservedMemCurrent:
    case cudaMemPoolAttrUsedMemCurrent:
      *static_cast<std::uint64_t*>(value) = pool->used;
      return cudaSuccess;
    case cudaMemPoolAttrReservedMemHigh:
      *static_cast<std::uint64_t*>(value) = pool->reserved_high;
      return cudaSuccess;
    case cudaMemPoolAttrUsedMemHigh:
      *static_cast<std::uint64_t*>(value) = pool->used_high;
      return cudaSuccess;
    default:
      return Fail(cudaErrorInvalidValue);
  }
}
MYRIAD_EXPORT cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned flags) {
  // Pinned host memory is real memory the program reads and writes.
  if (!ptr) return Fail(cudaErrorInvalidValue);
  if (::posix_memalign(ptr, 4096, bytes ? bytes : 1) != 0) return Fail(cudaErrorMemoryAllocation);
  shim::HostMemory::Get().Add(
      *ptr, {bytes, shim::HostMemory::Kind::kPinned, shim::CurrentDevice(), flags});
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaMallocHost(void** ptr, size_t bytes) {
  return cudaHostAlloc(ptr, bytes, cudaHostAllocDefault);
}
MYRIAD_EXPORT cudaError_t cudaFreeHost(void* p) {
  if (!p) return cudaSuccess;
  shim::HostMemory::Block block;
  if (!shim::HostMemory::Get().Find(p, &block) || block.kind != shim::HostMemory::Kind::kPinned ||
      !shim::HostMemory::Get().Remove(p, &block))
    return Fail(cudaErrorInvalidValue);
  std::free(p);
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaHostRegister(void* p, size_t bytes, unsigned flags) {
  if (!p || bytes == 0) return Fail(cudaErrorInvalidValue);
  shim::HostMemory::Block block;
  if (shim::HostMemory::Get().Find(p, &block)) return Fail(cudaErrorHostMemoryAlreadyRegistered);
  shim::HostMemory::Get().Add(
      p, {bytes, shim::HostMemory::Kind::kRegistered, shim::CurrentDevice(), flags});
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaHostUnregister(void* p) {
  shim::HostMemory::Block block;
  if (!p || !shim::HostMemory::Get().Find(p, &block) ||
      block.kind != shim::HostMemory::Kind::kRegistered ||
      !shim::HostMemory::Get().Remove(p, &block))
    return Fail(cudaErrorHostMemoryNotRegistered);
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaHostGetDevicePointer(void** device, void* host, unsigned flags) {
  shim::HostMemory::Block block;
  if (!device || flags != 0) return Fail(cudaErrorInvalidValue);
  if (!shim::HostMemory::Get().Find(host, &block)) return Fail(cudaErrorInvalidValue);
  *device = host;  // unified addressing: the same address on the device
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaHostGetFlags(unsigned* flags, void* host) {
  shim::HostMemory::Block block;
  if (!flags || !shim::HostMemory::Get().Find(host, &block)) return Fail(cudaErrorInvalidValue);
  *flags = block.flags;
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaMallocManaged(void** ptr, size_t bytes, unsigned flags) {
  // Managed memory is host-accessible: real memory, counted against the device too.
  if (!ptr || bytes == 0) return Fail(cudaErrorInvalidValue);
  if (::posix_memalign(ptr, 4096, bytes) != 0) return Fail(cudaErrorMemoryAllocation);
  shim::HostMemory::Get().Add(
      *ptr, {bytes, shim::HostMemory::Kind::kManaged, shim::CurrentDevice(), flags});
  shim::DeviceMemory::Get().Count(shim::CurrentDevice(), bytes, true);
  wire::WireOp op = shim::Op(shim::kMalloc);
  op.bytes = bytes;
  return Fail(static_cast<cudaError_t>(shim::Submit(op)));
}
MYRIAD_EXPORT cudaError_t cudaMemAdvise(const void* p, size_t, cudaMemoryAdvise, cudaMemLocation) {
  shim::HostMemory::Block block;
  if (!shim::HostMemory::Get().Find(p, &block) || block.kind != shim::HostMemory::Kind::kManaged)
    return Fail(cudaErrorInvalidValue);
  return cudaSuccess;  // advice changes where pages live; Myriad keeps no pages
}
// A prefetch moves the pages: timed as a copy of `bytes` to the device (or back to the host).
MYRIAD_EXPORT cudaError_t cudaMemPrefetchAsync(const void* p, size_t bytes,
                                               cudaMemLocation location, unsigned,
                                               cudaStream_t stream) {
  shim::HostMemory::Block block;
  if (!shim::HostMemory::Get().Find(p, &block) || block.kind != shim::HostMemory::Kind::kManaged)
    return Fail(cudaErrorInvalidValue);
  int device = 0;
  std::int32_t id = 0;
  if (!shim::Resolve(stream, &device, &id)) return Fail(cudaErrorInvalidResourceHandle);
  if (bytes == 0) return cudaSuccess;
  wire::WireOp op = shim::Op(shim::kMemcpy, id);
  op.bytes = bytes;
  op.copy_kind = location.type == cudaMemLocationTypeDevice ? shim::kH2D : shim::kD2H;
  op.flags = wire::kAsync;
  return Fail(static_cast<cudaError_t>(shim::Submit(op, device)));
}
MYRIAD_EXPORT cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind k) {
  return shim::Copy(dst, src, bytes, shim::KindOf(dst, src, k), nullptr, false);
}
MYRIAD_EXPORT cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes,
                                          cudaMemcpyKind k, cudaStream_t stream) {
  return shim::Copy(dst, src, bytes, shim::KindOf(dst, src, k), stream, true);
}
MYRIAD_EXPORT cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch,
                                       size_t width, size_t height, cudaMemcpyKind k) {
  return shim::Copy2D(dst, dpitch, src, spitch, width, height, k, nullptr, false);
}
MYRIAD_EXPORT cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src,
                                            size_t spitch, size_t width, size_t height,
                                            cudaMemcpyKind k, cudaStream_t stream) {
  return shim::Copy2D(dst, dpitch, src, spitch, width, height, k, stream, true);
}
MYRIAD_EXPORT cudaError_t cudaMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
  if (!ptr || !pitch) return Fail(cudaErrorInvalidValue);
  // Rows aligned as the device's texture pitch alignment (cudaDevAttrTexturePitchAlignment).
  constexpr size_t kPitchAlignment = 512;
  *pitch = (std::max<size_t>(width, 1) + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment;
  if (height > 0 && *pitch > std::numeric_limits<size_t>::max() / height)
    return Fail(cudaErrorMemoryAllocation);
  return shim::Allocate(ptr, *pitch * height);
}
MYRIAD_EXPORT cudaError_t cudaGetSymbolAddress(void** address, const void* symbol) {
  if (!address) return Fail(cudaErrorInvalidValue);
  size_t size = 0;
  return Fail(shim::SymbolAddress(symbol, address, &size));
}
MYRIAD_EXPORT cudaError_t cudaGetSymbolSize(size_t* size, const void* symbol) {
  if (!size) return Fail(cudaErrorInvalidValue);
  void* address = nullptr;
  return Fail(shim::SymbolAddress(symbol, &address, size));
}
MYRIAD_EXPORT cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count,
                                                  size_t offset, cudaMemcpyKind k,
                                                  cudaStream_t stream) {
  char* at = nullptr;
  if (const cudaError_t e = shim::SymbolRange(symbol, count, offset, &at); e != cudaSuccess)
    return Fail(e);
  return shim::Copy(at, src, count, shim::KindOf(at, src, k), stream, true);
}
MYRIAD_EXPORT cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count,
                                             size_t offset, cudaMemcpyKind k) {
  char* at = nullptr;
  if (const cudaError_t e = shim::SymbolRange(symbol, count, offset, &at); e != cudaSuccess)
    return Fail(e);
  return shim::Copy(at, src, count, shim::KindOf(at, src, k), nullptr, false);
}
MYRIAD_EXPORT cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count,
                                                    size_t offset, cudaMemcpyKind k,
                                                    cudaStream_t stream) {
  char* at = nullptr;
  if (const cudaError_t e = shim::SymbolRange(symbol, count, offset, &at); e != cudaSuccess)
    return Fail(e);
  return shim::Copy(dst, at, count, shim::KindOf(dst, at, k), stream, true);
}
MYRIAD_EXPORT cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count,
                                               size_t offset, cudaMemcpyKind k) {
  char* at = nullptr;
  if (const cudaError_t e = shim::SymbolRange(symbol, count, offset, &at); e != cudaSuccess)
    return Fail(e);
  return shim::Copy(dst, at, count, shim::KindOf(dst, at, k), nullptr, false);
}
MYRIAD_EXPORT cudaError_t cudaMemcpyPeer(void* dst, int, const void* src, int, size_t bytes) {
  return shim::Copy(dst, src, bytes, shim::kPeer, nullptr, false);
}
MYRIAD_EXPORT cudaError_t cudaMemcpyPeerAsync(void* dst, int, const void* src, int, size_t bytes,
                                              cudaStream_t stream) {
  return shim::Copy(dst, src, bytes, shim::kPeer, stream, true);
}
MYRIAD_EXPORT cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  return shim::Set(dst, static_cast<unsigned>(value), 1, bytes, nullptr, false);
}
MYRIAD_EXPORT cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream) {
  return shim::Set(dst, static_cast<unsigned>(value), 1, bytes, stream, true);
}
MYRIAD_EXPORT cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p) {
  if (!a) return Fail(cudaErrorInvalidValue);
  std::memset(a, 0, sizeof(*a));
  const bool device = shim::DeviceMemory::Get().Contains(p);
  shim::HostMemory::Block host;
  const bool known_host = !device && shim::HostMemory::Get().Find(p, &host);
  a->type = device                                          ? cudaMemoryTypeDevice
            : !known_host                                   ? cudaMemoryTypeUnregistered
            : host.kind == shim::HostMemory::Kind::kManaged ? cudaMemoryTypeManaged
                                                            : cudaMemoryTypeHost;
  a->device = known_host ? host.device : shim::CurrentDevice();
  a->devicePointer = device || known_host ? const_cast<void*>(p) : nullptr;
  a->hostPointer = known_host ? const_cast<void*>(p) : nullptr;
  return cudaSuccess;
}

// ---- Streams ----
MYRIAD_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned flags,
                                                       int priority) {
  if (!stream) return Fail(cudaErrorInvalidValue);
  auto* h = new shim::StreamHandle();
  h->device = shim::CurrentDevice();
  h->flags = flags;
  h->priority = priority;
  {
    std::lock_guard<std::mutex> lock(shim::ids_mu);
    h->id = shim::next_stream_id++;
  }
  wire::WireOp op = shim::Op(shim::kStreamCreate, h->id);
  op.priority = priority;
  if (flags & cudaStreamNonBlocking) op.flags = wire::kNonBlocking;
  *stream = reinterpret_cast<cudaStream_t>(h);
  return Fail(static_cast<cudaError_t>(shim::Submit(op, h->device)));
}
MYRIAD_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  return cudaStreamCreateWithPriority(stream, flags, 0);
}
MYRIAD_EXPORT cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return cudaStreamCreateWithPriority(stream, cudaStreamDefault, 0);
}
MYRIAD_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  int device = 0;
  std::int32_t id = 0;
  if (!stream || !shim::Resolve(stream, &device, &id)) return Fail(cudaErrorInvalidResourceHandle);
  // The engine keeps the stream: work already enqueued still runs, as CUDA guarantees.
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaStreamGetPriority(cudaStream_t stream, int* priority) {
  if (!priority) return Fail(cudaErrorInvalidValue);
  const auto value = reinterpret_cast<std::uintptr_t>(stream);
  auto* h = reinterpret_cast<shim::StreamHandle*>(stream);
  *priority = value > shim::kPerThreadHandle && h->magic == shim::kStreamMagic ? h->priority : 0;
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  int device = 0;
  std::int32_t id = 0;
  if (!shim::Resolve(stream, &device, &id)) return Fail(cudaErrorInvalidResourceHandle);
  return Fail(
      static_cast<cudaError_t>(shim::Call(shim::Op(shim::kStreamSync, id), device, nullptr)));
}
MYRIAD_EXPORT cudaError_t cudaStreamQuery(cudaStream_t stream) {
  int device = 0;
  std::int32_t id = 0;
  if (!shim::Resolve(stream, &device, &id)) return Fail(cudaErrorInvalidResourceHandle);
  wire::Reply reply;
  wire::WireOp op = shim::Op(static_cast<std::uint8_t>(wire::WireKind::kStreamQuery), id);
  if (const int e = shim::Call(op, device, &reply); e != cudaSuccess)
    return Fail(static_cast<cudaError_t>(e));
  return reply.value ? cudaSuccess : cudaErrorNotReady;  // not-ready is not a sticky error
}
MYRIAD_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  int device = 0;
  std::int32_t id = 0;
  shim::EventHandle* e = shim::AsEvent(event);
  if (!e || !shim::Resolve(stream, &device, &id)) return Fail(cudaErrorInvalidResourceHandle);
  wire::WireOp op = shim::Op(shim::kStreamWaitEvent, id);
  op.event = e->id;
  return Fail(static_cast<cudaError_t>(shim::Submit(op, device)));
}

// ---- Events ----
MYRIAD_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
  if (!event) return Fail(cudaErrorInvalidValue);
  auto* h = new shim::EventHandle();
  h->device = shim::CurrentDevice();
  h->flags = flags;
  std::lock_guard<std::mutex> lock(shim::ids_mu);
  h->id = shim::next_event_id++;
  *event = reinterpret_cast<cudaEvent_t>(h);
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}
MYRIAD_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (!shim::AsEvent(event)) return Fail(cudaErrorInvalidResourceHandle);
  return cudaSuccess;  // the handle stays valid memory: a late use is harmless
}
MYRIAD_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  int device = 0;
  std::int32_t id = 0;
  shim::EventHandle* e = shim::AsEvent(event);
  if (!e || !shim::Resolve(stream, &device, &id)) return Fail(cudaErrorInvalidResourceHandle);
  wire::WireOp op = shim::Op(shim::kEventRecord, id);
  op.event = e->id;
  return Fail(static_cast<cudaError_t>(shim::Submit(op, device)));
}
MYRIAD_EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                                   unsigned) {
  return cudaEventRecord(event, stream);
}
MYRIAD_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  shim::EventHandle* e = shim::AsEvent(event);
  if (!e) return Fail(cudaErrorInvalidResourceHandle);
  wire::WireOp op = shim::Op(shim::kEventSync);
  op.event = e->id;
  return Fail(static_cast<cudaError_t>(shim::Call(op, e->device, nullptr)));
}
MYRIAD_EXPORT cudaError_t cudaEventQuery(cudaEvent_t event) {
  shim::EventHandle* e = shim::AsEvent(event);
  if (!e) return Fail(cudaErrorInvalidResourceHandle);
  wire::WireOp op = shim::Op(shim::kEventQuery);
  op.event = e->id;
  wire::Reply reply;
  if (const int err = shim::Call(op, e->device, &reply); err != cudaSuccess)
    return Fail(static_cast<cudaError_t>(err));
  return reply.value ? cudaSuccess : cudaErrorNotReady;
}
MYRIAD_EXPORT cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  shim::EventHandle* a = shim::AsEvent(start);
  shim::EventHandle* b = shim::AsEvent(end);
  if (!ms) return Fail(cudaErrorInvalidValue);
  if (!a || !b) return Fail(cudaErrorInvalidResourceHandle);
  wire::WireOp op = shim::Op(static_cast<std::uint8_t>(wire::WireKind::kEventElapsed));
  op.event = a->id;
  op.event2 = b->id;
  wire::Reply reply;
  if (const int err = shim::Call(op, a->device, &reply); err != cudaSuccess)
    return Fail(static_cast<cudaError_t>(err));
  *ms = static_cast<float>(static_cast<double>(reply.value) / 1e9);  // picoseconds -> ms
  return cudaSuccess;
}

// ---- Kernels ----
MYRIAD_EXPORT void** __cudaRegisterFatBinary(void* fat_cubin) {
  // Any distinct handle works: Myriad never loads device code.
  return static_cast<void**>(fat_cubin);
}
MYRIAD_EXPORT void __cudaRegisterFatBinaryEnd(void**) {}
MYRIAD_EXPORT void __cudaUnregisterFatBinary(void**) {}
MYRIAD_EXPORT char __cudaInitModule(void**) { return 1; }
MYRIAD_EXPORT void __cudaRegisterFunction(void**, const char* host_function, char* device_function,
                                          const char*, int, uint3*, uint3*, dim3*, dim3*, int*) {
  std::lock_guard<std::mutex> lock(shim::kernels_mu);
  auto*& record = shim::Kernels()[host_function];
  if (!record)
    record = new shim::KernelRecord(device_function ? device_function : "kernel");
  else
    record->name = device_function ? device_function : record->name;
}
MYRIAD_EXPORT void __cudaRegisterVar(void**, char* host_var, char*, const char*, int, size_t size,
                                     int, int) {
  std::lock_guard<std::mutex> lock(shim::symbols_mu);
  shim::Symbols()[host_var].size = size;
}
MYRIAD_EXPORT void __cudaRegisterManagedVar(void**, void**, char*, const char*, int, size_t, int,
                                            int) {}
MYRIAD_EXPORT cudaError_t __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared,
                                                      void* stream) {
  shim::pushed_configuration = {grid, block, shared, static_cast<cudaStream_t>(stream)};
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared,
                                                     void* stream) {
  *grid = shim::pushed_configuration.grid;
  *block = shim::pushed_configuration.block;
  *shared = shim::pushed_configuration.shared;
  *static_cast<cudaStream_t*>(stream) = shim::pushed_configuration.stream;
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* host_function) {
  if (!kernel) return Fail(cudaErrorInvalidValue);
  *kernel = reinterpret_cast<cudaKernel_t>(shim::KernelFor(host_function));
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block,
                                             void** args, size_t shared, cudaStream_t stream) {
  if (!kernel) return Fail(cudaErrorInvalidResourceHandle);
  return shim::Launch(reinterpret_cast<shim::KernelRecord*>(kernel), grid, block, args, shared,
                      stream, false);
}
MYRIAD_EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block,
                                                  void** args, size_t shared, cudaStream_t stream) {
  if (!kernel) return Fail(cudaErrorInvalidResourceHandle);
  return shim::Launch(reinterpret_cast<shim::KernelRecord*>(kernel), grid, block, args, shared,
                      stream, true);
}
MYRIAD_EXPORT cudaError_t cudaLaunchKernel(const void* function, dim3 grid, dim3 block, void** args,
                                           size_t shared, cudaStream_t stream) {
  return shim::Launch(shim::KernelFor(function), grid, block, args, shared, stream, false);
}
MYRIAD_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config,
                                              const void* function, void** args) {
  if (!config) return Fail(cudaErrorInvalidValue);
  return shim::Launch(shim::KernelFor(function), config->gridDim, config->blockDim, args,
                      config->dynamicSmemBytes, config->stream, false);
}
MYRIAD_EXPORT cudaError_t cudaFuncSetAttribute(const void*, cudaFuncAttribute, int) {
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, const void*) {
  if (!a) return Fail(cudaErrorInvalidValue);
  std::memset(a, 0, sizeof(*a));
  a->maxThreadsPerBlock = 1024;
  a->numRegs = 32;
  a->ptxVersion = a->binaryVersion = 90;
  a->maxDynamicSharedSizeBytes = 48 * 1024;
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void*,
                                                                        int block_size, size_t) {
  if (!blocks || block_size <= 0) return Fail(cudaErrorInvalidValue);
  *blocks = std::max(1, 2048 / block_size);
  return cudaSuccess;
}

MYRIAD_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int* blocks, const void* function, int block_size, size_t shared, unsigned) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, function, block_size, shared);
}

// ---- CUDA graphs: stream capture records ops; each launch replays them ----
// A graph (and its executable form) is the captured ops, with their streams and the events
// between them: a launch sends the capture's own stream's ops onto the launch stream and each
// other stream's onto a stream of the instantiation's, so the captured branches run side by
// side, joined where the capture joined them.
}  // extern "C"

// User objects (cudaUserObjectCreate): a destructor and a count of references, owned by the
// program and by graphs (a graph's instantiations hold copies of the graph's). The destructor
// runs when the last reference goes, on a thread of the shim's own, as CUDA runs it on an
// internal thread (it may call no CUDA API): PyTorch lets go of one while holding the lock
// its destructor takes.
struct CUuserObject_st {
  std::uint32_t magic = 0x4a424f4d;  // "MOBJ"
  void* ptr = nullptr;
  cudaHostFn_t destroy = nullptr;
  std::atomic<long long> references{0};
};
using UserReferences = std::map<cudaUserObject_t, long long>;  // object -> references held

namespace {

void RetainUser(cudaUserObject_t object, long long count) { object->references += count; }
void ReleaseUser(cudaUserObject_t object, long long count) {
  if ((object->references -= count) > 0) return;
  const cudaHostFn_t destroy = object->destroy;
  void* ptr = object->ptr;
  object->magic = 0;
  delete object;
  if (destroy) shim::RunDetached(destroy, ptr);
}
void ReleaseAll(const UserReferences& held) {
  for (const auto& [object, count] : held) ReleaseUser(object, count);
}
bool IsUserObject(cudaUserObject_t object) { return object && object->magic == 0x4a424f4d; }

}  // namespace

struct CUgraph_st {
  std::uint32_t magic = 0x4850524d;  // "MRPH"
  std::vector<shim::CapturedOp> ops;
  UserReferences user_objects;
  int device = 0;
  std::int32_t origin = 0;  // the stream whose capture made it
};
struct CUgraphExec_st {
  std::uint32_t magic = 0x5845524d;  // "MREX"
  std::vector<shim::CapturedOp> ops;
  UserReferences user_objects;
  int device = 0;
  std::int32_t origin = 0;
  // A launch runs the ops of each other stream that joined the capture on a stream of the
  // instantiation's own, and the captured events between them as events of its own (created
  // at the first launch): the graph's branches run side by side, as CUDA runs a graph's
  // independent nodes, and the program's streams and events are left alone.
  std::mutex mu;
  std::map<std::int32_t, std::int32_t> streams;  // captured stream -> the instantiation's
  std::map<std::int32_t, std::int32_t> events;   // event recorded in the capture -> its own
};

namespace {

// The graph each capture in progress builds, by (device, stream): cudaStreamGetCaptureInfo
// hands it out (PyTorch retains user objects on it) and cudaStreamEndCapture returns it.
std::mutex capture_graphs_mu;
std::map<std::pair<int, std::int32_t>, cudaGraph_t>& CaptureGraphs() {
  static auto* graphs = new std::map<std::pair<int, std::int32_t>, cudaGraph_t>();
  return *graphs;
}
cudaGraph_t TakeCaptureGraph(int device, std::int32_t stream) {
  std::lock_guard<std::mutex> lock(capture_graphs_mu);
  auto it = CaptureGraphs().find({device, stream});
  if (it == CaptureGraphs().end()) return nullptr;
  cudaGraph_t g = it->second;
  CaptureGraphs().erase(it);
  return g;
}

}  // namespace

extern "C" {

MYRIAD_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
  int device = 0;
  std::int32_t id = 0;
  if (!shim::Resolve(stream, &device, &id)) return Fail(cudaErrorInvalidResourceHandle);
  // The legacy default stream cannot be captured (CUDA says the same).
  if (id == shim::kLegacyStreamId) return Fail(cudaErrorStreamCaptureUnsupported);
  if (!shim::BeginCapture(device, id)) return Fail(cudaErrorIllegalState);
  std::lock_guard<std::mutex> lock(capture_graphs_mu);
  CaptureGraphs()[{device, id}] = new CUgraph_st();
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  int device = 0;
  std::int32_t id = 0;
  if (!graph) return Fail(cudaErrorInvalidValue);
  if (!shim::Resolve(stream, &device, &id)) return Fail(cudaErrorInvalidResourceHandle);
  cudaGraph_t g = TakeCaptureGraph(device, id);
  if (!g) g = new CUgraph_st();
  if (!shim::EndCapture(device, id, &g->ops)) {
    ReleaseAll(g->user_objects);
    delete g;
    return Fail(cudaErrorIllegalState);
  }
  g->device = device;
  g->origin = id;
  *graph = g;
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                                cudaStreamCaptureStatus* status) {
  int device = 0;
  std::int32_t id = 0;
  if (!status) return Fail(cudaErrorInvalidValue);
  if (!shim::Resolve(stream, &device, &id)) return Fail(cudaErrorInvalidResourceHandle);
  *status =
      shim::IsCapturing(device, id) ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  return mode ? cudaSuccess : Fail(cudaErrorInvalidValue);
}
MYRIAD_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                               unsigned long long) {
  if (!exec || !graph || graph->magic != 0x4850524d) return Fail(cudaErrorInvalidValue);
  auto* e = new CUgraphExec_st();
  e->ops = graph->ops;
  e->device = graph->device;
  e->origin = graph->origin;
  // An instantiation holds its own copy of each of the graph's references.
  e->user_objects = graph->user_objects;
  for (const auto& [object, count] : e->user_objects) RetainUser(object, count);
  *exec = e;
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph,
                                                        unsigned long long flags) {
  return cudaGraphInstantiate(exec, graph, flags);
}
MYRIAD_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  int device = 0;
  std::int32_t id = 0;
  if (!exec || exec->magic != 0x5845524d) return Fail(cudaErrorInvalidValue);
  if (!shim::Resolve(stream, &device, &id)) return Fail(cudaErrorInvalidResourceHandle);
  std::lock_guard<std::mutex> launching(exec->mu);  // one launch of an instantiation at a time
  if (exec->streams.empty()) {
    for (const shim::CapturedOp& c : exec->ops) {
      if (c.op.kind == shim::kEventRecord && !exec->events.count(c.op.event)) {
        std::lock_guard<std::mutex> lock(shim::ids_mu);
        exec->events[c.op.event] = shim::next_event_id++;
      }
      if (c.op.stream == exec->origin || exec->streams.count(c.op.stream)) continue;
      std::int32_t own = 0;
      {
        std::lock_guard<std::mutex> lock(shim::ids_mu);
        own = shim::next_stream_id++;
      }
      wire::WireOp create = shim::Op(shim::kStreamCreate, own);
      create.flags = wire::kNonBlocking;
      if (const int e = shim::Submit(create, device); e != cudaSuccess)
        return Fail(static_cast<cudaError_t>(e));
      exec->streams[c.op.stream] = own;
    }
    exec->streams[exec->origin] = -1;  // marks the instantiation's streams as made
  }
  for (const shim::CapturedOp& c : exec->ops) {
    wire::WireOp op = c.op;
    // The capture's own stream is the launch stream; the others, the instantiation's.
    const std::int32_t own = exec->streams[c.op.stream];
    op.stream = c.op.stream == exec->origin ? id : own;
    // A wait on an event recorded before the capture keeps the program's event.
    if (op.kind == shim::kEventRecord || op.kind == shim::kStreamWaitEvent) {
      const auto event = exec->events.find(c.op.event);
      if (event != exec->events.end()) op.event = event->second;
    }
    op.name = c.name.empty() ? 0 : shim::Intern(c.name);
    op.comm = c.comm.empty() ? 0 : shim::Intern(c.comm);
    if (const int e = shim::Submit(op, device); e != cudaSuccess)
      return Fail(static_cast<cudaError_t>(e));
  }
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  if (!exec || exec->magic != 0x5845524d) return Fail(cudaErrorInvalidValue);
  const UserReferences held = std::move(exec->user_objects);
  exec->magic = 0;
  delete exec;
  ReleaseAll(held);  // its launches were enqueued already: nothing on the GPU waits for them
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  if (!graph || graph->magic != 0x4850524d) return Fail(cudaErrorInvalidValue);
  const UserReferences held = std::move(graph->user_objects);
  graph->magic = 0;
  delete graph;
  ReleaseAll(held);
  return cudaSuccess;
}

MYRIAD_EXPORT cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream,
                                                   cudaStreamCaptureStatus* status,
                                                   unsigned long long* id, cudaGraph_t* graph,
                                                   const cudaGraphNode_t** dependencies,
                                                   const cudaGraphEdgeData** edges, size_t* count) {
  int device = 0;
  std::int32_t stream_id = 0;
  if (!status) return Fail(cudaErrorInvalidValue);
  if (!shim::Resolve(stream, &device, &stream_id)) return Fail(cudaErrorInvalidResourceHandle);
  // A stream that joined a capture (by waiting on an event recorded in it) is part of the
  // capture its origin stream began: the same id and graph (PyTorch keys its NCCL work by them).
  int origin_device = device;
  std::int32_t origin_stream = stream_id;
  const bool capturing = shim::CaptureOrigin(device, stream_id, &origin_device, &origin_stream);
  *status = capturing ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  // One capture per origin stream at a time: (device, stream) names it.
  if (id)
    *id = capturing ? (static_cast<unsigned long long>(origin_device) << 32 |
                       static_cast<std::uint32_t>(origin_stream)) +
                          1
                    : 0;
  if (graph) {  // the graph being built (its ops arrive at the capture's end)
    std::lock_guard<std::mutex> lock(capture_graphs_mu);
    const auto it = CaptureGraphs().find({origin_device, origin_stream});
    *graph = capturing && it != CaptureGraphs().end() ? it->second : nullptr;
  }
  if (dependencies) *dependencies = nullptr;
  if (edges) *edges = nullptr;
  if (count) *count = 0;
  return cudaSuccess;
}
// A captured graph's nodes are its ops, in capture order.
MYRIAD_EXPORT cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes,
                                            size_t* count) {
  if (!graph || graph->magic != 0x4850524d || !count) return Fail(cudaErrorInvalidValue);
  if (nodes) {
    const std::size_t n = std::min(*count, graph->ops.size());
    for (std::size_t i = 0; i < n; ++i)
      nodes[i] = reinterpret_cast<cudaGraphNode_t>(&graph->ops[i]);
  }
  *count = graph->ops.size();
  return cudaSuccess;
}

MYRIAD_EXPORT cudaError_t cudaUserObjectCreate(cudaUserObject_t* object_out, void* ptr,
                                               cudaHostFn_t destroy, unsigned initial_references,
                                               unsigned flags) {
  // cudaUserObjectNoDestructorSync is required, and the only flag.
  if (!object_out || !destroy || initial_references == 0 || flags != cudaUserObjectNoDestructorSync)
    return Fail(cudaErrorInvalidValue);
  auto* object = new CUuserObject_st();
  object->ptr = ptr;
  object->destroy = destroy;
  object->references = initial_references;
  *object_out = object;
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaUserObjectRetain(cudaUserObject_t object, unsigned count) {
  if (!IsUserObject(object) || count == 0) return Fail(cudaErrorInvalidValue);
  RetainUser(object, count);
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaUserObjectRelease(cudaUserObject_t object, unsigned count) {
  if (!IsUserObject(object) || count == 0) return Fail(cudaErrorInvalidValue);
  ReleaseUser(object, count);
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t object,
                                                    unsigned count, unsigned flags) {
  if (!graph || graph->magic != 0x4850524d || !IsUserObject(object) || count == 0 ||
      (flags & ~static_cast<unsigned>(cudaGraphUserObjectMove)) != 0)
    return Fail(cudaErrorInvalidValue);
  // Move: the caller's references become the graph's; else the graph takes new ones.
  if ((flags & cudaGraphUserObjectMove) == 0) RetainUser(object, count);
  graph->user_objects[object] += count;
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaGraphReleaseUserObject(cudaGraph_t graph, cudaUserObject_t object,
                                                     unsigned count) {
  if (!graph || graph->magic != 0x4850524d || !IsUserObject(object) || count == 0)
    return Fail(cudaErrorInvalidValue);
  auto it = graph->user_objects.find(object);
  if (it == graph->user_objects.end() || it->second < count) return Fail(cudaErrorInvalidValue);
  if ((it->second -= count) == 0) graph->user_objects.erase(it);
  ReleaseUser(object, count);
  return cudaSuccess;
}

// ---- Host functions on a stream: run at enqueue (nothing on the device changes memory, so
// what they see is what they would see at their turn); they take no stream time ----
MYRIAD_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* data) {
  int device = 0;
  std::int32_t id = 0;
  if (!fn) return Fail(cudaErrorInvalidValue);
  if (!shim::Resolve(stream, &device, &id)) return Fail(cudaErrorInvalidResourceHandle);
  fn(data);
  return cudaSuccess;
}
MYRIAD_EXPORT cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t fn,
                                                void* data, unsigned flags) {
  int device = 0;
  std::int32_t id = 0;
  if (!fn || flags != 0) return Fail(cudaErrorInvalidValue);
  if (!shim::Resolve(stream, &device, &id)) return Fail(cudaErrorInvalidResourceHandle);
  fn(stream, cudaSuccess, data);
  return cudaSuccess;
}

// ---- Profiler ranges: markers in the timeline ----
MYRIAD_EXPORT cudaError_t cudaProfilerStart() {
  wire::WireOp op = shim::Op(shim::kMarker);
  op.name = shim::Intern("profiler_start");
  return Fail(static_cast<cudaError_t>(shim::Submit(op)));
}
MYRIAD_EXPORT cudaError_t cudaProfilerStop() {
  wire::WireOp op = shim::Op(shim::kMarker);
  op.name = shim::Intern("profiler_stop");
  return Fail(static_cast<cudaError_t>(shim::Submit(op)));
}

}  // extern "C"
