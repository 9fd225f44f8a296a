// The shims' ABI, checked on the built libraries in MYRIAD_SHIM_DIR: each loads, has the real
// library's SONAME, exports exactly the committed list (interpose/<lib>/generated/symbols.txt)
// and the real library's exports with the same version names, depends only on system libraries
// (and the cudart shim), and answers an unimplemented call with the library's "not supported"
// code and one message naming the function.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "elf_reader.h"

namespace myriad::abi {
namespace {

using ::testing::IsEmpty;

struct ShimSpec {
  const char* key;                   // folder under interpose/
  const char* file;                  // file name and SONAME
  const char* real;                  // the real library, relative to MYRIAD_CUDA_ROOT ("" = none)
  const char* version;               // version node of every export ("-" = unversioned)
  bool needs_cudart;                 // links the cudart shim
  std::vector<const char*> samples;  // must resolve (with `version` when versioned)
  // Functions Myriad will not implement (graphics interop, internal entry points, device-API
  // setup): the first one still stubbed is called. Add to the list if all get implemented.
  std::vector<const char*> unsupported;
  int not_supported_code;
  const char* not_supported_name;
  // The list comes from a newer release than the toolkit's (PyTorch's nvidia-* wheel): the
  // toolkit's library must export a subset of it.
  bool newer_than_toolkit = false;
};

// gtest prints the parameter of a failed test with this.
void PrintTo(const ShimSpec& s, std::ostream* os) { *os << s.file; }

const std::vector<ShimSpec>& Shims() {
  static const std::vector<ShimSpec> shims = {
      {"cudart",
       "libcudart.so.13",
       "lib64/libcudart.so.13",
       "libcudart.so.13",
       false,
       {"cudaMalloc", "cudaLaunchKernel", "cudaGetErrorString", "__cudaRegisterFatBinary",
        "__cudaGetKernel", "__cudaLaunchKernel", "cudaStreamSynchronize"},
       {"cudaGraphicsUnregisterResource", "cudaGraphicsMapResources",
        "cudaGraphicsResourceGetMappedPointer"},
       801,
       "cudaErrorNotSupported"},
      {"cublas",
       "libcublas.so.13",
       "lib64/libcublas.so.13",
       "libcublas.so.13",
       true,
       {"cublasCreate_v2", "cublasGemmEx", "cublasSgemm_v2", "cublasGemmStridedBatchedEx",
        "cublasSetStream_v2"},
       {"cublasZtrttp", "cublasCtpttr", "cublasZtpttr"},
       15,
       "CUBLAS_STATUS_NOT_SUPPORTED"},
      {"cublaslt",
       "libcublasLt.so.13",
       "lib64/libcublasLt.so.13",
       "libcublasLt.so.13",
       true,
       {"cublasLtCreate", "cublasLtMatmul", "cublasLtMatmulDescCreate",
        "cublasLtMatmulAlgoGetHeuristic"},
       {"cublasLtACCMatmulAlgoInit", "cublasLtBIIMatmulAlgoInit", "cublasLtCCCMatmulAlgoInit"},
       15,
       "CUBLAS_STATUS_NOT_SUPPORTED"},
      {"nccl",
       "libnccl.so.2",
       "lib64/libnccl.so.2",
       "-",
       true,
       {"ncclAllReduce", "pncclAllReduce", "ncclCommInitRank", "pncclCommInitRank",
        "ncclGroupStart", "pncclGroupEnd", "ncclGetVersion"},
       {"ncclGinBarrierCreateRequirement", "ncclLsaBarrierCreateRequirement",
        "ncclLLA2ACreateRequirement"},
       5,
       "ncclInvalidUsage",
       true},
      {"cuda",
       "libcuda.so.1",
       "lib64/stubs/libcuda.so",
       "-",
       true,
       {"cuInit", "cuDriverGetVersion", "cuGetProcAddress_v2", "cuLaunchKernel", "cuMemAlloc_v2"},
       {"cuTexRefCreate", "cuSurfRefSetArray", "cuGraphicsUnregisterResource"},
       801,
       "CUDA_ERROR_NOT_SUPPORTED"},
      {"nvml",
       "libnvidia-ml.so.1",
       "",
       "-",
       false,
       {"nvmlInit_v2", "nvmlShutdown", "nvmlDeviceGetCount_v2", "nvmlDeviceGetHandleByIndex_v2",
        "nvmlErrorString"},
       {"nvmlDeviceGetBAR1MemoryInfo", "nvmlDeviceGetSerial", "nvmlDeviceGetBrand"},
       3,
       "NVML_ERROR_NOT_SUPPORTED"},
      // The other libraries PyTorch's CUDA wheel links.
      {"cudnn",
       "libcudnn.so.9",
       "lib64/libcudnn.so.9",
       "libcudnn.so.9",
       false,
       {"cudnnCreate", "cudnnGetVersion", "cudnnBackendCreateDescriptor"},
       {"cudnnTransformTensorEx", "cudnnActivationForward", "cudnnAddTensor"},
       3000,
       "CUDNN_STATUS_NOT_SUPPORTED"},
      {"cusparse",
       "libcusparse.so.12",
       "lib64/libcusparse.so.12",
       "libcusparse.so.12",
       false,
       {"cusparseCreate", "cusparseSpMM", "cusparseDestroy"},
       {"cusparseZcsrilu02_analysis", "cusparseBlockedEllGet", "cusparseBsrSetStridedBatch"},
       10,
       "CUSPARSE_STATUS_NOT_SUPPORTED"},
      {"cufft",
       "libcufft.so.12",
       "lib64/libcufft.so.12",
       "libcufft.so.12",
       false,
       {"cufftPlanMany", "cufftExecC2C", "cufftDestroy"},
       {"cufftXtSetWorkAreaPolicy", "cufftDebug", "cufftDestroy"},
       16,
       "CUFFT_NOT_SUPPORTED"},
      {"cusolver",
       "libcusolver.so.12",
       "lib64/libcusolver.so.12",
       "libcusolver.so.12",
       false,
       {"cusolverDnCreate", "cusolverDnXgeqrf", "cusolverDnDestroy"},
       {"cusolverDnXlarft_bufferSize", "cusolverDnCreateParams", "cusolverDnSgetrf"},
       9,
       "CUSOLVER_STATUS_NOT_SUPPORTED"},
      {"nvrtc",
       "libnvrtc.so.13",
       "lib64/libnvrtc.so.13",
       "libnvrtc.so.13",
       false,
       {"nvrtcCreateProgram", "nvrtcCompileProgram", "nvrtcVersion"},
       {"nvrtcAddNameExpression", "nvrtcCompileProgram", "nvrtcCreateProgram"},
       11,
       "NVRTC_ERROR_INTERNAL_ERROR"},
      {"cupti",
       "libcupti.so.13",
       "lib64/libcupti.so.13",
       "libcupti.so.13",
       false,
       {"cuptiSubscribe", "cuptiActivityEnable", "cuptiGetVersion"},
       {"cuptiUnsubscribe", "cuptiActivityFlushAll", "cuptiSubscribe"},
       27,
       "CUPTI_ERROR_NOT_SUPPORTED"},
      {"cufile",
       "libcufile.so.0",
       "",
       "-",
       false,
       {"cuFileDriverOpen", "cuFileRead", "cuFileHandleRegister"},
       {"cuFileWriteAsync", "cuFileBatchIODestroy", "cuFileBatchIOGetStatus"},
       5007,
       "CU_FILE_PLATFORM_NOT_SUPPORTED"},
      {"cusparselt",
       "libcusparseLt.so.0",
       "",
       "-",
       false,
       {"cusparseLtInit", "cusparseLtMatmul", "cusparseLtDestroy"},
       {"cusparseLtStructuredDescriptorInit", "cusparseLtDestroy", "cusparseLtInit"},
       10,
       "CUSPARSE_STATUS_NOT_SUPPORTED"},
      {"nvshmem",
       "libnvshmem_host.so.3",
       "",
       "NVSHMEM",
       false,
       {"nvshmemx_hostlib_init_attr", "nvshmem_malloc", "nvshmem_barrier_all"},
       {"nvshmemx_hostlib_init_attr", "nvshmemx_init_status", "nvshmem_team_split_strided"},
       3,
       "NVSHMEMX_ERROR_NOT_SUPPORTED"},
  };
  return shims;
}

std::string ShimPath(const ShimSpec& s) { return std::string(MYRIAD_SHIM_DIR) + "/" + s.file; }
std::string RealPath(const ShimSpec& s) {
  return *s.real ? std::string(MYRIAD_CUDA_ROOT) + "/" + s.real : std::string();
}

template <typename F>
F AsFunction(void* p) {
  static_assert(sizeof(F) == sizeof(void*));
  F f;
  std::memcpy(&f, &p, sizeof f);
  return f;
}

// The committed list: "NAME VERSION KIND" lines, KIND "func" or "object:SIZE".
std::set<Export> ReadCommittedList(const ShimSpec& s, std::string* error) {
  std::string path = std::string(MYRIAD_INTERPOSE_DIR) + "/" + s.key + "/generated/symbols.txt";
  std::ifstream in(path);
  std::set<Export> out;
  if (!in) {
    *error = "cannot read " + path;
    return out;
  }
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Export e;
    std::string kind;
    if (!(fields >> e.name >> e.version >> kind)) {
      *error = path + ": bad line: " + line;
      return {};
    }
    e.kind = kind.rfind("object", 0) == 0 ? "object" : kind;
    out.insert(e);
  }
  return out;
}

// "missing from X: ..." / "extra in X: ..." lines for the first few differences.
std::string Difference(const std::set<Export>& want, const std::set<Export>& got,
                       const std::string& got_name) {
  std::string out;
  int missing = 0, extra = 0;
  for (const auto& e : want) {
    if (got.count(e)) continue;
    if (missing++ < 20) out += "  missing from " + got_name + ": " + e.ToString() + "\n";
  }
  for (const auto& e : got) {
    if (want.count(e)) continue;
    if (extra++ < 20) out += "  extra in " + got_name + ": " + e.ToString() + "\n";
  }
  if (missing + extra > 0) {
    out += "  (" + std::to_string(missing) + " missing, " + std::to_string(extra) + " extra)\n";
  }
  return out;
}

// Redirects file descriptor 2 to a temporary file until Finish().
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    tmp_ = std::tmpfile();
    saved_ = ::dup(2);
    if (tmp_ != nullptr && saved_ >= 0) ::dup2(::fileno(tmp_), 2);
  }
  ~StderrCapture() { Finish(); }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  std::string Finish() {
    if (tmp_ == nullptr) return text_;
    std::fflush(stderr);
    if (saved_ >= 0) {
      ::dup2(saved_, 2);
      ::close(saved_);
      saved_ = -1;
    }
    std::rewind(tmp_);
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, tmp_)) > 0) text_.append(buf, n);
    std::fclose(tmp_);
    tmp_ = nullptr;
    return text_;
  }

 private:
  std::FILE* tmp_ = nullptr;
  int saved_ = -1;
  std::string text_;
};

size_t CountOccurrences(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos;
       pos = text.find(needle, pos + needle.size())) {
    ++count;
  }
  return count;
}

class ShimAbiTest : public ::testing::TestWithParam<ShimSpec> {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(ReadElfLibrary(ShimPath(GetParam()), &elf_, &error)) << error;
  }
  // The shim, loaded once per process and kept loaded.
  void* Handle() {
    void* h = ::dlopen(ShimPath(GetParam()).c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(h, nullptr) << ::dlerror();
    return h;
  }
  const Export* FindExport(const std::string& name) const {
    for (const auto& e : elf_.exports) {
      if (e.name == name) return &e;
    }
    return nullptr;
  }
  ElfLibrary elf_;
};

TEST_P(ShimAbiTest, LoadsWithTheRealSoname) {
  const ShimSpec& s = GetParam();
  EXPECT_EQ(elf_.soname, s.file);
  void* h = Handle();
  ASSERT_NE(h, nullptr);
  // The object the dynamic linker mapped is the file in the shim directory.
  link_map* map = nullptr;
  ASSERT_EQ(::dlinfo(h, RTLD_DI_LINKMAP, &map), 0) << ::dlerror();
  char want[PATH_MAX], got[PATH_MAX];
  ASSERT_NE(::realpath(ShimPath(s).c_str(), want), nullptr);
  ASSERT_NE(::realpath(map->l_name, got), nullptr) << map->l_name;
  EXPECT_STREQ(got, want);
}

TEST_P(ShimAbiTest, ExportsMatchTheCommittedList) {
  std::string error;
  std::set<Export> committed = ReadCommittedList(GetParam(), &error);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_FALSE(committed.empty());
  std::string diff = Difference(committed, elf_.exports, "the shim");
  EXPECT_TRUE(diff.empty()) << "The shim's exports differ from " << GetParam().key
                            << "/generated/symbols.txt:\n"
                            << diff
                            << "(An implementation without MYRIAD_EXPORT is hidden and shows up "
                               "as missing; see interpose/common/export.h.)";
}

TEST_P(ShimAbiTest, ExportsMatchTheRealLibrary) {
  const ShimSpec& s = GetParam();
  std::string real = RealPath(s);
  if (real.empty()) GTEST_SKIP() << s.file << " has no real library in the toolkit";
  if (::access(real.c_str(), R_OK) != 0) GTEST_SKIP() << real << " is not installed";
  ElfLibrary real_elf;
  std::string error;
  ASSERT_TRUE(ReadElfLibrary(real, &real_elf, &error)) << error;
  EXPECT_EQ(real_elf.soname, s.file);
  ASSERT_FALSE(real_elf.exports.empty());
  if (s.newer_than_toolkit) {
    // Every export of the toolkit's older release is still there, under the same version.
    std::set<Export> missing;
    for (const auto& e : real_elf.exports)
      if (!elf_.exports.count(e)) missing.insert(e);
    EXPECT_TRUE(missing.empty()) << Difference(missing, {}, "the shim");
    return;
  }
  std::string diff = Difference(real_elf.exports, elf_.exports, "the shim");
  EXPECT_TRUE(diff.empty()) << "The shim's exports differ from " << real << " (regenerate with "
                            << "python3 interpose/tools/generate_exports.py):\n"
                            << diff;
  EXPECT_EQ(elf_.version_definitions, real_elf.version_definitions);
}

TEST_P(ShimAbiTest, EveryExportCarriesTheLibrarysVersion) {
  const ShimSpec& s = GetParam();
  if (std::string(s.version) == "-") {
    EXPECT_THAT(elf_.version_definitions, IsEmpty());
  } else {
    // BASE (the file itself) and the one version node the real library uses.
    EXPECT_EQ(elf_.version_definitions, (std::vector<std::string>{s.file, s.version}));
  }
  for (const auto& e : elf_.exports) EXPECT_EQ(e.version, s.version) << e.name;
}

TEST_P(ShimAbiTest, SampleSymbolsResolve) {
  const ShimSpec& s = GetParam();
  void* h = Handle();
  ASSERT_NE(h, nullptr);
  for (const char* name : s.samples) {
    if (std::string(s.version) == "-") {
      EXPECT_NE(::dlsym(h, name), nullptr) << name << ": " << ::dlerror();
    } else {
      EXPECT_NE(::dlvsym(h, name, s.version), nullptr)
          << name << "@" << s.version << ": " << ::dlerror();
      // The version is really checked: another version name does not resolve.
      EXPECT_EQ(::dlvsym(h, name, "MYRIAD_NO_SUCH_VERSION"), nullptr) << name;
    }
  }
  // Nothing of Myriad's own leaks out.
  EXPECT_EQ(::dlsym(h, "_ZN6myriad4shim11UnsupportedEPKcNS0_7LibraryE"), nullptr);
}

TEST_P(ShimAbiTest, DependsOnlyOnSystemLibraries) {
  const ShimSpec& s = GetParam();
  for (const auto& lib : elf_.needed) {
    bool allowed = lib == "libc.so.6" || lib == "libdl.so.2" || lib == "libpthread.so.0" ||
                   lib == "libstdc++.so.6" || lib == "libgcc_s.so.1" || lib == "libm.so.6" ||
                   lib.rfind("ld-linux", 0) == 0 || (s.needs_cudart && lib == "libcudart.so.13");
    EXPECT_TRUE(allowed) << s.file << " needs " << lib;
  }
  bool has_cudart =
      std::find(elf_.needed.begin(), elf_.needed.end(), "libcudart.so.13") != elf_.needed.end();
  EXPECT_EQ(has_cudart, s.needs_cudart) << s.file << " and libcudart.so.13";
  // Sibling shims are found next to this one, ahead of LD_LIBRARY_PATH (DT_RPATH).
  EXPECT_EQ(elf_.rpath, "$ORIGIN");
  EXPECT_EQ(elf_.runpath, "");
}

TEST_P(ShimAbiTest, UnsupportedCallReturnsTheErrorAndSaysSoOnce) {
  const ShimSpec& s = GetParam();
  const char* name = nullptr;
  for (const char* candidate : s.unsupported) {
    const Export* e = FindExport(candidate);
    ASSERT_NE(e, nullptr) << candidate << " is not exported";
    // Still the generated stub: weak. NCCL's own ncclX are weak aliases of pncclX, so for NCCL
    // both names must be weak.
    const Export* p = std::string(s.key) == "nccl" ? FindExport(std::string("p") + candidate) : e;
    if (e->weak && p != nullptr && p->weak) {
      name = candidate;
      break;
    }
  }
  ASSERT_NE(name, nullptr) << "every candidate of " << s.key
                           << " is implemented now: add a function that is not to the list";
  void* h = Handle();
  ASSERT_NE(h, nullptr);
  auto stub = AsFunction<int (*)()>(::dlsym(h, name));
  ASSERT_NE(stub, nullptr) << ::dlerror();

  // The CUDA runtime's sticky last error: set by the stub once the cudart implementation has
  // registered its hook (a real cudaGetLastError is a strong definition).
  int (*get_last_error)() = nullptr;
  if (std::string(s.key) == "cudart") {
    const Export* e = FindExport("cudaGetLastError");
    if (e != nullptr && !e->weak) {
      get_last_error = AsFunction<int (*)()>(::dlvsym(h, "cudaGetLastError", s.version));
    }
  }
  if (get_last_error != nullptr) get_last_error();

  StderrCapture capture;
  int first = stub();
  int last_error = get_last_error != nullptr ? get_last_error() : s.not_supported_code;
  int second = stub();
  std::string err = capture.Finish();

  EXPECT_EQ(first, s.not_supported_code);
  EXPECT_EQ(second, s.not_supported_code);
  EXPECT_EQ(last_error, s.not_supported_code) << "cudaGetLastError after " << name;
  if (get_last_error != nullptr) {
    get_last_error();
    EXPECT_EQ(get_last_error(), 0) << "cudaGetLastError resets the last error";
  }
  std::string line = std::string("myriad: ") + name +
                     " is not supported by Myriad yet (returning " + s.not_supported_name + ")\n";
  EXPECT_EQ(CountOccurrences(err, line), 1u) << "stderr was:\n" << err;
}

INSTANTIATE_TEST_SUITE_P(Shims, ShimAbiTest, ::testing::ValuesIn(Shims()),
                         [](const ::testing::TestParamInfo<ShimSpec>& param_info) {
                           return std::string(param_info.param.key);
                         });

TEST(NcclShim, ExportsBothNcclAndPncclNames) {
  void* h =
      ::dlopen((std::string(MYRIAD_SHIM_DIR) + "/libnccl.so.2").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << ::dlerror();
  EXPECT_NE(::dlsym(h, "ncclAllReduce"), nullptr);
  EXPECT_NE(::dlsym(h, "pncclAllReduce"), nullptr);
  // Every collective and communicator call of nccl.h has its profiling (p) name.
  ElfLibrary elf;
  std::string error;
  ASSERT_TRUE(ReadElfLibrary(std::string(MYRIAD_SHIM_DIR) + "/libnccl.so.2", &elf, &error))
      << error;
  std::set<std::string> names;
  for (const auto& e : elf.exports) names.insert(e.name);
  int pairs = 0;
  for (const auto& n : names) {
    if (n.rfind("pnccl", 0) != 0) continue;
    EXPECT_TRUE(names.count(n.substr(1))) << n << " without " << n.substr(1);
    ++pairs;
  }
  EXPECT_GE(pairs, 40);
}

// Loading cuBLAS, cuBLASLt or NCCL alone brings in the cudart shim beside it, never the real
// libcudart.so.13 that ld.so.cache or LD_LIBRARY_PATH may name. Each runs in a child process
// so that nothing loaded earlier by this test decides the answer.
TEST(DependentShims, LoadTheCudartShimBesideThem) {
  char want[PATH_MAX];
  ASSERT_NE(::realpath((std::string(MYRIAD_SHIM_DIR) + "/libcudart.so.13").c_str(), want), nullptr);
  for (const char* file : {"libcublas.so.13", "libcublasLt.so.13", "libnccl.so.2"}) {
    std::string path = std::string(MYRIAD_SHIM_DIR) + "/" + file;
    std::fflush(nullptr);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // 0: the shim's cudart; 1: load failed; 2: cudart not loaded; 3: another cudart.
      void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h == nullptr) ::_exit(1);
      void* cudart = ::dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
      if (cudart == nullptr) ::_exit(2);
      link_map* map = nullptr;
      char got[PATH_MAX];
      if (::dlinfo(cudart, RTLD_DI_LINKMAP, &map) != 0 || ::realpath(map->l_name, got) == nullptr)
        ::_exit(2);
      ::_exit(std::strcmp(got, want) == 0 ? 0 : 3);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << file << " crashed the child";
    EXPECT_EQ(WEXITSTATUS(status), 0)
        << file << ": 1 = failed to load, 2 = no libcudart.so.13, 3 = not the shim's";
  }
}

}  // namespace
}  // namespace myriad::abi

namespace myriad::abi {
namespace {

// The torch/lib folder of the project's PyTorch venv (scripts/setup_torch.sh), or "".
std::string TorchLibDir() {
  const std::string venv = std::string(MYRIAD_SOURCE_DIR) + "/.venv-torch/lib";
  for (const char* python : {"python3.11", "python3.12", "python3.13", "python3.10"}) {
    const std::string dir = venv + "/" + python + "/site-packages/torch/lib";
    if (::access((dir + "/libtorch_cuda.so").c_str(), R_OK) == 0) return dir;
  }
  return "";
}

// Every NVIDIA function PyTorch's libraries import resolves in a shim: the shims' lists are
// current with the libraries torch's wheel was built against (NCCL 2.30's new calls included).
TEST(TorchImports, EveryNvidiaImportIsExportedByAShim) {
  const std::string dir = TorchLibDir();
  if (dir.empty()) GTEST_SKIP() << "no PyTorch venv (scripts/setup_torch.sh makes one)";
  std::set<Export> exported;  // name and version, kind ignored
  std::map<std::string, std::string> soname_of_version;
  for (const ShimSpec& s : Shims()) {
    ElfLibrary shim;
    std::string error;
    ASSERT_TRUE(ReadElfLibrary(ShimPath(s), &shim, &error)) << error;
    for (Export e : shim.exports) {
      e.kind = "";
      exported.insert(e);
    }
    if (std::string(s.version) != "-") soname_of_version[s.version] = s.file;
  }
  // Unversioned NVIDIA libraries are recognised by their functions' prefixes.
  const char* unversioned[] = {"nccl", "pnccl", "cuFile", "cusparseLt", "nvml", "cu"};
  int checked = 0;
  std::string missing;
  for (const char* lib :
       {"libtorch_cuda.so", "libtorch_python.so", "libtorch_cpu.so", "libtorch_cuda_linalg.so",
        "libc10_cuda.so", "libtorch_nvshmem.so", "libcaffe2_nvrtc.so", "libtorch_global_deps.so"}) {
    ElfLibrary torch;
    std::string error;
    ASSERT_TRUE(ReadElfLibrary(dir + "/" + lib, &torch, &error)) << error;
    for (Export e : torch.imports) {
      const bool ours = soname_of_version.count(e.version) > 0;
      bool nvidia_unversioned = false;
      if (e.version == "-" && !e.weak)
        for (const char* p : unversioned) nvidia_unversioned |= e.name.rfind(p, 0) == 0;
      if (!ours && !nvidia_unversioned) continue;
      ++checked;
      const bool weak = e.weak;
      e.kind = "";
      e.weak = false;
      if (!exported.count(e))
        missing += "  " + std::string(lib) + ": " + e.name + "@" + e.version +
                   (weak ? " (weak)" : "") + "\n";
    }
  }
  EXPECT_GT(checked, 500);
  EXPECT_TRUE(missing.empty()) << "PyTorch imports that no shim exports (regenerate from the "
                                  "wheels: interpose/README.md):\n"
                               << missing;
}

}  // namespace
}  // namespace myriad::abi
