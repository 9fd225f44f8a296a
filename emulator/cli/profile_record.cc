// `myriad profile record -- PROGRAM`: meant to run the program natively on this machine's real
// GPU and write its kernels' profile. What exists: the check for a GPU; the recorder is not
// built yet (docs/kernel-timing.md, "Importing a profile").
#include <dlfcn.h>
#include <fmt/format.h>

#include <ostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "myriad/status.h"

namespace myriad::cli {
namespace {

// The NVIDIA driver's device count through its own library (not Myriad's shim, which is
// never on this process's library path); an error when there is no driver or no device.
Result<int> RealDeviceCount() {
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr)
    return Status::NotFound(
        "no NVIDIA GPU here: the NVIDIA driver (libcuda.so.1) is not installed, and recording "
        "times kernels on a real GPU");
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  const auto init = reinterpret_cast<InitFn>(::dlsym(driver, "cuInit"));
  const auto count = reinterpret_cast<CountFn>(::dlsym(driver, "cuDeviceGetCount"));
  int devices = 0;
  const int rc = init == nullptr || count == nullptr ? -1 : init(0);
  if (rc == 0) count(&devices);
  if (rc != 0 || devices == 0)
    return Status::NotFound(fmt::format(
        "no NVIDIA GPU here: the driver finds no CUDA device (cuInit returned {})", rc));
  return devices;
}

}  // namespace

int RecordProfile(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  (void)out;
  auto devices = RealDeviceCount();
  if (!devices.ok()) {
    err << "myriad profile record: " << devices.status().message() << "\n";
    return kExitBadInput;
  }
  (void)args;
  err << "myriad profile record: found " << *devices
      << " GPU(s), but recording is not implemented yet: record a PyTorch profiler trace or an "
         "Nsight Systems export and use `myriad profile import` (docs/kernel-timing.md)\n";
  return kExitBadInput;
}

}  // namespace myriad::cli
