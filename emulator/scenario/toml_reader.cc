#include "scenario/toml_reader.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <system_error>
#include <utility>

#include "myriad/emulator/did_you_mean.h"
#include "myriad/emulator/units.h"

namespace myriad::emulator {

Status ChoiceError(const Field<std::string>& field, const std::vector<std::string_view>& names) {
  std::string list;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) list += i + 1 == names.size() ? " or " : ", ";
    list += fmt::format("\"{}\"", names[i]);
  }
  return field.Error(fmt::format("must be {}, got '{}'", list, field.value));
}

namespace {

SourcePos PosOf(const toml::source_region& region, const std::string& file) {
  return {file, static_cast<int>(region.begin.line), static_cast<int>(region.begin.column)};
}

bool Before(const SourcePos& a, const SourcePos& b) {
  return std::pair(a.line, a.column) < std::pair(b.line, b.column);
}

TomlNode Convert(const toml::node& node, const std::string& file) {
  TomlNode out;
  out.pos = PosOf(node.source(), file);
  switch (node.type()) {
    case toml::node_type::table:
      out.type = TomlNode::Type::kTable;
      for (auto&& [key, value] : *node.as_table()) {
        out.entries.push_back(
            {std::string(key.str()), PosOf(key.source(), file), Convert(value, file)});
      }
      // toml++ keeps keys sorted by name; errors and provenance read better in file order.
      std::stable_sort(out.entries.begin(), out.entries.end(),
                       [](const TomlNode::Entry& a, const TomlNode::Entry& b) {
                         return Before(a.key_pos, b.key_pos);
                       });
      break;
    case toml::node_type::array:
      out.type = TomlNode::Type::kArray;
      for (const toml::node& element : *node.as_array()) {
        out.elements.push_back(Convert(element, file));
      }
      break;
    case toml::node_type::string:
      out.type = TomlNode::Type::kString;
      out.string_value = node.as_string()->get();
      break;
    case toml::node_type::integer:
      out.type = TomlNode::Type::kInteger;
      out.integer_value = node.as_integer()->get();
      break;
    case toml::node_type::floating_point:
      out.type = TomlNode::Type::kFloat;
      out.float_value = node.as_floating_point()->get();
      break;
    case toml::node_type::boolean:
      out.type = TomlNode::Type::kBoolean;
      out.bool_value = node.as_boolean()->get();
      break;
    case toml::node_type::date:
      out.type = TomlNode::Type::kDate;
      break;
    case toml::node_type::time:
      out.type = TomlNode::Type::kTime;
      break;
    case toml::node_type::date_time:
      out.type = TomlNode::Type::kDateTime;
      break;
    case toml::node_type::none:
      break;
  }
  return out;
}

Status SyntaxError(const toml::parse_error& error, const std::string& path) {
  std::string description(error.description());
  std::replace(description.begin(), description.end(), '\n', ' ');  // errors are one line
  return Status::InvalidArgument(
      fmt::format("{}: syntax error: {}", PosOf(error.source(), path).ToString(), description));
}

}  // namespace

std::string SourcePos::ToString() const { return fmt::format("{}:{}:{}", file, line, column); }

const TomlNode::Entry* TomlNode::Find(std::string_view key) const {
  for (const Entry& entry : entries) {
    if (entry.key == key) return &entry;
  }
  return nullptr;
}

TomlNode::Entry* TomlNode::Find(std::string_view key) {
  for (Entry& entry : entries) {
    if (entry.key == key) return &entry;
  }
  return nullptr;
}

std::string_view TypeName(TomlNode::Type type) {
  switch (type) {
    case TomlNode::Type::kTable:
      return "a table";
    case TomlNode::Type::kArray:
      return "an array";
    case TomlNode::Type::kString:
      return "a string";
    case TomlNode::Type::kInteger:
      return "an integer";
    case TomlNode::Type::kFloat:
      return "a float";
    case TomlNode::Type::kBoolean:
      return "a boolean";
    case TomlNode::Type::kDate:
      return "a date";
    case TomlNode::Type::kTime:
      return "a time";
    case TomlNode::Type::kDateTime:
      return "a date-time";
  }
  return "a value";
}

Result<std::string> ReadFileText(const std::string& path) {
  // Look before opening: opening a FIFO for reading blocks until something writes it, and
  // /dev/zero never ends; scenarios are a few KB, so 16 MiB is none (the message follows
  // "cannot open scenario file: "). A directory fails below, on its first read.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    if (!S_ISREG(st.st_mode))
      return Status::InvalidArgument("not a regular file (a FIFO, device or socket)");
    if (st.st_size > (std::int64_t{16} << 20))
      return Status::InvalidArgument(
          fmt::format("{} bytes, more than a scenario file may be (16 MiB)", st.st_size));
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
  auto failure = [](int error) { return Status::NotFound(std::generic_category().message(error)); };
  if (!file) return failure(errno);
  std::string text;
  char buffer[16384];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, file.get())) > 0) text.append(buffer, n);
  // A directory opens fine and fails on the first read (EISDIR).
  if (std::ferror(file.get())) return failure(errno);
  return text;
}

Result<TomlNode> ReadTomlFile(const std::string& path) {
  Result<std::string> text = ReadFileText(path);
  if (!text.ok()) {
    return Status::NotFound(
        fmt::format("{}: cannot open scenario file: {}", path, text.status().message()));
  }
  return ParseToml(*text, path);
}

Result<TomlNode> ParseToml(std::string_view text, const std::string& path) {
  toml::table table;
#if TOML_EXCEPTIONS
  try {
    table = toml::parse(text, std::string_view(path));
  } catch (const toml::parse_error& error) {
    return SyntaxError(error, path);
  }
#else
  toml::parse_result parsed = toml::parse(text, std::string_view(path));
  if (!parsed) return SyntaxError(parsed.error(), path);
  table = std::move(parsed).table();
#endif
  TomlNode root = Convert(table, path);
  // toml++ places the root table nowhere; errors about it point at the top of the file.
  root.pos = {path, 1, 1};
  return root;
}

void MergeInto(TomlNode& base, TomlNode top) {
  if (base.type != TomlNode::Type::kTable || top.type != TomlNode::Type::kTable) {
    base = std::move(top);
    return;
  }
  base.pos = std::move(top.pos);
  for (TomlNode::Entry& entry : top.entries) {
    TomlNode::Entry* existing = base.Find(entry.key);
    if (existing == nullptr) {
      base.entries.push_back(std::move(entry));
      continue;
    }
    existing->key_pos = std::move(entry.key_pos);
    MergeInto(existing->value, std::move(entry.value));
  }
}

Status ErrorAt(const SourcePos& pos, std::string_view key_path, std::string_view message) {
  const std::string line = key_path.empty()
                               ? fmt::format("{}: {}", pos.ToString(), message)
                               : fmt::format("{}: {}: {}", pos.ToString(), key_path, message);
  // Values and quoted keys may hold line breaks; the error must stay one line.
  std::string escaped;
  for (char c : line) {
    if (c == '\n') {
      escaped += "\\n";
    } else if (c == '\r') {
      escaped += "\\r";
    } else {
      escaped += c;
    }
  }
  return Status::InvalidArgument(std::move(escaped));
}

std::string_view Suggest(std::string_view key, const std::vector<std::string_view>& allowed) {
  return ClosestMatch(key, allowed);
}

Result<TableReader> TableReader::Open(const TomlNode& table, std::string path,
                                      std::vector<std::string_view> allowed) {
  TableReader reader(table, std::move(path));
  for (const TomlNode::Entry& entry : table.entries) {
    if (std::find(allowed.begin(), allowed.end(), entry.key) != allowed.end()) continue;
    const std::string_view suggestion = Suggest(entry.key, allowed);
    std::string message;
    if (!suggestion.empty()) {
      message = fmt::format("unknown key (did you mean '{}'?)", suggestion);
    } else {
      message = fmt::format("unknown key (expected one of: {})", fmt::join(allowed, ", "));
    }
    return ErrorAt(entry.key_pos, reader.KeyPath(entry.key), message);
  }
  return reader;
}

std::string TableReader::KeyPath(std::string_view key) const {
  return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
}

Status TableReader::Lookup(std::string_view key, TomlNode::Type type, std::string_view expected,
                           const TomlNode** out) const {
  *out = nullptr;
  const TomlNode::Entry* entry = table_->Find(key);
  if (entry == nullptr) return Status::Ok();
  if (entry->value.type != type) {
    return ErrorAt(entry->value.pos, KeyPath(key),
                   fmt::format("expected {}, got {}", expected, TypeName(entry->value.type)));
  }
  *out = &entry->value;
  return Status::Ok();
}

namespace {

template <typename T>
void Fill(const TableReader& reader, std::string_view key, const TomlNode& node, T value,
          Field<T>* out) {
  out->present = true;
  out->value = std::move(value);
  out->pos = node.pos;
  out->path = reader.KeyPath(key);
}

}  // namespace

Status TableReader::Integer(std::string_view key, Field<int>* out) const {
  const TomlNode* node;
  if (Status s = Lookup(key, TomlNode::Type::kInteger, "an integer", &node); !s.ok()) return s;
  if (node == nullptr) return Status::Ok();
  if (node->integer_value > std::numeric_limits<int>::max() ||
      node->integer_value < std::numeric_limits<int>::min()) {
    return ErrorAt(node->pos, KeyPath(key),
                   fmt::format("integer out of range, got {}", node->integer_value));
  }
  Fill(*this, key, *node, static_cast<int>(node->integer_value), out);
  return Status::Ok();
}

Status TableReader::Number(std::string_view key, Field<double>* out) const {
  const TomlNode::Entry* entry = table_->Find(key);
  if (entry == nullptr) return Status::Ok();
  const TomlNode& node = entry->value;
  if (node.type == TomlNode::Type::kInteger) {
    // `oversubscription = 2` is as natural as `2.0`.
    Fill(*this, key, node, static_cast<double>(node.integer_value), out);
    return Status::Ok();
  }
  if (node.type != TomlNode::Type::kFloat) {
    return ErrorAt(node.pos, KeyPath(key),
                   fmt::format("expected a number, got {}", TypeName(node.type)));
  }
  if (!std::isfinite(node.float_value)) {
    return ErrorAt(node.pos, KeyPath(key), "expected a finite number");
  }
  Fill(*this, key, node, node.float_value, out);
  return Status::Ok();
}

Status TableReader::Boolean(std::string_view key, Field<bool>* out) const {
  const TomlNode* node;
  if (Status s = Lookup(key, TomlNode::Type::kBoolean, "a boolean (true or false)", &node);
      !s.ok()) {
    return s;
  }
  if (node != nullptr) Fill(*this, key, *node, node->bool_value, out);
  return Status::Ok();
}

Status TableReader::String(std::string_view key, Field<std::string>* out) const {
  const TomlNode* node;
  if (Status s = Lookup(key, TomlNode::Type::kString, "a string", &node); !s.ok()) return s;
  if (node != nullptr) Fill(*this, key, *node, node->string_value, out);
  return Status::Ok();
}

namespace {

// What a hardware figure may be (docs/scenarios.md, "Bounds"): wide enough for any GPU, link or
// switch built or planned, narrow enough that a typo ("1bps", "99999999999999999999TiB",
// "100000000s") is refused instead of timing nonsense.
struct QuantityBounds {
  Result<double> (*parse)(std::string_view);
  const char* what;
  double low, high;
  const char* low_text;
  const char* high_text;
};
constexpr QuantityBounds kQuantityBounds[] = {
    {ParseBandwidth, "bandwidth", 1e6, 1e15, "1MB/s", "1000TB/s"},
    {ParseBytes, "memory size", 1048576.0, 1125899906842624.0, "1MiB", "1024TiB"},
    {ParseDuration, "latency", 0, 1, "0s", "1s"},
    {ParseFlops, "compute rate", 1e9, 1e19, "1GFLOPS", "10000PFLOPS"},
};
const QuantityBounds* BoundsOf(Result<double> (*parse)(std::string_view)) {
  for (const QuantityBounds& b : kQuantityBounds)
    if (b.parse == parse) return &b;
  return nullptr;
}

}  // namespace

Status TableReader::Quantity(std::string_view key, Result<double> (*parse)(std::string_view),
                             std::string_view example, Field<double>* out) const {
  const TomlNode* node;
  const std::string expected = fmt::format("a string such as \"{}\"", example);
  if (Status s = Lookup(key, TomlNode::Type::kString, expected, &node); !s.ok()) return s;
  if (node == nullptr) return Status::Ok();
  Result<double> value = parse(node->string_value);
  if (!value.ok()) return ErrorAt(node->pos, KeyPath(key), value.status().message());
  if (const QuantityBounds* bounds = BoundsOf(parse);
      bounds != nullptr && !(*value >= bounds->low && *value <= bounds->high))
    return ErrorAt(
        node->pos, KeyPath(key),
        fmt::format("'{}' is out of range: a {} must be within {} to {}", node->string_value,
                    bounds->what, bounds->low_text, bounds->high_text));
  Fill(*this, key, *node, *value, out);
  return Status::Ok();
}

Status TableReader::StringList(std::string_view key, std::vector<Field<std::string>>* out) const {
  out->clear();
  const TomlNode::Entry* entry = table_->Find(key);
  if (entry == nullptr) return Status::Ok();
  const TomlNode& node = entry->value;
  if (node.type == TomlNode::Type::kString) {
    out->emplace_back();
    Fill(*this, key, node, node.string_value, &out->back());
    return Status::Ok();
  }
  if (node.type != TomlNode::Type::kArray) {
    return ErrorAt(
        node.pos, KeyPath(key),
        fmt::format("expected a string or an array of strings, got {}", TypeName(node.type)));
  }
  for (const TomlNode& element : node.elements) {
    if (element.type != TomlNode::Type::kString) {
      return ErrorAt(element.pos, KeyPath(key),
                     fmt::format("expected a string, got {}", TypeName(element.type)));
    }
    out->emplace_back();
    Fill(*this, key, element, element.string_value, &out->back());
  }
  return Status::Ok();
}

Status TableReader::Table(std::string_view key, const TomlNode** out) const {
  return Lookup(key, TomlNode::Type::kTable, "a table", out);
}

Status TableReader::TableList(std::string_view key, std::vector<const TomlNode*>* out) const {
  out->clear();
  const TomlNode* array = nullptr;
  MYRIAD_RETURN_IF_ERROR(Lookup(key, TomlNode::Type::kArray, "an array of tables", &array));
  if (array == nullptr) return Status::Ok();
  for (const TomlNode& element : array->elements) {
    if (element.type != TomlNode::Type::kTable)
      return ErrorAt(element.pos, KeyPath(key),
                     fmt::format("expected a table, got {}", TypeName(element.type)));
    out->push_back(&element);
  }
  return Status::Ok();
}

Status TableReader::Missing(std::string_view key, std::string_view what) const {
  return ErrorAt(pos(), KeyPath(key), fmt::format("missing required key ({})", what));
}

}  // namespace myriad::emulator
