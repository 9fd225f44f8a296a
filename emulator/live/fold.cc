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
  if (fold.empty()) return plan;
  std::set<std::string> folded;
  for (const std::string& axis : fold) {
    if (axis == "pp" || axis == "ep")
      return Status::Unsupported(fmt::format(
          "--fold {}: {} ranks run different work (a pipeline stage, an expert's tokens), so "
          "they cannot mirror each other; fold dp, tp or cp",
          axis, axis == "pp" ? "pipeline" : "expert-parallel"));
    if (KnownAxes().count(axis) == 0)
      return Status::InvalidArgument(
          fmt::format("--fold {}: unknown axis (dp, tp, cp can be folded)", axis));
    bool present = false;
    for (const auto& [name, size] : axes) present |= name == axis;
    if (!present)
      return Status::InvalidArgument(
          fmt::format("--fold {}: mesh '{}' has no {} axis", axis, plan.mesh, axis));
    folded.insert(axis);
  }
  // Each axis's coordinate in a rank, and in the replica's or the live index.
  int rank_stride = 1, replica_stride = 1, live_stride = 1;
  for (const auto& [name, size] : axes) {
    const int n = static_cast<int>(size);
    if (folded.count(name)) {
      plan.folded_axes.push_back({name, n, replica_stride, rank_stride});
      replica_stride *= n;
    } else {
      plan.live_axes.push_back({name, n, live_stride, rank_stride});
      live_stride *= n;
    }
    rank_stride *= n;
  }
  plan.replicas = replica_stride;
  plan.live = world / plan.replicas;
  return plan;
}

bool FoldPlan::contiguous() const {
  for (const Axis& l : live_axes)
    for (const Axis& f : folded_axes)
      if (l.size > 1 && l.rank_stride > f.rank_stride) return false;
  return true;
}

int FoldPlan::replica_of(int rank) const {
  int replica = 0;
  for (const Axis& a : folded_axes) replica += rank / a.rank_stride % a.size * a.stride;
  return replica;
}

int FoldPlan::source_of(int rank) const {
  int source = rank;
  for (const Axis& a : folded_axes) source -= rank / a.rank_stride % a.size * a.rank_stride;
  return source;
}

int FoldPlan::rank_of(int source, int replica) const {
  int rank = source;
  for (const Axis& a : folded_axes) rank += replica / a.stride % a.size * a.rank_stride;
  return rank;
}

int FoldPlan::live_rank(int index) const {
  int rank = 0;
  for (const Axis& a : live_axes) rank += index / a.stride % a.size * a.rank_stride;
  return rank;
}

std::string FoldPlan::live_ranks_text() const {
  if (contiguous()) return live == 1 ? "0" : fmt::format("0-{}", live - 1);
  std::string text;
  for (int i = 0; i < live; ++i) {
    if (live > 6 && i == 3) {  // 0,64,128,...,448
      text += ",...";
      i = live - 2;
      continue;
    }
    text += fmt::format("{}{}", text.empty() ? "" : ",", live_rank(i));
  }
  return text;
}

std::string FoldPlan::folded_names() const {
  std::string names;
  for (const Axis& axis : folded_axes) names += (names.empty() ? "" : ",") + axis.name;
  return names;
}

namespace {

// Which of the plan's folded axes a group spans (bit i: folded_axes[i]), and how many live
// ranks it has: it holds live x the product of the spanned axes' sizes ranks.
struct Span {
  unsigned axes = 0;
  int live = 1;
};

int Coordinate(const FoldPlan& plan, int replica, std::size_t axis) {
  const FoldPlan::Axis& a = plan.folded_axes[axis];
  return replica / a.stride % a.size;
}

// The replica whose coordinates are `replica`'s on the axes the span leaves out and 0 on the
// ones it spans: its group's first replica.
int FirstReplicaOfGroup(const FoldPlan& plan, const Span& span, int replica) {
  int first = replica;
  for (std::size_t a = 0; a < plan.folded_axes.size(); ++a)
    if (span.axes & (1u << a)) first -= Coordinate(plan, replica, a) * plan.folded_axes[a].stride;
  return first;
}

std::string AxisNames(const FoldPlan& plan, unsigned axes) {
  if (axes == 0) return "none of the folded axes";
  std::string names;
  for (std::size_t a = 0; a < plan.folded_axes.size(); ++a)
    if (axes & (1u << a)) names += (names.empty() ? "" : " x ") + plan.folded_axes[a].name;
  return names;
}

// The span of a group given by its members: the folded axes on which they differ.
Result<Span> SpanOfMembers(const FoldPlan& plan, const std::string& comm,
                           const std::vector<int>& members) {
  Span span;
  std::set<int> live_members, all;
  for (int member : members) {
    if (member < 0 || member >= plan.world || !all.insert(member).second)
      return Status::InvalidArgument(fmt::format(
          "communicator '{}': its member list (from PyTorch) holds rank {} out of the world's "
          "{} or twice",
          comm, member, plan.world));
    live_members.insert(plan.source_of(member));
    for (std::size_t a = 0; a < plan.folded_axes.size(); ++a)
      if (Coordinate(plan, plan.replica_of(member), a) != 0) span.axes |= 1u << a;
  }
  span.live = static_cast<int>(live_members.size());
  long spanned = 1;
  for (std::size_t a = 0; a < plan.folded_axes.size(); ++a)
    if (span.axes & (1u << a)) spanned *= plan.folded_axes[a].size;
  if (static_cast<long>(members.size()) != spanned * span.live)
    return Status::InvalidArgument(fmt::format(
        "communicator '{}' of {} ranks: under the fold (mesh {}) its members are not whole "
        "groups along the folded axes ({} live ranks x {}), so its mirrors' groups cannot be "
        "inferred",
        comm, members.size(), plan.mesh, span.live, AxisNames(plan, span.axes)));
  return span;
}

// The span of a group known only by its size and the source's rank in it: the whole world,
// a group inside a replica, or one live rank (or all of them) times some folded axes.
Result<Span> SpanOfSize(const FoldPlan& plan, const std::string& comm, int nranks, int rank) {
  std::vector<Span> fits;
  bool rank_too_high = false;
  const unsigned all = (1u << plan.folded_axes.size()) - 1;
  for (unsigned axes = 0; axes <= all; ++axes) {
    long spanned = 1;
    for (std::size_t a = 0; a < plan.folded_axes.size(); ++a)
      if (axes & (1u << a)) spanned *= plan.folded_axes[a].size;
    if (nranks % spanned != 0) continue;
    const long live = nranks / spanned;
    if (axes == 0 ? live > plan.live : (live != 1 && live != plan.live)) continue;
    if (rank >= live) {
      rank_too_high = true;
      continue;
    }
    fits.push_back({axes, static_cast<int>(live)});
  }
  if (fits.size() == 1) return fits.front();
  if (fits.size() > 1) {
    std::string layouts;
    for (const Span& fit : fits)
      layouts += fmt::format("{}{} live rank(s) x {}", layouts.empty() ? "" : "; ", fit.live,
                             AxisNames(plan, fit.axes));
    return Status::InvalidArgument(fmt::format(
        "communicator '{}' of {} ranks: under the fold (mesh {}) it could be {}, and Myriad "
        "cannot tell which (a data-parallel group or one inside a replica: give a mesh where "
        "those sizes differ, or create it through PyTorch, whose hook names its members)",
        comm, nranks, plan.mesh, layouts));
  }
  if (rank_too_high)
    return Status::InvalidArgument(fmt::format(
        "communicator '{}' of {} ranks (mesh {}): its live member is its rank {}, but a group "
        "across the folded axes must have its live members first (a data-parallel group's "
        "live member must be rank 0)",
        comm, nranks, plan.mesh, rank));
  return Status::InvalidArgument(fmt::format(
      "communicator '{}' of {} ranks: under the fold (mesh {}: {} live ranks, {} replicas) "
      "Myriad cannot infer its other members (give a mesh that matches the program's groups)",
      comm, nranks, plan.mesh, plan.live, plan.replicas));
}

}  // namespace

Result<MirrorMembership> InferMirrorMembership(const FoldPlan& plan, const std::string& comm,
                                               int nranks, int rank, int replica,
                                               const std::vector<int>* members) {
  if (members != nullptr && static_cast<int>(members->size()) != nranks)
    return Status::InvalidArgument(fmt::format(
        "communicator '{}': {} ranks joined it, but its member list (from PyTorch) has {}", comm,
        nranks, members->size()));
  if (members == nullptr && nranks == plan.world) {
    // The world: every mirror is in it, at its own global rank (its source's rank there).
    if (rank < 0 || rank >= plan.world || !plan.is_live(rank))
      return Status::InvalidArgument(fmt::format(
          "communicator '{}' of the world's {} ranks: rank {} joined it from a live process, "
          "but under the fold (mesh {}) the live ranks are {}",
          comm, nranks, rank, plan.mesh, plan.live_ranks_text()));
    MirrorMembership world;
    world.rank = plan.rank_of(rank, replica);
    return world;
  }
  if (members == nullptr && !plan.contiguous())
    return Status::InvalidArgument(fmt::format(
        "communicator '{}' of {} ranks: under the fold (mesh {}) the live ranks ({}) are not "
        "the first ones, and a group smaller than the world is placed only from its members, "
        "which PyTorch's hook names (communicators a CUDA program makes itself need a mesh "
        "with the folded axes slowest)",
        comm, nranks, plan.mesh, plan.live_ranks_text()));
  auto span = members != nullptr ? SpanOfMembers(plan, comm, *members)
                                 : SpanOfSize(plan, comm, nranks, rank);
  if (!span.ok()) return span.status();
  MirrorMembership m;
  m.copy = FirstReplicaOfGroup(plan, *span, replica);
  m.own_copy = m.copy != 0;
  m.inside_replica = span->axes == 0;
  if (members != nullptr) {
    // The member with the mirror's coordinates on the spanned axes and the group's first
    // replica's on the others: the mirror's place in its own group's copy.
    const int source = (*members)[static_cast<std::size_t>(rank)];
    if (source < 0 || source >= plan.world || !plan.is_live(source))
      return Status::InvalidArgument(fmt::format(
          "communicator '{}': rank {} joined it as its rank {}, which its member list (from "
          "PyTorch) gives as rank {}",
          comm, plan.source_of(source), rank, source));
    const int counterpart = plan.rank_of(source, replica - m.copy);
    const auto it = std::find(members->begin(), members->end(), counterpart);
    if (it == members->end())
      return Status::InvalidArgument(fmt::format(
          "communicator '{}': under the fold (mesh {}) its member list (from PyTorch) lacks rank "
          "{}, which a mirror of rank {} takes the place of",
          comm, plan.mesh, counterpart, source));
    m.rank = static_cast<int>(it - members->begin());
    return m;
  }
  // Ordered by global rank: the spanned coordinates (slowest first), then the live members.
  int index = 0, radix = 1;
  for (std::size_t a = 0; a < plan.folded_axes.size(); ++a)
    if (span->axes & (1u << a)) {
      index += Coordinate(plan, replica, a) * radix;
      radix *= plan.folded_axes[a].size;
    }
  m.rank = index * span->live + rank;
  return m;
}

}  // namespace myriad::emulator
