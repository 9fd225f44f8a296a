// PyTorch profiler (Kineto) Chrome traces: kernels, and the matrix products that launched
// them. Schema: docs/kernel-timing.md, "Importing a profile".
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "profiling/trace_reading.h"

namespace myriad::emulator::profiling {
namespace {

using Json = nlohmann::json;

// A CPU-side op: an ATen operator (cat "cpu_op") on one thread.
struct CpuOp {
  double start = 0, end = 0;
  const Json* event = nullptr;
};

// The whole file, gunzipped when it starts with gzip's magic.
Result<std::string> ReadJsonText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  std::ostringstream raw;
  raw << in.rdbuf();
  std::string data = raw.str();
  if (data.size() < 2 || static_cast<unsigned char>(data[0]) != 0x1f ||
      static_cast<unsigned char>(data[1]) != 0x8b)
    return data;
  // gzip: inflate with zlib's gzip wrapper (windowBits 15 + 32 detects the header).
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) return Status::Internal(path + ": zlib cannot start");
  z.next_in = reinterpret_cast<Bytef*>(data.data());
  z.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buffer[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - z.avail_out);
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;  // input ended early
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END)
    return Status::InvalidArgument(
        fmt::format("{}: {} gzip stream{}", path, rc == Z_BUF_ERROR ? "truncated" : "corrupt",
                    z.msg != nullptr ? std::string(" (") + z.msg + ")" : std::string()));
  return out;
}

DataType TypeOfInput(const std::string& t) {
  if (t == "c10::BFloat16") return DataType::kBfloat16;
  if (t == "c10::Half") return DataType::kFloat16;
  if (t == "c10::Float8_e4m3fn" || t == "c10::Float8_e4m3fnuz") return DataType::kFloat8e4m3;
  if (t == "c10::Float8_e5m2" || t == "c10::Float8_e5m2fnuz") return DataType::kFloat8e5m2;
  if (t == "double") return DataType::kFloat64;
  return DataType::kFloat32;
}

// The GEMM an ATen op computes, from its recorded input dimensions; false when the op is not
// a matrix product or its shapes were not recorded.
bool GemmOf(const Json& op, GemmShape* gemm) {
  const std::string name = op.value("name", "");
  int a = 0;  // index of the first matrix among the inputs
  bool batched = false;
  if (name == "aten::mm" || name == "aten::_scaled_mm") {
    a = 0;
  } else if (name == "aten::addmm") {
    a = 1;
  } else if (name == "aten::bmm") {
    a = 0;
    batched = true;
  } else if (name == "aten::baddbmm") {
    a = 1;
    batched = true;
  } else {
    return false;
  }
  const Json* args = op.contains("args") ? &op["args"] : nullptr;
  if (args == nullptr || !args->contains("Input Dims")) return false;
  const Json& dims = (*args)["Input Dims"];
  if (!dims.is_array() || static_cast<int>(dims.size()) < a + 2) return false;
  const Json& x = dims[static_cast<std::size_t>(a)];
  const Json& y = dims[static_cast<std::size_t>(a + 1)];
  const std::size_t rank = batched ? 3 : 2;
  if (!x.is_array() || !y.is_array() || x.size() != rank || y.size() != rank) return false;
  for (const Json* m : {&x, &y})
    for (const Json& d : *m)
      if (!d.is_number_integer() || d.get<std::int64_t>() < 1) return false;
  const std::size_t o = batched ? 1 : 0;
  gemm->batch = batched ? x[0].get<std::int64_t>() : 1;
  gemm->m = x[o].get<std::int64_t>();
  gemm->k = x[o + 1].get<std::int64_t>();
  gemm->n = y[o + 1].get<std::int64_t>();
  if (y[o].get<std::int64_t>() != gemm->k) return false;
  gemm->dtype = DataType::kBfloat16;
  if (args->contains("Input type") && (*args)["Input type"].is_array() &&
      (*args)["Input type"].size() > static_cast<std::size_t>(a) &&
      (*args)["Input type"][static_cast<std::size_t>(a)].is_string())
    gemm->dtype =
        TypeOfInput((*args)["Input type"][static_cast<std::size_t>(a)].get<std::string>());
  return true;
}

bool ReadDim3(const Json& v, Dim3* out) {
  if (!v.is_array() || v.empty() || v.size() > 3) return false;
  std::uint32_t d[3] = {1, 1, 1};
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number_integer() || v[i].get<std::int64_t>() < 1 ||
        v[i].get<std::int64_t>() > 0xffffffffLL)
      return false;
    d[i] = static_cast<std::uint32_t>(v[i].get<std::int64_t>());
  }
  *out = Dim3{d[0], d[1], d[2]};
  return true;
}

// The ATen op's name and input dimensions (those that are lists of integers; others empty).
void ReadOp(const Json& op, KernelRecord* r) {
  r->op = op.contains("name") && op["name"].is_string() ? op["name"].get<std::string>() : "";
  if (!op.contains("args") || !op["args"].is_object() || !op["args"].contains("Input Dims")) return;
  const Json& dims = op["args"]["Input Dims"];
  if (!dims.is_array()) return;
  for (const Json& input : dims) {
    std::vector<std::int64_t> shape;
    if (input.is_array())
      for (const Json& d : input)
        if (d.is_number_integer() && d.get<std::int64_t>() >= 0)
          shape.push_back(d.get<std::int64_t>());
    r->input_dims.push_back(std::move(shape));
  }
}

// A thread's key: pid and tid, as the trace writes them (numbers or strings).
std::string ThreadKey(const Json& e) {
  return (e.contains("pid") ? e["pid"].dump() : "") + "/" +
         (e.contains("tid") ? e["tid"].dump() : "");
}

}  // namespace

Result<TraceRead> ReadKineto(const std::string& path) {
  auto text = ReadJsonText(path);
  if (!text.ok()) return text.status();
  Json doc = Json::parse(*text, nullptr, false);
  if (doc.is_discarded())
    return Status::InvalidArgument(
        fmt::format("{}: not JSON (a truncated or damaged PyTorch profiler trace?)", path));
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    return Status::InvalidArgument(fmt::format(
        "{}: no 'traceEvents' list: not a Chrome trace from the PyTorch profiler", path));
  TraceRead read;
  read.format = "kineto";
  if (doc.contains("deviceProperties") && doc["deviceProperties"].is_array() &&
      !doc["deviceProperties"].empty() && doc["deviceProperties"][0].is_object())
    read.device_name = doc["deviceProperties"][0].value("name", "");

  // The launching call of each kernel (by CUPTI correlation id) and the ATen ops per thread.
  std::unordered_map<std::int64_t, std::pair<std::string, double>> launches;
  std::map<std::string, std::vector<CpuOp>> ops;
  std::vector<const Json*> kernels;
  std::size_t index = 0;
  for (const Json& e : doc["traceEvents"]) {
    ++index;
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    const std::string cat = e.value("cat", "");
    const bool timed =
        e.contains("ts") && e["ts"].is_number() && e.contains("dur") && e["dur"].is_number();
    if (cat == "kernel" || cat == "Kernel") {
      if (!timed || !e.contains("name") || !e["name"].is_string())
        return Status::InvalidArgument(
            fmt::format("{}: event {} (a kernel) has no name, 'ts' or 'dur'", path, index));
      kernels.push_back(&e);
    } else if (cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime") {
      const Json* args = e.contains("args") ? &e["args"] : nullptr;
      if (timed && args != nullptr && args->contains("correlation") &&
          (*args)["correlation"].is_number_integer())
        launches[(*args)["correlation"].get<std::int64_t>()] = {ThreadKey(e),
                                                                e["ts"].get<double>()};
    } else if ((cat == "cpu_op" || cat == "Operator") && timed) {
      ops[ThreadKey(e)].push_back(
          CpuOp{e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>(), &e});
    }
  }
  for (auto& [thread, list] : ops)
    std::stable_sort(list.begin(), list.end(),
                     [](const CpuOp& a, const CpuOp& b) { return a.start < b.start; });

  // A kernel's GEMM call: the innermost ATen op on its launching thread around the launch
  // (the latest-starting op that contains it), when that op is a matrix product.
  std::map<const Json*, std::int64_t> call_of_op;
  for (const Json* k : kernels) {
    KernelRecord r;
    r.name = (*k)["name"].get<std::string>();
    r.duration_us = (*k)["dur"].get<double>();
    r.start_us = (*k)["ts"].get<double>();
    const Json* args = k->contains("args") ? &(*k)["args"] : nullptr;
    if (args != nullptr) {
      if (args->contains("grid") && !ReadDim3((*args)["grid"], &r.grid))
        return Status::InvalidArgument(fmt::format("{}: kernel '{}' has a bad 'grid' {}", path,
                                                   r.name, (*args)["grid"].dump()));
      if (args->contains("block") && !ReadDim3((*args)["block"], &r.block))
        return Status::InvalidArgument(fmt::format("{}: kernel '{}' has a bad 'block' {}", path,
                                                   r.name, (*args)["block"].dump()));
      if (args->contains("stream") && (*args)["stream"].is_number_integer())
        r.stream = (*args)["stream"].get<std::int64_t>();
      if (args->contains("shared memory") && (*args)["shared memory"].is_number_integer())
        r.shared_mem = static_cast<std::uint32_t>(
            std::clamp<std::int64_t>((*args)["shared memory"].get<std::int64_t>(), 0, 0xffffffff));
      if (args->contains("correlation") && (*args)["correlation"].is_number_integer()) {
        const auto launch = launches.find((*args)["correlation"].get<std::int64_t>());
        const auto thread = launch == launches.end() ? ops.end() : ops.find(launch->second.first);
        if (thread != ops.end()) {
          const double t = launch->second.second;
          const std::vector<CpuOp>& list = thread->second;
          auto it = std::upper_bound(list.begin(), list.end(), t,
                                     [](double v, const CpuOp& op) { return v < op.start; });
          while (it != list.begin()) {
            --it;
            if (it->end < t) continue;  // ended before the launch: not around it
            ReadOp(*it->event, &r);
            GemmShape gemm;
            if (GemmOf(*it->event, &gemm)) {
              const auto [slot, inserted] =
                  call_of_op.emplace(it->event, static_cast<std::int64_t>(read.gemm_calls.size()));
              if (inserted) read.gemm_calls.push_back(gemm);
              r.gemm_call = slot->second;
            }
            break;
          }
        }
      }
    }
    read.kernels.push_back(std::move(r));
  }
  return read;
}

}  // namespace myriad::emulator::profiling
