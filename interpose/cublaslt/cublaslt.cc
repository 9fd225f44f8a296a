// cuBLASLt: handles, matmul / matrix layout / preference descriptors, heuristics, algorithms
// and cublasLtMatmul.
//
// The descriptors are cuBLASLt's semi-opaque structs (cublasLtMatmulDescOpaque_t, ...), which
// applications may also allocate themselves and initialise with the *Init inline helpers
// (cublasLt*Init_internal). Myriad keeps its own record at the start of that storage and reads
// and writes it with memcpy. Attributes are set and read by copying exactly the attribute's size,
// as cuBLASLt does.
//
// cublasLtMatmul validates the shapes as cuBLASLt does and becomes one kernel op on the handle's
// device and the given stream: name "cublasLt_matmul_<A type>_<compute>_<epilogue>" (e.g.
// cublasLt_matmul_bf16_f32_gelu_bias), op.gemm = {m = rows of D, n = cols of D, k from A and
// transa, batch = D's batch count, type of A}, duration -1 so that the GEMM model times it. No
// data is touched. The heuristic offers one algorithm, which needs no workspace.

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <type_traits>

#include "common/blas_types.h"
#include "common/client_api.h"
#include "common/export.h"
#include "common/unsupported.h"
#include "protocol/wire.h"

struct cublasLtContext {
  int device = 0;
};

namespace {

using namespace myriad::shim::blas;  // NOLINT: the shared tables read as local here

// cuBLASLt stores types in descriptor attributes as plain integers.
TypeInfo Info(std::uint32_t t) { return myriad::shim::blas::Info(static_cast<cudaDataType>(t)); }
const char* ComputeName(std::int32_t c) {
  return myriad::shim::blas::ComputeName(static_cast<cublasComputeType_t>(c));
}

const char* EpilogueName(std::uint32_t e) {
  switch (static_cast<cublasLtEpilogue_t>(e)) {
    case CUBLASLT_EPILOGUE_DEFAULT:
      return "default";
    case CUBLASLT_EPILOGUE_RELU:
      return "relu";
    case CUBLASLT_EPILOGUE_RELU_AUX:
      return "relu_aux";
    case CUBLASLT_EPILOGUE_BIAS:
      return "bias";
    case CUBLASLT_EPILOGUE_RELU_BIAS:
      return "relu_bias";
    case CUBLASLT_EPILOGUE_RELU_AUX_BIAS:
      return "relu_aux_bias";
    case CUBLASLT_EPILOGUE_DRELU:
      return "drelu";
    case CUBLASLT_EPILOGUE_DRELU_BGRAD:
      return "drelu_bgrad";
    case CUBLASLT_EPILOGUE_GELU:
      return "gelu";
    case CUBLASLT_EPILOGUE_GELU_AUX:
      return "gelu_aux";
    case CUBLASLT_EPILOGUE_GELU_BIAS:
      return "gelu_bias";
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
      return "gelu_aux_bias";
    case CUBLASLT_EPILOGUE_DGELU:
      return "dgelu";
    case CUBLASLT_EPILOGUE_DGELU_BGRAD:
      return "dgelu_bgrad";
    case CUBLASLT_EPILOGUE_BGRADA:
      return "bgrada";
    case CUBLASLT_EPILOGUE_BGRADB:
      return "bgradb";
  }
  return nullptr;
}

// ---- descriptors: Myriad's record at the start of cuBLASLt's opaque storage ----

constexpr std::uint32_t kMatmulDescMagic = 0x4d594d44;  // "MYMD"
constexpr std::uint32_t kLayoutMagic = 0x4d594c41;      // "MYLA"
constexpr std::uint32_t kPreferenceMagic = 0x4d595052;  // "MYPR"
constexpr std::uint32_t kAlgoMagic = 0x4d59414c;        // "MYAL"

// Field types are the attributes' documented types (cublasLt.h).
struct MatmulDesc {
  std::uint32_t magic = kMatmulDescMagic;
  std::int32_t compute_type = 0;
  std::int32_t scale_type = 0;
  std::int32_t pointer_mode = CUBLASLT_POINTER_MODE_HOST;
  std::int32_t transa = CUBLAS_OP_N;
  std::int32_t transb = CUBLAS_OP_N;
  std::int32_t transc = CUBLAS_OP_N;
  std::int32_t fill_mode = CUBLAS_FILL_MODE_FULL;
  std::uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  std::int32_t sm_count_target = 0;
  std::int32_t epilogue_aux_data_type = -1;
  std::int32_t bias_data_type = -1;
  std::int32_t a_scale_mode = 0;
  std::int32_t b_scale_mode = 0;
  std::int32_t c_scale_mode = 0;
  std::int32_t d_scale_mode = 0;
  std::int32_t epilogue_aux_scale_mode = 0;
  std::int32_t d_out_scale_mode = 0;
  std::int8_t fast_accum = 0;
  const void* bias_pointer = nullptr;
  std::int64_t bias_batch_stride = 0;
  const void* epilogue_aux_pointer = nullptr;
  std::int64_t epilogue_aux_ld = 0;
  std::int64_t epilogue_aux_batch_stride = 0;
  std::int64_t alpha_vector_batch_stride = 0;
  const void* a_scale_pointer = nullptr;
  const void* b_scale_pointer = nullptr;
  const void* c_scale_pointer = nullptr;
  const void* d_scale_pointer = nullptr;
  const void* amax_d_pointer = nullptr;
  const void* epilogue_aux_scale_pointer = nullptr;
  const void* epilogue_aux_amax_pointer = nullptr;
  const void* d_out_scale_pointer = nullptr;
  const void* emulation_descriptor = nullptr;
};
static_assert(sizeof(MatmulDesc) <= sizeof(cublasLtMatmulDescOpaque_t));

struct Layout {
  std::uint32_t magic = kLayoutMagic;
  std::uint32_t type = CUDA_R_32F;
  std::int32_t order = CUBLASLT_ORDER_COL;
  std::int32_t batch_count = 1;
  std::uint32_t batch_mode = CUBLASLT_BATCH_MODE_STRIDED;
  std::uint64_t rows = 0;
  std::uint64_t cols = 0;
  std::int64_t ld = 0;
  std::int64_t strided_batch_offset = 0;
  std::int64_t plane_offset = 0;
};
static_assert(sizeof(Layout) <= sizeof(cublasLtMatrixLayoutOpaque_t));

struct Preference {
  std::uint32_t magic = kPreferenceMagic;
  std::uint32_t search_mode = CUBLASLT_SEARCH_BEST_FIT;
  std::uint64_t max_workspace_bytes = 0;
  std::uint32_t reduction_scheme_mask = CUBLASLT_REDUCTION_SCHEME_MASK;
  std::uint32_t min_alignment_a = 256;
  std::uint32_t min_alignment_b = 256;
  std::uint32_t min_alignment_c = 256;
  std::uint32_t min_alignment_d = 256;
  float max_waves_count = 0;
  std::uint64_t impl_mask = ~std::uint64_t{0};
};
static_assert(sizeof(Preference) <= sizeof(cublasLtMatmulPreferenceOpaque_t));

struct Algo {
  std::uint32_t magic = kAlgoMagic;
  std::int32_t id = 0;
};
static_assert(sizeof(Algo) <= sizeof(cublasLtMatmulAlgo_t));

template <typename Record, typename Opaque>
Record Load(const Opaque* opaque) {
  static_assert(std::is_trivially_copyable_v<Record> && sizeof(Record) <= sizeof(Opaque));
  Record record;
  std::memcpy(static_cast<void*>(&record), opaque, sizeof record);
  return record;
}
template <typename Record, typename Opaque>
void Store(Opaque* opaque, const Record& record) {
  std::memset(opaque, 0, sizeof *opaque);
  std::memcpy(opaque, &record, sizeof record);
}

// Where an attribute lives in a record: byte offset and size (size 0: no such attribute).
struct Slot {
  std::size_t offset = 0;
  std::size_t size = 0;
};
#define MYRIAD_SLOT(RECORD, FIELD) \
  Slot { offsetof(RECORD, FIELD), sizeof(RECORD::FIELD) }

Slot MatmulDescSlot(cublasLtMatmulDescAttributes_t attr) {
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
      return MYRIAD_SLOT(MatmulDesc, compute_type);
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
      return MYRIAD_SLOT(MatmulDesc, scale_type);
    case CUBLASLT_MATMUL_DESC_POINTER_MODE:
      return MYRIAD_SLOT(MatmulDesc, pointer_mode);
    case CUBLASLT_MATMUL_DESC_TRANSA:
      return MYRIAD_SLOT(MatmulDesc, transa);
    case CUBLASLT_MATMUL_DESC_TRANSB:
      return MYRIAD_SLOT(MatmulDesc, transb);
    case CUBLASLT_MATMUL_DESC_TRANSC:
      return MYRIAD_SLOT(MatmulDesc, transc);
    case CUBLASLT_MATMUL_DESC_FILL_MODE:
      return MYRIAD_SLOT(MatmulDesc, fill_mode);
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      return MYRIAD_SLOT(MatmulDesc, epilogue);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      return MYRIAD_SLOT(MatmulDesc, bias_pointer);
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE:
      return MYRIAD_SLOT(MatmulDesc, bias_batch_stride);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
      return MYRIAD_SLOT(MatmulDesc, epilogue_aux_pointer);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
      return MYRIAD_SLOT(MatmulDesc, epilogue_aux_ld);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE:
      return MYRIAD_SLOT(MatmulDesc, epilogue_aux_batch_stride);
    case CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE:
      return MYRIAD_SLOT(MatmulDesc, alpha_vector_batch_stride);
    case CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET:
      return MYRIAD_SLOT(MatmulDesc, sm_count_target);
    case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER:
      return MYRIAD_SLOT(MatmulDesc, a_scale_pointer);
    case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER:
      return MYRIAD_SLOT(MatmulDesc, b_scale_pointer);
    case CUBLASLT_MATMUL_DESC_C_SCALE_POINTER:
      return MYRIAD_SLOT(MatmulDesc, c_scale_pointer);
    case CUBLASLT_MATMUL_DESC_D_SCALE_POINTER:
      return MYRIAD_SLOT(MatmulDesc, d_scale_pointer);
    case CUBLASLT_MATMUL_DESC_AMAX_D_POINTER:
      return MYRIAD_SLOT(MatmulDesc, amax_d_pointer);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE:
      return MYRIAD_SLOT(MatmulDesc, epilogue_aux_data_type);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER:
      return MYRIAD_SLOT(MatmulDesc, epilogue_aux_scale_pointer);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER:
      return MYRIAD_SLOT(MatmulDesc, epilogue_aux_amax_pointer);
    case CUBLASLT_MATMUL_DESC_FAST_ACCUM:
      return MYRIAD_SLOT(MatmulDesc, fast_accum);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
      return MYRIAD_SLOT(MatmulDesc, bias_data_type);
    case CUBLASLT_MATMUL_DESC_A_SCALE_MODE:
      return MYRIAD_SLOT(MatmulDesc, a_scale_mode);
    case CUBLASLT_MATMUL_DESC_B_SCALE_MODE:
      return MYRIAD_SLOT(MatmulDesc, b_scale_mode);
    case CUBLASLT_MATMUL_DESC_C_SCALE_MODE:
      return MYRIAD_SLOT(MatmulDesc, c_scale_mode);
    case CUBLASLT_MATMUL_DESC_D_SCALE_MODE:
      return MYRIAD_SLOT(MatmulDesc, d_scale_mode);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE:
      return MYRIAD_SLOT(MatmulDesc, epilogue_aux_scale_mode);
    case CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER:
      return MYRIAD_SLOT(MatmulDesc, d_out_scale_pointer);
    case CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE:
      return MYRIAD_SLOT(MatmulDesc, d_out_scale_mode);
    case CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR:
      return MYRIAD_SLOT(MatmulDesc, emulation_descriptor);
  }
  return {};
}

Slot LayoutSlot(cublasLtMatrixLayoutAttribute_t attr) {
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE:
      return MYRIAD_SLOT(Layout, type);
    case CUBLASLT_MATRIX_LAYOUT_ORDER:
      return MYRIAD_SLOT(Layout, order);
    case CUBLASLT_MATRIX_LAYOUT_ROWS:
      return MYRIAD_SLOT(Layout, rows);
    case CUBLASLT_MATRIX_LAYOUT_COLS:
      return MYRIAD_SLOT(Layout, cols);
    case CUBLASLT_MATRIX_LAYOUT_LD:
      return MYRIAD_SLOT(Layout, ld);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
      return MYRIAD_SLOT(Layout, batch_count);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
      return MYRIAD_SLOT(Layout, strided_batch_offset);
    case CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET:
      return MYRIAD_SLOT(Layout, plane_offset);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_MODE:
      return MYRIAD_SLOT(Layout, batch_mode);
  }
  return {};
}

Slot PreferenceSlot(cublasLtMatmulPreferenceAttributes_t attr) {
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE:
      return MYRIAD_SLOT(Preference, search_mode);
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
      return MYRIAD_SLOT(Preference, max_workspace_bytes);
    case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK:
      return MYRIAD_SLOT(Preference, reduction_scheme_mask);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
      return MYRIAD_SLOT(Preference, min_alignment_a);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
      return MYRIAD_SLOT(Preference, min_alignment_b);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
      return MYRIAD_SLOT(Preference, min_alignment_c);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
      return MYRIAD_SLOT(Preference, min_alignment_d);
    case CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT:
      return MYRIAD_SLOT(Preference, max_waves_count);
    case CUBLASLT_MATMUL_PREF_IMPL_MASK:
      return MYRIAD_SLOT(Preference, impl_mask);
  }
  return {};
}
#undef MYRIAD_SLOT

// cuBLASLt's attribute contract: the size must be exactly the attribute's.
cublasStatus_t SetSlot(void* record, Slot slot, const void* buf, size_t size) {
  if (record == nullptr || slot.size == 0 || buf == nullptr || size != slot.size)
    return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(static_cast<char*>(record) + slot.offset, buf, size);
  return CUBLAS_STATUS_SUCCESS;
}

// sizeInBytes 0 asks for the size (in *size_written); otherwise it must be the attribute's.
cublasStatus_t GetSlot(const void* record, Slot slot, void* buf, size_t size,
                       size_t* size_written) {
  if (record == nullptr || slot.size == 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (size == 0) {
    if (size_written == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    *size_written = slot.size;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (buf == nullptr || size != slot.size) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(buf, static_cast<const char*>(record) + slot.offset, size);
  if (size_written != nullptr) *size_written = size;
  return CUBLAS_STATUS_SUCCESS;
}

// ---- shapes ----

struct Problem {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  int dtype = kNoDtype;
  bool fast_accum = false;  // CUBLASLT_MATMUL_DESC_FAST_ACCUM (FP8: no FP32 promotion)
  const char* a_type = nullptr;
  const char* compute = nullptr;
  const char* epilogue = nullptr;
};

bool ValidOp(std::int32_t op) {
  return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

// The leading dimension must keep the columns (or rows, in row order) from overlapping.
bool ValidLayout(const Layout& l) {
  if (l.batch_count < 1 || l.ld < 0) return false;
  if (l.order == CUBLASLT_ORDER_COL) return static_cast<std::uint64_t>(l.ld) >= l.rows;
  if (l.order == CUBLASLT_ORDER_ROW) return static_cast<std::uint64_t>(l.ld) >= l.cols;
  return true;  // the tiled IMMA orders define their own strides
}

// Checks a matmul as cuBLASLt does and works out its shape. C may be omitted (D's layout).
cublasStatus_t Resolve(cublasLtMatmulDesc_t desc_handle, cublasLtMatrixLayout_t a_layout,
                       cublasLtMatrixLayout_t b_layout, cublasLtMatrixLayout_t c_layout,
                       cublasLtMatrixLayout_t d_layout, Problem* problem) {
  if (desc_handle == nullptr || a_layout == nullptr || b_layout == nullptr || d_layout == nullptr)
    return CUBLAS_STATUS_INVALID_VALUE;
  const auto desc = Load<MatmulDesc>(desc_handle);
  const auto a = Load<Layout>(a_layout);
  const auto b = Load<Layout>(b_layout);
  const auto d = Load<Layout>(d_layout);
  const auto c = c_layout != nullptr ? Load<Layout>(c_layout) : d;
  if (desc.magic != kMatmulDescMagic || a.magic != kLayoutMagic || b.magic != kLayoutMagic ||
      c.magic != kLayoutMagic || d.magic != kLayoutMagic)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!ValidOp(desc.transa) || !ValidOp(desc.transb) || desc.transc != CUBLAS_OP_N)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!ValidLayout(a) || !ValidLayout(b) || !ValidLayout(c) || !ValidLayout(d))
    return CUBLAS_STATUS_INVALID_VALUE;
  // op(A) is m x k, op(B) is k x n, C and D are m x n.
  const bool ta = desc.transa != CUBLAS_OP_N, tb = desc.transb != CUBLAS_OP_N;
  const std::uint64_t a_rows = ta ? a.cols : a.rows, a_cols = ta ? a.rows : a.cols;
  const std::uint64_t b_rows = tb ? b.cols : b.rows, b_cols = tb ? b.rows : b.cols;
  if (a_rows != d.rows || b_cols != d.cols || a_cols != b_rows || c.rows != d.rows ||
      c.cols != d.cols)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (a.batch_count != d.batch_count || b.batch_count != d.batch_count ||
      c.batch_count != d.batch_count)
    return CUBLAS_STATUS_INVALID_VALUE;
  constexpr std::uint64_t kMaxDim = static_cast<std::uint64_t>(INT64_MAX);
  if (d.rows > kMaxDim || d.cols > kMaxDim || a_cols > kMaxDim) return CUBLAS_STATUS_INVALID_VALUE;

  problem->m = static_cast<std::int64_t>(d.rows);
  problem->n = static_cast<std::int64_t>(d.cols);
  problem->k = static_cast<std::int64_t>(a_cols);
  problem->batch = d.batch_count;
  problem->compute = ComputeName(desc.compute_type);
  problem->epilogue = EpilogueName(desc.epilogue);
  const TypeInfo a_info = Info(a.type);
  if (problem->compute == nullptr || problem->epilogue == nullptr || a_info.name == nullptr ||
      Info(b.type).name == nullptr || Info(c.type).name == nullptr || Info(d.type).name == nullptr)
    return CUBLAS_STATUS_INVALID_VALUE;
  problem->a_type = a_info.name;
  problem->dtype = a_info.wire;
  problem->fast_accum = desc.fast_accum != 0;
  if (a.type == CUDA_R_32F) {  // FP32 inputs down-converted to TF32 / FP16 / BF16 tensor cores
    if (desc.compute_type == CUBLAS_COMPUTE_32F_FAST_TF32) problem->dtype = kTf32;
    if (desc.compute_type == CUBLAS_COMPUTE_32F_FAST_16F) problem->dtype = kFloat16;
    if (desc.compute_type == CUBLAS_COMPUTE_32F_FAST_16BF) problem->dtype = kBfloat16;
  }
  if (problem->dtype == kNoDtype) {
    char what[96];
    std::snprintf(what, sizeof what, "cublasLtMatmul with %s inputs", a_info.name);
    return static_cast<cublasStatus_t>(
        myriad::shim::Unsupported(what, myriad::shim::Library::kCublasLt));
  }
  return CUBLAS_STATUS_SUCCESS;
}

void FillResult(cublasLtMatmulHeuristicResult_t* result) {
  result->workspaceSize = 0;  // Myriad's kernels need none
  result->state = CUBLAS_STATUS_SUCCESS;
  result->wavesCount = 1.0f;
  std::memset(result->reserved, 0, sizeof result->reserved);
}

bool KnownCompute(cublasComputeType_t compute) {
  return ComputeName(static_cast<std::int32_t>(compute)) != nullptr;
}

}  // namespace

extern "C" {

// ---- library ----

MYRIAD_EXPORT cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  const myriad::shim::ClientTable* client = myriad::shim::Client();
  if (client == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto* context = new (std::nothrow) cublasLtContext;
  if (context == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  context->device = client->current_device();
  *handle = context;
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }

MYRIAD_EXPORT size_t cublasLtGetCudartVersion(void) { return CUDART_VERSION; }

MYRIAD_EXPORT cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int* value) {
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

MYRIAD_EXPORT const char* cublasLtGetStatusName(cublasStatus_t status) {
  return myriad::shim::blas::StatusName(status);
}

MYRIAD_EXPORT const char* cublasLtGetStatusString(cublasStatus_t status) {
  return myriad::shim::blas::StatusString(status);
}

// ---- matmul descriptor ----

MYRIAD_EXPORT cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t desc, size_t size,
                                                             cublasComputeType_t compute,
                                                             cudaDataType_t scale) {
  if (desc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (size < sizeof(cublasLtMatmulDescOpaque_t)) return CUBLAS_STATUS_ALLOC_FAILED;
  if (!KnownCompute(compute)) return CUBLAS_STATUS_INVALID_VALUE;
  MatmulDesc record;
  record.compute_type = compute;
  record.scale_type = scale;
  Store(desc, record);
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc,
                                                      cublasComputeType_t compute,
                                                      cudaDataType_t scale) {
  if (desc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (!KnownCompute(compute)) return CUBLAS_STATUS_INVALID_VALUE;
  auto* opaque = new (std::nothrow) cublasLtMatmulDescOpaque_t;
  if (opaque == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  cublasLtMatmulDescInit_internal(opaque, sizeof *opaque, compute, scale);
  *desc = opaque;
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                                            cublasLtMatmulDescAttributes_t attr,
                                                            const void* buf, size_t size) {
  return SetSlot(desc, MatmulDescSlot(attr), buf, size);
}

MYRIAD_EXPORT cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t desc,
                                                            cublasLtMatmulDescAttributes_t attr,
                                                            void* buf, size_t size,
                                                            size_t* size_written) {
  return GetSlot(desc, MatmulDescSlot(attr), buf, size, size_written);
}

// ---- matrix layout ----

MYRIAD_EXPORT cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t layout,
                                                               size_t size, cudaDataType type,
                                                               uint64_t rows, uint64_t cols,
                                                               int64_t ld) {
  if (layout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (size < sizeof(cublasLtMatrixLayoutOpaque_t)) return CUBLAS_STATUS_ALLOC_FAILED;
  Layout record;
  record.type = static_cast<std::uint32_t>(type);
  record.rows = rows;
  record.cols = cols;
  record.ld = ld;
  Store(layout, record);
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout,
                                                        cudaDataType type, uint64_t rows,
                                                        uint64_t cols, int64_t ld) {
  if (layout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  auto* opaque = new (std::nothrow) cublasLtMatrixLayoutOpaque_t;
  if (opaque == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  cublasLtMatrixLayoutInit_internal(opaque, sizeof *opaque, type, rows, cols, ld);
  *layout = opaque;
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete layout;
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                              cublasLtMatrixLayoutAttribute_t attr,
                                                              const void* buf, size_t size) {
  return SetSlot(layout, LayoutSlot(attr), buf, size);
}

MYRIAD_EXPORT cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t layout,
                                                              cublasLtMatrixLayoutAttribute_t attr,
                                                              void* buf, size_t size,
                                                              size_t* size_written) {
  return GetSlot(layout, LayoutSlot(attr), buf, size, size_written);
}

// ---- preference ----

MYRIAD_EXPORT cublasStatus_t cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref,
                                                                   size_t size) {
  if (pref == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (size < sizeof(cublasLtMatmulPreferenceOpaque_t)) return CUBLAS_STATUS_ALLOC_FAILED;
  Store(pref, Preference{});
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (pref == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  auto* opaque = new (std::nothrow) cublasLtMatmulPreferenceOpaque_t;
  if (opaque == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  cublasLtMatmulPreferenceInit_internal(opaque, sizeof *opaque);
  *pref = opaque;
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
    size_t size) {
  return SetSlot(pref, PreferenceSlot(attr), buf, size);
}

MYRIAD_EXPORT cublasStatus_t cublasLtMatmulPreferenceGetAttribute(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, void* buf,
    size_t size, size_t* size_written) {
  return GetSlot(pref, PreferenceSlot(attr), buf, size, size_written);
}

// ---- algorithms ----
// Myriad has one algorithm (id 0) for every problem; it needs no workspace.

MYRIAD_EXPORT cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a_layout,
    cublasLtMatrixLayout_t b_layout, cublasLtMatrixLayout_t c_layout,
    cublasLtMatrixLayout_t d_layout, cublasLtMatmulPreference_t pref, int requested,
    cublasLtMatmulHeuristicResult_t results[], int* returned) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requested <= 0 || results == nullptr || returned == nullptr || pref == nullptr)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (Load<Preference>(pref).magic != kPreferenceMagic) return CUBLAS_STATUS_INVALID_VALUE;
  Problem problem;
  if (cublasStatus_t s = Resolve(desc, a_layout, b_layout, c_layout, d_layout, &problem);
      s != CUBLAS_STATUS_SUCCESS)
    return s;
  std::memset(&results[0], 0, sizeof results[0]);
  Store(&results[0].algo, Algo{});
  FillResult(&results[0]);
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasLtMatmulAlgoGetIds(
    cublasLtHandle_t handle, cublasComputeType_t compute, cudaDataType_t scale, cudaDataType_t a,
    cudaDataType_t b, cudaDataType_t c, cudaDataType_t d, int requested, int ids[], int* returned) {
  (void)scale, (void)a, (void)b, (void)c, (void)d;
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requested <= 0 || ids == nullptr || returned == nullptr || !KnownCompute(compute))
    return CUBLAS_STATUS_INVALID_VALUE;
  ids[0] = 0;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t cublasLtMatmulAlgoInit(
    cublasLtHandle_t handle, cublasComputeType_t compute, cudaDataType_t scale, cudaDataType_t a,
    cudaDataType_t b, cudaDataType_t c, cudaDataType_t d, int id, cublasLtMatmulAlgo_t* algo) {
  (void)scale, (void)a, (void)b, (void)c, (void)d;
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (algo == nullptr || id < 0 || !KnownCompute(compute)) return CUBLAS_STATUS_INVALID_VALUE;
  if (id != 0) return CUBLAS_STATUS_NOT_SUPPORTED;
  Store(algo, Algo{});
  return CUBLAS_STATUS_SUCCESS;
}

MYRIAD_EXPORT cublasStatus_t
cublasLtMatmulAlgoCheck(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                        cublasLtMatrixLayout_t a_layout, cublasLtMatrixLayout_t b_layout,
                        cublasLtMatrixLayout_t c_layout, cublasLtMatrixLayout_t d_layout,
                        const cublasLtMatmulAlgo_t* algo, cublasLtMatmulHeuristicResult_t* result) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (algo == nullptr || result == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (Load<Algo>(algo).magic != kAlgoMagic) return CUBLAS_STATUS_INVALID_VALUE;
  Problem problem;
  if (cublasStatus_t s = Resolve(desc, a_layout, b_layout, c_layout, d_layout, &problem);
      s != CUBLAS_STATUS_SUCCESS)
    return s;
  FillResult(result);  // the algo field is never updated
  return CUBLAS_STATUS_SUCCESS;
}

// ---- matmul ----

MYRIAD_EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                            const void* alpha, const void* A,
                                            cublasLtMatrixLayout_t a_layout, const void* B,
                                            cublasLtMatrixLayout_t b_layout, const void* beta,
                                            const void* C, cublasLtMatrixLayout_t c_layout, void* D,
                                            cublasLtMatrixLayout_t d_layout,
                                            const cublasLtMatmulAlgo_t* algo, void* workspace,
                                            size_t workspace_size, cudaStream_t stream) {
  (void)A, (void)B, (void)C, (void)D, (void)algo, (void)workspace, (void)workspace_size;
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  Problem problem;
  if (cublasStatus_t s = Resolve(desc, a_layout, b_layout, c_layout, d_layout, &problem);
      s != CUBLAS_STATUS_SUCCESS)
    return s;
  // Nothing to compute: return without launching anything.
  if (problem.m == 0 || problem.n == 0) return CUBLAS_STATUS_SUCCESS;

  const myriad::shim::ClientTable* client = myriad::shim::Client();
  if (client == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  char name[128];
  std::snprintf(name, sizeof name, "cublasLt_matmul_%s_%s_%s", problem.a_type, problem.compute,
                problem.epilogue);
  myriad::wire::WireOp op;
  op.kind = 0;  // kernel
  op.name = client->intern(name);
  op.stream = client->stream_id(stream);
  op.duration_ps = -1;
  op.gemm_m = problem.m;
  op.gemm_n = problem.n;
  op.gemm_k = problem.k;
  op.gemm_batch = problem.batch;
  op.gemm_dtype = static_cast<std::uint8_t>(problem.dtype);
  op.gemm_fast_accum = problem.fast_accum ? 1 : 0;
  return client->submit(&op, handle->device) == 0 ? CUBLAS_STATUS_SUCCESS
                                                  : CUBLAS_STATUS_EXECUTION_FAILED;
}

}  // extern "C"
