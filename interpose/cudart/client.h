// The cudart shim's connection to Myriad: one socket per host thread, one virtual clock per
// host thread, ops batched until something must wait for an answer.
#pragma once

#include <pthread.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/client_api.h"
#include "protocol/wire.h"

namespace myriad::shim {

// A mutex the preload library's pthread wrappers do not see (glibc's own entry points), for
// the shim's state: the wrappers call into the shim, which must not wait on itself.
class RawMutex {
 public:
  void lock();
  void unlock();
  bool try_lock() { return ::pthread_mutex_trylock(&m_) == 0; }  // not wrapped by the preload

 private:
  pthread_mutex_t m_ = PTHREAD_MUTEX_INITIALIZER;
};

// Launch settings read once from the environment `myriad run` sets.
struct Settings {
  bool under_myriad = false;  // MYRIAD_SOCKET is set
  std::string socket;
  int process = 0;
  int node = 0;             // the node the process runs on (MYRIAD_NODE), for the GPUs' UUIDs
  bool descendant = false;  // started by the launched process (torchrun's workers)
  // What names this process in the NCCL ids it makes: its index, or for a descendant, which
  // shares its parent's index, a number of its own (torchrun's RANK, else its pid).
  int identity = 0;
  // The GPUs of its node the launcher lets the process see (MYRIAD_DEVICES), and of those the
  // ones CUDA_VISIBLE_DEVICES keeps, in its order: device ordinal i is node device
  // node_device[i]. `devices` is their count (cudaGetDeviceCount).
  int node_devices = 1;
  std::vector<int> node_device = {0};
  int devices = 1;
  // MYRIAD_HOST_TIME=measured: the thread's CPU time between calls, times
  // MYRIAD_HOST_TIME_SCALE, moves its clock (not deterministic); else host work is free.
  bool measure_host_time = false;
  double host_time_scale = 1.0;
  bool virtual_clock = true;  // MYRIAD_HOST_CLOCK != "real"
  // The virtual GPU (MYRIAD_GPU_*), for device properties.
  std::string gpu_name = "NVIDIA H100 80GB HBM3";
  std::uint64_t gpu_memory = 80ull << 30;
  int gpu_sms = 132;
  int gpu_major = 9, gpu_minor = 0;
};
const Settings& GetSettings();

// The calling thread's current device (cudaSetDevice).
int CurrentDevice();
void SetCurrentDevice(int device);

// Appends `op` for `device` (-1: current) to this thread's batch. 0, or a cudaError_t.
int Submit(const wire::WireOp& op, int device = -1);
// Sends the batch with `op`, waits for Myriad's answer; the thread's clock becomes its time.
int Call(const wire::WireOp& op, int device, wire::Reply* reply);
// Sends this thread's batch now (before the process exits, for example).
void Flush();
std::uint32_t Intern(const std::string& name);
// The name a calling thread's id stands for ("" if none).
std::string NameOf(std::uint32_t id);

// Stream capture (CUDA graphs): while a stream captures, its ops are recorded instead of sent.
// Returns false if `stream` on `device` is already capturing.
bool BeginCapture(int device, std::int32_t stream);
// Ends the capture `stream` belongs to; false if it is not capturing. The recorded ops carry
// names as strings, since name ids belong to one thread's connection.
struct CapturedOp {
  wire::WireOp op;
  std::string name, comm;
};
bool EndCapture(int device, std::int32_t stream, std::vector<CapturedOp>* ops);
bool IsCapturing(int device, std::int32_t stream);
// Runs fn(arg) soon on a thread of the shim's own, apart from the program's (CUDA runs user
// objects' destructors so: a destructor may take a lock its releaser holds).
void RunDetached(void (*fn)(void*), void* arg);
// The stream that began the capture `stream` belongs to (itself, or the stream whose event it
// waited on); false if it is not capturing.
bool CaptureOrigin(int device, std::int32_t stream, int* origin_device,
                   std::int32_t* origin_stream);
std::int64_t ThreadTime();

// Host threads (common/client_api.h describes each).
void* ThreadCreated();
void ThreadAdopt(void* handle);
void ThreadExited(void* handle);
void* ThreadSelf();
int ThreadEnded(void* handle);
std::int64_t ThreadClock(void* handle);
void HostBlock();
void HostWaitOutside();
void HostResume(std::int64_t at);
void HostWake(void* handle, std::int64_t at);
void SleepUntil(std::int64_t deadline);
std::uint32_t WaitUntil(std::int64_t deadline);
int WaitOutcome(std::uint32_t version);
std::int64_t StartTime(int realtime);
int Exchange(ClientTable::DataCall* calls, int n);
std::uint64_t OpsEnqueued();
// A CUDA call returned `code` to the program: counted, and told to Myriad at exit.
void CountError(int code);
void OrderAfter(void* releaser, std::uint64_t ops);
// Tells Myriad the process loaded a module from the file at `path` (before the thread's next
// launches: its batch goes first, on the same connection). The module's id (> 0), or 0 when
// Myriad cannot be told.
int ModuleFile(const char* path);
// The same for a module loaded from memory, by its PTX text.
int ModulePtx(const char* ptx, std::size_t bytes);
// Tells Myriad the `bytes` at `at` are known contents `id` (wire::kDeviceContents), before the
// thread's next launches; false when Myriad cannot be told.
bool SendContents(std::uint32_t id, const void* at, std::size_t bytes);

const ClientTable& Table();

}  // namespace myriad::shim
