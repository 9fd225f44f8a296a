// cuBLAS (v2 API): handles, streams, modes, workspace, status strings, and the GEMMs.
//
// A handle remembers its device (the calling thread's current device when it was created), its
// stream and its modes. Each GEMM is validated as cuBLAS validates it and becomes one kernel op
// on the handle's device and stream: name "cublas_gemm_<A><B><C>_<compute>_<transa><transb>"
// (e.g. cublas_gemm_bf16bf16bf16_f32_nt), op.gemm = {m, n, k, batch, type of A}, duration -1 so
// that the engine's GEMM model times it. No data is read or written: device memory has no
// contents in Myriad. Submission is asynchronous, as a real kernel launch is.
//
// Not implemented (they stay "not supported"): the legacy cuBLAS API (cublas.h: cublasInit,
// cublasSgemm without _v2, ...), complex GEMMs, and every BLAS routine other than GEMM.

#include <cublas_api.h>

#include <cstdint>
#include <cstdio>
#include <new>

#include "common/blas_types.h"
#include "common/client_api.h"
#include "common/export.h"
#include "common/unsupported.h"
#include "protocol/wire.h"

struct cublasContext {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  cublasAtomicsMode_t atomics_mode = CUBLAS_ATOMICS_NOT_ALLOWED;
  cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;
  void* workspace = nullptr;  // nullptr: the library's default pool
  size_t workspace_size = 0;
};

namespace {

using namespace myriad::shim::blas;  // NOLINT: the shared tables read as local here

bool IsComplex(cudaDataType t) {
  switch (t) {
    case CUDA_C_16F:
    case CUDA_C_16BF:
    case CUDA_C_32F:
    case CUDA_C_64F:
    case CUDA_C_8I:
    case CUDA_C_8U:
    case CUDA_C_32I:
    case CUDA_C_32U:
    case CUDA_C_4I:
    case CUDA_C_4U:
    case CUDA_C_16I:
    case CUDA_C_16U:
    case CUDA_C_64I:
    case CUDA_C_64U:
      return true;
    default:
      return false;
  }
}

// The (computeType, Atype = Btype, Ctype) combinations cublasGemmEx accepts (cuBLAS
// documentation, "cublasGemmEx"), complex ones included so that they are reported as what
// Myriad does not do rather than as invalid.
bool GemmExSupports(cublasComputeType_t compute, cudaDataType a, cudaDataType b, cudaDataType c) {
  if (a != b) return false;
  switch (compute) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
      return a == CUDA_R_16F && c == CUDA_R_16F;
    case CUBLAS_COMPUTE_32I:
    case CUBLAS_COMPUTE_32I_PEDANTIC:
      return a == CUDA_R_8I && c == CUDA_R_32I;
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
      return (a == CUDA_R_16BF && (c == CUDA_R_16BF || c == CUDA_R_32F)) ||
             (a == CUDA_R_16F && (c == CUDA_R_16F || c == CUDA_R_32F)) ||
             (a == CUDA_R_8I && c == CUDA_R_32F) || (a == CUDA_R_32F && c == CUDA_R_32F) ||
             (a == CUDA_C_8I && c == CUDA_C_32F) || (a == CUDA_C_32F && c == CUDA_C_32F);
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
      return (a == CUDA_R_32F && c == CUDA_R_32F) || (a == CUDA_C_32F && c == CUDA_C_32F);
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
    case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
      return (a == CUDA_R_64F && c == CUDA_R_64F) || (a == CUDA_C_64F && c == CUDA_C_64F);
  }
  return false;
}

// How the handle's math mode changes a compute type (cuBLAS documentation, cublasSetMathMode):
// TF32 / BF16x9 / FP16 tensor-op modes accelerate single-precision inputs, fixed-point
// emulation double precision; the pedantic mode applies to the typed routines only.
cublasComputeType_t Effective(cublasComputeType_t compute, cudaDataType a, cublasMath_t math,
                              bool typed) {
  const int mode = static_cast<int>(math) & 0xf;
  switch (compute) {
    case CUBLAS_COMPUTE_32F:
      if (a != CUDA_R_32F) return compute;
      if (mode == CUBLAS_TF32_TENSOR_OP_MATH) return CUBLAS_COMPUTE_32F_FAST_TF32;
      if (mode == CUBLAS_TENSOR_OP_MATH) return CUBLAS_COMPUTE_32F_FAST_16F;
      if (mode == CUBLAS_FP32_EMULATED_BF16X9_MATH) return CUBLAS_COMPUTE_32F_EMULATED_16BFX9;
      if (typed && mode == CUBLAS_PEDANTIC_MATH) return CUBLAS_COMPUTE_32F_PEDANTIC;
      return compute;
    case CUBLAS_COMPUTE_64F:
      if (mode == CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH)
        return CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT;
      if (typed && mode == CUBLAS_PEDANTIC_MATH) return CUBLAS_COMPUTE_64F_PEDANTIC;
      return compute;
    case CUBLAS_COMPUTE_16F:
      if (typed && mode == CUBLAS_PEDANTIC_MATH) return CUBLAS_COMPUTE_16F_PEDANTIC;
      return compute;
    default:
      return compute;
  }
}

// The type the GEMM model times: A's, except that FP32 inputs run on TF32, FP16 or BF16
// tensor cores when the compute type allows down-converting them to those.
int ModelDtype(cudaDataType a, cublasComputeType_t compute) {
  if (a == CUDA_R_32F) {
    if (compute == CUBLAS_COMPUTE_32F_FAST_TF32) return kTf32;
    if (compute == CUBLAS_COMPUTE_32F_FAST_16F) return kFloat16;
    if (compute == CUBLAS_COMPUTE_32F_FAST_16BF) return kBfloat16;
  }
  return Info(a).wire;
}

char OpLetter(cublasOperation_t op) {
  switch (op) {
    case CUBLAS_OP_N:
      return 'n';
    case CUBLAS_OP_T:
      return 't';
    case CUBLAS_OP_C:
      return 'c';
    default:
      return 0;  // CUBLAS_OP_CONJG is "not supported in the current release"
  }
}

struct Gemm {
  const char* api;  // the exported function, for messages
  cublasOperation_t transa, transb;
  std::int64_t m, n, k;
  const void *alpha, *beta;
  cudaDataType a_type, b_type, c_type;
  std::int64_t lda, ldb, ldc;
  std::int64_t batch;
  cublasComputeType_t compute;
  bool typed;  // cublas<T>gemm*, as opposed to cublasGemm*Ex
};

std::int64_t Max1(std::int64_t v) { return v > 1 ? v : 1; }

cublasStatus_t Launch(cublasHandle_t handle, const Gemm& g) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const char ta = OpLetter(g.transa), tb = OpLetter(g.transb);
  if (ta == 0 || tb == 0 || g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (g.lda < Max1(g.transa == CUBLAS_OP_N ? g.m : g.k) ||
      g.ldb < Max1(g.transb == CUBLAS_OP_N ? g.k : g.n) || g.ldc < Max1(g.m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (g.alpha == nullptr || g.beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  const char* compute_name = ComputeName(g.compute);
  const TypeInfo a = Info(g.a_type), b = Info(g.b_type), c = Info(g.c_type);
  if (compute_name == nullptr || a.name == nullptr || b.name == nullptr || c.name == nullptr)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!g.typed && !GemmExSupports(g.compute, g.a_type, g.b_type, g.c_type))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (IsComplex(g.a_type) || IsComplex(g.c_type)) {
    char what[96];
    std::snprintf(what, sizeof what, "%s with complex types (%s)", g.api, a.name);
    return static_cast<cublasStatus_t>(
        myriad::shim::Unsupported(what, myriad::shim::Library::kCublas));
  }
  // Nothing to compute: cuBLAS returns without launching anything.
  if (g.m == 0 || g.n == 0 || g.batch == 0) return CUBLAS_STATUS_SUCCESS;

  const myriad::shim::ClientTable* client = myriad::shim::Client();
  if (client == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const cublasComputeType_t compute = Effective(g.compute, g.a_type, handle->math_mode, g.typed);
  char name[128];
  std::snprintf(name, sizeof name, "cublas_gemm_%s%s%s_%s_%c%c", a.name, b.name, c.name,
                ComputeName(compute), ta, tb);
  myriad::wire::WireOp op;
  op.kind = 0;  // kernel
  op.name = client->intern(name);
  op.stream = client->stream_id(handle->stream);
  op.duration_ps = -1;
  op.gemm_m = g.m;
  op.gemm_n = g.n;
  op.gemm_k = g.k;
  op.gemm_batch = g.batch;
  op.gemm_dtype = static_cast<std::uint8_t>(ModelDtype(g.a_type, compute));
  return client->submit(&op, handle->device) == 0 ? CUBLAS_STATUS_SUCCESS
                                                  : CUBLAS_STATUS_EXECUTION_FAILED;
}

template <typename Int>
cublasStatus_t Typed(const char* api, cublasHandle_t handle, cublasOperation_t transa,
                     cublasOperation_t transb, Int m, Int n, Int k, const void* alpha, Int lda,
                     Int ldb, const void* beta, Int ldc, std::int64_t batch, cudaDataType type,
                     cublasComputeType_t compute) {
  return Launch(handle, Gemm{api, transa, transb, m, n, k, alpha, beta, type, type, type, lda, ldb,
                             ldc, batch, compute, true});
}

template <typename Int>
cublasStatus_t Ex(const char* api, cublasHandle_t handle, cublasOperation_t transa,
                  cublasOperation_t transb, Int m, Int n, Int k, const void* alpha,
                  cudaDataType a_type, Int lda, cudaDataType b_type, Int ldb, const void* beta,
                  cudaDataType c_type, Int ldc, std::int64_t batch, cublasComputeType_t compute) {
  return Launch(handle, Gemm{api, transa, transb, m, n, k, alpha, beta, a_type, b_type, c_type, lda,
                             ldb, ldc, batch, compute, false});
}

}  // namespace

extern "C" {

// ---- handles, streams, modes ----

MYRIAD_EXPORT cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  const myriad::shim::ClientTable* client = myriad::shim::Client();
  if (client == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto* context = new (std::nothrow) cublasContext;
  if (context == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  context->device = client->current_device();
  *handle = context;
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int* version) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (version == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *version = CUBLAS_VERSION;
  return CUBLAS_STATUS_SUCCESS;
}

// The legacy API's (cublas.h) version query, which needs no handle.
MYRIAD_EXPORT cublasStatus_t cublasGetVersion(int* version) {
  if (version == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *version = CUBLAS_VERSION;
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
  if (value == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION:
      *value = CUBLAS_VER_MAJOR;
      return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION:
      *value = CUBLAS_VER_MINOR;
      return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL:
      *value = CUBLAS_VER_PATCH;
      return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

MYRIAD_EXPORT size_t cublasGetCudartVersion(void) { return CUDART_VERSION; }

MYRIAD_EXPORT const char* cublasGetStatusName(cublasStatus_t status) {
  return myriad::shim::blas::StatusName(status);
}

MYRIAD_EXPORT const char* cublasGetStatusString(cublasStatus_t status) {
  return myriad::shim::blas::StatusString(status);
}

// Setting a stream resets the workspace to the library's default pool, as in cuBLAS.
MYRIAD_EXPORT cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  handle->workspace = nullptr;
  handle->workspace_size = 0;
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (stream == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

// The workspace must be 256-byte aligned; size 0 makes cuBLAS run without one.
MYRIAD_EXPORT cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace,
                                                   size_t workspace_size) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (reinterpret_cast<std::uintptr_t>(workspace) % 256 != 0) return CUBLAS_STATUS_INVALID_VALUE;
  handle->workspace = workspace;
  handle->workspace_size = workspace_size;
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const int value = static_cast<int>(mode);
  const int base = value & 0xf;
  if ((value & ~(0xf | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)) != 0 ||
      (base != CUBLAS_DEFAULT_MATH && base != CUBLAS_TENSOR_OP_MATH &&
       base != CUBLAS_PEDANTIC_MATH && base != CUBLAS_TF32_TENSOR_OP_MATH &&
       base != CUBLAS_FP32_EMULATED_BF16X9_MATH && base != CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH))
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->math_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->math_mode;
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle,
                                                     cublasPointerMode_t mode) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE)
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->pointer_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle,
                                                     cublasPointerMode_t* mode) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->pointer_mode;
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_ATOMICS_NOT_ALLOWED && mode != CUBLAS_ATOMICS_ALLOWED)
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->atomics_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasGetAtomicsMode(cublasHandle_t handle,
                                                  cublasAtomicsMode_t* mode) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->atomics_mode;
  return CUBLAS_STATUS_SUCCESS;
}

// ---- GEMMs ----
// Typed routines: one (type, compute) each; the math mode may change the compute type.

#define MYRIAD_TYPED_GEMM(NAME, INT, T, TYPE, COMPUTE)                                             \
  MYRIAD_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa,               \
                                    cublasOperation_t transb, INT m, INT n, INT k, const T* alpha, \
                                    const T* A, INT lda, const T* B, INT ldb, const T* beta, T* C, \
                                    INT ldc) {                                                     \
    (void)A, (void)B, (void)C;                                                                     \
    return Typed<INT>(#NAME, handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, 1, TYPE, \
                      COMPUTE);                                                                    \
  }
#define MYRIAD_TYPED_GEMM_BATCHED(NAME, INT, T, TYPE, COMPUTE)                                   \
  MYRIAD_EXPORT cublasStatus_t NAME(                                                             \
      cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, INT m, INT n,   \
      INT k, const T* alpha, const T* const Aarray[], INT lda, const T* const Barray[], INT ldb, \
      const T* beta, T* const Carray[], INT ldc, INT batch_count) {                              \
    (void)Aarray, (void)Barray, (void)Carray;                                                    \
    return Typed<INT>(#NAME, handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc,        \
                      batch_count, TYPE, COMPUTE);                                               \
  }
#define MYRIAD_TYPED_GEMM_STRIDED(NAME, INT, T, TYPE, COMPUTE)                                 \
  MYRIAD_EXPORT cublasStatus_t NAME(                                                           \
      cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, INT m, INT n, \
      INT k, const T* alpha, const T* A, INT lda, long long stride_a, const T* B, INT ldb,     \
      long long stride_b, const T* beta, T* C, INT ldc, long long stride_c, INT batch_count) { \
    (void)A, (void)B, (void)C, (void)stride_a, (void)stride_b, (void)stride_c;                 \
    return Typed<INT>(#NAME, handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc,      \
                      batch_count, TYPE, COMPUTE);                                             \
  }

MYRIAD_TYPED_GEMM(cublasSgemm_v2, int, float, CUDA_R_32F, CUBLAS_COMPUTE_32F)
MYRIAD_TYPED_GEMM(cublasSgemm_v2_64, int64_t, float, CUDA_R_32F, CUBLAS_COMPUTE_32F)
MYRIAD_TYPED_GEMM(cublasDgemm_v2, int, double, CUDA_R_64F, CUBLAS_COMPUTE_64F)
MYRIAD_TYPED_GEMM(cublasDgemm_v2_64, int64_t, double, CUDA_R_64F, CUBLAS_COMPUTE_64F)
MYRIAD_TYPED_GEMM(cublasHgemm, int, __half, CUDA_R_16F, CUBLAS_COMPUTE_16F)
MYRIAD_TYPED_GEMM(cublasHgemm_64, int64_t, __half, CUDA_R_16F, CUBLAS_COMPUTE_16F)

MYRIAD_TYPED_GEMM_BATCHED(cublasSgemmBatched, int, float, CUDA_R_32F, CUBLAS_COMPUTE_32F)
MYRIAD_TYPED_GEMM_BATCHED(cublasSgemmBatched_64, int64_t, float, CUDA_R_32F, CUBLAS_COMPUTE_32F)
MYRIAD_TYPED_GEMM_BATCHED(cublasDgemmBatched, int, double, CUDA_R_64F, CUBLAS_COMPUTE_64F)
MYRIAD_TYPED_GEMM_BATCHED(cublasDgemmBatched_64, int64_t, double, CUDA_R_64F, CUBLAS_COMPUTE_64F)
MYRIAD_TYPED_GEMM_BATCHED(cublasHgemmBatched, int, __half, CUDA_R_16F, CUBLAS_COMPUTE_16F)
MYRIAD_TYPED_GEMM_BATCHED(cublasHgemmBatched_64, int64_t, __half, CUDA_R_16F, CUBLAS_COMPUTE_16F)

MYRIAD_TYPED_GEMM_STRIDED(cublasSgemmStridedBatched, int, float, CUDA_R_32F, CUBLAS_COMPUTE_32F)
MYRIAD_TYPED_GEMM_STRIDED(cublasSgemmStridedBatched_64, int64_t, float, CUDA_R_32F,
                          CUBLAS_COMPUTE_32F)
MYRIAD_TYPED_GEMM_STRIDED(cublasDgemmStridedBatched, int, double, CUDA_R_64F, CUBLAS_COMPUTE_64F)
MYRIAD_TYPED_GEMM_STRIDED(cublasDgemmStridedBatched_64, int64_t, double, CUDA_R_64F,
                          CUBLAS_COMPUTE_64F)
MYRIAD_TYPED_GEMM_STRIDED(cublasHgemmStridedBatched, int, __half, CUDA_R_16F, CUBLAS_COMPUTE_16F)
MYRIAD_TYPED_GEMM_STRIDED(cublasHgemmStridedBatched_64, int64_t, __half, CUDA_R_16F,
                          CUBLAS_COMPUTE_16F)

#undef MYRIAD_TYPED_GEMM
#undef MYRIAD_TYPED_GEMM_BATCHED
#undef MYRIAD_TYPED_GEMM_STRIDED

// Ex routines: types and compute type from the caller; the algorithm is a hint and is ignored.

MYRIAD_EXPORT cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void* alpha, const void* A, cudaDataType Atype,
                                          int lda, const void* B, cudaDataType Btype, int ldb,
                                          const void* beta, void* C, cudaDataType Ctype, int ldc,
                                          cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  (void)A, (void)B, (void)C, (void)algo;
  return Ex<int>("cublasGemmEx", handle, transa, transb, m, n, k, alpha, Atype, lda, Btype, ldb,
                 beta, Ctype, ldc, 1, compute);
}

MYRIAD_EXPORT cublasStatus_t cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t transa,
                                             cublasOperation_t transb, int64_t m, int64_t n,
                                             int64_t k, const void* alpha, const void* A,
                                             cudaDataType Atype, int64_t lda, const void* B,
                                             cudaDataType Btype, int64_t ldb, const void* beta,
                                             void* C, cudaDataType Ctype, int64_t ldc,
                                             cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  (void)A, (void)B, (void)C, (void)algo;
  return Ex<int64_t>("cublasGemmEx_64", handle, transa, transb, m, n, k, alpha, Atype, lda, Btype,
                     ldb, beta, Ctype, ldc, 1, compute);
}

MYRIAD_EXPORT cublasStatus_t
cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                    int m, int n, int k, const void* alpha, const void* const Aarray[],
                    cudaDataType Atype, int lda, const void* const Barray[], cudaDataType Btype,
                    int ldb, const void* beta, void* const Carray[], cudaDataType Ctype, int ldc,
                    int batch_count, cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  (void)Aarray, (void)Barray, (void)Carray, (void)algo;
  return Ex<int>("cublasGemmBatchedEx", handle, transa, transb, m, n, k, alpha, Atype, lda, Btype,
                 ldb, beta, Ctype, ldc, batch_count, compute);
}

MYRIAD_EXPORT cublasStatus_t cublasGemmBatchedEx_64(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n,
    int64_t k, const void* alpha, const void* const Aarray[], cudaDataType Atype, int64_t lda,
    const void* const Barray[], cudaDataType Btype, int64_t ldb, const void* beta,
    void* const Carray[], cudaDataType Ctype, int64_t ldc, int64_t batch_count,
    cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  (void)Aarray, (void)Barray, (void)Carray, (void)algo;
  return Ex<int64_t>("cublasGemmBatchedEx_64", handle, transa, transb, m, n, k, alpha, Atype, lda,
                     Btype, ldb, beta, Ctype, ldc, batch_count, compute);
}

MYRIAD_EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void* alpha, const void* A, cudaDataType Atype, int lda, long long stride_a,
    const void* B, cudaDataType Btype, int ldb, long long stride_b, const void* beta, void* C,
    cudaDataType Ctype, int ldc, long long stride_c, int batch_count, cublasComputeType_t compute,
    cublasGemmAlgo_t algo) {
  (void)A, (void)B, (void)C, (void)stride_a, (void)stride_b, (void)stride_c, (void)algo;
  return Ex<int>("cublasGemmStridedBatchedEx", handle, transa, transb, m, n, k, alpha, Atype, lda,
                 Btype, ldb, beta, Ctype, ldc, batch_count, compute);
}

MYRIAD_EXPORT cublasStatus_t cublasGemmStridedBatchedEx_64(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n,
    int64_t k, const void* alpha, const void* A, cudaDataType Atype, int64_t lda,
    long long stride_a, const void* B, cudaDataType Btype, int64_t ldb, long long stride_b,
    const void* beta, void* C, cudaDataType Ctype, int64_t ldc, long long stride_c,
    int64_t batch_count, cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  (void)A, (void)B, (void)C, (void)stride_a, (void)stride_b, (void)stride_c, (void)algo;
  return Ex<int64_t>("cublasGemmStridedBatchedEx_64", handle, transa, transb, m, n, k, alpha, Atype,
                     lda, Btype, ldb, beta, Ctype, ldc, batch_count, compute);
}

}  // extern "C"
