#include "myriad/emulator/scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <system_error>

#include "myriad/emulator/units.h"
#include "myriad/netmodel/hardware.h"
#include "myriad/netmodel/power.h"
#include "scenario/toml_reader.h"

namespace myriad::emulator {
namespace {

namespace fs = std::filesystem;
using netmodel::ScaleOutTopology;
using netmodel::ScaleUpKind;

// GPU to GPU through the NVLink fabric. NCCL's NVLink hop constants were tuned on NVSwitch
// systems, of which about 0.5 us is the fabric itself.
constexpr double kNvlinkLatency = 0.5e-6;
// GPU to GPU through the host's PCIe switches: assumed twice the NVLink path.
constexpr double kPcieLatency = 1e-6;
// Data fraction of a PCIe link: NCCL counts a Gen4 x16 link as 24 GB/s of its 31.5.
constexpr double kPcieEfficiency = 24.0 / 31.5;
constexpr std::string_view kDefaultSwitch = "quantum-2";
// An 800G NIC needs 800G switch ports.
constexpr std::string_view kDefaultSwitch800G = "quantum-x800";
constexpr std::string_view kNic800G = "cx8-800g";
// A 200G HDR NIC on HDR switches, as in DGX A100 SuperPODs.
constexpr std::string_view kDefaultSwitch200G = "quantum-hdr";
constexpr std::string_view kNic200G = "cx6-200g";
// NCCL accepts at most 128 queue pairs per connection (NCCL_IB_QPS_PER_CONNECTION,
// src/transport/net_ib.cc NCCL_IB_MAX_QPS).
constexpr int kMaxQpsPerConnection = 128;

std::string Override(const SourcePos& pos) { return "override " + pos.ToString(); }

// ---------------------------------------------------------------------------------------------
// Files and their includes.

// What makes two spellings of a path the same file, for cycle detection.
std::string Identity(const std::string& path) {
  std::error_code error;
  const fs::path canonical = fs::weakly_canonical(path, error);
  return error ? fs::path(path).lexically_normal().string() : canonical.string();
}

// GPUs in a node: scale-up domains beyond NVL576 (the cluster's bound: netmodel::
// kMaxClusterGpus).
constexpr int kMaxGpusPerNode = 1024;

// Includes nest at most this deep: a chain of 10,000 files overflowed the stack; real
// scenarios nest two or three levels (docs/scenarios.md, "Bounds").
constexpr std::size_t kMaxIncludeDepth = 64;

class IncludeLoader {
 public:
  // The document at `path` with its includes merged beneath it. `included_at` is where the
  // include was written (null for the file the user named).
  Result<TomlNode> Load(const std::string& path, const SourcePos* included_at) {
    // Each file is read and merged once: 27 files each including the next twice took
    // 2^27 reads.
    const std::string identity = Identity(path);
    if (auto done = loaded_.find(identity); done != loaded_.end()) return done->second;
    Result<std::string> text = ReadFileText(path);
    if (!text.ok()) {
      if (included_at == nullptr) {
        return Status::NotFound(
            fmt::format("{}: cannot open scenario file: {}", path, text.status().message()));
      }
      return ErrorAt(
          *included_at, "include",
          fmt::format("cannot open scenario file '{}': {}", path, text.status().message()));
    }
    Result<TomlNode> parsed = ParseToml(*text, path);
    if (!parsed.ok()) return parsed.status();
    TomlNode root = std::move(parsed).value();

    // `include` is the only key read file by file; the rest is checked once merged.
    std::vector<Field<std::string>> includes;
    MYRIAD_RETURN_IF_ERROR(TableReader::Unchecked(root, "").StringList("include", &includes));

    if (!includes.empty() && chain_.size() + 1 >= kMaxIncludeDepth) {
      return includes.front().Error(fmt::format("includes nest deeper than {} files (from {})",
                                                kMaxIncludeDepth,
                                                chain_.empty() ? path : chain_.front().first));
    }
    chain_.emplace_back(path, identity);
    TomlNode merged;
    for (const Field<std::string>& include : includes) {
      const std::string target =
          (fs::path(path).parent_path() / include.value).lexically_normal().generic_string();
      const std::string id = Identity(target);
      const auto loop = std::find_if(chain_.begin(), chain_.end(),
                                     [&id](const auto& link) { return link.second == id; });
      if (loop != chain_.end()) {
        std::string cycle;
        for (auto it = loop; it != chain_.end(); ++it) cycle += it->first + " -> ";
        return include.Error(fmt::format("include cycle: {}{}", cycle, target));
      }
      Result<TomlNode> part = Load(target, &include.pos);
      if (!part.ok()) return part.status();
      TomlNode included = std::move(part).value();
      // A name and a description describe one file; an including file does not inherit them.
      std::erase_if(included.entries, [](const TomlNode::Entry& e) {
        return e.key == "name" || e.key == "description";
      });
      MergeInto(merged, std::move(included));
    }
    chain_.pop_back();
    std::erase_if(root.entries, [](const TomlNode::Entry& e) { return e.key == "include"; });
    MergeInto(merged, std::move(root));
    loaded_.emplace(identity, merged);
    return merged;
  }

 private:
  std::vector<std::pair<std::string, std::string>> chain_;  // files being read: (path, identity)
  std::map<std::string, TomlNode> loaded_;                  // by identity, includes merged
};

// ---------------------------------------------------------------------------------------------
// Value checks. Each passes an absent field.

Status AtLeast(const Field<int>& field, int min) {
  if (field.present && field.value < min) {
    return field.Error(fmt::format("must be at least {}, got {}", min, field.value));
  }
  return Status::Ok();
}

Status Positive(const Field<double>& field) {
  if (field.present && !(field.value > 0)) return field.Error("must be greater than zero");
  return Status::Ok();
}

Status NotNegative(const Field<double>& field) {
  if (field.present && field.value < 0) return field.Error("must not be negative");
  return Status::Ok();
}

// An efficiency: a share of a peak rate. Below 1% no hardware runs; 5e-324 made every
// transfer take centuries (docs/scenarios.md, "Bounds").
constexpr double kMinEfficiency = 0.01;
Status Fraction(const Field<double>& field) {
  if (field.present && !(field.value >= kMinEfficiency && field.value <= 1)) {
    return field.Error(fmt::format("must be in [{}, 1], got {}", kMinEfficiency, field.value));
  }
  return Status::Ok();
}

// A degraded link runs at least this share of its rate, a link under background load keeps at
// least this share free: nearer zero the flow model's steps take ages of virtual time (a rate of
// 5e-324 never finished).
constexpr double kMinLinkShare = 0.001;

// Where an absent table's keys would have been: an empty table at its parent's position.
TomlNode EmptyTableAt(const SourcePos& pos) {
  TomlNode node;
  node.pos = pos;
  return node;
}

// ---------------------------------------------------------------------------------------------
// Resolution into a netmodel::Cluster.

class Resolver {
 public:
  explicit Resolver(Scenario* scenario) : scenario_(*scenario), cluster_(scenario->cluster) {}

  Status Resolve(const TomlNode& document) {
    Result<TableReader> root = TableReader::Open(
        document, "",
        {"include", "name", "description", "cluster", "launch", "workload", "network", "timing"});
    if (!root.ok()) return root.status();
    Field<std::string> name, description;
    MYRIAD_RETURN_IF_ERROR(root->String("name", &name));
    MYRIAD_RETURN_IF_ERROR(root->String("description", &description));
    if (name.present && name.value.empty()) return name.Error("must not be empty");
    scenario_.name = name.present ? name.value : fs::path(scenario_.path).stem().string();
    scenario_.description = description.value;

    const TomlNode* table;
    MYRIAD_RETURN_IF_ERROR(root->Table("cluster", &table));
    if (table == nullptr) return root->Missing("cluster", "the [cluster] table");
    Result<TableReader> cluster = TableReader::Open(
        *table, "cluster",
        {"gpu", "nodes", "gpus_per_node", "gpu_override", "scale_up", "scale_out", "nccl_version"});
    if (!cluster.ok()) return cluster.status();

    MYRIAD_RETURN_IF_ERROR(ResolveSize(*cluster));
    MYRIAD_RETURN_IF_ERROR(ResolveGpu(*cluster));
    MYRIAD_RETURN_IF_ERROR(ResolveScaleUp(*cluster));
    MYRIAD_RETURN_IF_ERROR(ResolveScaleOut(*cluster));
    Field<std::string> nccl_version;
    MYRIAD_RETURN_IF_ERROR(cluster->String("nccl_version", &nccl_version));
    if (nccl_version.present) {
      Result<int> code = netmodel::ParseNcclVersion(nccl_version.value);
      if (!code.ok()) return nccl_version.Error(code.status().message());
      cluster_.nccl_version = *code;
    }
    Record("nccl_version", nccl_version.present
                               ? Override(nccl_version.pos)
                               : "default: the NCCL whose tuning the model follows");
    // The checks above place their errors at the offending value; this is the backstop for
    // combinations they do not cover.
    if (Status valid = cluster_.Validate(); !valid.ok()) {
      return ErrorAt(cluster->pos(), "cluster", valid.message());
    }
    MYRIAD_RETURN_IF_ERROR(ResolveLaunch(*root));
    MYRIAD_RETURN_IF_ERROR(ResolveNetwork(*root));
    MYRIAD_RETURN_IF_ERROR(ResolveTiming(*root));
    return ResolveWorkload(*root);
  }

 private:
  void Record(std::string key, std::string origin) {
    scenario_.provenance.emplace_back(std::move(key), std::move(origin));
  }

  // String key `key` of `r` (in table `table`) read as one of `choices` into `*out`, and
  // recorded as an override or as `fallback`.
  template <typename T>
  Status Choose(const TableReader& r, std::string_view table, std::string_view key,
                std::initializer_list<std::pair<std::string_view, T>> choices, T* out,
                const std::string& fallback) {
    Field<std::string> field;
    MYRIAD_RETURN_IF_ERROR(r.String(key, &field));
    if (field.present) MYRIAD_RETURN_IF_ERROR(ParseChoice(field, choices, out));
    Record(fmt::format("{}.{}", table, key), field.present ? Override(field.pos) : fallback);
    return Status::Ok();
  }

  // A catalog figure, replaced by `field` when it is present.
  template <typename T>
  void Apply(const Field<T>& field, T* target, std::string key, const std::string& catalog) {
    if (field.present) *target = field.value;
    Record(std::move(key), field.present ? Override(field.pos) : catalog);
  }

  // [timing]: profile databases, each path relative to the file that names it.
  Status ResolveTiming(const TableReader& root) {
    const TomlNode* table;
    MYRIAD_RETURN_IF_ERROR(root.Table("timing", &table));
    if (table == nullptr) return Status::Ok();
    Result<TableReader> reader =
        TableReader::Open(*table, "timing", {"profiles", "clocks", "overlap", "fp8_accumulation"});
    if (!reader.ok()) return reader.status();
    Field<std::string> clocks;
    MYRIAD_RETURN_IF_ERROR(reader->String("clocks", &clocks));
    if (clocks.present)
      MYRIAD_RETURN_IF_ERROR(ParseChoice<bool>(clocks, {{"sustained", true}, {"boost", false}},
                                               &scenario_.sustained_clocks));
    Field<std::string> fp8;
    MYRIAD_RETURN_IF_ERROR(reader->String("fp8_accumulation", &fp8));
    if (fp8.present)
      MYRIAD_RETURN_IF_ERROR(
          ParseChoice<bool>(fp8, {{"as-called", true}, {"fast", false}}, &scenario_.fp8_promotion));
    Field<std::string> overlap;
    MYRIAD_RETURN_IF_ERROR(reader->String("overlap", &overlap));
    if (overlap.present)
      MYRIAD_RETURN_IF_ERROR(ParseChoice<bool>(overlap, {{"shared", true}, {"off", false}},
                                               &scenario_.overlap_shared));
    std::vector<Field<std::string>> profiles;
    MYRIAD_RETURN_IF_ERROR(reader->StringList("profiles", &profiles));
    for (const Field<std::string>& p : profiles) {
      if (p.value.empty()) return p.Error("must be a file's path");
      const fs::path path(p.value);
      scenario_.profiles.push_back(
          path.is_absolute()
              ? path.string()
              : (fs::path(p.pos.file).parent_path() / path).lexically_normal().string());
    }
    return Status::Ok();
  }

  Status ResolveLaunch(const TableReader& root) {
    const TomlNode* table;
    MYRIAD_RETURN_IF_ERROR(root.Table("launch", &table));
    if (table == nullptr) return Status::Ok();
    Result<TableReader> reader =
        TableReader::Open(*table, "launch",
                          {"command", "processes", "devices_per_process", "env", "host_clock",
                           "host_time", "host_time_scale", "fold", "mesh", "check_fold"});
    if (!reader.ok()) return reader.status();
    const TableReader& r = *reader;
    LaunchSettings& launch = scenario_.launch;
    std::vector<Field<std::string>> command;
    MYRIAD_RETURN_IF_ERROR(r.StringList("command", &command));
    for (const Field<std::string>& word : command) launch.command.push_back(word.value);
    std::vector<Field<std::string>> fold;
    MYRIAD_RETURN_IF_ERROR(r.StringList("fold", &fold));
    for (const Field<std::string>& axis : fold) {
      if (axis.value != "dp" && axis.value != "tp" && axis.value != "cp")
        return axis.Error(fmt::format(
            "only the data-, tensor- and context-parallel axes (dp, tp, cp) can be folded, got "
            "'{}'",
            axis.value));
      launch.fold.push_back(axis.value);
    }
    Field<std::string> mesh;
    MYRIAD_RETURN_IF_ERROR(r.String("mesh", &mesh));
    if (mesh.present) launch.mesh = mesh.value;  // checked against the world by `myriad run`
    Field<bool> check_fold;
    MYRIAD_RETURN_IF_ERROR(r.Boolean("check_fold", &check_fold));
    if (check_fold.present) launch.check_fold = check_fold.value;
    Field<int> processes, devices;
    MYRIAD_RETURN_IF_ERROR(r.Integer("processes", &processes));
    MYRIAD_RETURN_IF_ERROR(r.Integer("devices_per_process", &devices));
    if (processes.present && processes.value < 1)
      return processes.Error(fmt::format("must be at least 1, got {}", processes.value));
    if (devices.present && devices.value < 1)
      return devices.Error(fmt::format("must be at least 1, got {}", devices.value));
    launch.processes = processes.present ? processes.value : 0;
    launch.devices_per_process = devices.present ? devices.value : 0;
    Field<std::string> env, clock;
    MYRIAD_RETURN_IF_ERROR(r.String("env", &env));
    MYRIAD_RETURN_IF_ERROR(r.String("host_clock", &clock));
    if (env.present) {
      if (env.value != "torchrun" && env.value != "mpi" && env.value != "slurm")
        return env.Error(
            fmt::format("unknown launch environment '{}' (torchrun, mpi, slurm)", env.value));
      launch.env = env.value;
    }
    if (clock.present)
      MYRIAD_RETURN_IF_ERROR(ParseChoice<bool>(clock, {{"virtual", true}, {"real", false}},
                                               &launch.virtual_host_clock));
    Field<std::string> host_time;
    Field<double> scale;
    MYRIAD_RETURN_IF_ERROR(r.String("host_time", &host_time));
    MYRIAD_RETURN_IF_ERROR(r.Number("host_time_scale", &scale));
    if (host_time.present)
      MYRIAD_RETURN_IF_ERROR(ParseChoice<bool>(host_time, {{"modelled", false}, {"measured", true}},
                                               &launch.measure_host_time));
    if (scale.present) {
      if (!(scale.value > 0))
        return scale.Error(fmt::format("must be positive, got {}", scale.value));
      launch.host_time_scale = scale.value;
    }
    return Status::Ok();
  }

  // [workload]: a model (a preset, keys replacing its values one by one, or every size
  // written out), [workload.parallel] and [workload.training]; checked against the cluster.
  Status ResolveWorkload(const TableReader& root) {
    const TomlNode* table;
    MYRIAD_RETURN_IF_ERROR(root.Table("workload", &table));
    if (table == nullptr) return Status::Ok();
    Result<TableReader> reader = TableReader::Open(
        *table, "workload", {"model",           "layers",    "hidden",
                             "heads",           "kv_heads",  "ffn",
                             "activation",      "vocab",     "seq",
                             "tied_embeddings", "dropout",   "experts",
                             "top_k",           "moe_ffn",   "moe_shared_ffn",
                             "moe_first_dense", "moe_every", "moe_capacity_factor",
                             "parallel",        "training"});
    if (!reader.ok()) return reader.status();
    const TableReader& r = *reader;
    WorkloadSpec spec;
    ModelSpec& model = spec.model;

    Field<std::string> preset;
    MYRIAD_RETURN_IF_ERROR(r.String("model", &preset));
    if (preset.present) {
      Result<ModelSpec> found = FindModelPreset(preset.value);
      if (!found.ok()) return preset.Error(found.status().message());
      model = *found;
      Record("workload.model", preset.pos.ToString());
    }
    const std::string from_preset = preset.present ? "preset " + preset.value : "";
    // Origin of a model key: written over a preset or a default, written as a required key,
    // or not written.
    auto origin = [&](const auto& field, std::string absent) {
      if (!field.present) return absent;
      return preset.present ? Override(field.pos) : field.pos.ToString();
    };

    struct Size {
      std::string_view key;
      int* target;
      std::string_view what;
    };
    const std::array<Size, 5> required = {{
        {"layers", &model.layers, "transformer layers"},
        {"hidden", &model.hidden, "hidden size"},
        {"heads", &model.heads, "attention heads"},
        {"vocab", &model.vocab, "vocabulary size"},
        {"seq", &model.seq, "sequence length"},
    }};
    for (const Size& size : required) {
      Field<int> field;
      MYRIAD_RETURN_IF_ERROR(r.Integer(size.key, &field));
      MYRIAD_RETURN_IF_ERROR(AtLeast(field, 1));
      if (field.present) {
        *size.target = field.value;
      } else if (!preset.present) {
        return r.Missing(size.key, fmt::format("{}, unless model names a preset", size.what));
      }
      Record(r.KeyPath(size.key), origin(field, from_preset));
    }

    Field<int> kv_heads, ffn;
    MYRIAD_RETURN_IF_ERROR(r.Integer("kv_heads", &kv_heads));
    MYRIAD_RETURN_IF_ERROR(AtLeast(kv_heads, 1));
    MYRIAD_RETURN_IF_ERROR(r.Integer("ffn", &ffn));
    MYRIAD_RETURN_IF_ERROR(AtLeast(ffn, 1));
    if (kv_heads.present) {
      model.kv_heads = kv_heads.value;
    } else if (!preset.present) {
      model.kv_heads = model.heads;
    }
    if (ffn.present) {
      model.ffn = ffn.value;
    } else if (!preset.present) {
      model.ffn = 4 * model.hidden;
    }
    Record("workload.kv_heads", kv_heads.present ? Override(kv_heads.pos)
                                : preset.present ? from_preset
                                                 : "derived: heads (no GQA)");
    Record("workload.ffn", ffn.present      ? Override(ffn.pos)
                           : preset.present ? from_preset
                                            : "derived: 4 x hidden");

    Field<std::string> activation;
    MYRIAD_RETURN_IF_ERROR(r.String("activation", &activation));
    if (activation.present)
      MYRIAD_RETURN_IF_ERROR(
          ParseChoice(activation, {{"gelu", Activation::kGelu}, {"swiglu", Activation::kSwiglu}},
                      &model.activation));
    Record("workload.activation", activation.present ? Override(activation.pos)
                                  : preset.present   ? from_preset
                                                     : "default");
    Field<bool> tied;
    MYRIAD_RETURN_IF_ERROR(r.Boolean("tied_embeddings", &tied));
    if (tied.present) model.tied_embeddings = tied.value;
    Record("workload.tied_embeddings", tied.present     ? Override(tied.pos)
                                       : preset.present ? from_preset
                                                        : "default");
    Field<bool> dropout;
    MYRIAD_RETURN_IF_ERROR(r.Boolean("dropout", &dropout));
    if (dropout.present) {
      model.dropout = dropout.value;
    } else if (!preset.present) {
      model.dropout = model.activation == Activation::kGelu;
    }
    Record("workload.dropout", dropout.present ? Override(dropout.pos)
                               : preset.present
                                   ? from_preset
                                   : "derived: with a GeLU MLP (Megatron-LM's GPT), not with "
                                     "SwiGLU (Llama)");

    MYRIAD_RETURN_IF_ERROR(ResolveExperts(r, preset.present ? from_preset : "", &model));
    MYRIAD_RETURN_IF_ERROR(ResolveParallel(r, &spec.parallel));
    MYRIAD_RETURN_IF_ERROR(ResolveTraining(r, &spec.training));

    const int world = cluster_.total_gpus();
    if (Status valid = spec.Validate(world); !valid.ok()) {
      return ErrorAt(r.pos(), "workload", valid.message());
    }
    spec.parallel.dp = spec.data_parallel(world);
    scenario_.workload = std::move(spec);
    return Status::Ok();
  }

  // Integer keys of `r` that replace a default (`absent` says which) when present, each at
  // least its minimum.
  struct IntegerKey {
    std::string_view key;
    int* target;
    int min;
  };
  Status ApplyIntegers(const TableReader& r, const std::vector<IntegerKey>& keys,
                       const std::string& absent) {
    for (const IntegerKey& key : keys) {
      Field<int> field;
      MYRIAD_RETURN_IF_ERROR(r.Integer(key.key, &field));
      MYRIAD_RETURN_IF_ERROR(AtLeast(field, key.min));
      Apply(field, key.target, r.KeyPath(key.key), absent);
    }
    return Status::Ok();
  }

  // [network]: fidelity, routing, degraded or failed links and background traffic. The flow
  // model is built once here so that a pattern matching no link or a GPU outside the cluster
  // is an error at its entry.
  Status ResolveNetwork(const TableReader& root) {
    const TomlNode* table;
    MYRIAD_RETURN_IF_ERROR(root.Table("network", &table));
    if (table == nullptr) return Status::Ok();
    Result<TableReader> reader =
        TableReader::Open(*table, "network", {"fidelity", "routing", "links", "background"});
    if (!reader.ok()) return reader.status();
    const TableReader& r = *reader;
    Field<std::string> fidelity, routing;
    MYRIAD_RETURN_IF_ERROR(r.String("fidelity", &fidelity));
    if (fidelity.present) {
      Result<netmodel::Fidelity> parsed = netmodel::ParseFidelity(fidelity.value);
      if (!parsed.ok())
        return fidelity.Error(
            fmt::format("must be \"analytical\" or \"flow\", got '{}'", fidelity.value));
      scenario_.fidelity = *parsed;
    }
    Record("network.fidelity", fidelity.present ? Override(fidelity.pos) : "default");
    MYRIAD_RETURN_IF_ERROR(r.String("routing", &routing));
    if (routing.present)
      return routing.Error(
          "routing is a property of the fabric: set cluster.scale_out.routing (\"adaptive\" or "
          "\"ecmp\") instead");
    std::vector<const TomlNode*> links, background;
    MYRIAD_RETURN_IF_ERROR(r.TableList("links", &links));
    MYRIAD_RETURN_IF_ERROR(r.TableList("background", &background));
    // Each entry is checked alone against the cluster, so the error lands on it.
    auto check = [&](const TableReader& entry, const netmodel::FlowOptions& one) -> Status {
      auto model = netmodel::FlowModel::Create(cluster_, one);
      if (!model.ok()) return ErrorAt(entry.pos(), entry.path(), model.status().message());
      return Status::Ok();
    };
    for (size_t i = 0; i < links.size(); ++i) {
      Result<TableReader> e =
          TableReader::Open(*links[i], fmt::format("network.links[{}]", i), {"name", "rate"});
      if (!e.ok()) return e.status();
      Field<std::string> name;
      Field<double> rate;
      MYRIAD_RETURN_IF_ERROR(e->String("name", &name));
      if (!name.present) return e->Missing("name", "a link name or pattern such as \"leaf0.up*\"");
      MYRIAD_RETURN_IF_ERROR(e->Number("rate", &rate));
      if (!rate.present)
        return e->Missing("rate", "the fraction of its rate the link runs at (0: failed)");
      if (!(rate.value == 0 || (rate.value >= kMinLinkShare && rate.value <= 1)))
        return rate.Error(fmt::format("must be 0 (a failed link) or in [{}, 1], got {}",
                                      kMinLinkShare, rate.value));
      netmodel::FlowOptions one;
      one.links.push_back({name.value, rate.value});
      MYRIAD_RETURN_IF_ERROR(check(*e, one));
      scenario_.flow.links.push_back(one.links.back());
    }
    for (size_t i = 0; i < background.size(); ++i) {
      Result<TableReader> e =
          TableReader::Open(*background[i], fmt::format("network.background[{}]", i),
                            {"links", "load", "op", "first_gpu", "gpus", "stride"});
      if (!e.ok()) return e.status();
      netmodel::BackgroundTraffic bg;
      Field<std::string> pattern, op;
      Field<double> load;
      MYRIAD_RETURN_IF_ERROR(e->String("links", &pattern));
      MYRIAD_RETURN_IF_ERROR(e->Number("load", &load));
      MYRIAD_RETURN_IF_ERROR(e->String("op", &op));
      if (pattern.present == op.present)
        return ErrorAt(e->pos(), e->path(),
                       "give either links and load (a share of those links' capacity) or op "
                       "and gpus (another job's collective)");
      if (pattern.present) {
        if (!load.present) return e->Missing("load", "the fraction of the links' capacity in use");
        if (!(load.value >= 0 && load.value <= 1 - kMinLinkShare))
          return load.Error(
              fmt::format("must be in [0, {}], got {}", 1 - kMinLinkShare, load.value));
        bg.links = pattern.value;
        bg.load = load.value;
      } else {
        Result<netmodel::CollectiveOp> parsed = netmodel::ParseCollectiveOp(op.value);
        if (!parsed.ok()) return op.Error(parsed.status().message());
        bg.op = *parsed;
        Field<int> first, count, stride;
        MYRIAD_RETURN_IF_ERROR(e->Integer("first_gpu", &first));
        MYRIAD_RETURN_IF_ERROR(AtLeast(first, 0));
        MYRIAD_RETURN_IF_ERROR(e->Integer("gpus", &count));
        if (!count.present) return e->Missing("gpus", "how many GPUs the other job uses");
        MYRIAD_RETURN_IF_ERROR(AtLeast(count, 2));
        MYRIAD_RETURN_IF_ERROR(e->Integer("stride", &stride));
        MYRIAD_RETURN_IF_ERROR(AtLeast(stride, 1));
        const int step = stride.present ? stride.value : 1;
        // Checked before the list is made: `gpus = 2147483647` used to exhaust memory.
        const std::int64_t start = first.present ? first.value : 0;
        const std::int64_t total = cluster_.total_gpus();
        if (start + std::int64_t{count.value - 1} * step >= total) {
          // The first of its GPUs past the cluster's last.
          const std::int64_t outside =
              start >= total ? start : start + (total - start + step - 1) / step * step;
          return ErrorAt(e->pos(), e->path(),
                         fmt::format("background traffic on GPU {}, outside the cluster's {} GPUs",
                                     outside, total));
        }
        for (int g = 0; g < count.value; ++g)
          bg.gpus.push_back((first.present ? first.value : 0) + g * step);
      }
      netmodel::FlowOptions one;
      one.background.push_back(bg);
      MYRIAD_RETURN_IF_ERROR(check(*e, one));
      scenario_.flow.background.push_back(bg);
    }
    return Status::Ok();
  }

  // The mixture-of-experts keys of [workload] (over a preset's, when `from_preset` names it).
  Status ResolveExperts(const TableReader& r, const std::string& from_preset, ModelSpec* model) {
    const std::string absent = from_preset.empty() ? "default" : from_preset;
    MYRIAD_RETURN_IF_ERROR(ApplyIntegers(r,
                                         {{{"experts", &model->experts, 0},
                                           {"top_k", &model->top_k, 1},
                                           {"moe_ffn", &model->moe_ffn, 1},
                                           {"moe_shared_ffn", &model->moe_shared_ffn, 0},
                                           {"moe_first_dense", &model->moe_first_dense, 0},
                                           {"moe_every", &model->moe_every, 1}}},
                                         absent));
    Field<double> capacity;
    MYRIAD_RETURN_IF_ERROR(r.Number("moe_capacity_factor", &capacity));
    if (capacity.present && !(capacity.value > 0))
      return capacity.Error(fmt::format("must be positive, got {}", capacity.value));
    Apply(capacity, &model->moe_capacity_factor, r.KeyPath("moe_capacity_factor"), absent);
    if (model->experts > 0) {
      // An expert defaults to the dense MLP's size and top-2 routing (Mixtral, GShard).
      if (model->moe_ffn == 0) model->moe_ffn = model->ffn;
      if (model->top_k == 0) model->top_k = std::min(2, model->experts);
    }
    return Status::Ok();
  }

  Status ResolveParallel(const TableReader& workload, ParallelSpec* parallel) {
    const TomlNode* table;
    MYRIAD_RETURN_IF_ERROR(workload.Table("parallel", &table));
    const TomlNode empty = EmptyTableAt(workload.pos());
    Result<TableReader> reader = TableReader::Open(
        table ? *table : empty, "workload.parallel",
        {"tp", "pp", "dp", "cp", "ep", "virtual_stages", "first_stage_layers", "last_stage_layers",
         "sequence_parallel", "distributed_optimizer", "shard_gradients", "fsdp", "order",
         "tp_comm_overlap", "fsdp_layout", "fsdp_reshard_after_forward", "tp_comm_overlap_by"});
    if (!reader.ok()) return reader.status();
    const TableReader& r = *reader;
    Field<int> tp, pp, dp;
    Field<bool> sequence_parallel, distributed_optimizer;
    MYRIAD_RETURN_IF_ERROR(r.Integer("tp", &tp));
    MYRIAD_RETURN_IF_ERROR(AtLeast(tp, 1));
    MYRIAD_RETURN_IF_ERROR(r.Integer("pp", &pp));
    MYRIAD_RETURN_IF_ERROR(AtLeast(pp, 1));
    MYRIAD_RETURN_IF_ERROR(r.Integer("dp", &dp));
    MYRIAD_RETURN_IF_ERROR(AtLeast(dp, 1));
    MYRIAD_RETURN_IF_ERROR(r.Boolean("sequence_parallel", &sequence_parallel));
    MYRIAD_RETURN_IF_ERROR(r.Boolean("distributed_optimizer", &distributed_optimizer));
    Field<bool> tp_comm_overlap;
    MYRIAD_RETURN_IF_ERROR(r.Boolean("tp_comm_overlap", &tp_comm_overlap));
    Apply(tp_comm_overlap, &parallel->tp_comm_overlap, "workload.parallel.tp_comm_overlap",
          "default");
    Field<std::string> order;
    MYRIAD_RETURN_IF_ERROR(r.String("order", &order));
    if (order.present) {
      Result<AxisOrder> axes = ParseRankOrder(order.value);
      if (!axes.ok()) return order.Error(axes.status().message());
      parallel->order = *axes;
    }
    Record("workload.parallel.order", order.present ? Override(order.pos) : "default");
    Apply(tp, &parallel->tp, "workload.parallel.tp", "default");
    Apply(pp, &parallel->pp, "workload.parallel.pp", "default");
    Apply(dp, &parallel->dp, "workload.parallel.dp", "derived: GPUs / (tp x cp x pp)");
    MYRIAD_RETURN_IF_ERROR(ApplyIntegers(r,
                                         {{{"cp", &parallel->cp, 1},
                                           {"ep", &parallel->ep, 1},
                                           {"virtual_stages", &parallel->virtual_stages, 1},
                                           {"first_stage_layers", &parallel->first_stage_layers, 1},
                                           {"last_stage_layers", &parallel->last_stage_layers, 1}}},
                                         "default"));
    Field<bool> fsdp;
    MYRIAD_RETURN_IF_ERROR(r.Boolean("fsdp", &fsdp));
    Apply(fsdp, &parallel->fsdp, "workload.parallel.fsdp", "default");
    MYRIAD_RETURN_IF_ERROR(Choose<bool>(
        r, "workload.parallel", "fsdp_layout", {{"flat", false}, {"per-parameter", true}},
        &parallel->fsdp_per_parameter, "default: flat (FSDP1, Megatron-FSDP)"));
    MYRIAD_RETURN_IF_ERROR(Choose<bool>(r, "workload.parallel", "tp_comm_overlap_by",
                                        {{"transformer-engine", false}, {"pytorch", true}},
                                        &parallel->tp_comm_overlap_pytorch,
                                        "default: transformer-engine (userbuffers)"));
    Field<bool> reshard;
    MYRIAD_RETURN_IF_ERROR(r.Boolean("fsdp_reshard_after_forward", &reshard));
    Apply(reshard, &parallel->fsdp_reshard_after_forward,
          "workload.parallel.fsdp_reshard_after_forward", "default");
    Apply(sequence_parallel, &parallel->sequence_parallel, "workload.parallel.sequence_parallel",
          "default");
    Apply(distributed_optimizer, &parallel->distributed_optimizer,
          "workload.parallel.distributed_optimizer", "default");
    Field<bool> shard_gradients;
    MYRIAD_RETURN_IF_ERROR(r.Boolean("shard_gradients", &shard_gradients));
    Apply(shard_gradients, &parallel->shard_gradients, "workload.parallel.shard_gradients",
          "default");
    return Status::Ok();
  }

  Status ResolveTraining(const TableReader& workload, TrainingSpec* training) {
    const TomlNode* table;
    MYRIAD_RETURN_IF_ERROR(workload.Table("training", &table));
    const TomlNode empty = EmptyTableAt(workload.pos());
    Result<TableReader> reader = TableReader::Open(
        table ? *table : empty, "workload.training",
        {"micro_batch", "global_batch", "precision", "recompute", "overlap_grad_reduce",
         "overlap_param_gather", "iterations", "attention", "grad_reduce_dtype", "attention_flops",
         "overlap_p2p_comm", "kernels", "fp8_param_gather", "fp8_scaling"});
    if (!reader.ok()) return reader.status();
    const TableReader& r = *reader;
    Field<int> micro_batch, global_batch, iterations;
    MYRIAD_RETURN_IF_ERROR(r.Integer("micro_batch", &micro_batch));
    MYRIAD_RETURN_IF_ERROR(AtLeast(micro_batch, 1));
    MYRIAD_RETURN_IF_ERROR(r.Integer("global_batch", &global_batch));
    if (!global_batch.present) return r.Missing("global_batch", "sequences per iteration");
    MYRIAD_RETURN_IF_ERROR(AtLeast(global_batch, 1));
    MYRIAD_RETURN_IF_ERROR(r.Integer("iterations", &iterations));
    MYRIAD_RETURN_IF_ERROR(AtLeast(iterations, 1));

    Field<std::string> precision, recompute;
    MYRIAD_RETURN_IF_ERROR(r.String("precision", &precision));
    if (precision.present) {
      MYRIAD_RETURN_IF_ERROR(
          ParseChoice(precision, {{"bf16", DataType::kBfloat16}, {"fp8", DataType::kFloat8e4m3}},
                      &training->precision));
      if (training->precision == DataType::kFloat8e4m3 && !(cluster_.gpu.fp8_flops > 0))
        return precision.Error(
            fmt::format("\"fp8\", but GPU '{}' has no FP8 tensor cores", cluster_.gpu.key));
    }
    MYRIAD_RETURN_IF_ERROR(r.String("recompute", &recompute));
    if (recompute.present)
      MYRIAD_RETURN_IF_ERROR(ParseChoice(recompute,
                                         {{"none", Recompute::kNone},
                                          {"selective", Recompute::kSelective},
                                          {"full", Recompute::kFull},
                                          {"selective_op", Recompute::kSelectiveOp}},
                                         &training->recompute));
    MYRIAD_RETURN_IF_ERROR(
        Choose<LayerKernels>(r, "workload.training", "kernels",
                             {{"fused", LayerKernels::kFused}, {"eager", LayerKernels::kEager}},
                             &training->kernels, "default: Megatron's fused kernels"));
    MYRIAD_RETURN_IF_ERROR(
        Choose<Fp8Scaling>(r, "workload.training", "fp8_scaling",
                           {{"delayed", Fp8Scaling::kDelayed}, {"current", Fp8Scaling::kCurrent}},
                           &training->fp8_scaling, "default: Transformer Engine's"));
    Field<std::string> attention;
    MYRIAD_RETURN_IF_ERROR(r.String("attention", &attention));
    if (attention.present) {
      // "flash": the GPU's usual fused kernel; fa2, fa3, cudnn name one.
      using AttentionChoice = std::pair<bool, AttentionKernel>;
      AttentionChoice choice{true, AttentionKernel::kDefault};
      const Status parsed =
          ParseChoice<AttentionChoice>(attention,
                                       {{"flash", {true, AttentionKernel::kDefault}},
                                        {"fa2", {true, AttentionKernel::kFlash2}},
                                        {"fa3", {true, AttentionKernel::kFlash3}},
                                        {"cudnn", {true, AttentionKernel::kCudnn}},
                                        {"unfused", {false, AttentionKernel::kDefault}}},
                                       &choice);
      MYRIAD_RETURN_IF_ERROR(parsed);
      training->flash_attention = choice.first;
      training->attention_kernel = choice.second;
    }
    MYRIAD_RETURN_IF_ERROR(
        Choose<DataType>(r, "workload.training", "grad_reduce_dtype",
                         {{"fp32", DataType::kFloat32}, {"bf16", DataType::kBfloat16}},
                         &training->grad_reduce_dtype, "default: Megatron-LM and NeMo"));
    MYRIAD_RETURN_IF_ERROR(Choose<bool>(r, "workload.training", "attention_flops",
                                        {{"full", false}, {"causal", true}},
                                        &training->causal_attention_flops, "default: Megatron's"));
    Field<bool> overlap;
    MYRIAD_RETURN_IF_ERROR(r.Boolean("overlap_grad_reduce", &overlap));

    Apply(micro_batch, &training->micro_batch, "workload.training.micro_batch", "default");
    training->global_batch = global_batch.value;
    Record("workload.training.global_batch", global_batch.pos.ToString());
    Record("workload.training.precision", precision.present ? Override(precision.pos) : "default");
    Record("workload.training.recompute", recompute.present ? Override(recompute.pos) : "default");
    Record("workload.training.attention", attention.present ? Override(attention.pos) : "default");
    Apply(overlap, &training->overlap_grad_reduce, "workload.training.overlap_grad_reduce",
          "default");
    Field<bool> overlap_p2p;
    MYRIAD_RETURN_IF_ERROR(r.Boolean("overlap_p2p_comm", &overlap_p2p));
    Apply(overlap_p2p, &training->overlap_p2p_comm, "workload.training.overlap_p2p_comm",
          "default: Megatron-LM's");
    Field<bool> overlap_gather;
    MYRIAD_RETURN_IF_ERROR(r.Boolean("overlap_param_gather", &overlap_gather));
    Apply(overlap_gather, &training->overlap_param_gather, "workload.training.overlap_param_gather",
          "default");
    Field<bool> fp8_params;
    MYRIAD_RETURN_IF_ERROR(r.Boolean("fp8_param_gather", &fp8_params));
    Apply(fp8_params, &training->fp8_param_gather, "workload.training.fp8_param_gather", "default");
    Apply(iterations, &training->iterations, "workload.training.iterations", "default");
    return Status::Ok();
  }

  Status ResolveSize(const TableReader& cluster) {
    Field<std::string> gpu;
    MYRIAD_RETURN_IF_ERROR(cluster.String("gpu", &gpu));
    if (!gpu.present) return cluster.Missing("gpu", "a GPU model such as \"h100-sxm\"");
    Result<netmodel::GpuSpec> spec = netmodel::FindGpu(gpu.value);
    if (!spec.ok()) return gpu.Error(spec.status().message());
    cluster_.gpu = *spec;
    Record("gpu", gpu.pos.ToString());

    Field<int> nodes, gpus_per_node;
    MYRIAD_RETURN_IF_ERROR(cluster.Integer("nodes", &nodes));
    if (!nodes.present) return cluster.Missing("nodes", "the number of nodes");
    MYRIAD_RETURN_IF_ERROR(AtLeast(nodes, 1));
    MYRIAD_RETURN_IF_ERROR(cluster.Integer("gpus_per_node", &gpus_per_node));
    if (!gpus_per_node.present) return cluster.Missing("gpus_per_node", "GPUs in each node");
    MYRIAD_RETURN_IF_ERROR(AtLeast(gpus_per_node, 1));
    if (gpus_per_node.value > kMaxGpusPerNode) {
      return gpus_per_node.Error(
          fmt::format("must be at most {}, got {}", kMaxGpusPerNode, gpus_per_node.value));
    }
    const std::int64_t total = std::int64_t{nodes.value} * gpus_per_node.value;
    if (total > netmodel::kMaxClusterGpus) {
      return nodes.Error(fmt::format("{} nodes of {} GPUs is {} GPUs; a cluster has at most {}",
                                     nodes.value, gpus_per_node.value, total,
                                     netmodel::kMaxClusterGpus));
    }
    cluster_.nodes = nodes.value;
    cluster_.gpus_per_node = gpus_per_node.value;
    Record("nodes", nodes.pos.ToString());
    Record("gpus_per_node", gpus_per_node.pos.ToString());
    return Status::Ok();
  }

  Status ResolveGpu(const TableReader& cluster) {
    const TomlNode* table;
    MYRIAD_RETURN_IF_ERROR(cluster.Table("gpu_override", &table));
    const TomlNode empty = EmptyTableAt(cluster.pos());
    Result<TableReader> reader = TableReader::Open(
        table ? *table : empty, "cluster.gpu_override",
        {"bf16_flops", "fp8_flops", "fp32_flops", "hbm", "hbm_bandwidth", "hbm_efficiency",
         "sm_count", "kernel_floor", "memory_latency", "nvlink_links", "nvlink_link_bandwidth",
         "nvlink_efficiency", "channel_bandwidth", "nvlink_sharp", "power_limit"});
    if (!reader.ok()) return reader.status();
    const TableReader& r = *reader;

    Field<double> bf16, fp8, fp32, hbm, hbm_bw, hbm_eff, link_bw, efficiency, channel_bw;
    Field<double> kernel_floor, memory_latency;
    Field<int> sms, links;
    Field<bool> sharp;
    MYRIAD_RETURN_IF_ERROR(r.Quantity("bf16_flops", ParseFlops, "989.4TFLOPS", &bf16));
    MYRIAD_RETURN_IF_ERROR(Positive(bf16));
    MYRIAD_RETURN_IF_ERROR(r.Quantity("fp8_flops", ParseFlops, "1978.9TFLOPS", &fp8));
    MYRIAD_RETURN_IF_ERROR(NotNegative(fp8));  // 0: no FP8 tensor cores
    MYRIAD_RETURN_IF_ERROR(r.Quantity("fp32_flops", ParseFlops, "66.9TFLOPS", &fp32));
    MYRIAD_RETURN_IF_ERROR(Positive(fp32));
    MYRIAD_RETURN_IF_ERROR(r.Quantity("hbm", ParseBytes, "80GiB", &hbm));
    MYRIAD_RETURN_IF_ERROR(Positive(hbm));
    MYRIAD_RETURN_IF_ERROR(r.Quantity("hbm_bandwidth", ParseBandwidth, "3.35TB/s", &hbm_bw));
    MYRIAD_RETURN_IF_ERROR(Positive(hbm_bw));
    MYRIAD_RETURN_IF_ERROR(r.Number("hbm_efficiency", &hbm_eff));
    MYRIAD_RETURN_IF_ERROR(Fraction(hbm_eff));
    MYRIAD_RETURN_IF_ERROR(r.Integer("sm_count", &sms));
    MYRIAD_RETURN_IF_ERROR(AtLeast(sms, 1));
    MYRIAD_RETURN_IF_ERROR(r.Quantity("kernel_floor", ParseDuration, "2us", &kernel_floor));
    MYRIAD_RETURN_IF_ERROR(NotNegative(kernel_floor));
    MYRIAD_RETURN_IF_ERROR(r.Quantity("memory_latency", ParseDuration, "0.3us", &memory_latency));
    MYRIAD_RETURN_IF_ERROR(NotNegative(memory_latency));
    MYRIAD_RETURN_IF_ERROR(r.Integer("nvlink_links", &links));
    MYRIAD_RETURN_IF_ERROR(AtLeast(links, 0));
    MYRIAD_RETURN_IF_ERROR(r.Quantity("nvlink_link_bandwidth", ParseBandwidth, "25GB/s", &link_bw));
    MYRIAD_RETURN_IF_ERROR(Positive(link_bw));
    MYRIAD_RETURN_IF_ERROR(r.Number("nvlink_efficiency", &efficiency));
    MYRIAD_RETURN_IF_ERROR(Fraction(efficiency));
    MYRIAD_RETURN_IF_ERROR(
        r.Quantity("channel_bandwidth", ParseBandwidth, "38.7GB/s", &channel_bw));
    MYRIAD_RETURN_IF_ERROR(Positive(channel_bw));
    MYRIAD_RETURN_IF_ERROR(r.Boolean("nvlink_sharp", &sharp));
    Field<double> power_limit;
    MYRIAD_RETURN_IF_ERROR(r.Quantity("power_limit", ParsePower, "500W", &power_limit));
    if (power_limit.present) {
      if (Status ok = netmodel::CheckPowerLimit(cluster_.gpu, power_limit.value); !ok.ok())
        return power_limit.Error(ok.message());
    }

    netmodel::GpuSpec& gpu = cluster_.gpu;
    const std::string catalog = "catalog " + gpu.key;
    Apply(bf16, &gpu.bf16_flops, "gpu.bf16_flops", catalog);
    Apply(fp8, &gpu.fp8_flops, "gpu.fp8_flops", catalog);
    Apply(fp32, &gpu.fp32_flops, "gpu.fp32_flops", catalog);
    Apply(hbm, &gpu.hbm_bytes, "gpu.hbm", catalog);
    Apply(hbm_bw, &gpu.hbm_bandwidth, "gpu.hbm_bandwidth", catalog);
    Apply(hbm_eff, &gpu.hbm_efficiency, "gpu.hbm_efficiency", catalog);
    Apply(sms, &gpu.sm_count, "gpu.sm_count", catalog);
    Apply(kernel_floor, &gpu.kernel_floor, "gpu.kernel_floor", catalog);
    Apply(memory_latency, &gpu.memory_latency, "gpu.memory_latency", catalog);
    Apply(links, &gpu.nvlink_links, "gpu.nvlink_links", catalog);
    Apply(link_bw, &gpu.nvlink_link_bandwidth, "gpu.nvlink_link_bandwidth", catalog);
    Apply(efficiency, &gpu.nvlink_efficiency, "gpu.nvlink_efficiency", catalog);
    Apply(channel_bw, &gpu.channel_bandwidth, "gpu.channel_bandwidth", catalog);
    Apply(sharp, &gpu.nvlink_sharp, "gpu.nvlink_sharp", catalog);
    Apply(power_limit, &gpu.power_limit, "gpu.power_limit", catalog);
    nvlink_efficiency_origin_ = std::string(scenario_.Origin("gpu.nvlink_efficiency"));
    return Status::Ok();
  }

  Status ResolveScaleUp(const TableReader& cluster) {
    const TomlNode* table;
    MYRIAD_RETURN_IF_ERROR(cluster.Table("scale_up", &table));
    const TomlNode empty = EmptyTableAt(cluster.pos());
    Result<TableReader> reader =
        TableReader::Open(table ? *table : empty, "cluster.scale_up",
                          {"kind", "domain_size", "bandwidth", "efficiency", "latency", "nvls"});
    if (!reader.ok()) return reader.status();
    const TableReader& r = *reader;
    netmodel::ScaleUp& up = cluster_.scale_up;
    const netmodel::GpuSpec& gpu = cluster_.gpu;

    Field<std::string> kind;
    MYRIAD_RETURN_IF_ERROR(r.String("kind", &kind));
    if (kind.present) {
      if (kind.value == "nvswitch") {
        up.kind = ScaleUpKind::kNvSwitch;
      } else if (kind.value == "nvl") {
        up.kind = ScaleUpKind::kNvlDomain;
      } else if (kind.value == "pcie") {
        up.kind = ScaleUpKind::kPcie;
      } else {
        return kind.Error(
            fmt::format("unknown scale-up kind '{}' (known: nvswitch, nvl, pcie)", kind.value));
      }
    }
    Record("scale_up.kind", kind.present ? Override(kind.pos) : "default");
    const bool pcie = up.kind == ScaleUpKind::kPcie;

    Field<int> domain;
    MYRIAD_RETURN_IF_ERROR(r.Integer("domain_size", &domain));
    MYRIAD_RETURN_IF_ERROR(AtLeast(domain, 1));
    if (up.kind == ScaleUpKind::kNvlDomain) {
      if (!domain.present) return r.Missing("domain_size", "GPUs per NVLink domain, e.g. 72");
      if (domain.value % cluster_.gpus_per_node != 0) {
        return domain.Error(fmt::format("must be a multiple of cluster.gpus_per_node ({}), got {}",
                                        cluster_.gpus_per_node, domain.value));
      }
      if (cluster_.total_gpus() % domain.value != 0) {
        return domain.Error(
            fmt::format("the cluster's {} GPUs are not a whole number of {}-GPU "
                        "domains",
                        cluster_.total_gpus(), domain.value));
      }
    } else if (domain.present && domain.value != cluster_.gpus_per_node) {
      return domain.Error(
          fmt::format("must equal cluster.gpus_per_node ({}) unless kind = \"nvl\", got {}",
                      cluster_.gpus_per_node, domain.value));
    }
    up.domain_size = domain.present ? domain.value : cluster_.gpus_per_node;
    Record("scale_up.domain_size",
           domain.present ? Override(domain.pos) : "derived: gpus_per_node");

    Field<double> bandwidth, efficiency, latency;
    MYRIAD_RETURN_IF_ERROR(r.Quantity("bandwidth", ParseBandwidth, "450GB/s", &bandwidth));
    MYRIAD_RETURN_IF_ERROR(Positive(bandwidth));
    if (bandwidth.present) {
      up.bandwidth = bandwidth.value;
      Record("scale_up.bandwidth", Override(bandwidth.pos));
    } else if (pcie) {
      up.bandwidth = netmodel::PcieX16Bandwidth(gpu.pcie_generation);
      if (up.bandwidth <= 0) {
        return ErrorAt(r.pos(), r.KeyPath("bandwidth"),
                       fmt::format("no default: PCIe generation {} of GPU '{}' is unknown",
                                   gpu.pcie_generation, gpu.key));
      }
      Record("scale_up.bandwidth", fmt::format("derived: PCIe Gen{} x16", gpu.pcie_generation));
    } else {
      up.bandwidth = gpu.nvlink_links * gpu.nvlink_link_bandwidth;
      if (up.bandwidth <= 0) {
        return ErrorAt(r.pos(), r.KeyPath("bandwidth"),
                       fmt::format("no default: GPU '{}' has no NVLink links; set the bandwidth "
                                   "or kind = \"pcie\"",
                                   gpu.key));
      }
      Record("scale_up.bandwidth", "derived: nvlink_links x nvlink_link_bandwidth");
    }

    MYRIAD_RETURN_IF_ERROR(r.Number("efficiency", &efficiency));
    MYRIAD_RETURN_IF_ERROR(Fraction(efficiency));
    if (efficiency.present) {
      up.efficiency = efficiency.value;
      Record("scale_up.efficiency", Override(efficiency.pos));
    } else {
      up.efficiency = pcie ? kPcieEfficiency : gpu.nvlink_efficiency;
      Record("scale_up.efficiency", pcie ? "default" : nvlink_efficiency_origin_);
    }

    MYRIAD_RETURN_IF_ERROR(r.Quantity("latency", ParseDuration, "0.5us", &latency));
    MYRIAD_RETURN_IF_ERROR(NotNegative(latency));
    up.latency = latency.present ? latency.value : pcie ? kPcieLatency : kNvlinkLatency;
    Record("scale_up.latency", latency.present ? Override(latency.pos) : "default");

    Field<bool> nvls;
    MYRIAD_RETURN_IF_ERROR(r.Boolean("nvls", &nvls));
    if (nvls.present && nvls.value) {
      if (pcie) return nvls.Error("NVLink SHARP needs an NVLink fabric, but kind = \"pcie\"");
      if (!gpu.nvlink_sharp) {
        return nvls.Error(fmt::format("GPU '{}' has no NVLink SHARP (NVLS)", gpu.key));
      }
    }
    if (nvls.present) {
      up.nvls = nvls.value;
      Record("scale_up.nvls", Override(nvls.pos));
    } else {
      up.nvls = gpu.nvlink_sharp && !pcie;
      Record("scale_up.nvls", pcie ? "derived: kind = pcie" : "derived: gpu.nvlink_sharp");
    }
    return Status::Ok();
  }

  Status ResolveScaleOut(const TableReader& cluster) {
    netmodel::ScaleOut& out = cluster_.scale_out;
    const int domains = cluster_.scale_up_domains();
    auto needs_network = [domains] {
      return fmt::format(
          "the cluster spans {} scale-up domains, which need a network between "
          "them",
          domains);
    };
    const TomlNode* table;
    MYRIAD_RETURN_IF_ERROR(cluster.Table("scale_out", &table));
    if (table == nullptr) {
      if (domains > 1) {
        return ErrorAt(cluster.pos(), "cluster.scale_out", "missing, but " + needs_network());
      }
      out.topology = ScaleOutTopology::kNone;
      Record("scale_out.topology", "default");
      return Status::Ok();
    }
    Result<TableReader> reader = TableReader::Open(
        *table, "cluster.scale_out",
        {"topology", "nic", "nics_per_node", "switch", "oversubscription", "nodes_per_leaf",
         "in_network_reduction", "nic_override", "fabric", "routing", "qps_per_connection"});
    if (!reader.ok()) return reader.status();
    const TableReader& r = *reader;

    Field<std::string> topology;
    MYRIAD_RETURN_IF_ERROR(r.String("topology", &topology));
    if (!topology.present) {
      return r.Missing("topology", "one of rail-optimized, clos, single-switch, none");
    }
    if (topology.value == "rail-optimized") {
      out.topology = ScaleOutTopology::kRailOptimized;
    } else if (topology.value == "clos") {
      out.topology = ScaleOutTopology::kClos;
    } else if (topology.value == "single-switch") {
      out.topology = ScaleOutTopology::kSingleSwitch;
    } else if (topology.value == "none") {
      out.topology = ScaleOutTopology::kNone;
      if (domains > 1) return topology.Error("\"none\", but " + needs_network());
    } else {
      return topology.Error(
          fmt::format("unknown topology '{}' (known: rail-optimized, clos, single-switch, none)",
                      topology.value));
    }
    Record("scale_out.topology", topology.pos.ToString());
    const bool none = out.topology == ScaleOutTopology::kNone;

    // NIC: catalog entry, then overrides.
    Field<std::string> nic;
    MYRIAD_RETURN_IF_ERROR(r.String("nic", &nic));
    if (!nic.present && !none) return r.Missing("nic", "a NIC model such as \"cx7-400g\"");
    if (nic.present) {
      Result<netmodel::NicSpec> spec = netmodel::FindNic(nic.value);
      if (!spec.ok()) return nic.Error(spec.status().message());
      out.nic = *spec;
    }
    const TomlNode* nic_table;
    MYRIAD_RETURN_IF_ERROR(r.Table("nic_override", &nic_table));
    const TomlNode empty = EmptyTableAt(r.pos());
    Result<TableReader> nic_reader =
        TableReader::Open(nic_table ? *nic_table : empty, "cluster.scale_out.nic_override",
                          {"rate", "efficiency", "latency"});
    if (!nic_reader.ok()) return nic_reader.status();
    Field<double> rate, nic_efficiency, nic_latency;
    MYRIAD_RETURN_IF_ERROR(nic_reader->Quantity("rate", ParseBandwidth, "400Gbps", &rate));
    MYRIAD_RETURN_IF_ERROR(Positive(rate));
    MYRIAD_RETURN_IF_ERROR(nic_reader->Number("efficiency", &nic_efficiency));
    MYRIAD_RETURN_IF_ERROR(Fraction(nic_efficiency));
    MYRIAD_RETURN_IF_ERROR(nic_reader->Quantity("latency", ParseDuration, "0.4us", &nic_latency));
    MYRIAD_RETURN_IF_ERROR(NotNegative(nic_latency));

    Field<int> nics_per_node;
    MYRIAD_RETURN_IF_ERROR(r.Integer("nics_per_node", &nics_per_node));
    MYRIAD_RETURN_IF_ERROR(AtLeast(nics_per_node, 1));
    out.nics_per_node = nics_per_node.present ? nics_per_node.value : cluster_.gpus_per_node;

    // Switch: catalog entry matched to the NIC's speed unless named.
    Field<std::string> switch_key;
    MYRIAD_RETURN_IF_ERROR(r.String("switch", &switch_key));
    const std::string_view key = switch_key.present        ? std::string_view(switch_key.value)
                                 : out.nic.key == kNic800G ? kDefaultSwitch800G
                                 : out.nic.key == kNic200G ? kDefaultSwitch200G
                                                           : kDefaultSwitch;
    Result<netmodel::SwitchSpec> leaf = netmodel::FindSwitch(key);
    if (!leaf.ok()) return switch_key.Error(leaf.status().message());
    out.leaf_switch = *leaf;

    Field<double> oversubscription;
    MYRIAD_RETURN_IF_ERROR(r.Number("oversubscription", &oversubscription));
    if (oversubscription.present && oversubscription.value < 1) {
      return oversubscription.Error(fmt::format(
          "must be at least 1.0 (downlinks : uplinks), got {}", oversubscription.value));
    }
    if (oversubscription.present && oversubscription.value != 1 &&
        out.topology == ScaleOutTopology::kSingleSwitch) {
      return oversubscription.Error(fmt::format(
          "must be 1.0 for topology \"single-switch\" (one switch has no uplinks), got {}",
          oversubscription.value));
    }
    out.oversubscription = oversubscription.present ? oversubscription.value : 1.0;

    Field<bool> reduction;
    MYRIAD_RETURN_IF_ERROR(r.Boolean("in_network_reduction", &reduction));
    if (reduction.present && reduction.value && !out.leaf_switch.in_network_reduction) {
      return reduction.Error(
          fmt::format("switch '{}' has no in-network reduction (SHARP)", out.leaf_switch.key));
    }
    out.in_network_reduction = reduction.present && reduction.value;

    Field<int> nodes_per_leaf;
    MYRIAD_RETURN_IF_ERROR(r.Integer("nodes_per_leaf", &nodes_per_leaf));
    MYRIAD_RETURN_IF_ERROR(AtLeast(nodes_per_leaf, 1));

    // The fabric follows the switch; its routing follows the fabric (InfiniBand routes
    // adaptively, RoCE hashes each queue pair onto one path).
    Field<std::string> fabric, routing;
    MYRIAD_RETURN_IF_ERROR(r.String("fabric", &fabric));
    out.fabric = out.leaf_switch.fabric;
    if (fabric.present)
      MYRIAD_RETURN_IF_ERROR(ParseChoice(fabric,
                                         {{"infiniband", netmodel::Fabric::kInfiniBand},
                                          {"ethernet", netmodel::Fabric::kEthernet},
                                          {"roce", netmodel::Fabric::kEthernet}},
                                         &out.fabric));
    MYRIAD_RETURN_IF_ERROR(r.String("routing", &routing));
    out.routing = out.fabric == netmodel::Fabric::kInfiniBand ? netmodel::Routing::kAdaptive
                                                              : netmodel::Routing::kEcmp;
    if (routing.present)
      MYRIAD_RETURN_IF_ERROR(ParseChoice(
          routing, {{"adaptive", netmodel::Routing::kAdaptive}, {"ecmp", netmodel::Routing::kEcmp}},
          &out.routing));
    Field<int> qps;
    MYRIAD_RETURN_IF_ERROR(r.Integer("qps_per_connection", &qps));
    MYRIAD_RETURN_IF_ERROR(AtLeast(qps, 1));
    if (qps.present && qps.value > kMaxQpsPerConnection)
      return qps.Error(fmt::format("must be at most {} (NCCL's limit), got {}",
                                   kMaxQpsPerConnection, qps.value));
    out.qps_per_connection = qps.present ? qps.value : netmodel::kDefaultQpsPerConnection;

    if (none) return Status::Ok();  // nothing below is used without a network

    if (rate.present) out.nic.line_rate = rate.value;
    if (nic_efficiency.present) out.nic.efficiency = nic_efficiency.value;
    if (nic_latency.present) out.nic.latency = nic_latency.value;
    MYRIAD_RETURN_IF_ERROR(ResolveNodesPerLeaf(r, topology, nics_per_node, nodes_per_leaf));

    const std::string nic_catalog = "catalog " + out.nic.key;
    Record("scale_out.nic", nic.pos.ToString());
    Record("scale_out.nic.rate", rate.present ? Override(rate.pos) : nic_catalog);
    Record("scale_out.nic.efficiency",
           nic_efficiency.present ? Override(nic_efficiency.pos) : nic_catalog);
    Record("scale_out.nic.latency", nic_latency.present ? Override(nic_latency.pos) : nic_catalog);
    Record("scale_out.nics_per_node",
           nics_per_node.present ? Override(nics_per_node.pos) : "derived: gpus_per_node");
    Record("scale_out.switch", switch_key.present ? Override(switch_key.pos) : "default");
    Record("scale_out.switch.latency", "catalog " + out.leaf_switch.key);
    Record("scale_out.oversubscription",
           oversubscription.present ? Override(oversubscription.pos) : "default");
    Record("scale_out.nodes_per_leaf",
           nodes_per_leaf.present ? Override(nodes_per_leaf.pos) : nodes_per_leaf_origin_);
    Record("scale_out.in_network_reduction",
           reduction.present ? Override(reduction.pos) : "default");
    Record("scale_out.fabric",
           fabric.present ? Override(fabric.pos) : "derived: switch " + out.leaf_switch.key);
    Record("scale_out.routing", routing.present
                                    ? Override(routing.pos)
                                    : "derived: fabric " + std::string(ToString(out.fabric)));
    Record("scale_out.qps_per_connection",
           qps.present ? Override(qps.pos) : "default: NCCL_IB_QPS_PER_CONNECTION");
    return Status::Ok();
  }

  // How many nodes share a leaf switch: explicit, or as many as the leaf's down-ports hold.
  Status ResolveNodesPerLeaf(const TableReader& r, const Field<std::string>& topology,
                             const Field<int>& nics_per_node, const Field<int>& nodes_per_leaf) {
    netmodel::ScaleOut& out = cluster_.scale_out;
    const netmodel::SwitchSpec& leaf = out.leaf_switch;
    const int nodes = cluster_.nodes;
    if (nodes_per_leaf.present && nodes_per_leaf.value > nodes) {
      return nodes_per_leaf.Error(
          fmt::format("must not exceed cluster.nodes ({}), got {}", nodes, nodes_per_leaf.value));
    }
    if (out.topology == ScaleOutTopology::kSingleSwitch) {
      const std::int64_t ports = std::int64_t{nodes} * out.nics_per_node;
      if (ports > leaf.radix) {
        return topology.Error(
            fmt::format("\"single-switch\" needs {} ports ({} nodes x {} NICs), switch '{}' has {}",
                        ports, nodes, out.nics_per_node, leaf.key, leaf.radix));
      }
      if (nodes_per_leaf.present && nodes_per_leaf.value != nodes) {
        return nodes_per_leaf.Error(
            fmt::format("must equal cluster.nodes ({}) for topology \"single-switch\", got {}",
                        nodes, nodes_per_leaf.value));
      }
      out.nodes_per_leaf = nodes;
      nodes_per_leaf_origin_ = "derived: all nodes on the one switch";
      return Status::Ok();
    }
    // A leaf splits its ports between nodes (down) and spines (up) in the ratio
    // oversubscription : 1. A rail leaf holds one NIC of each node; a Clos leaf all of them.
    const bool rail = out.topology == ScaleOutTopology::kRailOptimized;
    const int nics_per_leaf = rail ? 1 : out.nics_per_node;
    const double ratio = out.oversubscription / (1 + out.oversubscription);
    const int down_ports = static_cast<int>(std::floor(leaf.radix * ratio + 1e-9));
    if (nodes_per_leaf.present) {
      if (std::int64_t{nodes_per_leaf.value} * nics_per_leaf > down_ports) {
        return nodes_per_leaf.Error(fmt::format(
            "{} nodes x {} NIC{} per leaf need {} down-ports; switch '{}' at oversubscription "
            "{} has {}",
            nodes_per_leaf.value, nics_per_leaf, nics_per_leaf == 1 ? "" : "s",
            std::int64_t{nodes_per_leaf.value} * nics_per_leaf, leaf.key, out.oversubscription,
            down_ports));
      }
      out.nodes_per_leaf = nodes_per_leaf.value;
      return Status::Ok();
    }
    const int fit = down_ports / nics_per_leaf;
    if (fit < 1) {
      const SourcePos& pos = nics_per_node.present ? nics_per_node.pos : r.pos();
      return ErrorAt(pos, r.KeyPath("nics_per_node"),
                     fmt::format("{} NICs per node do not fit the {} down-ports of one '{}' leaf",
                                 out.nics_per_node, down_ports, leaf.key));
    }
    out.nodes_per_leaf = std::min(fit, nodes);
    nodes_per_leaf_origin_ =
        fit > nodes ? "derived: all nodes fit one leaf"
                    : fmt::format("derived: {} leaf down-ports / {} NIC{} per node", down_ports,
                                  nics_per_leaf, nics_per_leaf == 1 ? "" : "s");
    return Status::Ok();
  }

  Scenario& scenario_;
  netmodel::Cluster& cluster_;
  std::string nvlink_efficiency_origin_;
  std::string nodes_per_leaf_origin_;
};

}  // namespace

std::string_view Scenario::Origin(std::string_view key) const {
  for (const auto& [k, origin] : provenance) {
    if (k == key) return origin;
  }
  return {};
}

Result<Scenario> LoadScenario(const std::string& path) {
  IncludeLoader loader;
  Result<TomlNode> document = loader.Load(path, nullptr);
  if (!document.ok()) return document.status();
  Scenario scenario;
  scenario.path = path;
  Resolver resolver(&scenario);
  if (Status s = resolver.Resolve(*document); !s.ok()) return s;
  return scenario;
}

}  // namespace myriad::emulator
