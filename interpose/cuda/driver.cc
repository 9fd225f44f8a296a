// The driver API (libcuda.so.1) on Myriad's virtual devices, for programs and libraries that
// call it beside the runtime: PyTorch (primary contexts, the VMM calls of its expandable
// segments, stream memory ops, cuGetProcAddress for its driver entry points), Triton and NVRTC
// users (modules, functions, cuLaunchKernel). Everything is built on the runtime shim beside
// it: a device is the runtime's device, the primary context of a device is the runtime's
// state on it, and a launch through the driver is the same op as one through the runtime,
// named by the function's name.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/client_api.h"
#include "common/export.h"
#include "common/unsupported.h"
#include "cuda/cubin.h"

// The runtime's internal launch entry (cudart shim), which takes a kernel handle.
extern "C" cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                          size_t shared, cudaStream_t stream);

namespace myriad::shim {
namespace {

// The runtime's stream handle for the per-thread default stream (cudaStreamPerThread).
const auto kPerThreadStream = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x2});

CUresult FromRuntime(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return CUDA_SUCCESS;
    case cudaErrorInvalidValue:
      return CUDA_ERROR_INVALID_VALUE;
    case cudaErrorMemoryAllocation:
      return CUDA_ERROR_OUT_OF_MEMORY;
    case cudaErrorInvalidDevice:
      return CUDA_ERROR_INVALID_DEVICE;
    case cudaErrorNoDevice:
      return CUDA_ERROR_NO_DEVICE;
    case cudaErrorInvalidResourceHandle:
      return CUDA_ERROR_INVALID_HANDLE;
    case cudaErrorNotReady:
      return CUDA_ERROR_NOT_READY;
    case cudaErrorStreamCaptureUnsupported:
      return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    case cudaErrorIllegalState:
      return CUDA_ERROR_ILLEGAL_STATE;
    case cudaErrorNotSupported:
      return CUDA_ERROR_NOT_SUPPORTED;
    default:
      return CUDA_ERROR_UNKNOWN;
  }
}

const ClientTable* Runtime() {
  const ClientTable* t = Client();
  return t && t->version >= 4 ? t : nullptr;
}

// Runs `f` with `device` as the calling thread's current device, then restores the previous one.
template <typename F>
void OnDevice(int device, F&& f) {
  int previous = 0;
  cudaGetDevice(&previous);
  cudaSetDevice(device);
  f();
  cudaSetDevice(previous);
}

int DeviceCount() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}
bool ValidDevice(CUdevice d) { return d >= 0 && d < DeviceCount(); }

// --- Contexts: one primary context per device; the runtime's current device is the current
// context's. Non-primary contexts are not supported.
struct Context {
  std::uint32_t magic = 0x5854434d;  // "MCTX"
  int device = 0;
};
Context* PrimaryContext(int device) {
  static std::mutex mu;
  static auto* contexts = new std::vector<Context*>();
  std::lock_guard<std::mutex> lock(mu);
  const auto d = static_cast<std::size_t>(device);
  if (d >= contexts->size()) contexts->resize(d + 1, nullptr);
  if (!(*contexts)[d]) (*contexts)[d] = new Context{0x5854434d, device};
  return (*contexts)[d];
}
Context* AsContext(CUcontext c) {
  auto* ctx = reinterpret_cast<Context*>(c);
  return ctx && ctx->magic == 0x5854434d ? ctx : nullptr;
}
// The thread's context stack (cuCtxPushCurrent); empty: the runtime's device, once used.
thread_local std::vector<Context*> context_stack;
thread_local bool context_cleared = false;  // cuCtxSetCurrent(nullptr)

Context* CurrentContext() {
  if (!context_stack.empty()) return context_stack.back();
  if (context_cleared) return nullptr;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return nullptr;
  const ClientTable* t = Runtime();
  return t && t->device_active(device) ? PrimaryContext(device) : nullptr;
}
void MakeCurrent(Context* ctx) {
  if (ctx) cudaSetDevice(ctx->device);
}

// --- Modules and functions: only their names matter (they name the kernels' timings).
struct Function {
  std::uint32_t magic = 0x434e464d;  // "MFNC"
  std::string name;
  void* kernel = nullptr;  // the runtime's handle for the name
  int max_dynamic_shared = 48 * 1024;
};
struct Module {
  std::uint32_t magic = 0x444f4d4d;  // "MMOD"
  std::map<std::string, Function*, std::less<>> functions;
  CubinLayouts layouts;  // from a cubin image: its kernels' parameters
  int id = 0;            // Myriad's id for its code (ClientTable::module_file), 0: none
};

// Cubins a program loads are small (Triton's: kilobytes to a few MB); a file larger than this
// is not read for its kernels' parameters.
constexpr std::size_t kMaxCubinBytes = std::size_t{256} << 20;

// A module of `image` (a cubin, a fatbin or PTX text; only a cubin's layouts are read).
Module* NewModule(const void* image) {
  auto* m = new Module();
  const auto* bytes = static_cast<const unsigned char*>(image);
  if (const std::size_t size = CubinImageSize(bytes, kMaxCubinBytes); size > 0) {
    m->layouts = ReadCubinLayouts(bytes, size);
    // Its kernels' code, when the cubin carries its PTX (Triton's own launcher loads its
    // cubins from memory): there is no file for Myriad to read it from.
    const std::string ptx = CubinPtx(bytes, size);
    const ClientTable* t = Runtime();
    if (!ptx.empty() && t && t->version >= 7) {
      const int id = t->module_ptx(ptx.data(), ptx.size());
      if (t->version >= 8) m->id = id;
    }
  }
  return m;
}

// A module loaded from a file: its cubin's layouts, and Myriad told where its code is.
Module* ModuleFromFile(const char* path) {
  std::string data;
  if (FILE* f = std::fopen(path, "rb")) {
    char buffer[1 << 16];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0 && data.size() <= kMaxCubinBytes)
      data.append(buffer, n);
    std::fclose(f);
  }
  auto* m = new Module();
  if (!data.empty() && data.size() <= kMaxCubinBytes) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
    m->layouts = ReadCubinLayouts(bytes, CubinImageSize(bytes, data.size()));
  }
  const ClientTable* t = Runtime();
  char* absolute = ::realpath(path, nullptr);
  if (t && t->version >= 7 && absolute) {
    const int id = t->module_file(absolute);
    if (t->version >= 8) m->id = id;
  }
  std::free(absolute);
  return m;
}
std::mutex modules_mu;

Function* AsFunction(const void* f) {
  auto* fn = static_cast<Function*>(const_cast<void*>(f));
  return fn && fn->magic == 0x434e464d ? fn : nullptr;
}
Module* AsModule(const void* m) {
  auto* mod = static_cast<Module*>(const_cast<void*>(m));
  return mod && mod->magic == 0x444f4d4d ? mod : nullptr;
}
Function* FunctionIn(Module* m, const char* name) {
  std::lock_guard<std::mutex> lock(modules_mu);
  auto it = m->functions.find(std::string_view(name));
  if (it != m->functions.end()) return it->second;
  const ClientTable* t = Runtime();
  // Its own module's handle where Myriad has the module's code: another module may hold a
  // kernel of the same name (Triton's autotuning variants) that does other work.
  void* kernel = !t                             ? nullptr
                 : t->version >= 8 && m->id > 0 ? t->kernel_in_module(name, m->id)
                                                : t->kernel_named(name);
  auto* f = new Function{0x434e464d, name, kernel, 48 * 1024};
  m->functions.emplace(name, f);
  // Its parameters from the cubin, for its launches to report their arguments by.
  if (auto layout = m->layouts.find(std::string_view(name));
      layout != m->layouts.end() && t && t->version >= 7 && f->kernel) {
    std::vector<std::uint16_t> sizes;
    for (const CubinParam& p : layout->second) sizes.push_back(p.size);
    t->kernel_params(f->kernel, sizes.data(), static_cast<int>(sizes.size()));
  }
  return f;
}

CUresult Launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                unsigned bz, unsigned shared, CUstream stream, void** params, bool per_thread) {
  Function* fn = AsFunction(f);
  if (!fn || !fn->kernel) return CUDA_ERROR_INVALID_HANDLE;
  if (per_thread && stream == nullptr) stream = kPerThreadStream;
  return FromRuntime(__cudaLaunchKernel(static_cast<cudaKernel_t>(fn->kernel), dim3(gx, gy, gz),
                                        dim3(bx, by, bz), params, shared, stream));
}

// --- Virtual memory management: physical allocations are counted as device memory; mapping
// them into a reserved range makes nothing new (the range is already host memory).
struct Allocation {
  int device = 0;
  std::size_t bytes = 0;
};
std::mutex vmm_mu;
std::map<CUmemGenericAllocationHandle, Allocation>& Allocations() {
  static auto* allocations = new std::map<CUmemGenericAllocationHandle, Allocation>();
  return *allocations;
}
CUmemGenericAllocationHandle next_allocation = 1;
// The VMM granularity of NVIDIA's data-centre GPUs (cuMemGetAllocationGranularity: 2 MiB).
constexpr std::size_t kGranularity = std::size_t{2} << 20;

// --- cuGetProcAddress: the generated table of which export answers which version.
struct ProcAddress {
  const char* name;
  int version;
  int per_thread;
  const char* symbol;
};
constexpr ProcAddress kProcAddresses[] = {
#include "cuda/generated/proc_address.inc"
};

void* OwnHandle() {
  static void* self = [] {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&OwnHandle), &info) == 0 || !info.dli_fname)
      return static_cast<void*>(nullptr);
    return ::dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  }();
  return self;
}

CUresult ProcAddressOf(const char* symbol, void** pfn, int version, cuuint64_t flags,
                       CUdriverProcAddressQueryResult* status) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const ProcAddress* best = nullptr;
  const ProcAddress* best_per_thread = nullptr;
  bool known = false;
  for (const ProcAddress& p : kProcAddresses) {
    if (std::strcmp(p.name, symbol) != 0) continue;
    known = true;
    if (p.version > version) continue;
    (p.per_thread ? best_per_thread : best) = &p;
  }
  const ProcAddress* chosen = per_thread && best_per_thread ? best_per_thread : best;
  if (!chosen) {
    if (status)
      *status =
          known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  void* self = OwnHandle();
  *pfn = self ? ::dlsym(self, chosen->symbol) : nullptr;
  if (status) *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

const char* ErrorName(CUresult e) {
  switch (e) {
    case CUDA_SUCCESS:
      return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE:
      return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_FILE_NOT_FOUND:
      return "CUDA_ERROR_FILE_NOT_FOUND";
    case CUDA_ERROR_OUT_OF_MEMORY:
      return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED:
      return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_NO_DEVICE:
      return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_INVALID_DEVICE:
      return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_INVALID_CONTEXT:
      return "CUDA_ERROR_INVALID_CONTEXT";
    case CUDA_ERROR_INVALID_HANDLE:
      return "CUDA_ERROR_INVALID_HANDLE";
    case CUDA_ERROR_NOT_FOUND:
      return "CUDA_ERROR_NOT_FOUND";
    case CUDA_ERROR_NOT_READY:
      return "CUDA_ERROR_NOT_READY";
    case CUDA_ERROR_ILLEGAL_STATE:
      return "CUDA_ERROR_ILLEGAL_STATE";
    case CUDA_ERROR_NOT_SUPPORTED:
      return "CUDA_ERROR_NOT_SUPPORTED";
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
      return "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
    default:
      return "CUDA_ERROR_UNKNOWN";
  }
}
const char* ErrorString(CUresult e) {
  switch (e) {
    case CUDA_SUCCESS:
      return "no error";
    case CUDA_ERROR_INVALID_VALUE:
      return "invalid argument";
    case CUDA_ERROR_OUT_OF_MEMORY:
      return "out of memory";
    case CUDA_ERROR_NOT_INITIALIZED:
      return "initialization error";
    case CUDA_ERROR_NO_DEVICE:
      return "no CUDA-capable device is detected";
    case CUDA_ERROR_INVALID_DEVICE:
      return "invalid device ordinal";
    case CUDA_ERROR_INVALID_CONTEXT:
      return "invalid device context";
    case CUDA_ERROR_INVALID_HANDLE:
      return "invalid resource handle";
    case CUDA_ERROR_NOT_FOUND:
      return "named symbol not found";
    case CUDA_ERROR_FILE_NOT_FOUND:
      return "file not found";
    case CUDA_ERROR_NOT_READY:
      return "device not ready";
    case CUDA_ERROR_NOT_SUPPORTED:
      return "operation not supported (by Myriad)";
    default:
      return "unknown error";
  }
}

}  // namespace
}  // namespace myriad::shim

namespace shim = myriad::shim;

extern "C" {

// ---- Initialisation, versions, errors ----
MYRIAD_EXPORT CUresult cuInit(unsigned) { return CUDA_SUCCESS; }
MYRIAD_EXPORT CUresult cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;  // the toolkit's headers the shim was built with
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuGetErrorString(CUresult e, const char** out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  *out = shim::ErrorString(e);
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuGetErrorName(CUresult e, const char** out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  *out = shim::ErrorName(e);
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                           cuuint64_t flags,
                                           CUdriverProcAddressQueryResult* status) {
  return shim::ProcAddressOf(symbol, pfn, version, flags, status);
}
// The CUDA 11.3 form, without the status.
MYRIAD_EXPORT CUresult myriad_cuGetProcAddress_v1(const char* symbol, void** pfn, int version,
                                                  cuuint64_t flags) __asm__("cuGetProcAddress");
MYRIAD_EXPORT CUresult myriad_cuGetProcAddress_v1(const char* symbol, void** pfn, int version,
                                                  cuuint64_t flags) {
  return shim::ProcAddressOf(symbol, pfn, version, flags, nullptr);
}
// The driver's private tables serve a CUDA runtime linked into a library: such a library
// would run its own device code on a GPU Myriad does not have. Say which one, and stop.
MYRIAD_EXPORT CUresult cuGetExportTable(const void** table, const CUuuid*) {
  Dl_info info{};
  const char* who = ::dladdr(__builtin_return_address(0), &info) && info.dli_fname
                        ? info.dli_fname
                        : "a library of the program";
  std::fprintf(stderr,
               "myriad: %s uses its own (statically linked) CUDA runtime, which Myriad cannot "
               "intercept: it needs a real GPU (rebuild it with -cudart shared)\n",
               who);
  std::fflush(stderr);
  if (table) *table = nullptr;
  std::_Exit(2);
}

// ---- Devices ----
MYRIAD_EXPORT CUresult cuDeviceGetCount(int* count) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = shim::DeviceCount();
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (!shim::ValidDevice(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuDeviceGetName(char* name, int length, CUdevice device) {
  cudaDeviceProp p;
  if (!name || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, static_cast<std::size_t>(length), "%s", p.name);
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice device) {
  cudaDeviceProp p;
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = p.totalGlobalMem;
  return CUDA_SUCCESS;
}
// The driver's attribute numbers are the runtime's (cudaDevAttr* = CU_DEVICE_ATTRIBUTE_*).
MYRIAD_EXPORT CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute,
                                            CUdevice device) {
  return shim::FromRuntime(
      cudaDeviceGetAttribute(value, static_cast<cudaDeviceAttr>(attribute), device));
}
MYRIAD_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice device) {
  cudaDeviceProp p;
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) return CUDA_ERROR_INVALID_DEVICE;
  std::memcpy(uuid->bytes, p.uuid.bytes, sizeof(uuid->bytes));
  return CUDA_SUCCESS;
}
// cuda.h spells the current versions without their suffix (cuDeviceGetUuid is cuDeviceGetUuid_v2
// there): the unsuffixed exports, the older ABI, are named through asm labels.
MYRIAD_EXPORT CUresult myriad_cuDeviceGetUuid_v1(CUuuid* uuid,
                                                 CUdevice device) __asm__("cuDeviceGetUuid");
MYRIAD_EXPORT CUresult myriad_cuDeviceGetUuid_v1(CUuuid* uuid, CUdevice device) {
  return cuDeviceGetUuid_v2(uuid, device);
}
MYRIAD_EXPORT CUresult cuDeviceGetPCIBusId(char* id, int length, CUdevice device) {
  return shim::FromRuntime(cudaDeviceGetPCIBusId(id, length, device));
}
MYRIAD_EXPORT CUresult cuDeviceCanAccessPeer(int* can, CUdevice device, CUdevice peer) {
  return shim::FromRuntime(cudaDeviceCanAccessPeer(can, device, peer));
}
MYRIAD_EXPORT CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice device) {
  cudaDeviceProp p;
  if (!major || !minor) return CUDA_ERROR_INVALID_VALUE;
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) return CUDA_ERROR_INVALID_DEVICE;
  *major = p.major;
  *minor = p.minor;
  return CUDA_SUCCESS;
}

// ---- The primary context ----
MYRIAD_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice device) {
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  if (!shim::ValidDevice(device)) return CUDA_ERROR_INVALID_DEVICE;
  shim::OnDevice(device, [] {});  // setting the device makes its primary context active
  *ctx = reinterpret_cast<CUcontext>(shim::PrimaryContext(device));
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
  return shim::ValidDevice(device) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
MYRIAD_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice device) {
  return shim::ValidDevice(device) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
MYRIAD_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice device, unsigned) {
  return shim::ValidDevice(device) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
MYRIAD_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice device, unsigned* flags, int* active) {
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  if (!shim::ValidDevice(device)) return CUDA_ERROR_INVALID_DEVICE;
  const myriad::shim::ClientTable* t = shim::Runtime();
  *flags = 0;
  *active = t && t->device_active(device) ? 1 : 0;
  return CUDA_SUCCESS;
}

// ---- Contexts ----
MYRIAD_EXPORT CUresult cuCtxGetCurrent(CUcontext* ctx) {
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  *ctx = reinterpret_cast<CUcontext>(shim::CurrentContext());
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  shim::Context* c = shim::AsContext(ctx);
  if (ctx && !c) return CUDA_ERROR_INVALID_CONTEXT;
  if (!shim::context_stack.empty()) shim::context_stack.pop_back();
  if (c) shim::context_stack.push_back(c);
  shim::context_cleared = c == nullptr && shim::context_stack.empty();
  shim::MakeCurrent(c);
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  shim::Context* c = shim::AsContext(ctx);
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  shim::context_stack.push_back(c);
  shim::MakeCurrent(c);
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext* ctx) {
  shim::Context* top = shim::CurrentContext();
  if (!top) return CUDA_ERROR_INVALID_CONTEXT;
  if (!shim::context_stack.empty()) shim::context_stack.pop_back();
  if (ctx) *ctx = reinterpret_cast<CUcontext>(top);
  shim::MakeCurrent(shim::CurrentContext());
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuCtxGetDevice(CUdevice* device) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  shim::Context* c = shim::CurrentContext();
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  *device = c->device;
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuCtxGetApiVersion(CUcontext, unsigned* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = 3020;  // the context API version every current driver reports
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuCtxGetFlags(unsigned* flags) {
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  *flags = 0;
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuCtxGetId(CUcontext ctx, unsigned long long* id) {
  shim::Context* c = ctx ? shim::AsContext(ctx) : shim::CurrentContext();
  if (!id) return CUDA_ERROR_INVALID_VALUE;
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  *id = static_cast<unsigned long long>(c->device) + 1;
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuCtxSynchronize() { return shim::FromRuntime(cudaDeviceSynchronize()); }

// ---- Memory ----
MYRIAD_EXPORT CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
  return shim::FromRuntime(cudaMemGetInfo(free_bytes, total));
}
MYRIAD_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes) {
  void* out = nullptr;
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  const cudaError_t e = cudaMalloc(&out, bytes);
  *p = reinterpret_cast<CUdeviceptr>(out);
  return shim::FromRuntime(e);
}
MYRIAD_EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  return shim::FromRuntime(cudaFree(reinterpret_cast<void*>(p)));
}
MYRIAD_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* p, size_t bytes, CUstream stream) {
  void* out = nullptr;
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  const cudaError_t e = cudaMallocAsync(&out, bytes, stream);
  *p = reinterpret_cast<CUdeviceptr>(out);
  return shim::FromRuntime(e);
}
MYRIAD_EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream stream) {
  return shim::FromRuntime(cudaFreeAsync(reinterpret_cast<void*>(p), stream));
}
MYRIAD_EXPORT CUresult cuMemAllocHost_v2(void** p, size_t bytes) {
  return shim::FromRuntime(cudaMallocHost(p, bytes));
}
MYRIAD_EXPORT CUresult cuMemHostAlloc(void** p, size_t bytes, unsigned flags) {
  return shim::FromRuntime(cudaHostAlloc(p, bytes, flags));
}
MYRIAD_EXPORT CUresult cuMemFreeHost(void* p) { return shim::FromRuntime(cudaFreeHost(p)); }
MYRIAD_EXPORT CUresult cuMemHostRegister_v2(void* p, size_t bytes, unsigned flags) {
  return shim::FromRuntime(cudaHostRegister(p, bytes, flags));
}
MYRIAD_EXPORT CUresult cuMemHostUnregister(void* p) {
  return shim::FromRuntime(cudaHostUnregister(p));
}
MYRIAD_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* bytes, CUdeviceptr p) {
  const myriad::shim::ClientTable* t = shim::Runtime();
  void* start = nullptr;
  std::size_t size = 0;
  if (!t || !t->address_range(reinterpret_cast<void*>(p), &start, &size))
    return CUDA_ERROR_NOT_FOUND;
  if (base) *base = reinterpret_cast<CUdeviceptr>(start);
  if (bytes) *bytes = size;
  return CUDA_SUCCESS;
}

// Copies: the driver's typed forms of cudaMemcpy (the runtime infers the direction).
MYRIAD_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return shim::FromRuntime(cudaMemcpy(
      reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes, cudaMemcpyDefault));
}
MYRIAD_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) {
  return shim::FromRuntime(cudaMemcpyAsync(reinterpret_cast<void*>(dst),
                                           reinterpret_cast<const void*>(src), bytes,
                                           cudaMemcpyDefault, s));
}
MYRIAD_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
  return shim::FromRuntime(
      cudaMemcpy(reinterpret_cast<void*>(dst), src, bytes, cudaMemcpyHostToDevice));
}
MYRIAD_EXPORT CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
  return shim::FromRuntime(
      cudaMemcpy(dst, reinterpret_cast<const void*>(src), bytes, cudaMemcpyDeviceToHost));
}
MYRIAD_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return shim::FromRuntime(cudaMemcpy(reinterpret_cast<void*>(dst),
                                      reinterpret_cast<const void*>(src), bytes,
                                      cudaMemcpyDeviceToDevice));
}
MYRIAD_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes,
                                            CUstream s) {
  return shim::FromRuntime(
      cudaMemcpyAsync(reinterpret_cast<void*>(dst), src, bytes, cudaMemcpyHostToDevice, s));
}
MYRIAD_EXPORT CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, CUstream s) {
  return shim::FromRuntime(
      cudaMemcpyAsync(dst, reinterpret_cast<const void*>(src), bytes, cudaMemcpyDeviceToHost, s));
}
MYRIAD_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                            CUstream s) {
  return shim::FromRuntime(cudaMemcpyAsync(reinterpret_cast<void*>(dst),
                                           reinterpret_cast<const void*>(src), bytes,
                                           cudaMemcpyDeviceToDevice, s));
}
MYRIAD_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n) {
  return shim::FromRuntime(cudaMemset(reinterpret_cast<void*>(dst), value, n));
}
MYRIAD_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream s) {
  return shim::FromRuntime(cudaMemsetAsync(reinterpret_cast<void*>(dst), value, n, s));
}

// ---- Streams and events: the runtime's ----
MYRIAD_EXPORT CUresult cuStreamCreate(CUstream* s, unsigned flags) {
  return shim::FromRuntime(cudaStreamCreateWithFlags(s, flags));
}
MYRIAD_EXPORT CUresult cuStreamCreateWithPriority(CUstream* s, unsigned flags, int priority) {
  return shim::FromRuntime(cudaStreamCreateWithPriority(s, flags, priority));
}
MYRIAD_EXPORT CUresult cuStreamDestroy_v2(CUstream s) {
  return shim::FromRuntime(cudaStreamDestroy(s));
}
MYRIAD_EXPORT CUresult cuStreamSynchronize(CUstream s) {
  return shim::FromRuntime(cudaStreamSynchronize(s));
}
MYRIAD_EXPORT CUresult cuStreamQuery(CUstream s) { return shim::FromRuntime(cudaStreamQuery(s)); }
MYRIAD_EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
  return shim::FromRuntime(cudaStreamWaitEvent(s, e, flags));
}
MYRIAD_EXPORT CUresult cuStreamGetCtx(CUstream, CUcontext* ctx) {
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  *ctx = reinterpret_cast<CUcontext>(shim::CurrentContext());
  return *ctx ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
MYRIAD_EXPORT CUresult cuEventCreate(CUevent* e, unsigned flags) {
  return shim::FromRuntime(cudaEventCreateWithFlags(e, flags));
}
MYRIAD_EXPORT CUresult cuEventDestroy_v2(CUevent e) {
  return shim::FromRuntime(cudaEventDestroy(e));
}
MYRIAD_EXPORT CUresult cuEventRecord(CUevent e, CUstream s) {
  return shim::FromRuntime(cudaEventRecord(e, s));
}
MYRIAD_EXPORT CUresult cuEventSynchronize(CUevent e) {
  return shim::FromRuntime(cudaEventSynchronize(e));
}
MYRIAD_EXPORT CUresult cuEventQuery(CUevent e) { return shim::FromRuntime(cudaEventQuery(e)); }
MYRIAD_EXPORT CUresult cuEventElapsedTime_v2(float* ms, CUevent a, CUevent b) {
  return shim::FromRuntime(cudaEventElapsedTime(ms, a, b));
}

// Stream memory ops write a word in stream order (PyTorch's symmetric-memory signals): a
// 4- or 8-byte memset on the stream, which writes the value now like every memset.
MYRIAD_EXPORT CUresult cuStreamWriteValue32_v2(CUstream s, CUdeviceptr p, cuuint32_t value,
                                               unsigned) {
  void* dst = reinterpret_cast<void*>(p);
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, dst) != cudaSuccess || a.type != cudaMemoryTypeDevice)
    return CUDA_ERROR_INVALID_VALUE;
  const cudaError_t e = cudaMemsetAsync(dst, 0, sizeof value, s);
  if (e == cudaSuccess) std::memcpy(dst, &value, sizeof value);
  return shim::FromRuntime(e);
}
MYRIAD_EXPORT CUresult myriad_cuStreamWriteValue32_v1(
    CUstream s, CUdeviceptr p, cuuint32_t value, unsigned flags) __asm__("cuStreamWriteValue32");
MYRIAD_EXPORT CUresult myriad_cuStreamWriteValue32_v1(CUstream s, CUdeviceptr p, cuuint32_t value,
                                                      unsigned flags) {
  return cuStreamWriteValue32_v2(s, p, value, flags);
}

// ---- Modules, libraries and functions: names, and a cubin's parameter layouts (Myriad never
// loads device code) ----
MYRIAD_EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
  *module = reinterpret_cast<CUmodule>(shim::NewModule(image));
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned,
                                          CUjit_option*, void**) {
  return cuModuleLoadData(module, image);
}
MYRIAD_EXPORT CUresult cuModuleLoad(CUmodule* module, const char* path) {
  if (!module || !path) return CUDA_ERROR_INVALID_VALUE;
  if (::access(path, R_OK) != 0) return CUDA_ERROR_FILE_NOT_FOUND;
  *module = reinterpret_cast<CUmodule>(shim::ModuleFromFile(path));
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuModuleUnload(CUmodule module) {
  return shim::AsModule(module) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
MYRIAD_EXPORT CUresult cuModuleGetFunction(CUfunction* f, CUmodule module, const char* name) {
  shim::Module* m = shim::AsModule(module);
  if (!f || !name) return CUDA_ERROR_INVALID_VALUE;
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  *f = reinterpret_cast<CUfunction>(shim::FunctionIn(m, name));
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option*,
                                         void**, unsigned, CUlibraryOption*, void**, unsigned) {
  if (!library || !code) return CUDA_ERROR_INVALID_VALUE;
  *library = reinterpret_cast<CUlibrary>(shim::NewModule(code));
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary* library, const char* path, CUjit_option* o,
                                             void** ov, unsigned n, CUlibraryOption* lo, void** lov,
                                             unsigned ln) {
  if (!library || !path) return CUDA_ERROR_INVALID_VALUE;
  if (::access(path, R_OK) != 0) return CUDA_ERROR_FILE_NOT_FOUND;
  (void)o, (void)ov, (void)n, (void)lo, (void)lov, (void)ln;
  *library = reinterpret_cast<CUlibrary>(shim::ModuleFromFile(path));
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuLibraryUnload(CUlibrary library) {
  return shim::AsModule(library) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
MYRIAD_EXPORT CUresult cuLibraryGetKernel(CUkernel* kernel, CUlibrary library, const char* name) {
  shim::Module* m = shim::AsModule(library);
  if (!kernel || !name) return CUDA_ERROR_INVALID_VALUE;
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  *kernel = reinterpret_cast<CUkernel>(shim::FunctionIn(m, name));
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuLibraryGetModule(CUmodule* module, CUlibrary library) {
  if (!module) return CUDA_ERROR_INVALID_VALUE;
  if (!shim::AsModule(library)) return CUDA_ERROR_INVALID_HANDLE;
  *module = reinterpret_cast<CUmodule>(library);
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuKernelGetFunction(CUfunction* f, CUkernel kernel) {
  if (!f) return CUDA_ERROR_INVALID_VALUE;
  if (!shim::AsFunction(kernel)) return CUDA_ERROR_INVALID_HANDLE;
  *f = reinterpret_cast<CUfunction>(kernel);
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuFuncGetName(const char** name, CUfunction f) {
  shim::Function* fn = shim::AsFunction(f);
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  if (!fn) return CUDA_ERROR_INVALID_HANDLE;
  *name = fn->name.c_str();
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuKernelGetName(const char** name, CUkernel k) {
  return cuFuncGetName(name, reinterpret_cast<CUfunction>(k));
}
// What a compiled kernel would report: Myriad has no binary, so these are the limits the
// launch is held to (a kernel asking for more than its attributes allow is refused by CUDA).
MYRIAD_EXPORT CUresult cuFuncGetAttribute(int* value, CUfunction_attribute attribute,
                                          CUfunction f) {
  shim::Function* fn = shim::AsFunction(f);
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  if (!fn) return CUDA_ERROR_INVALID_HANDLE;
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = 1024;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
      *value = 0;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      *value = 32;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: {
      cudaDeviceProp p;
      if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return CUDA_ERROR_INVALID_DEVICE;
      *value = p.major * 10 + p.minor;
      return CUDA_SUCCESS;
    }
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *value = fn->max_dynamic_shared;
      return CUDA_SUCCESS;
    default:
      return static_cast<CUresult>(myriad::shim::Unsupported("cuFuncGetAttribute (this attribute)",
                                                             myriad::shim::Library::kCuda));
  }
}
MYRIAD_EXPORT CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute attribute, int value) {
  shim::Function* fn = shim::AsFunction(f);
  if (!fn) return CUDA_ERROR_INVALID_HANDLE;
  if (attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) fn->max_dynamic_shared = value;
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuFuncSetCacheConfig(CUfunction f, CUfunc_cache) {
  return shim::AsFunction(f) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
MYRIAD_EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute attribute, int value,
                                            CUkernel kernel, CUdevice) {
  return cuFuncSetAttribute(reinterpret_cast<CUfunction>(kernel), attribute, value);
}
MYRIAD_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction f,
                                                                   int block_size, size_t) {
  if (!blocks || block_size <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!shim::AsFunction(f)) return CUDA_ERROR_INVALID_HANDLE;
  *blocks = std::max(1, 2048 / block_size);  // threads per SM over threads per block
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int* blocks, CUfunction f, int block_size, size_t shared, unsigned) {
  return cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, f, block_size, shared);
}

MYRIAD_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                      unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                      CUstream stream, void** params, void**) {
  return shim::Launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, false);
}
MYRIAD_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                           unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                           CUstream stream, void** params, void**) {
  return shim::Launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, true);
}
MYRIAD_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* c, CUfunction f, void** params,
                                        void**) {
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  return shim::Launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                      c->blockDimZ, c->sharedMemBytes, c->hStream, params, false);
}
MYRIAD_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* c, CUfunction f, void** params,
                                             void**) {
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  return shim::Launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                      c->blockDimZ, c->sharedMemBytes, c->hStream, params, true);
}

// ---- Pointer attributes ----
MYRIAD_EXPORT CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute,
                                             CUdeviceptr p) {
  cudaPointerAttributes a;
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  if (cudaPointerGetAttributes(&a, reinterpret_cast<void*>(p)) != cudaSuccess)
    return CUDA_ERROR_INVALID_VALUE;
  if (a.type == cudaMemoryTypeUnregistered) return CUDA_ERROR_INVALID_VALUE;
  const myriad::shim::ClientTable* t = shim::Runtime();
  void* base = nullptr;
  std::size_t bytes = 0;
  const bool ranged = t && t->address_range(reinterpret_cast<void*>(p), &base, &bytes);
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = reinterpret_cast<CUcontext>(shim::PrimaryContext(a.device));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned*>(data) =
          a.type == cudaMemoryTypeHost ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      *static_cast<CUdeviceptr*>(data) = reinterpret_cast<CUdeviceptr>(a.devicePointer);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      *static_cast<void**>(data) = a.hostPointer;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<unsigned*>(data) = a.type == cudaMemoryTypeManaged;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = a.device;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      if (!ranged) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<CUdeviceptr*>(data) = reinterpret_cast<CUdeviceptr>(base);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      if (!ranged) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<std::size_t*>(data) = bytes;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      *static_cast<unsigned*>(data) = 1;
      return CUDA_SUCCESS;
    default:
      return static_cast<CUresult>(myriad::shim::Unsupported(
          "cuPointerGetAttribute (this attribute)", myriad::shim::Library::kCuda));
  }
}
MYRIAD_EXPORT CUresult cuPointerGetAttributes(unsigned n, CUpointer_attribute* attributes,
                                              void** data, CUdeviceptr p) {
  if (!attributes || !data) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; ++i)
    if (const CUresult e = cuPointerGetAttribute(data[i], attributes[i], p); e != CUDA_SUCCESS)
      return e;
  return CUDA_SUCCESS;
}

// ---- Virtual memory management (PyTorch's expandable segments) ----
MYRIAD_EXPORT CUresult cuMemGetAllocationGranularity(size_t* granularity,
                                                     const CUmemAllocationProp* prop,
                                                     CUmemAllocationGranularity_flags) {
  if (!granularity || !prop) return CUDA_ERROR_INVALID_VALUE;
  *granularity = shim::kGranularity;
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuMemAddressReserve(CUdeviceptr* p, size_t bytes, size_t alignment,
                                           CUdeviceptr, unsigned long long) {
  const myriad::shim::ClientTable* t = shim::Runtime();
  if (!p || bytes == 0 || bytes % shim::kGranularity != 0) return CUDA_ERROR_INVALID_VALUE;
  if (!t) return CUDA_ERROR_NOT_INITIALIZED;
  void* range = t->reserve(bytes, std::max(alignment, shim::kGranularity));
  if (!range) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = reinterpret_cast<CUdeviceptr>(range);
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuMemAddressFree(CUdeviceptr p, size_t) {
  const myriad::shim::ClientTable* t = shim::Runtime();
  if (!t) return CUDA_ERROR_NOT_INITIALIZED;
  t->unreserve(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t bytes,
                                   const CUmemAllocationProp* prop, unsigned long long) {
  const myriad::shim::ClientTable* t = shim::Runtime();
  if (!handle || !prop || bytes == 0 || bytes % shim::kGranularity != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || !shim::ValidDevice(prop->location.id))
    return CUDA_ERROR_INVALID_DEVICE;
  if (!t) return CUDA_ERROR_NOT_INITIALIZED;
  size_t free_bytes = 0, total = 0;
  shim::OnDevice(prop->location.id, [&] { cudaMemGetInfo(&free_bytes, &total); });
  if (bytes > free_bytes) return CUDA_ERROR_OUT_OF_MEMORY;
  if (const int e = t->account(prop->location.id, static_cast<std::int64_t>(bytes)); e != 0)
    return shim::FromRuntime(static_cast<cudaError_t>(e));
  std::lock_guard<std::mutex> lock(shim::vmm_mu);
  *handle = shim::next_allocation++;
  shim::Allocations()[*handle] = {prop->location.id, bytes};
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  const myriad::shim::ClientTable* t = shim::Runtime();
  shim::Allocation a;
  {
    std::lock_guard<std::mutex> lock(shim::vmm_mu);
    auto it = shim::Allocations().find(handle);
    if (it == shim::Allocations().end()) return CUDA_ERROR_INVALID_VALUE;
    a = it->second;
    shim::Allocations().erase(it);
  }
  if (!t) return CUDA_ERROR_NOT_INITIALIZED;
  return shim::FromRuntime(
      static_cast<cudaError_t>(t->account(a.device, -static_cast<std::int64_t>(a.bytes))));
}
MYRIAD_EXPORT CUresult cuMemMap(CUdeviceptr p, size_t bytes, size_t offset,
                                CUmemGenericAllocationHandle handle, unsigned long long) {
  std::lock_guard<std::mutex> lock(shim::vmm_mu);
  auto it = shim::Allocations().find(handle);
  if (!p || it == shim::Allocations().end() || offset + bytes > it->second.bytes)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuMemUnmap(CUdeviceptr p, size_t bytes) {
  return p && bytes ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
MYRIAD_EXPORT CUresult cuMemSetAccess(CUdeviceptr p, size_t bytes, const CUmemAccessDesc* desc,
                                      size_t count) {
  return p && bytes && (desc || count == 0) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
MYRIAD_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                              CUmemGenericAllocationHandle h) {
  std::lock_guard<std::mutex> lock(shim::vmm_mu);
  auto it = shim::Allocations().find(h);
  if (!prop || it == shim::Allocations().end()) return CUDA_ERROR_INVALID_VALUE;
  std::memset(prop, 0, sizeof(*prop));
  prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop->location.id = it->second.device;
  return CUDA_SUCCESS;
}

}  // extern "C"

// ---- Driver logs (CUDA 12.9+): the virtual driver writes none ----
extern "C" {
MYRIAD_EXPORT CUresult cuLogsRegisterCallback(CUlogsCallback callback, void*,
                                              CUlogsCallbackHandle* handle) {
  if (!callback || !handle) return CUDA_ERROR_INVALID_VALUE;
  static int token;
  *handle = reinterpret_cast<CUlogsCallbackHandle>(&token);
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuLogsUnregisterCallback(CUlogsCallbackHandle handle) {
  return handle ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
MYRIAD_EXPORT CUresult cuLogsCurrent(CUlogIterator* iterator, unsigned) {
  if (!iterator) return CUDA_ERROR_INVALID_VALUE;
  *iterator = 0;
  return CUDA_SUCCESS;
}
MYRIAD_EXPORT CUresult cuLogsDumpToMemory(CUlogIterator*, char* buffer, size_t* size, unsigned) {
  if (!buffer || !size) return CUDA_ERROR_INVALID_VALUE;
  if (*size > 0) buffer[0] = '\0';
  *size = 0;
  return CUDA_SUCCESS;
}
}  // extern "C"
