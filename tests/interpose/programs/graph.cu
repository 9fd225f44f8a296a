// CUDA graphs as a user captures them: five kernels on one stream plus one on a second stream
// that joins the capture through an event, instantiated once and launched three times, timed
// with events. (tests/interpose/run_test.cc)
#include <cstdio>

__global__ void step(float* x) { x[threadIdx.x] *= 2; }

int main() {
  float* x = nullptr;
  cudaMalloc(&x, 4096);
  cudaStream_t s, side;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  cudaEvent_t fork, join, a, b;
  cudaEventCreate(&fork);
  cudaEventCreate(&join);
  cudaEventCreate(&a);
  cudaEventCreate(&b);

  cudaGraph_t graph;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  cudaStreamCaptureStatus status;
  cudaStreamIsCapturing(s, &status);
  const bool sync_refused = cudaStreamSynchronize(s) != cudaSuccess;
  for (int i = 0; i < 5; ++i) step<<<1, 256, 0, s>>>(x);
  cudaEventRecord(fork, s);
  cudaStreamWaitEvent(side, fork, 0);
  step<<<1, 256, 0, side>>>(x);
  cudaEventRecord(join, side);
  cudaStreamWaitEvent(s, join, 0);
  cudaStreamEndCapture(s, &graph);
  cudaGraphExec_t exec;
  cudaGraphInstantiate(&exec, graph, 0);

  cudaEventRecord(a, s);
  for (int i = 0; i < 3; ++i) cudaGraphLaunch(exec, s);
  cudaEventRecord(b, s);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  std::printf("capturing %d, sync refused %d, 3 graph launches: %.3f ms\n",
              status == cudaStreamCaptureStatusActive, sync_refused, ms);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return 0;
}
