// A kernel's parameter list from its demangled name. The CUDA shim reads the integer
// parameters of a launch with it (their values travel in WireOp::int_args), and the server's
// kernel models read the same list to know which parameter each value is
// (docs/kernel-timing.md, "PyTorch's kernels"). Header-only and allocation-free: it runs in
// the target process, once per kernel.
#pragma once

#include <cstddef>
#include <string_view>

namespace myriad::wire {

// Integer parameters a launch reports: the first ones of the kernel's signature.
inline constexpr int kMaxIntArgs = 8;
// Parameters looked at: an integer parameter after this many is not reported.
inline constexpr int kMaxParameters = 32;

// Where the integer parameters are in a kernel's parameter list.
struct IntegerParameters {
  int count = 0;
  int index[kMaxIntArgs] = {};  // position in the parameter list
  int size[kMaxIntArgs] = {};   // bytes: 1, 2, 4 or 8
  bool is_signed[kMaxIntArgs] = {};
};

// Where the parameter list of `demangled` opens: the balanced "(...)" that ends the name
// (what comes before it, "(anonymous namespace)" or a lambda's "operator()", is part of the
// function's name); npos when there is none (an extern "C" kernel, a bad name).
inline std::size_t ParameterListOpen(std::string_view demangled) {
  if (demangled.empty() || demangled.back() != ')') return std::string_view::npos;
  int depth = 0;
  for (std::size_t i = demangled.size(); i-- > 0;) {
    if (demangled[i] == ')') ++depth;
    if (demangled[i] == '(' && --depth == 0) return i;
  }
  return std::string_view::npos;
}

// Calls `visit(item)` for each item of a comma-separated list at its top level (commas inside
// <>, (), [] and {} do not split; spaces around an item are trimmed), at most `max` items;
// returns the number visited.
template <typename Visit>
int ForEachTopLevel(std::string_view list, int max, Visit visit) {
  int count = 0;
  int nesting = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= list.size() && count < max; ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '<' || c == '(' || c == '[' || c == '{') ++nesting;
    if (c == '>' || c == ')' || c == ']' || c == '}') --nesting;
    if (c == ',' && nesting == 0) {
      std::string_view item = list.substr(start, i - start);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      visit(item);
      ++count;
      start = i + 1;
    }
  }
  return count;
}

// Calls `visit(type)` for each top-level parameter type of `demangled` ("void f<int>(int,
// float const*)" gives "int" and "float const*"), at most kMaxParameters; returns the number
// visited, or -1 when the name has no parameter list.
template <typename Visit>
int ForEachParameter(std::string_view demangled, Visit visit) {
  const std::size_t open = ParameterListOpen(demangled);
  if (open == std::string_view::npos) return -1;
  const std::string_view list = demangled.substr(open + 1, demangled.size() - open - 2);
  if (list.empty() || list == "void") return 0;
  return ForEachTopLevel(list, kMaxParameters, visit);
}

// Size of an integer type as the demangler spells it; 0 for anything else (pointers,
// references, floating point, classes).
inline int IntegerSize(std::string_view type, bool* is_signed) {
  struct Known {
    std::string_view name;
    int size;
    bool is_signed;
  };
  static constexpr Known kKnown[] = {
      {"int", 4, true},
      {"unsigned int", 4, false},
      {"long", 8, true},
      {"unsigned long", 8, false},
      {"long long", 8, true},
      {"unsigned long long", 8, false},
      {"short", 2, true},
      {"unsigned short", 2, false},
      {"char", 1, true},
      {"signed char", 1, true},
      {"unsigned char", 1, false},
      {"bool", 1, false},
  };
  for (const Known& k : kKnown) {
    if (type == k.name) {
      *is_signed = k.is_signed;
      return k.size;
    }
  }
  return 0;
}

// Where the pointer parameters are (the first kMaxPointerArgs): a launch reports, for each,
// the bytes of the allocation it points into from the pointer on, which bound what the
// kernel can reach through it.
inline constexpr int kMaxPointerArgs = 8;
struct PointerParameters {
  int count = 0;
  int index[kMaxPointerArgs] = {};
};
inline PointerParameters FindPointerParameters(std::string_view demangled) {
  PointerParameters p;
  int index = 0;
  ForEachParameter(demangled, [&](std::string_view type) {
    // "float const*", "__nv_bfloat16*", "float* __restrict__"; not a function pointer.
    if (type.find('*') != std::string_view::npos && type.find('(') == std::string_view::npos &&
        p.count < kMaxPointerArgs)
      p.index[p.count++] = index;
    ++index;
  });
  return p;
}

inline IntegerParameters FindIntegerParameters(std::string_view demangled) {
  IntegerParameters p;
  int index = 0;
  ForEachParameter(demangled, [&](std::string_view type) {
    bool is_signed = false;
    const int size = IntegerSize(type, &is_signed);
    if (size > 0 && p.count < kMaxIntArgs) {
      p.index[p.count] = index;
      p.size[p.count] = size;
      p.is_signed[p.count] = is_signed;
      ++p.count;
    }
    ++index;
  });
  return p;
}

}  // namespace myriad::wire
