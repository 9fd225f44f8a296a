// OpenTrace (format detection), the in-memory workload, and atomic file output.
#include "myriad/emulator/trace.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "myriad/input_file.h"
#include "trace/binary_format.h"
#include "trace/trace_internal.h"

namespace myriad::emulator {
namespace {

namespace fs = std::filesystem;

class VectorSource : public OpSource {
 public:
  explicit VectorSource(const std::vector<Op>& ops) : ops_(ops) {}
  Result<bool> Next(Op& op) override {
    if (next_ == ops_.size()) return false;
    op = ops_[next_++];
    return true;
  }

 private:
  const std::vector<Op>& ops_;
  std::size_t next_ = 0;
};

}  // namespace

InMemoryWorkload::InMemoryWorkload(int world_size, std::string description)
    : description_(std::move(description)), ops_(static_cast<std::size_t>(world_size)) {}

Result<std::unique_ptr<OpSource>> InMemoryWorkload::OpenRank(int rank) {
  if (rank < 0 || rank >= world_size()) {
    return Status::InvalidArgument(
        fmt::format("{}: rank {} is outside its {} ranks", description_, rank, world_size()));
  }
  return std::unique_ptr<OpSource>(
      std::make_unique<VectorSource>(ops_[static_cast<std::size_t>(rank)]));
}

Result<std::unique_ptr<Workload>> OpenTrace(const std::string& path) {
  std::error_code error;
  if (fs::is_directory(path, error)) {
    return Status::InvalidArgument(fmt::format("{}: is a directory, not a trace file", path));
  }
  if (Status st = CheckInputFile(path, "trace"); !st.ok()) return st;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::NotFound(
        fmt::format("{}: cannot open trace file: {}", path, std::strerror(errno)));
  }
  char head[sizeof(binary_trace::kMagic)] = {};
  in.read(head, sizeof(head));
  const auto got = static_cast<std::size_t>(in.gcount());
  if (got == sizeof(head) && std::memcmp(head, binary_trace::kMagic, sizeof(head)) == 0) {
    return trace_internal::OpenBinaryTrace(path);
  }
  // Binary traces are recognised by content; the name only decides which error helps more.
  if (fs::path(path).extension() == ".mtrace") {
    if (got < sizeof(head) && std::memcmp(head, binary_trace::kMagic, got) == 0) {
      return Status::InvalidArgument(
          fmt::format("{}: truncated binary trace ({} bytes, shorter than its header)", path, got));
    }
    return Status::InvalidArgument(fmt::format(
        "{}: not a Myriad binary trace (bad magic bytes; expected \"MYRTRACE\")", path));
  }
  std::string text(head, got);
  char chunk[1 << 16];
  while (in.read(chunk, sizeof(chunk)) || in.gcount() > 0) {
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) {
    return Status::InvalidArgument(
        fmt::format("{}: cannot read trace file: {}", path, std::strerror(errno)));
  }
  return trace_internal::OpenJsonlTrace(path, std::move(text));
}

namespace trace_internal {

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), target_(path_) {}

AtomicFile::~AtomicFile() {
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_ && !temp_path_.empty()) std::remove(temp_path_.c_str());
}

Status AtomicFile::Error(const std::string& what) const {
  return Status::InvalidArgument(fmt::format("{}: {}: {}", path_, what, std::strerror(errno)));
}

Status AtomicFile::Open() {
  // A link stays; the file it names is written (made, if it does not exist yet).
  struct stat st {};
  for (int hops = 0; ::lstat(target_.c_str(), &st) == 0 && S_ISLNK(st.st_mode); ++hops) {
    std::error_code ec;
    const fs::path named = fs::read_symlink(target_, ec);
    if (ec || hops == 40)
      return Status::InvalidArgument(fmt::format("{}: cannot follow the link", path_));
    target_ = (named.is_absolute() ? named : fs::path(target_).parent_path() / named).string();
  }
  const bool exists = ::stat(target_.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode))
    return Status::InvalidArgument(fmt::format("{}: is a directory", path_));
  if (exists && !S_ISREG(st.st_mode)) return Status::Ok();  // written into at Commit
  temp_path_ = fmt::format("{}.tmp{}", target_, ::getpid());
  file_ = std::fopen(temp_path_.c_str(), "wb");
  if (file_ == nullptr) return Error("cannot create trace file");
  return Status::Ok();
}

Status AtomicFile::Write(const void* data, std::size_t size) {
  if (file_ == nullptr)
    buffered_.append(static_cast<const char*>(data), size);
  else if (size != 0 && std::fwrite(data, 1, size, file_) != size)
    return Error("cannot write");
  size_ += size;
  return Status::Ok();
}

Status AtomicFile::WriteAt(std::uint64_t offset, const void* data, std::size_t size) {
  if (file_ == nullptr) {
    if (offset + size > buffered_.size()) return Status::Internal("a write past the end");
    buffered_.replace(offset, size, static_cast<const char*>(data), size);
    return Status::Ok();
  }
  if (std::fflush(file_) != 0) return Error("cannot write");
  if (std::fseek(file_, static_cast<long>(offset), SEEK_SET) != 0) return Error("cannot seek");
  if (std::fwrite(data, 1, size, file_) != size) return Error("cannot write");
  if (std::fseek(file_, 0, SEEK_END) != 0) return Error("cannot seek");
  return Status::Ok();
}

Status AtomicFile::Commit() {
  if (temp_path_.empty()) {
    // Into the FIFO or device itself, in order, never replacing it.
    std::FILE* out = std::fopen(target_.c_str(), "wb");
    if (out == nullptr) return Error("cannot open for writing");
    const bool written =
        std::fwrite(buffered_.data(), 1, buffered_.size(), out) == buffered_.size();
    if (std::fclose(out) != 0 || !written) return Error("cannot write");
    committed_ = true;
    return Status::Ok();
  }
  const int closed = std::fclose(file_);
  file_ = nullptr;
  if (closed != 0) return Error("cannot write");
  if (std::rename(temp_path_.c_str(), target_.c_str()) != 0)
    return Error("cannot rename into place");
  committed_ = true;
  return Status::Ok();
}

}  // namespace trace_internal
}  // namespace myriad::emulator
