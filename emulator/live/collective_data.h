// The data of small collectives and send/recv, computed for real across processes: what a live
// program reads back on the host after a broadcast or an all-reduce is the true result
// (PyTorch's DDP checks parameter shapes, rebuilds its buckets from broadcast indices, and
// broadcast_object_list pickles through NCCL). Kernels are not run, so only what copies and
// these exchanges put in device memory is real. Apart from timing: the engine times the same
// collectives as ops, whatever their size.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "myriad/emulator/live.h"
#include "myriad/status.h"
#include "protocol/wire.h"

namespace myriad::emulator {

class CollectiveData {
 public:
  // Whoever sent a frame; the answer goes back to it (the server's connection).
  using Peer = std::shared_ptr<void>;
  struct Answer {
    Peer to;
    std::uint32_t tag = 0;     // the receiver's DataHeader::tag
    std::uint32_t thread = 0;  // the receiver's DataHeader::thread
    // When the receiver resumes: the latest clock among the calls it waited for (its own
    // included), so that it never resumes behind virtual time that passed while it waited.
    std::int64_t time = 0;
    std::string bytes;
  };

  // A rank's frame. Returns the answers due now (every member's once the last has arrived; a
  // receive's once its send has), or an error naming the communicator and the call when the
  // members disagree (different collectives, counts, types, roots) or a frame is malformed.
  Result<std::vector<Answer>> Add(const wire::DataHeader& header, const std::string& comm,
                                  std::string bytes, Peer from);

  // Rank folding: a live rank's contribution to a communicator that spans the replicas also
  // stands for its mirrors' (they replay its calls, so they send the same bytes); answers
  // due to mirrors have no `to`.
  void SetFold(const FoldPlan& plan) { fold_ = plan; }
  // Communicators' members as PyTorch named them (read under the lock Add is called with).
  void SetMembers(const std::map<std::string, std::vector<int>>* members) { members_ = members; }

  // Bytes of one element of an ncclDataType_t, or 0 for an unknown type.
  static std::size_t ElementSize(std::uint8_t dtype);

 private:
  struct Contribution {
    bool present = false;
    std::string bytes;
    Peer from;
    std::uint32_t tag = 0;
    std::uint32_t thread = 0;
    std::int64_t time = 0;
  };
  struct Collective {
    wire::DataHeader first;  // the call as the first member made it
    int first_rank = 0;
    int arrived = 0;
    std::vector<Contribution> ranks;
  };
  struct Message {
    bool sent = false;
    std::string bytes;
    std::uint64_t count = 0;
    std::uint8_t dtype = 0;
    std::int64_t sent_at = 0;
    Peer receiver;  // a receive waiting for its send
    std::uint32_t receiver_tag = 0;
    std::uint32_t receiver_thread = 0;
    std::int64_t received_at = 0;
  };
  Result<std::vector<Answer>> AddCollective(const wire::DataHeader& h, const std::string& comm,
                                            std::string bytes, Peer from);
  Result<std::vector<Answer>> AddPointToPoint(const wire::DataHeader& h, const std::string& comm,
                                              std::string bytes, Peer from);

  FoldPlan fold_;
  const std::map<std::string, std::vector<int>>* members_ = nullptr;
  // Folding: what a live rank last sent as the root of a rooted call, by (communicator,
  // collective, count, type), for the calls whose root is a mirror.
  std::map<std::tuple<std::string, std::uint8_t, std::uint64_t, std::uint8_t>, std::string>
      root_bytes_;
  std::map<std::pair<std::string, std::uint64_t>, Collective> collectives_;
  // (communicator, sender, receiver, n-th message between them)
  std::map<std::tuple<std::string, int, int, std::uint64_t>, Message> messages_;
};

}  // namespace myriad::emulator
