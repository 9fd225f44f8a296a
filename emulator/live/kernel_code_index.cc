// Finding and counting kernels' own code for live processes.
#include "live/kernel_code_index.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace myriad::emulator {
namespace {

// Known device contents kept per process (each at most wire::kMaxKnownContents).
constexpr std::size_t kMaxContentsBytes = std::size_t{64} << 20;

std::string Link(const std::string& path) {
  char buffer[4096];
  const ssize_t n = ::readlink(path.c_str(), buffer, sizeof buffer - 1);
  return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
}

// A PTX file beside a cubin: a regular file of at most kMaxFatbinSectionBytes (a FIFO or a
// device in its place is not read); empty if there is none.
std::string ReadText(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return {};
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
      static_cast<std::uint64_t>(st.st_size) <= kMaxFatbinSectionBytes) {
    text.resize(static_cast<std::size_t>(st.st_size));
    if (::pread(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) text.clear();
  }
  ::close(fd);
  return text;
}

std::string ProcPath(int pid, const char* what) {
  return "/proc/" + std::to_string(pid) + "/" + what;
}

}  // namespace

void KernelCodeIndex::AddProcess(int pid) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pids_.count(pid) != 0) return;  // another of its threads connected first
  }
  std::vector<std::string> paths;
  const std::string exe = Link(ProcPath(pid, "exe"));
  if (!exe.empty()) paths.push_back(exe);
  // Executable file mappings: the libraries loaded when the process first used CUDA.
  std::ifstream maps(ProcPath(pid, "maps"));
  std::set<std::string> seen(paths.begin(), paths.end());
  for (std::string line; std::getline(maps, line);) {
    std::istringstream fields(line);
    std::string range, perms, offset, device, inode, path;
    fields >> range >> perms >> offset >> device >> inode;
    std::getline(fields >> std::ws, path);
    if (perms.size() < 3 || perms[2] != 'x' || path.empty() || path[0] != '/') continue;
    if (seen.insert(path).second) paths.push_back(path);
  }
  std::lock_guard<std::mutex> lock(mu_);
  pids_.emplace(pid, std::move(paths));
}

void KernelCodeIndex::AddModuleFile(int pid, std::uint32_t id, const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  modules_[pid].push_back(path);
  module_ids_[{pid, id}] = path;
  ++generation_;
}

void KernelCodeIndex::AddModulePtx(int pid, std::uint32_t id, std::string ptx) {
  std::replace(ptx.begin(), ptx.end(), '\0', '\n');
  std::lock_guard<std::mutex> lock(mu_);
  // A key no file has (paths are absolute): where Find looks for it.
  const std::string key = fmt::format("memory module {} of process {}", id, pid);
  texts_[key] = std::move(ptx);
  modules_[pid].push_back(key);
  module_ids_[{pid, id}] = key;
  ++generation_;
}

const KernelCode* KernelCodeIndex::FindIn(const std::string& path, const std::string& mangled) {
  File& file = files_[path];
  if (!file.read && path[0] != '/') {  // a module from memory
    file.read = true;
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = texts_.find(path); it != texts_.end()) {
      file.modules.push_back(std::move(it->second));
      texts_.erase(it);
    }
    file.analysed.assign(file.modules.size(), false);
  }
  if (!file.read) {
    file.read = true;
    auto modules = PtxInElfFile(path, kMaxFatbinSectionBytes);
    if (modules.ok()) file.modules = std::move(modules).value();
    // A cubin without its PTX inside (ptxas without -lineinfo): Triton's cache keeps the
    // PTX beside it, NAME.ptx for NAME.cubin.
    if (file.modules.empty() && path.size() > 6 && path.ends_with(".cubin"))
      if (std::string ptx = ReadText(path.substr(0, path.size() - 6) + ".ptx"); !ptx.empty())
        file.modules.push_back(std::move(ptx));
    file.analysed.assign(file.modules.size(), false);
  }
  if (auto it = file.kernels.find(mangled); it != file.kernels.end()) return &it->second;
  const std::string entry = ".entry " + mangled;
  for (std::size_t m = 0; m < file.modules.size(); ++m) {
    if (file.analysed[m]) continue;
    // Only a module that names the kernel is analysed (a whole module at once).
    const std::size_t at = file.modules[m].find(entry);
    if (at == std::string::npos) continue;
    const char after =
        at + entry.size() < file.modules[m].size() ? file.modules[m][at + entry.size()] : '\0';
    if (after != '(' && after != ' ' && after != '\n' && after != '\t') continue;
    file.analysed[m] = true;
    auto kernels = AnalyzePtx(file.modules[m]);
    if (!kernels.ok()) continue;
    for (const KernelCode& k : kernels.value()) file.kernels.emplace(k.name(), k);
    if (auto it = file.kernels.find(mangled); it != file.kernels.end()) return &it->second;
  }
  return nullptr;
}

const KernelCode* KernelCodeIndex::Find(int pid, std::uint32_t module, const std::string& mangled) {
  const auto key = std::make_tuple(pid, module, mangled);
  std::vector<std::string> paths;
  std::uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation = generation_;
    // The launch's own module first: several may hold a kernel of its name (Triton's
    // autotuning compiles one module per configuration, all naming the kernel alike).
    if (auto it = module_ids_.find({pid, module}); module > 0 && it != module_ids_.end())
      paths.push_back(it->second);
    // Then the modules loaded through the driver, the newest first (a name Inductor reuses is
    // the latest load's); then the executable and its libraries.
    if (auto it = modules_.find(pid); it != modules_.end())
      paths.insert(paths.end(), it->second.rbegin(), it->second.rend());
    if (auto it = pids_.find(pid); it != pids_.end())
      paths.insert(paths.end(), it->second.begin(), it->second.end());
  }
  if (auto it = found_.find(key);
      it != found_.end() && (it->second.code || it->second.generation == generation))
    return it->second.code;
  const KernelCode* code = nullptr;
  for (const std::string& path : paths)
    if ((code = FindIn(path, mangled))) break;
  found_[key] = Found{code, generation};
  return code;
}

bool KernelCodeIndex::Count(int pid, const std::string& mangled, const timing::KernelClass& kernel,
                            const wire::WireOp& w, Op* op) {
  const KernelCode* code = Find(pid, w.module, mangled);
  if (!code) return false;
  std::vector<LaunchArgument> args(code->params().size());
  // The launch key: the kernel's code, its shape and only the arguments that can change the
  // work.
  std::string key;
  key.reserve(160);
  const auto put = [&](std::int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(code)));
  for (std::uint32_t d : {w.grid[0], w.grid[1], w.grid[2], w.block[0], w.block[1], w.block[2]})
    put(d);
  // A kernel loaded through the driver says which of its parameters were pointers; others'
  // names say where their reported parameters are.
  std::vector<int> by_layout_ints, by_layout_pointers;
  if (w.param_count > 0) {
    for (int p = 0; p < w.param_count && p < 32; ++p)
      ((w.pointer_mask >> p) & 1 ? by_layout_pointers : by_layout_ints).push_back(p);
  }
  const std::vector<int>& int_positions = w.param_count > 0 ? by_layout_ints : kernel.int_positions;
  const std::vector<int>& pointer_positions =
      w.param_count > 0 ? by_layout_pointers : kernel.pointer_positions;
  const std::size_t ints = std::min<std::size_t>(w.int_arg_count, std::size(w.int_args));
  for (std::size_t i = 0; i < ints && i < int_positions.size(); ++i) {
    const auto p = static_cast<std::size_t>(int_positions[i]);
    if (p >= args.size() || !code->params()[p].extent) continue;
    args[p].known = true;
    args[p].value = w.int_args[i];
    put(static_cast<std::int64_t>(p));
    put(w.int_args[i]);
  }
  const std::size_t pointers =
      std::min<std::size_t>(w.pointer_arg_count, std::size(w.pointer_bytes));
  double footprint = 0;
  for (std::size_t i = 0; i < pointers && i < pointer_positions.size(); ++i) {
    const auto p = static_cast<std::size_t>(pointer_positions[i]);
    if (p >= args.size() || !code->params()[p].address) continue;
    const auto bytes = static_cast<std::int64_t>(w.pointer_bytes[i]);
    args[p].known = bytes > 0;  // 0: memory Myriad did not allocate
    args[p].value = bytes;
    footprint += static_cast<double>(bytes);
    put(-static_cast<std::int64_t>(p) - 1);
    put(bytes);
  }
  // The bound holds only when every pointer the code dereferences was measured.
  bool footprint_known = true;
  for (std::size_t p = 0; p < args.size(); ++p)
    if (code->params()[p].address && !args[p].known) footprint_known = false;
  // Pointers into known device contents: the code's loads from them are read. A launch of a
  // kernel that stores through such a pointer (or through one no parameter gives) leaves
  // them unknown for the launches after it.
  const std::size_t refs = std::min<std::size_t>(w.content_ref_count, std::size(w.content_id));
  bool writes_contents = false;
  if (refs > 0) {
    std::lock_guard<std::mutex> lock(contents_mu_);
    for (std::size_t r = 0; r < refs; ++r) {
      const std::size_t p = w.content_param[r];
      auto it = contents_.find({pid, w.content_id[r]});
      if (p >= args.size() || it == contents_.end()) continue;
      if (!it->second.stale && code->params()[p].address) {
        args[p].contents = it->second.bytes;
        args[p].content_offset = w.content_offset[r];
        put(static_cast<std::int64_t>(p) + 1'000'000);
        put(w.content_id[r]);
        put(w.content_offset[r]);
      }
      writes_contents = writes_contents || code->writes_anywhere() || code->params()[p].written;
    }
  }
  auto [cached, inserted] = works_.try_emplace(key);
  if (inserted) cached->second = code->Work(op->grid, op->block, args);
  const KernelWork& work = cached->second;
  if (writes_contents) {
    std::lock_guard<std::mutex> lock(contents_mu_);
    for (std::size_t r = 0; r < refs; ++r) {
      const std::size_t p = w.content_param[r];
      auto it = contents_.find({pid, w.content_id[r]});
      if (it != contents_.end() &&
          (code->writes_anywhere() || (p < args.size() && code->params()[p].written)))
        it->second.stale = true;
    }
  }
  // Global traffic reaches HBM at most once per byte its pointers reach (the rest hits in
  // the caches); without an allocation to bound it, as counted.
  double bytes = work.global_bytes;
  if (footprint_known && footprint > 0) bytes = std::min(bytes, footprint);
  op->bytes = static_cast<std::uint64_t>(std::llround(std::min(bytes, 1e18)));
  op->bytes_guessed = false;
  op->counts.counted = true;
  op->counts.tensor_dtype = work.tensor_dtype;
  op->counts.fma_flops = work.fma_flops;
  op->counts.fp64_flops = work.fp64_flops;
  op->counts.tensor_flops = work.tensor_flops;
  op->counts.sfu_ops = work.sfu_ops;
  op->counts.instructions = work.instructions;
  op->counts.assumed_loops = work.assumed_loops;
  return true;
}

void KernelCodeIndex::AddContents(int pid, std::uint32_t id, std::string bytes) {
  std::lock_guard<std::mutex> lock(contents_mu_);
  std::size_t& held = contents_bytes_[pid];
  held += bytes.size();
  auto [it, inserted] = contents_.try_emplace({pid, id});
  if (!inserted) held -= it->second.bytes ? it->second.bytes->size() : 0;
  it->second = Contents{std::make_shared<const std::string>(std::move(bytes)), false};
  // The oldest first: ids grow in the order the process made them.
  for (auto old = contents_.lower_bound({pid, 0});
       held > kMaxContentsBytes && old != contents_.end() && old->first.first == pid &&
       old->first.second != id;) {
    held -= old->second.bytes ? old->second.bytes->size() : 0;
    old = contents_.erase(old);
  }
}

void KernelCodeIndex::Wrote(int pid, const wire::WireOp& w) {
  const std::size_t refs = std::min<std::size_t>(w.content_ref_count, std::size(w.content_id));
  if (refs == 0) return;
  std::lock_guard<std::mutex> lock(contents_mu_);
  for (std::size_t r = 0; r < refs; ++r)
    if (auto it = contents_.find({pid, w.content_id[r]}); it != contents_.end())
      it->second.stale = true;
}

}  // namespace myriad::emulator
