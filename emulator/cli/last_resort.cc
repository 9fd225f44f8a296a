// The last resort against a bug: a fatal signal, an uncaught exception (on any thread), or
// memory running out ends Myriad with one line on stderr and exit status 70 (EX_SOFTWARE),
// never a core dump or a page of a backtrace. Inputs are validated before they get this far
// (docs/ARCHITECTURE.md); this only makes a missed case fail like the rest.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "cli/commands.h"

namespace myriad::cli {
namespace {

// Async-signal-safe: write(2) of a fixed text, then _exit.
void WriteLine(const char* text) {
  const std::size_t length = std::strlen(text);
  if (::write(STDERR_FILENO, text, length) < 0) return;
}

void OnFatalSignal(int signal) {
  WriteLine("myriad: internal error: ");
  switch (signal) {
    case SIGSEGV:
      WriteLine("invalid memory access (SIGSEGV)");
      break;
    case SIGBUS:
      WriteLine("bus error (SIGBUS)");
      break;
    case SIGFPE:
      WriteLine("arithmetic error (SIGFPE)");
      break;
    case SIGILL:
      WriteLine("illegal instruction (SIGILL)");
      break;
    default:
      WriteLine("aborted (SIGABRT)");
  }
  WriteLine(": a bug in Myriad; please report it with the command and its input files\n");
  ::_exit(kExitInternalError);
}

void OnTerminate() {
  std::string what = "an uncaught exception";
  bool out_of_memory = false;
  if (const std::exception_ptr current = std::current_exception()) {
    try {
      std::rethrow_exception(current);
    } catch (const std::bad_alloc&) {
      out_of_memory = true;
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
  }
  if (out_of_memory) {
    WriteLine(
        "myriad: error: out of memory: the input describes more than this machine can hold "
        "(a smaller cluster, trace or batch, or rank folding, may fit)\n");
  } else {
    const std::string line = "myriad: internal error: " + what +
                             ": a bug in Myriad; please report it with the command and its "
                             "input files\n";
    WriteLine(line.c_str());
  }
  ::_exit(kExitInternalError);
}

}  // namespace

void InstallLastResort() {
  std::set_terminate(OnTerminate);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return;  // the sanitizer's own reports say more
#else
  // Its own stack, so that running out of stack (deep recursion) still gets the line.
  static char alternate[1 << 16];
  stack_t stack{};
  stack.ss_sp = alternate;
  stack.ss_size = sizeof(alternate);
  ::sigaltstack(&stack, nullptr);
  struct sigaction action {};
  action.sa_handler = OnFatalSignal;
  action.sa_flags = SA_ONSTACK | SA_RESETHAND;
  ::sigemptyset(&action.sa_mask);
  for (int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
    ::sigaction(signal, &action, nullptr);
#endif
}

}  // namespace myriad::cli
