// Status and Result<T>: the error value passed across module edges (LevelDB style).
// It lives in netmodel because netmodel is the leaf of Myriad's dependency graph.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace myriad {

class Status {
 public:
  enum class Code { kOk, kInvalidArgument, kNotFound, kUnsupported, kInternal };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) {
    return {Code::kInvalidArgument, std::move(msg)};
  }
  static Status NotFound(std::string msg) { return {Code::kNotFound, std::move(msg)}; }
  static Status Unsupported(std::string msg) { return {Code::kUnsupported, std::move(msg)}; }
  static Status Internal(std::string msg) { return {Code::kInternal, std::move(msg)}; }
  // A report of several lines (a deadlock: who waits for what): the first says what went
  // wrong, the others add detail; each is one line of printable text, as any message is.
  static Status InvalidArgumentLines(const std::vector<std::string>& lines) {
    std::string msg;
    for (const std::string& line : lines) msg += (msg.empty() ? "" : "\n") + OneLine(line);
    Status st(Code::kInvalidArgument, "");
    st.message_ = std::move(msg);
    return st;
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  // One line of printable text: a line break, a terminal escape or any other control
  // character that an input put into a message is shown escaped (\n, \t, \x1b).
  const std::string& message() const { return message_; }

 private:
  Status(Code code, std::string msg) : code_(code), message_(OneLine(std::move(msg))) {}
  static std::string OneLine(std::string msg) {
    const auto control = [](unsigned char c) { return c < 0x20 || c == 0x7f; };
    bool any = false;
    for (unsigned char c : msg) any = any || control(c);
    if (!any) return msg;
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : msg) {
      if (!control(c)) {
        out += static_cast<char>(c);
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c == '\r') {
        out += "\\r";
      } else {
        out += "\\x";
        out += kHex[c >> 4];
        out += kHex[c & 15];
      }
    }
    return out;
  }
  Code code_ = Code::kOk;
  std::string message_;
};

// A value or the Status that explains why there is none.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T& operator*() const { return *value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace myriad

// Passes a failed Status straight up to the caller; keeps chains of checks readable.
#define MYRIAD_RETURN_IF_ERROR(expr)                                      \
  do {                                                                    \
    if (::myriad::Status status_ = (expr); !status_.ok()) return status_; \
  } while (0)
