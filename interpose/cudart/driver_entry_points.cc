// cudaGetDriverEntryPoint[ByVersion]: the runtime's door to driver functions (PyTorch reaches
// cuMemCreate, cuStreamWriteValue32 and the other driver calls it needs through it). The
// answer is the driver shim's cuGetProcAddress, which picks the export for the version asked.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "common/export.h"

namespace {

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);

cudaError_t EntryPoint(const char* symbol, void** function, int version, unsigned long long flags,
                       cudaDriverEntryPointQueryResult* status) {
  if (!symbol || !function) return cudaErrorInvalidValue;
  // The driver shim is preloaded beside this one; found by name so neither links the other.
  static const auto get =
      reinterpret_cast<GetProcAddress>(::dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2"));
  if (!get) return cudaErrorNotSupported;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  const CUresult r = get(symbol, function, version, flags, &found);
  if (status) *status = static_cast<cudaDriverEntryPointQueryResult>(found);
  // A symbol that is not found is not an error of the call: the status says it.
  return r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_FOUND ? cudaSuccess : cudaErrorUnknown;
}

}  // namespace

extern "C" {

MYRIAD_EXPORT cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** function,
                                                  unsigned long long flags,
                                                  cudaDriverEntryPointQueryResult* status) {
  return EntryPoint(symbol, function, CUDART_VERSION, flags, status);
}
MYRIAD_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(
    const char* symbol, void** function, unsigned int version, unsigned long long flags,
    cudaDriverEntryPointQueryResult* status) {
  return EntryPoint(symbol, function, static_cast<int>(version), flags, status);
}

}  // extern "C"
