// The data of small collectives, computed across ranks (emulator/live/collective_data.cc).
#include "collective_data.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

namespace myriad::emulator {
namespace {

constexpr std::uint8_t kFloat32 = 7, kBfloat16 = 9, kInt32 = 2;
constexpr std::uint8_t kAllReduce = 0, kAllGather = 1, kReduceScatter = 2, kBroadcast = 3;
constexpr std::uint8_t kSum = 0, kMax = 2, kAvg = 4;

template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}
template <typename T>
std::vector<T> Values(const std::string& bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

wire::DataHeader Call(std::uint8_t coll, std::uint8_t dtype, std::uint8_t redop, int rank,
                      int nranks, std::uint64_t count, int root = -1) {
  wire::DataHeader h;
  h.coll = coll;
  h.dtype = dtype;
  h.redop = redop;
  h.rank = rank;
  h.nranks = nranks;
  h.count = count;
  h.root = root;
  return h;
}

TEST(CollectiveDataTest, AllReduceAnswersEveryRankOnceTheLastArrives) {
  CollectiveData data;
  auto p0 = std::make_shared<int>(0), p1 = std::make_shared<int>(1);
  auto first =
      data.Add(Call(kAllReduce, kFloat32, kSum, 0, 2, 3), "c", Bytes<float>({1, 2, 3}), p0);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->empty());
  auto second =
      data.Add(Call(kAllReduce, kFloat32, kSum, 1, 2, 3), "c", Bytes<float>({10, 20, 30}), p1);
  ASSERT_TRUE(second.ok()) << second.status().message();
  ASSERT_EQ(second->size(), 2u);
  for (const auto& a : *second) EXPECT_EQ(Values<float>(a.bytes), (std::vector<float>{11, 22, 33}));
  EXPECT_EQ((*second)[0].to, p0);
}

TEST(CollectiveDataTest, ReductionsByTypeAndOp) {
  CollectiveData data;
  auto peer = std::make_shared<int>(0);
  ASSERT_TRUE(
      data.Add(Call(kAllReduce, kInt32, kMax, 0, 2, 2), "m", Bytes<std::int32_t>({5, -1}), peer)
          .ok());
  auto max =
      data.Add(Call(kAllReduce, kInt32, kMax, 1, 2, 2), "m", Bytes<std::int32_t>({3, 7}), peer);
  ASSERT_TRUE(max.ok());
  EXPECT_EQ(Values<std::int32_t>((*max)[0].bytes), (std::vector<std::int32_t>{5, 7}));
  // bfloat16 average: 1.0 (0x3f80) and 3.0 (0x4040) give 2.0 (0x4000).
  ASSERT_TRUE(data.Add(Call(kAllReduce, kBfloat16, kAvg, 0, 2, 1), "b",
                       Bytes<std::uint16_t>({0x3f80}), peer)
                  .ok());
  auto avg = data.Add(Call(kAllReduce, kBfloat16, kAvg, 1, 2, 1), "b",
                      Bytes<std::uint16_t>({0x4040}), peer);
  ASSERT_TRUE(avg.ok());
  EXPECT_EQ(Values<std::uint16_t>((*avg)[1].bytes), (std::vector<std::uint16_t>{0x4000}));
}

TEST(CollectiveDataTest, GathersScattersAndBroadcasts) {
  CollectiveData data;
  auto peer = std::make_shared<int>(0);
  ASSERT_TRUE(
      data.Add(Call(kAllGather, kInt32, kSum, 1, 2, 1), "g", Bytes<std::int32_t>({8}), peer).ok());
  auto gathered =
      data.Add(Call(kAllGather, kInt32, kSum, 0, 2, 1), "g", Bytes<std::int32_t>({4}), peer);
  ASSERT_TRUE(gathered.ok());
  EXPECT_EQ(Values<std::int32_t>((*gathered)[0].bytes), (std::vector<std::int32_t>{4, 8}));
  // Reduce-scatter: rank r gets the sum of block r.
  ASSERT_TRUE(
      data.Add(Call(kReduceScatter, kInt32, kSum, 0, 2, 1), "r", Bytes<std::int32_t>({1, 2}), peer)
          .ok());
  auto scattered = data.Add(Call(kReduceScatter, kInt32, kSum, 1, 2, 1), "r",
                            Bytes<std::int32_t>({10, 20}), peer);
  ASSERT_TRUE(scattered.ok());
  EXPECT_EQ(Values<std::int32_t>((*scattered)[0].bytes), (std::vector<std::int32_t>{11}));
  EXPECT_EQ(Values<std::int32_t>((*scattered)[1].bytes), (std::vector<std::int32_t>{22}));
  // Broadcast: only the root sends.
  ASSERT_TRUE(data.Add(Call(kBroadcast, kInt32, kSum, 1, 2, 2, 0), "x", "", peer).ok());
  auto broadcast =
      data.Add(Call(kBroadcast, kInt32, kSum, 0, 2, 2, 0), "x", Bytes<std::int32_t>({7, 9}), peer);
  ASSERT_TRUE(broadcast.ok());
  EXPECT_EQ(Values<std::int32_t>((*broadcast)[0].bytes), (std::vector<std::int32_t>{7, 9}));
  EXPECT_EQ(Values<std::int32_t>((*broadcast)[1].bytes), (std::vector<std::int32_t>{7, 9}));
}

TEST(CollectiveDataTest, SendMeetsReceiveInEitherOrder) {
  CollectiveData data;
  auto receiver = std::make_shared<int>(1);
  wire::DataHeader recv = Call(0, kInt32, 0, 1, 2, 2, 0);
  recv.kind = wire::DataKind::kRecv;
  recv.tag = 5;
  auto waiting = data.Add(recv, "p", "", receiver);
  ASSERT_TRUE(waiting.ok());
  EXPECT_TRUE(waiting->empty());
  wire::DataHeader send = Call(0, kInt32, 0, 0, 2, 2, 1);
  send.kind = wire::DataKind::kSend;
  auto delivered = data.Add(send, "p", Bytes<std::int32_t>({3, 4}), std::make_shared<int>(0));
  ASSERT_TRUE(delivered.ok());
  ASSERT_EQ(delivered->size(), 1u);
  EXPECT_EQ((*delivered)[0].to, receiver);
  EXPECT_EQ((*delivered)[0].tag, 5u);
  EXPECT_EQ(Values<std::int32_t>((*delivered)[0].bytes), (std::vector<std::int32_t>{3, 4}));
}

// A waiting member holds no virtual time back, so it resumes at the latest member's clock
// (a receive: the later of its own and its send's), and each answer names its thread.
TEST(CollectiveDataTest, AnswersResumeAtTheLatestCallersClock) {
  CollectiveData data;
  wire::DataHeader a = Call(kAllReduce, kInt32, kSum, 0, 2, 1), b = a;
  b.rank = 1;
  a.thread = 3;
  a.time_ps = 900;
  b.thread = 0;
  b.time_ps = 400;
  ASSERT_TRUE(data.Add(a, "c", Bytes<std::int32_t>({1}), std::make_shared<int>(0)).ok());
  auto answers = data.Add(b, "c", Bytes<std::int32_t>({2}), std::make_shared<int>(1));
  ASSERT_TRUE(answers.ok());
  ASSERT_EQ(answers->size(), 2u);
  EXPECT_EQ((*answers)[0].thread, 3u);
  EXPECT_EQ((*answers)[1].thread, 0u);
  EXPECT_EQ((*answers)[0].time, 900);
  EXPECT_EQ((*answers)[1].time, 900);

  for (const std::int64_t sent_at : {100, 700}) {
    wire::DataHeader recv = Call(0, kInt32, 0, 1, 2, 1, 0), send = Call(0, kInt32, 0, 0, 2, 1, 1);
    recv.kind = wire::DataKind::kRecv;
    send.kind = wire::DataKind::kSend;
    recv.sequence = send.sequence = static_cast<std::uint64_t>(sent_at);
    recv.thread = 2;
    recv.time_ps = 500;
    send.time_ps = sent_at;
    ASSERT_TRUE(data.Add(recv, "p", "", std::make_shared<int>(1)).ok());
    auto delivered = data.Add(send, "p", Bytes<std::int32_t>({5}), std::make_shared<int>(0));
    ASSERT_TRUE(delivered.ok());
    ASSERT_EQ(delivered->size(), 1u);
    EXPECT_EQ((*delivered)[0].thread, 2u);
    EXPECT_EQ((*delivered)[0].time, std::max<std::int64_t>(500, sent_at));
  }
}

TEST(CollectiveDataTest, MismatchedCallsAreAnErrorNamingTheCommunicator) {
  CollectiveData data;
  auto peer = std::make_shared<int>(0);
  ASSERT_TRUE(
      data.Add(Call(kAllReduce, kFloat32, kSum, 0, 2, 3), "grads", Bytes<float>({1, 2, 3}), peer)
          .ok());
  auto wrong =
      data.Add(Call(kAllReduce, kFloat32, kSum, 1, 2, 2), "grads", Bytes<float>({1, 2}), peer);
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(wrong.status().message(),
              ::testing::HasSubstr("communicator grads: collective #0 does not match across "
                                   "ranks: rank 0 called AllReduce of 3 elements"));
  // A frame whose bytes do not fit its call.
  auto short_frame =
      data.Add(Call(kAllReduce, kFloat32, kSum, 0, 2, 3), "other", Bytes<float>({1}), peer);
  EXPECT_FALSE(short_frame.ok());
}

}  // namespace
}  // namespace myriad::emulator
