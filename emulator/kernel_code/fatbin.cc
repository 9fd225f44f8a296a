// PTX out of fatbins: the container nvcc embeds in a binary's .nv_fatbin section and passes
// to __cudaRegisterFatBinary. A fatbin is a header (magic 0xBA55ED50, version, header size,
// payload size) followed by entries, each a header (kind: 1 PTX, 2 ELF/SASS; header size;
// padded payload size; compression flags; decompressed size) and its payload. The layout is
// not documented by NVIDIA; it is as nvcc 13 writes it and as public readers of the format
// (cuobjdump's output, open-source fatbin extractors) describe it.
#include <elf.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "myriad/emulator/kernel_code.h"

namespace myriad::emulator {
namespace {

constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;
constexpr std::uint16_t kEntryPtx = 1;
// Entry flags: the payload is compressed (nvcc's default since CUDA 12.8 is zstd).
constexpr std::uint64_t kFlagCompressedLz4 = 0x2000;
constexpr std::uint64_t kFlagCompressedZstd = 0x8000;
// The largest PTX module decompressed (a whole library's PTX is tens of MB at most).
constexpr std::uint64_t kMaxPtxBytes = 256ull << 20;

template <typename T>
bool ReadAt(std::span<const std::byte> data, std::size_t offset, T* out) {
  if (offset > data.size() || data.size() - offset < sizeof(T)) return false;
  std::memcpy(out, data.data() + offset, sizeof(T));
  return true;
}

std::string TextOf(const std::byte* p, std::size_t n) {
  const auto* c = reinterpret_cast<const char*>(p);
  std::size_t len = 0;
  while (len < n && c[len] != '\0') ++len;  // payloads are NUL-padded
  return std::string(c, len);
}

}  // namespace

Result<std::vector<std::string>> PtxInFatbin(std::span<const std::byte> data) {
  std::vector<std::string> modules;
  std::size_t at = 0;
  while (at + 16 <= data.size()) {
    std::uint32_t magic = 0;
    std::uint16_t header = 0;
    std::uint64_t payload = 0;
    ReadAt(data, at, &magic);
    if (magic != kFatbinMagic) {
      if (modules.empty() && at == 0)
        return Status::InvalidArgument("not a fatbin (no 0xBA55ED50 magic)");
      break;  // padding after the last fatbin of a section
    }
    ReadAt(data, at + 6, &header);
    ReadAt(data, at + 8, &payload);
    const std::size_t begin = at + header;
    if (header < 16 || payload > data.size() || begin > data.size() - payload)
      return Status::InvalidArgument(
          fmt::format("fatbin at byte {}: its payload runs past the end", at));
    const std::size_t end = begin + payload;
    for (std::size_t e = begin; e + 64 <= end;) {
      std::uint16_t kind = 0;
      std::uint32_t entry_header = 0;
      std::uint64_t padded = 0, flags = 0, decompressed = 0;
      std::uint32_t compressed = 0;
      ReadAt(data, e, &kind);
      ReadAt(data, e + 4, &entry_header);
      ReadAt(data, e + 8, &padded);
      ReadAt(data, e + 16, &compressed);
      ReadAt(data, e + 40, &flags);
      ReadAt(data, e + 56, &decompressed);
      if (entry_header < 64 || entry_header > end - e || padded > end - e - entry_header)
        return Status::InvalidArgument(
            fmt::format("fatbin entry at byte {}: its payload runs past the fatbin", e));
      const std::byte* p = data.data() + e + entry_header;
      if (kind == kEntryPtx) {
        if (flags & kFlagCompressedZstd) {
          const std::size_t in = compressed > 0 && compressed <= padded ? compressed : padded;
          if (decompressed == 0 || decompressed > kMaxPtxBytes)
            return Status::InvalidArgument(fmt::format(
                "fatbin entry at byte {}: a compressed PTX of {} bytes", e, decompressed));
          std::string text(decompressed, '\0');
          const std::size_t n = ZSTD_decompress(text.data(), text.size(), p, in);
          if (ZSTD_isError(n))
            return Status::InvalidArgument(
                fmt::format("fatbin entry at byte {}: zstd: {}", e, ZSTD_getErrorName(n)));
          modules.push_back(TextOf(reinterpret_cast<const std::byte*>(text.data()), n));
        } else if (flags & kFlagCompressedLz4) {
          // Older nvcc's -Xfatbin=-compress-all: not read (the kernels fall to other models).
        } else {
          modules.push_back(TextOf(p, padded));
        }
      }
      e += entry_header + padded;
    }
    at = end;
    // Fatbins in a section are aligned to 8 bytes.
    at = (at + 7) & ~static_cast<std::size_t>(7);
  }
  return modules;
}

Result<std::vector<std::string>> PtxInElfFile(const std::string& path,
                                              std::size_t max_section_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Status::NotFound(fmt::format("{}: {}", path, std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    return Status::InvalidArgument(fmt::format("{}: not a regular file", path));
  const auto read_at = [&](std::uint64_t offset, void* out, std::size_t n) {
    if (offset > static_cast<std::uint64_t>(st.st_size) ||
        n > static_cast<std::uint64_t>(st.st_size) - offset)
      return false;
    return ::pread(fd, out, n, static_cast<off_t>(offset)) == static_cast<ssize_t>(n);
  };
  Elf64_Ehdr eh{};
  if (!read_at(0, &eh, sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64)
    return Status::InvalidArgument(fmt::format("{}: not a 64-bit ELF file", path));
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shstrndx >= eh.e_shnum)
    return std::vector<std::string>{};
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  if (!read_at(eh.e_shoff, sections.data(), sections.size() * sizeof(Elf64_Shdr)))
    return Status::InvalidArgument(fmt::format("{}: truncated section headers", path));
  const Elf64_Shdr& names = sections[eh.e_shstrndx];
  if (names.sh_size > (1u << 24))
    return Status::InvalidArgument(
        fmt::format("{}: a section name table of {} bytes", path, names.sh_size));
  std::string table(names.sh_size, '\0');
  if (!read_at(names.sh_offset, table.data(), table.size()))
    return Status::InvalidArgument(fmt::format("{}: truncated section names", path));
  std::vector<std::string> modules;
  for (const Elf64_Shdr& s : sections) {
    if (s.sh_name >= table.size() || s.sh_type == SHT_NOBITS) continue;
    // A cubin that ptxas made with -lineinfo (Triton's) keeps its PTX as NUL-separated lines.
    if (std::strcmp(table.c_str() + s.sh_name, ".nv_debug_ptx_txt") == 0 &&
        s.sh_size <= max_section_bytes) {
      std::string text(s.sh_size, '\0');
      if (!read_at(s.sh_offset, text.data(), text.size()))
        return Status::InvalidArgument(fmt::format("{}: truncated .nv_debug_ptx_txt", path));
      std::replace(text.begin(), text.end(), '\0', '\n');
      modules.push_back(std::move(text));
      continue;
    }
    if (std::strcmp(table.c_str() + s.sh_name, ".nv_fatbin") != 0) continue;
    if (s.sh_size > max_section_bytes) continue;
    std::vector<std::byte> bytes(s.sh_size);
    if (!read_at(s.sh_offset, bytes.data(), bytes.size()))
      return Status::InvalidArgument(fmt::format("{}: truncated .nv_fatbin", path));
    auto ptx = PtxInFatbin(bytes);
    if (!ptx.ok())
      return Status::InvalidArgument(fmt::format("{}: {}", path, ptx.status().message()));
    for (std::string& m : ptx.value()) modules.push_back(std::move(m));
  }
  return modules;
}

}  // namespace myriad::emulator
