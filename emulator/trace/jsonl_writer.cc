// Writes a Workload as JSON Lines in canonical form: header, communicators, then each rank's
// ops in rank order; fields in a fixed order; fields equal to their default left out.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "myriad/emulator/trace.h"
#include "trace/trace_internal.h"

namespace myriad::emulator {
namespace {

using trace_internal::HasDuration;
using trace_internal::HasEvent;
using trace_internal::HasStream;

// A JSON string literal, escaped. Names come from users' binaries; bytes that are not UTF-8
// are replaced rather than failing the whole conversion.
std::string Quote(std::string_view s) {
  return nlohmann::json(std::string(s))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Picoseconds as exact decimal microseconds ("12.5", "3", "0.000001"), so reading the line back
// gives the same picoseconds (docs/trace-format.md, "duration_us").
std::string Micros(SimTime ps) {
  const SimTime whole = ps / kPicosPerMicro;
  SimTime fraction = ps % kPicosPerMicro;
  if (fraction == 0) return fmt::format("{}", whole);
  std::string digits = fmt::format("{:06}", fraction);
  while (digits.back() == '0') digits.pop_back();
  return fmt::format("{}.{}", whole, digits);
}

std::string DimText(const Dim3& d) {
  if (d.y == 1 && d.z == 1) return fmt::format("{}", d.x);
  return fmt::format("[{},{},{}]", d.x, d.y, d.z);
}

class LineWriter {
 public:
  explicit LineWriter(const NameTable& names) : names_(names) {}

  // Appends the op's line to `out`, or says why the op cannot be written as JSON Lines.
  Status Write(int rank, std::uint64_t index, const Op& op, std::string& out) const {
    const auto error = [&](std::string_view what) {
      return Status::InvalidArgument(
          fmt::format("rank {} op {} ({}): {}", rank, index, ToString(op.kind), what));
    };
    const auto name = [&](NameId id) -> Result<std::string> {
      if (id >= names_.size()) {
        return Status::InvalidArgument(
            fmt::format("rank {} op {} ({}): name id {} is not in the name table", rank, index,
                        ToString(op.kind), id));
      }
      return Quote(names_.Name(id));
    };
    if (static_cast<int>(op.kind) >= kNumOpKinds) return error("unknown op kind");
    out += fmt::format(R"({{"rank":{},"op":"{}")", rank, ToString(op.kind));
    if (HasStream(op.kind)) {
      if (op.kind == OpKind::kStreamCreate && op.stream <= 0) {
        return error(fmt::format("a created stream needs an id > 0, not {}", op.stream));
      }
      if (op.stream == kPerThreadStream) {
        out += R"(,"stream":"per_thread")";
      } else if (op.stream < 0) {
        return error(fmt::format("stream {} has no trace spelling", op.stream));
      } else if (op.stream != kLegacyStream) {
        out += fmt::format(R"(,"stream":{})", op.stream);
      }
    }
    if (HasDuration(op.kind) && op.duration < -1) {
      return error(fmt::format("negative duration {} ps", op.duration));
    }
    if (op.kind == OpKind::kHost && op.duration < 0) return error("host op without a duration");
    switch (op.kind) {
      case OpKind::kKernel: {
        Result<std::string> kernel = name(op.name);
        if (!kernel.ok()) return kernel.status();
        out += fmt::format(R"(,"name":{})", *kernel);
        if (op.duration >= 0) out += fmt::format(R"(,"duration_us":{})", Micros(op.duration));
        if (op.grid != Dim3{}) out += fmt::format(R"(,"grid":{})", DimText(op.grid));
        if (op.block != Dim3{}) out += fmt::format(R"(,"block":{})", DimText(op.block));
        if (op.shared_mem != 0) out += fmt::format(R"(,"shared_mem":{})", op.shared_mem);
        if (op.gemm.m != 0) {
          const GemmShape& g = op.gemm;
          out += fmt::format(R"(,"gemm":{{"m":{},"n":{},"k":{})", g.m, g.n, g.k);
          if (g.batch != 1) out += fmt::format(R"(,"batch":{})", g.batch);
          if (g.dtype != GemmShape{}.dtype)
            out += fmt::format(R"(,"dtype":"{}")", ToString(g.dtype));
          if (g.fast_accumulation) out += R"(,"fast_accum":true)";
          out += '}';
        }
        if (op.bytes != 0) out += fmt::format(R"(,"bytes":{})", op.bytes);
        if (op.bytes != 0 && op.bytes_guessed) out += R"(,"bytes_guessed":true)";
        if (op.counts.counted) {
          const KernelCounts& k = op.counts;
          out += fmt::format(
              R"(,"counts":{{"tensor_dtype":"{}","fma_flops":{},"fp64_flops":{},"tensor_flops":{},)"
              R"("sfu_ops":{},"instructions":{}}})",
              ToString(k.tensor_dtype), k.fma_flops, k.fp64_flops, k.tensor_flops, k.sfu_ops,
              k.instructions);
        }
        if (op.attention.batch != 0) {
          const AttentionShape& a = op.attention;
          out += fmt::format(
              R"(,"attention":{{"batch":{},"heads":{},"seq_q":{},"seq_kv":{},"head_dim":{})",
              a.batch, a.heads, a.seq_q, a.seq_kv, a.head_dim);
          if (!a.causal) out += R"(,"causal":false)";
          if (a.backward) out += R"(,"backward":true)";
          if (a.dtype != AttentionShape{}.dtype)
            out += fmt::format(R"(,"dtype":"{}")", ToString(a.dtype));
          if (a.kernel != AttentionKernel::kDefault)
            out += fmt::format(R"(,"kernel":"{}")", ToString(a.kernel));
          out += '}';
        }
        break;
      }
      case OpKind::kHost:
        out += fmt::format(R"(,"duration_us":{})", Micros(op.duration));
        break;
      case OpKind::kMemcpy:
      case OpKind::kMemset:
        out += fmt::format(R"(,"bytes":{})", op.bytes);
        if (op.kind == OpKind::kMemcpy && op.copy_kind != MemcpyKind::kDeviceToDevice) {
          out += fmt::format(R"(,"kind":"{}")", ToString(op.copy_kind));
        }
        if (!op.async) out += R"(,"async":false)";
        if (op.duration >= 0) out += fmt::format(R"(,"duration_us":{})", Micros(op.duration));
        break;
      case OpKind::kMalloc:
      case OpKind::kFree:
        out += fmt::format(R"(,"bytes":{})", op.bytes);
        break;
      case OpKind::kStreamCreate:
        if (op.non_blocking) out += R"(,"non_blocking":true)";
        if (op.priority != 0) out += fmt::format(R"(,"priority":{})", op.priority);
        break;
      case OpKind::kCollective: {
        Result<std::string> comm = name(op.comm);
        if (!comm.ok()) return comm.status();
        if (!trace_internal::IsTraceCollective(op.coll)) {
          return error("sendrecv collectives are written as send and recv ops");
        }
        out += fmt::format(R"(,"comm":{},"coll":"{}","count":{},"dtype":"{}")", *comm,
                           netmodel::ToString(op.coll), op.count, ToString(op.dtype));
        if (trace_internal::IsReducing(op.coll) && op.redop != ReduceOp::kSum) {
          out += fmt::format(R"(,"redop":"{}")", ToString(op.redop));
        }
        if (trace_internal::IsRooted(op.coll)) {
          if (op.root < 0) return error("rooted collective without a root");
          out += fmt::format(R"(,"root":{})", op.root);
        }
        break;
      }
      case OpKind::kSend:
      case OpKind::kRecv: {
        Result<std::string> comm = name(op.comm);
        if (!comm.ok()) return comm.status();
        if (op.peer < 0) return error("no peer");
        out += fmt::format(R"(,"comm":{},"peer":{},"count":{},"dtype":"{}")", *comm, op.peer,
                           op.count, ToString(op.dtype));
        break;
      }
      case OpKind::kMarker: {
        Result<std::string> label = name(op.label);
        if (!label.ok()) return label.status();
        if (names_.Name(op.label).empty()) return error("empty marker label");
        if (names_.Name(op.label) != "iteration") out += fmt::format(R"(,"label":{})", *label);
        break;
      }
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
        break;
    }
    if (HasEvent(op.kind)) {
      if (op.event < 0) return error(fmt::format("event {} has no trace spelling", op.event));
      out += fmt::format(R"(,"event":{})", op.event);
    }
    out += "}\n";
    return Status::Ok();
  }

 private:
  const NameTable& names_;
};

}  // namespace

Status WriteJsonlTrace(Workload& workload, const std::string& path) {
  trace_internal::AtomicFile file(path);
  TRACE_RETURN_IF_ERROR(file.Open());
  std::string out = fmt::format("{{\"myriad_trace\":{},\"ranks\":{}}}\n", kJsonlTraceVersion,
                                workload.world_size());
  const NameTable& names = workload.names();
  for (const CommunicatorSpec& comm : workload.communicators()) {
    if (comm.name >= names.size() || names.Name(comm.name).empty()) {
      return Status::InvalidArgument(
          fmt::format("{}: a communicator has no name (name id {})", path, comm.name));
    }
    out += fmt::format(R"({{"op":"comm","comm":{},"ranks":[{}]}})", Quote(names.Name(comm.name)),
                       fmt::join(comm.ranks, ","));
    out += '\n';
  }
  const LineWriter writer(names);
  for (int rank = 0; rank < workload.world_size(); ++rank) {
    Result<std::unique_ptr<OpSource>> source = workload.OpenRank(rank);
    if (!source.ok()) return source.status();
    Op op;
    for (std::uint64_t index = 0;; ++index) {
      Result<bool> more = source.value()->Next(op);
      if (!more.ok()) return more.status();
      if (!*more) break;
      if (Status s = writer.Write(rank, index, op, out); !s.ok()) {
        return Status::InvalidArgument(fmt::format("{}: {}", path, s.message()));
      }
      // Flushed in pieces so that converting a large binary trace needs little memory.
      if (out.size() >= (1u << 20)) {
        TRACE_RETURN_IF_ERROR(file.Write(out.data(), out.size()));
        out.clear();
      }
    }
  }
  TRACE_RETURN_IF_ERROR(file.Write(out.data(), out.size()));
  return file.Commit();
}

}  // namespace myriad::emulator
