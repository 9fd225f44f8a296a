// libmyriad_nvtx.so: an NVTX injection library (NVTX_INJECTION64_PATH, as profilers use). A
// program's NVTX marks and range pushes become markers in Myriad's timeline on the calling
// thread's current device; the ones named like `myriad run --iteration-marker` (default
// "iteration") delimit iterations in the report.
#include <nvtx3/nvToolsExt.h>

#include <cstdint>

#include "common/client_api.h"

namespace {

constexpr std::uint8_t kKindMarker = 18;  // emulator::OpKind::kMarker
thread_local int depth = 0;

void Mark(const char* message) {
  const myriad::shim::ClientTable* client = myriad::shim::Client();
  if (client == nullptr || message == nullptr) return;
  myriad::wire::WireOp op;
  op.kind = kKindMarker;
  op.name = client->intern(message);
  client->submit(&op, -1);
}

const char* AsciiMessage(const nvtxEventAttributes_t* attributes) {
  return attributes && attributes->messageType == NVTX_MESSAGE_TYPE_ASCII
             ? attributes->message.ascii
             : nullptr;
}

void MarkA(const char* message) { Mark(message); }
void MarkEx(const nvtxEventAttributes_t* attributes) { Mark(AsciiMessage(attributes)); }
int RangePushA(const char* message) {
  Mark(message);
  return depth++;
}
int RangePushEx(const nvtxEventAttributes_t* attributes) {
  Mark(AsciiMessage(attributes));
  return depth++;
}
int RangePop() { return depth > 0 ? --depth : -1; }

template <typename F>
void Install(NvtxFunctionTable table, unsigned size, NvtxCallbackIdCore id, F function) {
  if (table && static_cast<unsigned>(id) < size && table[id])
    *table[id] = reinterpret_cast<NvtxFunctionPointer>(function);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size)) return 0;
  Install(table, size, NVTX_CBID_CORE_MarkA, MarkA);
  Install(table, size, NVTX_CBID_CORE_MarkEx, MarkEx);
  Install(table, size, NVTX_CBID_CORE_RangePushA, RangePushA);
  Install(table, size, NVTX_CBID_CORE_RangePushEx, RangePushEx);
  Install(table, size, NVTX_CBID_CORE_RangePop, RangePop);
  return 1;
}
