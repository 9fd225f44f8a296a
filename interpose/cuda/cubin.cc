// Kernel parameter layouts from ELF cubins (cubin.h). The record format follows what
// `cuobjdump -elf` prints for .nv.info sections: each record a u8 format (1: no value, 2 and 3:
// a 2-byte value, 4: a u16 length then that many bytes) and a u8 attribute id.
#include "cuda/cubin.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <string_view>

namespace myriad::shim {
namespace {

constexpr std::uint8_t kFormatNoValue = 1, kFormatByteValue = 2, kFormatHalfValue = 3,
                       kFormatSizedValue = 4;
constexpr std::uint8_t kAttributeKparamInfo = 0x17;
constexpr std::size_t kKparamPayload = 12;
constexpr std::string_view kInfoPrefix = ".nv.info.";

template <typename T>
bool ReadAt(const unsigned char* image, std::size_t size, std::size_t offset, T* out) {
  if (offset > size || sizeof(T) > size - offset) return false;
  std::memcpy(out, image + offset, sizeof(T));
  return true;
}

// The parameters a .nv.info.<kernel> section lists, in parameter order; empty when its records
// are malformed or name a parameter twice.
std::vector<CubinParam> ReadInfo(const unsigned char* p, std::size_t n) {
  std::vector<std::pair<std::uint16_t, CubinParam>> by_ordinal;
  std::size_t at = 0;
  while (at + 2 <= n) {
    const std::uint8_t format = p[at], attribute = p[at + 1];
    std::size_t length = 0;
    if (format == kFormatNoValue || format == kFormatByteValue || format == kFormatHalfValue) {
      length = 2;  // the value, if any, in the record's last two bytes
    } else if (format == kFormatSizedValue) {
      std::uint16_t l = 0;
      if (!ReadAt(p, n, at + 2, &l)) return {};
      length = 2 + l;
    } else {
      return {};
    }
    if (at + 2 + length > n) return {};
    if (format == kFormatSizedValue && attribute == kAttributeKparamInfo) {
      if (length - 2 != kKparamPayload) return {};
      std::uint16_t ordinal = 0, offset = 0;
      std::uint32_t flags = 0;
      const std::size_t payload = at + 4;
      ReadAt(p, n, payload + 4, &ordinal);
      ReadAt(p, n, payload + 6, &offset);
      ReadAt(p, n, payload + 8, &flags);
      const auto bytes = static_cast<std::uint16_t>(flags >> 18);
      if (bytes == 0) return {};
      by_ordinal.push_back({ordinal, CubinParam{offset, bytes}});
    }
    at += 2 + length;
  }
  std::sort(by_ordinal.begin(), by_ordinal.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<CubinParam> params;
  for (std::size_t i = 0; i < by_ordinal.size(); ++i) {
    if (by_ordinal[i].first != i) return {};  // a gap or a repeat: not a layout to trust
    params.push_back(by_ordinal[i].second);
  }
  return params;
}

}  // namespace

std::size_t CubinImageSize(const unsigned char* image, std::size_t limit) {
  Elf64_Ehdr eh{};
  if (!image || !ReadAt(image, limit, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64)
    return 0;
  const std::uint64_t sections =
      eh.e_shoff + static_cast<std::uint64_t>(eh.e_shnum) * eh.e_shentsize;
  const std::uint64_t programs =
      eh.e_phoff + static_cast<std::uint64_t>(eh.e_phnum) * eh.e_phentsize;
  const std::uint64_t end = std::max({sections, programs, std::uint64_t{sizeof eh}});
  return end <= limit ? static_cast<std::size_t>(end) : 0;
}

namespace {

// Calls `f(name, offset, size)` for each section of an ELF image within its `size` bytes.
template <typename F>
void ForEachSection(const unsigned char* image, std::size_t size, F&& f) {
  Elf64_Ehdr eh{};
  if (!ReadAt(image, size, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
      eh.e_shstrndx >= eh.e_shnum)
    return;
  const auto header = [&](std::size_t i, Elf64_Shdr* s) {
    return ReadAt(image, size, eh.e_shoff + i * sizeof(Elf64_Shdr), s);
  };
  Elf64_Shdr names{};
  if (!header(eh.e_shstrndx, &names) || names.sh_offset > size ||
      names.sh_size > size - names.sh_offset)
    return;
  const auto* table = reinterpret_cast<const char*>(image + names.sh_offset);
  for (std::size_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr s{};
    if (!header(i, &s) || s.sh_name >= names.sh_size || s.sh_type == SHT_NOBITS) continue;
    if (s.sh_offset > size || s.sh_size > size - s.sh_offset) continue;
    const std::string_view name(table + s.sh_name,
                                strnlen(table + s.sh_name, names.sh_size - s.sh_name));
    f(name, static_cast<std::size_t>(s.sh_offset), static_cast<std::size_t>(s.sh_size));
  }
}

}  // namespace

std::string CubinPtx(const unsigned char* image, std::size_t size) {
  std::string ptx;
  ForEachSection(image, size, [&](std::string_view name, std::size_t offset, std::size_t n) {
    if (name == ".nv_debug_ptx_txt" && ptx.empty())
      ptx.assign(reinterpret_cast<const char*>(image + offset), n);
  });
  return ptx;
}

CubinLayouts ReadCubinLayouts(const unsigned char* image, std::size_t size) {
  CubinLayouts layouts;
  ForEachSection(image, size, [&](std::string_view name, std::size_t offset, std::size_t n) {
    if (name.substr(0, kInfoPrefix.size()) != kInfoPrefix || name.size() == kInfoPrefix.size())
      return;
    std::vector<CubinParam> params = ReadInfo(image + offset, n);
    if (!params.empty())
      layouts.emplace(std::string(name.substr(kInfoPrefix.size())), std::move(params));
  });
  return layouts;
}

}  // namespace myriad::shim
