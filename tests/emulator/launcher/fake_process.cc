// A stand-in for a CUDA program under `myriad run`, without CUDA: it speaks the wire protocol
// the shims speak. Each of its devices runs STEPS kernels of KERNEL_US and synchronises after
// each; it prints the virtual time Myriad answers. For launcher tests.
//
//   myriad_fake_process [--kernel-us X] [--steps N] [--exit-status S] [--crash-at-step K]
//                       [--bad-op-at-step K]   (an op of an unknown kind: the run fails)
//                       [--gpus G]   (drives G of the devices it sees, from LOCAL_RANK x G)
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "protocol/client.h"

namespace {

int Env(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  double kernel_us = 100;
  int steps = 2, exit_status = 0, crash_at = -1, bad_op_at = -1, gpus = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--kernel-us")) kernel_us = std::atof(argv[i + 1]);
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--exit-status")) exit_status = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--crash-at-step")) crash_at = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--bad-op-at-step")) bad_op_at = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--gpus")) gpus = std::atoi(argv[i + 1]);
  }
  const char* socket = std::getenv("MYRIAD_SOCKET");
  const int process = Env("MYRIAD_PROCESS", -1);
  const int devices = Env("MYRIAD_DEVICES", 0);
  if (!socket || process < 0 || devices < 1) {
    std::fprintf(stderr, "not started by myriad run\n");
    return 3;
  }
  myriad::wire::Client client;
  if (!client.Connect(socket) || !client.SendHello(process, devices) ||
      !client.SendNames({{1, "fake_kernel"}})) {
    std::fprintf(stderr, "cannot talk to myriad\n");
    return 4;
  }
  // As real programs do: device (LOCAL_RANK x G + i) of the node's devices it sees.
  const int first = Env("LOCAL_RANK", 0) * gpus % devices;
  std::printf("rank %d of %d (local %d), %d of %d devices\n", Env("RANK", -1),
              Env("WORLD_SIZE", -1), Env("LOCAL_RANK", -1), gpus, devices);
  std::int64_t clock = 0;  // this thread's virtual clock: the last answer's time
  for (int step = 0; step < steps; ++step) {
    if (step == crash_at) ::raise(SIGSEGV);
    for (int d = first; d < first + gpus; ++d) {
      myriad::wire::WireOp ops[2];
      ops[0].kind = 0;  // kernel
      ops[0].name = 1;
      ops[0].duration_ps = static_cast<std::int64_t>(kernel_us * 1e6);
      ops[1].kind = 8;  // device_sync
      ops[1].flags = myriad::wire::kWantsReply;
      if (step == bad_op_at) ops[0].kind = 200;
      myriad::wire::Reply reply;
      std::string fatal;
      if (!client.SendOps(d, ops, 2, 0, clock)) return 5;
      if (!client.ReadReply(reply, &fatal)) {
        std::fprintf(stderr, "the run ended: %s\n", fatal.c_str());
        return 6;
      }
      clock = reply.host_time_ps;
      std::printf("step %d device %d: %.3f us\n", step, d - first,
                  static_cast<double>(reply.host_time_ps) / 1e6);
    }
  }
  std::fflush(stdout);
  return exit_status;
}
