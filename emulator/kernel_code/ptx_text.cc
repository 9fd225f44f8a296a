// Splitting PTX into functions and statements (PTX ISA, "Syntax": statements end with ';',
// labels with ':', comments are C and C++ style).
#include "kernel_code/ptx_text.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <string>

namespace myriad::emulator::kernel_code {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Reads the text with comments blanked (kept as spaces, so offsets and lines stay).
std::string WithoutComments(std::string_view text) {
  std::string out(text);
  for (std::size_t i = 0; i + 1 < out.size(); ++i) {
    if (out[i] == '"') {  // a string (.file names): skipped whole
      for (++i; i < out.size() && out[i] != '"' && out[i] != '\n'; ++i) {
      }
      continue;
    }
    if (out[i] == '/' && out[i + 1] == '/') {
      for (; i < out.size() && out[i] != '\n'; ++i) out[i] = ' ';
    } else if (out[i] == '/' && out[i + 1] == '*') {
      for (; i + 1 < out.size() && !(out[i] == '*' && out[i + 1] == '/'); ++i)
        if (out[i] != '\n') out[i] = ' ';
      if (i + 1 < out.size()) out[i] = out[i + 1] = ' ';
    }
  }
  return out;
}

// Splits at commas outside [], {} and ().
std::vector<std::string_view> SplitOperands(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    const char c = i < s.size() ? s[i] : ',';
    if (c == '[' || c == '{' || c == '(') ++depth;
    if (c == ']' || c == '}' || c == ')') --depth;
    if (c == ',' && depth <= 0) {
      const std::string_view item = Trim(s.substr(start, i - start));
      if (!item.empty()) out.push_back(item);
      start = i + 1;
    }
  }
  return out;
}

// ".param .u32 name" / ".param .align 8 .b8 name[24]" / ".param .u64 .ptr .global .align 1 n"
bool ParseParam(std::string_view decl, PtxParam* param) {
  decl = Trim(decl);
  if (!decl.starts_with(".param")) return false;
  int type_size = 0;
  std::string_view last;
  std::size_t i = 0;
  while (i < decl.size()) {
    while (i < decl.size() && IsSpace(decl[i])) ++i;
    std::size_t j = i;
    while (j < decl.size() && !IsSpace(decl[j])) ++j;
    const std::string_view word = decl.substr(i, j - i);
    if (word.size() >= 3 && word[0] == '.' &&
        (word[1] == 'u' || word[1] == 's' || word[1] == 'b' || word[1] == 'f')) {
      int bits = 0;
      if (std::from_chars(word.data() + 2, word.data() + word.size(), bits).ec == std::errc() &&
          bits > 0)
        type_size = bits / 8;
    }
    if (!word.empty()) last = word;
    i = j;
  }
  if (last.empty() || last[0] == '.') return false;
  int count = 1;
  if (const std::size_t bracket = last.find('['); bracket != std::string_view::npos) {
    const std::string_view n = last.substr(bracket + 1, last.size() - bracket - 2);
    if (std::from_chars(n.data(), n.data() + n.size(), count).ec != std::errc()) count = 1;
    last = last.substr(0, bracket);
  }
  param->name = last;
  param->size = type_size * count;
  return true;
}

int LineAt(std::string_view text, std::size_t offset, std::size_t* from, int* line) {
  for (; *from < offset && *from < text.size(); ++*from)
    if (text[*from] == '\n') ++*line;
  return *line;
}

}  // namespace

std::vector<std::string_view> OpcodeParts(std::string_view opcode) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= opcode.size(); ++i) {
    if (i == opcode.size() || opcode[i] == '.') {
      if (i > start) parts.push_back(opcode.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

Result<std::vector<PtxFunction>> ParsePtx(std::string_view original) {
  // The functions keep views into `text`, which lives as long as the caller's copy: comments
  // are blanked in place of a copy only for finding statements, so the views point into
  // `original` at the same offsets.
  const std::string text = WithoutComments(original);
  if (text.find(".version") == std::string::npos)
    return Status::InvalidArgument("not PTX: no .version directive");
  std::vector<PtxFunction> functions;
  std::size_t line_from = 0;
  int line = 1;
  for (std::size_t at = 0; (at = text.find(".entry", at)) != std::string::npos;) {
    const std::size_t name_start = text.find_first_not_of(" \t\r\n", at + 6);
    if (name_start == std::string::npos) break;
    std::size_t name_end = name_start;
    while (name_end < text.size() && !IsSpace(text[name_end]) && text[name_end] != '(' &&
           text[name_end] != '{')
      ++name_end;
    PtxFunction f;
    f.name = original.substr(name_start, name_end - name_start);
    f.line = LineAt(text, at, &line_from, &line);
    std::size_t open = text.find_first_of("({;", name_end);
    if (open == std::string::npos || text[open] == ';') {  // a declaration without a body
      at = name_end;
      continue;
    }
    if (text[open] == '(') {
      const std::size_t close = text.find(')', open);
      if (close == std::string::npos)
        return Status::InvalidArgument(
            fmt::format("line {}: .entry {}: unclosed parameter list", f.line, f.name));
      for (std::string_view decl :
           SplitOperands(std::string_view(original).substr(open + 1, close - open - 1))) {
        PtxParam p;
        if (ParseParam(decl, &p)) f.params.push_back(p);
      }
      open = text.find_first_of("{;", close);
      if (open == std::string::npos || text[open] == ';') {
        at = close;
        continue;
      }
    }
    // The body: braces nest (scoped register blocks); statements end with ';'.
    int depth = 0;
    std::size_t i = open;
    std::size_t statement = open;
    bool closed = false;
    int operand_braces = 0;  // {%r1, %r2} vector operands inside a statement
    for (; i < text.size(); ++i) {
      const char c = text[i];
      // `.loc` and `.file` end at the line's end, not at a ';' (Triton puts a `.loc` before
      // nearly every instruction): the statement after one starts on the next line.
      if (c == '\n') {
        const std::string_view pending =
            Trim(std::string_view(text).substr(statement, i - statement));
        if (pending.starts_with(".loc") || pending.starts_with(".file")) statement = i + 1;
        continue;
      }
      if (c == '{' || c == '}') {
        // A brace that opens a statement is a scope; one after an opcode, an operand's.
        const bool opens_statement =
            Trim(std::string_view(text).substr(statement, i - statement)).empty();
        if (c == '{' && !opens_statement) {
          ++operand_braces;
          continue;
        }
        if (c == '}' && operand_braces > 0) {
          --operand_braces;
          continue;
        }
        depth += c == '{' ? 1 : -1;
        statement = i + 1;
        if (depth == 0) {
          closed = true;
          break;
        }
        continue;
      }
      // A label, if what precedes is one identifier (no '.': not the opcode of
      // `cp.async.bulk.shared::cluster...`, whose state spaces hold "::").
      if (c == ':' && statement <= i && (i + 1 >= text.size() || text[i + 1] != ':')) {
        const std::string_view word = Trim(std::string_view(text).substr(statement, i - statement));
        if (!word.empty() && word.find_first_of(" \t\r\n,[.") == std::string_view::npos &&
            word[0] != '@') {
          PtxStatement s;
          s.line =
              LineAt(text, static_cast<std::size_t>(word.data() - text.data()), &line_from, &line);
          s.label =
              original.substr(static_cast<std::size_t>(word.data() - text.data()), word.size());
          f.body.push_back(s);
          statement = i + 1;
        }
        continue;
      }
      if (c != ';') continue;
      operand_braces = 0;
      std::string_view s = Trim(std::string_view(text).substr(statement, i - statement));
      const std::size_t s_offset = static_cast<std::size_t>(s.data() - text.data());
      statement = i + 1;
      if (s.empty() || s[0] == '.') continue;  // .reg, .shared, .local, .pragma, .loc
      s = original.substr(s_offset, s.size());
      PtxStatement st;
      st.line = LineAt(text, s_offset, &line_from, &line);
      if (s[0] == '@') {
        std::size_t g = 1;
        if (g < s.size() && s[g] == '!') {
          st.guard_negated = true;
          ++g;
        }
        std::size_t e = g;
        while (e < s.size() && !IsSpace(s[e])) ++e;
        st.guard = s.substr(g, e - g);
        s = Trim(s.substr(e));
      }
      std::size_t e = 0;
      while (e < s.size() && !IsSpace(s[e])) ++e;
      st.opcode = s.substr(0, e);
      st.operands = SplitOperands(s.substr(e));
      f.body.push_back(std::move(st));
    }
    if (!closed)
      return Status::InvalidArgument(
          fmt::format("line {}: .entry {}: the body does not close", f.line, f.name));
    functions.push_back(std::move(f));
    at = i;
  }
  return functions;
}

}  // namespace myriad::emulator::kernel_code
