// cuDNN's stand-in: the functions that say what the library is. It runs nothing, and says so by
// its version: 0, no usable cuDNN. PyTorch then takes its own flash-attention kernels for
// scaled_dot_product_attention (which Myriad times) instead of cuDNN's, and a convolution
// fails with torch's "cuDNN version incompatibility" message instead of running wrongly.
// Their real return types are not integers (size_t, const char*): the generated stubs would
// return nonsense for them.
#include <cudnn_graph.h>

#include <cstring>

#include "common/export.h"

extern "C" {

MYRIAD_EXPORT size_t cudnnGetVersion() { return 0; }
MYRIAD_EXPORT size_t cudnnGetMaxDeviceVersion() { return 1000; }  // compute capability 10.0
MYRIAD_EXPORT size_t cudnnGetCudartVersion() { return CUDART_VERSION; }
MYRIAD_EXPORT const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_SUCCESS:
      return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_SUPPORTED:
      return "CUDNN_STATUS_NOT_SUPPORTED (by Myriad: cuDNN is a stand-in)";
    default:
      return "CUDNN_STATUS_INTERNAL_ERROR";
  }
}
MYRIAD_EXPORT void cudnnGetLastErrorString(char* message, size_t max) {
  if (message && max > 0) {
    std::strncpy(message, "cuDNN calls are not supported by Myriad (a stand-in)", max - 1);
    message[max - 1] = '\0';
  }
}

}  // extern "C"
