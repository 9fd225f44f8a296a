// What a shim does when the application calls a function Myriad does not implement: it says
// so once per function, by name, on stderr, and returns the library's "not supported" error.
// Never a crash, never a silent success.
//
// This header is included by the generated interpose/<lib>/generated/unsupported.cc files,
// which declare every exported function with a non-standard signature (`int NAME()`), so it
// must not include any CUDA, cuBLAS or NCCL header.
#pragma once

namespace myriad::shim {

// The library a shim stands in for; it decides the error code and its name in the message.
enum class Library {
  kCudart,
  kCuda,
  kCublas,
  kCublasLt,
  kNccl,
  kNvml,
  kCudnn,
  kCusparse,
  kCufft,
  kCusolver,
  kNvrtc,
  kCupti,
  kCufile,
  kCusparseLt,
  kNvshmem,
};

// The value an unimplemented function of `lib` returns:
//   kCudart   cudaErrorNotSupported        801
//   kCuda     CUDA_ERROR_NOT_SUPPORTED     801
//   kCublas   CUBLAS_STATUS_NOT_SUPPORTED   15
//   kCublasLt CUBLAS_STATUS_NOT_SUPPORTED   15
//   kNccl     ncclInvalidUsage               5
//   kNvml     NVML_ERROR_NOT_SUPPORTED       3
//   kCudnn      CUDNN_STATUS_NOT_SUPPORTED         3000
//   kCusparse   CUSPARSE_STATUS_NOT_SUPPORTED        10
//   kCufft      CUFFT_NOT_SUPPORTED                  16
//   kCusolver   CUSOLVER_STATUS_NOT_SUPPORTED         9
//   kNvrtc      NVRTC_ERROR_INTERNAL_ERROR           11 (NVRTC has no "not supported")
//   kCupti      CUPTI_ERROR_NOT_SUPPORTED            27
//   kCufile     CU_FILE_PLATFORM_NOT_SUPPORTED     5007 (CUfileError_t.err; .cu_err is 0)
//   kCusparseLt CUSPARSE_STATUS_NOT_SUPPORTED        10
//   kNvshmem    NVSHMEMX_ERROR_NOT_SUPPORTED          3
int NotSupportedCode(Library lib);
// The enumerator's name, e.g. "cudaErrorNotSupported".
const char* NotSupportedName(Library lib);

// Reports that `name` (an exported function of `lib`) is not implemented: the first call for
// each name writes "myriad: NAME is not supported by Myriad yet (returning <error name>)" to
// stderr; every call for kCudart also invokes the last-error hook (if one is registered) with
// the code. Returns NotSupportedCode(lib). Thread-safe; callable at any time, including from
// static constructors and destructors.
int Unsupported(const char* name, Library lib);

// The CUDA runtime keeps a sticky per-thread "last error" that cudaGetLastError and
// cudaPeekAtLastError report. The cudart implementation registers its setter here so that
// unsupported cudart calls set it as the real runtime would. nullptr unregisters.
void SetCudartLastErrorHook(void (*hook)(int error));

}  // namespace myriad::shim
