// CUDA graphs as a user captures them: five kernels on one stream beside one on a second stream
// that joins the capture through an event (and is joined back before the capture ends),
// instantiated once and launched three times, timed with events: the branches run side by
// side at each launch, as CUDA runs a graph's independent nodes. A user object keeps a resource alive for the graph, as PyTorch's capture does
// (the graph being captured from cudaStreamGetCaptureInfo, the reference moved to it): it is
// destroyed when the graph and its instantiation are gone, on CUDA's own thread and not
// synchronized with any CUDA call (cudaUserObjectNoDestructorSync), so the program waits for it
// a while. (tests/interpose/run_test.cc)
#include <unistd.h>

#include <atomic>
#include <cstdio>

__global__ void step(float* x) { x[threadIdx.x] *= 2; }

std::atomic<int> destroyed{0};
void Destroy(void* counter) { ++*static_cast<std::atomic<int>*>(counter); }

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
  cudaEventRecord(fork, s);
  cudaStreamWaitEvent(side, fork, 0);
  for (int i = 0; i < 5; ++i) step<<<1, 256, 0, s>>>(x);
  step<<<1, 256, 0, side>>>(x);
  cudaEventRecord(join, side);
  cudaStreamWaitEvent(s, join, 0);
  cudaGraph_t capturing = nullptr;
  cudaStreamGetCaptureInfo(s, &status, nullptr, &capturing, nullptr, nullptr, nullptr);
  cudaUserObject_t resource;
  const bool created = cudaUserObjectCreate(&resource, &destroyed, Destroy, 1,
                                            cudaUserObjectNoDestructorSync) == cudaSuccess;
  const bool retained =
      capturing &&
      cudaGraphRetainUserObject(capturing, resource, 1, cudaGraphUserObjectMove) == cudaSuccess;
  cudaStreamEndCapture(s, &graph);
  cudaGraphExec_t exec;
  cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);  // the instantiation keeps its own reference
  const int destroyed_with_graph = destroyed;

  cudaEventRecord(a, s);
  for (int i = 0; i < 3; ++i) cudaGraphLaunch(exec, s);
  cudaEventRecord(b, s);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  std::printf("capturing %d, sync refused %d, 3 graph launches: %.3f ms\n",
              status == cudaStreamCaptureStatusActive, sync_refused, ms);
  cudaGraphExecDestroy(exec);
  for (int i = 0; i < 2000 && destroyed.load() == 0; ++i) usleep(1000);
  std::printf(
      "user object: created %d, retained by the capture's graph %d (that graph %d), "
      "destroyed %d with the graph, %d with its instantiation\n",
      created, retained, capturing == graph, destroyed_with_graph, destroyed.load());
  return 0;
}
