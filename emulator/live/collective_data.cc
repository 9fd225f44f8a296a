#include "collective_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <type_traits>

#include "myriad/emulator/op.h"

namespace myriad::emulator {
namespace {

// The wire's numbers are NCCL's, which emulator::DataType, emulator::ReduceOp and
// netmodel::CollectiveOp follow.
using Coll = netmodel::CollectiveOp;
constexpr std::uint8_t Num(DataType t) { return static_cast<std::uint8_t>(t); }
constexpr std::uint8_t Num(ReduceOp o) { return static_cast<std::uint8_t>(o); }
constexpr std::uint8_t Num(Coll c) { return static_cast<std::uint8_t>(c); }
constexpr std::uint8_t kProd = Num(ReduceOp::kProd), kMax = Num(ReduceOp::kMax),
                       kMin = Num(ReduceOp::kMin), kAvg = Num(ReduceOp::kAvg);
constexpr std::uint8_t kAllReduce = Num(Coll::kAllReduce), kAllGather = Num(Coll::kAllGather),
                       kReduceScatter = Num(Coll::kReduceScatter),
                       kBroadcast = Num(Coll::kBroadcast), kReduce = Num(Coll::kReduce),
                       kAllToAll = Num(Coll::kAllToAll), kSendRecv = Num(Coll::kSendRecv),
                       kGather = Num(Coll::kGather), kScatter = Num(Coll::kScatter);

const char* CollName(std::uint8_t c) {
  static const char* names[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce",
                                "AlltoAll",  "SendRecv",  "Gather",        "Scatter"};
  return c < std::size(names) ? names[c] : "an unknown collective";
}

// IEEE half and bfloat16 through float (round to nearest even on the way back).
float HalfToFloat(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  std::uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      std::uint32_t m = mant;
      do {
        ++e;
        m <<= 1;
      } while ((m & 0x400) == 0);
      bits = sign | static_cast<std::uint32_t>(127 - 15 - e) << 23 | (m & 0x3ff) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  return std::bit_cast<float>(bits);
}
std::uint16_t FloatToHalf(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const int exp = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  std::uint32_t mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff)
    return static_cast<std::uint16_t>(sign | 0x7c00 | (mant ? 0x200 : 0));
  if (exp >= 31) return static_cast<std::uint16_t>(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000;
    const int shift = 14 - exp;
    std::uint32_t half = mant >> shift;
    const std::uint32_t rest = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = static_cast<std::uint32_t>(exp) << 10 | mant >> 13;
  const std::uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;  // may carry into the exponent
  return static_cast<std::uint16_t>(sign | half);
}
float Bf16ToFloat(std::uint16_t b) { return std::bit_cast<float>(std::uint32_t{b} << 16); }
std::uint16_t FloatToBf16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<std::uint16_t>((x >> 16) | 0x40);  // NaN
  return static_cast<std::uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

template <typename T>
T Combine(T a, T b, std::uint8_t op) {
  switch (op) {
    case kProd:
      return static_cast<T>(a * b);
    case kMax:
      return a > b ? a : b;
    case kMin:
      return a < b ? a : b;
    default:  // sum, and avg's sum
      return static_cast<T>(a + b);
  }
}

// out[i] = op over the ranks' inputs at element offset `first` (count elements).
template <typename T>
void ReduceAs(const std::vector<const char*>& inputs, std::size_t first, std::size_t count,
              std::uint8_t op, char* out) {
  for (std::size_t i = 0; i < count; ++i) {
    T acc;
    std::memcpy(&acc, inputs[0] + (first + i) * sizeof(T), sizeof(T));
    for (std::size_t r = 1; r < inputs.size(); ++r) {
      T v;
      std::memcpy(&v, inputs[r] + (first + i) * sizeof(T), sizeof(T));
      acc = Combine(acc, v, op);
    }
    if (op == kAvg) acc = static_cast<T>(acc / static_cast<T>(inputs.size()));
    std::memcpy(out + i * sizeof(T), &acc, sizeof(T));
  }
}
// Half and bfloat16 reduce in float, each step rounded back, as NCCL's kernels do.
template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float)>
void ReduceHalfAs(const std::vector<const char*>& inputs, std::size_t first, std::size_t count,
                  std::uint8_t op, char* out) {
  for (std::size_t i = 0; i < count; ++i) {
    std::uint16_t bits;
    std::memcpy(&bits, inputs[0] + (first + i) * 2, 2);
    float acc = ToFloat(bits);
    for (std::size_t r = 1; r < inputs.size(); ++r) {
      std::memcpy(&bits, inputs[r] + (first + i) * 2, 2);
      acc = ToFloat(FromFloat(Combine(acc, ToFloat(bits), op)));
    }
    if (op == kAvg) acc /= static_cast<float>(inputs.size());
    bits = FromFloat(acc);
    std::memcpy(out + i * 2, &bits, 2);
  }
}

// False for a type Myriad does not reduce (the FP8 types).
bool Reduce(std::uint8_t dtype, const std::vector<const char*>& inputs, std::size_t first,
            std::size_t count, std::uint8_t op, char* out) {
  switch (static_cast<DataType>(dtype)) {
    case DataType::kInt8:
      ReduceAs<std::int8_t>(inputs, first, count, op, out);
      return true;
    case DataType::kUint8:
      ReduceAs<std::uint8_t>(inputs, first, count, op, out);
      return true;
    case DataType::kInt32:
      ReduceAs<std::int32_t>(inputs, first, count, op, out);
      return true;
    case DataType::kUint32:
      ReduceAs<std::uint32_t>(inputs, first, count, op, out);
      return true;
    case DataType::kInt64:
      ReduceAs<std::int64_t>(inputs, first, count, op, out);
      return true;
    case DataType::kUint64:
      ReduceAs<std::uint64_t>(inputs, first, count, op, out);
      return true;
    case DataType::kFloat32:
      ReduceAs<float>(inputs, first, count, op, out);
      return true;
    case DataType::kFloat64:
      ReduceAs<double>(inputs, first, count, op, out);
      return true;
    case DataType::kFloat16:
      ReduceHalfAs<HalfToFloat, FloatToHalf>(inputs, first, count, op, out);
      return true;
    case DataType::kBfloat16:
      ReduceHalfAs<Bf16ToFloat, FloatToBf16>(inputs, first, count, op, out);
      return true;
    default:
      return false;
  }
}

bool Reduces(std::uint8_t coll) {
  return coll == kAllReduce || coll == kReduceScatter || coll == kReduce;
}
bool Rooted(std::uint8_t coll) {
  return coll == kBroadcast || coll == kReduce || coll == kGather || coll == kScatter;
}

using wire::ReceiveElements;
using wire::SendElements;
static_assert(static_cast<int>(wire::DataColl::kScatter) == static_cast<int>(Coll::kScatter) &&
              static_cast<int>(wire::DataColl::kSendRecv) == static_cast<int>(Coll::kSendRecv) &&
              static_cast<int>(wire::DataColl::kAllReduce) == static_cast<int>(Coll::kAllReduce));

}  // namespace

std::size_t CollectiveData::ElementSize(std::uint8_t dtype) {
  return dtype <= Num(DataType::kFloat8e5m2) ? static_cast<std::size_t>(SizeOf(DataType{dtype}))
                                             : 0;
}

Result<std::vector<CollectiveData::Answer>> CollectiveData::Add(const wire::DataHeader& header,
                                                                const std::string& comm,
                                                                std::string bytes, Peer from) {
  if (ElementSize(header.dtype) == 0)
    return Status::InvalidArgument(
        fmt::format("communicator {}: data of unknown type {}", comm, header.dtype));
  if (header.nranks < 1 || header.rank < 0 || header.rank >= header.nranks)
    return Status::InvalidArgument(
        fmt::format("communicator {}: rank {} of {}", comm, header.rank, header.nranks));
  if (header.kind == wire::DataKind::kCollective)
    return AddCollective(header, comm, std::move(bytes), std::move(from));
  if (header.kind == wire::DataKind::kSend || header.kind == wire::DataKind::kRecv)
    return AddPointToPoint(header, comm, std::move(bytes), std::move(from));
  return Status::InvalidArgument(fmt::format("communicator {}: an unknown data frame", comm));
}

Result<std::vector<CollectiveData::Answer>> CollectiveData::AddCollective(const wire::DataHeader& h,
                                                                          const std::string& comm,
                                                                          std::string bytes,
                                                                          Peer from) {
  const std::size_t size = ElementSize(h.dtype);
  const std::string call =
      fmt::format("communicator {}: collective #{} ({})", comm, h.sequence, CollName(h.coll));
  if (h.coll > kScatter || h.coll == kSendRecv)
    return Status::InvalidArgument(call + ": not a collective");
  if (Rooted(h.coll) && (h.root < 0 || h.root >= h.nranks))
    return Status::InvalidArgument(fmt::format("{}: root {} of {} ranks", call, h.root, h.nranks));
  if (bytes.size() != SendElements(h, h.rank) * size)
    return Status::InvalidArgument(fmt::format("{}: rank {} sent {} bytes, {} expected", call,
                                               h.rank, bytes.size(),
                                               SendElements(h, h.rank) * size));
  Collective& c = collectives_[{comm, h.sequence}];
  if (c.ranks.empty()) {
    c.first = h;
    c.first_rank = h.rank;
    c.ranks.resize(static_cast<std::size_t>(h.nranks));
  }
  const wire::DataHeader& f = c.first;
  if (f.coll != h.coll || f.nranks != h.nranks || f.count != h.count || f.dtype != h.dtype ||
      (Reduces(h.coll) && f.redop != h.redop) || (Rooted(h.coll) && f.root != h.root))
    return Status::InvalidArgument(fmt::format(
        "communicator {}: collective #{} does not match across ranks: rank {} called {} of {} "
        "elements (type {}, op {}, root {}, {} ranks), rank {} called {} of {} elements (type "
        "{}, op {}, root {}, {} ranks)",
        comm, h.sequence, c.first_rank, CollName(f.coll), f.count, f.dtype, f.redop, f.root,
        f.nranks, h.rank, CollName(h.coll), h.count, h.dtype, h.redop, h.root, h.nranks));
  Contribution& mine = c.ranks[static_cast<std::size_t>(h.rank)];
  if (mine.present)
    return Status::InvalidArgument(fmt::format("{}: rank {} joined twice", call, h.rank));
  mine = {true, bytes, std::move(from), h.tag, h.thread, h.time_ps};
  ++c.arrived;
  const std::vector<int>* members = nullptr;
  if (members_ != nullptr) {
    const auto it = members_->find(comm);
    if (it != members_->end()) members = &it->second;
  }
  for (int replica = 1; fold_.folded() && replica < fold_.replicas; ++replica) {
    auto mirror = InferMirrorMembership(fold_, comm, h.nranks, h.rank, replica, members);
    if (!mirror.ok()) return Status::InvalidArgument(call + ": " + mirror.status().message());
    // A communicator inside the live replica (all its members live: each replica has a copy),
    // or a mirror of another group's copy: not this communicator's member.
    if (mirror->inside_replica) break;
    if (mirror->own_copy) continue;
    Contribution& theirs = c.ranks[static_cast<std::size_t>(mirror->rank)];
    if (theirs.present)
      return Status::InvalidArgument(
          fmt::format("{}: rank {} joined twice (a live process took the place of a mirror)", call,
                      mirror->rank));
    std::string mirrors = bytes;
    const std::size_t expected = SendElements(h, mirror->rank) * size;
    if (expected == 0) {
      mirrors.clear();  // a rooted call's non-root: it sends nothing
    } else if (mirrors.size() != expected) {
      // The mirror is the root of a rooted call its source is not (a group of broadcasts
      // that gathers, one per root): it sends what its source sent as the root of such a
      // call, since the replicas hold the same.
      auto it = root_bytes_.find({comm, h.coll, h.count, h.dtype});
      if (it == root_bytes_.end() || it->second.size() != expected)
        return Status::InvalidArgument(fmt::format(
            "{}: its root, rank {}, is a mirror of rank {} (rank folding), which has not sent "
            "the data of such a call as a root: Myriad cannot tell what the mirror sends",
            call, mirror->rank, h.rank));
      mirrors = it->second;
    }
    theirs = {true, std::move(mirrors), nullptr, 0, 0, h.time_ps};
    ++c.arrived;
  }
  if (fold_.folded() && Rooted(h.coll) && h.root == h.rank)
    root_bytes_[{comm, h.coll, h.count, h.dtype}] = bytes;
  if (c.arrived < h.nranks) return std::vector<Answer>{};

  // Everyone is here: each rank's part of the result.
  const auto n = static_cast<std::size_t>(h.nranks);
  const std::size_t count = h.count;
  std::vector<const char*> inputs;
  for (const Contribution& r : c.ranks) inputs.push_back(r.bytes.data());
  std::vector<Answer> answers(n);
  std::int64_t latest = 0;
  for (const Contribution& r : c.ranks) latest = std::max(latest, r.time);
  for (std::size_t r = 0; r < n; ++r) {
    answers[r].to = c.ranks[r].from;
    answers[r].tag = c.ranks[r].tag;
    answers[r].thread = c.ranks[r].thread;
    answers[r].time = latest;
    answers[r].bytes.resize(ReceiveElements(h, static_cast<int>(r)) * size);
  }
  const auto root = static_cast<std::size_t>(std::max(h.root, 0));
  bool reduced = true;
  switch (h.coll) {
    case kAllReduce:
      reduced = Reduce(h.dtype, inputs, 0, count, h.redop, answers[0].bytes.data());
      for (std::size_t r = 1; r < n; ++r) answers[r].bytes = answers[0].bytes;
      break;
    case kReduce:
      reduced = Reduce(h.dtype, inputs, 0, count, h.redop, answers[root].bytes.data());
      break;
    case kReduceScatter:
      for (std::size_t r = 0; r < n && reduced; ++r)
        reduced = Reduce(h.dtype, inputs, r * count, count, h.redop, answers[r].bytes.data());
      break;
    case kBroadcast:
      for (std::size_t r = 0; r < n; ++r) answers[r].bytes = c.ranks[root].bytes;
      break;
    case kAllGather:
    case kGather:
      for (std::size_t r = 0; r < n; ++r) {
        if (answers[r].bytes.empty()) continue;
        for (std::size_t from_rank = 0; from_rank < n; ++from_rank)
          std::memcpy(answers[r].bytes.data() + from_rank * count * size,
                      c.ranks[from_rank].bytes.data(), count * size);
      }
      break;
    case kAllToAll:
      for (std::size_t r = 0; r < n; ++r)
        for (std::size_t from_rank = 0; from_rank < n; ++from_rank)
          std::memcpy(answers[r].bytes.data() + from_rank * count * size,
                      c.ranks[from_rank].bytes.data() + r * count * size, count * size);
      break;
    case kScatter:
      for (std::size_t r = 0; r < n; ++r)
        std::memcpy(answers[r].bytes.data(), c.ranks[root].bytes.data() + r * count * size,
                    count * size);
      break;
    default:
      break;
  }
  collectives_.erase({comm, h.sequence});
  if (!reduced) return Status::Unsupported(call + ": Myriad does not reduce FP8 data");
  return answers;
}

Result<std::vector<CollectiveData::Answer>> CollectiveData::AddPointToPoint(
    const wire::DataHeader& h, const std::string& comm, std::string bytes, Peer from) {
  if (h.root < 0 || h.root >= h.nranks || h.root == h.rank)
    return Status::InvalidArgument(
        fmt::format("communicator {}: rank {} sends to or receives from peer {} of {}", comm,
                    h.rank, h.root, h.nranks));
  const bool send = h.kind == wire::DataKind::kSend;
  const int sender = send ? h.rank : h.root, receiver = send ? h.root : h.rank;
  const auto key = std::make_tuple(comm, sender, receiver, h.sequence);
  Message& m = messages_[key];
  std::vector<Answer> answers;
  if (send) {
    if (m.sent)
      return Status::InvalidArgument(
          fmt::format("communicator {}: rank {} sent message #{} to rank {} twice", comm, sender,
                      h.sequence, receiver));
    if (bytes.size() != h.count * ElementSize(h.dtype))
      return Status::InvalidArgument(
          fmt::format("communicator {}: a send of {} bytes for {} "
                      "elements",
                      comm, bytes.size(), h.count));
    if (m.receiver && (h.count != m.count || h.dtype != m.dtype))
      return Status::InvalidArgument(fmt::format(
          "communicator {}: rank {} sent {} elements of type {} to rank {}, which receives {} "
          "of type {}",
          comm, sender, h.count, h.dtype, receiver, m.count, m.dtype));
    m.sent = true;
    m.sent_at = h.time_ps;
    m.bytes = std::move(bytes);
    m.count = h.count;
    m.dtype = h.dtype;
  } else {
    if (m.receiver)
      return Status::InvalidArgument(
          fmt::format("communicator {}: rank {} received message #{} from rank {} twice", comm,
                      receiver, h.sequence, sender));
    m.receiver = std::move(from);
    m.receiver_tag = h.tag;
    m.receiver_thread = h.thread;
    m.received_at = h.time_ps;
    if (!m.sent) {
      m.count = h.count;
      m.dtype = h.dtype;
    }
    if (m.sent && (h.count != m.count || h.dtype != m.dtype))
      return Status::InvalidArgument(fmt::format(
          "communicator {}: rank {} sent {} elements of type {} to rank {}, which receives {} "
          "of type {}",
          comm, sender, m.count, m.dtype, receiver, h.count, h.dtype));
  }
  if (m.sent && m.receiver) {
    answers.push_back({std::move(m.receiver), m.receiver_tag, m.receiver_thread,
                       std::max(m.sent_at, m.received_at), std::move(m.bytes)});
    messages_.erase(key);
  }
  return answers;
}

}  // namespace myriad::emulator
