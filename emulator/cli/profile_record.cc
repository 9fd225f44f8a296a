// `myriad profile record [-o PROFILE.kdb] [--gpu KEY] -- PROGRAM`: the program natively on this
// machine's real GPU, its kernels timed by CUPTI through the recorder the NVIDIA driver injects
// (interpose/recorder/, CUDA_INJECTION64_PATH), written as a profile database
// (docs/kernel-timing.md, "Recording on a GPU").
#include <dlfcn.h>
#include <fmt/format.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/run_flags.h"
#include "myriad/emulator/profiling.h"
#include "myriad/status.h"

#ifndef MYRIAD_SHIM_DIR
#define MYRIAD_SHIM_DIR ""
#endif

extern char** environ;

namespace myriad::cli {
namespace {

const char kRecordUsage[] =
    "usage: myriad profile record [-o PROFILE.kdb] [--gpu KEY] -- PROGRAM [ARGS...]\n"
    "Runs PROGRAM natively on this machine's GPU (no virtual GPUs), times its kernels with\n"
    "CUPTI, and writes their profile (default profile.kdb). Needs an NVIDIA GPU and driver.\n";

// The first device's name through the NVIDIA driver's own library (not Myriad's shim, which
// is never on this process's library path); an error when there is no driver or no device.
Result<std::string> RealDeviceName() {
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr)
    return Status::NotFound(
        "no NVIDIA GPU here: the NVIDIA driver (libcuda.so.1) is not installed, and recording "
        "times kernels on a real GPU");
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  using GetFn = int (*)(int*, int);
  using NameFn = int (*)(char*, int, int);
  const auto init = reinterpret_cast<InitFn>(::dlsym(driver, "cuInit"));
  const auto count = reinterpret_cast<CountFn>(::dlsym(driver, "cuDeviceGetCount"));
  const auto get = reinterpret_cast<GetFn>(::dlsym(driver, "cuDeviceGet"));
  const auto name = reinterpret_cast<NameFn>(::dlsym(driver, "cuDeviceGetName"));
  int devices = 0;
  const int rc = init == nullptr || count == nullptr ? -1 : init(0);
  if (rc == 0) count(&devices);
  if (rc != 0 || devices == 0)
    return Status::NotFound(fmt::format(
        "no NVIDIA GPU here: the driver finds no CUDA device (cuInit returned {})", rc));
  char text[256] = {};
  int device = 0;
  if (get == nullptr || name == nullptr || get(&device, 0) != 0 ||
      name(text, sizeof text, device) != 0)
    return std::string();
  return std::string(text);
}

}  // namespace

int RecordProfile(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string output = "profile.kdb", gpu_key;
  std::size_t i = 0;
  for (; i < args.size() && args[i] != "--"; ++i) {
    if ((args[i] == "-o" || args[i] == "--gpu") && i + 1 < args.size()) {
      (args[i] == "-o" ? output : gpu_key) = args[i + 1];
      ++i;
    } else if (args[i] == "-h" || args[i] == "--help") {
      out << kRecordUsage;
      return kExitOk;
    } else {
      err << "myriad profile record: error: unexpected '" << args[i] << "'\n" << kRecordUsage;
      return kExitBadInput;
    }
  }
  const std::vector<std::string> command(
      args.begin() + static_cast<std::ptrdiff_t>(i) + (i < args.size() ? 1 : 0), args.end());
  if (command.empty()) {
    err << "myriad profile record: error: no PROGRAM after --\n" << kRecordUsage;
    return kExitBadInput;
  }
  auto device = RealDeviceName();
  if (!device.ok()) {
    err << "myriad profile record: " << device.status().message() << "\n";
    return kExitBadInput;
  }
  if (gpu_key.empty()) {
    auto key = emulator::profiling::GpuKeyForDevice(*device);
    if (!key.ok()) {
      err << "myriad profile record: " << key.status().message() << "\n";
      return kExitBadInput;
    }
    gpu_key = *key;
  }
  const char* env_shims = std::getenv("MYRIAD_SHIM_DIR");
  const std::string recorder =
      std::string(env_shims && *env_shims ? env_shims : MYRIAD_SHIM_DIR) + "/libmyriad_record.so";
  if (::access(recorder.c_str(), R_OK) != 0) {
    err << "myriad profile record: no recorder at " << recorder
        << " (build with the CUDA toolkit: -DMYRIAD_WITH_CUDA=ON)\n";
    return kExitBadInput;
  }
  std::string recording =
      (std::filesystem::temp_directory_path() / "myriad-record-XXXXXX").string();
  const int fd = ::mkstemp(recording.data());
  if (fd < 0) {
    err << "myriad profile record: cannot make a temporary file: " << std::strerror(errno) << "\n";
    return kExitFailure;
  }
  ::close(fd);
  // The program, natively, with the recorder injected and nothing of Myriad's shims.
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("CUDA_INJECTION64_PATH", recorder.c_str(), 1);
    ::setenv("MYRIAD_RECORD_OUT", recording.c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "myriad profile record: cannot start %s: %s\n", argv[0],
                 std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    err << "myriad profile record: " << command[0] << " did not exit with status 0 ("
        << (WIFEXITED(status) ? fmt::format("status {}", WEXITSTATUS(status))
                              : fmt::format("signal {}", WTERMSIG(status)))
        << "); no profile written\n";
    std::filesystem::remove(recording);
    return kExitFailure;
  }
  auto read = emulator::profiling::ReadTrace(recording);
  std::filesystem::remove(recording);
  if (!read.ok()) {
    err << "myriad profile record: the recorder wrote nothing usable: " << read.status().message()
        << "\n";
    return kExitFailure;
  }
  auto built = emulator::profiling::BuildProfile({*read}, gpu_key, "a recording of " + command[0]);
  if (!built.ok()) {
    err << "myriad profile record: " << built.status().message() << "\n";
    return kExitFailure;
  }
  if (!WriteFile(output, built->database, err)) return kExitFailure;
  out << fmt::format("{}: {} timed launches ({} rows by name and launch shape) on {} ({})\n",
                     output, built->kernels, built->kernel_rows, *device, gpu_key);
  return kExitOk;
}

}  // namespace myriad::cli
