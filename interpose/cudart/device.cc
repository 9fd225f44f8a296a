// What a virtual device says about itself: cudaGetDeviceProperties, every cudaDeviceGetAttribute,
// PCI bus ids. The scenario gives the GPU's name, memory, SM count and compute capability
// (MYRIAD_GPU_*); the limits that follow from the architecture come from the CUDA C++
// Programming Guide's table "Technical Specifications per Compute Capability", and the
// clocks, L2 and bus width from deviceQuery on the parts named below. An attribute Myriad
// does not know is an error, never a silent 0 (a 0 grid limit made cub loop forever).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

#include "common/export.h"
#include "common/unsupported.h"
#include "cudart/client.h"

namespace myriad::shim {
namespace {

// What differs between the architectures Myriad's scenarios use.
struct Architecture {
  int shared_per_block_optin;  // bytes
  int shared_per_sm;           // bytes
  int l2_bytes;
  int clock_khz;         // boost clock
  int memory_clock_khz;  // HBM
  int bus_width_bits;
  int max_blocks_per_sm;
  int persisting_l2_bytes;
};

// A100 SXM4 (8.0), H100 SXM5 / H200 (9.0), B200 (10.0).
Architecture ArchitectureOf(int major) {
  if (major >= 10) return {227 * 1024, 228 * 1024, 126 << 20, 1965000, 3996000, 8192, 32, 79 << 20};
  if (major == 9) return {227 * 1024, 228 * 1024, 50 << 20, 1980000, 2619000, 5120, 32, 30 << 20};
  return {163 * 1024, 164 * 1024, 40 << 20, 1410000, 1593000, 5120, 32, 30 << 20};
}

}  // namespace

// The UUID of a node's GPU: the same for every process on the node, distinct across the
// cluster ("MYRD", node, device).
cudaUUID_t DeviceUuid(int node, int node_device) {
  cudaUUID_t u{};
  const char tag[4] = {'M', 'Y', 'R', 'D'};
  std::memcpy(u.bytes, tag, 4);
  std::memcpy(u.bytes + 4, &node, 4);
  std::memcpy(u.bytes + 8, &node_device, 4);
  return u;
}

}  // namespace myriad::shim

namespace shim = myriad::shim;

extern "C" {

MYRIAD_EXPORT cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  const shim::Settings& s = shim::GetSettings();
  if (!p) return cudaErrorInvalidValue;
  if (device < 0 || device >= s.devices) return cudaErrorInvalidDevice;
  const shim::Architecture arch = shim::ArchitectureOf(s.gpu_major);
  const int node_device = s.node_device[static_cast<size_t>(device)];
  std::memset(p, 0, sizeof(*p));
  std::snprintf(p->name, sizeof(p->name), "%s", s.gpu_name.c_str());
  p->uuid = shim::DeviceUuid(s.node, node_device);
  p->totalGlobalMem = s.gpu_memory;
  p->multiProcessorCount = s.gpu_sms;
  p->major = s.gpu_major;
  p->minor = s.gpu_minor;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->sharedMemPerBlock = 48 * 1024;
  p->sharedMemPerBlockOptin = static_cast<size_t>(arch.shared_per_block_optin);
  p->sharedMemPerMultiprocessor = static_cast<size_t>(arch.shared_per_sm);
  p->reservedSharedMemPerBlock = 1024;
  p->regsPerBlock = p->regsPerMultiprocessor = 65536;
  p->maxThreadsPerMultiProcessor = 2048;
  p->maxBlocksPerMultiProcessor = arch.max_blocks_per_sm;
  p->l2CacheSize = arch.l2_bytes;
  p->persistingL2CacheMaxSize = arch.persisting_l2_bytes;
  p->accessPolicyMaxWindowSize = 128 << 20;
  p->memoryBusWidth = arch.bus_width_bits;
  p->totalConstMem = 64 * 1024;
  p->memPitch = 2147483647;
  p->textureAlignment = 512;
  p->texturePitchAlignment = 32;
  p->surfaceAlignment = 512;
  p->pciBusID = node_device;  // distinct per GPU of a node, as NCCL needs
  p->pciDeviceID = 0;
  p->pciDomainID = 0;
  p->concurrentKernels = 1;
  p->asyncEngineCount = 2;
  p->unifiedAddressing = 1;
  p->managedMemory = 1;
  p->concurrentManagedAccess = 1;
  p->canMapHostMemory = 1;
  p->ECCEnabled = 1;
  p->streamPrioritiesSupported = 1;
  p->globalL1CacheSupported = p->localL1CacheSupported = 1;
  p->hostNativeAtomicSupported = 0;
  p->computePreemptionSupported = 1;
  p->cooperativeLaunch = 1;
  p->hostRegisterSupported = 1;
  p->memoryPoolsSupported = 1;
  p->memoryPoolSupportedHandleTypes = 1;  // cudaMemHandleTypePosixFileDescriptor
  p->gpuDirectRDMASupported = 1;
  p->ipcEventSupported = 1;
  p->clusterLaunch = s.gpu_major >= 9;
  p->unifiedFunctionPointers = 1;
  p->deviceNumaId = p->hostNumaId = -1;
  return cudaSuccess;
}

MYRIAD_EXPORT cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  cudaDeviceProp p;
  if (!value) return cudaErrorInvalidValue;
  if (cudaError_t e = cudaGetDeviceProperties(&p, device); e != cudaSuccess) return e;
  const shim::Architecture arch = shim::ArchitectureOf(p.major);
  constexpr int kTexture1D = 131072, kTexture2D = 131072, kTexture3D = 16384;
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock:
      *value = p.maxThreadsPerBlock;
      break;
    case cudaDevAttrMaxBlockDimX:
    case cudaDevAttrMaxBlockDimY:
    case cudaDevAttrMaxBlockDimZ:
      *value = p.maxThreadsDim[attr - cudaDevAttrMaxBlockDimX];
      break;
    case cudaDevAttrMaxGridDimX:
    case cudaDevAttrMaxGridDimY:
    case cudaDevAttrMaxGridDimZ:
      *value = p.maxGridSize[attr - cudaDevAttrMaxGridDimX];
      break;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      *value = static_cast<int>(p.sharedMemPerBlock);
      break;
    case cudaDevAttrTotalConstantMemory:
      *value = static_cast<int>(p.totalConstMem);
      break;
    case cudaDevAttrWarpSize:
      *value = p.warpSize;
      break;
    case cudaDevAttrMaxPitch:
      *value = static_cast<int>(p.memPitch);
      break;
    case cudaDevAttrMaxRegistersPerBlock:
      *value = p.regsPerBlock;
      break;
    case cudaDevAttrClockRate:
      *value = arch.clock_khz;
      break;
    case cudaDevAttrTextureAlignment:
      *value = static_cast<int>(p.textureAlignment);
      break;
    case cudaDevAttrGpuOverlap:
    case cudaDevAttrConcurrentKernels:
    case cudaDevAttrUnifiedAddressing:
    case cudaDevAttrManagedMemory:
    case cudaDevAttrConcurrentManagedAccess:
    case cudaDevAttrCanMapHostMemory:
    case cudaDevAttrEccEnabled:
    case cudaDevAttrStreamPrioritiesSupported:
    case cudaDevAttrGlobalL1CacheSupported:
    case cudaDevAttrLocalL1CacheSupported:
    case cudaDevAttrComputePreemptionSupported:
    case cudaDevAttrCooperativeLaunch:
    case cudaDevAttrHostRegisterSupported:
    case cudaDevAttrHostRegisterReadOnlySupported:
    case cudaDevAttrMemoryPoolsSupported:
    case cudaDevAttrGPUDirectRDMASupported:
    case cudaDevAttrIpcEventSupport:
    case cudaDevAttrSparseCudaArraySupported:
    case cudaDevAttrDeferredMappingCudaArraySupported:
    case cudaDevAttrTimelineSemaphoreInteropSupported:
    case cudaDevAttrCanUseHostPointerForRegisteredMem:
      *value = 1;
      break;
    case cudaDevAttrKernelExecTimeout:
    case cudaDevAttrIntegrated:
    case cudaDevAttrComputeMode:  // cudaComputeModeDefault
    case cudaDevAttrTccDriver:
    case cudaDevAttrIsMultiGpuBoard:
    case cudaDevAttrMultiGpuBoardGroupID:
    case cudaDevAttrHostNativeAtomicSupported:
    case cudaDevAttrOnlyPartialHostNativeAtomicSupported:
    case cudaDevAttrPageableMemoryAccess:
    case cudaDevAttrPageableMemoryAccessUsesHostPageTables:
    case cudaDevAttrDirectManagedMemAccessFromHost:
    case cudaDevAttrCanFlushRemoteWrites:
    case cudaDevAttrPciDomainId:
    case cudaDevAttrPciDeviceId:
    case cudaDevAttrGpuPciDeviceId:
    case cudaDevAttrGpuPciSubsystemId:
    case cudaDevAttrNumaConfig:
    case cudaDevAttrMpsEnabled:
    case cudaDevAttrD3D12CigSupported:
    case cudaDevAttrVulkanCigSupported:
    case cudaDevAttrHostNumaMemoryPoolsSupported:
    case cudaDevAttrHostNumaMultinodeIpcSupported:
    case cudaDevAttrHostMemoryPoolsSupported:
    case cudaDevAttrGPUDirectRDMAWritesOrdering:
      *value = 0;
      break;
    case cudaDevAttrNumaId:
    case cudaDevAttrHostNumaId:
      *value = -1;
      break;
    case cudaDevAttrMultiProcessorCount:
      *value = p.multiProcessorCount;
      break;
    case cudaDevAttrMaxTexture1DWidth:
    case cudaDevAttrMaxTexture1DMipmappedWidth:
    case cudaDevAttrMaxTexture1DLinearWidth:
      *value = attr == cudaDevAttrMaxTexture1DLinearWidth ? 268435456 : kTexture1D;
      break;
    case cudaDevAttrMaxTexture2DWidth:
    case cudaDevAttrMaxTexture2DHeight:
    case cudaDevAttrMaxTexture2DMipmappedWidth:
    case cudaDevAttrMaxTexture2DMipmappedHeight:
    case cudaDevAttrMaxTexture2DLinearWidth:
    case cudaDevAttrMaxTexture2DLinearHeight:
      *value = kTexture2D;
      break;
    case cudaDevAttrMaxTexture2DLinearPitch:
      *value = 2097120;
      break;
    case cudaDevAttrMaxTexture2DGatherWidth:
    case cudaDevAttrMaxTexture2DGatherHeight:
      *value = 32768;
      break;
    case cudaDevAttrMaxTexture3DWidth:
    case cudaDevAttrMaxTexture3DHeight:
    case cudaDevAttrMaxTexture3DDepth:
      *value = kTexture3D;
      break;
    case cudaDevAttrMaxTexture3DWidthAlt:
    case cudaDevAttrMaxTexture3DHeightAlt:
      *value = 8192;
      break;
    case cudaDevAttrMaxTexture3DDepthAlt:
      *value = 32768;
      break;
    case cudaDevAttrMaxTexture2DLayeredWidth:
    case cudaDevAttrMaxTexture2DLayeredHeight:
      *value = 32768;
      break;
    case cudaDevAttrMaxTexture1DLayeredWidth:
      *value = 32768;
      break;
    case cudaDevAttrMaxTexture2DLayeredLayers:
    case cudaDevAttrMaxTexture1DLayeredLayers:
    case cudaDevAttrMaxTextureCubemapLayeredLayers:
    case cudaDevAttrMaxSurface1DLayeredLayers:
    case cudaDevAttrMaxSurface2DLayeredLayers:
    case cudaDevAttrMaxSurfaceCubemapLayeredLayers:
      *value = 2048;
      break;
    case cudaDevAttrMaxTextureCubemapWidth:
    case cudaDevAttrMaxTextureCubemapLayeredWidth:
    case cudaDevAttrMaxSurfaceCubemapWidth:
    case cudaDevAttrMaxSurfaceCubemapLayeredWidth:
      *value = 32768;
      break;
    case cudaDevAttrSurfaceAlignment:
      *value = static_cast<int>(p.surfaceAlignment);
      break;
    case cudaDevAttrMaxSurface1DWidth:
    case cudaDevAttrMaxSurface2DWidth:
    case cudaDevAttrMaxSurface1DLayeredWidth:
    case cudaDevAttrMaxSurface2DLayeredWidth:
      *value = 32768;
      break;
    case cudaDevAttrMaxSurface2DHeight:
    case cudaDevAttrMaxSurface2DLayeredHeight:
      *value = 65536;
      break;
    case cudaDevAttrMaxSurface3DWidth:
    case cudaDevAttrMaxSurface3DHeight:
    case cudaDevAttrMaxSurface3DDepth:
      *value = kTexture3D;
      break;
    case cudaDevAttrTexturePitchAlignment:
      *value = static_cast<int>(p.texturePitchAlignment);
      break;
    case cudaDevAttrPciBusId:
      *value = p.pciBusID;
      break;
    case cudaDevAttrMemoryClockRate:
      *value = arch.memory_clock_khz;
      break;
    case cudaDevAttrGlobalMemoryBusWidth:
      *value = p.memoryBusWidth;
      break;
    case cudaDevAttrL2CacheSize:
      *value = p.l2CacheSize;
      break;
    case cudaDevAttrMaxThreadsPerMultiProcessor:
      *value = p.maxThreadsPerMultiProcessor;
      break;
    case cudaDevAttrAsyncEngineCount:
      *value = p.asyncEngineCount;
      break;
    case cudaDevAttrComputeCapabilityMajor:
      *value = p.major;
      break;
    case cudaDevAttrComputeCapabilityMinor:
      *value = p.minor;
      break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor:
      *value = static_cast<int>(p.sharedMemPerMultiprocessor);
      break;
    case cudaDevAttrMaxRegistersPerMultiprocessor:
      *value = p.regsPerMultiprocessor;
      break;
    case cudaDevAttrSingleToDoublePrecisionPerfRatio:
      *value = 2;
      break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = static_cast<int>(p.sharedMemPerBlockOptin);
      break;
    case cudaDevAttrMaxBlocksPerMultiprocessor:
      *value = p.maxBlocksPerMultiProcessor;
      break;
    case cudaDevAttrMaxPersistingL2CacheSize:
      *value = p.persistingL2CacheMaxSize;
      break;
    case cudaDevAttrMaxAccessPolicyWindowSize:
      *value = p.accessPolicyMaxWindowSize;
      break;
    case cudaDevAttrReservedSharedMemoryPerBlock:
      *value = static_cast<int>(p.reservedSharedMemPerBlock);
      break;
    case cudaDevAttrGPUDirectRDMAFlushWritesOptions:
      *value = 1;  // cudaFlushGPUDirectRDMAWritesOptionHost
      break;
    case cudaDevAttrMemoryPoolSupportedHandleTypes:
      *value = static_cast<int>(p.memoryPoolSupportedHandleTypes);
      break;
    case cudaDevAttrClusterLaunch:
      *value = p.clusterLaunch;
      break;
    case cudaDevAttrMemSyncDomainCount:
      *value = p.major >= 9 ? 4 : 1;
      break;
    default: {
      // Reserved numbers and attributes newer than this table: say which, once.
      char name[64];
      std::snprintf(name, sizeof name, "cudaDeviceGetAttribute(attribute %d)",
                    static_cast<int>(attr));
      *value = 0;
      myriad::shim::Unsupported(name, myriad::shim::Library::kCudart);
      return cudaErrorInvalidValue;
    }
  }
  return cudaSuccess;
}

MYRIAD_EXPORT cudaError_t cudaDeviceGetPCIBusId(char* id, int length, int device) {
  cudaDeviceProp p;
  if (!id || length <= 0) return cudaErrorInvalidValue;
  if (cudaError_t e = cudaGetDeviceProperties(&p, device); e != cudaSuccess) return e;
  std::snprintf(id, static_cast<std::size_t>(length), "%08X:%02X:00.0", p.pciDomainID, p.pciBusID);
  return cudaSuccess;
}

MYRIAD_EXPORT cudaError_t cudaDeviceGetByPCIBusId(int* device, const char* id) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (!device || !id) return cudaErrorInvalidValue;
  if (std::sscanf(id, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return cudaErrorInvalidValue;
  const shim::Settings& s = shim::GetSettings();
  for (int d = 0; d < s.devices; ++d) {
    if (static_cast<unsigned>(s.node_device[static_cast<size_t>(d)]) == bus) {
      *device = d;
      return cudaSuccess;
    }
  }
  return cudaErrorInvalidDevice;
}

}  // extern "C"
