// Rank folding of live runs: the mesh a world is laid out as, and which communicators a
// mirror joins in its source's place (docs/run.md, "Folding").
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "myriad/emulator/live.h"

namespace myriad::emulator {
namespace {

// The axis names a mesh may use (Megatron's, torch's DeviceMesh conventions).
const std::set<std::string>& KnownAxes() {
  static const std::set<std::string> axes = {"tp", "pp", "cp", "ep", "dp"};
  return axes;
}

}  // namespace

Result<FoldPlan> PlanFold(const std::string& mesh, const std::vector<std::string>& fold,
                          int world) {
  FoldPlan plan;
  plan.world = world;
  if (world < 1) return Status::InvalidArgument("a fold needs at least one rank");
  std::vector<std::pair<std::string, long>> axes;
  if (mesh.empty()) {
    axes.emplace_back("dp", world);  // every rank a data-parallel replica
  } else {
    std::size_t start = 0;
    while (start <= mesh.size()) {
      const std::size_t end = std::min(mesh.find(',', start), mesh.size());
      const std::string item = mesh.substr(start, end - start);
      const std::size_t eq = item.find('=');
      const std::string name = item.substr(0, eq);
      char* rest = nullptr;
      const long size = eq == std::string::npos ? 0 : std::strtol(item.c_str() + eq + 1, &rest, 10);
      if (eq == std::string::npos || rest == nullptr || *rest != '\0' || size < 1 || size > world)
        return Status::InvalidArgument(
            fmt::format("mesh '{}': '{}' is not AXIS=SIZE with a size from 1 to the world's {}",
                        mesh, item, world));
      if (KnownAxes().count(name) == 0)
        return Status::InvalidArgument(
            fmt::format("mesh '{}': unknown axis '{}' (tp, pp, cp, ep, dp)", mesh, name));
      for (const auto& [seen, unused] : axes)
        if (seen == name)
          return Status::InvalidArgument(
              fmt::format("mesh '{}': axis '{}' appears twice", mesh, name));
      axes.emplace_back(name, size);
      start = end + 1;
    }
  }
  long product = 1;
  for (const auto& [name, size] : axes)  // stops past the world: five axes could overflow
    if (product <= world) product *= size;
  if (product > world)
    return Status::InvalidArgument(fmt::format("mesh '{}' has more ranks than the world's {}",
                                               mesh.empty() ? "dp" : mesh, world));
  if (product != world)
    return Status::InvalidArgument(fmt::format("mesh '{}' has {} ranks, the world has {}",
                                               mesh.empty() ? "dp" : mesh, product, world));
  plan.mesh.clear();
  for (const auto& [name, size] : axes)
    plan.mesh += fmt::format("{}{}={}", plan.mesh.empty() ? "" : ",", name, size);
  for (const std::string& axis : fold) {
    if (axis != "dp")
      return Status::Unsupported(
          fmt::format("--fold {}: only the data-parallel axis (dp) can be folded for now", axis));
    if (axes.back().first != "dp") {
      bool present = false;
      for (const auto& [name, size] : axes) present |= name == "dp";
      return Status::InvalidArgument(
          present ? fmt::format("mesh '{}': the folded axis dp must be the last (slowest) one, "
                                "so that the live ranks come first",
                                plan.mesh)
                  : fmt::format("--fold dp: mesh '{}' has no dp axis", plan.mesh));
    }
    plan.replicas = static_cast<int>(axes.back().second);
    plan.live = world / plan.replicas;
  }
  return plan;
}

Result<MirrorMembership> InferMirrorMembership(const FoldPlan& plan, const std::string& comm,
                                               int nranks, int rank, int replica) {
  MirrorMembership m;
  const bool world = nranks == plan.world;
  const bool across = nranks == plan.replicas;
  const bool inside = nranks <= plan.live;
  if (across && inside && !world)
    return Status::InvalidArgument(fmt::format(
        "communicator '{}' of {} ranks: under the fold (mesh {}) it could be a data-parallel "
        "group or one inside a replica, and Myriad cannot tell which (give a mesh where the "
        "replicas are not as many as a replica's ranks)",
        comm, nranks, plan.mesh));
  if (world) {
    m.rank = rank + replica * plan.live;
    return m;
  }
  if (across) {
    if (rank != 0)
      return Status::InvalidArgument(fmt::format(
          "communicator '{}' of {} ranks (one per replica under mesh {}): its live member is "
          "its rank {}, but a data-parallel group's live member must be rank 0",
          comm, nranks, plan.mesh, rank));
    m.rank = replica;
    return m;
  }
  if (inside) {
    m.own_copy = true;
    m.rank = rank;
    return m;
  }
  return Status::InvalidArgument(fmt::format(
      "communicator '{}' of {} ranks: under the fold (mesh {}: {} live ranks, {} replicas) "
      "Myriad cannot infer its other members (give a mesh that matches the program's groups)",
      comm, nranks, plan.mesh, plan.live, plan.replicas));
}

}  // namespace myriad::emulator
