// PTX text split into functions, statements and operands: what the analysis reads. Views into
// the module's text, which must outlive them.
#pragma once

#include <string_view>
#include <vector>

#include "myriad/status.h"

namespace myriad::emulator::kernel_code {

struct PtxParam {
  std::string_view name;
  int size = 0;  // bytes (.u32: 4, .align 8 .b8 x[24]: 24)
};

// One statement of a function body: a label ("$L__BB0_2") or an instruction.
struct PtxStatement {
  int line = 0;
  std::string_view label;  // set for a label; then the rest is empty
  std::string_view guard;  // "%p1" for "@%p1 ..." or "@!%p1 ..." (guard_negated)
  bool guard_negated = false;
  std::string_view opcode;                 // "ld.global.v4.f32"
  std::vector<std::string_view> operands;  // top-level comma-separated, trimmed
};

struct PtxFunction {
  std::string_view name;
  int line = 0;
  std::vector<PtxParam> params;
  std::vector<PtxStatement> body;
};

// The .entry functions of a module (device functions, .func, are skipped: calls to them count
// as one instruction). Fails on text without a .version directive or an unclosed body.
Result<std::vector<PtxFunction>> ParsePtx(std::string_view ptx);

// "ld.global.v4.f32" -> {"ld", "global", "v4", "f32"}.
std::vector<std::string_view> OpcodeParts(std::string_view opcode);

}  // namespace myriad::emulator::kernel_code
