// Nsight Systems SQLite exports: the kernels of CUPTI_ACTIVITY_KIND_KERNEL, their names from
// StringIds (docs/kernel-timing.md, "Importing a profile").
#include <fmt/format.h>
#include <sqlite3.h>

#include <memory>

#include "profiling/trace_reading.h"

namespace myriad::emulator::profiling {
namespace {

struct Closer {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Database = std::unique_ptr<sqlite3, Closer>;
using Statement = std::unique_ptr<sqlite3_stmt, Closer>;

bool HasTable(sqlite3* db, const char* table) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", -1, &raw,
                         nullptr) != SQLITE_OK)
    return false;
  Statement s(raw);
  sqlite3_bind_text(raw, 1, table, -1, SQLITE_STATIC);
  return sqlite3_step(raw) == SQLITE_ROW;
}

std::uint32_t Dimension(sqlite3_stmt* s, int column) {
  const sqlite3_int64 v = sqlite3_column_int64(s, column);
  return v < 1 ? 1 : v > 0xffffffffLL ? 0xffffffffu : static_cast<std::uint32_t>(v);
}

}  // namespace

Result<TraceRead> ReadNsight(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  Database db(raw);
  if (rc != SQLITE_OK)
    return Status::InvalidArgument(fmt::format("{}: cannot open as SQLite: {}", path,
                                               raw ? sqlite3_errmsg(raw) : "no memory"));
  if (!HasTable(raw, "CUPTI_ACTIVITY_KIND_KERNEL") || !HasTable(raw, "StringIds"))
    return Status::InvalidArgument(fmt::format(
        "{}: no CUPTI_ACTIVITY_KIND_KERNEL and StringIds tables: not an Nsight Systems SQLite "
        "export of a run with CUDA traced (nsys profile -t cuda; nsys export --type sqlite)",
        path));
  TraceRead read;
  read.format = "nsight";
  if (HasTable(raw, "TARGET_INFO_GPU")) {
    sqlite3_stmt* g = nullptr;
    if (sqlite3_prepare_v2(raw, "SELECT name FROM TARGET_INFO_GPU ORDER BY id LIMIT 1", -1, &g,
                           nullptr) == SQLITE_OK) {
      Statement gpu(g);
      if (sqlite3_step(g) == SQLITE_ROW && sqlite3_column_text(g, 0) != nullptr)
        read.device_name = reinterpret_cast<const char*>(sqlite3_column_text(g, 0));
    }
  }
  // demangledName where the export has it, else shortName; `end - start` in ns.
  const char* query =
      "SELECT k.start, k.end, k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ, "
      "k.dynamicSharedMemory, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
      "JOIN StringIds AS s ON s.id = k.demangledName ORDER BY k.start, k.rowid";
  sqlite3_stmt* q = nullptr;
  if (sqlite3_prepare_v2(raw, query, -1, &q, nullptr) != SQLITE_OK) {
    const std::string first = sqlite3_errmsg(raw);
    query =
        "SELECT k.start, k.end, k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ, "
        "k.dynamicSharedMemory, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
        "JOIN StringIds AS s ON s.id = k.shortName ORDER BY k.start, k.rowid";
    if (sqlite3_prepare_v2(raw, query, -1, &q, nullptr) != SQLITE_OK)
      return Status::InvalidArgument(fmt::format(
          "{}: CUPTI_ACTIVITY_KIND_KERNEL lacks the columns Myriad reads ({})", path, first));
  }
  Statement kernels(q);
  int step = SQLITE_ROW;
  while ((step = sqlite3_step(q)) == SQLITE_ROW) {
    KernelRecord r;
    const sqlite3_int64 start = sqlite3_column_int64(q, 0), end = sqlite3_column_int64(q, 1);
    if (end < start)
      return Status::InvalidArgument(
          fmt::format("{}: a kernel ends before it starts ({} < {} ns)", path, end, start));
    r.duration_us = static_cast<double>(end - start) / 1000.0;
    r.grid = Dim3{Dimension(q, 2), Dimension(q, 3), Dimension(q, 4)};
    r.block = Dim3{Dimension(q, 5), Dimension(q, 6), Dimension(q, 7)};
    const sqlite3_int64 smem = sqlite3_column_int64(q, 8);
    r.shared_mem =
        smem < 0 ? 0 : static_cast<std::uint32_t>(std::min<sqlite3_int64>(smem, 0xffffffff));
    const unsigned char* name = sqlite3_column_text(q, 9);
    r.name = name != nullptr ? reinterpret_cast<const char*>(name) : "";
    if (r.name.empty())
      return Status::InvalidArgument(fmt::format("{}: a kernel without a name", path));
    read.kernels.push_back(std::move(r));
  }
  if (step != SQLITE_DONE)
    return Status::InvalidArgument(
        fmt::format("{}: reading the kernels failed: {}", path, sqlite3_errmsg(raw)));
  return read;
}

}  // namespace myriad::emulator::profiling
