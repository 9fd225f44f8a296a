// A program that runs its kernels through the CUDA driver API, as Inductor's static launcher
// and Triton do: cuModuleLoad of a cubin file (or cuModuleLoadData of its bytes, with
// --from-memory), cuModuleGetFunction, cuLaunchKernel with a kernelParams array; timed with
// CUDA events. The device is LOCAL_RANK's.
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#define CHECK(call)                                                            \
  do {                                                                         \
    CUresult r = (call);                                                       \
    if (r != CUDA_SUCCESS) {                                                   \
      const char* s = nullptr;                                                 \
      cuGetErrorString(r, &s);                                                 \
      std::fprintf(stderr, "%s failed: %s\n", #call, s ? s : "?");             \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: driver_module KERNELS.cubin [--from-memory]\n");
    return 2;
  }
  const bool from_memory = argc > 2 && std::strcmp(argv[2], "--from-memory") == 0;
  const char* local = std::getenv("LOCAL_RANK");
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, local ? std::atoi(local) : 0));
  CUcontext context;
  CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CHECK(cuCtxSetCurrent(context));
  CUmodule module;
  std::string image;
  if (from_memory) {
    std::ifstream in(argv[1], std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    image = s.str();
    CHECK(cuModuleLoadData(&module, image.data()));
  } else {
    CHECK(cuModuleLoad(&module, argv[1]));
  }
  CUfunction scale_add;
  CHECK(cuModuleGetFunction(&scale_add, module, "scale_add"));
  const int n = 1 << 24;
  CUdeviceptr out, in;
  CHECK(cuMemAlloc(&out, n * sizeof(float)));
  CHECK(cuMemAlloc(&in, n * sizeof(float)));
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUevent start, stop;
  CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
  CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
  int count = n;
  float a = 0.5f;
  void* params[] = {&out, &in, &count, &a};
  CHECK(cuEventRecord(start, stream));
  for (int step = 0; step < 4; ++step)
    CHECK(cuLaunchKernel(scale_add, 1024, 1, 1, 256, 1, 1, 0, stream, params, nullptr));
  CHECK(cuEventRecord(stop, stream));
  CHECK(cuEventSynchronize(stop));
  float ms = 0;
  CHECK(cuEventElapsedTime(&ms, start, stop));
  std::printf("driver_module: 4 launches of scale_add over %d floats: %.3f ms\n", n, ms);
  CHECK(cuModuleUnload(module));
  return 0;
}
