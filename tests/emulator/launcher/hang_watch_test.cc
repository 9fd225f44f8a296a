// The hang watch's view of a process tree (emulator/launcher/hang_watch.cc): a child asleep in
// a read names its pipe and its RANK; a child at work on the CPU keeps the tree busy.
#include "myriad/emulator/hang_watch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace myriad::emulator {
namespace {

using ::testing::HasSubstr;

// Forks a child that sets RANK=7 and then runs `body`; returns its pid.
template <typename Body>
pid_t Child(Body body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("RANK", "7", 1);
    body();
    ::_exit(0);
  }
  return pid;
}

void Reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

TEST(HangWatch, AChildAsleepInAReadIsNamedByItsRankAndPipe) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = Child([&] {
    // environ is read from /proc, which holds what the process was exec'd with: exec a shell
    // that reads the pipe, with RANK in its environment.
    ::dup2(fds[0], 0);
    ::execl("/bin/sh", "sh", "-c", "exec cat >/dev/null", nullptr);
  });
  HangWatch watch(::getpid(), /*count_root=*/false);
  // Once the child is in its read (a loaded machine may take a while to get it there), a
  // look a moment later finds the tree idle.
  std::string blocked;
  for (int tries = 0; tries < 500; ++tries) {
    blocked = DescribeBlocked(watch.Blocked());
    if (blocked.find("in read on a pipe") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_THAT(blocked, ::testing::MatchesRegex("rank 7 \\(pid [0-9]+, cat\\): thread [0-9]+ "
                                               "\\(cat\\) in read on a pipe"))
      << blocked;
  watch.Look(0);  // the first look only records
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(watch.Look(10'000'000)) << "the reading child used the CPU";
  Reap(child);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(HangWatch, AChildAtWorkKeepsTheTreeBusy) {
  const pid_t child = Child([] {
    volatile double sum = 0;
    for (;;) sum = sum + 1;
  });
  HangWatch watch(::getpid(), /*count_root=*/false);
  watch.Look(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(watch.Look(10'000'000));
  Reap(child);
}

TEST(HangWatch, DescribingNamesEachProcessOnceAndCountsTheRest) {
  std::vector<BlockedThread> threads;
  for (int p = 1; p <= 6; ++p) {
    threads.push_back({p, p, "rank " + std::to_string(p), "main", "futex wait"});
    threads.push_back({p, p + 100, "rank " + std::to_string(p), "worker", "poll"});
  }
  const std::string text = DescribeBlocked(threads, 4);
  EXPECT_THAT(text, HasSubstr("rank 1: thread 1 (main) in futex wait; rank 2:"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("worker")));
  EXPECT_THAT(text, HasSubstr("rank 4: thread 4 (main) in futex wait; and 2 more processes"));
  EXPECT_EQ(DescribeBlocked({}), "no thread of the program is in a system call");
}

}  // namespace
}  // namespace myriad::emulator
