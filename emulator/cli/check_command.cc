// `myriad check`: loads a scenario and prints the cluster it resolves to, every figure followed
// by where it came from, so a user can see which numbers are theirs and which are Myriad's.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "myriad/emulator/scenario.h"
#include "myriad/emulator/units.h"
#include "myriad/netmodel/flow_model.h"
#include "myriad/netmodel/overlap.h"
#include "myriad/netmodel/power.h"
#include "timing/library_model.h"

namespace myriad::cli {
namespace {

using emulator::FormatBandwidth;
using emulator::FormatBytes;
using emulator::FormatDuration;
using emulator::FormatFlops;
using emulator::FormatNumber;
using netmodel::ScaleOutTopology;

constexpr const char* kUsage =
    "usage: myriad check SCENARIO [--json]\n"
    "\n"
    "Loads SCENARIO (a TOML file, see docs/scenarios.md), checks it, and prints the\n"
    "cluster it describes. Each figure ends with where it came from:\n"
    "  [FILE:LINE:COL]           written in the scenario\n"
    "  [override FILE:LINE:COL]  written in the scenario, replacing a catalog figure or default\n"
    "  [catalog KEY]             Myriad's hardware catalog\n"
    "  [default]                 Myriad's default\n"
    "  [derived: ...]            computed from other figures\n"
    "--json prints the same as JSON: sections of rows (label, value, origin).\n"
    "Exit status: 0 if the scenario is valid, 2 if not.\n";

struct Row {
  std::string label;  // empty: a section heading in `value`
  std::string value;
  std::string origin;
};

class Report {
 public:
  explicit Report(const emulator::Scenario& scenario) : scenario_(scenario) {}

  void Section(std::string title) { rows_.push_back({"", std::move(title), ""}); }
  void Line(std::string label, std::string value, std::string origin = "") {
    rows_.push_back({std::move(label), std::move(value), std::move(origin)});
  }
  // A line whose origin is the one the scenario recorded for `key`.
  void Traced(std::string label, std::string value, std::string_view key) {
    Line(std::move(label), std::move(value), std::string(scenario_.Origin(key)));
  }

  // --json: {"sections": [{"title", "rows": [{"label", "value", "origin"}]}]}, the values as
  // printed (with their units), the origins as in brackets.
  void PrintJson(std::ostream& out) const {
    nlohmann::ordered_json sections = nlohmann::ordered_json::array();
    for (const Row& row : rows_) {
      if (row.label.empty()) {
        sections.push_back({{"title", row.value}, {"rows", nlohmann::ordered_json::array()}});
        continue;
      }
      nlohmann::ordered_json entry = {{"label", row.label}, {"value", row.value}};
      if (!row.origin.empty()) entry["origin"] = row.origin;
      sections.back()["rows"].push_back(std::move(entry));
    }
    out << nlohmann::ordered_json({{"sections", sections}}).dump(2) << "\n";
  }

  void Print(std::ostream& out) const {
    std::size_t label_width = 0, value_width = 0;
    for (const Row& row : rows_) {
      if (row.label.empty()) continue;
      label_width = std::max(label_width, row.label.size());
      if (!row.origin.empty()) value_width = std::max(value_width, row.value.size());
    }
    bool first = true;
    for (const Row& row : rows_) {
      if (row.label.empty()) {
        out << (first ? "" : "\n") << row.value << "\n";
      } else if (row.origin.empty()) {
        out << fmt::format("  {:<{}}  {}\n", row.label, label_width, row.value);
      } else {
        out << fmt::format("  {:<{}}  {:<{}}  [{}]\n", row.label, label_width, row.value,
                           value_width, row.origin);
      }
      first = false;
    }
  }

 private:
  const emulator::Scenario& scenario_;
  std::vector<Row> rows_;
};

std::string YesNo(bool value) { return value ? "yes" : "no"; }

// What a node-wide AllGather (1 GiB, the size of a layer's FSDP gather) takes from the kernels
// beside it under the shared model: one example of the figures the engine uses.
void DescribeOverlap(const emulator::Scenario& s, Report& r) {
  const netmodel::Cluster& c = s.cluster;
  if (!s.overlap_shared) {
    r.Line("compute beside communication", "not slowed ([timing] overlap = \"off\")");
    return;
  }
  const int ranks = std::min(c.gpus_per_node, c.total_gpus());
  const netmodel::CollectiveRequest request{netmodel::CollectiveOp::kAllGather,
                                            std::uint64_t{1} << 30, ranks};
  auto est = netmodel::CollectiveModel(c).Estimate(request);
  if (ranks < 2 || !est.ok() || est->time_us <= 0) {
    r.Line("compute beside communication", "shared SMs and HBM bandwidth (docs/engine.md)");
    return;
  }
  const double rate = netmodel::FootprintOf(request, *est).hbm_rate;
  r.Line("beside an AllGather",
         fmt::format("1 GiB over {} GPUs: {} channels ({} of {} SMs), {} of HBM traffic", ranks,
                     est->channels, est->channels, c.gpu.sm_count, FormatBandwidth(rate)),
         "collective model; HBM: sent + received bytes over its time (docs/engine.md)");
  r.Line("  tensor-core kernels",
         fmt::format("x{:.3f}", netmodel::TensorKernelStretch(c.gpu, est->channels)),
         "SMs / SMs left");
  r.Line("  memory-bound kernels", fmt::format("x{:.3f}", netmodel::MemoryKernelStretch(c, rate)),
         "streaming HBM rate / what the traffic leaves");
}

void Describe(const emulator::Scenario& s, Report& r) {
  const netmodel::Cluster& c = s.cluster;
  const netmodel::GpuSpec& gpu = c.gpu;

  r.Section("scenario");
  r.Line("name", s.name);
  r.Line("file", s.path);
  if (!s.description.empty()) r.Line("description", s.description);

  r.Section("cluster");
  r.Traced("GPU", fmt::format("{} ({})", gpu.name, gpu.key), "gpu");
  r.Traced("nodes", std::to_string(c.nodes), "nodes");
  r.Traced("GPUs per node", std::to_string(c.gpus_per_node), "gpus_per_node");
  r.Line("total GPUs", std::to_string(c.total_gpus()), "derived: nodes x gpus_per_node");

  r.Section("GPU");
  r.Traced("BF16 peak", FormatFlops(gpu.bf16_flops), "gpu.bf16_flops");
  r.Traced("FP8 peak", gpu.fp8_flops > 0 ? FormatFlops(gpu.fp8_flops) : "none", "gpu.fp8_flops");
  r.Traced("FP32 peak", FormatFlops(gpu.fp32_flops), "gpu.fp32_flops");
  r.Traced("HBM", FormatBytes(gpu.hbm_bytes), "gpu.hbm");
  r.Traced("HBM bandwidth", FormatBandwidth(gpu.hbm_bandwidth), "gpu.hbm_bandwidth");
  r.Traced("HBM streaming fraction", FormatNumber(gpu.hbm_efficiency), "gpu.hbm_efficiency");
  r.Traced("SMs", std::to_string(gpu.sm_count), "gpu.sm_count");
  r.Traced("kernel floor", FormatDuration(gpu.kernel_floor), "gpu.kernel_floor");
  r.Traced("memory round trip", FormatDuration(gpu.memory_latency), "gpu.memory_latency");
  r.Traced("NVLink links", std::to_string(gpu.nvlink_links), "gpu.nvlink_links");
  r.Traced("NVLink link bandwidth", FormatBandwidth(gpu.nvlink_link_bandwidth),
           "gpu.nvlink_link_bandwidth");
  r.Traced("NVLink efficiency", FormatNumber(gpu.nvlink_efficiency), "gpu.nvlink_efficiency");
  r.Traced("channel bandwidth", FormatBandwidth(gpu.channel_bandwidth), "gpu.channel_bandwidth");
  r.Traced("NVLink SHARP", YesNo(gpu.nvlink_sharp), "gpu.nvlink_sharp");
  if (gpu.tensor_power > 0) {
    r.Traced("power limit", fmt::format("{:.0f} W", gpu.power_limit), "gpu.power_limit");
    const double clock = netmodel::SustainedTensorClock(gpu);
    r.Line("sustained tensor clock",
           s.sustained_clocks
               ? fmt::format("{:.3f} of the short-benchmark clock ({:.0f} TFLOP/s BF16)", clock,
                             clock * gpu.bf16_flops / 1e12)
               : "not applied ([timing] clocks = \"boost\")",
           fmt::format("power model: idle {:.0f} W, {:.0f} W at full clock, exponent {:.2f} "
                       "(docs/kernel-timing.md)",
                       gpu.idle_power, gpu.tensor_power, gpu.clock_power_exponent));
  } else {
    r.Line("sustained tensor clock", "the short-benchmark clock",
           "no power model for this GPU (docs/kernel-timing.md)");
  }
  if (gpu.fp8_flops > 0) {
    const bool promotes = emulator::timing::PromotesFp8Sums(gpu);
    r.Line("FP8 accumulation",
           !promotes ? "FP32 in the tensor cores: no promotion"
           : s.fp8_promotion
               ? fmt::format("as called: promoted GEMMs' main loop at {:.3f} of its rate",
                             emulator::timing::kHopperFp8PromotedRate)
               : "all fast ([timing] fp8_accumulation = \"fast\")",
           promotes ? "Hopper FP8 promotion: kernels.md 1.1, H100 FP8 70.9% of its peak where "
                      "BF16 reaches 80.3% (docs/kernel-timing.md)"
                    : "docs/kernel-timing.md");
  }
  DescribeOverlap(s, r);

  const netmodel::ScaleUp& up = c.scale_up;
  r.Section("scale-up (per GPU, per direction)");
  r.Traced("kind", std::string(netmodel::ToString(up.kind)), "scale_up.kind");
  r.Traced("domain size", fmt::format("{} GPUs", up.domain_size), "scale_up.domain_size");
  r.Line("domains", std::to_string(c.scale_up_domains()), "derived: total GPUs / domain size");
  r.Traced("bandwidth (signalling)", FormatBandwidth(up.bandwidth), "scale_up.bandwidth");
  r.Traced("efficiency", FormatNumber(up.efficiency), "scale_up.efficiency");
  r.Line("bandwidth (data)", FormatBandwidth(up.data_bandwidth()),
         "derived: bandwidth x efficiency");
  r.Traced("latency", FormatDuration(up.latency), "scale_up.latency");
  r.Traced("NVLS", YesNo(up.nvls), "scale_up.nvls");

  r.Traced("NCCL release followed",
           fmt::format("{}.{}.{}", c.nccl_version / 10000, c.nccl_version / 100 % 100,
                       c.nccl_version % 100),
           "nccl_version");

  const netmodel::ScaleOut& out = c.scale_out;
  r.Section("scale-out (per direction)");
  r.Traced("topology", std::string(netmodel::ToString(out.topology)), "scale_out.topology");
  if (out.topology == ScaleOutTopology::kNone) return;
  r.Traced("NIC", fmt::format("{} ({})", out.nic.name, out.nic.key), "scale_out.nic");
  r.Traced("NICs per node", std::to_string(out.nics_per_node), "scale_out.nics_per_node");
  r.Traced("NIC rate", FormatBandwidth(out.nic.line_rate), "scale_out.nic.rate");
  r.Traced("NIC efficiency", FormatNumber(out.nic.efficiency), "scale_out.nic.efficiency");
  r.Line("NIC data rate", FormatBandwidth(c.nic_data_bandwidth()), "derived: rate x efficiency");
  r.Line("bandwidth per GPU (data)",
         fmt::format("{} ({} NICs / {} GPUs)", FormatBandwidth(c.scale_out_bandwidth_per_gpu()),
                     out.nics_per_node, c.gpus_per_node),
         "derived: NICs x data rate / gpus_per_node");
  r.Traced("switch", fmt::format("{} ({})", out.leaf_switch.name, out.leaf_switch.key),
           "scale_out.switch");
  r.Line("switch ports",
         fmt::format("{} x {}", out.leaf_switch.radix, FormatBandwidth(out.leaf_switch.port_rate)),
         "catalog " + out.leaf_switch.key);
  r.Traced("oversubscription", FormatNumber(out.oversubscription) + ":1",
           "scale_out.oversubscription");
  r.Traced("nodes per leaf", std::to_string(out.nodes_per_leaf), "scale_out.nodes_per_leaf");
  r.Traced("in-network reduction", YesNo(out.in_network_reduction),
           "scale_out.in_network_reduction");
  r.Traced("fabric", std::string(netmodel::ToString(out.fabric)), "scale_out.fabric");
  r.Traced("routing", std::string(netmodel::ToString(out.routing)), "scale_out.routing");
  r.Traced("QPs per connection", std::to_string(out.qps_per_connection),
           "scale_out.qps_per_connection");
  r.Traced("NIC latency", FormatDuration(out.nic.latency), "scale_out.nic.latency");
  r.Traced("switch latency", FormatDuration(out.leaf_switch.latency), "scale_out.switch.latency");
  r.Line("latency, same leaf", FormatDuration(c.network_latency(false)),
         "derived: 2 NICs + 1 switch");
  r.Line("latency, across leaves", FormatDuration(c.network_latency(true)),
         "derived: 2 NICs + 3 switches");
}

// What `myriad run` would start, when the scenario says ([launch]).
void DescribeLaunch(const emulator::LaunchSettings& launch, Report& r) {
  if (launch.command.empty() && launch.processes == 0 && launch.devices_per_process == 0) return;
  r.Section("launch (myriad run)");
  std::string command;
  for (const std::string& word : launch.command) command += (command.empty() ? "" : " ") + word;
  r.Line("command", command.empty() ? "(given after --)" : command);
  r.Line("processes", launch.processes ? std::to_string(launch.processes) : "GPUs / devices");
  r.Line("devices per process",
         launch.devices_per_process ? std::to_string(launch.devices_per_process) : "1");
  r.Line("environment", launch.env);
  r.Line("host clock", launch.virtual_host_clock ? "virtual" : "real");
  r.Line("host time", launch.measure_host_time
                          ? fmt::format("measured x {}", FormatNumber(launch.host_time_scale))
                          : "modelled");
}

// The network model runs use, and what the flow model would put on the links ([network]).
void DescribeNetwork(const emulator::Scenario& scenario, Report& r) {
  const netmodel::FlowOptions& flow = scenario.flow;
  r.Section("network model (docs/network.md)");
  auto origin = [&](std::string_view key) {
    const std::string_view o = scenario.Origin(key);
    return o.empty() ? std::string("default") : std::string(o);
  };
  r.Line("fidelity", std::string(netmodel::ToString(scenario.fidelity)),
         origin("network.fidelity"));
  const netmodel::Topology graph = netmodel::Topology::Build(scenario.cluster);
  r.Line("link graph", fmt::format("{} directed links", graph.link_count()),
         "derived: GPU, NIC and leaf-spine links of the cluster");
  for (const netmodel::LinkChange& change : flow.links)
    r.Line("link " + change.pattern,
           change.fraction == 0
               ? std::string("failed")
               : fmt::format("at {}% of its rate", FormatNumber(100 * change.fraction)),
           "network.links");
  for (const netmodel::BackgroundTraffic& bg : flow.background) {
    if (!bg.links.empty()) {
      r.Line("background", fmt::format("{}% of {}", FormatNumber(100 * bg.load), bg.links),
             "network.background");
    } else {
      r.Line("background",
             fmt::format("another job's {} on {} GPUs from GPU {}", netmodel::ToString(bg.op),
                         bg.gpus.size(), bg.gpus.front()),
             "network.background");
    }
  }
}

}  // namespace

int RunCheck(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  auto usage_error = [&](const std::string& message) {
    err << "myriad check: error: " << message << "\n" << kUsage;
    return kExitBadInput;
  };
  std::string path;
  bool json = false;
  for (const std::string& arg : args) {
    if (arg == "--help" || arg == "-h") {
      out << kUsage;
      return kExitOk;
    }
    if (arg == "--json") {
      json = true;
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-') return usage_error("unknown option '" + arg + "'");
    if (!path.empty()) return usage_error("unexpected argument '" + arg + "'");
    path = arg;
  }
  if (path.empty()) return usage_error("missing SCENARIO");

  Result<emulator::Scenario> scenario = emulator::LoadScenario(path);
  if (!scenario.ok()) {
    err << "myriad: error: " << scenario.status().message() << "\n";
    return kExitBadInput;
  }
  Report report(*scenario);
  Describe(*scenario, report);
  DescribeLaunch(scenario->launch, report);
  DescribeNetwork(*scenario, report);
  if (json)
    report.PrintJson(out);
  else
    report.Print(out);
  return kExitOk;
}

}  // namespace myriad::cli
