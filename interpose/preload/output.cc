// A process under `myriad run` writes its stdout through a pipe, which stdio buffers in
// blocks: lines a process printed would be lost when Myriad stops it (a peer failed, a
// timeout). Line buffering, as on a terminal, puts every finished line in the pipe at once.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

__attribute__((constructor)) void LineBufferedOutput() {
  // Before the program (whose constructors run after its preloaded libraries') writes
  // anything: setvbuf must come before the first output on the stream.
  const char* socket = std::getenv("MYRIAD_SOCKET");
  if (socket != nullptr && *socket != '\0') std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  // The process `myriad run` started marks itself; a process it starts in turn (torchrun's
  // workers, a shell's commands) inherits the mark and tells Myriad it is a descendant, which
  // gets a process index of its own (cudart/client.cc).
  if (socket != nullptr && std::getenv("MYRIAD_LAUNCHED_PID") == nullptr)
    ::setenv("MYRIAD_LAUNCHED_PID", std::to_string(::getpid()).c_str(), 0);
}

}  // namespace
