#include "common/unsupported.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_set>

namespace myriad::shim {
namespace {

std::atomic<void (*)(int)> g_cudart_last_error_hook{nullptr};

// Constant-initialised, so usable before any static constructor of this library has run.
std::mutex g_reported_mutex;

// Names already reported. Allocated on first use and never freed, so that a stub called from
// another library's static destructor after ours have run still finds it alive.
std::unordered_set<std::string>& Reported() {
  static auto* reported = new std::unordered_set<std::string>();
  return *reported;
}

// True the first time `name` is seen.
bool FirstReport(const char* name) {
  std::lock_guard<std::mutex> lock(g_reported_mutex);
  return Reported().insert(name).second;
}

// One write(2) for the whole line so that lines from several threads do not interleave, and so
// that it goes to file descriptor 2 whatever the application did to the stderr FILE*.
void WriteLine(const char* name, Library lib) {
  char line[512];
  int n =
      std::snprintf(line, sizeof line, "myriad: %s is not supported by Myriad yet (returning %s)\n",
                    name, NotSupportedName(lib));
  if (n <= 0) return;
  size_t left = static_cast<size_t>(n) < sizeof line ? static_cast<size_t>(n) : sizeof line - 1;
  const char* p = line;
  while (left > 0) {
    ssize_t written = ::write(STDERR_FILENO, p, left);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;
    p += written;
    left -= static_cast<size_t>(written);
  }
}

}  // namespace

namespace {

struct NotSupported {
  int code;
  const char* name;
};

// Each library's "not supported" code and its enumerator, from the library's own header.
NotSupported NotSupportedOf(Library lib) {
  switch (lib) {
    case Library::kCudart:
      return {801, "cudaErrorNotSupported"};
    case Library::kCuda:
      return {801, "CUDA_ERROR_NOT_SUPPORTED"};
    case Library::kCublas:
    case Library::kCublasLt:
      return {15, "CUBLAS_STATUS_NOT_SUPPORTED"};
    case Library::kNccl:
      return {5, "ncclInvalidUsage"};
    case Library::kNvml:
      return {3, "NVML_ERROR_NOT_SUPPORTED"};
    case Library::kCudnn:
      return {3000, "CUDNN_STATUS_NOT_SUPPORTED"};
    case Library::kCusparse:
    case Library::kCusparseLt:
      return {10, "CUSPARSE_STATUS_NOT_SUPPORTED"};
    case Library::kCufft:
      return {16, "CUFFT_NOT_SUPPORTED"};
    case Library::kCusolver:
      return {9, "CUSOLVER_STATUS_NOT_SUPPORTED"};
    case Library::kNvrtc:
      return {11, "NVRTC_ERROR_INTERNAL_ERROR"};
    case Library::kCupti:
      return {27, "CUPTI_ERROR_NOT_SUPPORTED"};
    case Library::kCufile:
      return {5007, "CU_FILE_PLATFORM_NOT_SUPPORTED"};
    case Library::kNvshmem:
      return {3, "NVSHMEMX_ERROR_NOT_SUPPORTED"};
  }
  return {1, "an error"};
}

}  // namespace

int NotSupportedCode(Library lib) { return NotSupportedOf(lib).code; }
const char* NotSupportedName(Library lib) { return NotSupportedOf(lib).name; }

int Unsupported(const char* name, Library lib) {
  if (name == nullptr) name = "(unnamed function)";
  if (FirstReport(name)) WriteLine(name, lib);
  int code = NotSupportedCode(lib);
  if (lib == Library::kCudart) {
    if (auto* hook = g_cudart_last_error_hook.load(std::memory_order_acquire)) hook(code);
  }
  return code;
}

void SetCudartLastErrorHook(void (*hook)(int error)) {
  g_cudart_last_error_hook.store(hook, std::memory_order_release);
}

}  // namespace myriad::shim
