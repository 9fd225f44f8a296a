// collective_bench: NCCL collective bandwidth in the style of nccl-tests.
//
// For each message size: warm-up iterations, then N iterations enqueued back to back and timed
// with the host clock while polling cudaStreamQuery on every stream (the way nccl-tests times,
// so that under Myriad the host clock's virtual time is what gets printed). Prints size, count,
// type, redop, root, time per iteration, algbw and busbw in nccl-tests' column layout.
//
// Layout of ranks: PROCESSES x THREADS (-t) x GPUS_PER_THREAD (-g). The number of processes and
// this process's rank come from the launcher's environment (torchrun, Open MPI or Slurm); with
// several processes the NCCL unique id travels through a file (see examples/README.md). Built
// as collective_bench_mpi (MYRIAD_EXAMPLE_MPI), the world is MPI's, as in nccl-tests' MPI=1
// build: rank 0 broadcasts the id with MPI_Bcast and the rows are combined with MPI_Allreduce.
#include "../common/example_common.h"
#ifdef MYRIAD_EXAMPLE_MPI
#include <mpi.h>
#endif

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

enum class Coll { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll, SendRecv };

struct CollInfo {
  Coll coll;
  const char* name;
  bool reduces;  // takes a reduction operator
  bool rooted;   // takes a root rank
};

const CollInfo kColls[] = {
    {Coll::AllReduce, "allreduce", true, false},     {Coll::AllGather, "allgather", false, false},
    {Coll::ReduceScatter, "reducescatter", true, false}, {Coll::Broadcast, "broadcast", false, true},
    {Coll::Reduce, "reduce", true, true},            {Coll::AllToAll, "alltoall", false, false},
    {Coll::SendRecv, "sendrecv", false, false},
};

struct TypeInfo {
  ncclDataType_t type;
  const char* name;
  size_t bytes;
};

const TypeInfo kTypes[] = {
    {ncclInt8, "int8", 1},     {ncclUint8, "uint8", 1},   {ncclInt32, "int32", 4},
    {ncclUint32, "uint32", 4}, {ncclInt64, "int64", 8},   {ncclUint64, "uint64", 8},
    {ncclFloat16, "half", 2},  {ncclFloat32, "float", 4}, {ncclFloat64, "double", 8},
    {ncclBfloat16, "bfloat16", 2},
};

struct OpInfo {
  ncclRedOp_t op;
  const char* name;
};

const OpInfo kOps[] = {{ncclSum, "sum"}, {ncclProd, "prod"}, {ncclMax, "max"}, {ncclMin, "min"}, {ncclAvg, "avg"}};

struct Options {
  long long min_bytes = 8;
  long long max_bytes = 128LL << 20;
  double factor = 2.0;
  long long increment = 0;  // -i: add instead of multiply when non-zero
  CollInfo coll = kColls[0];
  TypeInfo type = kTypes[7];
  OpInfo op = kOps[0];
  int root = 0;
  int warmup = 5;
  int iters = 20;
  int gpus_per_thread = 1;
  int threads = 1;
};

void usage(FILE* out) {
  std::fprintf(out,
      "usage: collective_bench [flags]\n"
      "  -b, --minbytes SIZE     smallest message (default 8; K/M/G suffixes are powers of 1024)\n"
      "  -e, --maxbytes SIZE     largest message (default 128M)\n"
      "  -f, --stepfactor F      multiply the size by F between rows (default 2)\n"
      "  -i, --stepbytes SIZE    add SIZE between rows instead of multiplying\n"
      "  -o, --collective NAME   allreduce|allgather|reducescatter|broadcast|reduce|alltoall|sendrecv\n"
      "  -d, --datatype TYPE     bfloat16|half|float|double|int8|uint8|int32|uint32|int64|uint64 (default float)\n"
      "  -O, --redop OP          sum|prod|max|min|avg (default sum)\n"
      "  -r, --root RANK         root of broadcast/reduce (default 0)\n"
      "  -w, --warmup_iters N    untimed iterations per size (default 5)\n"
      "  -n, --iters N           timed iterations per size (default 20)\n"
      "  -g, --ngpus N           GPUs driven by each thread, with NCCL group calls (default 1)\n"
      "  -t, --nthreads N        threads per process, each with its own GPUs (default 1)\n"
      "  -c, --check 0           accepted for nccl-tests compatibility; data is not checked\n"
      "  -h, --help              this text\n"
      "Sizes follow nccl-tests: for allgather, reducescatter and alltoall SIZE is the whole\n"
      "gathered buffer. Processes come from RANK/WORLD_SIZE/LOCAL_RANK (torchrun),\n"
      "OMPI_COMM_WORLD_* (mpirun) or SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID (srun); several\n"
      "processes share the NCCL id through MYRIAD_EXAMPLE_ID_FILE (default: a file in /tmp\n"
      "named after MASTER_PORT).\n");
}

// What one row moves: `count` is the count argument of the NCCL call, `elements` and `bytes`
// describe the whole buffer (nccl-tests' convention for the printed size and algbw).
struct RowSize {
  size_t count;
  size_t elements;
  size_t bytes;
};

RowSize row_size(Coll c, size_t requested_bytes, size_t type_bytes, int nranks) {
  const size_t n = static_cast<size_t>(nranks);
  size_t elements = requested_bytes / type_bytes;
  size_t count = elements;
  if (c == Coll::AllGather || c == Coll::ReduceScatter || c == Coll::AllToAll) {
    count = elements / n;  // per rank (per peer for alltoall)
    elements = count * n;
  }
  return {count, elements, elements * type_bytes};
}

// nccl-tests' bus bandwidth factors: what each rank's links carry relative to algbw.
double bus_factor(Coll c, int nranks) {
  const double n = nranks;
  switch (c) {
    case Coll::AllReduce: return 2.0 * (n - 1) / n;
    case Coll::AllGather:
    case Coll::ReduceScatter:
    case Coll::AllToAll: return (n - 1) / n;
    case Coll::Broadcast:
    case Coll::Reduce:
    case Coll::SendRecv: return 1.0;
  }
  return 1.0;
}

struct Gpu {
  int device = 0;
  int rank = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
};

// Enqueue one iteration of the collective for one GPU (the caller wraps all of a thread's GPUs
// in one ncclGroupStart/End).
void enqueue(const Options& o, const Gpu& g, size_t count, int nranks) {
  const ncclDataType_t t = o.type.type;
  switch (o.coll.coll) {
    case Coll::AllReduce:
      NCCLCHECK(ncclAllReduce(g.send, g.recv, count, t, o.op.op, g.comm, g.stream));
      break;
    case Coll::AllGather:
      NCCLCHECK(ncclAllGather(g.send, g.recv, count, t, g.comm, g.stream));
      break;
    case Coll::ReduceScatter:
      NCCLCHECK(ncclReduceScatter(g.send, g.recv, count, t, o.op.op, g.comm, g.stream));
      break;
    case Coll::Broadcast:
      NCCLCHECK(ncclBroadcast(g.send, g.recv, count, t, o.root, g.comm, g.stream));
      break;
    case Coll::Reduce:
      NCCLCHECK(ncclReduce(g.send, g.recv, count, t, o.op.op, o.root, g.comm, g.stream));
      break;
    case Coll::AllToAll:
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
      NCCLCHECK(ncclAlltoAll(g.send, g.recv, count, t, g.comm, g.stream));
#else  // older NCCL: all-to-all as grouped send/recv, as nccl-tests does
      for (int peer = 0; peer < nranks; ++peer) {
        const size_t off = count * o.type.bytes * static_cast<size_t>(peer);
        NCCLCHECK(ncclSend(static_cast<char*>(g.send) + off, count, t, peer, g.comm, g.stream));
        NCCLCHECK(ncclRecv(static_cast<char*>(g.recv) + off, count, t, peer, g.comm, g.stream));
      }
#endif
      break;
    case Coll::SendRecv: {  // a ring: send to the next rank, receive from the previous one
      const int next = (g.rank + 1) % nranks;
      const int prev = (g.rank - 1 + nranks) % nranks;
      NCCLCHECK(ncclSend(g.send, count, t, next, g.comm, g.stream));
      NCCLCHECK(ncclRecv(g.recv, count, t, prev, g.comm, g.stream));
      break;
    }
  }
  (void)nranks;
}

// Poll every stream until all have drained (nccl-tests does the same rather than block in
// cudaStreamSynchronize); now and then ask NCCL whether a peer failed, so a broken job stops
// with an error instead of spinning forever.
void wait_streams(const std::vector<Gpu>& gpus) {
  std::vector<bool> done(gpus.size(), false);
  size_t remaining = gpus.size();
  for (unsigned long polls = 1; remaining > 0; ++polls) {
    for (size_t i = 0; i < gpus.size(); ++i) {
      if (done[i]) continue;
      const cudaError_t e = cudaStreamQuery(gpus[i].stream);
      if (e == cudaSuccess) {
        done[i] = true;
        --remaining;
      } else if (e != cudaErrorNotReady) {
        ex::die(__FILE__, __LINE__, "cudaStreamQuery(stream)", ex::cuda_error_text(e).c_str());
      }
    }
    if (remaining > 0 && polls % 1024 == 0) {
      for (const Gpu& g : gpus) {
        ncclResult_t async = ncclSuccess;
        NCCLCHECK(ncclCommGetAsyncError(g.comm, &async));
        if (async != ncclSuccess && async != ncclInProgress)
          ex::die(__FILE__, __LINE__, "ncclCommGetAsyncError(comm)", ncclGetErrorString(async));
      }
    }
  }
}

// Threads of one process start each size's timed loop together.
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    const unsigned long gen = gen_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++gen_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return gen != gen_; });
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_;
  int arrived_ = 0;
  unsigned long gen_ = 0;
};

struct Shared {
  Options opt;
  ex::Launch launch;
  int nranks = 1;
  bool init_all = false;      // one process, one thread: ncclCommInitAll
  ncclUniqueId id{};
  std::vector<ncclComm_t> comms;  // filled by ncclCommInitAll
  Barrier* barrier = nullptr;
  double busbw_sum = 0;       // written by the reporting thread
  int rows = 0;
};

void print_time_cols(double us, double algbw, double busbw) {
  char t[32];
  if (us >= 10000.0) std::snprintf(t, sizeof t, "%7.0f", us);
  else if (us >= 100.0) std::snprintf(t, sizeof t, "%7.1f", us);
  else std::snprintf(t, sizeof t, "%7.2f", us);
  std::printf("  %7s  %6.2f  %6.2f  %5s\n", t, algbw, busbw, "N/A");
}

void run_thread(Shared& sh, int thread) {
  const Options& o = sh.opt;
  const int gpus_per_proc = o.threads * o.gpus_per_thread;
  const bool reporter = sh.launch.rank == 0 && thread == 0;
  std::vector<Gpu> gpus(static_cast<size_t>(o.gpus_per_thread));

  // Buffers sized for the largest row; send and recv both hold the whole gathered buffer,
  // which covers every collective's layout.
  const size_t buf_bytes = static_cast<size_t>(o.max_bytes) > o.type.bytes ? static_cast<size_t>(o.max_bytes)
                                                                          : o.type.bytes;
  for (int i = 0; i < o.gpus_per_thread; ++i) {
    Gpu& g = gpus[static_cast<size_t>(i)];
    const int local_index = thread * o.gpus_per_thread + i;
    g.device = ex::pick_device(sh.launch.local_rank, gpus_per_proc, local_index);
    g.rank = sh.launch.rank * gpus_per_proc + local_index;
    CUDACHECK(cudaSetDevice(g.device));
    CUDACHECK(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking));
    CUDACHECK(cudaMalloc(&g.send, buf_bytes));
    CUDACHECK(cudaMalloc(&g.recv, buf_bytes));
  }

  // Communicators: ncclCommInitAll already made them for a single-threaded single process;
  // otherwise each thread joins its GPUs with ncclCommInitRank inside one group.
  if (sh.init_all) {
    for (int i = 0; i < o.gpus_per_thread; ++i) gpus[static_cast<size_t>(i)].comm = sh.comms[static_cast<size_t>(i)];
  } else {
    NCCLCHECK(ncclGroupStart());
    for (Gpu& g : gpus) {
      CUDACHECK(cudaSetDevice(g.device));
      NCCLCHECK(ncclCommInitRank(&g.comm, sh.nranks, sh.id, g.rank));
    }
    NCCLCHECK(ncclGroupEnd());
    if (thread == 0) ex::remove_id_file("collective_bench", sh.launch.rank, sh.launch.size);
  }

  if (reporter) {
    std::printf("# %10s  %12s  %8s  %6s  %6s           out-of-place\n", "", "", "", "", "");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s\n", "size", "count", "type", "redop", "root",
                "time", "algbw", "busbw", "#wrong");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "", "", "", "(us)",
                "(GB/s)", "(GB/s)", "");
    std::fflush(stdout);
  }

  auto enqueue_all = [&](size_t count) {
    NCCLCHECK(ncclGroupStart());
    for (const Gpu& g : gpus) enqueue(o, g, count, sh.nranks);
    NCCLCHECK(ncclGroupEnd());
  };

  for (long long size = o.min_bytes; size <= o.max_bytes;) {
    const RowSize rs = row_size(o.coll.coll, static_cast<size_t>(size), o.type.bytes, sh.nranks);
    if (rs.count > 0) {
      for (int it = 0; it < o.warmup; ++it) enqueue_all(rs.count);
      wait_streams(gpus);
      sh.barrier->wait();

      const auto t0 = std::chrono::steady_clock::now();
      for (int it = 0; it < o.iters; ++it) enqueue_all(rs.count);
      wait_streams(gpus);
      const auto t1 = std::chrono::steady_clock::now();

      if (reporter) {
        const double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / o.iters;
        const double algbw = us > 0 ? static_cast<double>(rs.bytes) / 1e3 / us : 0.0;  // GB/s
        const double busbw = algbw * bus_factor(o.coll.coll, sh.nranks);
        std::printf("%12zu  %12zu  %8s  %6s  %6d", rs.bytes, rs.elements, o.type.name,
                    o.coll.reduces ? o.op.name : "none", o.coll.rooted ? o.root : -1);
        print_time_cols(us, algbw, busbw);
        std::fflush(stdout);
        sh.busbw_sum += busbw;
        ++sh.rows;
      }
    } else if (reporter) {
      std::printf("# skipping %lld B: less than one %s per rank\n", size, o.type.name);
    }
    const long long next = o.increment > 0 ? size + o.increment
                                           : static_cast<long long>(static_cast<double>(size) * o.factor);
    size = next > size ? next : size + 1;
  }

  // Finalize all of this thread's communicators together (finalize blocks until every member
  // is quiescent, so one at a time could wait on a GPU this thread has not reached yet).
  NCCLCHECK(ncclGroupStart());
  for (const Gpu& g : gpus) NCCLCHECK(ncclCommFinalize(g.comm));
  NCCLCHECK(ncclGroupEnd());
  for (Gpu& g : gpus) {
    NCCLCHECK(ncclCommDestroy(g.comm));
    CUDACHECK(cudaSetDevice(g.device));
    CUDACHECK(cudaFree(g.send));
    CUDACHECK(cudaFree(g.recv));
    CUDACHECK(cudaStreamDestroy(g.stream));
  }
}

template <typename T, size_t N>
bool lookup(const T (&table)[N], const std::string& name, T& out) {
  for (const T& e : table)
    if (name == e.name) {
      out = e;
      return true;
    }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  Shared sh;
  Options& o = sh.opt;
  ex::parse_flags(argc, argv, usage, [&](const std::string& f, const std::string& v) {
    if (f == "-b" || f == "--minbytes") o.min_bytes = ex::parse_size(f, v);
    else if (f == "-e" || f == "--maxbytes") o.max_bytes = ex::parse_size(f, v);
    else if (f == "-f" || f == "--stepfactor") o.factor = ex::parse_double(f, v, 1.0, 1e6);
    else if (f == "-i" || f == "--stepbytes") o.increment = ex::parse_size(f, v);
    else if (f == "-o" || f == "--collective") { if (!lookup(kColls, v, o.coll)) ex::bad_value(f, v); }
    else if (f == "-d" || f == "--datatype") { if (!lookup(kTypes, v, o.type)) ex::bad_value(f, v); }
    else if (f == "-O" || f == "--redop") { if (!lookup(kOps, v, o.op)) ex::bad_value(f, v); }
    else if (f == "-r" || f == "--root") o.root = ex::parse_int(f, v, 0, 1 << 30);
    else if (f == "-w" || f == "--warmup_iters") o.warmup = ex::parse_int(f, v, 0, 1 << 20);
    else if (f == "-n" || f == "--iters") o.iters = ex::parse_int(f, v, 1, 1 << 20);
    else if (f == "-g" || f == "--ngpus") o.gpus_per_thread = ex::parse_int(f, v, 1, 1024);
    else if (f == "-t" || f == "--nthreads") o.threads = ex::parse_int(f, v, 1, 1024);
    else if (f == "-c" || f == "--check") {
      if (ex::parse_int(f, v, 0, 1) != 0) std::fprintf(stderr, "note: -c %s ignored: data is not checked\n", v.c_str());
    } else return false;
    return true;
  });
  if (o.min_bytes > o.max_bytes) ex::fail("-b must not exceed -e");
  if (o.increment == 0 && o.factor <= 1.0) ex::fail("-f must be greater than 1");

#ifdef MYRIAD_EXAMPLE_MPI
  // nccl-tests' MPI build: the world is MPI's, rank 0 makes the NCCL id and broadcasts it.
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &sh.launch.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &sh.launch.size);
  sh.launch.local_rank = sh.launch.rank;
  ex::env_int("OMPI_COMM_WORLD_LOCAL_RANK", sh.launch.local_rank);
  sh.launch.source = "mpi";
#else
  sh.launch = ex::launch_from_env();
#endif
  if (sh.launch.size > 1) ex::g_rank = sh.launch.rank;
  sh.nranks = sh.launch.size * o.threads * o.gpus_per_thread;
  if (o.coll.rooted && o.root >= sh.nranks) ex::fail("root " + std::to_string(o.root) + " is not a rank");

  if (sh.launch.rank == 0) {
    int version = 0;
    NCCLCHECK(ncclGetVersion(&version));
    std::printf("# collective_bench: %s, %d rank(s) = %d process(es) x %d thread(s) x %d GPU(s); NCCL %d\n",
                o.coll.name, sh.nranks, sh.launch.size, o.threads, o.gpus_per_thread, version);
    std::printf("# minBytes %lld maxBytes %lld step: %g(%s) warmup iters: %d iters: %d\n", o.min_bytes, o.max_bytes,
                o.increment > 0 ? static_cast<double>(o.increment) : o.factor,
                o.increment > 0 ? "bytes" : "factor", o.warmup, o.iters);
    std::printf("#\n# Using devices\n");
    const int gpus_per_proc = o.threads * o.gpus_per_thread;
    for (int i = 0; i < gpus_per_proc; ++i) {  // this process's ranks (others print nothing)
      const int dev = ex::pick_device(0, gpus_per_proc, i);
      cudaDeviceProp prop{};
      CUDACHECK(cudaGetDeviceProperties(&prop, dev));
      std::printf("#  Rank %2d Group  0 Pid %6d on device %2d [%04x:%02x:%02x] %s\n", i,
                  static_cast<int>(getpid()), dev, prop.pciDomainID, prop.pciBusID, prop.pciDeviceID, prop.name);
    }
    std::printf("#\n");
    std::fflush(stdout);
  }

  sh.init_all = sh.launch.size == 1 && o.threads == 1;
  if (sh.init_all) {
    std::vector<int> devs;
    for (int i = 0; i < o.gpus_per_thread; ++i) devs.push_back(ex::pick_device(0, o.gpus_per_thread, i));
    sh.comms.resize(devs.size());
    NCCLCHECK(ncclCommInitAll(sh.comms.data(), static_cast<int>(devs.size()), devs.data()));
  } else {
#ifdef MYRIAD_EXAMPLE_MPI
    if (sh.launch.rank == 0) NCCLCHECK(ncclGetUniqueId(&sh.id));
    MPI_Bcast(&sh.id, sizeof(sh.id), MPI_BYTE, 0, MPI_COMM_WORLD);
#else
    sh.id = ex::exchange_unique_id("collective_bench", sh.launch.rank, sh.launch.size);
#endif
  }

  Barrier barrier(o.threads);
  sh.barrier = &barrier;
  if (o.threads == 1) {
    run_thread(sh, 0);
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < o.threads; ++t) pool.emplace_back(run_thread, std::ref(sh), t);
    for (std::thread& th : pool) th.join();
  }

#ifdef MYRIAD_EXAMPLE_MPI
  // Every process's rows, combined (rank 0 printed them).
  double local[2] = {static_cast<double>(sh.launch.rank == 0 ? sh.rows : 0), 1.0}, all[2] = {0, 0};
  MPI_Allreduce(local, all, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (sh.launch.rank == 0) std::printf("# MPI world: %.0f processes, %.0f rows\n", all[1], all[0]);
  MPI_Finalize();
#endif
  if (sh.launch.rank == 0) {
    std::printf("# Out of bounds values : 0 OK\n");
    std::printf("# Avg bus bandwidth    : %g \n", sh.rows > 0 ? sh.busbw_sum / sh.rows : 0.0);
    std::printf("#\n");
  }
  return 0;
}
