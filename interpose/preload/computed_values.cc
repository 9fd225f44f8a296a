// Values the host computed for the device. Kernels are timed, not run, so what a kernel writes
// is not in device memory; where the program's inputs are real and the computation small (a
// block mask derived from token positions), PyTorch's hook computes it on the host
// (interpose/python/device_values.py) and writes it here, where the kernels that read it (a
// loop bound in memory) find the true values. No op is timed for the write: the program's own
// kernels that compute the values were.
//
// This library is Myriad's own (not a CUDA library's stand-in), so this export is its own.
#include <cstddef>

#include "preload/table.h"

// Returns 0, or non-zero when not under Myriad or [dst, dst + bytes) is not one device
// allocation's.
extern "C" __attribute__((visibility("default"))) int myriad_write_computed(void* dst,
                                                                            const void* src,
                                                                            unsigned long bytes) {
  const myriad::shim::ClientTable* table = myriad::preload::Table();
  if (table == nullptr || table->version < 9) return 1;
  return table->write_computed(dst, src, static_cast<std::size_t>(bytes));
}
