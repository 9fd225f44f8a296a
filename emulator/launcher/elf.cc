// Just enough ELF64 reading to tell how a binary links the CUDA runtime: its sections (device
// code lives in .nv_fatbin), its DT_NEEDED entries and whether it defines cudaMalloc itself.
#include <elf.h>
#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "myriad/emulator/launcher.h"

namespace myriad::emulator {
namespace {

template <typename T>
bool At(const std::string& file, std::uint64_t offset, T& out) {
  if (offset > file.size() || file.size() - offset < sizeof(T)) return false;
  std::memcpy(&out, file.data() + offset, sizeof(T));
  return true;
}

std::string StringAt(const std::string& file, std::uint64_t table, std::uint64_t size,
                     std::uint64_t index) {
  if (index >= size || table + index >= file.size()) return {};
  const char* begin = file.data() + table + index;
  const std::size_t max =
      static_cast<std::size_t>(std::min(size - index, file.size() - table - index));
  return std::string(begin, strnlen(begin, max));
}

}  // namespace

Result<CudaLinkage> InspectElf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("{}: cannot open", path));
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Elf64_Ehdr eh{};
  if (!At(file, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return Status::InvalidArgument(fmt::format("{}: not an ELF file", path));
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return Status::Unsupported(fmt::format("{}: only 64-bit little-endian ELF is supported", path));
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  for (std::size_t i = 0; i < sections.size(); ++i)
    if (!At(file, eh.e_shoff + i * sizeof(Elf64_Shdr), sections[i]))
      return Status::InvalidArgument(fmt::format("{}: truncated section headers", path));
  CudaLinkage linkage;
  if (eh.e_shstrndx >= sections.size()) return linkage;
  const Elf64_Shdr& names = sections[eh.e_shstrndx];
  for (const Elf64_Shdr& sh : sections) {
    const std::string name = StringAt(file, names.sh_offset, names.sh_size, sh.sh_name);
    if (name == ".nv_fatbin") linkage.has_device_code = true;
    if (sh.sh_type == SHT_DYNAMIC && sh.sh_link < sections.size()) {
      const Elf64_Shdr& strtab = sections[sh.sh_link];
      for (std::uint64_t off = 0; off + sizeof(Elf64_Dyn) <= sh.sh_size; off += sizeof(Elf64_Dyn)) {
        Elf64_Dyn dyn{};
        if (!At(file, sh.sh_offset + off, dyn) || dyn.d_tag == DT_NULL) break;
        if (dyn.d_tag == DT_NEEDED &&
            StringAt(file, strtab.sh_offset, strtab.sh_size, dyn.d_un.d_val)
                    .rfind("libcudart.so", 0) == 0)
          linkage.links_cudart_shared = true;
      }
    }
    if ((sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) && sh.sh_link < sections.size()) {
      const Elf64_Shdr& strtab = sections[sh.sh_link];
      for (std::uint64_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size; off += sizeof(Elf64_Sym)) {
        Elf64_Sym sym{};
        if (!At(file, sh.sh_offset + off, sym)) break;
        if (sym.st_shndx != SHN_UNDEF &&
            StringAt(file, strtab.sh_offset, strtab.sh_size, sym.st_name) == "cudaMalloc")
          linkage.defines_cudart = true;
      }
    }
  }
  return linkage;
}

Status CheckNotStaticCudart(const std::string& path) {
  auto linkage = InspectElf(path);
  if (!linkage.ok()) {
    // Scripts and other non-ELF commands are started as they are; what they start is checked
    // by the shims themselves.
    if (linkage.status().code() == Status::Code::kInvalidArgument) return Status::Ok();
    return linkage.status();
  }
  if ((linkage->has_device_code || linkage->defines_cudart) && !linkage->links_cudart_shared)
    return Status::InvalidArgument(fmt::format(
        "{} links the CUDA runtime statically, so Myriad cannot intercept it: rebuild with "
        "-cudart shared",
        path));
  return Status::Ok();
}

}  // namespace myriad::emulator
