// `myriad collective`: predicted NCCL collective performance over a range of sizes, printed
// the way nccl-tests prints real measurements (or as JSON).
#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "myriad/emulator/scenario.h"
#include "myriad/emulator/units.h"
#include "myriad/netmodel/collective.h"
#include "myriad/netmodel/flow_model.h"

namespace myriad::cli {
namespace {

using netmodel::CollectiveOp;

constexpr const char* kUsage =
    "usage: myriad collective SCENARIO --op OP [options]\n"
    "\n"
    "Predicts an NCCL collective on the scenario's cluster for sizes from -b to -e,\n"
    "printed like nccl-tests (size, count, type, redop, root, time, algbw, busbw).\n"
    "\n"
    "  -o, --op OP          allreduce, allgather, reducescatter, broadcast, reduce,\n"
    "                       alltoall, sendrecv, gather, scatter (nccl-tests names also work)\n"
    "  -b, --minbytes SIZE  smallest size (default 8); units as nccl-tests: 8, 64K, 1M, 8G\n"
    "  -e, --maxbytes SIZE  largest size (default 8G)\n"
    "  -f, --stepfactor F   multiply the size by F each row (default 2)\n"
    "  --nodes N            communicator over the first N nodes (default: whole cluster)\n"
    "  --ranks N            communicator over the first N GPUs\n"
    "  -d, --dtype TYPE     float (default), half, bfloat16, double, int8, uint8, int32,\n"
    "                       uint32, int64, uint64, f8e4m3, f8e5m2 (aliases: fp32, fp16, bf16)\n"
    "  --redop OP           sum (default), prod, min, max, avg\n"
    "  -r, --root R         root rank of broadcast, reduce, gather, scatter (default 0)\n"
    "  --algo LIST          NCCL_ALGO syntax (ring,tree,nvls,nvlstree,collnet,pat or ^list);\n"
    "                       default: the NCCL_ALGO environment variable, else automatic\n"
    "  --proto LIST         NCCL_PROTO syntax (ll,ll128,simple or ^list); default: the\n"
    "                       NCCL_PROTO environment variable, else automatic\n"
    "  --fidelity MODEL     analytical, or flow: each size timed as flows on the link graph,\n"
    "                       with the scenario's [network] link changes and background\n"
    "                       traffic (default: the scenario's [network] fidelity)\n"
    "  --json               print a JSON array instead of the table\n";

struct DataType {
  const char* name;  // as nccl-tests prints it
  int bytes;
};

std::optional<DataType> FindDataType(const std::string& name) {
  static const std::vector<std::pair<std::string, DataType>> kTypes = {
      {"int8", {"int8", 1}},         {"uint8", {"uint8", 1}},   {"int32", {"int32", 4}},
      {"uint32", {"uint32", 4}},     {"int64", {"int64", 8}},   {"uint64", {"uint64", 8}},
      {"half", {"half", 2}},         {"fp16", {"half", 2}},     {"float", {"float", 4}},
      {"fp32", {"float", 4}},        {"double", {"double", 8}}, {"fp64", {"double", 8}},
      {"bfloat16", {"bfloat16", 2}}, {"bf16", {"bfloat16", 2}}, {"f8e4m3", {"f8e4m3", 1}},
      {"f8e5m2", {"f8e5m2", 1}},
  };
  for (const auto& [key, type] : kTypes)
    if (key == name) return type;
  return std::nullopt;
}

bool IsReduction(CollectiveOp op) {
  return op == CollectiveOp::kAllReduce || op == CollectiveOp::kReduce ||
         op == CollectiveOp::kReduceScatter;
}

bool IsRooted(CollectiveOp op) {
  return op == CollectiveOp::kBroadcast || op == CollectiveOp::kReduce ||
         op == CollectiveOp::kGather || op == CollectiveOp::kScatter;
}

// nccl-tests sizes buffers per rank for these: count is per rank, the size covers all ranks.
bool SizeCoversAllRanks(CollectiveOp op) {
  return op == CollectiveOp::kAllGather || op == CollectiveOp::kReduceScatter ||
         op == CollectiveOp::kAllToAll || op == CollectiveOp::kGather ||
         op == CollectiveOp::kScatter;
}

struct Options {
  std::string scenario;
  std::optional<CollectiveOp> op;
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = 8ull << 30;
  double step_factor = 2;
  std::optional<int> nodes;
  std::optional<int> ranks;
  DataType dtype = {"float", 4};
  std::string redop = "sum";
  int root = 0;
  std::optional<std::string> algo;
  std::optional<std::string> proto;
  std::optional<netmodel::Fidelity> fidelity;
  bool json = false;
};

struct Row {
  std::uint64_t size = 0;
  std::uint64_t count = 0;
  netmodel::CollectiveEstimate estimate;
};

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

int RunCollective(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  auto usage_error = [&](const std::string& msg) {
    err << "myriad collective: error: " << msg << "\n" << kUsage;
    return kExitBadInput;
  };
  Options opt;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    auto parse_int = [&](const std::string& flag, int minimum) -> std::optional<int> {
      auto v = value();
      if (!v) return std::nullopt;
      char* end = nullptr;
      const long n = std::strtol(v->c_str(), &end, 10);
      if (end == v->c_str() || *end != '\0' || n < minimum || n > 1'000'000) {
        err << "myriad collective: error: " << flag << ": expected an integer >= " << minimum
            << ", got '" << *v << "'\n";
        return std::nullopt;
      }
      return static_cast<int>(n);
    };
    auto parse_size = [&](const std::string& flag) -> std::optional<std::uint64_t> {
      auto v = value();
      if (!v) return std::nullopt;
      auto bytes = emulator::ParseBytes(*v);
      if (!bytes.ok() || *bytes < 1) {
        err << "myriad collective: error: " << flag << ": "
            << (bytes.ok() ? "size must be at least 1 byte" : bytes.status().message()) << "\n";
        return std::nullopt;
      }
      return static_cast<std::uint64_t>(*bytes);
    };
    if (a == "--help" || a == "-h") {
      out << kUsage;
      return kExitOk;
    } else if (a == "-o" || a == "--op") {
      auto v = value();
      if (!v) return usage_error(a + " needs a value");
      auto op = netmodel::ParseCollectiveOp(*v);
      if (!op.ok()) return usage_error(op.status().message());
      opt.op = *op;
    } else if (a == "-b" || a == "--minbytes") {
      auto v = parse_size(a);
      if (!v) return kExitBadInput;
      opt.min_bytes = *v;
    } else if (a == "-e" || a == "--maxbytes") {
      auto v = parse_size(a);
      if (!v) return kExitBadInput;
      opt.max_bytes = *v;
    } else if (a == "-f" || a == "--stepfactor") {
      auto v = parse_int(a, 2);
      if (!v) return kExitBadInput;
      opt.step_factor = *v;
    } else if (a == "--nodes") {
      opt.nodes = parse_int(a, 1);
      if (!opt.nodes) return kExitBadInput;
    } else if (a == "--ranks") {
      opt.ranks = parse_int(a, 1);
      if (!opt.ranks) return kExitBadInput;
    } else if (a == "-d" || a == "--dtype") {
      auto v = value();
      if (!v) return usage_error(a + " needs a value");
      auto type = FindDataType(*v);
      if (!type) return usage_error("unknown data type '" + *v + "'");
      opt.dtype = *type;
    } else if (a == "--redop") {
      auto v = value();
      if (!v) return usage_error(a + " needs a value");
      if (*v != "sum" && *v != "prod" && *v != "min" && *v != "max" && *v != "avg")
        return usage_error("unknown reduction '" + *v + "' (sum, prod, min, max, avg)");
      opt.redop = *v;
    } else if (a == "-r" || a == "--root") {
      auto v = parse_int(a, 0);
      if (!v) return kExitBadInput;
      opt.root = *v;
    } else if (a == "--algo") {
      opt.algo = value();
      if (!opt.algo) return usage_error(a + " needs a value");
    } else if (a == "--proto") {
      opt.proto = value();
      if (!opt.proto) return usage_error(a + " needs a value");
    } else if (a == "--fidelity") {
      auto v = value();
      if (!v) return usage_error(a + " needs a value");
      auto parsed = netmodel::ParseFidelity(*v);
      if (!parsed.ok())
        return usage_error("--fidelity must be analytical or flow, got '" + *v + "'");
      opt.fidelity = *parsed;
    } else if (a == "--json") {
      opt.json = true;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("unknown option '" + a + "'");
    } else if (opt.scenario.empty()) {
      opt.scenario = a;
    } else {
      return usage_error("unexpected argument '" + a + "'");
    }
  }
  if (opt.scenario.empty()) return usage_error("missing SCENARIO");
  if (!opt.op) return usage_error("missing --op");
  if (opt.nodes && opt.ranks) return usage_error("give --nodes or --ranks, not both");
  if (opt.min_bytes > opt.max_bytes) return usage_error("-b is larger than -e");

  auto scenario = emulator::LoadScenario(opt.scenario);
  if (!scenario.ok()) {
    err << "myriad: error: " << scenario.status().message() << "\n";
    return kExitBadInput;
  }
  const netmodel::Cluster& cluster = scenario->cluster;

  netmodel::CollectiveRequest request;
  request.op = *opt.op;
  request.ranks = cluster.total_gpus();
  if (opt.nodes) {
    if (*opt.nodes > cluster.nodes)
      return usage_error(
          fmt::format("--nodes {}: the cluster has {} nodes", *opt.nodes, cluster.nodes));
    request.ranks = *opt.nodes * cluster.gpus_per_node;
  }
  if (opt.ranks) {
    if (*opt.ranks > cluster.total_gpus())
      return usage_error(
          fmt::format("--ranks {}: the cluster has {} GPUs", *opt.ranks, cluster.total_gpus()));
    request.ranks = *opt.ranks;
  }
  if (IsRooted(request.op) && opt.root >= request.ranks)
    return usage_error(fmt::format("--root {} is not a rank of {}", opt.root, request.ranks));

  // Command-line flags win over the environment, as NCCL_* variables are only defaults here.
  std::string algo_source = "automatic";
  std::string proto_source = "automatic";
  const char* env_algo = std::getenv("NCCL_ALGO");
  const char* env_proto = std::getenv("NCCL_PROTO");
  std::optional<std::string> algo = opt.algo;
  std::optional<std::string> proto = opt.proto;
  if (algo)
    algo_source = "--algo " + *algo;
  else if (env_algo && *env_algo)
    algo = env_algo, algo_source = std::string("NCCL_ALGO=") + env_algo;
  if (proto)
    proto_source = "--proto " + *proto;
  else if (env_proto && *env_proto)
    proto = env_proto, proto_source = std::string("NCCL_PROTO=") + env_proto;
  if (algo) {
    auto set = netmodel::ParseNcclAlgo(*algo);
    if (!set.ok()) return usage_error(set.status().message());
    request.algorithms = *set;
  }
  if (proto) {
    auto set = netmodel::ParseNcclProto(*proto);
    if (!set.ok()) return usage_error(set.status().message());
    request.protocols = *set;
  }

  const netmodel::CollectiveModel model(cluster);
  // Flow fidelity: each size alone on the link graph (one after the other), with whatever
  // the scenario's [network] puts on the links.
  const netmodel::Fidelity fidelity = opt.fidelity.value_or(scenario->fidelity);
  std::unique_ptr<netmodel::FlowModel> flow;
  std::vector<int> gpus;
  if (fidelity == netmodel::Fidelity::kFlow) {
    auto created = netmodel::FlowModel::Create(cluster, scenario->flow);
    if (!created.ok()) {
      err << "myriad: error: " << opt.scenario << ": " << created.status().message() << "\n";
      return kExitBadInput;
    }
    flow = std::move(created).value();
    for (int g = 0; g < request.ranks; ++g) gpus.push_back(g);
  }
  double flow_clock_us = 0;
  const std::uint64_t type_bytes = static_cast<std::uint64_t>(opt.dtype.bytes);
  const std::uint64_t granule =
      type_bytes * (SizeCoversAllRanks(request.op) ? static_cast<std::uint64_t>(request.ranks) : 1);
  std::vector<Row> rows;
  for (double size = static_cast<double>(opt.min_bytes); size <= static_cast<double>(opt.max_bytes);
       size *= opt.step_factor) {
    // nccl-tests rounds each size down to whole elements on every rank.
    const std::uint64_t bytes = static_cast<std::uint64_t>(size) / granule * granule;
    if (bytes == 0) continue;
    request.bytes = bytes;
    auto estimate = model.Estimate(request);
    if (!estimate.ok()) {
      err << "myriad: error: " << opt.scenario << ": " << estimate.status().message() << "\n";
      return kExitBadInput;
    }
    netmodel::CollectiveEstimate e = *estimate;
    if (flow) {
      auto id = flow->Start(flow_clock_us, request, e, gpus);
      if (!id.ok()) {
        err << "myriad: error: " << opt.scenario << ": " << id.status().message() << "\n";
        return kExitBadInput;
      }
      std::vector<netmodel::FlowModel::Done> done;
      double time_us = -1;
      while (time_us < 0) {
        const double next = flow->NextEventUs();
        done.clear();
        flow->AdvanceTo(next, &done);
        for (const auto& d : done)
          if (d.id == *id) {
            time_us = d.time_us;
            flow_clock_us = d.end_us;
          }
      }
      e.time_us = time_us;
      e.algbw_gbps = static_cast<double>(bytes) / (time_us * 1e-6) / 1e9;
      e.busbw_gbps = e.algbw_gbps * netmodel::BusBandwidthFactor(request.op, request.ranks);
    }
    rows.push_back({bytes, bytes / granule, e});
  }
  if (rows.empty())
    return usage_error(
        fmt::format("no size between -b and -e holds one {} per rank", opt.dtype.name));

  const std::string redop = IsReduction(request.op) ? opt.redop : "none";
  const int root = IsRooted(request.op) ? opt.root : -1;
  if (opt.json) {
    out << "[\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      const auto& e = r.estimate;
      out << fmt::format(
          "  {{\"op\": \"{}\", \"ranks\": {}, \"size_bytes\": {}, \"count\": {}, \"type\": \"{}\", "
          "\"redop\": \"{}\", \"root\": {}, \"time_us\": {:.3f}, \"algbw_gbps\": {:.3f}, "
          "\"busbw_gbps\": {:.3f}, \"algorithm\": \"{}\", \"protocol\": \"{}\", \"channels\": {}, "
          "\"latency_us\": {:.3f}, \"transfer_us\": {:.3f}, \"pipeline_fill_us\": {:.3f}, "
          "\"bottleneck_gbps\": {:.3f}, \"model\": \"{}\", \"scenario\": \"{}\"}}{}\n",
          netmodel::ToString(request.op), request.ranks, r.size, r.count, opt.dtype.name, redop,
          root, e.time_us, e.algbw_gbps, e.busbw_gbps, netmodel::ToString(e.algorithm),
          netmodel::ToString(e.protocol), e.channels, e.latency_us, e.transfer_us,
          e.pipeline_fill_us, e.bottleneck_gbps, netmodel::ToString(fidelity),
          JsonEscape(opt.scenario), i + 1 < rows.size() ? "," : "");
    }
    out << "]\n";
    return kExitOk;
  }

  out << fmt::format("# myriad collective: {} predicted on {} ({})\n",
                     netmodel::ToString(request.op), scenario->name, opt.scenario);
  out << fmt::format(
      "# nRanks {} nNodes {} scale-up domains {} ({} {} per domain) | GPU {}\n", request.ranks,
      (request.ranks + cluster.gpus_per_node - 1) / cluster.gpus_per_node,
      model.Layout(request.ranks).domains, model.Layout(request.ranks).ranks_per_domain,
      model.Layout(request.ranks).ranks_per_domain == 1 ? "rank" : "ranks", cluster.gpu.name);
  out << fmt::format("# model: {} | algorithm: {} | protocol: {}\n",
                     flow ? fmt::format("flow ({} routing, {} QP per connection)",
                                        netmodel::ToString(cluster.scale_out.routing),
                                        cluster.scale_out.qps_per_connection)
                          : std::string("analytical"),
                     algo_source, proto_source);
  out << "#\n";
  out << fmt::format("# {:>10} {:>12} {:>8} {:>6} {:>6} {:>10} {:>7} {:>7}  {:<13} {:<6} {:>3}\n",
                     "size", "count", "type", "redop", "root", "time", "algbw", "busbw",
                     "algorithm", "proto", "ch");
  out << fmt::format("# {:>10} {:>12} {:>8} {:>6} {:>6} {:>10} {:>7} {:>7}\n", "(B)", "(elements)",
                     "", "", "", "(us)", "(GB/s)", "(GB/s)");
  double busbw_sum = 0;
  for (const Row& r : rows) {
    const auto& e = r.estimate;
    busbw_sum += e.busbw_gbps;
    out << fmt::format(
        "  {:>10} {:>12} {:>8} {:>6} {:>6} {:>10.2f} {:>7.2f} {:>7.2f}  {:<13} {:<6} {:>3}\n",
        r.size, r.count, opt.dtype.name, redop, root, e.time_us, e.algbw_gbps, e.busbw_gbps,
        netmodel::ToString(e.algorithm), netmodel::ToString(e.protocol), e.channels);
  }
  out << fmt::format("# Avg bus bandwidth    : {:.3f}\n",
                     busbw_sum / static_cast<double>(rows.size()));
  out << "#\n";
  return kExitOk;
}

}  // namespace myriad::cli
