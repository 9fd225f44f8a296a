// Device code in a shared library that links the CUDA runtime statically: Myriad refuses to
// load it (tests/interpose/run_test.cc).
__global__ void hidden(float* x) { x[threadIdx.x] = 0; }
extern "C" void launch_hidden(float* x) { hidden<<<1, 32>>>(x); }
