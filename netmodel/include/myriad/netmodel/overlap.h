// Compute beside communication: what NCCL's work in flight takes from the kernels that run on
// the same GPU at the same time. Its channels are thread blocks, one per SM, that tensor-core
// kernels cannot use; its bytes are read from and written to the same HBM that memory-bound
// kernels stream (docs/engine.md "Compute beside communication").
#pragma once

#include "myriad/netmodel/cluster.h"
#include "myriad/netmodel/collective.h"

namespace myriad::netmodel {

// HBM bytes one member's GPU reads and writes for a collective: each byte it sends is read
// from its memory and each byte it receives written to it (a peer writes it over NVLink or the
// NIC by GPUDirect RDMA), and a reduction also reads its own operand for every byte it
// reduces. Ring volumes whatever the algorithm (NVLS moves less). A send/recv: its bytes, read
// on one side and written on the other.
double HbmBytesPerRank(const CollectiveRequest& request);

// SMs a send/recv to one peer takes: NCCL_NCHANNELS_PER_NET_PEER's default, 2.
inline constexpr int kPointToPointChannels = 2;

// What a collective or send/recv takes from each member's GPU while it runs.
struct CommFootprint {
  int sms = 0;          // its channels, one SM each (kPointToPointChannels for a send/recv)
  double hbm_rate = 0;  // bytes/s of HBM: HbmBytesPerRank over the estimate's time
};
CommFootprint FootprintOf(const CollectiveRequest& request, const CollectiveEstimate& estimate);

// However much communication is in flight, compute keeps this share of the SMs and of the
// HBM bandwidth: the hardware schedules both (a bound, not a measured figure).
inline constexpr double kComputeFloorShare = 0.1;

// How many times longer a tensor-core kernel runs while communication holds `comm_sms` SMs:
// its thread blocks fill the SMs left, wave after wave.
double TensorKernelStretch(const GpuSpec& gpu, int comm_sms);

// How many times longer a memory-bound kernel runs while communication reads and writes
// `comm_hbm_rate` bytes/s of HBM: it streams at what is left. The rate is bounded by what the
// GPU's links carry (sent, received, and a reduction's own operand), as transfers in flight at
// once share them.
double MemoryKernelStretch(const Cluster& cluster, double comm_hbm_rate);

}  // namespace myriad::netmodel
