// Loads a library at run time, as plugin systems and Python extensions do.
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  int n = 0;
  cudaGetDeviceCount(&n);  // the process uses CUDA through the shared runtime
  void* library = argc > 1 ? dlopen(argv[1], RTLD_NOW) : nullptr;
  std::printf("loaded %s: %s\n", argc > 1 ? argv[1] : "(nothing)", library ? "yes" : dlerror());
  return library ? 0 : 1;
}
