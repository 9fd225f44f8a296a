// `myriad profile import TRACE... -o PROFILE.kdb`: kernel profiles from a real GPU's traces.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/run_flags.h"
#include "myriad/emulator/profiling.h"

namespace myriad::cli {
namespace {

const char kProfileUsage[] =
    "usage: myriad profile import TRACE [TRACE...] -o PROFILE.kdb [--gpu KEY] [--json]\n"
    "       myriad profile record [-o PROFILE.kdb] -- PROGRAM [ARGS...]\n"
    "\n"
    "import: reads GPU traces recorded on a real GPU (a PyTorch profiler Chrome trace, plain or\n"
    "gzip-compressed, or an Nsight Systems SQLite export: nsys export --type sqlite) and writes\n"
    "the profile database `--profile` reads: each kernel's median duration per name and launch\n"
    "shape, and each matrix product's (aten::mm, addmm, bmm, baddbmm, _scaled_mm with\n"
    "record_shapes) per shape. The GPU is the trace's, or --gpu KEY (a catalog key:\n"
    "h100-sxm, ...). --json prints what was written as JSON. docs/kernel-timing.md,\n"
    "\"Importing a profile\".\n"
    "\n"
    "record: runs PROGRAM natively on this machine's GPU and writes its kernels' profile.\n";

int Import(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::vector<std::string> traces;
  std::string output, gpu_key;
  bool json = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      json = true;
      continue;
    }
    if ((a == "-o" || a == "--output" || a == "--gpu") && i + 1 >= args.size()) {
      err << "myriad profile import: error: " << a << " needs a value\n" << kProfileUsage;
      return kExitBadInput;
    }
    if (a == "-o" || a == "--output") {
      output = args[++i];
    } else if (a == "--gpu") {
      gpu_key = args[++i];
    } else if (a == "-h" || a == "--help") {
      out << kProfileUsage;
      return kExitOk;
    } else if (!a.empty() && a[0] == '-') {
      err << "myriad profile import: error: unknown option '" << a << "'\n" << kProfileUsage;
      return kExitBadInput;
    } else {
      traces.push_back(a);
    }
  }
  if (traces.empty() || output.empty()) {
    err << "myriad profile import: error: " << (traces.empty() ? "no TRACE" : "no -o PROFILE.kdb")
        << "\n"
        << kProfileUsage;
    return kExitBadInput;
  }
  std::vector<emulator::profiling::TraceRead> read;
  std::string formats;
  for (const std::string& path : traces) {
    auto trace = emulator::profiling::ReadTrace(path);
    if (!trace.ok()) {
      err << "myriad: error: " << trace.status().message() << "\n";
      return kExitBadInput;
    }
    // Without --gpu every trace must name the same catalog GPU.
    if (gpu_key.empty() || read.empty()) {
      auto key = emulator::profiling::GpuKeyForDevice(trace->device_name);
      if (gpu_key.empty()) {
        if (!key.ok()) {
          err << "myriad: error: " << path << ": " << key.status().message() << "\n";
          return kExitBadInput;
        }
        gpu_key = *key;
      } else if (key.ok() && *key != gpu_key) {
        err << "myriad: note: " << path << " was recorded on " << trace->device_name
            << "; its kernels are written for " << gpu_key << " as --gpu asks\n";
      }
    } else if (auto key = emulator::profiling::GpuKeyForDevice(trace->device_name);
               key.ok() && *key != gpu_key) {
      err << "myriad: error: " << path << " was recorded on " << trace->device_name << ", not "
          << gpu_key << " like the first trace (give --gpu to write them all for one GPU)\n";
      return kExitBadInput;
    }
    formats += (formats.empty() ? "" : ", ") + trace->format;
    read.push_back(std::move(trace).value());
  }
  std::string source;
  for (const std::string& t : traces) source += (source.empty() ? "" : ", ") + t;
  auto built = emulator::profiling::BuildProfile(read, gpu_key, source);
  if (!built.ok()) {
    err << "myriad: error: " << built.status().message() << "\n";
    return kExitBadInput;
  }
  if (!WriteFile(output, built->database, err)) return kExitFailure;
  if (json) {
    nlohmann::ordered_json doc = {{"output", output},
                                  {"gpu", gpu_key},
                                  {"traces", traces},
                                  {"formats", formats},
                                  {"kernels", built->kernels},
                                  {"kernel_rows", built->kernel_rows},
                                  {"gemm_calls", built->gemm_calls},
                                  {"gemm_rows", built->gemm_rows},
                                  {"kernel_time_us", built->kernel_time_us}};
    out << doc.dump(2) << "\n";
    return kExitOk;
  }
  out << fmt::format(
      "{}: {} kernels ({} rows by name and launch shape) and {} GEMM calls ({} shapes), "
      "{:.3f} ms of kernel time, from {} ({}), for {}\n",
      output, built->kernels, built->kernel_rows, built->gemm_calls, built->gemm_rows,
      built->kernel_time_us / 1000,
      traces.size() == 1 ? "1 trace" : fmt::format("{} traces", traces.size()), formats, gpu_key);
  if (built->kernels == 0)
    out << "note: the traces hold no GPU kernels (was CUDA activity recorded?)\n";
  return kExitOk;
}

}  // namespace

int RunProfile(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    (args.empty() ? err : out) << kProfileUsage;
    return args.empty() ? kExitBadInput : kExitOk;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "import") return Import(rest, out, err);
  if (args[0] == "record") return RecordProfile(rest, out, err);
  err << "myriad profile: error: unknown subcommand '" << args[0] << "' (import, record)\n"
      << kProfileUsage;
  return kExitBadInput;
}

}  // namespace myriad::cli
