// Reading a kernel's PTX for its work: basic blocks and loops from its branches, per-thread
// counts from its instructions (PTX ISA: ld/st/atom/red and cp.async move global bytes;
// fma/add/mul on floats are FLOPs; mma/wmma/wgmma tensor FLOPs by shape; ex2, lg2, rsqrt,
// rcp, sin, cos, tanh run on the SFUs), and the integer values that steer its control flow as
// expressions of the launch (docs/kernel-timing.md, "Kernels timed from their code").
#include "kernel_code/analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <unordered_map>

#include "kernel_code/ptx_text.h"

namespace myriad::emulator {
namespace kernel_code {
namespace {

// A multiply by a constant at least this large is a hash (seeds, noise), not an extent:
// 1664525, 0x9E3779B9, 0x27d4eb2d. Index arithmetic multiplies by tile and row sizes.
constexpr std::int64_t kHashMultiplier = 1 << 16;

using State = std::vector<std::int32_t>;  // register -> node

// Whether an opcode's parts after the first name `part` ("ld.global.f32" has "global").
bool HasPart(const std::vector<std::string_view>& parts, std::string_view part) {
  return std::find(parts.begin() + (parts.empty() ? 0 : 1), parts.end(), part) != parts.end();
}

bool ParseInt(std::string_view s, std::int64_t* v) {
  bool negative = false;
  if (!s.empty() && s[0] == '-') {
    negative = true;
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  if (!s.empty() && (s.back() == 'U' || s.back() == 'u')) s.remove_suffix(1);
  std::uint64_t u = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), u, base);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || s.empty()) return false;
  *v = negative ? -static_cast<std::int64_t>(u) : static_cast<std::int64_t>(u);
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int TypeBytes(std::string_view t) {
  if (t == "pred") return 1;
  if (t.size() < 2) return 0;
  if (t == "f16x2" || t == "bf16x2") return 4;
  if (t == "bf16") return 2;
  if (t == "e4m3" || t == "e5m2") return 1;
  const char c = t[0];
  if (c != 'u' && c != 's' && c != 'b' && c != 'f') return 0;
  int bits = 0;
  if (std::from_chars(t.data() + 1, t.data() + t.size(), bits).ec != std::errc()) return 0;
  return bits / 8;
}

struct Builder {
  const PtxFunction& f;
  KernelCode::Impl& out;
  std::unordered_map<std::string_view, int> regs;
  std::unordered_map<std::string_view, int> param_index;
  std::vector<bool> shared_address;  // by register: an address into shared memory
  std::vector<bool> param_pointer_seen;
  bool saw_call = false;

  // Bulk copies and expect_tx counts as read, before the kernel's whole code says which of
  // them tell its bytes (Build's end).
  enum class CopyKind : std::uint8_t {
    kSized,         // an explicit size operand
    kBarrierSized,  // an explicit size, completing on an mbarrier (expect_tx counts it too)
    kTensorLoad,    // global -> shared through a tensor map: expect_tx tells its bytes
    kTensorStore,   // shared -> global through a tensor map: not knowable
    kExpectTx,      // the bytes an mbarrier is told to expect
  };
  struct PendingCopy {
    int block = 0;
    CopyKind kind = CopyKind::kSized;
    bool multicast = false;
    SizedCopy copy;
  };
  std::vector<PendingCopy> pending_copies;

  Builder(const PtxFunction& fn, KernelCode::Impl& impl) : f(fn), out(impl) {
    out.nodes.push_back(Node{});  // node 0: unknown
    for (std::size_t i = 0; i < f.params.size(); ++i)
      param_index[f.params[i].name] = static_cast<int>(i);
  }

  int Reg(std::string_view name) {
    auto [it, inserted] = regs.emplace(name, static_cast<int>(regs.size()));
    if (inserted) shared_address.push_back(false);
    return it->second;
  }
  static bool IsReg(std::string_view s) { return !s.empty() && s[0] == '%'; }

  std::int32_t Add(Node n) {
    out.nodes.push_back(n);
    return static_cast<std::int32_t>(out.nodes.size() - 1);
  }
  const Node& N(std::int32_t id) const { return out.nodes[static_cast<std::size_t>(id)]; }

  std::int32_t Const(std::int64_t v) {
    Node n;
    n.op = NodeOp::kConst;
    n.opaque = false;
    n.value = v;
    return Add(n);
  }
  std::int32_t Unary(NodeOp op, std::int32_t a) {
    if (N(a).opaque) return 0;
    Node n;
    n.op = op;
    n.opaque = false;
    n.a = a;
    n.loops = N(a).loops;
    n.loaded = N(a).loaded;
    if (op == NodeOp::kPNot && HasRankTest(a)) n.value = kRankTestA;
    return Add(n);
  }
  std::int32_t Binary(NodeOp op, std::int32_t a, std::int32_t b, Cmp cmp = Cmp::kLt) {
    if (N(a).opaque || N(b).opaque) return 0;
    const auto is_const = [&](std::int32_t x, std::int64_t* v) {
      if (N(x).op != NodeOp::kConst) return false;
      *v = N(x).value;
      return true;
    };
    std::int64_t ca = 0, cb = 0;
    const bool ka = is_const(a, &ca), kb = is_const(b, &cb);
    // Hash-like arithmetic never becomes an extent.
    if (op == NodeOp::kMul && ((ka && (ca >= kHashMultiplier || ca <= -kHashMultiplier)) ||
                               (kb && (cb >= kHashMultiplier || cb <= -kHashMultiplier))))
      return 0;
    if (op == NodeOp::kAnd) {
      const std::int64_t mask = kb ? cb : ka ? ca : -1;
      if (!(ka || kb) || mask < 0 || (mask & (mask + 1)) != 0) return 0;  // not 2^k - 1
    }
    // Simplify x + 0, x * 1: keeps induction variables recognisable.
    if (op == NodeOp::kAdd && kb && cb == 0) return a;
    if (op == NodeOp::kAdd && ka && ca == 0) return b;
    if (op == NodeOp::kMul && kb && cb == 1) return a;
    Node n;
    n.op = op;
    n.cmp = cmp;
    n.opaque = false;
    n.a = a;
    n.b = b;
    n.loops = N(a).loops | N(b).loops;
    n.loaded = N(a).loaded || N(b).loaded;
    if ((op == NodeOp::kPAnd || op == NodeOp::kPOr) && (HasRankTest(a) || HasRankTest(b)))
      n.value = kRankTestA;
    return Add(n);
  }

  // An operand's node: a register's current value, an immediate, a special register.
  std::int32_t Value(std::string_view s, const State& st) {
    if (s.empty()) return 0;
    if (s[0] == '%') {
      static constexpr std::pair<std::string_view, Special> kSpecials[] = {
          {"%tid.x", Special::kTidX},       {"%tid.y", Special::kTidY},
          {"%tid.z", Special::kTidZ},       {"%ntid.x", Special::kNtidX},
          {"%ntid.y", Special::kNtidY},     {"%ntid.z", Special::kNtidZ},
          {"%ctaid.x", Special::kCtaidX},   {"%ctaid.y", Special::kCtaidY},
          {"%ctaid.z", Special::kCtaidZ},   {"%nctaid.x", Special::kNctaidX},
          {"%nctaid.y", Special::kNctaidY}, {"%nctaid.z", Special::kNctaidZ},
          {"%laneid", Special::kLaneId},    {"%warpid", Special::kWarpId}};
      for (const auto& [name, sp] : kSpecials) {
        if (s == name) {
          Node n;
          n.op = NodeOp::kSpecial;
          n.opaque = false;
          n.value = static_cast<std::int64_t>(sp);
          return Add(n);
        }
      }
      const auto it = regs.find(s);
      if (it == regs.end() || static_cast<std::size_t>(it->second) >= st.size()) return 0;
      return st[static_cast<std::size_t>(it->second)];
    }
    std::int64_t v = 0;
    if (ParseInt(s, &v)) return Const(v);
    return 0;
  }

  // The parameter an `ld.param` loads whole ("[name]"); -1 for anything else (a field of a
  // by-value struct, "[name+8]", is not a parameter's value).
  int ParamLoaded(const PtxStatement& s, const std::vector<std::string_view>& parts) const {
    if (parts[0] != "ld" || !HasPart(parts, "param") || s.operands.size() < 2) return -1;
    const std::string_view a = s.operands[1];
    if (a.size() < 3 || a.front() != '[' || a.back() != ']') return -1;
    const auto it = param_index.find(a.substr(1, a.size() - 2));
    return it == param_index.end() ? -1 : it->second;
  }

  // Whether predicate `id` is a rank test or combines one (kPAnd, kPOr, kPNot).
  bool HasRankTest(std::int32_t id) const {
    const Node& n = N(id);
    return n.value != kNoRankTest && (n.op == NodeOp::kCmp || n.op == NodeOp::kPAnd ||
                                      n.op == NodeOp::kPOr || n.op == NodeOp::kPNot);
  }
  // Whether node `id` is a rank in a group: threadIdx.x or %laneid (1), blockIdx.x (-1), or
  // either with a low-bit mask (threadIdx.x % 32); 0 if not.
  int RankOf(std::int32_t id) const {
    const Node& n = N(id);
    if (n.op == NodeOp::kSpecial) {
      const auto sp = static_cast<Special>(n.value);
      return sp == Special::kTidX || sp == Special::kLaneId ? 1 : sp == Special::kCtaidX ? -1 : 0;
    }
    if (n.op != NodeOp::kAnd) return 0;
    if (N(n.b).op == NodeOp::kConst) return RankOf(n.a);
    if (N(n.a).op == NodeOp::kConst) return RankOf(n.b);
    return 0;
  }
  // Whether node `id` has one value for every thread of a block (or with `grid`, of the
  // grid): constants, parameters and the launch's shape, through arithmetic.
  bool IsUniform(std::int32_t id, bool grid, int depth) const {
    if (id <= 0 || depth > 8) return false;
    const Node& n = N(id);
    if (n.opaque) return false;
    switch (n.op) {
      case NodeOp::kConst:
      case NodeOp::kParam:
        return true;
      case NodeOp::kSpecial: {
        const auto sp = static_cast<Special>(n.value);
        if (sp == Special::kCtaidX || sp == Special::kCtaidY || sp == Special::kCtaidZ)
          return !grid;
        return sp != Special::kTidX && sp != Special::kTidY && sp != Special::kTidZ &&
               sp != Special::kLaneId && sp != Special::kWarpId;
      }
      case NodeOp::kAdd:
      case NodeOp::kSub:
      case NodeOp::kMul:
      case NodeOp::kDiv:
      case NodeOp::kShl:
      case NodeOp::kShr:
      case NodeOp::kMin:
      case NodeOp::kMax:
        return IsUniform(n.a, grid, depth + 1) && IsUniform(n.b, grid, depth + 1);
      case NodeOp::kNeg:
        return IsUniform(n.a, grid, depth + 1);
      default:
        return false;
    }
  }

  // The registers an instruction writes.
  static bool Writes(std::string_view op0) {
    return !(op0 == "st" || op0 == "bra" || op0 == "ret" || op0 == "exit" || op0 == "bar" ||
             op0 == "barrier" || op0 == "red" || op0 == "membar" || op0 == "fence" || op0 == "cp" ||
             op0 == "prefetch" || op0 == "trap" || op0 == "brkpt");
  }
  void Destinations(const PtxStatement& s, std::vector<int>* dests) {
    dests->clear();
    if (s.operands.empty()) return;
    const std::vector<std::string_view> parts = OpcodeParts(s.opcode);
    if (parts.empty() || !Writes(parts[0])) return;
    if (parts[0] == "call") {  // call (ret), func, (args)
      std::string_view r = s.operands[0];
      if (r.size() > 2 && r.front() == '(') {
        r = r.substr(1, r.size() - 2);
        if (IsReg(r)) dests->push_back(Reg(r));
      }
      return;
    }
    std::string_view d = s.operands[0];
    if (d.size() > 2 && d.front() == '{') {
      d = d.substr(1, d.size() - 2);
      std::size_t start = 0;
      for (std::size_t i = 0; i <= d.size(); ++i) {
        if (i == d.size() || d[i] == ',') {
          std::string_view r = d.substr(start, i - start);
          while (!r.empty() && r.front() == ' ') r.remove_prefix(1);
          while (!r.empty() && r.back() == ' ') r.remove_suffix(1);
          if (IsReg(r)) dests->push_back(Reg(r));
          start = i + 1;
        }
      }
      return;
    }
    if (const std::size_t bar = d.find('|'); bar != std::string_view::npos) {
      if (IsReg(d.substr(0, bar))) dests->push_back(Reg(d.substr(0, bar)));
      if (IsReg(d.substr(bar + 1))) dests->push_back(Reg(d.substr(bar + 1)));
      return;
    }
    if (IsReg(d)) dests->push_back(Reg(d));
  }

  // The register an address operand "[%rd6+4]" is based on; -1 for a symbol or immediate.
  int AddressBase(std::string_view a) {
    if (a.size() < 3 || a.front() != '[') return -1;
    a = a.substr(1, a.size() - 2);
    while (!a.empty() && a.front() == ' ') a.remove_prefix(1);  // Triton's "[ %rd1 + 0 ]"
    std::size_t end = 0;
    while (end < a.size() && a[end] != '+' && a[end] != '-' && a[end] != ' ') ++end;
    const std::string_view base = a.substr(0, end);
    if (!IsReg(base)) return -1;
    return Reg(base);
  }
  // Marks the parameter an address register was computed from (through cvta, mov and
  // pointer arithmetic) as an address.
  void MarkAddress(int base, bool written = false) {
    const int p = base < 0 || static_cast<std::size_t>(base) >= pointer_of.size()
                      ? -1
                      : pointer_of[static_cast<std::size_t>(base)];
    if (p < 0) {
      if (written) out.writes_anywhere = true;
      return;
    }
    out.params[static_cast<std::size_t>(p)].address = true;
    if (written) out.params[static_cast<std::size_t>(p)].written = true;
  }
  std::vector<int> pointer_of;  // by register: the parameter it points into, or -1

  // Per-thread counts of one instruction.
  void Count(const PtxStatement& s, const std::vector<std::string_view>& parts, Counts* c) {
    c->instructions += 1;
    const std::string_view op0 = parts[0];
    const auto has = [&](std::string_view p) { return HasPart(parts, p); };
    int vector = 1;
    for (std::string_view p : parts)
      if (p == "v2")
        vector = 2;
      else if (p == "v4")
        vector = 4;
      else if (p == "v8")
        vector = 8;
    const int type_bytes = parts.size() > 1 ? TypeBytes(parts.back()) : 0;
    if (op0 == "ld" || op0 == "ldu" || op0 == "st" || op0 == "atom" || op0 == "red") {
      const bool explicit_other = has("shared") || has("local") || has("param") || has("const") ||
                                  has("shared::cta") || has("shared::cluster");
      const std::size_t addr_at = op0 == "st" || op0 == "red" ? 0 : 1;
      const int base = addr_at < s.operands.size() ? AddressBase(s.operands[addr_at]) : -1;
      const bool is_shared = base >= 0 && static_cast<std::size_t>(base) < shared_address.size() &&
                             shared_address[static_cast<std::size_t>(base)];
      if (has("global") || (!explicit_other && !is_shared)) {
        double bytes = static_cast<double>(type_bytes) * vector;
        if (op0 == "atom" || op0 == "red") bytes *= 2;  // read and written
        c->global_bytes += bytes;
        MarkAddress(base, op0 != "ld" && op0 != "ldu");
      }
      return;
    }
    if (op0 == "cp" && parts.size() > 1 && (parts[1] == "async" || parts[1] == "reduce")) {
      if (has("bulk") || parts[1] == "reduce") return;  // sized per launch (BulkCopy)
      // Ampere's cp.async.{ca,cg}.shared.global [dst], [src], 4|8|16: a global load.
      std::int64_t bytes = 0;
      if (s.operands.size() >= 3 && ParseInt(s.operands[2], &bytes) && bytes > 0) {
        c->global_bytes += static_cast<double>(bytes);
        MarkAddress(AddressBase(s.operands[1]));
      }
      return;
    }
    if (op0 == "call") {
      saw_call = true;
      return;
    }
    const std::string_view t = parts.size() > 1 ? parts.back() : std::string_view();
    const bool packed = t == "f16x2" || t == "bf16x2";
    const bool is_float = t == "f32" || t == "f16" || t == "bf16" || packed;
    const double lanes = packed ? 2 : 1;
    if (op0 == "fma" || (op0 == "mad" && (is_float || t == "f64"))) {
      if (t == "f64")
        c->fp64_flops += 2;
      else if (is_float)
        c->fma_flops += 2 * lanes;
      return;
    }
    if (op0 == "add" || op0 == "sub" || op0 == "mul") {
      if (t == "f64")
        c->fp64_flops += 1;
      else if (is_float)
        c->fma_flops += lanes;
      return;
    }
    if (op0 == "ex2" || op0 == "lg2" || op0 == "rsqrt" || op0 == "sin" || op0 == "cos" ||
        op0 == "tanh" || ((op0 == "rcp" || op0 == "sqrt") && has("approx"))) {
      c->sfu_ops += lanes;
      return;
    }
    if (op0 == "mma" || op0 == "wmma" || op0 == "wgmma") {
      // Shape "m16n8k16": 2*M*N*K FLOPs per warp (per warpgroup of 4 warps for wgmma).
      std::int64_t m = 0, n = 0, k = 0;
      for (std::string_view p : parts) {
        if (p.size() < 6 || p[0] != 'm') continue;
        const std::size_t np = p.find('n'), kp = p.find('k');
        if (np == std::string_view::npos || kp == std::string_view::npos || kp < np) continue;
        if (ParseInt(p.substr(1, np - 1), &m) && ParseInt(p.substr(np + 1, kp - np - 1), &n) &&
            ParseInt(p.substr(kp + 1), &k))
          break;
        m = n = k = 0;
      }
      if (op0 == "wmma" && !has("mma")) {
        // wmma.load.{a,b,c} / wmma.store.d: a fragment of the tile, spread over the warp.
        if (parts.size() < 3 || has("shared")) return;
        const std::string_view matrix = parts[2];
        const std::int64_t elements = matrix == "a" ? m * k : matrix == "b" ? k * n : m * n;
        c->global_bytes += static_cast<double>(elements * type_bytes) / 32;
        const std::size_t addr_at = parts[1] == "store" ? 0 : 1;
        if (addr_at < s.operands.size()) MarkAddress(AddressBase(s.operands[addr_at]));
        return;
      }
      const double threads = op0 == "wgmma" ? 128 : 32;
      c->tensor_flops += 2.0 * static_cast<double>(m * n * k) / threads;
      // The input type: the first of the operand types after the accumulator's (wmma's
      // half-precision form names none).
      if (op0 == "wmma") out.tensor_dtype = DataType::kFloat16;
      for (std::string_view p : parts) {
        DataType d;
        if (p == "bf16")
          d = DataType::kBfloat16;
        else if (p == "f16")
          d = DataType::kFloat16;
        else if (p == "tf32")
          d = DataType::kFloat32;
        else if (p == "e4m3")
          d = DataType::kFloat8e4m3;
        else if (p == "e5m2")
          d = DataType::kFloat8e5m2;
        else if (p == "s8" || p == "u8")
          d = DataType::kInt8;
        else if (p == "f64" && op0 != "wgmma")
          d = DataType::kFloat64;
        else
          continue;
        out.tensor_dtype = d;
        break;
      }
      return;
    }
  }

  // Bulk copies (PTX ISA "cp.async.bulk", "cp.async.bulk.tensor", "cp.reduce.async.bulk")
  // and the transaction bytes an mbarrier is told to expect ("mbarrier.expect_tx",
  // "mbarrier.arrive.expect_tx"): their bytes are values of the code, so they are evaluated
  // per launch; a tensor map's box is not in the code at all.
  void BulkCopy(const PtxStatement& s, const std::vector<std::string_view>& parts, const State& st,
                const PredRef& guard, int block) {
    const std::string_view op0 = parts[0];
    const auto has = [&](std::string_view p) { return HasPart(parts, p); };
    PendingCopy pc;
    pc.block = block;
    pc.copy.guarded = !s.guard.empty();
    pc.copy.guard = guard;
    pc.copy.line = s.line;
    if (op0 == "mbarrier") {
      if (!has("expect_tx") || s.operands.empty()) return;
      pc.kind = CopyKind::kExpectTx;
      pc.copy.bytes = Value(s.operands.back(), st);
    } else {
      const bool reduce = op0 == "cp" && parts.size() > 2 && parts[1] == "reduce";
      if (op0 != "cp" || !has("bulk") || (!reduce && parts[1] != "async")) return;
      // The destination's state space, then the source's; commit_group, wait_group and
      // prefetch.L2 name fewer (a prefetch moves nothing into the SM: the copy that follows
      // counts its bytes).
      std::string_view spaces[2];
      int n = 0;
      for (std::size_t i = 1; i < parts.size() && n < 2; ++i)
        if (parts[i] == "global" || parts[i].starts_with("shared")) spaces[n++] = parts[i];
      if (n < 2 || has("prefetch")) return;
      const bool load = spaces[1] == "global" && spaces[0].starts_with("shared");
      const bool store = spaces[0] == "global" && spaces[1].starts_with("shared");
      if (!load && !store) return;  // shared::cta -> shared::cluster: no global bytes
      pc.copy.times = reduce ? 2 : 1;
      pc.multicast = has("multicast::cluster");
      if (has("tensor")) {
        pc.kind = load ? CopyKind::kTensorLoad : CopyKind::kTensorStore;
      } else {
        // [dst], [src], size, ...
        if (s.operands.size() < 3) return;
        pc.kind = load && has("mbarrier::complete_tx::bytes") ? CopyKind::kBarrierSized
                                                              : CopyKind::kSized;
        pc.copy.bytes = Value(s.operands[2], st);
        MarkAddress(AddressBase(s.operands[load ? 1 : 0]));
      }
    }
    pending_copies.push_back(pc);
  }

  // A scalar integer global load (ld.global.s32 r, [%rd + 8]): a kLoad node of its pointer
  // parameter and byte offset, when the address is a parameter plus arithmetic.
  std::int32_t Load(const PtxStatement& s, const std::vector<std::string_view>& parts,
                    const State& st) {
    if (s.operands.size() < 2) return 0;
    int width = 0;
    bool is_signed = false;
    for (std::size_t i = 1; i < parts.size(); ++i) {
      const std::string_view t = parts[i];
      if (t == "v2" || t == "v4" || t == "v8" || t.starts_with("f") || t == "bf16") return 0;
      if (t.size() >= 2 && (t[0] == 's' || t[0] == 'u' || t[0] == 'b') &&
          std::isdigit(static_cast<unsigned char>(t[1]))) {
        width = TypeBytes(t);
        is_signed = t[0] == 's';
      }
    }
    if (width != 1 && width != 2 && width != 4 && width != 8) return 0;
    // "[%rd21+8]" or "[ %rd21 + 0 ]": a register and a constant displacement.
    std::string_view a = s.operands[1];
    if (a.size() < 3 || a.front() != '[' || a.back() != ']') return 0;
    a = Trim(a.substr(1, a.size() - 2));
    std::size_t end = 0;
    while (end < a.size() && a[end] != '+' && a[end] != '-' && a[end] != ' ') ++end;
    const std::string_view base = a.substr(0, end);
    if (!IsReg(base)) return 0;
    std::int64_t displacement = 0;
    std::string_view rest = Trim(a.substr(end));
    if (!rest.empty()) {
      const bool minus = rest.front() == '-';
      if (rest.front() != '+' && !minus) return 0;
      if (!ParseInt(Trim(rest.substr(1)), &displacement)) return 0;
      if (minus) displacement = -displacement;
    }
    int param = -1;
    std::int32_t offset = 0;
    if (!Decompose(Value(base, st), &param, &offset, 0)) return 0;
    if (displacement != 0) offset = Binary(NodeOp::kAdd, offset, Const(displacement));
    if (offset <= 0 || N(offset).opaque) return 0;
    Node n;
    n.op = NodeOp::kLoad;
    n.opaque = false;
    n.loaded = true;
    n.a = param;
    n.b = offset;
    n.value = width | (is_signed ? kLoadSigned : 0);
    n.loops = N(offset).loops;
    return Add(n);
  }
  // An address node as a pointer parameter plus a byte offset (sums and differences).
  bool Decompose(std::int32_t node, int* param, std::int32_t* offset, int depth) {
    if (node <= 0 || depth > 16) return false;
    const Node n = N(node);
    if (n.opaque || n.loaded) return false;
    if (n.op == NodeOp::kParam) {
      *param = static_cast<int>(n.value);
      *offset = Const(0);
      return true;
    }
    if (n.op != NodeOp::kAdd && n.op != NodeOp::kSub) return false;
    std::int32_t inner = 0;
    if (Decompose(n.a, param, &inner, depth + 1)) {
      *offset = Binary(n.op, inner, n.b);
      return *offset > 0;
    }
    if (n.op == NodeOp::kAdd && Decompose(n.b, param, &inner, depth + 1)) {
      *offset = Binary(NodeOp::kAdd, n.a, inner);
      return *offset > 0;
    }
    return false;
  }

  // The value an instruction gives its first destination (integer and predicate flow only).
  std::int32_t Evaluate(const PtxStatement& s, const std::vector<std::string_view>& parts,
                        const State& st) {
    const std::string_view op0 = parts[0];
    const auto v = [&](std::size_t i) {
      return i < s.operands.size() ? Value(s.operands[i], st) : 0;
    };
    const auto has = [&](std::string_view p) { return HasPart(parts, p); };
    if (op0 == "cvta") return v(1);
    if (op0 == "mov" || op0 == "cvt") {
      for (std::size_t i = 1; i < parts.size(); ++i)
        if (parts[i].starts_with("f") || parts[i] == "bf16") return 0;  // floats
      return v(1);
    }
    if (const int param = ParamLoaded(s, parts); param >= 0) {
      Node n;
      n.op = NodeOp::kParam;
      n.opaque = false;
      n.value = param;
      return Add(n);
    }
    if ((op0 == "ld" || op0 == "ldu") && has("global")) return Load(s, parts, st);
    if (op0 == "add") return Binary(NodeOp::kAdd, v(1), v(2));
    if (op0 == "sub") return Binary(NodeOp::kSub, v(1), v(2));
    if (op0 == "mul" && has("hi")) return Binary(NodeOp::kMulHi, v(1), v(2));
    if (op0 == "mul") return Binary(NodeOp::kMul, v(1), v(2));
    if (op0 == "mad" && !has("hi"))
      return Binary(NodeOp::kAdd, Binary(NodeOp::kMul, v(1), v(2)), v(3));
    if (op0 == "div") return Binary(NodeOp::kDiv, v(1), v(2));
    if (op0 == "rem") return Binary(NodeOp::kRem, v(1), v(2));
    if (op0 == "shl") return Binary(NodeOp::kShl, v(1), v(2));
    if (op0 == "shr") return Binary(NodeOp::kShr, v(1), v(2));
    if (op0 == "min") return Binary(NodeOp::kMin, v(1), v(2));
    if (op0 == "max") return Binary(NodeOp::kMax, v(1), v(2));
    if (op0 == "neg") return Unary(NodeOp::kNeg, v(1));
    if (op0 == "and" && has("pred")) return Binary(NodeOp::kPAnd, v(1), v(2));
    if (op0 == "or" && has("pred")) return Binary(NodeOp::kPOr, v(1), v(2));
    if (op0 == "not" && has("pred")) return Unary(NodeOp::kPNot, v(1));
    if (op0 == "and") return Binary(NodeOp::kAnd, v(1), v(2));
    if (op0 == "or") return Binary(NodeOp::kOr, v(1), v(2));
    if (op0 == "bfe" && (has("u32") || has("u64"))) {  // bfe.u32 d, a, pos, len: a field
      std::int64_t length = 0;
      if (s.operands.size() < 4 || !ParseInt(s.operands[3], &length) || length <= 0 || length > 62)
        return 0;
      return Binary(NodeOp::kAnd, Binary(NodeOp::kShr, v(1), v(2)),
                    Const((std::int64_t{1} << length) - 1));
    }
    if (op0 == "not") return Binary(NodeOp::kSub, Unary(NodeOp::kNeg, v(1)), Const(1));  // ~x
    if (op0 == "setp" && parts.size() >= 3) {
      static constexpr std::pair<std::string_view, Cmp> kCmps[] = {
          {"lt", Cmp::kLt}, {"lo", Cmp::kLt}, {"le", Cmp::kLe}, {"ls", Cmp::kLe}, {"gt", Cmp::kGt},
          {"hi", Cmp::kGt}, {"ge", Cmp::kGe}, {"hs", Cmp::kGe}, {"eq", Cmp::kEq}, {"ne", Cmp::kNe}};
      if (parts.back().starts_with("f")) return 0;  // a float compare: data
      Cmp cmp = Cmp::kLt;
      bool found = false;
      for (const auto& [name, c] : kCmps)
        if (parts[1] == name) cmp = c, found = true;
      if (!found) return 0;
      std::int32_t p = Binary(NodeOp::kCmp, v(1), v(2), cmp);
      if (p > 0 && (cmp == Cmp::kEq || cmp == Cmp::kNe)) {
        Node& n = out.nodes[static_cast<std::size_t>(p)];
        if (const int r = RankOf(n.a); r != 0 && IsUniform(n.b, r < 0, 0))
          n.value = kRankTestA;
        else if (const int q = RankOf(n.b); q != 0 && IsUniform(n.a, q < 0, 0))
          n.value = kRankTestB;
      }
      if (s.operands.size() >= 4) {  // setp.lt.and.s32 p, a, b, q
        std::string_view q = s.operands[3];
        bool negated = false;
        if (!q.empty() && q[0] == '!') negated = true, q.remove_prefix(1);
        std::int32_t qn = Value(q, st);
        if (negated) qn = Unary(NodeOp::kPNot, qn);
        if (has("and"))
          p = Binary(NodeOp::kPAnd, p, qn);
        else if (has("or"))
          p = Binary(NodeOp::kPOr, p, qn);
        else
          p = 0;
      }
      return p;
    }
    return 0;
  }

  // Replaces the variables of the loops an edge leaves by their values after those loops.
  void LeaveLoops(int from, int to, State* st) {
    for (int l = out.blocks[static_cast<std::size_t>(from)].innermost_loop; l >= 0;) {
      const Loop& loop = out.loops[static_cast<std::size_t>(l)];
      if (to >= loop.header && to <= loop.latch) break;
      for (std::size_t k = 0; k < loop.vars.size(); ++k) {
        const auto r = static_cast<std::size_t>(loop.vars[k]);
        if (r >= st->size()) continue;
        const Node& n = N((*st)[r]);
        // The variable itself (a test at the top leaves before the update), or its update (the
        // latch's `i += 1` before its test): either way, after the loop it holds its value
        // after the last trip.
        const bool updated = static_cast<std::size_t>(k) < loop.step.size() && loop.step[k] >= 0 &&
                             (n.loops & (1ull << (l % 64)));
        if ((n.op == NodeOp::kLoopVar && n.a == l) || updated) {
          Node e;
          e.op = NodeOp::kLoopExit;
          e.opaque = false;
          e.a = l;
          e.b = static_cast<std::int32_t>(k);
          e.loops = n.loops;
          (*st)[r] = Add(e);
        }
      }
      l = parent[static_cast<std::size_t>(l)];
    }
  }
  std::vector<int> parent;  // by loop

  struct Incoming {
    int block;
    bool taken;
    State state;
  };
  // The state at a join: a register's value where every edge agrees, else a join node that
  // takes the value of the edge the evaluated thread comes by.
  State Joined(const std::vector<Incoming>& in) {
    if (in.empty()) return State(regs.size(), 0);
    if (in.size() == 1) return in[0].state;
    State st(regs.size(), 0);
    for (std::size_t r = 0; r < st.size(); ++r) {
      const auto at = [&](const Incoming& e) { return r < e.state.size() ? e.state[r] : 0; };
      const std::int32_t first = at(in[0]);
      bool same = true;
      for (const Incoming& e : in) same = same && at(e) == first;
      if (same) {
        st[r] = first;
        continue;
      }
      Node n;
      n.op = NodeOp::kJoin;
      n.opaque = false;
      n.a = static_cast<std::int32_t>(out.joins.size());
      n.b = static_cast<std::int32_t>(in.size());
      for (const Incoming& e : in) {
        out.joins.push_back({e.block, e.taken, at(e)});
        n.loops |= N(at(e)).loops;
      }
      st[r] = Add(n);
    }
    return st;
  }

  void Build();
  // Decomposes `e` into loop variable `var` of loop `l` plus an invariant offset.
  bool AsVarPlusOffset(int l, std::int32_t e, int* var, std::int32_t* offset);
  // Whether `e` is a geometric update of a variable of loop `l`: x >> c, x << c, x / c, x * c
  // with c invariant, or the signed halving nvcc writes for x / 2^c ((x + (x >> 31)) >> c).
  bool AsGeometric(int l, std::int32_t e, int* var, NodeOp* op, std::int32_t* arg);
  // `e` as such an update of a variable plus an invariant offset.
  bool AsGeometricPlusOffset(int l, std::int32_t e, int* var, NodeOp* op, std::int32_t* arg,
                             std::int32_t* offset);
  void FinishCopies();
  void ReadTripFormula(int l);
  void MarkExtents(std::int32_t node, int depth = 0);
};

bool Builder::AsVarPlusOffset(int l, std::int32_t e, int* var, std::int32_t* offset) {
  // e = variable + a sum of invariant terms, through chains of adds and subtracts.
  const std::uint64_t bit = 1ull << (l % 64);
  const Node n = N(e);
  if (n.op == NodeOp::kLoopVar && n.a == l) {
    *var = n.b;
    *offset = Const(0);
    return true;
  }
  if (n.op != NodeOp::kAdd && n.op != NodeOp::kSub) return false;
  const bool a_invariant = !(N(n.a).loops & bit), b_invariant = !(N(n.b).loops & bit);
  std::int32_t inner = 0;
  if (b_invariant && AsVarPlusOffset(l, n.a, var, &inner)) {
    *offset = Binary(n.op, inner, n.b);
    return *offset != 0;
  }
  if (n.op == NodeOp::kAdd && a_invariant && AsVarPlusOffset(l, n.b, var, &inner)) {
    *offset = Binary(NodeOp::kAdd, inner, n.a);
    return *offset != 0;
  }
  return false;
}

bool Builder::AsGeometric(int l, std::int32_t e, int* var, NodeOp* op, std::int32_t* arg) {
  const std::uint64_t bit = 1ull << (l % 64);
  const auto is_var = [&](std::int32_t x) { return N(x).op == NodeOp::kLoopVar && N(x).a == l; };
  const auto invariant = [&](std::int32_t x) { return !N(x).opaque && !(N(x).loops & bit); };
  const Node n = N(e);
  if (n.opaque) return false;
  if (n.op == NodeOp::kShr || n.op == NodeOp::kShl || n.op == NodeOp::kDiv ||
      n.op == NodeOp::kMul) {
    if (is_var(n.a) && invariant(n.b)) {
      *var = N(n.a).b;
      *op = n.op;
      *arg = n.b;
      return true;
    }
    if (n.op == NodeOp::kMul && is_var(n.b) && invariant(n.a)) {
      *var = N(n.b).b;
      *op = n.op;
      *arg = n.a;
      return true;
    }
  }
  // Signed division by 2^c: (x + bias) >> c, the bias a shift of x alone (its sign bits).
  if (n.op == NodeOp::kShr && N(n.b).op == NodeOp::kConst && N(n.b).value >= 1 &&
      N(n.b).value <= 62 && N(n.a).op == NodeOp::kAdd) {
    const Node sum = N(n.a);
    const auto bias_of = [&](std::int32_t x, std::int32_t bias) {
      for (int depth = 0; depth < 3; ++depth) {
        const Node& b = N(bias);
        if (b.op != NodeOp::kShr || N(b.b).op != NodeOp::kConst) return false;
        if (b.a == x) return true;
        bias = b.a;
      }
      return false;
    };
    for (const auto& [x, bias] : {std::pair{sum.a, sum.b}, std::pair{sum.b, sum.a}}) {
      if (is_var(x) && bias_of(x, bias)) {
        *var = N(x).b;
        *op = NodeOp::kDiv;
        *arg = Const(std::int64_t{1} << N(n.b).value);
        return true;
      }
    }
  }
  return false;
}

bool Builder::AsGeometricPlusOffset(int l, std::int32_t e, int* var, NodeOp* op, std::int32_t* arg,
                                    std::int32_t* offset) {
  if (AsGeometric(l, e, var, op, arg)) {
    *offset = Const(0);
    return true;
  }
  const std::uint64_t bit = 1ull << (l % 64);
  const Node n = N(e);
  if (n.op != NodeOp::kAdd && n.op != NodeOp::kSub) return false;
  std::int32_t inner = 0;
  if (!(N(n.b).loops & bit) && AsGeometricPlusOffset(l, n.a, var, op, arg, &inner)) {
    *offset = Binary(n.op, inner, n.b);
    return *offset != 0;
  }
  if (n.op == NodeOp::kAdd && !(N(n.a).loops & bit) &&
      AsGeometricPlusOffset(l, n.b, var, op, arg, &inner)) {
    *offset = Binary(NodeOp::kAdd, inner, n.a);
    return *offset != 0;
  }
  return false;
}

Cmp Mirror(Cmp c) {  // a < b  <=>  b > a
  switch (c) {
    case Cmp::kLt:
      return Cmp::kGt;
    case Cmp::kLe:
      return Cmp::kGe;
    case Cmp::kGt:
      return Cmp::kLt;
    case Cmp::kGe:
      return Cmp::kLe;
    default:
      return c;
  }
}
Cmp Invert(Cmp c) {  // !(a < b)  <=>  a >= b
  switch (c) {
    case Cmp::kLt:
      return Cmp::kGe;
    case Cmp::kLe:
      return Cmp::kGt;
    case Cmp::kGt:
      return Cmp::kLe;
    case Cmp::kGe:
      return Cmp::kLt;
    case Cmp::kEq:
      return Cmp::kNe;
    case Cmp::kNe:
      return Cmp::kEq;
  }
  return c;
}

void Builder::ReadTripFormula(int l) {
  Loop& loop = out.loops[static_cast<std::size_t>(l)];
  const Block& latch = out.blocks[static_cast<std::size_t>(loop.latch)];
  PredRef test;
  bool continue_when_true = true;
  if (latch.end == BlockEnd::kConditionalBranch) {
    test = latch.branch;
    loop.do_while = true;
    continue_when_true = !test.negated;
  } else {
    // A test at the top: the first conditional branch that leaves the loop.
    bool found = false;
    for (int b = loop.header; b <= loop.latch && !found; ++b) {
      const Block& blk = out.blocks[static_cast<std::size_t>(b)];
      if (blk.end == BlockEnd::kConditionalBranch &&
          (blk.target < loop.header || blk.target > loop.latch)) {
        test = blk.branch;
        loop.exit_target = blk.target;
        loop.exit_block = b;
        continue_when_true = test.negated;  // the branch exits when its predicate holds
        found = true;
      }
    }
    if (!found) return;
    loop.do_while = false;
  }
  const Node p = N(test.node);  // a copy: the decomposition below adds nodes
  if (p.op != NodeOp::kCmp || p.opaque) return;
  const std::uint64_t bit = 1ull << (l % 64);
  int var = -1;
  std::int32_t offset = 0;
  Cmp cmp = p.cmp;
  std::int32_t bound = 0;
  NodeOp compare_op = NodeOp::kUnknown;
  std::int32_t compare_arg = 0;
  if (AsVarPlusOffset(l, p.a, &var, &offset) && !(N(p.b).loops & bit)) {
    bound = p.b;
  } else if (AsVarPlusOffset(l, p.b, &var, &offset) && !(N(p.a).loops & bit)) {
    bound = p.a;
    cmp = Mirror(cmp);
  } else if (AsGeometricPlusOffset(l, p.a, &var, &compare_op, &compare_arg, &offset) &&
             !(N(p.b).loops & bit)) {
    bound = p.b;  // (s >> 1) != 0: the next value of a geometric variable
  } else if (AsGeometricPlusOffset(l, p.b, &var, &compare_op, &compare_arg, &offset) &&
             !(N(p.a).loops & bit)) {
    bound = p.a;
    cmp = Mirror(cmp);
  } else {
    return;
  }
  const auto k = static_cast<std::size_t>(var);
  if (k >= loop.step.size() || loop.step[k] < 0) return;
  // A geometric comparison of an induction variable ((i >> 2) < n) is not read.
  if (compare_op != NodeOp::kUnknown && loop.step_op[k] == NodeOp::kAdd) return;
  if (!continue_when_true) cmp = Invert(cmp);
  loop.formula_known = true;
  loop.cmp = cmp;
  loop.var = var;
  loop.compare_op = compare_op;
  loop.compare_arg = compare_arg;
  loop.offset = offset;
  loop.bound = bound;
  MarkExtents(bound);
  MarkExtents(loop.init[k]);
  MarkExtents(loop.step[k]);
  MarkExtents(offset);
  if (compare_op != NodeOp::kUnknown) MarkExtents(compare_arg);
}

void Builder::MarkExtents(std::int32_t node, int depth) {
  if (node <= 0 || depth > 64) return;
  const Node& n = N(node);
  if (n.opaque) return;
  if (n.op == NodeOp::kParam) {
    out.params[static_cast<std::size_t>(n.value)].extent = true;
    return;
  }
  if (n.op == NodeOp::kLoopVar || n.op == NodeOp::kLoopExit) {
    const Loop& loop = out.loops[static_cast<std::size_t>(n.a)];
    if (static_cast<std::size_t>(n.b) < loop.init.size())
      MarkExtents(loop.init[static_cast<std::size_t>(n.b)], depth + 1);
    return;
  }
  // A loaded value is data, not an extent, and neither is what addresses it.
  if (n.op == NodeOp::kConst || n.op == NodeOp::kSpecial || n.op == NodeOp::kLoad) return;
  if (n.op == NodeOp::kJoin) {
    for (std::int32_t i = 0; i < n.b; ++i)
      MarkExtents(out.joins[static_cast<std::size_t>(n.a + i)].value, depth + 1);
    return;
  }
  MarkExtents(n.a, depth + 1);
  if (n.op != NodeOp::kNeg && n.op != NodeOp::kPNot) MarkExtents(n.b, depth + 1);
}

void Builder::Build() {
  out.name = std::string(f.name);
  for (const PtxParam& p : f.params) out.params.push_back({std::string(p.name), p.size});

  // Basic blocks: a label starts one, a branch or a return ends one.
  std::vector<std::pair<int, int>> ranges;  // statement index range per block
  std::unordered_map<std::string_view, int> label_block;
  {
    const int count = static_cast<int>(f.body.size());
    int start = 0;
    for (int i = 0; i < count; ++i) {
      const PtxStatement& s = f.body[static_cast<std::size_t>(i)];
      if (!s.label.empty()) {
        if (i > start) ranges.push_back({start, i});
        start = i;
        label_block[s.label] = static_cast<int>(ranges.size());
        continue;
      }
      if (s.opcode.starts_with("bra") || s.opcode == "ret" || s.opcode == "exit") {
        ranges.push_back({start, i + 1});
        start = i + 1;
      }
    }
    if (start < count) ranges.push_back({start, count});
  }
  if (ranges.empty()) ranges.push_back({0, 0});
  out.blocks.resize(ranges.size());
  for (std::size_t b = 0; b < ranges.size(); ++b) {
    Block& blk = out.blocks[b];
    const auto [first, last] = ranges[b];
    blk.line = first < static_cast<int>(f.body.size())
                   ? f.body[static_cast<std::size_t>(first)].line
                   : f.line;
    if (last > first) {
      const PtxStatement& s = f.body[static_cast<std::size_t>(last - 1)];
      if (s.opcode == "ret" || s.opcode == "exit") {
        blk.end = s.guard.empty() ? BlockEnd::kReturn : BlockEnd::kFallThrough;
      } else if (s.opcode.starts_with("bra") && !s.operands.empty()) {
        const auto it = label_block.find(s.operands[0]);
        if (it != label_block.end()) {
          blk.target = it->second;
          blk.end = s.guard.empty() ? BlockEnd::kBranch : BlockEnd::kConditionalBranch;
        }
      }
    }
  }
  // Loops: a branch back to a block at or before it. Inner loops come later in `loops` than
  // the loops around them when sorted by header then by reverse latch.
  for (std::size_t b = 0; b < out.blocks.size(); ++b) {
    const Block& blk = out.blocks[b];
    if ((blk.end == BlockEnd::kBranch || blk.end == BlockEnd::kConditionalBranch) &&
        blk.target >= 0 && blk.target <= static_cast<int>(b)) {
      auto it = std::find_if(out.loops.begin(), out.loops.end(),
                             [&](const Loop& l) { return l.header == blk.target; });
      if (it == out.loops.end()) {
        Loop l;
        l.header = blk.target;
        l.latch = static_cast<int>(b);
        out.loops.push_back(l);
      } else {
        it->latch = std::max(it->latch, static_cast<int>(b));
      }
    }
  }
  std::sort(out.loops.begin(), out.loops.end(), [](const Loop& a, const Loop& b) {
    return a.header != b.header ? a.header < b.header : a.latch > b.latch;
  });
  // Only properly nested loops are kept (structured code); a loop that overlaps an earlier
  // one partly is dropped and its back edge read as a plain branch.
  {
    std::vector<Loop> kept;
    for (const Loop& l : out.loops) {
      bool ok = true;
      for (const Loop& k : kept)
        if (l.header <= k.latch && l.latch > k.latch && l.header > k.header) ok = false;
      if (ok) kept.push_back(l);
    }
    out.loops = std::move(kept);
  }
  parent.assign(out.loops.size(), -1);
  for (std::size_t l = 0; l < out.loops.size(); ++l) {
    Loop& loop = out.loops[l];
    loop.line = out.blocks[static_cast<std::size_t>(loop.header)].line;
    loop.exit_target = loop.latch + 1;
    for (std::size_t k = l; k-- > 0;) {
      if (out.loops[k].header <= loop.header && out.loops[k].latch >= loop.latch) {
        parent[l] = static_cast<int>(k);
        break;
      }
    }
    out.blocks[static_cast<std::size_t>(loop.header)].header_of = static_cast<int>(l);
    out.blocks[static_cast<std::size_t>(loop.latch)].latch_of = static_cast<int>(l);
    for (int b = loop.header; b <= loop.latch; ++b)
      out.blocks[static_cast<std::size_t>(b)].innermost_loop = static_cast<int>(l);
  }
  // Each loop's variables: the registers written inside it.
  std::vector<int> dests;
  for (Loop& loop : out.loops) {
    std::vector<bool> seen;
    for (int b = loop.header; b <= loop.latch; ++b) {
      for (int i = ranges[static_cast<std::size_t>(b)].first;
           i < ranges[static_cast<std::size_t>(b)].second; ++i) {
        Destinations(f.body[static_cast<std::size_t>(i)], &dests);
        for (int r : dests) {
          if (static_cast<std::size_t>(r) >= seen.size())
            seen.resize(static_cast<std::size_t>(r) + 1);
          if (!seen[static_cast<std::size_t>(r)])
            loop.vars.push_back(r), seen[static_cast<std::size_t>(r)] = true;
        }
      }
    }
    loop.init.assign(loop.vars.size(), 0);
    loop.step.assign(loop.vars.size(), -1);
    loop.step_op.assign(loop.vars.size(), NodeOp::kAdd);
  }

  // One pass in layout order, carrying register values along the edges (in layout order of
  // their sources, the order join nodes try them in).
  std::vector<std::vector<Incoming>> incoming(out.blocks.size() + 1);
  State st;
  bool falls = false;
  for (std::size_t b = 0; b < out.blocks.size(); ++b) {
    Block& blk = out.blocks[b];
    if (falls) incoming[b].push_back({static_cast<int>(b) - 1, false, st});
    std::sort(incoming[b].begin(), incoming[b].end(),
              [](const Incoming& x, const Incoming& y) { return x.block < y.block; });
    st = Joined(incoming[b]);
    incoming[b].clear();
    incoming[b].shrink_to_fit();
    st.resize(regs.size(), 0);
    if (blk.header_of >= 0) {
      const int l = blk.header_of;
      Loop& loop = out.loops[static_cast<std::size_t>(l)];
      for (std::size_t k = 0; k < loop.vars.size(); ++k) {
        const auto r = static_cast<std::size_t>(loop.vars[k]);
        if (r >= st.size()) st.resize(r + 1, 0);
        loop.init[k] = st[r];
        Node n;
        n.op = NodeOp::kLoopVar;
        n.opaque = false;
        n.a = l;
        n.b = static_cast<std::int32_t>(k);
        n.loops = (1ull << (l % 64)) | N(st[r]).loops;
        st[r] = Add(n);
      }
    }
    for (int i = ranges[b].first; i < ranges[b].second; ++i) {
      const PtxStatement& s = f.body[static_cast<std::size_t>(i)];
      if (!s.label.empty()) continue;
      const std::vector<std::string_view> parts = OpcodeParts(s.opcode);
      if (parts.empty()) continue;
      ++out.instruction_count;
      Counts c;
      Count(s, parts, &c);
      PredRef guard;
      if (!s.guard.empty()) {
        guard.node = Value(s.guard, st);
        guard.negated = s.guard_negated;
      }
      const bool is_branch = parts[0] == "bra" || parts[0] == "ret" || parts[0] == "exit";
      if (is_branch && !s.guard.empty() && parts[0] == "bra") blk.branch = guard;
      if (parts[0] == "cp" || parts[0] == "mbarrier")
        BulkCopy(s, parts, st, guard, static_cast<int>(b));
      if (s.guard.empty() || is_branch)
        blk.base.Add(c, 1);
      else
        blk.guarded.push_back({guard, c});
      Destinations(s, &dests);
      if (!dests.empty()) {
        std::int32_t value = Evaluate(s, parts, st);
        // Shared-memory addresses: a symbol moved into a register, a cvta.shared, or
        // arithmetic on one.
        const std::string_view source = s.operands.size() >= 2 ? s.operands[1] : "";
        const bool symbol =
            !source.empty() && (std::isalpha(static_cast<unsigned char>(source[0])) ||
                                source[0] == '_' || source[0] == '$');
        bool shared =
            (parts[0] == "mov" && symbol) || (parts[0] == "cvta" && HasPart(parts, "shared"));
        if ((parts[0] == "add" || parts[0] == "mov") && s.operands.size() >= 2) {
          for (std::size_t o = 1; o < s.operands.size(); ++o) {
            const auto it = regs.find(s.operands[o]);
            if (it != regs.end() && shared_address[static_cast<std::size_t>(it->second)])
              shared = true;
          }
        }
        // Pointer provenance: a parameter loaded, then moved, converted or offset.
        int pointer = ParamLoaded(s, parts);
        if (pointer < 0 && (parts[0] == "add" || parts[0] == "sub" || parts[0] == "mov" ||
                            parts[0] == "cvta" || parts[0] == "mad")) {
          for (std::size_t o = 1; o < s.operands.size() && pointer < 0; ++o) {
            const auto it = regs.find(s.operands[o]);
            if (it != regs.end() && static_cast<std::size_t>(it->second) < pointer_of.size())
              pointer = pointer_of[static_cast<std::size_t>(it->second)];
          }
        }
        for (std::size_t d = 0; d < dests.size(); ++d) {
          const auto r = static_cast<std::size_t>(dests[d]);
          if (r >= pointer_of.size()) pointer_of.resize(r + 1, -1);
          pointer_of[r] = d == 0 ? pointer : -1;
          if (r >= st.size()) st.resize(r + 1, 0);
          // A predicated write keeps the old value on the other path: unknown after it.
          st[r] = d == 0 && s.guard.empty() ? value : 0;
          if (r >= shared_address.size()) shared_address.resize(r + 1, false);
          shared_address[r] = shared;
        }
      }
    }
    // Guards and branches with evaluable predicates make their parameters extents.
    if (blk.end == BlockEnd::kConditionalBranch) MarkExtents(blk.branch.node);
    for (const auto& [g, c] : blk.guarded) MarkExtents(g.node);
    // The edges out of the block.
    falls = blk.end == BlockEnd::kFallThrough || blk.end == BlockEnd::kConditionalBranch;
    if (blk.latch_of >= 0) {
      const int l = blk.latch_of;
      Loop& loop = out.loops[static_cast<std::size_t>(l)];
      for (std::size_t k = 0; k < loop.vars.size(); ++k) {
        const auto r = static_cast<std::size_t>(loop.vars[k]);
        const std::int32_t next = r < st.size() ? st[r] : 0;
        int var = -1;
        std::int32_t step = 0;
        NodeOp op = NodeOp::kAdd;
        if (AsVarPlusOffset(l, next, &var, &step) && var == static_cast<int>(k)) {
          loop.step[k] = step;
        } else if (AsGeometric(l, next, &var, &op, &step) && var == static_cast<int>(k)) {
          loop.step[k] = step;
          loop.step_op[k] = op;
        }
      }
    }
    if ((blk.end == BlockEnd::kBranch || blk.end == BlockEnd::kConditionalBranch) &&
        blk.target > static_cast<int>(b)) {
      State edge = st;
      LeaveLoops(static_cast<int>(b), blk.target, &edge);
      incoming[static_cast<std::size_t>(blk.target)].push_back(
          {static_cast<int>(b), true, std::move(edge)});
    }
    if (falls) LeaveLoops(static_cast<int>(b), static_cast<int>(b) + 1, &st);
  }
  for (std::size_t l = 0; l < out.loops.size(); ++l) {
    ReadTripFormula(static_cast<int>(l));
    Loop& loop = out.loops[l];
    for (int b = loop.header; b <= loop.latch; ++b)
      loop.bytes_per_iteration += out.blocks[static_cast<std::size_t>(b)].base.global_bytes;
    // A formula over values read from memory is no formula.
    const auto opaque = [&](std::int32_t node) { return node <= 0 || N(node).opaque; };
    if (loop.formula_known && (opaque(loop.bound) || opaque(loop.offset) ||
                               opaque(loop.init[static_cast<std::size_t>(loop.var)]) ||
                               opaque(loop.step[static_cast<std::size_t>(loop.var)]) ||
                               (loop.compare_op != NodeOp::kUnknown && opaque(loop.compare_arg))))
      loop.formula_known = false;
    const auto loaded = [&](std::int32_t node) { return node > 0 && N(node).loaded; };
    loop.reads_memory =
        loop.formula_known && (loaded(loop.bound) || loaded(loop.offset) ||
                               loaded(loop.init[static_cast<std::size_t>(loop.var)]) ||
                               loaded(loop.step[static_cast<std::size_t>(loop.var)]) ||
                               (loop.compare_op != NodeOp::kUnknown && loaded(loop.compare_arg)));
    if (!loop.formula_known || loop.reads_memory) ++out.unbounded_loops;
    if (loop.reads_memory)
      out.notes.push_back(fmt::format(
          "loop at PTX line {}: its trip count is read from memory: counted from the values "
          "where the launch's pointers point into known contents (bytes copied from the host), "
          "else bounded by the allocations its loads can reach",
          loop.line));
    else if (!loop.formula_known)
      out.notes.push_back(fmt::format(
          "loop at PTX line {}: its trip count is not an extent of the launch (read from "
          "memory, or not a counted loop): bounded by the allocations its loads can reach",
          loop.line));
  }
  if (saw_call) out.notes.push_back("calls device functions: each call counts one instruction");
  FinishCopies();
}

// Which of the copies read tell the kernel's bytes. A tensor-map load's box is not in the
// code, but the bytes it brings complete a transaction the kernel announced to its mbarrier
// (expect_tx), so where the kernel has such loads its expect_tx counts are its loads' bytes,
// those of explicitly sized copies to the same barriers included; elsewhere the explicit
// sizes are. A tensor-map store, or a tensor-map load with no expect_tx, has no knowable
// size: it is a site of assumed_copies.
void Builder::FinishCopies() {
  bool tensor_loads = false, expect_tx = false, multicast = false;
  for (const PendingCopy& pc : pending_copies) {
    tensor_loads = tensor_loads || pc.kind == CopyKind::kTensorLoad;
    expect_tx = expect_tx || pc.kind == CopyKind::kExpectTx;
    multicast = multicast || (pc.kind == CopyKind::kTensorLoad && pc.multicast);
  }
  const bool by_expect_tx = tensor_loads && expect_tx;
  for (PendingCopy& pc : pending_copies) {
    SizedCopy c = pc.copy;
    switch (pc.kind) {
      case CopyKind::kSized:
        break;
      case CopyKind::kBarrierSized:
        if (by_expect_tx) continue;
        break;
      case CopyKind::kExpectTx:
        if (!by_expect_tx) continue;
        break;
      case CopyKind::kTensorLoad:
        if (by_expect_tx) continue;
        c.bytes = 0;
        out.notes.push_back(fmt::format(
            "bulk tensor load at PTX line {}: no expect_tx tells its bytes (they are in the "
            "tensor map): not counted",
            c.line));
        break;
      case CopyKind::kTensorStore:
        c.bytes = 0;
        out.notes.push_back(fmt::format(
            "bulk tensor store at PTX line {}: its bytes are in the tensor map: not counted",
            c.line));
        break;
    }
    if (c.bytes > 0 && (N(c.bytes).opaque || N(c.bytes).loaded)) c.bytes = 0;
    if (c.bytes == 0 && pc.kind != CopyKind::kTensorLoad && pc.kind != CopyKind::kTensorStore)
      out.notes.push_back(fmt::format(
          "{} at PTX line {}: its bytes are not an extent of the launch (read from memory): "
          "not counted",
          pc.kind == CopyKind::kExpectTx ? "expect_tx" : "bulk copy", c.line));
    if (c.bytes > 0) MarkExtents(c.bytes);
    c.site = out.copy_sites++;
    out.blocks[static_cast<std::size_t>(pc.block)].copies.push_back(c);
  }
  if (multicast && by_expect_tx)
    out.notes.push_back(
        "multicast tensor loads: their bytes count once per block they reach (an upper "
        "bound on what global memory serves)");
  pending_copies.clear();
}

}  // namespace
}  // namespace kernel_code

Result<std::vector<KernelCode>> AnalyzePtx(std::string_view ptx) {
  auto functions = kernel_code::ParsePtx(ptx);
  if (!functions.ok()) return functions.status();
  std::vector<KernelCode> kernels;
  for (const kernel_code::PtxFunction& f : *functions) {
    auto impl = std::make_shared<KernelCode::Impl>();
    kernel_code::Builder builder(f, *impl);
    builder.Build();
    kernels.emplace_back(std::move(impl));
  }
  return kernels;
}

const std::string& KernelCode::name() const { return impl_->name; }
const std::vector<KernelCodeParam>& KernelCode::params() const { return impl_->params; }
int KernelCode::instructions() const { return impl_->instruction_count; }
int KernelCode::loops() const { return static_cast<int>(impl_->loops.size()); }
bool KernelCode::writes_anywhere() const { return impl_->writes_anywhere; }
const std::vector<std::string>& KernelCode::notes() const { return impl_->notes; }

}  // namespace myriad::emulator
