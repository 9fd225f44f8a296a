#include "myriad/netmodel/overlap.h"

#include <algorithm>

namespace myriad::netmodel {

CommFootprint FootprintOf(const CollectiveRequest& request, const CollectiveEstimate& estimate) {
  CommFootprint f;
  f.sms = request.op == CollectiveOp::kSendRecv ? kPointToPointChannels
                                                : std::max(estimate.channels, 1);
  if (estimate.time_us > 0) f.hbm_rate = HbmBytesPerRank(request) / (estimate.time_us * 1e-6);
  return f;
}

double HbmBytesPerRank(const CollectiveRequest& request) {
  const double bytes = static_cast<double>(request.bytes);
  const int n = std::max(request.ranks, 1);
  if (n == 1) return 2 * bytes;  // a local copy: read + write
  const double share = static_cast<double>(n - 1) / n;
  double sent = bytes;  // what one member sends (and receives) on a ring
  double reduced = 0;   // the bytes it reduces into, each read once more from its own memory
  switch (request.op) {
    case CollectiveOp::kAllReduce:
      sent = 2 * share * bytes;
      reduced = share * bytes;
      break;
    case CollectiveOp::kReduceScatter:
      sent = share * bytes;
      reduced = share * bytes;
      break;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kAllToAll:
    case CollectiveOp::kGather:
    case CollectiveOp::kScatter:
      sent = share * bytes;
      break;
    case CollectiveOp::kReduce:
      reduced = bytes;
      break;
    case CollectiveOp::kBroadcast:
      break;
    case CollectiveOp::kSendRecv:
      return bytes;
  }
  return 2 * sent + reduced;
}

double TensorKernelStretch(const GpuSpec& gpu, int comm_sms) {
  if (comm_sms <= 0) return 1.0;
  const double sms = std::max(gpu.sm_count, 1);
  return sms / std::max(sms - comm_sms, kComputeFloorShare * sms);
}

double MemoryKernelStretch(const Cluster& cluster, double comm_hbm_rate) {
  const double hbm = cluster.gpu.hbm_bandwidth * cluster.gpu.hbm_efficiency;
  if (comm_hbm_rate <= 0 || hbm <= 0) return 1.0;
  const double links = cluster.scale_up.data_bandwidth() + cluster.scale_out_bandwidth_per_gpu();
  const double rate = std::min(comm_hbm_rate, 3 * links);
  return hbm / std::max(hbm - rate, kComputeFloorShare * hbm);
}

}  // namespace myriad::netmodel
