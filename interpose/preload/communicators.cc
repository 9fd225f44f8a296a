// Communicators' members as a framework names them. Under rank folding Myriad infers the groups
// of the ranks that do not run (mirrors) from those of the ranks that do; a group's size alone
// can fit two layouts (a tensor-parallel group of 8 and a data-parallel one of 8), its member
// list cannot. PyTorch's hook (interpose/python/sitecustomize.py) describes every process group
// it makes here, by the name torch gives the group's NCCL communicator (config.commName), and
// the NCCL shim sends the list with the communicator's join (docs/run.md, "Folding").
//
// This library is Myriad's own (not a CUDA library's stand-in), so these exports are its own.
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace {

std::mutex g_mutex;
std::map<std::string, std::string>& Members() {
  static auto* members = new std::map<std::string, std::string>();  // never destroyed
  return *members;
}

}  // namespace

// `ranks`: the group's global ranks in its rank order, comma-separated ("0,8,16").
extern "C" __attribute__((visibility("default"))) void myriad_describe_communicator(
    const char* name, const char* ranks) {
  if (name == nullptr || ranks == nullptr) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  Members()[name] = ranks;
}

// Copies the member list of communicator `name` (with its terminating NUL) into `out` when it
// fits `capacity`; returns its length, or -1 when nobody described `name`.
extern "C" __attribute__((visibility("default"))) long myriad_communicator_members(
    const char* name, char* out, unsigned long capacity) {
  if (name == nullptr) return -1;
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = Members().find(name);
  if (it == Members().end()) return -1;
  if (out != nullptr && it->second.size() < capacity)
    std::memcpy(out, it->second.c_str(), it->second.size() + 1);
  return static_cast<long>(it->second.size());
}
