// Libraries loaded after start-up get the check `myriad run` makes before launch: device code
// with a statically linked CUDA runtime cannot be intercepted, and running it would
// silently bypass Myriad. Such a dlopen fails the process with the same message.
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

// True when the ELF file at `path` has a .nv_fatbin section but no DT_NEEDED libcudart.
bool StaticallyLinkedCuda(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr))) {
    ::close(fd);
    return false;
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return false;
  const auto* base = static_cast<const unsigned char*>(map);
  bool fatbin = false, cudart = false;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  const bool valid = std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 &&
                     eh->e_ident[EI_CLASS] == ELFCLASS64 &&
                     eh->e_shoff + std::size_t{eh->e_shnum} * sizeof(Elf64_Shdr) <= size &&
                     eh->e_shstrndx < eh->e_shnum;
  if (valid) {
    const auto* sections = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
    const Elf64_Shdr& names = sections[eh->e_shstrndx];
    for (int i = 0; i < eh->e_shnum; ++i) {
      const Elf64_Shdr& sh = sections[i];
      if (names.sh_offset + sh.sh_name + 11 <= size &&
          std::strncmp(reinterpret_cast<const char*>(base + names.sh_offset + sh.sh_name),
                       ".nv_fatbin", 11) == 0)
        fatbin = true;
      if (sh.sh_type != SHT_DYNAMIC || sh.sh_link >= eh->e_shnum) continue;
      const Elf64_Shdr& strtab = sections[sh.sh_link];
      for (std::size_t off = 0; off + sizeof(Elf64_Dyn) <= sh.sh_size; off += sizeof(Elf64_Dyn)) {
        if (sh.sh_offset + off + sizeof(Elf64_Dyn) > size) break;
        const auto* dyn = reinterpret_cast<const Elf64_Dyn*>(base + sh.sh_offset + off);
        if (dyn->d_tag == DT_NULL) break;
        if (dyn->d_tag == DT_NEEDED && strtab.sh_offset + dyn->d_un.d_val + 12 <= size &&
            std::strncmp(reinterpret_cast<const char*>(base + strtab.sh_offset + dyn->d_un.d_val),
                         "libcudart.so", 12) == 0)
          cudart = true;
      }
    }
  }
  ::munmap(map, size);
  return fatbin && !cudart;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void* dlopen(const char* file, int mode) {
  using Dlopen = void* (*)(const char*, int);
  static const auto real = reinterpret_cast<Dlopen>(::dlsym(RTLD_NEXT, "dlopen"));
  void* handle = real(file, mode);
  if (handle == nullptr || file == nullptr || std::getenv("MYRIAD_SOCKET") == nullptr)
    return handle;
  link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name &&
      StaticallyLinkedCuda(map->l_name)) {
    std::fprintf(stderr,
                 "myriad: %s links the CUDA runtime statically, so Myriad cannot intercept it: "
                 "rebuild with -cudart shared\n",
                 map->l_name);
    std::_Exit(2);
  }
  return handle;
}
