// JSON Lines traces: parsed and checked whole, line by line, into an InMemoryWorkload
// (docs/trace-format.md). JSON Lines is the human-sized form, so holding it in memory is fine;
// large traces are binary.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "myriad/emulator/did_you_mean.h"
#include "myriad/emulator/trace.h"
#include "trace/binary_format.h"
#include "trace/trace_internal.h"

// Every check passes its error straight up; this keeps the many checks readable.
namespace myriad::emulator::trace_internal {
namespace {

// ordered_json keeps fields in the order written, so the first bad field is the one reported.
using Json = nlohmann::ordered_json;
using netmodel::CollectiveOp;

constexpr std::uint32_t kAllKinds = (1u << kNumOpKinds) - 1;
constexpr std::uint32_t kCommKinds =
    Bit(OpKind::kCollective) | Bit(OpKind::kSend) | Bit(OpKind::kRecv);
constexpr std::uint32_t kBytesKinds = Bit(OpKind::kKernel) | Bit(OpKind::kMemcpy) |
                                      Bit(OpKind::kMemset) | Bit(OpKind::kMalloc) |
                                      Bit(OpKind::kFree);

// Which fields each op kind accepts. Anything else on an op line is an error, so a misspelt
// or misplaced field never silently falls back to a default.
struct FieldRule {
  std::string_view name;
  std::uint32_t kinds;
};
constexpr std::array<FieldRule, 27> kFieldRules = {{
    {"rank", kAllKinds},
    {"op", kAllKinds},
    {"stream", kStreamKinds},
    {"name", Bit(OpKind::kKernel)},
    {"duration_us", kDurationKinds},
    {"grid", Bit(OpKind::kKernel)},
    {"block", Bit(OpKind::kKernel)},
    {"shared_mem", Bit(OpKind::kKernel)},
    {"gemm", Bit(OpKind::kKernel)},
    {"attention", Bit(OpKind::kKernel)},
    {"counts", Bit(OpKind::kKernel)},
    {"bytes", kBytesKinds},
    {"bytes_guessed", Bit(OpKind::kKernel)},
    {"kind", Bit(OpKind::kMemcpy)},
    {"async", Bit(OpKind::kMemcpy) | Bit(OpKind::kMemset)},
    {"event", kEventKinds},
    {"non_blocking", Bit(OpKind::kStreamCreate)},
    {"priority", Bit(OpKind::kStreamCreate)},
    {"comm", kCommKinds},
    {"coll", Bit(OpKind::kCollective)},
    {"count", kCommKinds},
    {"dtype", kCommKinds},
    {"redop", Bit(OpKind::kCollective)},
    {"root", Bit(OpKind::kCollective)},
    {"peer", Bit(OpKind::kSend) | Bit(OpKind::kRecv)},
    {"label", Bit(OpKind::kMarker)},
    // Not an op field, listed so that "rank" on a communicator line can suggest it.
    {"ranks", 0},
}};

constexpr std::string_view kHeaderHint = R"({"myriad_trace": 2, "ranks": N})";

// Durations above this (about 104 days) would overflow SimTime's picoseconds.
constexpr double kMaxMicros = 9e12;
// Integral floats ("bytes": 1e9) are accepted up to where doubles still count exactly.
constexpr double kMaxExactDouble = 9007199254740992.0;  // 2^53

std::string UnknownField(std::string_view key, const std::vector<std::string_view>& known) {
  const std::string_view best = ClosestMatch(key, known);
  if (best.empty()) return fmt::format("unknown field '{}'", key);
  return fmt::format("unknown field '{}' (did you mean '{}'?)", key, best);
}

std::string KindList(std::uint32_t kinds) {
  std::string list;
  for (int i = 0; i < kNumOpKinds; ++i) {
    if ((kinds & (1u << i)) == 0) continue;
    if (!list.empty()) list += ", ";
    list += ToString(static_cast<OpKind>(i));
  }
  return list;
}

std::string_view TypeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::null:
      return "null";
    default:
      return "a number";
  }
}

// An integer value: a JSON integer, or a float with an integral value (people write 1e9).
bool ToInt(const Json& v, std::int64_t min, std::int64_t max, std::int64_t* out) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (max < 0 || u > static_cast<std::uint64_t>(max)) return false;
    *out = static_cast<std::int64_t>(u);
  } else if (v.is_number_integer()) {
    *out = v.get<std::int64_t>();
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || std::trunc(d) != d || std::fabs(d) > kMaxExactDouble) return false;
    *out = static_cast<std::int64_t>(d);
  } else {
    return false;
  }
  return *out >= min && *out <= max;
}

bool ToUnsigned(const Json& v, std::uint64_t max, std::uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<std::uint64_t>();
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || std::trunc(d) != d || d < 0 || d > kMaxExactDouble) return false;
    *out = static_cast<std::uint64_t>(d);
  } else {
    return false;  // includes negative integers
  }
  return *out <= max;
}

std::string IntegerRange(std::int64_t min, std::int64_t max) {
  if (max == std::numeric_limits<std::int32_t>::max() ||
      max == std::numeric_limits<std::int64_t>::max()) {
    if (min == 0) return "a non-negative integer";
    if (min == 1) return "a positive integer";
    if (min == std::numeric_limits<std::int32_t>::min()) return "a 32-bit integer";
    return fmt::format("an integer >= {}", min);
  }
  return fmt::format("an integer from {} to {}", min, max);
}

// The fields of one line, read with checks; errors carry "FILE:LINE: " and the op's prefix.
class Fields {
 public:
  Fields(const Json& object, std::string where, std::string prefix)
      : object_(object), where_(std::move(where)), prefix_(std::move(prefix)) {}

  Status Error(std::string_view message) const {
    return Status::InvalidArgument(fmt::format("{}{}{}", where_, prefix_, message));
  }
  Status Missing(std::string_view key) const {
    return Error(fmt::format("missing field '{}'", key));
  }
  const Json* Find(std::string_view key) const {
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }
  const std::string& where() const { return where_; }

  // Each getter leaves *out alone when the field is absent and not required.
  template <typename T>
  Status Int(std::string_view key, T* out, std::int64_t min, std::int64_t max,
             bool required) const {
    const Json* v = Find(key);
    if (v == nullptr) return required ? Missing(key) : Status::Ok();
    std::int64_t value = 0;
    if (!ToInt(*v, min, max, &value)) {
      return Error(fmt::format("field '{}' must be {}", key, IntegerRange(min, max)));
    }
    *out = static_cast<T>(value);
    return Status::Ok();
  }
  template <typename T>
  Status Unsigned(std::string_view key, T* out, bool required) const {
    const Json* v = Find(key);
    if (v == nullptr) return required ? Missing(key) : Status::Ok();
    std::uint64_t value = 0;
    if (!ToUnsigned(*v, std::numeric_limits<T>::max(), &value)) {
      return Error(fmt::format("field '{}' must be a non-negative integer{}", key,
                               sizeof(T) < 8 ? " below 2^32" : ""));
    }
    *out = static_cast<T>(value);
    return Status::Ok();
  }
  Status String(std::string_view key, std::string* out, bool required) const {
    const Json* v = Find(key);
    if (v == nullptr) return required ? Missing(key) : Status::Ok();
    if (!v->is_string() || v->get_ref<const std::string&>().empty()) {
      return Error(fmt::format("field '{}' must be a non-empty string", key));
    }
    *out = v->get<std::string>();
    return Status::Ok();
  }
  Status Bool(std::string_view key, bool* out) const {
    const Json* v = Find(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is_boolean()) return Error(fmt::format("field '{}' must be true or false", key));
    *out = v->get<bool>();
    return Status::Ok();
  }
  Status Duration(std::string_view key, SimTime* out, bool required) const {
    const Json* v = Find(key);
    if (v == nullptr) return required ? Missing(key) : Status::Ok();
    const double us = v->is_number() ? v->get<double>() : -1;
    if (!v->is_number() || !(us >= 0 && us <= kMaxMicros)) {
      return Error(fmt::format("field '{}' must be a non-negative number of microseconds", key));
    }
    *out = FromMicros(us);
    return Status::Ok();
  }
  // grid / block: an int (x) or [x], [x, y], [x, y, z]; missing dimensions are 1.
  Status Dim(std::string_view key, Dim3* out) const {
    const Json* v = Find(key);
    if (v == nullptr) return Status::Ok();
    const auto bad = [&] {
      return Error(fmt::format(
          "field '{}' must be a positive integer or an array [x, y, z] of positive integers", key));
    };
    constexpr std::int64_t kMax = std::numeric_limits<std::uint32_t>::max();
    std::array<std::int64_t, 3> xyz = {1, 1, 1};
    if (v->is_array()) {
      if (v->empty() || v->size() > 3) return bad();
      for (std::size_t i = 0; i < v->size(); ++i) {
        if (!ToInt((*v)[i], 1, kMax, &xyz[i])) return bad();
      }
    } else if (!ToInt(*v, 1, kMax, &xyz[0])) {
      return bad();
    }
    *out = Dim3{static_cast<std::uint32_t>(xyz[0]), static_cast<std::uint32_t>(xyz[1]),
                static_cast<std::uint32_t>(xyz[2])};
    return Status::Ok();
  }
  // Rejects fields outside `known` (used where no per-kind rule table applies).
  Status OnlyFields(const std::vector<std::string_view>& known) const {
    for (const auto& item : object_.items()) {
      if (std::find(known.begin(), known.end(), item.key()) == known.end()) {
        return Error(UnknownField(item.key(), known));
      }
    }
    return Status::Ok();
  }

 private:
  const Json& object_;
  std::string where_;
  std::string prefix_;
};

class JsonlParser {
 public:
  explicit JsonlParser(std::string path) : path_(std::move(path)) {}

  Result<std::unique_ptr<Workload>> Parse(std::string_view text) {
    std::size_t start = 0;
    // A UTF-8 byte order mark, as some editors write, is not part of the first line.
    if (text.substr(0, 3) == "\xEF\xBB\xBF") start = 3;
    while (start < text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      std::string_view line = text.substr(start, end - start);
      start = end + 1;
      ++line_;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      const std::size_t first = line.find_first_not_of(" \t");
      if (first == std::string_view::npos || line[first] == '#') continue;
      TRACE_RETURN_IF_ERROR(ParseLine(line));
    }
    if (workload_ == nullptr) {
      return Status::InvalidArgument(
          fmt::format("{}: empty trace: expected the header line {}", path_, kHeaderHint));
    }
    return std::unique_ptr<Workload>(std::move(workload_));
  }

 private:
  struct Comm {
    NameId name = 0;
    int line = 0;
    std::size_t size = 0;
    std::unordered_map<int, int> comm_rank;  // global rank -> communicator rank
  };

  std::string Where() const { return fmt::format("{}:{}: ", path_, line_); }
  Status Error(std::string_view message) const {
    return Status::InvalidArgument(Where() + std::string(message));
  }

  Status ParseLine(std::string_view line) {
    Json object;
    // nlohmann keeps the last of repeated keys; a trace saying two things must be rejected, so
    // keys are collected per object as the parser reports them.
    std::vector<std::vector<std::string>> keys;
    std::string duplicate;
    const Json::parser_callback_t note_keys = [&](int, Json::parse_event_t event, Json& parsed) {
      if (event == Json::parse_event_t::object_start) {
        keys.emplace_back();
      } else if (event == Json::parse_event_t::object_end) {
        keys.pop_back();
      } else if (event == Json::parse_event_t::key && !keys.empty()) {
        const auto& key = parsed.get_ref<const std::string&>();
        auto& seen = keys.back();
        if (duplicate.empty() && std::find(seen.begin(), seen.end(), key) != seen.end()) {
          duplicate = key;
        }
        seen.push_back(key);
      }
      return true;
    };
    try {
      object = Json::parse(line.begin(), line.end(), note_keys);
    } catch (const Json::exception& e) {
      return Error(JsonError(e.what()));
    }
    if (!object.is_object()) {
      return Error(fmt::format("expected a JSON object, found {}", TypeName(object)));
    }
    if (!duplicate.empty()) return Error(fmt::format("duplicate field '{}'", duplicate));

    if (object.contains("myriad_trace")) {
      if (workload_ != nullptr) {
        return Error(fmt::format("a second header line (the header is line {})", header_line_));
      }
      return ParseHeader(object);
    }
    if (workload_ == nullptr) {
      return Error(fmt::format("missing header: the first line must be {}", kHeaderHint));
    }
    auto op_field = object.find("op");
    if (op_field == object.end()) return Error("missing field 'op'");
    if (!op_field->is_string()) return Error("field 'op' must be a string");
    const auto& op_name = op_field->get_ref<const std::string&>();
    if (op_name == "comm") return ParseComm(object);
    for (int i = 0; i < kNumOpKinds; ++i) {
      const auto kind = static_cast<OpKind>(i);
      if (ToString(kind) == op_name) return ParseOp(object, kind);
    }
    return Error(fmt::format("unknown op '{}' (known: comm, {})", op_name, KindList(kAllKinds)));
  }

  // "[json.exception.parse_error.101] parse error at line 1, column 9: syntax error ..." ->
  // "invalid JSON at column 9: syntax error ..." (the line is ours, not the parser's).
  static std::string JsonError(std::string_view what) {
    const std::size_t column = what.find("column ");
    if (column != std::string_view::npos) {
      return fmt::format("invalid JSON at {}", what.substr(column));
    }
    const std::size_t bracket = what.find("] ");
    return fmt::format("invalid JSON: {}",
                       bracket == std::string_view::npos ? what : what.substr(bracket + 2));
  }

  Status ParseHeader(const Json& object) {
    const Fields f(object, Where(), "header: ");
    TRACE_RETURN_IF_ERROR(f.OnlyFields({"myriad_trace", "ranks"}));
    std::int64_t version = 0;
    if (!ToInt(object["myriad_trace"], 1, std::numeric_limits<std::int64_t>::max(), &version)) {
      return f.Error("field 'myriad_trace' must be the format version, a positive integer");
    }
    if (version < kOldestJsonlTraceVersion || version > kJsonlTraceVersion) {
      return Error(
          fmt::format("unsupported trace format version {} (this Myriad reads versions {} to {})",
                      version, kOldestJsonlTraceVersion, kJsonlTraceVersion));
    }
    version_ = static_cast<int>(version);
    int ranks = 0;
    TRACE_RETURN_IF_ERROR(f.Int("ranks", &ranks, 1, binary_trace::kMaxWorldSize, true));
    header_line_ = line_;
    workload_ = std::make_unique<InMemoryWorkload>(ranks, "trace " + path_);
    return Status::Ok();
  }

  Status ParseComm(const Json& object) {
    const Fields f(object, Where(), "comm: ");
    TRACE_RETURN_IF_ERROR(f.OnlyFields({"op", "comm", "ranks"}));
    std::string name;
    TRACE_RETURN_IF_ERROR(f.String("comm", &name, true));
    if (auto it = comms_.find(name); it != comms_.end()) {
      return Error(
          fmt::format("communicator '{}' is already declared at line {}", name, it->second.line));
    }
    const Json* ranks = f.Find("ranks");
    if (ranks == nullptr) return f.Missing("ranks");
    if (!ranks->is_array() || ranks->empty()) {
      return f.Error("field 'ranks' must be a non-empty array of ranks");
    }
    const int world = workload_->world_size();
    Comm comm;
    comm.line = line_;
    CommunicatorSpec spec;
    for (const Json& r : *ranks) {
      std::int64_t rank = 0;
      if (!ToInt(r, std::numeric_limits<std::int32_t>::min(),
                 std::numeric_limits<std::int32_t>::max(), &rank)) {
        return f.Error("field 'ranks' must be a non-empty array of ranks (integers)");
      }
      if (rank < 0 || rank >= world) {
        return Error(fmt::format("communicator '{}': rank {} is outside the trace's {} ranks", name,
                                 rank, world));
      }
      const auto [it, inserted] =
          comm.comm_rank.emplace(static_cast<int>(rank), static_cast<int>(spec.ranks.size()));
      if (!inserted) {
        return Error(fmt::format("communicator '{}': rank {} is listed twice", name, rank));
      }
      spec.ranks.push_back(static_cast<int>(rank));
    }
    spec.name = workload_->names().Intern(name);
    comm.name = spec.name;
    comm.size = spec.ranks.size();
    workload_->AddCommunicator(std::move(spec));
    comms_.emplace(std::move(name), std::move(comm));
    return Status::Ok();
  }

  Status CheckOpFields(const Json& object, OpKind kind, const Fields& f) const {
    for (const auto& item : object.items()) {
      const std::string& key = item.key();
      const auto rule = std::find_if(kFieldRules.begin(), kFieldRules.end(),
                                     [&](const FieldRule& r) { return r.name == key; });
      if (rule == kFieldRules.end() || rule->kinds == 0) {
        std::vector<std::string_view> known;
        for (const FieldRule& r : kFieldRules) {
          if ((r.kinds & Bit(kind)) != 0) known.push_back(r.name);
        }
        return f.Error(UnknownField(key, known));
      }
      if ((rule->kinds & Bit(kind)) == 0) {
        return f.Error(fmt::format("field '{}' does not apply to {} ops (only to {})", key,
                                   ToString(kind), KindList(rule->kinds)));
      }
    }
    return Status::Ok();
  }

  // The op's communicator, which must be declared already and contain `rank`.
  Status ReadComm(const Fields& f, int rank, Op& op, const Comm** comm) const {
    std::string name;
    TRACE_RETURN_IF_ERROR(f.String("comm", &name, true));
    auto it = comms_.find(name);
    if (it == comms_.end()) {
      return Error(fmt::format(
          R"(unknown communicator '{}' (declare it with {{"op":"comm",...}} first))", name));
    }
    if (!it->second.comm_rank.contains(rank)) {
      return f.Error(fmt::format("rank {} is not a member of communicator '{}'", rank, name));
    }
    op.comm = it->second.name;
    *comm = &it->second;
    return Status::Ok();
  }

  // `gemm`: a GEMM's dtype, which may be TF32 (its math; no data is stored or sent in it).
  Status ReadDataType(const Fields& f, DataType* out, std::string_view key = "dtype",
                      bool gemm = false) const {
    std::string name;
    TRACE_RETURN_IF_ERROR(f.String(key, &name, true));
    Result<DataType> type = ParseDataType(name);
    if (!type.ok()) return f.Error(type.status().message());
    if (*type == DataType::kTfloat32 && !gemm)
      return f.Error("data type 'tf32' is a GEMM's math (a kernel's gemm.dtype) only");
    *out = *type;
    return Status::Ok();
  }

  Status ReadCommRank(const Fields& f, std::string_view key, const Comm& comm,
                      std::int32_t* out) const {
    TRACE_RETURN_IF_ERROR(f.Int(key, out, 0, std::numeric_limits<std::int32_t>::max(), true));
    if (static_cast<std::size_t>(*out) >= comm.size) {
      return f.Error(fmt::format("{} {} is outside communicator '{}' ({} ranks)", key, *out,
                                 workload_->names().Name(comm.name), comm.size));
    }
    return Status::Ok();
  }

  Status ReadGemm(const Fields& kernel, GemmShape* gemm) const {
    const Json* v = kernel.Find("gemm");
    if (v == nullptr) return Status::Ok();
    if (!v->is_object())
      return kernel.Error("field 'gemm' must be an object {\"m\":..,\"n\":..,\"k\":..}");
    const Fields f(*v, kernel.where(), "kernel: gemm: ");
    TRACE_RETURN_IF_ERROR(f.OnlyFields({"m", "n", "k", "batch", "dtype", "fast_accum"}));
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    TRACE_RETURN_IF_ERROR(f.Int("m", &gemm->m, 1, kMax, true));
    TRACE_RETURN_IF_ERROR(f.Int("n", &gemm->n, 1, kMax, true));
    TRACE_RETURN_IF_ERROR(f.Int("k", &gemm->k, 1, kMax, true));
    TRACE_RETURN_IF_ERROR(f.Int("batch", &gemm->batch, 1, kMax, false));
    if (f.Find("dtype") != nullptr)
      TRACE_RETURN_IF_ERROR(ReadDataType(f, &gemm->dtype, "dtype", true));
    TRACE_RETURN_IF_ERROR(f.Bool("fast_accum", &gemm->fast_accumulation));
    return Status::Ok();
  }

  // A field version 1 does not have.
  Status NeedsVersion2(const Fields& f, std::string_view field) const {
    if (version_ >= 2) return Status::Ok();
    return f.Error(
        fmt::format("field '{}' needs trace format version 2 (the header says 1)", field));
  }

  Status ReadCounts(const Fields& kernel, KernelCounts* counts) const {
    const Json* v = kernel.Find("counts");
    if (v == nullptr) return Status::Ok();
    TRACE_RETURN_IF_ERROR(NeedsVersion2(kernel, "counts"));
    if (!v->is_object())
      return kernel.Error("field 'counts' must be an object {\"fma_flops\":..,...}");
    const Fields f(*v, kernel.where(), "kernel: counts: ");
    TRACE_RETURN_IF_ERROR(f.OnlyFields(
        {"tensor_dtype", "fma_flops", "fp64_flops", "tensor_flops", "sfu_ops", "instructions"}));
    counts->counted = true;
    if (f.Find("tensor_dtype") != nullptr)
      TRACE_RETURN_IF_ERROR(ReadDataType(f, &counts->tensor_dtype, "tensor_dtype"));
    for (auto [key, out] : {std::pair{"fma_flops", &counts->fma_flops},
                            {"fp64_flops", &counts->fp64_flops},
                            {"tensor_flops", &counts->tensor_flops},
                            {"sfu_ops", &counts->sfu_ops},
                            {"instructions", &counts->instructions}}) {
      const Json* n = f.Find(key);
      if (n == nullptr) continue;
      const double d = n->is_number() ? n->get<double>() : -1;
      if (!(d >= 0) || !std::isfinite(d))
        return f.Error(fmt::format("field '{}' must be a finite number >= 0", key));
      *out = d;
    }
    return Status::Ok();
  }

  Status ReadAttention(const Fields& kernel, AttentionShape* attention) const {
    const Json* v = kernel.Find("attention");
    if (v == nullptr) return Status::Ok();
    if (!v->is_object())
      return kernel.Error(
          "field 'attention' must be an object {\"batch\":..,\"heads\":..,\"seq_q\":..,"
          "\"seq_kv\":..,\"head_dim\":..}");
    const Fields f(*v, kernel.where(), "kernel: attention: ");
    TRACE_RETURN_IF_ERROR(f.OnlyFields({"batch", "heads", "seq_q", "seq_kv", "head_dim", "causal",
                                        "backward", "dtype", "kernel"}));
    // Each dimension fits in 2^31 so that the FLOP count (a product of five) stays finite
    // and exact enough in a double.
    constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();
    TRACE_RETURN_IF_ERROR(f.Int("batch", &attention->batch, 1, kMax, true));
    TRACE_RETURN_IF_ERROR(f.Int("heads", &attention->heads, 1, kMax, true));
    TRACE_RETURN_IF_ERROR(f.Int("seq_q", &attention->seq_q, 1, kMax, true));
    TRACE_RETURN_IF_ERROR(f.Int("seq_kv", &attention->seq_kv, 1, kMax, true));
    TRACE_RETURN_IF_ERROR(f.Int("head_dim", &attention->head_dim, 1, kMax, true));
    TRACE_RETURN_IF_ERROR(f.Bool("causal", &attention->causal));
    TRACE_RETURN_IF_ERROR(f.Bool("backward", &attention->backward));
    if (f.Find("dtype") != nullptr) TRACE_RETURN_IF_ERROR(ReadDataType(f, &attention->dtype));
    if (const Json* k = f.Find("kernel"); k != nullptr) {
      TRACE_RETURN_IF_ERROR(NeedsVersion2(f, "kernel"));
      auto parsed = k->is_string() ? ParseAttentionKernel(k->get<std::string>())
                                   : Result<AttentionKernel>(Status::InvalidArgument(""));
      if (!parsed.ok())
        return f.Error("field 'kernel' must be one of \"default\", \"fa2\", \"fa3\", \"cudnn\"");
      attention->kernel = *parsed;
    }
    return Status::Ok();
  }

  Status ReadStream(const Fields& f, OpKind kind, std::int32_t* stream) const {
    const Json* v = f.Find("stream");
    if (kind == OpKind::kStreamCreate) {
      if (v == nullptr) return f.Missing("stream");
      std::int64_t id = 0;
      if (!ToInt(*v, 1, std::numeric_limits<std::int32_t>::max(), &id)) {
        return f.Error("field 'stream' must be the new stream's id, an integer > 0");
      }
      *stream = static_cast<std::int32_t>(id);
      return Status::Ok();
    }
    if (v == nullptr) return Status::Ok();
    if (v->is_string() && v->get_ref<const std::string&>() == "per_thread") {
      *stream = kPerThreadStream;
      return Status::Ok();
    }
    std::int64_t id = 0;
    if (!ToInt(*v, 0, std::numeric_limits<std::int32_t>::max(), &id)) {
      return f.Error(R"(field 'stream' must be a stream id (an integer >= 0) or "per_thread")");
    }
    *stream = static_cast<std::int32_t>(id);
    return Status::Ok();
  }

  Status ParseOp(const Json& object, OpKind kind) {
    const Fields f(object, Where(), fmt::format("{}: ", ToString(kind)));
    TRACE_RETURN_IF_ERROR(CheckOpFields(object, kind, f));
    int rank = 0;
    TRACE_RETURN_IF_ERROR(f.Int("rank", &rank, 0, std::numeric_limits<std::int32_t>::max(), true));
    if (rank >= workload_->world_size()) {
      return Error(
          fmt::format("rank {} is outside the trace's {} ranks", rank, workload_->world_size()));
    }
    Op op;
    op.kind = kind;
    if (HasStream(kind)) TRACE_RETURN_IF_ERROR(ReadStream(f, kind, &op.stream));
    if (HasDuration(kind)) {
      TRACE_RETURN_IF_ERROR(f.Duration("duration_us", &op.duration, kind == OpKind::kHost));
    }
    if (HasEvent(kind)) {
      TRACE_RETURN_IF_ERROR(
          f.Int("event", &op.event, 0, std::numeric_limits<std::int32_t>::max(), true));
    }
    NameTable& names = workload_->names();
    switch (kind) {
      case OpKind::kKernel: {
        std::string name;
        TRACE_RETURN_IF_ERROR(f.String("name", &name, true));
        op.name = names.Intern(name);
        TRACE_RETURN_IF_ERROR(f.Dim("grid", &op.grid));
        TRACE_RETURN_IF_ERROR(f.Dim("block", &op.block));
        TRACE_RETURN_IF_ERROR(f.Unsigned("shared_mem", &op.shared_mem, false));
        TRACE_RETURN_IF_ERROR(ReadGemm(f, &op.gemm));
        TRACE_RETURN_IF_ERROR(f.Unsigned("bytes", &op.bytes, false));
        if (f.Find("bytes_guessed") != nullptr) {
          TRACE_RETURN_IF_ERROR(NeedsVersion2(f, "bytes_guessed"));
          TRACE_RETURN_IF_ERROR(f.Bool("bytes_guessed", &op.bytes_guessed));
          if (op.bytes_guessed && op.bytes == 0)
            return f.Error("field 'bytes_guessed' needs the 'bytes' it says were guessed");
        }
        TRACE_RETURN_IF_ERROR(ReadAttention(f, &op.attention));
        TRACE_RETURN_IF_ERROR(ReadCounts(f, &op.counts));
        break;
      }
      case OpKind::kMemcpy:
        if (const Json* v = f.Find("kind"); v != nullptr) {
          Result<MemcpyKind> copy = ParseMemcpyKind(v->is_string() ? v->get<std::string>() : "");
          if (!v->is_string() || !copy.ok()) {
            return f.Error(fmt::format("field 'kind' must be one of h2d, d2h, d2d, peer (found {})",
                                       v->dump()));
          }
          op.copy_kind = *copy;
        }
        [[fallthrough]];
      case OpKind::kMemset:
        TRACE_RETURN_IF_ERROR(f.Bool("async", &op.async));
        [[fallthrough]];
      case OpKind::kMalloc:
      case OpKind::kFree:
        TRACE_RETURN_IF_ERROR(f.Unsigned("bytes", &op.bytes, true));
        break;
      case OpKind::kStreamCreate:
        TRACE_RETURN_IF_ERROR(f.Bool("non_blocking", &op.non_blocking));
        TRACE_RETURN_IF_ERROR(f.Int("priority", &op.priority,
                                    std::numeric_limits<std::int32_t>::min(),
                                    std::numeric_limits<std::int32_t>::max(), false));
        break;
      case OpKind::kCollective: {
        const Comm* comm = nullptr;
        TRACE_RETURN_IF_ERROR(ReadComm(f, rank, op, &comm));
        std::string coll_name;
        TRACE_RETURN_IF_ERROR(f.String("coll", &coll_name, true));
        Result<CollectiveOp> coll = netmodel::ParseCollectiveOp(coll_name);
        if (!coll.ok()) {
          return f.Error(fmt::format(
              "unknown collective '{}' (known: allreduce, allgather, reducescatter, broadcast, "
              "reduce, alltoall, gather, scatter)",
              coll_name));
        }
        if (!IsTraceCollective(*coll)) {
          return f.Error(
              fmt::format("coll '{}' is not a collective here: write point-to-point "
                          "traffic as send and recv ops",
                          coll_name));
        }
        op.coll = *coll;
        TRACE_RETURN_IF_ERROR(f.Unsigned("count", &op.count, true));
        TRACE_RETURN_IF_ERROR(ReadDataType(f, &op.dtype));
        if (const Json* v = f.Find("redop"); v != nullptr) {
          if (!IsReducing(op.coll)) {
            return f.Error(fmt::format(
                "field 'redop' does not apply to {} (only to allreduce, reduce, reducescatter)",
                netmodel::ToString(op.coll)));
          }
          Result<ReduceOp> redop = ParseReduceOp(v->is_string() ? v->get<std::string>() : "");
          if (!v->is_string() || !redop.ok()) {
            return f.Error(fmt::format(
                "field 'redop' must be one of sum, prod, max, min, avg (found {})", v->dump()));
          }
          op.redop = *redop;
        }
        if (IsRooted(op.coll)) {
          TRACE_RETURN_IF_ERROR(ReadCommRank(f, "root", *comm, &op.root));
        } else if (f.Find("root") != nullptr) {
          return f.Error(fmt::format(
              "field 'root' does not apply to {} (only to broadcast, reduce, gather, scatter)",
              netmodel::ToString(op.coll)));
        }
        break;
      }
      case OpKind::kSend:
      case OpKind::kRecv: {
        const Comm* comm = nullptr;
        TRACE_RETURN_IF_ERROR(ReadComm(f, rank, op, &comm));
        TRACE_RETURN_IF_ERROR(ReadCommRank(f, "peer", *comm, &op.peer));
        TRACE_RETURN_IF_ERROR(f.Unsigned("count", &op.count, true));
        TRACE_RETURN_IF_ERROR(ReadDataType(f, &op.dtype));
        break;
      }
      case OpKind::kMarker: {
        std::string label = "iteration";
        TRACE_RETURN_IF_ERROR(f.String("label", &label, false));
        op.label = names.Intern(label);
        break;
      }
      case OpKind::kHost:
      case OpKind::kEventRecord:
      case OpKind::kStreamWaitEvent:
      case OpKind::kEventSync:
      case OpKind::kEventQuery:
      case OpKind::kStreamSync:
      case OpKind::kDeviceSync:
      case OpKind::kGroupStart:
      case OpKind::kGroupEnd:
      case OpKind::kCommInit:  // live-only kinds never reach traces
      case OpKind::kEventElapsed:
      case OpKind::kStreamQuery:
        break;  // their fields, if any, were read above
    }
    workload_->AddOp(rank, op);
    return Status::Ok();
  }

  std::string path_;
  int line_ = 0;
  int header_line_ = 0;
  int version_ = kJsonlTraceVersion;  // the header's
  std::unique_ptr<InMemoryWorkload> workload_;
  std::unordered_map<std::string, Comm> comms_;
};

}  // namespace

Result<std::unique_ptr<Workload>> OpenJsonlTrace(const std::string& path, std::string text) {
  return JsonlParser(path).Parse(text);
}

}  // namespace myriad::emulator::trace_internal
