#include "elf_reader.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

namespace myriad::abi {
namespace {

class File {
 public:
  explicit File(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  bool ok() const { return fd_ >= 0; }
  bool Read(uint64_t offset, void* buf, size_t size) const {
    auto* p = static_cast<char*>(buf);
    while (size > 0) {
      ssize_t n = ::pread(fd_, p, size, static_cast<off_t>(offset));
      if (n <= 0) return false;
      p += n;
      offset += static_cast<uint64_t>(n);
      size -= static_cast<size_t>(n);
    }
    return true;
  }

 private:
  int fd_;
};

std::string CString(const std::vector<char>& strtab, uint64_t offset) {
  if (offset >= strtab.size()) return "<bad string offset>";
  const char* s = strtab.data() + offset;
  return std::string(s, strnlen(s, strtab.size() - offset));
}

}  // namespace

bool ReadElfLibrary(const std::string& path, ElfLibrary* out, std::string* error) {
  *out = ElfLibrary();
  File file(path);
  if (!file.ok()) {
    *error = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  Elf64_Ehdr eh;
  if (!file.Read(0, &eh, sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr)) {
    *error = path + " is not an ELF64 file";
    return false;
  }
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  if (eh.e_shnum == 0 ||
      !file.Read(eh.e_shoff, sections.data(), sections.size() * sizeof(Elf64_Shdr))) {
    *error = path + ": cannot read the section headers";
    return false;
  }
  auto read_section = [&](const Elf64_Shdr& sh, std::vector<char>* buf) {
    buf->assign(sh.sh_size, '\0');
    return sh.sh_type == SHT_NOBITS || file.Read(sh.sh_offset, buf->data(), buf->size());
  };

  const Elf64_Shdr* dynsym = nullptr;
  const Elf64_Shdr* versym = nullptr;
  const Elf64_Shdr* verdef = nullptr;
  const Elf64_Shdr* verneed = nullptr;
  const Elf64_Shdr* dynamic = nullptr;
  for (const auto& sh : sections) {
    if (sh.sh_type == SHT_DYNSYM) dynsym = &sh;
    if (sh.sh_type == SHT_GNU_versym) versym = &sh;
    if (sh.sh_type == SHT_GNU_verdef) verdef = &sh;
    if (sh.sh_type == SHT_GNU_verneed) verneed = &sh;
    if (sh.sh_type == SHT_DYNAMIC) dynamic = &sh;
  }
  if (dynsym == nullptr || dynamic == nullptr || dynsym->sh_link >= sections.size() ||
      dynamic->sh_link >= sections.size()) {
    *error = path + " has no dynamic symbol table";
    return false;
  }

  // The dynamic section: SONAME, NEEDED, RPATH, RUNPATH.
  std::vector<char> dyn_buf, dyn_str;
  if (!read_section(*dynamic, &dyn_buf) || !read_section(sections[dynamic->sh_link], &dyn_str)) {
    *error = path + ": cannot read the dynamic section";
    return false;
  }
  for (size_t off = 0; off + sizeof(Elf64_Dyn) <= dyn_buf.size(); off += sizeof(Elf64_Dyn)) {
    Elf64_Dyn d;
    std::memcpy(&d, dyn_buf.data() + off, sizeof d);
    if (d.d_tag == DT_NULL) break;
    if (d.d_tag == DT_SONAME) out->soname = CString(dyn_str, d.d_un.d_val);
    if (d.d_tag == DT_NEEDED) out->needed.push_back(CString(dyn_str, d.d_un.d_val));
    if (d.d_tag == DT_RPATH) out->rpath = CString(dyn_str, d.d_un.d_val);
    if (d.d_tag == DT_RUNPATH) out->runpath = CString(dyn_str, d.d_un.d_val);
  }

  // Version definitions: index -> name.
  std::map<uint16_t, std::string> version_names;
  if (verdef != nullptr) {
    std::vector<char> vd_buf, vd_str;
    if (verdef->sh_link >= sections.size() || !read_section(*verdef, &vd_buf) ||
        !read_section(sections[verdef->sh_link], &vd_str)) {
      *error = path + ": cannot read the version definitions";
      return false;
    }
    size_t off = 0;
    for (uint64_t i = 0; i < verdef->sh_info && off + sizeof(Elf64_Verdef) <= vd_buf.size(); ++i) {
      Elf64_Verdef vd;
      std::memcpy(&vd, vd_buf.data() + off, sizeof vd);
      if (vd.vd_cnt > 0 && off + vd.vd_aux + sizeof(Elf64_Verdaux) <= vd_buf.size()) {
        Elf64_Verdaux aux;
        std::memcpy(&aux, vd_buf.data() + off + vd.vd_aux, sizeof aux);
        std::string name = CString(vd_str, aux.vda_name);
        version_names[vd.vd_ndx] = name;
        out->version_definitions.push_back(name);
      }
      if (vd.vd_next == 0) break;
      off += vd.vd_next;
    }
  }

  // Versions needed from other libraries: index -> name.
  std::map<uint16_t, std::string> needed_versions;
  if (verneed != nullptr) {
    std::vector<char> vn_buf, vn_str;
    if (verneed->sh_link >= sections.size() || !read_section(*verneed, &vn_buf) ||
        !read_section(sections[verneed->sh_link], &vn_str)) {
      *error = path + ": cannot read the needed versions";
      return false;
    }
    size_t off = 0;
    for (uint64_t i = 0; i < verneed->sh_info && off + sizeof(Elf64_Verneed) <= vn_buf.size();
         ++i) {
      Elf64_Verneed vn;
      std::memcpy(&vn, vn_buf.data() + off, sizeof vn);
      size_t aux_off = off + vn.vn_aux;
      for (unsigned j = 0; j < vn.vn_cnt && aux_off + sizeof(Elf64_Vernaux) <= vn_buf.size(); ++j) {
        Elf64_Vernaux aux;
        std::memcpy(&aux, vn_buf.data() + aux_off, sizeof aux);
        needed_versions[aux.vna_other] = CString(vn_str, aux.vna_name);
        if (aux.vna_next == 0) break;
        aux_off += aux.vna_next;
      }
      if (vn.vn_next == 0) break;
      off += vn.vn_next;
    }
  }

  // The dynamic symbols.
  std::vector<char> sym_buf, sym_str, ver_buf;
  if (!read_section(*dynsym, &sym_buf) || !read_section(sections[dynsym->sh_link], &sym_str) ||
      (versym != nullptr && !read_section(*versym, &ver_buf))) {
    *error = path + ": cannot read the dynamic symbols";
    return false;
  }
  size_t count = sym_buf.size() / sizeof(Elf64_Sym);
  for (size_t i = 1; i < count; ++i) {
    Elf64_Sym s;
    std::memcpy(&s, sym_buf.data() + i * sizeof(Elf64_Sym), sizeof s);
    int bind = ELF64_ST_BIND(s.st_info);
    int type = ELF64_ST_TYPE(s.st_info);
    int vis = ELF64_ST_VISIBILITY(s.st_other);
    if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE) continue;
    if (vis != STV_DEFAULT && vis != STV_PROTECTED) continue;
    Export e;
    e.name = CString(sym_str, s.st_name);
    e.weak = bind == STB_WEAK;
    e.version = "-";
    uint16_t v = 0;
    if (!ver_buf.empty() && (i + 1) * sizeof(uint16_t) <= ver_buf.size())
      std::memcpy(&v, ver_buf.data() + i * sizeof(uint16_t), sizeof v);
    if (s.st_shndx == SHN_UNDEF) {
      // An import's version index names a version it needs (.gnu.version_r).
      const uint16_t index = v & 0x7fff;
      auto it = needed_versions.find(index);
      if (index > 1) e.version = it != needed_versions.end() ? it->second : "?";
      e.kind = type == STT_OBJECT ? "object" : "func";
      out->imports.insert(e);
      continue;
    }
    if (!ver_buf.empty()) {
      uint16_t index = v & 0x7fff;
      if (index > 1) {  // 0: local, 1: global without a version
        auto it = version_names.find(index);
        e.version =
            it != version_names.end() ? it->second : "<version " + std::to_string(index) + ">";
        if (v & 0x8000) e.version += " (non-default)";
      }
    }
    // The absolute symbol that names a version definition is not an export.
    if (s.st_shndx == SHN_ABS && type == STT_OBJECT && s.st_size == 0) {
      bool is_version = false;
      for (const auto& [index, name] : version_names) is_version |= name == e.name;
      if (is_version) continue;
    }
    if (type == STT_FUNC || type == STT_GNU_IFUNC) {
      e.kind = "func";
    } else if (type == STT_OBJECT || type == STT_COMMON || type == STT_TLS) {
      e.kind = "object";
    } else {
      e.kind = "type " + std::to_string(type);
    }
    out->exports.insert(e);
  }
  return true;
}

}  // namespace myriad::abi
