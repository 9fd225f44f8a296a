// TOML reading for scenario files: a position-keeping document tree, deep merge (for
// `include`), and a table reader that type-checks values and rejects unknown keys.
//
// toml++ drops source positions when nodes are copied, and scenario errors must name the
// file, line and column a value came from even after tables from several files are merged,
// so documents are converted into TomlNode trees that carry their own positions.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "myriad/status.h"

namespace myriad::emulator {

// Where something was written: the file as the user named it, 1-based line and column.
struct SourcePos {
  std::string file;
  int line = 0;
  int column = 0;
  std::string ToString() const;  // "file:line:column"
};

struct TomlNode {
  enum class Type { kTable, kArray, kString, kInteger, kFloat, kBoolean, kDate, kTime, kDateTime };
  struct Entry;

  Type type = Type::kTable;
  SourcePos pos;
  std::string string_value;
  std::int64_t integer_value = 0;
  double float_value = 0;
  bool bool_value = false;
  std::vector<Entry> entries;      // tables, in source order
  std::vector<TomlNode> elements;  // arrays

  const Entry* Find(std::string_view key) const;
  Entry* Find(std::string_view key);
};

struct TomlNode::Entry {
  std::string key;
  SourcePos key_pos;
  TomlNode value;
};

// "a string", "an integer", ...: for "expected X, got Y" messages.
std::string_view TypeName(TomlNode::Type type);

// A whole file's bytes; the error message is only the reason ("No such file or directory"),
// for callers to place.
Result<std::string> ReadFileText(const std::string& path);

// Reads and parses one file. Errors: "PATH: cannot open scenario file: <reason>" and
// "PATH:LINE:COLUMN: syntax error: <toml++ description>".
Result<TomlNode> ReadTomlFile(const std::string& path);

// Parses TOML text; `path` is what positions (and errors) name.
Result<TomlNode> ParseToml(std::string_view text, const std::string& path);

// Deep merge: tables merge key by key, recursively; any other value in `top` replaces the one
// in `base`. Merged tables take `top`'s position, since that is the file being read.
void MergeInto(TomlNode& base, TomlNode top);

// The one-line error format of scenario files: "FILE:LINE:COLUMN: KEY.PATH: message".
Status ErrorAt(const SourcePos& pos, std::string_view key_path, std::string_view message);

// Closest allowed key to a misspelled one: Levenshtein distance <= 2, else a prefix match
// either way (3 characters at least); "" when none is close.
std::string_view Suggest(std::string_view key, const std::vector<std::string_view>& allowed);

// A value read from a table, with where it was written.
template <typename T>
struct Field {
  bool present = false;
  T value{};
  SourcePos pos;
  std::string path;  // full key path, e.g. "cluster.scale_up.bandwidth"
  Status Error(std::string_view message) const { return ErrorAt(pos, path, message); }
};

// The error for a string that is none of `names`: "must be \"a\", \"b\" or \"c\", got 'x'".
Status ChoiceError(const Field<std::string>& field, const std::vector<std::string_view>& names);

// A string key that must be one of a few words: sets *out to the matching word's value.
template <typename T>
Status ParseChoice(const Field<std::string>& field,
                   std::initializer_list<std::pair<std::string_view, T>> choices, T* out) {
  std::vector<std::string_view> names;
  for (const auto& [name, value] : choices) {
    if (field.value == name) {
      *out = value;
      return Status::Ok();
    }
    names.push_back(name);
  }
  return ChoiceError(field, names);
}

// Reads the keys of one table. Open() rejects keys outside `allowed` (with a did-you-mean);
// the getters leave a Field absent when the key is, and fail on a value of the wrong type.
class TableReader {
 public:
  // `path` is the table's key path ("" for the document root).
  static Result<TableReader> Open(const TomlNode& table, std::string path,
                                  std::vector<std::string_view> allowed);
  // Without the key check, for reading one key of a table that is checked later.
  static TableReader Unchecked(const TomlNode& table, std::string path) {
    return TableReader(table, std::move(path));
  }

  const SourcePos& pos() const { return table_->pos; }
  const std::string& path() const { return path_; }
  std::string KeyPath(std::string_view key) const;

  Status Integer(std::string_view key, Field<int>* out) const;    // must fit an int
  Status Number(std::string_view key, Field<double>* out) const;  // float or integer, finite
  Status Boolean(std::string_view key, Field<bool>* out) const;
  Status String(std::string_view key, Field<std::string>* out) const;
  // A string holding a quantity, parsed by `parse` (ParseBandwidth, ...); `example` is shown
  // when the value is not a string at all.
  Status Quantity(std::string_view key, Result<double> (*parse)(std::string_view),
                  std::string_view example, Field<double>* out) const;
  // One string or an array of strings.
  Status StringList(std::string_view key, std::vector<Field<std::string>>* out) const;
  // A sub-table, or nullptr when absent.
  Status Table(std::string_view key, const TomlNode** out) const;
  // An array of tables ([[key]] or [{...}, ...]); empty when absent.
  Status TableList(std::string_view key, std::vector<const TomlNode*>* out) const;

  // "FILE:LINE:COLUMN: PATH.key: missing required key", at this table's position.
  Status Missing(std::string_view key, std::string_view what) const;

 private:
  TableReader(const TomlNode& table, std::string path) : table_(&table), path_(std::move(path)) {}
  // The entry for `key`, nullptr when absent, or an error when its type is not `type`.
  Status Lookup(std::string_view key, TomlNode::Type type, std::string_view expected,
                const TomlNode** out) const;

  const TomlNode* table_;
  std::string path_;
};

}  // namespace myriad::emulator
