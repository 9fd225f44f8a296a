#!/usr/bin/env python3
"""Generates the export lists of Myriad's shim libraries from the real libraries.

For each shim (cudart, cublas, cublaslt, nccl, cuda, nvml) it reads the dynamic symbol table
of the library the shim stands in for (readelf --dyn-syms, readelf -V, readelf -d) and writes
into interpose/<lib>/generated/:

  symbols.txt        the committed export list: sorted "NAME VERSION KIND" lines; VERSION is
                     "-" for an unversioned library, KIND is "func" or "object:SIZE"
  exports.map        the linker version script: the real library's version node (or an
                     anonymous one for an unversioned library), every export global, all
                     else local
  unsupported.cc     one weak definition per exported function that reports the call as
                     unsupported and returns the library's error code; one zeroed weak
                     definition of the right size per exported data object
  non_int_returns.txt  exported functions whose declared return type (read from the toolkit's
                     headers) is not a 32-bit integer or enum, so that the generic `int NAME()`
                     stub returns nonsense for them: they need real definitions

The build uses only the committed outputs: neither Python nor the real libraries are needed
to build Myriad. Re-run this script when the toolkit changes and commit the result:

  python3 interpose/tools/generate_exports.py                  # from the repository root
  python3 interpose/tools/generate_exports.py --check          # exit 1 if anything is stale
  python3 interpose/tools/generate_exports.py --cuda-root /opt/cuda --lib nccl=/opt/nccl/lib/libnccl.so.2

libnvidia-ml.so.1 is not part of the CUDA toolkit; its list comes from
interpose/tools/nvml_exports.txt (hand-written, sources documented there).

Python 3.8+, standard library only; needs binutils' readelf.
"""

from __future__ import annotations

import argparse
import dataclasses
import keyword
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
INTERPOSE = HERE.parent
REPO = INTERPOSE.parent
SCRIPT = "interpose/tools/generate_exports.py"
NVML_LIST = HERE / "nvml_exports.txt"


@dataclasses.dataclass(frozen=True)
class Lib:
    key: str        # folder under interpose/ and --only/--lib key
    soname: str     # the shim's (and the real library's) SONAME
    enum: str       # myriad::shim::Library enumerator
    default: str    # real library, relative to --cuda-root ("" = hand-written list or wheel)
    # (header relative to include/, macro) pairs whose values document the toolkit version
    version_macros: tuple = ()
    # The library as PyPI's nvidia-* wheel installs it, relative to the wheels' root (a
    # site-packages folder, or where fetch_wheels.sh unpacked them). When set, the wheel is the
    # source: it is what torch's wheel was built against, and newer than the toolkit's.
    wheel: str = ""


LIBS = [
    Lib("cudart", "libcudart.so.13", "kCudart", "lib64/libcudart.so.13",
        (("cuda_runtime_api.h", "CUDART_VERSION"),)),
    Lib("cublas", "libcublas.so.13", "kCublas", "lib64/libcublas.so.13",
        (("cublas_api.h", "CUBLAS_VER_MAJOR"), ("cublas_api.h", "CUBLAS_VER_MINOR"),
         ("cublas_api.h", "CUBLAS_VER_PATCH"))),
    Lib("cublaslt", "libcublasLt.so.13", "kCublasLt", "lib64/libcublasLt.so.13",
        (("cublas_api.h", "CUBLAS_VER_MAJOR"), ("cublas_api.h", "CUBLAS_VER_MINOR"),
         ("cublas_api.h", "CUBLAS_VER_PATCH"))),
    Lib("nccl", "libnccl.so.2", "kNccl", "lib64/libnccl.so.2",
        (("nccl.h", "NCCL_MAJOR"), ("nccl.h", "NCCL_MINOR"), ("nccl.h", "NCCL_PATCH"))),
    # The driver is not part of the toolkit; its link stub carries the same export list.
    Lib("cuda", "libcuda.so.1", "kCuda", "lib64/stubs/libcuda.so",
        (("cuda.h", "CUDA_VERSION"),)),
    Lib("nvml", "libnvidia-ml.so.1", "kNvml", ""),
    # The libraries PyTorch's CUDA wheel links besides the runtime, cuBLAS and NCCL (issue 12).
    Lib("cudnn", "libcudnn.so.9", "kCudnn", "lib64/libcudnn.so.9",
        (("cudnn_version.h", "CUDNN_MAJOR"), ("cudnn_version.h", "CUDNN_MINOR"))),
    Lib("cusparse", "libcusparse.so.12", "kCusparse", "lib64/libcusparse.so.12",
        (("cusparse.h", "CUSPARSE_VER_MAJOR"), ("cusparse.h", "CUSPARSE_VER_MINOR"))),
    Lib("cufft", "libcufft.so.12", "kCufft", "lib64/libcufft.so.12",
        (("cufft.h", "CUFFT_VER_MAJOR"), ("cufft.h", "CUFFT_VER_MINOR"))),
    Lib("cusolver", "libcusolver.so.12", "kCusolver", "lib64/libcusolver.so.12",
        (("cusolver_common.h", "CUSOLVER_VER_MAJOR"), ("cusolver_common.h", "CUSOLVER_VER_MINOR"))),
    Lib("nvrtc", "libnvrtc.so.13", "kNvrtc", "lib64/libnvrtc.so.13",
        (("nvrtc.h", "NVRTC_VER_MAJOR"),)),
    Lib("cupti", "libcupti.so.13", "kCupti", "lib64/libcupti.so.13",
        (("cupti_version.h", "CUPTI_API_VERSION"),)),
    Lib("cufile", "libcufile.so.0", "kCufile", "", wheel="nvidia/cu13/lib/libcufile.so.0"),
    Lib("cusparselt", "libcusparseLt.so.0", "kCusparseLt", "",
        wheel="nvidia/cusparselt/lib/libcusparseLt.so.0"),
    Lib("nvshmem", "libnvshmem_host.so.3", "kNvshmem", "",
        wheel="nvidia/nvshmem/lib/libnvshmem_host.so.3"),
]
# NCCL: torch's wheel ships a newer NCCL than the toolkit (2.30.7 vs 2.28.9), with more exports.
LIBS[3] = dataclasses.replace(LIBS[3], wheel="nvidia/nccl/lib/libnccl.so.2")


@dataclasses.dataclass(frozen=True, order=True)
class Symbol:
    name: str
    version: str    # "-" when unversioned
    kind: str       # "func" or "object"
    size: int = 0   # objects only

    def line(self) -> str:
        kind = self.kind if self.kind == "func" else f"object:{self.size}"
        return f"{self.name} {self.version} {kind}"


class GenError(Exception):
    pass


def run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    except FileNotFoundError as e:
        raise GenError(f"{cmd[0]} not found (install binutils)") from e
    except subprocess.CalledProcessError as e:
        raise GenError(f"{' '.join(cmd)} failed: {e.stderr.strip()}") from e


def read_soname(path: Path) -> str | None:
    m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", run(["readelf", "-d", "-W", str(path)]))
    return m.group(1) if m else None


def read_version_definitions(path: Path) -> list[str]:
    out = run(["readelf", "-V", "-W", str(path)])
    sec = out.split("Version definition section", 1)
    if len(sec) < 2:
        return []
    body = re.split(r"\n\s*\n|Version needs section", sec[1], maxsplit=1)[0]
    return re.findall(r"Name: (\S+)", body)


# "   161: 0000000000069a70   552 FUNC    GLOBAL DEFAULT   12 cudaStreamSynchronize@@libcudart.so.13"
DYNSYM_RE = re.compile(
    r"^\s*\d+:\s+[0-9a-fA-F]+\s+(0x[0-9a-fA-F]+|\d+)\s+(\w+)\s+(\w+)\s+(\w+)\s+(\w+)\s+(\S+)(?:\s+\(\d+\))?\s*$")


def read_exports(path: Path) -> list[Symbol]:
    """The defined, globally visible dynamic symbols of `path`."""
    version_defs = read_version_definitions(path)
    symbols: dict[tuple[str, str], Symbol] = {}
    for line in run(["readelf", "--dyn-syms", "-W", str(path)]).splitlines():
        m = DYNSYM_RE.match(line)
        if not m:
            continue
        size_s, typ, bind, vis, ndx, name = m.groups()
        if ndx == "UND" or bind not in ("GLOBAL", "WEAK", "UNIQUE") or vis not in ("DEFAULT", "PROTECTED"):
            continue
        version = "-"
        if "@@" in name:
            name, version = name.split("@@", 1)
        elif "@" in name:
            # A non-default (hidden) version, e.g. an old compatibility symbol: expressing it
            # needs .symver in the stub as well as the version script. None of the CUDA 13
            # libraries has one.
            raise GenError(f"{path}: {name} has a non-default version; the generator does not "
                           "support that yet")
        if ndx == "ABS" and name in version_defs:
            continue  # the symbol that names a version definition, not an export
        if name.startswith("_Z"):
            # A C++ symbol: cuFile and cuSPARSELt export their copies of standard-library
            # templates (std::regex, typeinfo names). No caller imports them from there, and a
            # preloaded stub under such a name would shadow libstdc++'s real definition.
            continue
        size = int(size_s, 0)
        if typ in ("FUNC", "IFUNC"):
            sym = Symbol(name, version, "func")
        elif typ in ("OBJECT", "TLS", "COMMON"):
            if typ == "TLS":
                raise GenError(f"{path}: {name} is a thread-local object; not supported")
            sym = Symbol(name, version, "object", size)
        else:
            raise GenError(f"{path}: {name} has type {typ}; the generator handles FUNC and OBJECT")
        symbols[(name, version)] = sym
    return sorted(symbols.values())


def read_nvml_list(path: Path) -> tuple[list[Symbol], dict[str, str]]:
    symbols, returns = [], {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, ret = line.partition(" ")
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise GenError(f"{path}: bad name {name!r}")
        symbols.append(Symbol(name, "-", "func"))
        returns[name] = ret.strip() or "nvmlReturn_t"
    names = [s.name for s in symbols]
    if len(set(names)) != len(names):
        raise GenError(f"{path}: duplicate names")
    return sorted(symbols), returns


# ---------------------------------------------------------------------------------------------
# Declared return types, from the toolkit's headers (best effort: a regex over the text with
# comments and preprocessor lines removed, not a C parser).

SPECIFIERS = {"extern", "static", "inline", "__inline__", "__inline", "__forceinline__", "constexpr",
              "__host__", "__device__", "__global__", "__cudart_builtin__", "__device_builtin__",
              "CUDARTAPI", "CUDAAPI", "CUBLASAPI", "CUBLASWINAPI", "CUDART_CB", "CUDA_CB",
              "NCCL_EXTERN_C", "__stdcall", "__cdecl", "DECLDIR", "CUDNNWINAPI"}
# Returned whole in eax, so a stub's `int` is a value of the declared type. bool, char and short
# are not: the caller reads only part of the register (801 as a bool is "true").
# Never 32-bit, whatever a header typedefs them to on some other platform.
WIDE_TYPES = {"size_t", "ssize_t", "long", "unsigned long", "long long", "unsigned long long",
              "long int", "unsigned long int", "int64_t", "uint64_t", "intptr_t", "uintptr_t",
              "float", "double", "void", "char", "unsigned char", "signed char", "bool", "short",
              "unsigned short"}
REJECT = {"return", "=", "?", ",", "<", ">", "template", "typedef", "if", "else", "do", "while",
          "case", "sizeof", "::", "throw", "new", "delete", "goto", "operator", "decltype"}
INT_TYPES = {"int", "unsigned", "unsigned int", "signed", "signed int", "int32_t", "uint32_t"}


def strip_source(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"\\\n", " ", text)
    text = re.sub(r"^\s*#[^\n]*", " ", text, flags=re.M)
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)
    return text


def balanced_strip(tokens: list[str]) -> list[str]:
    """Drops every parenthesised group and the token before it (a macro or attribute call)."""
    out: list[str] = []
    depth = 0
    for t in tokens:
        if t == "(":
            if depth == 0 and out and re.fullmatch(r"\w+", out[-1]):
                out.pop()
            depth += 1
        elif t == ")":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(t)
    return out


# Header folders that declare host API functions; the others (cccl, nvtx3, cooperative_groups,
# ...) are large and declare none of the exports.
HEADER_DIRS = (".", "crt", "nccl_device")


class Headers:
    def __init__(self, include: Path, extra: tuple = ()):
        self.texts: list[str] = []
        self.macros: dict[str, str] = {}
        # The toolkit's folders, then the wheels' include folders (top level only).
        folders = [(include / sub, sub != ".") for sub in HEADER_DIRS] + [(d, False) for d in extra]
        for d, recursive in folders:
            if not d.is_dir():
                continue
            for p in sorted(d.rglob("*") if recursive else d.glob("*")):
                if p.suffix in (".h", ".hpp") and p.is_file():
                    try:
                        raw = p.read_text(errors="replace")
                    except OSError:
                        continue
                    self.texts.append(strip_source(raw))
                    # `#define cublasStatus cublasStatus_t`: object-like macros naming a type
                    self.macros.update(re.findall(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+(\w+)[ \t]*$",
                                                  raw, flags=re.M))
        self.enums = self._enums()
        self.typedefs = self._typedefs()
        for alias, base in self.macros.items():
            self.typedefs.setdefault(alias, base)
        self._calls: dict[str, list[tuple[int, int]]] | None = None

    def _index(self) -> dict[str, list[tuple[int, int]]]:
        """Every `identifier (` in the headers: name -> [(text index, position)]."""
        if self._calls is None:
            self._calls = {}
            call = re.compile(r"(?<![\w.>:])([A-Za-z_]\w*)\s*\(")
            for i, t in enumerate(self.texts):
                for m in call.finditer(t):
                    self._calls.setdefault(m.group(1), []).append((i, m.start()))
        return self._calls

    def _enums(self) -> set[str]:
        enums: set[str] = set()
        for t in self.texts:
            enums.update(re.findall(r"\benum\s+(?:__\w+__\s+)*(?:class\s+)?(\w+)\s*(?::\s*[\w ]+)?\{", t))
            enums.update(re.findall(r"\btypedef\s+(?:__\w+__\s+)*enum\s*(?:__\w+__\s+)*\w*\s*\{[^{}]*\}\s*(\w+)\s*;", t))
        for t in self.texts:
            for tag, alias in re.findall(r"\btypedef\s+(?:__\w+__\s+)*enum\s+(?:__\w+__\s+)*(\w+)\s+(\w+)\s*;", t):
                enums.update((tag, alias))
        return enums

    def _typedefs(self) -> dict[str, str]:
        """Simple aliases `typedef T NAME;` (cublasStatus for cublasStatus_t)."""
        out: dict[str, str] = {}
        for t in self.texts:
            for base, alias in re.findall(r"\btypedef\s+((?:unsigned\s+|signed\s+)?\w+)\s+(\w+)\s*;", t):
                if base != alias:
                    out[alias] = base
        return out

    def return_types(self, name: str) -> set[str]:
        """Every return type declared for `name` (empty when there is no declaration)."""
        found: set[str] = set()
        for i, pos in self._index().get(name, []):
            t = self.texts[i]
            start = max(t.rfind(";", 0, pos), t.rfind("{", 0, pos), t.rfind("}", 0, pos))
            tokens = re.findall(r'""|::|\w+|[*&()<>,=?]', t[start + 1:pos])
            tokens = balanced_strip([x for x in tokens if x != '""'])
            if any(x in REJECT for x in tokens):
                continue  # a call or a template, not a declaration
            words = [x for x in tokens if x not in SPECIFIERS and not re.fullmatch(r"__\w+__", x)
                     and not re.fullmatch(r"_*[A-Z][A-Z0-9_]*", x)]
            if words[:1] == ["C"]:
                words = words[1:]
            if not words or words[-1] in ("struct", "const", "enum"):
                continue
            ty = " ".join(words).replace(" *", "*").replace("* ", "*")
            found.add(re.sub(r"(\w)\*", r"\1 *", ty))
        return found

    def is_int_like(self, ty: str) -> bool:
        base = re.sub(r"\b(const|volatile|enum)\b", " ", ty).strip()
        base = re.sub(r"\s+", " ", base)
        if "*" in base or "&" in base or base in WIDE_TYPES:
            return False
        seen = set()
        while base not in INT_TYPES and base not in self.enums and base in self.typedefs \
                and base not in seen:
            seen.add(base)
            base = self.typedefs[base]
        return base in INT_TYPES or base in self.enums


def name_fallbacks(name: str) -> list[str]:
    """Names under which an export may be declared in the headers: cuda.h declares `cuMemcpy`
    and maps it to cuMemcpy_ptds/_v2 with macros; nccl.h declares ncclX, not its alias pncclX."""
    out = [name]
    if name.startswith("pnccl"):
        out.append(name[1:])
    for suf in ("_ptsz", "_ptds"):
        if name.endswith(suf):
            out.append(name[: -len(suf)])
    for n in list(out):
        m = re.fullmatch(r"(.+)_v\d+", n)
        if m:
            out.append(m.group(1))
    return out


# ---------------------------------------------------------------------------------------------
# Writers

def c_identifier_ok(name: str) -> bool:
    return (re.fullmatch(r"[A-Za-z_]\w*", name) is not None and not keyword.iskeyword(name)
            and name not in CPP_KEYWORDS and not name.startswith("_Z"))


CPP_KEYWORDS = set("""alignas alignof and and_eq asm auto bitand bitor bool break case catch char
char8_t char16_t char32_t class compl concept const consteval constexpr constinit const_cast
continue co_await co_return co_yield decltype default delete do double dynamic_cast else enum
explicit export extern false float for friend goto if inline int long mutable namespace new
noexcept not not_eq nullptr operator or or_eq private protected public register
reinterpret_cast requires return short signed sizeof static static_assert static_cast struct
switch template this thread_local throw true try typedef typeid typename union unsigned using
virtual void volatile wchar_t while xor xor_eq""".split())


def header_comment(lib: Lib, source: str, prefix: str) -> str:
    lines = [
        f"Generated by {SCRIPT}. Do not edit.",
        f"Source: {source}.",
        "Regenerate (from the repository root) with:",
        f"  python3 {SCRIPT} --only {lib.key}",
        "and commit the result; see interpose/README.md.",
    ]
    return "".join(f"{prefix}{x}".rstrip() + "\n" for x in lines)


def write_symbols(lib: Lib, source: str, symbols: list[Symbol]) -> str:
    return header_comment(lib, source, "# ") + "".join(s.line() + "\n" for s in symbols)


def write_map(lib: Lib, source: str, symbols: list[Symbol]) -> str:
    versions = sorted({s.version for s in symbols})
    out = ["/*\n", header_comment(lib, source, " * "), " */\n"]
    if versions == ["-"] or not symbols:
        groups = [("", [s.name for s in symbols])]
    elif "-" in versions:
        raise GenError(f"{lib.soname}: mixes versioned and unversioned exports")
    else:
        groups = [(v, [s.name for s in symbols if s.version == v]) for v in versions]
    for i, (version, names) in enumerate(groups):
        out.append(f"{version} {{\n" if version else "{\n")
        out.append("  global:\n")
        out.extend(f"    {n};\n" for n in names)
        if i == len(groups) - 1:
            out.append("  local:\n    *;\n")
        out.append("};\n")
    return "".join(out)


def write_stubs(lib: Lib, source: str, symbols: list[Symbol]) -> str:
    out = ["// " + x + "\n" for x in header_comment(lib, source, "").splitlines()]
    out.append("//\n"
               "// One weak definition per exported function: it reports the call as unsupported and\n"
               "// returns the library's error code (see common/unsupported.h). A strong definition in\n"
               f"// interpose/{lib.key}/*.cc replaces it at link time; mark that one MYRIAD_EXPORT\n"
               "// (common/export.h). The declared signature (`int NAME()`) is deliberately not the\n"
               "// real one: a stub ignores its arguments. Functions whose real return type is not an\n"
               "// integer are listed in non_int_returns.txt and need real definitions.\n\n")
    out.append('#include "common/unsupported.h"\n\n')
    out.append("namespace {\n"
               f"constexpr myriad::shim::Library kLibrary = myriad::shim::Library::{lib.enum};\n"
               "}  // namespace\n\n")
    out.append("// NOLINTBEGIN\n")
    attrs = '__attribute__((weak, visibility("default")))'
    for i, s in enumerate(symbols):
        if s.kind == "func":
            if c_identifier_ok(s.name):
                out.append(f'extern "C" {attrs} int {s.name}() {{\n'
                           f'  return myriad::shim::Unsupported("{s.name}", kLibrary);\n}}\n')
            else:
                ident = f"myriad_stub_{i}"
                out.append(f'extern "C" {attrs} int {ident}() __asm__("{s.name}");\n'
                           f'extern "C" int {ident}() {{\n'
                           f'  return myriad::shim::Unsupported("{s.name}", kLibrary);\n}}\n')
        else:
            size = max(s.size, 1)
            if c_identifier_ok(s.name):
                # In a linkage block: `extern "C" T x = {};` reads as an initialised extern.
                out.append(f'extern "C" {{\n{attrs} unsigned char {s.name}[{size}] = {{}};\n}}\n')
            else:
                ident = f"myriad_object_{i}"
                out.append(f'extern "C" {{\n{attrs} unsigned char {ident}[{size}] __asm__("{s.name}");\n'
                           f'unsigned char {ident}[{size}] = {{}};\n}}\n')
    out.append("// NOLINTEND\n")
    return "".join(out)


def write_non_int(lib: Lib, source: str, symbols: list[Symbol], headers: Headers | None,
                  nvml_returns: dict[str, str] | None) -> str:
    out = [header_comment(lib, source, "# ")]
    out.append("#\n# Exported functions whose declared return type is not a 32-bit integer or enum.\n"
               "# Their generated `int NAME()` stub puts an error code where the caller expects\n"
               "# something else (a pointer, void, size_t, a float or a struct): each needs a real\n"
               "# definition before an application can call it. \"(undeclared)\" marks exports that\n"
               "# no toolkit header declares (internal entry points: check before implementing).\n")
    rows = []
    for s in symbols:
        if s.kind != "func":
            continue
        if nvml_returns is not None:
            ty = nvml_returns[s.name]
            if ty != "nvmlReturn_t":
                rows.append((s.name, ty))
            continue
        if headers is None:
            continue
        types: set[str] = set()
        for candidate in name_fallbacks(s.name):
            types = headers.return_types(candidate)
            if types:
                break
        if not types:
            rows.append((s.name, "(undeclared)"))
            continue
        bad = sorted(t for t in types if not headers.is_int_like(t))
        if bad:
            rows.append((s.name, " | ".join(bad)))
    if nvml_returns is None and headers is None:
        out.append("# (toolkit headers not found: not computed)\n")
    width = max((len(n) for n, _ in rows), default=0)
    out.extend(f"{n.ljust(width)}  {t}\n" for n, t in rows)
    return "".join(out)


# ---------------------------------------------------------------------------------------------

def write_proc_addresses(lib: Lib, include: Path, symbols: list[Symbol]) -> str:
    """cuGetProcAddress's table: which export answers (name, requested CUDA version, per-thread
    default stream). cudaTypedefs.h declares one PFN_<name>_v<version>[_ptds|_ptsz] typedef per
    ABI version of each driver function; the exports carry ABI versions as suffixes (cuMemAlloc,
    cuMemAlloc_v2). The typedefs and the exports of a name are matched newest to newest, so a
    name's legacy versions that one side lacks drop off the old end."""
    text = (include / "cudaTypedefs.h").read_text(errors="replace")
    exports = {s.name for s in symbols if s.kind == "func"}
    # (name, per-thread variant) -> the ABI versions cudaTypedefs.h declares
    versions: dict[tuple[str, int], set[int]] = {}
    for name, version, suffix in re.findall(r"\bPFN_(\w+?)_v(\d+)(_ptds|_ptsz)?\)\s*\(", text):
        versions.setdefault((name, 1 if suffix else 0), set()).add(int(version))
    rows = []
    for (name, per_thread), vs in versions.items():
        abi = [name] + [f"{name}_v{i}" for i in range(2, 10)]
        if per_thread:  # the export's suffix need not be the typedef's
            abi = [next((a + x for x in ("_ptds", "_ptsz") if a + x in exports), a + "_ptds")
                   for a in abi]
        present = [n for n in abi if n in exports]
        for version, export in zip(reversed(sorted(vs)), reversed(present)):
            rows.append((name, version, per_thread, export))
    rows.sort()
    out = ["// " + x + "\n" for x in header_comment(lib, "cudaTypedefs.h and the exports", "").splitlines()]
    out.append("//\n// {name, first CUDA version (1000 x major + 10 x minor), per-thread default stream,\n"
               "//  export}, sorted by name then version: cuGetProcAddress answers a request for\n"
               "// (name, version, flags) with the last row of that name whose version is at most the\n"
               "// requested one (the per-thread row when CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM\n"
               "// is asked for and one exists).\n")
    out.extend(f'{{"{n}", {v}, {p}, "{e}"}},\n' for n, v, p, e in rows)
    return "".join(out)


def macro_values(include: Path, pairs) -> str:
    vals = []
    for header, macro in pairs:
        try:
            text = (include / header).read_text(errors="replace")
        except OSError:
            continue
        m = re.search(rf"#\s*define\s+{macro}\s+(\S+)", text)
        if m:
            vals.append(f"{macro} {m.group(1)}")
    return ", ".join(vals)


def wheel_include(wheels: Path, lib: Lib) -> Path:
    """The include folder of the wheel that ships `lib` (nvidia/nccl/lib/x -> nvidia/nccl/include)."""
    return wheels / Path(lib.wheel).parent.parent / "include"


def wheel_release(wheels: Path, lib: Lib) -> str:
    """"nvidia-nccl-cu13 2.30.7": the installed wheel whose RECORD lists `lib`'s file."""
    for record in sorted(wheels.glob("*.dist-info/RECORD")):
        if lib.wheel in record.read_text(errors="replace"):
            name, _, version = record.parent.name[: -len(".dist-info")].rpartition("-")
            return f"{name.replace('_', '-')} {version}"
    return "an nvidia-* wheel"


def generate(lib: Lib, path: Path | None, include: Path, headers: Headers | None,
             wheels: Path | None = None) -> dict[str, str]:
    nvml_returns = None
    if path is None:
        symbols, nvml_returns = read_nvml_list(NVML_LIST)
        source = f"the hand-written list {NVML_LIST.relative_to(REPO)}"
    else:
        if not path.exists():
            raise GenError(f"{lib.key}: {path} not found (use --cuda-root or --lib {lib.key}=PATH)")
        soname = read_soname(path)
        if soname != lib.soname:
            raise GenError(f"{path}: SONAME is {soname}, expected {lib.soname}")
        symbols = read_exports(path)
        if not symbols:
            raise GenError(f"{path}: no exported symbols")
        versions = macro_values(include, lib.version_macros)
        source = f"{path.name}" + (f" ({versions})" if versions else "")
        if wheels is not None:
            source += f" of the wheel {wheel_release(wheels, lib)}"
    extra = {}
    if lib.key == "cuda" and (include / "cudaTypedefs.h").exists():
        extra["proc_address.inc"] = write_proc_addresses(lib, include, symbols)
    return extra | {
        "symbols.txt": write_symbols(lib, source, symbols),
        "exports.map": write_map(lib, source, symbols),
        "unsupported.cc": write_stubs(lib, source, symbols),
        "non_int_returns.txt": write_non_int(lib, source, symbols, headers, nvml_returns),
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cuda-root", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"),
                    help="CUDA toolkit root (default $CUDA_HOME or /usr/local/cuda)")
    ap.add_argument("--lib", action="append", default=[], metavar="KEY=PATH",
                    help="read KEY's real library from PATH instead of the toolkit")
    ap.add_argument("--wheels", metavar="DIR",
                    help="root of PyPI's nvidia-* wheels (a site-packages folder, or the folder "
                         "interpose/tools/fetch_wheels.sh unpacks them into): the source of "
                         "cufile, cusparselt, nvshmem and nccl")
    ap.add_argument("--only", action="append", default=[], metavar="KEY",
                    help="generate only these shims (" + ", ".join(l.key for l in LIBS) + ")")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if a generated file differs from what it would be")
    ap.add_argument("--out", default=str(INTERPOSE), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    keys = {l.key for l in LIBS}
    overrides = {}
    for item in args.lib:
        key, sep, p = item.partition("=")
        if not sep or key not in keys:
            ap.error(f"--lib {item}: expected KEY=PATH with KEY in {sorted(keys)}")
        overrides[key] = Path(p)
    for key in args.only:
        if key not in keys:
            ap.error(f"--only {key}: expected one of {sorted(keys)}")
    root = Path(args.cuda_root)
    include = root / "include"
    wheels = Path(args.wheels) if args.wheels else None
    extra = tuple(sorted({wheel_include(wheels, l) for l in LIBS if l.wheel})) if wheels else ()
    headers = Headers(include, extra) if include.is_dir() else None

    stale = []
    try:
        for lib in LIBS:
            if args.only and lib.key not in args.only:
                continue
            path = overrides.get(lib.key)
            lib_include = include
            if path is None and lib.wheel:
                if wheels is None:
                    print(f"{lib.key}: skipped (its source is a wheel: pass --wheels DIR)")
                    continue
                path = wheels / lib.wheel
                lib_include = wheel_include(wheels, lib)
            elif path is None and lib.default:
                path = root / lib.default
            files = generate(lib, path, lib_include, headers,
                             wheels if lib.wheel and lib.key not in overrides else None)
            outdir = Path(args.out) / lib.key / "generated"
            for fname, content in files.items():
                target = outdir / fname
                old = target.read_text() if target.exists() else None
                if old == content:
                    continue
                if args.check:
                    stale.append(str(target))
                    continue
                outdir.mkdir(parents=True, exist_ok=True)
                target.write_text(content)
                print(f"wrote {target}")
            n = sum(1 for x in files["symbols.txt"].splitlines() if x and not x.startswith("#"))
            print(f"{lib.key}: {lib.soname}, {n} exports")
    except GenError as e:
        print(f"generate_exports.py: {e}", file=sys.stderr)
        return 2
    if stale:
        print("stale generated files (run " + SCRIPT + "):\n  " + "\n  ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
