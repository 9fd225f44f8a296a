// `myriad profile import TRACE... -o PROFILE.kdb`: kernel profiles from a real GPU's traces;
// `myriad profile validate TRACE...`: those traces' kernels replayed through the models.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
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
    "       myriad profile validate TRACE [TRACE...] [--gpu KEY] [--json] [--kernels N]\n"
    "\n"
    "import: reads GPU traces recorded on a real GPU (a PyTorch profiler Chrome trace, plain or\n"
    "gzip-compressed, or an Nsight Systems SQLite export: nsys export --type sqlite) and writes\n"
    "the profile database `--profile` reads: each kernel's median duration per name and launch\n"
    "shape, and each matrix product's (aten::mm, addmm, bmm, baddbmm, _scaled_mm with\n"
    "record_shapes) per shape. The GPU is the trace's, or --gpu KEY (a catalog key:\n"
    "h100-sxm, ...). --json prints what was written as JSON. docs/kernel-timing.md,\n"
    "\"Importing a profile\".\n"
    "\n"
    "record: runs PROGRAM natively on this machine's GPU and writes its kernels' profile.\n"
    "\n"
    "validate: replays the kernels of traces recorded on a real GPU through Myriad's models\n"
    "(no profile; each kernel's work from its name, launch shape and, where recorded, its ATen\n"
    "op's input shapes) and prints, per kernel family and model, the measured and predicted\n"
    "time and the median error. --json for the same as JSON, --kernels N for the N kernels\n"
    "with the largest errors. docs/validation.md, \"Kernel models against real traces\".\n";

// Reads each trace, and the GPU they were recorded on: `gpu_key` when given (a note for a
// trace of another GPU), else the first trace's, which every other must share.
int ReadTraces(const std::vector<std::string>& traces, std::string* gpu_key,
               std::vector<emulator::profiling::TraceRead>* read, std::string* formats,
               std::ostream& err) {
  for (const std::string& path : traces) {
    auto trace = emulator::profiling::ReadTrace(path);
    if (!trace.ok()) {
      err << "myriad: error: " << trace.status().message() << "\n";
      return kExitBadInput;
    }
    // Without --gpu every trace must name the same catalog GPU.
    if (gpu_key->empty() || read->empty()) {
      auto key = emulator::profiling::GpuKeyForDevice(trace->device_name);
      if (gpu_key->empty()) {
        if (!key.ok()) {
          err << "myriad: error: " << path << ": " << key.status().message() << "\n";
          return kExitBadInput;
        }
        *gpu_key = *key;
      } else if (key.ok() && *key != *gpu_key) {
        err << "myriad: note: " << path << " was recorded on " << trace->device_name
            << "; its kernels are taken as " << *gpu_key << "'s, as --gpu asks\n";
      }
    } else if (auto key = emulator::profiling::GpuKeyForDevice(trace->device_name);
               key.ok() && *key != *gpu_key) {
      err << "myriad: error: " << path << " was recorded on " << trace->device_name << ", not "
          << *gpu_key << " like the first trace (give --gpu to write them all for one GPU)\n";
      return kExitBadInput;
    }
    *formats += (formats->empty() ? "" : ", ") + trace->format;
    read->push_back(std::move(trace).value());
  }
  return kExitOk;
}

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
  if (const int status = ReadTraces(traces, &gpu_key, &read, &formats, err); status != kExitOk)
    return status;
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

int Validate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::vector<std::string> traces;
  std::string gpu_key;
  bool json = false;
  std::size_t worst = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      json = true;
    } else if ((a == "--gpu" || a == "--kernels") && i + 1 >= args.size()) {
      err << "myriad profile validate: error: " << a << " needs a value\n" << kProfileUsage;
      return kExitBadInput;
    } else if (a == "--gpu") {
      gpu_key = args[++i];
    } else if (a == "--kernels") {
      const std::string& v = args[++i];
      if (v.empty() || v.size() > 6 || v.find_first_not_of("0123456789") != std::string::npos) {
        err << "myriad profile validate: error: --kernels needs a count (0 to 999999), not '" << v
            << "'\n";
        return kExitBadInput;
      }
      worst = std::stoul(v);
    } else if (a == "-h" || a == "--help") {
      out << kProfileUsage;
      return kExitOk;
    } else if (!a.empty() && a[0] == '-') {
      err << "myriad profile validate: error: unknown option '" << a << "'\n" << kProfileUsage;
      return kExitBadInput;
    } else {
      traces.push_back(a);
    }
  }
  if (traces.empty()) {
    err << "myriad profile validate: error: no TRACE\n" << kProfileUsage;
    return kExitBadInput;
  }
  std::vector<emulator::profiling::TraceRead> read;
  std::string formats;
  if (const int status = ReadTraces(traces, &gpu_key, &read, &formats, err); status != kExitOk)
    return status;
  auto checked = emulator::profiling::ValidateKernels(read, gpu_key);
  if (!checked.ok()) {
    err << "myriad: error: " << checked.status().message() << "\n";
    return kExitBadInput;
  }
  // The kernels with the largest errors, for --kernels.
  std::vector<const emulator::profiling::KernelCheck*> ranked;
  for (const auto& c : checked->checks)
    if (c.measured_us > 0) ranked.push_back(&c);
  const auto error = [](const emulator::profiling::KernelCheck* c) {
    return std::abs(c->predicted_us / c->measured_us - 1);
  };
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](const auto* a, const auto* b) { return error(a) > error(b); });
  ranked.resize(std::min(ranked.size(), worst));
  if (json) {
    nlohmann::ordered_json doc = {{"gpu", gpu_key}, {"traces", traces}};
    nlohmann::ordered_json families = nlohmann::ordered_json::array();
    for (const auto& f : checked->families)
      families.push_back({{"family", f.family},
                          {"model", f.model},
                          {"checks", f.checks},
                          {"measured_us", f.measured_us},
                          {"predicted_us", f.predicted_us},
                          {"median_error", f.median_error},
                          {"median_abs_error", f.median_abs_error},
                          {"p90_abs_error", f.p90_abs_error},
                          {"long_checks", f.long_checks},
                          {"long_median_error", f.long_median_error},
                          {"isolated_checks", f.isolated_checks},
                          {"isolated_median_error", f.isolated_median_error},
                          {"nccl_checks", f.nccl_checks},
                          {"nccl_median_error", f.nccl_median_error},
                          {"nccl_shared_median_error", f.nccl_shared_median_error}});
    doc["families"] = families;
    nlohmann::ordered_json kernels = nlohmann::ordered_json::array();
    for (const auto* c : ranked)
      kernels.push_back({{"name", c->name},
                         {"family", c->family},
                         {"model", c->model},
                         {"measured_us", c->measured_us},
                         {"predicted_us", c->predicted_us},
                         {"grid", {c->grid.x, c->grid.y, c->grid.z}},
                         {"block", {c->block.x, c->block.y, c->block.z}},
                         {"bytes", c->bytes},
                         {"overlapped", c->overlapped}});
    doc["worst_kernels"] = kernels;
    nlohmann::ordered_json beside = nlohmann::ordered_json::array();
    for (const auto& p : checked->beside_nccl)
      beside.push_back({{"name", p.name},
                        {"grid", {p.grid.x, p.grid.y, p.grid.z}},
                        {"block", {p.block.x, p.block.y, p.block.z}},
                        {"beside", p.beside},
                        {"alone", p.alone},
                        {"nccl_blocks", p.nccl_blocks},
                        {"measured_ratio", p.measured_ratio},
                        {"model_ratio", p.model_ratio}});
    doc["beside_nccl"] = beside;
    doc["unchecked_nccl_kernels"] = checked->communication_kernels;
    doc["unchecked_nccl_us"] = checked->communication_us;
    out << doc.dump(2) << "\n";
    return kExitOk;
  }
  double measured = 0;
  for (const auto& f : checked->families) measured += f.measured_us;
  out << fmt::format("kernels of {} replayed through Myriad's models on {} (no profile)\n",
                     traces.size() == 1 ? traces[0] : fmt::format("{} traces", traces.size()),
                     gpu_key);
  out << fmt::format("  {:<14} {:<16} {:>7} {:>13} {:>13} {:>6} {:>9} {:>9} {:>9} {:>15} {:>16}\n",
                     "family", "model", "checks", "measured us", "predicted us", "share", "median",
                     "|median|", "p90 |e|", ">=10us: median", "isolated: median");
  for (const auto& f : checked->families)
    out << fmt::format(
        "  {:<14} {:<16} {:>7} {:>13.1f} {:>13.1f} {:>5.1f}% {:>+8.1f}% {:>8.1f}% {:>8.1f}% "
        "{:>6} {:>+7.1f}% {:>7} {:>+7.1f}%\n",
        f.family, f.model, f.checks, f.measured_us, f.predicted_us,
        measured > 0 ? 100 * f.measured_us / measured : 0.0, 100 * f.median_error,
        100 * f.median_abs_error, 100 * f.p90_abs_error, f.long_checks, 100 * f.long_median_error,
        f.isolated_checks, 100 * f.isolated_median_error);
  out << "  (error: predicted / measured - 1 per kernel, a GEMM call's kernels together; "
         "share: of the measured kernel time checked; >=10us: the kernels measured at 10 us or "
         "more, how many and their median error; isolated: those no other stream's kernel "
         "overlapped)\n";
  bool beside_nccl = false;
  for (const auto& f : checked->families) {
    if (f.nccl_checks == 0) continue;
    if (!beside_nccl)
      out << "  tensor-core kernels beside NCCL kernels (the shared model: SMs / SMs left for "
             "the NCCL kernel's blocks, over the share of the time it overlapped; "
             "docs/engine.md):\n";
    beside_nccl = true;
    out << fmt::format(
        "    {:<14} {:<16} {:>7} median {:>+7.1f}% alone, {:>+7.1f}% with the shared model "
        "(isolated kernels: {:>+7.1f}%)\n",
        f.family, f.model, f.nccl_checks, 100 * f.nccl_median_error,
        100 * f.nccl_shared_median_error, 100 * f.isolated_median_error);
  }
  if (!checked->beside_nccl.empty()) {
    // By the NCCL kernel's blocks: the measured slowdown of the same launch against the model.
    std::map<int, std::pair<std::vector<double>, std::vector<double>>> by_blocks;
    std::vector<double> measured_all, model_all;
    for (const auto& p : checked->beside_nccl) {
      by_blocks[p.nccl_blocks].first.push_back(p.measured_ratio);
      by_blocks[p.nccl_blocks].second.push_back(p.model_ratio);
      measured_all.push_back(p.measured_ratio);
      model_all.push_back(p.model_ratio);
    }
    out << fmt::format(
        "  the same tensor-core kernel and launch beside an NCCL kernel and alone ({} kernels; "
        "duration beside / alone, medians): measured x{:.2f}, shared model x{:.2f}\n",
        checked->beside_nccl.size(), emulator::profiling::Median(measured_all),
        emulator::profiling::Median(model_all));
    for (const auto& [blocks, ratios] : by_blocks)
      out << fmt::format(
          "    beside {:>3} NCCL blocks: {:>3} kernels, measured x{:.2f}, model x{:.2f}\n", blocks,
          ratios.first.size(), emulator::profiling::Median(ratios.first),
          emulator::profiling::Median(ratios.second));
  }
  if (checked->communication_kernels > 0)
    out << fmt::format(
        "  not checked: {} NCCL kernels, {:.1f} us measured (a trace records no collective's "
        "size, and their durations include waiting for the other ranks)\n",
        checked->communication_kernels, checked->communication_us);
  if (!ranked.empty()) {
    out << "largest errors:\n";
    for (const auto* c : ranked)
      out << fmt::format("  {:>+9.1f}% {:>10.2f} us measured {:>10.2f} us by {:<14} {}\n",
                         100 * (c->predicted_us / c->measured_us - 1), c->measured_us,
                         c->predicted_us, c->model, c->name.substr(0, 120));
  }
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
  if (args[0] == "validate") return Validate(rest, out, err);
  err << "myriad profile: error: unknown subcommand '" << args[0]
      << "' (import, record, validate)\n"
      << kProfileUsage;
  return kExitBadInput;
}

}  // namespace myriad::cli
