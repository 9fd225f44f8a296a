// Reads what the dynamic linker sees of an ELF64 shared library straight from the file: its
// SONAME, DT_NEEDED, RPATH/RUNPATH and exported dynamic symbols with their versions. Only the
// section headers and the dynamic sections are read, so large libraries (libcublasLt) are cheap.
#pragma once

#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace myriad::abi {

struct Export {
  std::string name;
  std::string version;  // "-" when unversioned; "VER (non-default)" for name@VER
  std::string kind;     // "func" or "object"
  bool weak = false;

  // Identity for comparisons: binding is not part of the ABI a caller sees.
  auto Key() const { return std::tie(name, version, kind); }
  bool operator<(const Export& o) const { return Key() < o.Key(); }
  bool operator==(const Export& o) const { return Key() == o.Key(); }
  std::string ToString() const { return name + " " + version + " " + kind; }
};

struct ElfLibrary {
  std::string soname;
  std::vector<std::string> needed;
  std::string rpath;                             // DT_RPATH
  std::string runpath;                           // DT_RUNPATH
  std::vector<std::string> version_definitions;  // [0] is the BASE entry
  std::set<Export> exports;
  // Undefined dynamic symbols the library needs from others (weak ones marked so), with the
  // version each asks for ("-" when none).
  std::set<Export> imports;
};

// Reads `path`; on failure returns false and says why in `error`.
bool ReadElfLibrary(const std::string& path, ElfLibrary* out, std::string* error);

}  // namespace myriad::abi
