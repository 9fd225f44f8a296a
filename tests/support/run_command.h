// Runs a shell command from a test and captures what it prints on stdout.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>
#include <utility>

namespace myriad::testing {

// Returns the command's exit status (-1 if it did not exit normally) and its stdout; use
// shell redirections in `command` to capture stderr ("2>&1", "2>&1 >/dev/null").
inline std::pair<int, std::string> RunCommand(const std::string& command) {
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, ""};
  std::string output;
  std::array<char, 4096> buffer;
  std::size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

}  // namespace myriad::testing
