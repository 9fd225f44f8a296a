// libmyriad_record.so: loaded by the NVIDIA driver into a program running natively on a real
// GPU (CUDA_INJECTION64_PATH; `myriad profile record`), it times the program's kernels with
// CUPTI's activity records and writes them to $MYRIAD_RECORD_OUT at exit: per kernel name and
// launch shape, the number of launches and the durations of the first kRecordedSamples
// (docs/kernel-timing.md, "Recording on a GPU"). CUPTI is loaded at run time (the toolkit's or
// the one on the library path), so nothing CUDA is linked here.
#include <cupti_activity.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace {

// Durations kept per (kernel, launch shape); later launches are only counted.
constexpr std::size_t kRecordedSamples = 32;
constexpr std::size_t kBufferBytes = 8 << 20;

using RegisterFn = CUptiResult (*)(CUpti_BuffersCallbackRequestFunc,
                                   CUpti_BuffersCallbackCompleteFunc);
using EnableFn = CUptiResult (*)(CUpti_ActivityKind);
using NextFn = CUptiResult (*)(uint8_t*, size_t, CUpti_Activity**);
using FlushFn = CUptiResult (*)(uint32_t);

struct Cupti {
  RegisterFn register_callbacks = nullptr;
  EnableFn enable = nullptr;
  NextFn next = nullptr;
  FlushFn flush = nullptr;
} cupti;

using Key = std::tuple<std::string, int, int, int, int, int, int, int>;
struct Samples {
  unsigned long long launches = 0;
  std::vector<unsigned long long> ns;
};
std::mutex mu;
std::map<Key, Samples>* kernels = nullptr;  // leaked: read at exit, after static destructors

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  while (cupti.next(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
        record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    Samples& s = (*kernels)[Key{k->name != nullptr ? k->name : "?", k->gridX, k->gridY, k->gridZ,
                                k->blockX, k->blockY, k->blockZ, k->dynamicSharedMemory}];
    ++s.launches;
    if (s.ns.size() < kRecordedSamples && k->end >= k->start) s.ns.push_back(k->end - k->start);
  }
  std::free(buffer);
}

void WriteRecording() {
  cupti.flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  const char* path = std::getenv("MYRIAD_RECORD_OUT");
  if (path == nullptr) return;
  std::FILE* out = std::fopen(path, "w");
  if (out == nullptr) return;
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(out, "# myriad-kernel-record v1\n");
  for (const auto& [key, s] : *kernels) {
    std::string name = std::get<0>(key);
    for (char& c : name)
      if (c == '\t' || c == '\n' || c == '\r') c = ' ';
    std::fprintf(out, "%s\t%d,%d,%d\t%d,%d,%d\t%d\t%llu\t", name.c_str(), std::get<1>(key),
                 std::get<2>(key), std::get<3>(key), std::get<4>(key), std::get<5>(key),
                 std::get<6>(key), std::get<7>(key), s.launches);
    for (std::size_t i = 0; i < s.ns.size(); ++i)
      std::fprintf(out, "%s%llu", i ? "," : "", s.ns[i]);
    std::fprintf(out, "\n");
  }
  std::fclose(out);
}

template <typename Fn>
bool Load(void* lib, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(::dlsym(lib, name));
  return *out != nullptr;
}

}  // namespace

// The driver's injection entry point: returns nonzero on success.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  void* lib = ::dlopen("libcupti.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr)
    lib = ::dlopen("/usr/local/cuda/lib64/libcupti.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr || !Load(lib, "cuptiActivityRegisterCallbacks", &cupti.register_callbacks) ||
      !Load(lib, "cuptiActivityEnable", &cupti.enable) ||
      !Load(lib, "cuptiActivityGetNextRecord", &cupti.next) ||
      !Load(lib, "cuptiActivityFlushAll", &cupti.flush)) {
    std::fprintf(stderr, "myriad recorder: cannot load CUPTI (libcupti.so.13): %s\n",
                 lib == nullptr ? ::dlerror() : "a function is missing");
    return 0;
  }
  kernels = new std::map<Key, Samples>();
  if (cupti.register_callbacks(BufferRequested, BufferCompleted) != CUPTI_SUCCESS ||
      cupti.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "myriad recorder: CUPTI refused the kernel activity records\n");
    return 0;
  }
  std::atexit(WriteRecording);
  return 1;
}
