// Names of collectives, algorithms and protocols, and the NCCL_ALGO / NCCL_PROTO parsers.
#include <algorithm>
#include <cctype>
#include <string>

#include "myriad/netmodel/collective.h"

namespace myriad::netmodel {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// Shared by NCCL_ALGO and NCCL_PROTO: "a,b" selects, "^a,b" excludes. `match` adds the
// members one lower-case name stands for and returns false for an unknown name.
template <typename Set, typename Match>
Result<Set> ParseSelection(std::string_view value, std::string_view variable, Match match) {
  std::string_view list = value;
  const bool exclude = !list.empty() && list.front() == '^';
  if (exclude) list.remove_prefix(1);
  Set named;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string item = Trim(list.substr(start, comma - start));
    if (item.empty() || !match(Lower(item), named))
      return Status::InvalidArgument(std::string(variable) + ": unknown value '" + item + "' in '" +
                                     std::string(value) + "'");
    start = comma + 1;
  }
  Set result = exclude ? Set::All().Without(named) : named;
  if (result.empty())
    return Status::InvalidArgument(std::string(variable) + "='" + std::string(value) +
                                   "' leaves nothing to choose from");
  return result;
}

}  // namespace

std::string_view ToString(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return "allreduce";
    case CollectiveOp::kAllGather:
      return "allgather";
    case CollectiveOp::kReduceScatter:
      return "reducescatter";
    case CollectiveOp::kBroadcast:
      return "broadcast";
    case CollectiveOp::kReduce:
      return "reduce";
    case CollectiveOp::kAllToAll:
      return "alltoall";
    case CollectiveOp::kSendRecv:
      return "sendrecv";
    case CollectiveOp::kGather:
      return "gather";
    case CollectiveOp::kScatter:
      return "scatter";
  }
  return "?";
}

std::string_view ToString(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kRing:
      return "Ring";
    case Algorithm::kTree:
      return "Tree";
    case Algorithm::kNvls:
      return "NVLS";
    case Algorithm::kNvlsTree:
      return "NVLSTree";
    case Algorithm::kCollNetDirect:
      return "CollNetDirect";
    case Algorithm::kCollNetChain:
      return "CollNetChain";
    case Algorithm::kPat:
      return "PAT";
    case Algorithm::kDirect:
      return "Direct";
  }
  return "?";
}

std::string_view ToString(Protocol protocol) {
  switch (protocol) {
    case Protocol::kLL:
      return "LL";
    case Protocol::kLL128:
      return "LL128";
    case Protocol::kSimple:
      return "Simple";
  }
  return "?";
}

Result<CollectiveOp> ParseCollectiveOp(std::string_view name) {
  std::string key;
  for (char c : Lower(name))
    if (c != '_' && c != '-') key += c;
  for (int i = 0; i < kNumCollectiveOps; ++i) {
    const auto op = static_cast<CollectiveOp>(i);
    if (key == ToString(op)) return op;
  }
  return Status::InvalidArgument(
      "unknown collective '" + std::string(name) +
      "' (known: allreduce, allgather, reducescatter, broadcast, reduce, alltoall, sendrecv, "
      "gather, scatter)");
}

Result<AlgorithmSet> ParseNcclAlgo(std::string_view value) {
  return ParseSelection<AlgorithmSet>(value, "NCCL_ALGO",
                                      [](const std::string& name, AlgorithmSet& set) {
                                        if (name == "collnet") {
                                          set.insert(Algorithm::kCollNetDirect);
                                          set.insert(Algorithm::kCollNetChain);
                                          return true;
                                        }
                                        for (int i = 0; i < kNumAlgorithms; ++i) {
                                          const auto a = static_cast<Algorithm>(i);
                                          if (name == Lower(ToString(a))) {
                                            set.insert(a);
                                            return true;
                                          }
                                        }
                                        return false;
                                      });
}

Result<ProtocolSet> ParseNcclProto(std::string_view value) {
  return ParseSelection<ProtocolSet>(value, "NCCL_PROTO",
                                     [](const std::string& name, ProtocolSet& set) {
                                       for (int i = 0; i < kNumProtocols; ++i) {
                                         const auto p = static_cast<Protocol>(i);
                                         if (name == Lower(ToString(p))) {
                                           set.insert(p);
                                           return true;
                                         }
                                       }
                                       return false;
                                     });
}

}  // namespace myriad::netmodel
