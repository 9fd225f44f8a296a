// The runtime's services for the other shims (NCCL, cuBLAS, cuBLASLt) and the clock preload.
//
// There is one connection to Myriad per host thread, and one op stream per device; both live
// in the cudart shim. The other shims reach them through this table, which the cudart shim
// hands out from cudaGetExportTable() for kClientTableId, the mechanism the real runtime uses
// for its private tables, so no shim exports anything the real library does not.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "protocol/wire.h"

namespace myriad::shim {

// {4d59..}: "MYRIADCLIENT" padded; any 16 bytes no real table uses.
inline constexpr cudaUUID_t kClientTableId = {
    {'M', 'Y', 'R', 'I', 'A', 'D', '-', 'C', 'L', 'I', 'E', 'N', 'T', '-', 'v', '1'}};

struct ClientTable {
  std::uint32_t version;  // 7 (kernels loaded through the driver: parameters, module files)
  // Appends an op for `device` (-1: the calling thread's current device) to the calling
  // thread's batch. Returns 0, or a cudaError_t when Myriad cannot be reached.
  int (*submit)(const wire::WireOp* op, int device);
  // Sends the batch and `op` (which waits for an answer) and returns Myriad's reply.
  int (*call)(const wire::WireOp* op, int device, wire::Reply* reply);
  // This thread's id for a name (kernel, communicator), defined to Myriad on first use.
  std::uint32_t (*intern)(const char* name);
  // The calling thread's current device, and Myriad's stream id for a stream handle on it
  // (0: legacy default stream, -2: per-thread default stream).
  int (*current_device)();
  int (*stream_id)(cudaStream_t stream);
  // Virtual time of the calling thread, picoseconds since the run started.
  std::int64_t (*thread_time)();
  // What names this process in NCCL ids (its index from the launcher; a process that the
  // launched one started has a number of its own) and its virtual devices.
  int process;
  int devices;
  // Sends the calling thread's batched ops now (version >= 2).
  void (*flush)();

  // Host threads (version >= 3), for the preload library's pthread and sleep wrappers. A
  // thread is named by an opaque handle. Every call that reports a state sends it to Myriad
  // before it returns, so Myriad never sees a thread idle that could still send work.
  // The calling thread creates a thread: its handle, running from the caller's clock.
  void* (*thread_created)();
  // The new thread, first thing in it: it is `handle`.
  void (*thread_adopt)(void* handle);
  // `handle` has ended (its clock is where a join resumes).
  void (*thread_exited)(void* handle);
  void* (*thread_self)();
  int (*thread_ended)(void* handle);
  std::int64_t (*thread_clock)(void* handle);
  // The calling thread waits on the host / goes on (its clock at least `at`).
  void (*host_block)();
  // The calling thread waits on something Myriad does not see (a file descriptor): it holds
  // nothing, and its process may still send work however long everything else waits.
  void (*host_wait_outside)();
  void (*host_resume)(std::int64_t at);
  // The calling thread wakes `handle` (which waits): it goes on from `at` or its own clock.
  void (*host_wake)(void* handle, std::int64_t at);
  // Sleeps until virtual time `deadline` (Myriad answers when every earlier thing is done).
  void (*sleep_until)(std::int64_t deadline);
  // When the process made its first CUDA call that reaches Myriad (the real reading of
  // CLOCK_REALTIME if `realtime`, else of CLOCK_MONOTONIC, in ns), or -1 before it: host
  // clocks are real until then, and that reading plus the thread's virtual time after.
  std::int64_t (*start_time)(int realtime);

  // For the driver shim (version >= 4).
  // A kernel handle for __cudaLaunchKernel from a kernel's name (modules loaded through the
  // driver: Triton's, NVRTC's); the same name gives the same handle.
  void* (*kernel_named)(const char* name);
  // Device address space the VMM calls map memory into: reserved, not counted as used.
  void* (*reserve)(std::size_t bytes, std::size_t alignment);
  void (*unreserve)(void* p);
  // Physical memory created (bytes > 0) or released (bytes < 0) on `device`: counted as used
  // and sent to Myriad as an allocation or a free.
  int (*account)(int device, std::int64_t bytes);
  // Whether the process has used `device` (the driver's primary context is active).
  int (*device_active)(int device);
  // The device allocation that contains `p`: its start and size; false when none.
  int (*address_range)(const void* p, void** base, std::size_t* bytes);
  // Small collectives' and send/recvs' data, exchanged for real (nccl.cc): `n` calls (a
  // group's, or one), each a header with `header.bytes` bytes from its send buffer for its
  // communicator. Waits (keeping its hold on virtual time) until every call but the sends
  // has its `recv_bytes` of the result in its receive buffer. Ops the thread enqueued go
  // first. Returns 0, or non-zero when an answer is not what was asked.
  struct DataCall {
    wire::DataHeader header;
    const char* comm;
    const void* send;
    void* recv;
    std::size_t recv_bytes;
  };
  int (*exchange)(DataCall* calls, int n);

  // Timed waits (version >= 5), for the preload's timed condition and semaphore waits. The
  // calling thread waits until virtual time `deadline` unless a waker ends it first (its
  // batch sent, reported waiting): the report's version, or 0 when the wait is not Myriad's
  // to time (before the process's first CUDA call; then it waits in real time).
  std::uint32_t (*wait_until)(std::int64_t deadline);
  // Where that wait stands, without blocking: kWaitGoesOn, kWaitWoken (a waker ended it
  // before the deadline: the clock is the waker's), or kWaitTimedOut (the clock is at the
  // deadline, either because virtual time reached it or because the wake came no earlier).
  int (*wait_outcome)(std::uint32_t version);

  // Happens-before between threads (version >= 6), for the preload's lock wrappers. Ops the
  // calling thread has enqueued so far (a thread that lets go of a lock records it):
  std::uint64_t (*ops_enqueued)();
  // The calling thread took what `releaser` let go of after enqueueing `ops` ops: those reach
  // Myriad's GPU queues before anything the caller enqueues from now on, whichever of the two
  // threads' connections Myriad reads first.
  void (*order_after)(void* releaser, std::uint64_t ops);

  // Kernels loaded through the driver (version >= 7). The parameter sizes of `kernel` (a
  // kernel_named handle), in order, from its cubin: its launches then report its integer
  // arguments and its pointers' reach by them.
  void (*kernel_params)(void* kernel, const std::uint16_t* sizes, int count);
  // The process loaded a module from the file at `path`: Myriad reads the kernels' code there.
  // Returns the module's id (version >= 8; > 0), or 0 when Myriad was not told.
  int (*module_file)(const char* path);
  // The process loaded a module from memory whose PTX is `ptx` (`bytes` long, at most
  // wire::kMaxFrameBytes less 4): Myriad reads the kernels' code from it. Returns its id as
  // module_file does.
  int (*module_ptx)(const char* ptx, std::size_t bytes);

  // Version >= 8. The handle of kernel `name` in module `module` (an id module_file or
  // module_ptx returned): its launches name the module, whose code Myriad times them by
  // (several modules may hold kernels of one name). kernel_named's for module 0.
  void* (*kernel_in_module)(const char* name, int module);
};
inline constexpr int kWaitGoesOn = 0, kWaitWoken = 1, kWaitTimedOut = 2;

// The table, or nullptr when the cudart shim is not Myriad's (or not initialised).
inline const ClientTable* Client() {
  static const ClientTable* table = [] {
    const void* t = nullptr;
    return cudaGetExportTable(&t, &kClientTableId) == cudaSuccess
               ? static_cast<const ClientTable*>(t)
               : nullptr;
  }();
  return table;
}

}  // namespace myriad::shim
