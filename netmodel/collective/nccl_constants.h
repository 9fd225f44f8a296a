// Constants of NCCL's own tuning model (NVIDIA/nccl src/graph/tuning.cc, src/enqueue.cc,
// src/include/collectives.h), as summarised in shared/reference/collectives.md. Myriad uses
// their shapes — which hops cost what, per algorithm and protocol — and derives bandwidths
// from the cluster instead of NCCL's per-architecture tables.
#pragma once

#include "myriad/netmodel/collective.h"

namespace myriad::netmodel::nccl {

inline constexpr int kAlgos = kNumAlgorithms;
inline constexpr int kProtos = kNumProtocols;

// Base latency per (algorithm, protocol), microseconds (tuning.cc baseLat).
// Rows: Ring, Tree, NVLS, NVLS-Tree, CollNetDirect, CollNetChain, PAT, Direct (p2p, as Ring).
// clang-format off
inline constexpr double kBaseLatencyUs[kAlgos][kProtos] = {
    {6.6, 14.0, 8.4}, {6.8, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0},
    {0, 0, 0},        {0, 0, 0},        {6.6, 14.0, 8.4}, {6.6, 14.0, 8.4}};

// Per-hop latency over NVLink, PCIe and the network, microseconds (tuning.cc hwLat).
inline constexpr double kNvlinkHopUs[kAlgos][kProtos] = {
    {0.6, 1.9, 3.4}, {0.6, 1.25, 4.0}, {0, 0, 25.0}, {0, 0, 25.0},
    {0, 0, 3.7},     {0, 0, 2.8},      {0.6, 1.9, 3.4}, {0.6, 1.9, 3.4}};
inline constexpr double kPcieHopUs[kAlgos][kProtos] = {
    {1.0, 2.5, 5.7}, {1.0, 1.9, 4.0}, {0, 0, 0}, {0, 0, 0},
    {0, 0, 3.7},     {0, 0, 2.8},     {1.0, 2.5, 5.7}, {1.0, 2.5, 5.7}};
inline constexpr double kNetHopUs[kAlgos][kProtos] = {
    {2.7, 4.0, 14.0}, {5.0, 8.5, 14.0}, {0, 0, 18.0}, {0, 0, 20.9},
    {0, 0, 31.0},     {0, 0, 30.0},     {2.7, 4.0, 14.0}, {2.7, 4.0, 14.0}};

// clang-format on

// The hop constants above include the fabric NCCL was tuned on. Myriad splits each into a
// protocol overhead (constant minus this reference) plus the scenario's own fabric latency,
// so a scenario with slower switches or longer paths pays for them. The references are
// Myriad's assumption: 0.5 us through an NVSwitch, 1 us NIC-leaf-NIC, 1 us across PCIe.
inline constexpr double kReferenceNvlinkLatencyUs = 0.5;
inline constexpr double kReferencePcieLatencyUs = 1.0;
inline constexpr double kReferenceNetLatencyUs = 1.0;

// Inter-node rings pay a proxy overhead on every step (tuning.cc getNetOverhead: 1 us,
// tripled for Simple).
inline constexpr double kNetOverheadUs = 1.0;
inline constexpr double kNetOverheadSimpleFactor = 3.0;

// Fraction of the wire each protocol fills with payload: LL sends 4 B of data per 8 B line,
// LL128 120 B per 128 B line (tuning.cc applies 0.92 to ring LL128), Simple is raw data.
inline constexpr double kProtocolEfficiency[kProtos] = {0.5, 0.92, 1.0};

// Tree AllReduce bandwidth factor (tuning.cc: busBw * .92 for Tree AllReduce).
inline constexpr double kTreeEfficiency = 0.92;
// NVLS (NVSwitch multimem reduction) efficiency on Hopper (tuning.cc nvlsEfficiency 0.85).
inline constexpr double kNvlsEfficiency = 0.85;
// PAT bandwidth factor (tuning.cc: busBw *= .75 for PAT).
inline constexpr double kPatEfficiency = 0.75;

// Channels: NCCL builds two channels per NVLink ring on NVSwitch systems, up to MAXCHANNELS
// (32); NVLS runs on 16 channels (NCCL_NVLS_NCHANNELS default).
inline constexpr int kMaxChannels = 32;
inline constexpr int kChannelsPerNvlink = 2;
inline constexpr int kPcieChannels = 2;
inline constexpr int kNvlsChannels = 16;

// Channel count reduction for small messages (enqueue.cc): a channel is dropped while
// bytes < channels x threads x threshold. Threads per channel and per-thread thresholds
// (collectives.h NCCL_{LL,LL128,SIMPLE}_MAX_NTHREADS, NCCL_*_THREAD_THRESHOLD); the Ring LL
// threshold is multiplied by the rank count.
inline constexpr int kThreads[kProtos] = {512, 640, 512};
inline constexpr int kThreadThresholdBytes[kProtos] = {8, 8, 64};

// Pipeline chunking (enqueue.cc): Simple chunks start at 512 KiB (4 MiB buffer / 8 steps)
// and are halved down to 128 KiB until each channel holds 8 chunks per pipeline stage;
// NVLS uses 128 KiB chunks.
inline constexpr double kSimpleChunkBytes = 512.0 * 1024;
inline constexpr double kMinChunkBytes = 128.0 * 1024;
inline constexpr double kChunksPerStage = 8;
inline constexpr double kNvlsChunkBytes = 128.0 * 1024;

// Point-to-point scheduling: peers are served in rounds of (p2p channels / channels per peer)
// = 32 / 2 = 16 peers (NCCL_MAX_P2P_NCHANNELS, NCCL_NCHANNELS_PER_NET_PEER).
inline constexpr int kP2pPeersPerRound = 16;
// Channels (connections) a point-to-point transfer uses to a peer on another node
// (NCCL_NCHANNELS_PER_NET_PEER default).
inline constexpr int kP2pChannelsPerNetPeer = 2;

}  // namespace myriad::netmodel::nccl
