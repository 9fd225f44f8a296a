// Loads a library at run time, as plugin systems and Python extensions do, then (with a second
// argument) runs its device code. Loading a library that links the CUDA runtime statically is
// allowed (PyTorch loads NVIDIA's libraries so); running its kernels is what Myriad refuses.
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  int n = 0;
  cudaGetDeviceCount(&n);  // the process uses CUDA through the shared runtime
  void* library = argc > 1 ? dlopen(argv[1], RTLD_NOW) : nullptr;
  std::printf("loaded %s: %s\n", argc > 1 ? argv[1] : "(nothing)", library ? "yes" : dlerror());
  std::fflush(stdout);
  if (!library) return 1;
  if (argc > 2) {
    using Launch = void (*)(float*);
    auto launch = reinterpret_cast<Launch>(dlsym(library, argv[2]));
    if (!launch) return 1;
    float* x = nullptr;
    cudaMalloc(&x, 128);
    launch(x);
    std::printf("launched %s\n", argv[2]);
  }
  return 0;
}
