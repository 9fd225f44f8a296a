#include "myriad/netmodel/cluster.h"

#include <algorithm>
#include <string>

namespace myriad::netmodel {

std::string_view ToString(ScaleUpKind kind) {
  switch (kind) {
    case ScaleUpKind::kNvSwitch:
      return "nvswitch";
    case ScaleUpKind::kNvlDomain:
      return "nvl";
    case ScaleUpKind::kPcie:
      return "pcie";
  }
  return "?";
}

std::string_view ToString(ScaleOutTopology topology) {
  switch (topology) {
    case ScaleOutTopology::kNone:
      return "none";
    case ScaleOutTopology::kSingleSwitch:
      return "single-switch";
    case ScaleOutTopology::kRailOptimized:
      return "rail-optimized";
    case ScaleOutTopology::kClos:
      return "clos";
  }
  return "?";
}

std::string_view ToString(Routing routing) {
  switch (routing) {
    case Routing::kEcmp:
      return "ecmp";
    case Routing::kAdaptive:
      return "adaptive";
  }
  return "?";
}

Result<int> ParseNcclVersion(std::string_view text) {
  // "2.M" or "2.M.P", each part 1 or 2 digits.
  int parts[3] = {0, 0, 0};
  int count = 0;
  bool ok = true;
  size_t start = 0;
  while (ok) {
    const size_t dot = std::min(text.find('.', start), text.size());
    const std::string_view part = text.substr(start, dot - start);
    ok = count < 3 && !part.empty() && part.size() <= 2 &&
         part.find_first_not_of("0123456789") == std::string_view::npos;
    if (ok) parts[count++] = std::stoi(std::string(part));
    if (dot == text.size()) break;
    start = dot + 1;
  }
  if (!ok || count < 2 || parts[0] != 2)
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' is not an NCCL 2.x version such as \"2.18\" or \"2.21.5\"");
  return parts[0] * 10000 + parts[1] * 100 + parts[2];
}

double Cluster::scale_out_bandwidth_per_gpu() const {
  if (scale_out.topology == ScaleOutTopology::kNone || gpus_per_node == 0) return 0;
  return scale_out.nics_per_node * nic_data_bandwidth() / gpus_per_node;
}

double Cluster::network_latency(bool cross_leaf) const {
  // NIC -> leaf -> NIC, plus leaf -> spine -> leaf when the path leaves the leaf.
  const int switches = cross_leaf ? 3 : 1;
  return 2 * scale_out.nic.latency + switches * scale_out.leaf_switch.latency;
}

Status Cluster::Validate() const {
  auto invalid = [](const std::string& msg) { return Status::InvalidArgument(msg); };
  if (nodes < 1) return invalid("cluster.nodes must be at least 1");
  if (gpus_per_node < 1) return invalid("cluster.gpus_per_node must be at least 1");
  if (scale_up.domain_size < 1) return invalid("cluster.scale_up.domain_size must be at least 1");
  if (scale_up.bandwidth <= 0) return invalid("cluster.scale_up.bandwidth must be positive");
  if (scale_up.efficiency <= 0 || scale_up.efficiency > 1)
    return invalid("cluster.scale_up.efficiency must be in (0, 1]");
  if (scale_up.latency < 0) return invalid("cluster.scale_up.latency must not be negative");
  if (scale_up.kind == ScaleUpKind::kNvlDomain) {
    if (scale_up.domain_size % gpus_per_node != 0)
      return invalid("cluster.scale_up.domain_size (" + std::to_string(scale_up.domain_size) +
                     ") must be a multiple of cluster.gpus_per_node (" +
                     std::to_string(gpus_per_node) + ")");
    if (total_gpus() % scale_up.domain_size != 0)
      return invalid("cluster has " + std::to_string(total_gpus()) +
                     " GPUs, not a whole number of scale-up domains of " +
                     std::to_string(scale_up.domain_size));
  } else if (scale_up.domain_size != gpus_per_node) {
    return invalid(
        "cluster.scale_up.domain_size must equal cluster.gpus_per_node unless "
        "cluster.scale_up.kind = \"nvl\"");
  }
  if (scale_up.nvls && !gpu.nvlink_sharp)
    return invalid("cluster.scale_up.nvls = true, but " + gpu.key + " has no NVLink SHARP");
  if (scale_up.nvls && scale_up.kind == ScaleUpKind::kPcie)
    return invalid("cluster.scale_up.nvls needs an NVLink fabric, not PCIe");
  if (scale_up_domains() > 1 && scale_out.topology == ScaleOutTopology::kNone)
    return invalid("cluster spans " + std::to_string(scale_up_domains()) +
                   " scale-up domains but cluster.scale_out.topology = \"none\"");
  if (scale_out.topology != ScaleOutTopology::kNone) {
    if (scale_out.nics_per_node < 1)
      return invalid("cluster.scale_out.nics_per_node must be at least 1");
    if (scale_out.nic.line_rate <= 0) return invalid("cluster.scale_out NIC rate must be positive");
    if (scale_out.oversubscription < 1.0)
      return invalid("cluster.scale_out.oversubscription must be at least 1.0");
    if (scale_out.nodes_per_leaf < 1)
      return invalid("cluster.scale_out.nodes_per_leaf must be at least 1");
    if (scale_out.qps_per_connection < 1)
      return invalid("cluster.scale_out.qps_per_connection must be at least 1");
    if (scale_out.in_network_reduction && !scale_out.leaf_switch.in_network_reduction)
      return invalid("cluster.scale_out.in_network_reduction = true, but switch '" +
                     scale_out.leaf_switch.key + "' has none");
  }
  return Status::Ok();
}

}  // namespace myriad::netmodel
