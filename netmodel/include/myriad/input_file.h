// Inputs Myriad reads whole (scenarios and their includes, traces, reports) must be regular
// files of a sane size: a FIFO would block the read forever, /dev/zero would grow memory
// without end, and a directory says nothing useful once opened.
#pragma once

#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "myriad/status.h"

namespace myriad {

// Ok for a regular file of at most `max_bytes` (0: any size) and for a path that does not
// exist (the caller's open says so); otherwise an error naming `path` and what it is.
inline Status CheckInputFile(const std::string& path, std::string_view what,
                             std::uint64_t max_bytes = 0) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::Ok();
  if (S_ISDIR(st.st_mode))
    return Status::InvalidArgument(fmt::format("{}: is a directory, not a {}", path, what));
  if (!S_ISREG(st.st_mode))
    return Status::InvalidArgument(fmt::format(
        "{}: is not a regular file (a FIFO, device or socket): a {} is read from a file", path,
        what));
  if (max_bytes > 0 && static_cast<std::uint64_t>(st.st_size) > max_bytes)
    return Status::InvalidArgument(fmt::format("{}: {} bytes is more than a {} may be ({} bytes)",
                                               path, static_cast<std::uint64_t>(st.st_size), what,
                                               max_bytes));
  return Status::Ok();
}

}  // namespace myriad
