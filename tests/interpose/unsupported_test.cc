// myriad::shim::Unsupported (interpose/common), compiled into this test: the codes agree with
// the toolkit's headers, the message is printed once per name even under contention, and the
// cudart last-error hook sees every unsupported cudart call.
#include "common/unsupported.h"

#include <cublas_api.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace myriad::shim {
namespace {

// Redirects file descriptor 2 to a temporary file until Finish().
class StderrCapture {
 public:
  StderrCapture() : tmp_(std::tmpfile()), saved_(::dup(2)) {
    std::fflush(stderr);
    ::dup2(::fileno(tmp_), 2);
  }
  std::string Finish() {
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    std::string text;
    std::rewind(tmp_);
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, tmp_)) > 0) text.append(buf, n);
    std::fclose(tmp_);
    return text;
  }

 private:
  std::FILE* tmp_;
  int saved_;
};

size_t Count(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++count;
  return count;
}

TEST(Unsupported, CodesAreTheLibrariesNotSupportedErrors) {
  EXPECT_EQ(NotSupportedCode(Library::kCudart), static_cast<int>(cudaErrorNotSupported));
  EXPECT_EQ(NotSupportedCode(Library::kCuda), static_cast<int>(CUDA_ERROR_NOT_SUPPORTED));
  EXPECT_EQ(NotSupportedCode(Library::kCublas), static_cast<int>(CUBLAS_STATUS_NOT_SUPPORTED));
  EXPECT_EQ(NotSupportedCode(Library::kCublasLt), static_cast<int>(CUBLAS_STATUS_NOT_SUPPORTED));
  EXPECT_EQ(NotSupportedCode(Library::kNccl), static_cast<int>(ncclInvalidUsage));
  EXPECT_EQ(NotSupportedCode(Library::kNvml), 3);  // NVML_ERROR_NOT_SUPPORTED (nvml.h, 3)
  EXPECT_STREQ(NotSupportedName(Library::kCudart), "cudaErrorNotSupported");
  EXPECT_STREQ(NotSupportedName(Library::kNccl), "ncclInvalidUsage");
}

TEST(Unsupported, PrintsOncePerNameAndReturnsTheCodeEveryTime) {
  StderrCapture capture;
  EXPECT_EQ(Unsupported("myriadTestOnceA", Library::kNccl), 5);
  EXPECT_EQ(Unsupported("myriadTestOnceA", Library::kNccl), 5);
  EXPECT_EQ(Unsupported("myriadTestOnceB", Library::kCublas), 15);
  EXPECT_EQ(Unsupported("myriadTestOnceA", Library::kNccl), 5);
  std::string err = capture.Finish();
  EXPECT_EQ(err,
            "myriad: myriadTestOnceA is not supported by Myriad yet (returning ncclInvalidUsage)\n"
            "myriad: myriadTestOnceB is not supported by Myriad yet (returning "
            "CUBLAS_STATUS_NOT_SUPPORTED)\n");
}

TEST(Unsupported, OnceUnderContention) {
  constexpr int kThreads = 16;
  StderrCapture capture;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &wrong] {
      std::string own = "myriadTestOwn" + std::to_string(t);
      for (int i = 0; i < 200; ++i) {
        if (Unsupported("myriadTestShared", Library::kCuda) != 801) ++wrong;
        if (Unsupported(own.c_str(), Library::kNvml) != 3) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  std::string err = capture.Finish();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(Count(err,
                  "myriad: myriadTestShared is not supported by Myriad yet (returning "
                  "CUDA_ERROR_NOT_SUPPORTED)\n"),
            1u);
  for (int t = 0; t < kThreads; ++t) {
    std::string line = "myriad: myriadTestOwn" + std::to_string(t) +
                       " is not supported by Myriad yet (returning NVML_ERROR_NOT_SUPPORTED)\n";
    EXPECT_EQ(Count(err, line), 1u) << line;
  }
  EXPECT_EQ(Count(err, "\n"), static_cast<size_t>(kThreads + 1)) << err;  // whole lines only
}

std::vector<int>* g_hook_calls = nullptr;
void RecordHook(int error) { g_hook_calls->push_back(error); }

TEST(Unsupported, CudartCallsSetTheLastErrorThroughTheHook) {
  std::vector<int> calls;
  g_hook_calls = &calls;
  StderrCapture capture;
  Unsupported("myriadTestHook", Library::kCudart);  // no hook yet
  SetCudartLastErrorHook(&RecordHook);
  Unsupported("myriadTestHook", Library::kCudart);  // already reported: hook still called
  Unsupported("myriadTestHook2", Library::kCudart);
  Unsupported("myriadTestHook3", Library::kNccl);  // not cudart: no hook
  Unsupported("myriadTestHook4", Library::kCuda);  // the driver has no sticky error
  SetCudartLastErrorHook(nullptr);
  Unsupported("myriadTestHook", Library::kCudart);
  capture.Finish();
  g_hook_calls = nullptr;
  EXPECT_EQ(calls, (std::vector<int>{801, 801}));
}

}  // namespace
}  // namespace myriad::shim
