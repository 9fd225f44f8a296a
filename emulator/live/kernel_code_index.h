// The kernels' own code of the processes under `myriad run`: each process's executable and
// the libraries it had mapped when it first connected are read for PTX (their .nv_fatbin
// sections), and a launch of a kernel no family model knows is counted from its code
// (docs/kernel-timing.md, "Kernels timed from their code").
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "myriad/emulator/kernel_code.h"
#include "myriad/emulator/op.h"
#include "protocol/wire.h"
#include "timing/kernel_names.h"

namespace myriad::emulator {

// Fatbin sections larger than this are not read (PyTorch's and cuBLAS's libraries hold
// hundreds of MB of SASS for kernels that family and library models time).
inline constexpr std::size_t kMaxFatbinSectionBytes = 64u << 20;

class KernelCodeIndex {
 public:
  // I/O thread, at each connection: the files a process runs code from, read at its first.
  void AddProcess(int pid);
  // I/O thread: a module the process loaded from a file (a cubin Triton or Inductor wrote,
  // its PTX embedded or beside it as NAME.ptx), by the id its launches name it by; a launch
  // that names no module searches the modules before the others, newest first.
  void AddModuleFile(int pid, std::uint32_t id, const std::string& path);
  // I/O thread: a module the process loaded from memory, by the PTX its cubin carries
  // (NUL-separated lines, as ptxas writes them), searched with the module files.
  void AddModulePtx(int pid, std::uint32_t id, std::string ptx);
  // Engine thread: counts a kernel op's work from its code if the process's files hold it:
  // sets op->bytes (global traffic, bounded by what its pointers reach) and op->counts.
  // `kernel` is the op's name classified (its reported parameters' positions); the code is
  // the launch's own module's (WireOp::module) where it names one. False when no code is
  // known for the kernel.
  bool Count(int pid, const std::string& mangled, const timing::KernelClass& kernel,
             const wire::WireOp& w, Op* op);
  // I/O thread: device memory of the process whose bytes a copy from the host made known
  // (wire::kDeviceContents), by the id its launches name them by (WireOp::content_*).
  void AddContents(int pid, std::uint32_t id, std::string bytes);
  // Engine thread: a launch whose code is not read may write whatever its pointers reach:
  // the known contents it names are known no longer.
  void Wrote(int pid, const wire::WireOp& w);

 private:
  struct File {
    bool read = false;
    std::vector<std::string> modules;                        // PTX texts
    std::map<std::string, KernelCode, std::less<>> kernels;  // analysed on first use
    std::vector<bool> analysed;                              // by module
  };
  const KernelCode* Find(int pid, std::uint32_t module, const std::string& mangled);
  // The kernel in the file or memory module at `path`, its modules read and analysed as
  // needed (engine thread).
  const KernelCode* FindIn(const std::string& path, const std::string& mangled);

  std::mutex mu_;  // pids_, modules_, generation_: written on the I/O thread
  std::map<int, std::vector<std::string>> pids_;
  std::map<int, std::vector<std::string>> modules_;                  // module files, in load order
  std::map<std::pair<int, std::uint32_t>, std::string> module_ids_;  // (pid, id) -> its key
  std::map<std::string, std::string> texts_;  // modules from memory: by their key in modules_
  std::uint64_t generation_ = 0;              // modules added so far
  // Engine thread only.
  std::map<std::string, File> files_;  // by path
  // A kernel's code, or null with the module generation it was not found at (a module loaded
  // later may hold it).
  struct Found {
    const KernelCode* code = nullptr;
    std::uint64_t generation = 0;
  };
  std::map<std::tuple<int, std::uint32_t, std::string>, Found, std::less<>> found_;
  std::unordered_map<std::string, KernelWork> works_;  // launch key -> work
  // Known device contents by (pid, id); an id a kernel may have written since is stale. At
  // most kMaxContentsBytes are kept per process, the oldest ids dropped first.
  struct Contents {
    std::shared_ptr<const std::string> bytes;
    bool stale = false;
  };
  std::mutex contents_mu_;
  std::map<std::pair<int, std::uint32_t>, Contents> contents_;
  std::map<int, std::size_t> contents_bytes_;  // by pid
};

}  // namespace myriad::emulator
