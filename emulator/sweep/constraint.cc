// Sweep constraints: one comparison of arithmetic over the point's settings, e.g.
// "workload.parallel.tp * workload.parallel.pp <= 64" or "cluster.scale_out.routing != \"ecmp\"".
#include <fmt/format.h>

#include <cctype>
#include <cmath>

#include "myriad/emulator/sweep.h"

namespace myriad::emulator {
namespace {

class Parser {
 public:
  Parser(const std::string& text, const std::vector<std::pair<std::string, SweepValue>>& settings)
      : text_(text), settings_(settings) {}

  Result<bool> Parse() {
    Result<SweepValue> left = Sum();
    if (!left.ok()) return left.status();
    Skip();
    static const char* const kOps[] = {"<=", ">=", "==", "!=", "<", ">"};
    std::string op;
    for (const char* candidate : kOps) {
      if (text_.compare(pos_, std::string_view(candidate).size(), candidate) == 0) {
        op = candidate;
        break;
      }
    }
    if (op.empty()) return Error("expected a comparison (<, <=, ==, !=, >=, >)");
    pos_ += op.size();
    Result<SweepValue> right = Sum();
    if (!right.ok()) return right.status();
    Skip();
    if (pos_ != text_.size()) return Error("unexpected text");
    const bool strings =
        left->kind == SweepValue::Kind::kString || right->kind == SweepValue::Kind::kString;
    if (strings) {
      if (left->kind != right->kind) return Error("compares a string with a number");
      if (op == "==") return left->text == right->text;
      if (op == "!=") return left->text != right->text;
      return Error("strings compare with == and != only");
    }
    const double a = left->number, b = right->number;
    if (op == "<") return a < b;
    if (op == "<=") return a <= b;
    if (op == ">") return a > b;
    if (op == ">=") return a >= b;
    if (op == "==") return a == b;
    return a != b;
  }

 private:
  Status Error(const std::string& what) const {
    return Status::InvalidArgument(
        fmt::format("constraint \"{}\": {} at column {}", text_, what, pos_ + 1));
  }
  void Skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  static SweepValue Number(double v) { return {SweepValue::Kind::kFloat, v, {}}; }

  Result<SweepValue> Sum() {
    Result<SweepValue> left = Product();
    if (!left.ok()) return left;
    for (;;) {
      Skip();
      if (pos_ >= text_.size() || (text_[pos_] != '+' && text_[pos_] != '-')) return left;
      const char op = text_[pos_++];
      Result<SweepValue> right = Product();
      if (!right.ok()) return right;
      if (left->kind == SweepValue::Kind::kString || right->kind == SweepValue::Kind::kString)
        return Error("arithmetic on a string");
      left = Number(op == '+' ? left->number + right->number : left->number - right->number);
    }
  }

  Result<SweepValue> Product() {
    Result<SweepValue> left = Unary();
    if (!left.ok()) return left;
    for (;;) {
      Skip();
      if (pos_ >= text_.size() || (text_[pos_] != '*' && text_[pos_] != '/' && text_[pos_] != '%'))
        return left;
      const char op = text_[pos_++];
      Result<SweepValue> right = Unary();
      if (!right.ok()) return right;
      if (left->kind == SweepValue::Kind::kString || right->kind == SweepValue::Kind::kString)
        return Error("arithmetic on a string");
      if (op != '*' && right->number == 0) return Error("division by zero");
      left = Number(op == '*'   ? left->number * right->number
                    : op == '/' ? left->number / right->number
                                : std::fmod(left->number, right->number));
    }
  }

  Result<SweepValue> Unary() {
    Skip();
    if (pos_ < text_.size() && text_[pos_] == '-') {
      ++pos_;
      Result<SweepValue> v = Unary();
      if (!v.ok()) return v;
      if (v->kind == SweepValue::Kind::kString) return Error("arithmetic on a string");
      return Number(-v->number);
    }
    return Primary();
  }

  Result<SweepValue> Primary() {
    Skip();
    if (pos_ >= text_.size()) return Error("expected a value");
    const char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      Result<SweepValue> v = Sum();
      if (!v.ok()) return v;
      Skip();
      if (pos_ >= text_.size() || text_[pos_] != ')') return Error("expected ')'");
      ++pos_;
      return v;
    }
    if (c == '"') {
      const std::size_t end = text_.find('"', pos_ + 1);
      if (end == std::string::npos) return Error("unterminated string");
      SweepValue v{SweepValue::Kind::kString, 0, text_.substr(pos_ + 1, end - pos_ - 1)};
      pos_ = end + 1;
      return v;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      const char* start = text_.c_str() + pos_;
      char* end = nullptr;
      const double v = std::strtod(start, &end);
      if (end == start) return Error("expected a number");
      pos_ += static_cast<std::size_t>(end - start);
      return Number(v);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t start = pos_;
      while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                     text_[pos_] == '_' || text_[pos_] == '.'))
        ++pos_;
      const std::string key = text_.substr(start, pos_ - start);
      if (key == "true" || key == "false") return Number(key == "true" ? 1 : 0);
      for (const auto& [name, value] : settings_)
        if (name == key) return value;
      pos_ = start;
      return Error("'" + key + "' is not an axis of the sweep");
    }
    return Error(fmt::format("unexpected '{}'", c));
  }

  const std::string& text_;
  const std::vector<std::pair<std::string, SweepValue>>& settings_;
  std::size_t pos_ = 0;
};

}  // namespace

Result<bool> EvaluateConstraint(const std::string& constraint,
                                const std::vector<std::pair<std::string, SweepValue>>& settings) {
  return Parser(constraint, settings).Parse();
}

}  // namespace myriad::emulator
