// Shared helpers for the example programs: error-checking macros, the launcher's rank
// environment, command-line flags, and the NCCL unique-id exchange through a file.
//
// Plain host C++ on top of the CUDA runtime and NCCL; nothing here knows about Myriad, so the
// examples behave the same on a real cluster and under `myriad run`.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

namespace ex {

// Rank of this process (or -1 before it is known); error messages carry it so that the
// interleaved output of many ranks stays readable.
inline int g_rank = -1;

[[noreturn]] inline void die(const char* file, int line, const char* call, const char* what) {
  if (g_rank >= 0) {
    std::fprintf(stderr, "[rank %d] %s:%d: %s failed: %s\n", g_rank, file, line, call, what);
  } else {
    std::fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, call, what);
  }
  std::fflush(stderr);
  std::exit(EXIT_FAILURE);
}

[[noreturn]] inline void fail(const std::string& msg) {
  if (g_rank >= 0)
    std::fprintf(stderr, "[rank %d] error: %s\n", g_rank, msg.c_str());
  else
    std::fprintf(stderr, "error: %s\n", msg.c_str());
  std::fflush(stderr);
  std::exit(EXIT_FAILURE);
}

inline std::string cuda_error_text(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
}

}  // namespace ex

// Every CUDA, NCCL and cuBLAS call goes through one of these: on failure the program names
// the call and exits non-zero instead of carrying on with garbage.
#define CUDACHECK(call)                                                         \
  do {                                                                          \
    cudaError_t ex_err_ = (call);                                               \
    if (ex_err_ != cudaSuccess)                                                 \
      ex::die(__FILE__, __LINE__, #call, ex::cuda_error_text(ex_err_).c_str()); \
  } while (0)

#define NCCLCHECK(call)                                                                          \
  do {                                                                                           \
    ncclResult_t ex_res_ = (call);                                                               \
    if (ex_res_ != ncclSuccess) ex::die(__FILE__, __LINE__, #call, ncclGetErrorString(ex_res_)); \
  } while (0)

// Kernel launches report errors through cudaGetLastError; the message names the kernel.
#define KERNELCHECK(kernel)                                                                    \
  do {                                                                                         \
    cudaError_t ex_err_ = cudaGetLastError();                                                  \
    if (ex_err_ != cudaSuccess)                                                                \
      ex::die(__FILE__, __LINE__, "launch of " #kernel, ex::cuda_error_text(ex_err_).c_str()); \
  } while (0)

namespace ex {

// ---------------------------------------------------------------------------------------------
// Launcher environment: torchrun, Open MPI and Slurm each describe the process's place in the
// job with their own variables.
struct Launch {
  int rank = 0;        // this process among all processes
  int size = 1;        // number of processes
  int local_rank = 0;  // this process among the processes of its node
  std::string source = "none";
};

inline bool env_int(const char* name, int& out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return false;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > (1L << 30))
    fail(std::string("bad value for ") + name + ": " + v);
  out = static_cast<int>(x);
  return true;
}

inline Launch launch_from_env() {
  Launch l;
  struct Scheme {
    const char* rank;
    const char* size;
    const char* local;
    const char* size2;
    const char* name;
  };
  const Scheme schemes[] = {
      {"RANK", "WORLD_SIZE", "LOCAL_RANK", nullptr, "torchrun"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", nullptr,
       "openmpi"},
      {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NPROCS", "slurm"},
  };
  for (const Scheme& s : schemes) {
    int rank = 0, size = 0;
    if (!env_int(s.rank, rank)) continue;
    if (!env_int(s.size, size) && (s.size2 == nullptr || !env_int(s.size2, size)))
      fail(std::string(s.rank) + " is set but " + s.size + " is not");
    if (size < 1 || rank >= size)
      fail(std::string(s.rank) + "=" + std::to_string(rank) + " is out of range for size " +
           std::to_string(size));
    l.rank = rank;
    l.size = size;
    if (!env_int(s.local, l.local_rank)) l.local_rank = rank;  // one node: local == global
    l.source = s.name;
    return l;
  }
  return l;
}

// ---------------------------------------------------------------------------------------------
// NCCL unique id through a file. Process 0 creates the id and publishes it atomically (write a
// temporary file, then rename it into place); the others poll until it appears. On a
// multi-node cluster the path must be on a filesystem that every node sees.
struct IdFile {
  char magic[8];
  int32_t nranks;
  int32_t pad;
  ncclUniqueId id;
};

inline std::string id_file_path(const char* program) {
  if (const char* p = std::getenv("MYRIAD_EXAMPLE_ID_FILE"); p != nullptr && *p != '\0') return p;
  // Key the default on something unique to the job so that concurrent jobs don't collide.
  std::string key = "default";
  if (const char* port = std::getenv("MASTER_PORT"); port != nullptr && *port != '\0') {
    key = std::string("port") + port;
  } else if (const char* job = std::getenv("SLURM_JOB_ID"); job != nullptr && *job != '\0') {
    const char* step = std::getenv("SLURM_STEP_ID");
    key = std::string("slurm") + job + "." + (step != nullptr ? step : "0");
  } else if (const char* ns = std::getenv("PMIX_NAMESPACE"); ns != nullptr && *ns != '\0') {
    key = std::string("pmix-") + ns;
  }
  for (char& c : key)
    if (c == '/') c = '_';
  return std::string("/tmp/myriad-example-") + program + "-" + std::to_string(getuid()) + "-" +
         key + ".ncclid";
}

// Returns the id shared by `nranks` processes; `rank` 0 creates it.
inline ncclUniqueId exchange_unique_id(const char* program, int rank, int nranks) {
  ncclUniqueId id{};
  if (nranks == 1) {  // nothing to share
    NCCLCHECK(ncclGetUniqueId(&id));
    return id;
  }
  const std::string path = id_file_path(program);
  IdFile rec{};
  std::memcpy(rec.magic, "MYRNCCL", 8);
  if (rank == 0) {
    NCCLCHECK(ncclGetUniqueId(&id));
    rec.nranks = nranks;
    rec.id = id;
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr) fail("cannot create " + tmp + ": " + std::strerror(errno));
    const bool ok = std::fwrite(&rec, sizeof rec, 1, f) == 1;
    if (std::fclose(f) != 0 || !ok) fail("cannot write " + tmp + ": " + std::strerror(errno));
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      fail("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
    return id;
  }
  // Poll with a real sleep; give up after MYRIAD_EXAMPLE_ID_TIMEOUT_S (default 600) seconds
  // of polling. The attempts are counted rather than timed because the host clock may be
  // virtual.
  int timeout_s = 600;
  env_int("MYRIAD_EXAMPLE_ID_TIMEOUT_S", timeout_s);
  const long max_attempts = static_cast<long>(timeout_s) * 100;
  for (long attempt = 0;; ++attempt) {
    if (FILE* f = std::fopen(path.c_str(), "rb"); f != nullptr) {
      IdFile got{};
      const bool complete = std::fread(&got, sizeof got, 1, f) == 1;
      std::fclose(f);
      if (complete && std::memcmp(got.magic, "MYRNCCL", 8) == 0) {
        if (got.nranks != nranks)
          fail(path + " was written for " + std::to_string(got.nranks) + " ranks, this job has " +
               std::to_string(nranks) + " (stale file from another run? remove it)");
        return got.id;
      }
    }
    if (attempt >= max_attempts)
      fail("timed out after " + std::to_string(timeout_s) + " s waiting for the NCCL id file " +
           path +
           " (does rank 0 run? on several nodes, set MYRIAD_EXAMPLE_ID_FILE to a shared path)");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Called by rank 0 once its communicator exists: every rank has read the id by then (the
// initialisation needs all of them), so the file can go and cannot confuse a later run.
inline void remove_id_file(const char* program, int rank, int nranks) {
  if (rank == 0 && nranks > 1) std::remove(id_file_path(program).c_str());
}

// ---------------------------------------------------------------------------------------------
// Command-line flags: "-x VALUE", "--name VALUE" or "--name=VALUE"; -h/--help prints usage.
// `handle(flag, value)` returns false for a flag it does not know.
inline void parse_flags(int argc, char** argv, const std::function<void(FILE*)>& usage,
                        const std::function<bool(const std::string&, const std::string&)>& handle) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      usage(stdout);
      std::exit(EXIT_SUCCESS);
    }
    if (flag.size() < 2 || flag[0] != '-') {
      std::fprintf(stderr, "unexpected argument '%s'\n", flag.c_str());
      usage(stderr);
      std::exit(2);
    }
    std::string value;
    if (const auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      std::fprintf(stderr, "flag %s needs a value\n", flag.c_str());
      usage(stderr);
      std::exit(2);
    }
    if (!handle(flag, value)) {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      usage(stderr);
      std::exit(2);
    }
  }
}

[[noreturn]] inline void bad_value(const std::string& flag, const std::string& value) {
  std::fprintf(stderr, "bad value for %s: '%s' (see --help)\n", flag.c_str(), value.c_str());
  std::exit(2);
}

// Integer with an optional K/M/G suffix (powers of 1024, as nccl-tests reads sizes).
inline long long parse_size(const std::string& flag, const std::string& value) {
  if (value.empty()) bad_value(flag, value);
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(value.c_str(), &end, 10);
  if (errno != 0 || end == value.c_str() || x < 0) bad_value(flag, value);
  long long mult = 1;
  switch (*end) {
    case '\0':
      break;
    case 'k':
    case 'K':
      mult = 1LL << 10;
      ++end;
      break;
    case 'm':
    case 'M':
      mult = 1LL << 20;
      ++end;
      break;
    case 'g':
    case 'G':
      mult = 1LL << 30;
      ++end;
      break;
    default:
      bad_value(flag, value);
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0' || x > (1LL << 50) / mult) bad_value(flag, value);
  return x * mult;
}

inline int parse_int(const std::string& flag, const std::string& value, int min, int max) {
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(value.c_str(), &end, 10);
  if (errno != 0 || value.empty() || *end != '\0' || x < min || x > max) bad_value(flag, value);
  return static_cast<int>(x);
}

inline double parse_double(const std::string& flag, const std::string& value, double min,
                           double max) {
  char* end = nullptr;
  errno = 0;
  double x = std::strtod(value.c_str(), &end);
  if (errno != 0 || value.empty() || *end != '\0' || !(x >= min && x <= max))
    bad_value(flag, value);
  return x;
}

// Which device a process-local GPU index maps to: the local rank's block of devices, modulo
// what this process can see (all of the node's GPUs, or only its own via CUDA_VISIBLE_DEVICES).
inline int pick_device(int local_rank, int gpus_per_process, int index) {
  int count = 0;
  CUDACHECK(cudaGetDeviceCount(&count));
  if (count < 1) fail("no CUDA device visible");
  return (local_rank * gpus_per_process + index) % count;
}

// Grid size for grid-stride kernels: enough blocks to fill the device, no more than the work.
inline unsigned grid_for(long long n, int threads, int sm_count) {
  long long blocks = (n + threads - 1) / threads;
  const long long cap = static_cast<long long>(sm_count) * 8;
  if (blocks > cap) blocks = cap;
  if (blocks < 1) blocks = 1;
  return static_cast<unsigned>(blocks);
}

}  // namespace ex
