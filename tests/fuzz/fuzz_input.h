// What every fuzz target shares: the input written to a file of its own (the readers take
// paths, as the commands do), in a directory with files an input may include.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

namespace myriad::fuzz {

// A directory of this process's own under /tmp, made once, holding `base.toml`: a valid
// one-node cluster that a fuzzed scenario may include (`include = "base.toml"`).
inline const std::string& Dir() {
  static const std::string dir = [] {
    std::string d = "/tmp/myriad_fuzz_" + std::to_string(::getpid());
    ::mkdir(d.c_str(), 0700);
    std::ofstream(d + "/base.toml") << "[cluster]\ngpu = \"h100-sxm\"\nnodes = 1\n"
                                       "gpus_per_node = 8\n";
    return d;
  }();
  return dir;
}

// Writes the input to Dir()/NAME and returns the path.
inline std::string WriteInput(const std::uint8_t* data, std::size_t size, const char* name) {
  const std::string path = Dir() + "/" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

// An error is one line of printable text (myriad/status.h): a line break or a terminal
// escape from the input in a message is a finding.
inline void CheckMessage(const std::string& message) {
  for (unsigned char c : message)
    if (c < 0x20 || c == 0x7f) std::abort();
}

}  // namespace myriad::fuzz
