// The binary trace layout (docs/trace-format.md, "Binary format"), shared by reader and writer.
//
//   header (56 bytes)  magic "MYRTRACE", u32 version, u32 world size, u64 file size,
//                      u64 names offset, u64 communicators offset, u64 index offset, u64 ops
//   op blocks          rank 0's ops, rank 1's ops, ... (each op: kind byte, flags byte, fields)
//   names              u32 count, then per name: varint length, bytes (ids 1..count)
//   communicators      u32 count, then per communicator: varint name id, varint size, ranks
//   index              per rank: u64 block offset, u64 block length, u64 op count
//
// The tables come after the op blocks so that a writer can stream ops rank by rank and learn
// names as it goes; the header, written last, says where everything is. Integers are
// little-endian; varints are LEB128; signed fields are zigzag varints.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>

#include "myriad/netmodel/cluster.h"

namespace myriad::emulator::binary_trace {

static_assert(std::endian::native == std::endian::little,
              "the binary trace reader and writer copy little-endian integers directly");

inline constexpr char kMagic[8] = {'M', 'Y', 'R', 'T', 'R', 'A', 'C', 'E'};

// Header field offsets.
inline constexpr std::size_t kVersionAt = 8;
inline constexpr std::size_t kWorldSizeAt = 12;
inline constexpr std::size_t kFileSizeAt = 16;
inline constexpr std::size_t kNamesAt = 24;
inline constexpr std::size_t kCommsAt = 32;
inline constexpr std::size_t kIndexAt = 40;
inline constexpr std::size_t kOpCountAt = 48;
inline constexpr std::size_t kHeaderSize = 56;
inline constexpr std::size_t kIndexEntrySize = 24;

// Largest world a trace may declare: the largest cluster a scenario may describe, so that a
// corrupt header cannot make a reader reserve absurd amounts of memory (16,777,216 ranks made
// a 400 MB index).
inline constexpr std::uint32_t kMaxWorldSize = netmodel::kMaxClusterGpus;

// An upper bound on one encoded op: kind and flags (2 bytes) plus, for the largest kind (a
// kernel with every optional field), 20 varints of at most 10 bytes, two dtype bytes and an
// attention flags byte = 205, and its counts (a dtype byte and five 8-byte doubles) = 246.
// The decoder reads without bounds checks while this many bytes remain in the block.
inline constexpr std::size_t kMaxOpBytes = 256;

// The flags byte. Bit 0 and bit 1 mean the same for every kind; bits 2-7 are the kind's own.
inline constexpr std::uint8_t kHasStream = 1 << 0;    // a zigzag stream follows (stream != 0)
inline constexpr std::uint8_t kHasDuration = 1 << 1;  // a duration in ps follows (else -1)
// kernel
inline constexpr std::uint8_t kHasGrid = 1 << 2;
inline constexpr std::uint8_t kHasBlock = 1 << 3;
inline constexpr std::uint8_t kHasSharedMem = 1 << 4;
inline constexpr std::uint8_t kHasGemm = 1 << 5;
inline constexpr std::uint8_t kHasBytes = 1 << 6;      // a memory-bound kernel's bytes follow
inline constexpr std::uint8_t kHasAttention = 1 << 7;  // a fused attention's shape follows
// In a GEMM's data-type byte: its FP8 products are accumulated fast (GemmShape::
// fast_accumulation); readers before this bit refuse the byte as an unknown type.
inline constexpr std::uint8_t kGemmFastAccumulation = 1 << 7;
// The byte after a kernel's attention shape (its dimensions are 1 .. kMaxAttentionDim).
inline constexpr std::uint8_t kAttentionCausal = 1 << 0;
inline constexpr std::uint8_t kAttentionBackward = 1 << 1;
// Bits 2-3 (version 2): the AttentionKernel (0: the GPU's default).
inline constexpr int kAttentionKernelShift = 2;
inline constexpr std::uint8_t kAttentionKernelMask = 3 << kAttentionKernelShift;
inline constexpr std::int64_t kMaxAttentionDim = (std::int64_t{1} << 31) - 1;
// Version 2: the byte after a kernel's bytes. Bit 0: the bytes are a guess (Op::bytes_guessed).
inline constexpr std::uint8_t kBytesGuessed = 1 << 0;
// Bit 1: the kernel's KernelCounts follow: its tensor type (a byte), then fma, fp64, tensor,
// SFU and instruction counts, each an IEEE double (8 bytes, little-endian).
inline constexpr std::uint8_t kCountsFollow = 1 << 1;
// memcpy: bits 2-3 hold the copy kind; memcpy, memset: bit 4 marks a blocking call
inline constexpr int kCopyKindShift = 2;
inline constexpr std::uint8_t kCopyKindMask = 3 << kCopyKindShift;
inline constexpr std::uint8_t kBlocking = 1 << 4;
// stream_create
inline constexpr std::uint8_t kNonBlocking = 1 << 2;
inline constexpr std::uint8_t kHasPriority = 1 << 3;

inline void PutVarint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(static_cast<std::uint8_t>(v) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
inline std::uint64_t ZigZag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
inline std::int64_t UnZigZag(std::uint64_t v) {
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}
template <typename T>
void PutFixed(std::string& out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out.append(bytes, sizeof(T));
}
template <typename T>
T GetFixed(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace myriad::emulator::binary_trace
