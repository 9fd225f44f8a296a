// What the cuBLAS and cuBLASLt shims share: how CUDA data types and compute types map to the
// op's GEMM data type and to names in kernel names, and the status names and strings.
#pragma once

#include <cublas_api.h>

namespace myriad::shim::blas {

// op.gemm.dtype on the wire: emulator::DataType (NCCL order).
enum WireDtype : int {
  kNoDtype = -1,
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kUint32 = 3,
  kInt64 = 4,
  kUint64 = 5,
  kFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBfloat16 = 9,
  kF8e4m3 = 10,
  kF8e5m2 = 11,
  kTf32 = 12,  // FP32 operands on TF32 tensor cores
};

struct TypeInfo {
  const char* name = nullptr;  // short name in kernel names; nullptr: not a cudaDataType
  int wire = kNoDtype;         // kNoDtype: the GEMM model has no such type
};

inline TypeInfo Info(cudaDataType t) {
  switch (t) {
    case CUDA_R_16F:
      return {"f16", kFloat16};
    case CUDA_R_16BF:
      return {"bf16", kBfloat16};
    case CUDA_R_32F:
      return {"f32", kFloat32};
    case CUDA_R_64F:
      return {"f64", kFloat64};
    case CUDA_R_8I:
      return {"i8", kInt8};
    case CUDA_R_8U:
      return {"u8", kUint8};
    case CUDA_R_32I:
      return {"i32", kInt32};
    case CUDA_R_32U:
      return {"u32", kUint32};
    case CUDA_R_64I:
      return {"i64", kInt64};
    case CUDA_R_64U:
      return {"u64", kUint64};
    case CUDA_R_8F_E4M3:
      return {"e4m3", kF8e4m3};
    case CUDA_R_8F_E5M2:
      return {"e5m2", kF8e5m2};
    case CUDA_C_16F:
      return {"c16f"};
    case CUDA_C_16BF:
      return {"c16bf"};
    case CUDA_C_32F:
      return {"c32f"};
    case CUDA_C_64F:
      return {"c64f"};
    case CUDA_C_8I:
      return {"c8i"};
    case CUDA_C_8U:
      return {"c8u"};
    case CUDA_C_32I:
      return {"c32i"};
    case CUDA_C_32U:
      return {"c32u"};
    case CUDA_R_4I:
      return {"i4"};
    case CUDA_C_4I:
      return {"c4i"};
    case CUDA_R_4U:
      return {"u4"};
    case CUDA_C_4U:
      return {"c4u"};
    case CUDA_R_16I:
      return {"i16"};
    case CUDA_C_16I:
      return {"c16i"};
    case CUDA_R_16U:
      return {"u16"};
    case CUDA_C_16U:
      return {"c16u"};
    case CUDA_C_64I:
      return {"c64i"};
    case CUDA_C_64U:
      return {"c64u"};
    case CUDA_R_8F_UE8M0:
      return {"ue8m0"};
    case CUDA_R_6F_E2M3:
      return {"e2m3"};
    case CUDA_R_6F_E3M2:
      return {"e3m2"};
    case CUDA_R_4F_E2M1:
      return {"e2m1"};
  }
  return {};
}

inline const char* ComputeName(cublasComputeType_t c) {
  switch (c) {
    case CUBLAS_COMPUTE_16F:
      return "f16";
    case CUBLAS_COMPUTE_16F_PEDANTIC:
      return "f16_pedantic";
    case CUBLAS_COMPUTE_32F:
      return "f32";
    case CUBLAS_COMPUTE_32F_PEDANTIC:
      return "f32_pedantic";
    case CUBLAS_COMPUTE_32F_FAST_16F:
      return "f32_fast_f16";
    case CUBLAS_COMPUTE_32F_FAST_16BF:
      return "f32_fast_bf16";
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      return "f32_fast_tf32";
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
      return "f32_emulated_bf16x9";
    case CUBLAS_COMPUTE_64F:
      return "f64";
    case CUBLAS_COMPUTE_64F_PEDANTIC:
      return "f64_pedantic";
    case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
      return "f64_emulated_fixedpoint";
    case CUBLAS_COMPUTE_32I:
      return "i32";
    case CUBLAS_COMPUTE_32I_PEDANTIC:
      return "i32_pedantic";
  }
  return nullptr;
}

inline const char* StatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "<unknown>";
}

inline const char* StatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "error detected trying to check the license";
  }
  return "unknown error";
}

}  // namespace myriad::shim::blas
