// NVML's basics on the node's virtual GPUs: what PyTorch (device counts and UUIDs when
// CUDA_VISIBLE_DEVICES names UUIDs, memory in use), NCCL and monitoring code ask first. NVML
// sees every GPU of the node (MYRIAD_DEVICES), whatever CUDA_VISIBLE_DEVICES keeps, as on a
// real machine. The toolkit ships no nvml.h: the few types used are NVML's public ABI
// (nvml.h of the NVML API reference), spelled out here.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/export.h"

namespace {

using nvmlReturn_t = int;
constexpr nvmlReturn_t kSuccess = 0;                   // NVML_SUCCESS
constexpr nvmlReturn_t kInvalidArgument = 2;           // NVML_ERROR_INVALID_ARGUMENT
constexpr nvmlReturn_t kNotSupported = 3;              // NVML_ERROR_NOT_SUPPORTED
constexpr nvmlReturn_t kInsufficientSize = 7;          // NVML_ERROR_INSUFFICIENT_SIZE
constexpr nvmlReturn_t kNotFound = 6;                  // NVML_ERROR_NOT_FOUND
constexpr nvmlReturn_t kUninitialized = 1;             // NVML_ERROR_UNINITIALIZED
constexpr nvmlReturn_t kArgumentVersionMismatch = 25;  // NVML_ERROR_ARGUMENT_VERSION_MISMATCH

struct Device {
  unsigned index;
};
using nvmlDevice_t = Device*;

struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlMemory_v2_t {
  unsigned version;
  unsigned long long total, reserved, free, used;
};
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

unsigned EnvUnsigned(const char* name, unsigned fallback) {
  const char* v = std::getenv(name);
  return v && *v ? static_cast<unsigned>(std::strtoul(v, nullptr, 10)) : fallback;
}
unsigned Count() { return EnvUnsigned("MYRIAD_DEVICES", 1); }
int initialised = 0;

Device* DeviceAt(unsigned index) {
  static Device* devices = [] {
    auto* d = new Device[Count()];
    for (unsigned i = 0; i < Count(); ++i) d[i].index = i;
    return d;
  }();
  return index < Count() ? &devices[index] : nullptr;
}
bool Valid(nvmlDevice_t d) { return d && d >= DeviceAt(0) && d < DeviceAt(0) + Count(); }

void Uuid(unsigned index, char* out, unsigned length) {
  std::snprintf(out, length, "GPU-4d595244-%04x-%04x-0000-000000000000",
                EnvUnsigned("MYRIAD_NODE", 0) & 0xffff, index & 0xffff);
}

// This process's use of a device, as the runtime shim counts it (NVML would count every
// process's; the others' are not known here).
unsigned long long UsedBytes(unsigned index) {
  using GetInfo = cudaError_t (*)(size_t*, size_t*);
  using SetDevice = cudaError_t (*)(int);
  using GetDevice = cudaError_t (*)(int*);
  auto info = reinterpret_cast<GetInfo>(::dlsym(RTLD_DEFAULT, "cudaMemGetInfo"));
  auto set = reinterpret_cast<SetDevice>(::dlsym(RTLD_DEFAULT, "cudaSetDevice"));
  auto get = reinterpret_cast<GetDevice>(::dlsym(RTLD_DEFAULT, "cudaGetDevice"));
  if (!info || !set || !get) return 0;
  int previous = 0;
  size_t free_bytes = 0, total = 0;
  if (get(&previous) != cudaSuccess || set(static_cast<int>(index)) != cudaSuccess) return 0;
  info(&free_bytes, &total);
  set(previous);
  return total - free_bytes;
}

}  // namespace

extern "C" {

MYRIAD_EXPORT nvmlReturn_t nvmlInit_v2() {
  ++initialised;
  return kSuccess;
}
MYRIAD_EXPORT nvmlReturn_t nvmlInit() { return nvmlInit_v2(); }
MYRIAD_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned) { return nvmlInit_v2(); }
MYRIAD_EXPORT nvmlReturn_t nvmlShutdown() {
  if (initialised == 0) return kUninitialized;
  --initialised;
  return kSuccess;
}
MYRIAD_EXPORT const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case kSuccess:
      return "Success";
    case kUninitialized:
      return "Uninitialized";
    case kInvalidArgument:
      return "Invalid Argument";
    case kNotSupported:
      return "Not Supported (by Myriad)";
    case kNotFound:
      return "Not Found";
    case kInsufficientSize:
      return "Insufficient Size";
    default:
      return "Unknown Error";
  }
}
MYRIAD_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned length) {
  if (!version || length == 0) return kInvalidArgument;
  std::snprintf(version, length, "myriad-%d", CUDART_VERSION);
  return kSuccess;
}
MYRIAD_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) {
  if (!version) return kInvalidArgument;
  *version = CUDART_VERSION;
  return kSuccess;
}
MYRIAD_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  return nvmlSystemGetCudaDriverVersion(version);
}
MYRIAD_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  if (!count) return kInvalidArgument;
  *count = Count();
  return kSuccess;
}
MYRIAD_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned* count) {
  return nvmlDeviceGetCount_v2(count);
}
MYRIAD_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t* device) {
  if (!device || index >= Count()) return kInvalidArgument;
  *device = DeviceAt(index);
  return kSuccess;
}
MYRIAD_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned index, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}
MYRIAD_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  if (!uuid || !device) return kInvalidArgument;
  for (unsigned i = 0; i < Count(); ++i) {
    char own[96];
    Uuid(i, own, sizeof own);
    if (std::strcmp(own, uuid) == 0) {
      *device = DeviceAt(i);
      return kSuccess;
    }
  }
  return kNotFound;
}
// Bus ids as the runtime shim gives them ("00000000:BB:00.0", BB = the device's index).
MYRIAD_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* id, nvmlDevice_t* device) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (!id || !device) return kInvalidArgument;
  if (std::sscanf(id, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return kInvalidArgument;
  if (bus >= Count()) return kNotFound;
  *device = DeviceAt(bus);
  return kSuccess;
}
MYRIAD_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* id, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByPciBusId_v2(id, device);
}
MYRIAD_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned* index) {
  if (!Valid(device) || !index) return kInvalidArgument;
  *index = device->index;
  return kSuccess;
}
MYRIAD_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned* minor) {
  return nvmlDeviceGetIndex(device, minor);
}
MYRIAD_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned length) {
  if (!Valid(device) || !name || length == 0) return kInvalidArgument;
  const char* gpu = std::getenv("MYRIAD_GPU_NAME");
  const int n = std::snprintf(name, length, "%s", gpu && *gpu ? gpu : "NVIDIA H100 80GB HBM3");
  return n >= 0 && static_cast<unsigned>(n) < length ? kSuccess : kInsufficientSize;
}
MYRIAD_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned length) {
  if (!Valid(device) || !uuid) return kInvalidArgument;
  if (length < 41) return kInsufficientSize;  // NVML_DEVICE_UUID_BUFFER_SIZE is 80; 41 fit
  Uuid(device->index, uuid, length);
  return kSuccess;
}
MYRIAD_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  if (!Valid(device) || !pci) return kInvalidArgument;
  std::memset(pci, 0, sizeof(*pci));
  pci->bus = device->index;
  std::snprintf(pci->busId, sizeof(pci->busId), "%08X:%02X:00.0", 0u, device->index);
  std::snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:00.0", 0u, device->index);
  return kSuccess;
}
MYRIAD_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return nvmlDeviceGetPciInfo_v3(device, pci);
}
MYRIAD_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return nvmlDeviceGetPciInfo_v3(device, pci);
}
MYRIAD_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major,
                                                              int* minor) {
  if (!Valid(device) || !major || !minor) return kInvalidArgument;
  *major = static_cast<int>(EnvUnsigned("MYRIAD_GPU_MAJOR", 9));
  *minor = static_cast<int>(EnvUnsigned("MYRIAD_GPU_MINOR", 0));
  return kSuccess;
}
MYRIAD_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  if (!Valid(device) || !memory) return kInvalidArgument;
  const char* m = std::getenv("MYRIAD_GPU_MEMORY");
  memory->total = m && *m ? std::strtoull(m, nullptr, 10) : 80ull << 30;
  memory->used = UsedBytes(device->index);
  memory->free = memory->total - memory->used;
  return kSuccess;
}
MYRIAD_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
                                                      nvmlMemory_v2_t* memory) {
  if (!Valid(device) || !memory) return kInvalidArgument;
  // nvmlMemory_v2: NVML_STRUCT_VERSION(Memory, 2) = sizeof | 2 << 24.
  if (memory->version != (static_cast<unsigned>(sizeof(nvmlMemory_v2_t)) | (2u << 24)))
    return kArgumentVersionMismatch;
  nvmlMemory_t v1{};
  nvmlDeviceGetMemoryInfo(device, &v1);
  memory->total = v1.total;
  memory->reserved = 0;
  memory->free = v1.free;
  memory->used = v1.used;
  return kSuccess;
}

}  // extern "C"
