// Scenario files: a TOML description of a cluster (and, later, of what runs on it), resolved
// into a netmodel::Cluster with every number traced to where it came from.
// docs/scenarios.md lists the keys, defaults, units and the error format.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "myriad/emulator/workload.h"
#include "myriad/netmodel/cluster.h"
#include "myriad/netmodel/flow_model.h"
#include "myriad/status.h"

namespace myriad::emulator {

// How `myriad run` starts the program ([launch]); zeros and empties mean "not given".
struct LaunchSettings {
  std::vector<std::string> command;
  int processes = 0;
  int devices_per_process = 0;
  std::string env = "torchrun";  // torchrun, mpi, slurm
  bool virtual_host_clock = true;
  // Host work between calls: modelled (free, deterministic) or measured (the thread's CPU
  // time times host_time_scale, e.g. a slower or faster host CPU).
  bool measure_host_time = false;
  double host_time_scale = 1.0;
  // Rank folding (docs/run.md, "Folding"): the axes folded ("dp") and the rank mesh.
  std::vector<std::string> fold;
  std::string mesh;
  // The fold checked on two replicas first: true as --check-fold (a difference stops the
  // run), false as --no-check-fold, unset: checked, a difference warned of (docs/run.md).
  std::optional<bool> check_fold;
};

struct Scenario {
  std::string path;  // as given to LoadScenario
  std::string name;  // `name`, or the file's stem
  std::string description;
  netmodel::Cluster cluster;  // validated
  // Where each resolved value came from, in display order: key path relative to [cluster]
  // ("nodes", "gpu.bf16_flops", "scale_up.bandwidth", "scale_out.nic.rate") -> origin:
  //   "scenarios/x.toml:5:9"            a required key, written there
  //   "override scenarios/x.toml:12:1"  written there, replacing a catalog value or default
  //   "catalog h100-sxm"                the hardware catalog's figure for that part
  //   "default"                         Myriad's default (docs/scenarios.md says which)
  //   "derived: <how>"                  computed from other values
  // [workload] keys are recorded as "workload.<key>", "workload.parallel.<key>" and
  // "workload.training.<key>", with "preset <name>" for a value taken from a model preset.
  std::vector<std::pair<std::string, std::string>> provenance;
  LaunchSettings launch;
  // [workload], validated against the cluster, with parallel.dp resolved (never 0) and every
  // model size filled in (kv_heads = heads and ffn = 4 x hidden unless given).
  std::optional<WorkloadSpec> workload;
  // [network]: the network model runs use unless the command line says otherwise, and the
  // flow model's routing, link changes and background traffic (docs/network.md).
  netmodel::Fidelity fidelity = netmodel::Fidelity::kAnalytical;
  netmodel::FlowOptions flow;
  // [timing] profiles: kernel profile databases, searched after the command line's
  // (--profile), each path resolved against the directory of the file that names it.
  std::vector<std::string> profiles;
  // [timing] clocks: tensor-core kernels at the clock a sustained load holds under the GPU's
  // power limit ("sustained", the default), or at the short-benchmark clock ("boost").
  bool sustained_clocks = true;
  // [timing] fp8_accumulation: "as-called" (true) or "fast" (KernelTimingOptions::fp8_promotion)
  bool fp8_promotion = true;
  // [timing] overlap: communication in flight takes SMs and HBM bandwidth from the kernels
  // beside it ("shared", the default), or nothing ("off"); docs/engine.md.
  bool overlap_shared = true;

  // The origin recorded for `key`, or "" when none was.
  std::string_view Origin(std::string_view key) const;
};

// Reads, merges (`include`), checks and resolves a scenario file. Every error is one line,
// "FILE:LINE:COLUMN: KEY.PATH: message", or "FILE: cannot open scenario file: <reason>".
Result<Scenario> LoadScenario(const std::string& path);

}  // namespace myriad::emulator
