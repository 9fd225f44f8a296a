// The cuBLAS and cuBLASLt shims (interpose/cublas, interpose/cublaslt), linked into this test
// with a fake CUDA runtime: cudaGetExportTable below hands out a ClientTable that records the
// ops the shims submit, so the GEMMs can be checked without Myriad or the cudart shim.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/client_api.h"
#include "protocol/wire.h"

namespace {

using myriad::wire::WireOp;

struct Recorder {
  std::vector<WireOp> ops;
  std::vector<int> devices;
  std::vector<std::string> names;  // interned: id i + 1
  int current_device = 0;
};
Recorder& Rec() {
  static Recorder recorder;
  return recorder;
}

int FakeSubmit(const WireOp* op, int device) {
  Rec().ops.push_back(*op);
  Rec().devices.push_back(device);
  return 0;
}
int FakeCall(const WireOp*, int, myriad::wire::Reply*) { return 0; }
std::uint32_t FakeIntern(const char* name) {
  auto& names = Rec().names;
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<std::uint32_t>(i + 1);
  names.emplace_back(name);
  return static_cast<std::uint32_t>(names.size());
}
int FakeCurrentDevice() { return Rec().current_device; }
// A stream handle's id is its address (streams here are made-up handles, never dereferenced).
int FakeStreamId(cudaStream_t stream) {
  return static_cast<int>(reinterpret_cast<std::intptr_t>(stream));
}
std::int64_t FakeThreadTime() { return 0; }

// The entries the cuBLAS shims call; the rest (host threads, the driver's) stay null.
const myriad::shim::ClientTable kTable = [] {
  myriad::shim::ClientTable t{};
  t.version = 2;
  t.submit = FakeSubmit;
  t.call = FakeCall;
  t.intern = FakeIntern;
  t.current_device = FakeCurrentDevice;
  t.stream_id = FakeStreamId;
  t.thread_time = FakeThreadTime;
  t.process = 0;
  t.devices = 8;
  return t;
}();

cudaStream_t Stream(std::intptr_t id) { return reinterpret_cast<cudaStream_t>(id); }
std::string NameOf(const WireOp& op) { return Rec().names.at(op.name - 1); }

// op.gemm.dtype values (emulator::DataType).
constexpr int kFloat16 = 6, kFloat32 = 7, kFloat64 = 8, kBfloat16 = 9, kF8e4m3 = 10, kTf32 = 12;

}  // namespace

extern "C" cudaError_t cudaGetExportTable(const void** table, const cudaUUID_t* id) {
  if (table == nullptr || id == nullptr ||
      std::memcmp(id, &myriad::shim::kClientTableId, sizeof *id) != 0)
    return cudaErrorInvalidValue;
  *table = &kTable;
  return cudaSuccess;
}

namespace {

class CublasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Rec().ops.clear();
    Rec().devices.clear();
    Rec().current_device = 3;
    ASSERT_EQ(cublasCreate(&handle_), CUBLAS_STATUS_SUCCESS);
    Rec().current_device = 0;  // the handle keeps the device it was created on
  }
  void TearDown() override { EXPECT_EQ(cublasDestroy(handle_), CUBLAS_STATUS_SUCCESS); }

  cublasHandle_t handle_ = nullptr;
  const float alpha_ = 1, beta_ = 0;
  void* const ptr_ = reinterpret_cast<void*>(0x1000);  // device pointers are never touched
};

TEST_F(CublasTest, GemmExWithTransposesIsOneKernelOp) {
  ASSERT_EQ(cublasSetStream(handle_, Stream(7)), CUBLAS_STATUS_SUCCESS);
  // C (128 x 64) = A^T B, A stored k x m = 256 x 128.
  ASSERT_EQ(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, 128, 64, 256, &alpha_, ptr_,
                         CUDA_R_16BF, 256, ptr_, CUDA_R_16BF, 256, &beta_, ptr_, CUDA_R_16BF, 128,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(Rec().ops.size(), 1u);
  const WireOp& op = Rec().ops[0];
  EXPECT_EQ(op.kind, 0);
  EXPECT_EQ(NameOf(op), "cublas_gemm_bf16bf16bf16_f32_tn");
  EXPECT_EQ(op.gemm_m, 128);
  EXPECT_EQ(op.gemm_n, 64);
  EXPECT_EQ(op.gemm_k, 256);
  EXPECT_EQ(op.gemm_batch, 1);
  EXPECT_EQ(op.gemm_dtype, kBfloat16);
  EXPECT_EQ(op.duration_ps, -1);
  EXPECT_EQ(op.grid[0] * op.grid[1] * op.grid[2] * op.block[0] * op.block[1] * op.block[2], 1u);
  EXPECT_EQ(op.stream, 7);
  EXPECT_EQ(Rec().devices[0], 3);

  // N/T: m from A's rows, k from A's columns; ldb >= n.
  ASSERT_EQ(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_T, 32, 16, 8, &alpha_, ptr_, CUDA_R_16F,
                         32, ptr_, CUDA_R_16F, 16, &beta_, ptr_, CUDA_R_32F, 32, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(Rec().ops.size(), 2u);
  EXPECT_EQ(NameOf(Rec().ops[1]), "cublas_gemm_f16f16f32_f32_nt");
  EXPECT_EQ(Rec().ops[1].gemm_m, 32);
  EXPECT_EQ(Rec().ops[1].gemm_k, 8);
  EXPECT_EQ(Rec().ops[1].gemm_dtype, kFloat16);
}

TEST_F(CublasTest, TypedGemmsFollowTheMathMode) {
  const double alpha_d = 1, beta_d = 0;
  const __half alpha_h{}, beta_h{};
  auto* f = static_cast<float*>(ptr_);
  auto* d = static_cast<double*>(ptr_);
  auto* h = static_cast<__half*>(ptr_);
  ASSERT_EQ(cublasSgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &alpha_, f, 64, f, 64,
                        &beta_, f, 64),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasSetMathMode(handle_, CUBLAS_TF32_TENSOR_OP_MATH), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasSgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &alpha_, f, 64, f, 64,
                        &beta_, f, 64),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasDgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &alpha_d, d, 64, d, 64,
                        &beta_d, d, 64),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasHgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &alpha_h, h, 64, h, 64,
                        &beta_h, h, 64),
            CUBLAS_STATUS_SUCCESS);
  // TF32 applies to FP32 inputs only.
  ASSERT_EQ(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &alpha_, ptr_, CUDA_R_16BF,
                         64, ptr_, CUDA_R_16BF, 64, &beta_, ptr_, CUDA_R_16BF, 64,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(Rec().ops.size(), 5u);
  EXPECT_EQ(NameOf(Rec().ops[4]), "cublas_gemm_bf16bf16bf16_f32_nn");
  EXPECT_EQ(NameOf(Rec().ops[0]), "cublas_gemm_f32f32f32_f32_nn");
  EXPECT_EQ(NameOf(Rec().ops[1]), "cublas_gemm_f32f32f32_f32_fast_tf32_nn");
  EXPECT_EQ(NameOf(Rec().ops[2]), "cublas_gemm_f64f64f64_f64_nn");
  EXPECT_EQ(NameOf(Rec().ops[3]), "cublas_gemm_f16f16f16_f16_nn");
  EXPECT_EQ(Rec().ops[0].gemm_dtype, kFloat32);
  EXPECT_EQ(Rec().ops[1].gemm_dtype, kTf32);  // timed on TF32 tensor cores
  EXPECT_EQ(Rec().ops[2].gemm_dtype, kFloat64);
  EXPECT_EQ(Rec().ops[3].gemm_dtype, kFloat16);
  EXPECT_EQ(Rec().ops[0].stream, 0);  // the default stream
}

TEST_F(CublasTest, BatchedGemmsCarryTheBatch) {
  ASSERT_EQ(cublasGemmStridedBatchedEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 128, 128, 64, &alpha_,
                                       ptr_, CUDA_R_16F, 128, 128 * 64, ptr_, CUDA_R_16F, 64,
                                       64 * 128, &beta_, ptr_, CUDA_R_16F, 128, 128 * 128, 12,
                                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  const void* const arrays[3] = {ptr_, ptr_, ptr_};
  void* const out[3] = {ptr_, ptr_, ptr_};
  ASSERT_EQ(cublasGemmBatchedEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 16, 16, 16, &alpha_, arrays,
                                CUDA_R_32F, 16, arrays, CUDA_R_32F, 16, &beta_, out, CUDA_R_32F, 16,
                                3, CUBLAS_COMPUTE_32F_FAST_16BF, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  auto* f = static_cast<float*>(ptr_);
  ASSERT_EQ(cublasSgemmStridedBatched(handle_, CUBLAS_OP_T, CUBLAS_OP_T, 8, 4, 2, &alpha_, f, 2, 16,
                                      f, 4, 8, &beta_, f, 8, 32, 5),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(Rec().ops.size(), 3u);
  EXPECT_EQ(Rec().ops[0].gemm_batch, 12);
  EXPECT_EQ(Rec().ops[0].gemm_m, 128);
  EXPECT_EQ(Rec().ops[0].gemm_k, 64);
  EXPECT_EQ(Rec().ops[0].gemm_dtype, kFloat16);
  EXPECT_EQ(Rec().ops[1].gemm_batch, 3);
  // FP32 inputs that may be down-converted to BF16 are timed as BF16.
  EXPECT_EQ(Rec().ops[1].gemm_dtype, kBfloat16);
  EXPECT_EQ(NameOf(Rec().ops[1]), "cublas_gemm_f32f32f32_f32_fast_bf16_nn");
  EXPECT_EQ(Rec().ops[2].gemm_batch, 5);
  EXPECT_EQ(NameOf(Rec().ops[2]), "cublas_gemm_f32f32f32_f32_tt");
}

TEST_F(CublasTest, ArgumentErrorsSubmitNothing) {
  auto gemm = [&](cublasHandle_t h, cublasOperation_t ta, int m, int n, int k, int lda,
                  const void* alpha, cudaDataType b_type) {
    return cublasGemmEx(h, ta, CUBLAS_OP_N, m, n, k, alpha, ptr_, CUDA_R_16F, lda, ptr_, b_type, 64,
                        &beta_, ptr_, CUDA_R_16F, 64, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  EXPECT_EQ(gemm(nullptr, CUBLAS_OP_N, 64, 64, 64, 64, &alpha_, CUDA_R_16F),
            CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(gemm(handle_, CUBLAS_OP_N, -1, 64, 64, 64, &alpha_, CUDA_R_16F),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemm(handle_, CUBLAS_OP_N, 64, 64, -1, 64, &alpha_, CUDA_R_16F),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemm(handle_, CUBLAS_OP_T, 64, 64, 128, 64, &alpha_, CUDA_R_16F),  // lda < k
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemm(handle_, static_cast<cublasOperation_t>(7), 64, 64, 64, 64, &alpha_, CUDA_R_16F),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemm(handle_, CUBLAS_OP_N, 64, 64, 64, 64, nullptr, CUDA_R_16F),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemm(handle_, CUBLAS_OP_N, 64, 64, 64, 64, &alpha_, CUDA_R_16BF),  // A f16, B bf16
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(
      cublasGemmStridedBatchedEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &alpha_, ptr_,
                                 CUDA_R_32F, 8, 64, ptr_, CUDA_R_32F, 8, 64, &beta_, ptr_,
                                 CUDA_R_32F, 8, 64, -1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      CUBLAS_STATUS_INVALID_VALUE);
  // An empty product is a success that launches nothing.
  EXPECT_EQ(gemm(handle_, CUBLAS_OP_N, 0, 64, 64, 64, &alpha_, CUDA_R_16F), CUBLAS_STATUS_SUCCESS);
  EXPECT_TRUE(Rec().ops.empty());
  EXPECT_EQ(cublasSetStream(nullptr, nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasDestroy(nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
}

TEST_F(CublasTest, HandleStateRoundTrips) {
  cudaStream_t stream = Stream(1);
  ASSERT_EQ(cublasSetStream(handle_, Stream(9)), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasGetStream(handle_, &stream), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(stream, Stream(9));

  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  ASSERT_EQ(cublasGetMathMode(handle_, &math), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(math, CUBLAS_DEFAULT_MATH);
  const auto tf32_strict = static_cast<cublasMath_t>(
      CUBLAS_TF32_TENSOR_OP_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  ASSERT_EQ(cublasSetMathMode(handle_, tf32_strict), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasGetMathMode(handle_, &math), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(math, tf32_strict);
  EXPECT_EQ(cublasSetMathMode(handle_, static_cast<cublasMath_t>(5)), CUBLAS_STATUS_INVALID_VALUE);

  cublasPointerMode_t pointer = CUBLAS_POINTER_MODE_HOST;
  ASSERT_EQ(cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_DEVICE), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasGetPointerMode(handle_, &pointer), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(pointer, CUBLAS_POINTER_MODE_DEVICE);
  cublasAtomicsMode_t atomics = CUBLAS_ATOMICS_NOT_ALLOWED;
  ASSERT_EQ(cublasSetAtomicsMode(handle_, CUBLAS_ATOMICS_ALLOWED), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasGetAtomicsMode(handle_, &atomics), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(atomics, CUBLAS_ATOMICS_ALLOWED);

  EXPECT_EQ(cublasSetWorkspace(handle_, reinterpret_cast<void*>(0x10000), 1 << 20),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasSetWorkspace(handle_, reinterpret_cast<void*>(0x10008), 1 << 20),
            CUBLAS_STATUS_INVALID_VALUE);  // not 256-byte aligned

  int version = 0, major = 0;
  ASSERT_EQ(cublasGetVersion(handle_, &version), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(version, CUBLAS_VERSION);
  ASSERT_EQ(cublasGetProperty(MAJOR_VERSION, &major), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(major, CUBLAS_VER_MAJOR);
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE");
  EXPECT_STREQ(cublasGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED),
               "the functionality requested is not supported");
}

// ---- cuBLASLt ----

class CublasLtTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Rec().ops.clear();
    Rec().devices.clear();
    Rec().current_device = 5;
    ASSERT_EQ(cublasLtCreate(&handle_), CUBLAS_STATUS_SUCCESS);
    Rec().current_device = 0;
  }
  void TearDown() override {
    for (cublasLtMatrixLayout_t l : layouts_)
      EXPECT_EQ(cublasLtMatrixLayoutDestroy(l), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtMatmulDescDestroy(desc_), CUBLAS_STATUS_SUCCESS);  // nullptr is fine
    EXPECT_EQ(cublasLtDestroy(handle_), CUBLAS_STATUS_SUCCESS);
  }

  cublasLtMatrixLayout_t Layout(cudaDataType type, std::uint64_t rows, std::uint64_t cols,
                                std::int32_t batch = 1) {
    cublasLtMatrixLayout_t layout = nullptr;
    EXPECT_EQ(
        cublasLtMatrixLayoutCreate(&layout, type, rows, cols, static_cast<std::int64_t>(rows)),
        CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                               sizeof batch),
              CUBLAS_STATUS_SUCCESS);
    const std::int64_t stride = static_cast<std::int64_t>(rows * cols);
    EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                               &stride, sizeof stride),
              CUBLAS_STATUS_SUCCESS);
    layouts_.push_back(layout);
    return layout;
  }
  void Desc(cublasOperation_t transa, cublasOperation_t transb) {
    ASSERT_EQ(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F),
              CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa),
        CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb),
        CUBLAS_STATUS_SUCCESS);
  }
  cublasStatus_t Matmul(cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                        cublasLtMatrixLayout_t d, const cublasLtMatmulAlgo_t* algo = nullptr) {
    return cublasLtMatmul(handle_, desc_, &alpha_, ptr_, a, ptr_, b, &beta_, ptr_, d, ptr_, d, algo,
                          nullptr, 0, Stream(11));
  }

  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  std::vector<cublasLtMatrixLayout_t> layouts_;
  const float alpha_ = 1, beta_ = 0;
  void* const ptr_ = reinterpret_cast<void*>(0x1000);
};

TEST_F(CublasLtTest, MatmulWithLayoutsAndTransposeIsOneKernelOp) {
  Desc(CUBLAS_OP_T, CUBLAS_OP_N);
  const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_GELU_BIAS;
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                           sizeof epilogue),
            CUBLAS_STATUS_SUCCESS);
  // D (128 x 64) = A^T (A stored 256 x 128) B (256 x 64), 4 in a batch.
  ASSERT_EQ(Matmul(Layout(CUDA_R_16BF, 256, 128, 4), Layout(CUDA_R_16BF, 256, 64, 4),
                   Layout(CUDA_R_16BF, 128, 64, 4)),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(Rec().ops.size(), 1u);
  const WireOp& op = Rec().ops[0];
  EXPECT_EQ(op.kind, 0);
  EXPECT_EQ(NameOf(op), "cublasLt_matmul_bf16_f32_gelu_bias");
  EXPECT_EQ(op.gemm_m, 128);
  EXPECT_EQ(op.gemm_n, 64);
  EXPECT_EQ(op.gemm_k, 256);
  EXPECT_EQ(op.gemm_batch, 4);
  EXPECT_EQ(op.gemm_dtype, kBfloat16);
  EXPECT_EQ(op.duration_ps, -1);
  EXPECT_EQ(op.stream, 11);
  EXPECT_EQ(Rec().devices[0], 5);
}

TEST_F(CublasLtTest, Fp8MatmulIsTimedAsFp8) {
  Desc(CUBLAS_OP_T, CUBLAS_OP_N);
  ASSERT_EQ(Matmul(Layout(CUDA_R_8F_E4M3, 64, 32), Layout(CUDA_R_8F_E5M2, 64, 16),
                   Layout(CUDA_R_16BF, 32, 16)),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(Rec().ops.size(), 1u);
  EXPECT_EQ(Rec().ops[0].gemm_dtype, kF8e4m3);
  EXPECT_EQ(NameOf(Rec().ops[0]), "cublasLt_matmul_e4m3_f32_default");
  EXPECT_EQ(Rec().ops[0].gemm_k, 64);
  EXPECT_EQ(Rec().ops[0].gemm_fast_accum, 0);  // cuBLASLt's default: promoted to FP32
}

// torch._scaled_mm(use_fast_accum=True) sets CUBLASLT_MATMUL_DESC_FAST_ACCUM: the op says so,
// and the GEMM model times the FP8 main loop without Hopper's promotion.
TEST_F(CublasLtTest, Fp8FastAccumulationTravelsWithTheOp) {
  Desc(CUBLAS_OP_T, CUBLAS_OP_N);
  const std::int8_t fast = 1;
  ASSERT_EQ(
      cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast),
      CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(Matmul(Layout(CUDA_R_8F_E4M3, 64, 32), Layout(CUDA_R_8F_E4M3, 64, 16),
                   Layout(CUDA_R_16BF, 32, 16)),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(Rec().ops.size(), 1u);
  EXPECT_EQ(Rec().ops[0].gemm_fast_accum, 1);
}

TEST_F(CublasLtTest, MatmulArgumentErrors) {
  Desc(CUBLAS_OP_N, CUBLAS_OP_N);
  cublasLtMatrixLayout_t a = Layout(CUDA_R_16F, 64, 32), b = Layout(CUDA_R_16F, 32, 16);
  cublasLtMatrixLayout_t d = Layout(CUDA_R_16F, 64, 16);
  EXPECT_EQ(cublasLtMatmul(nullptr, desc_, &alpha_, ptr_, a, ptr_, b, &beta_, ptr_, d, ptr_, d,
                           nullptr, nullptr, 0, nullptr),
            CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(Matmul(a, Layout(CUDA_R_16F, 33, 16), d), CUBLAS_STATUS_INVALID_VALUE);     // k differs
  EXPECT_EQ(Matmul(a, b, Layout(CUDA_R_16F, 64, 17)), CUBLAS_STATUS_INVALID_VALUE);     // n differs
  EXPECT_EQ(Matmul(a, b, Layout(CUDA_R_16F, 64, 16, 2)), CUBLAS_STATUS_INVALID_VALUE);  // batch
  EXPECT_EQ(Matmul(nullptr, b, d), CUBLAS_STATUS_INVALID_VALUE);
  const std::int64_t short_ld = 10;
  ASSERT_EQ(
      cublasLtMatrixLayoutSetAttribute(a, CUBLASLT_MATRIX_LAYOUT_LD, &short_ld, sizeof short_ld),
      CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(Matmul(a, b, d), CUBLAS_STATUS_INVALID_VALUE);  // ld < rows
  EXPECT_TRUE(Rec().ops.empty());
}

TEST_F(CublasLtTest, HeuristicReturnsOneAlgorithmWithinTheWorkspaceLimit) {
  Desc(CUBLAS_OP_N, CUBLAS_OP_T);
  cublasLtMatrixLayout_t a = Layout(CUDA_R_16BF, 512, 256), b = Layout(CUDA_R_16BF, 1024, 256);
  cublasLtMatrixLayout_t d = Layout(CUDA_R_16BF, 512, 1024);
  cublasLtMatmulPreference_t pref = nullptr;
  ASSERT_EQ(cublasLtMatmulPreferenceCreate(&pref), CUBLAS_STATUS_SUCCESS);
  const std::uint64_t max_workspace = 32u << 20;
  ASSERT_EQ(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &max_workspace, sizeof max_workspace),
            CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulHeuristicResult_t results[8] = {};
  int returned = -1;
  ASSERT_EQ(cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a, b, d, d, pref, 8, results, &returned),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(returned, 1);
  EXPECT_EQ(results[0].state, CUBLAS_STATUS_SUCCESS);
  EXPECT_LE(results[0].workspaceSize, max_workspace);
  EXPECT_EQ(results[0].wavesCount, 1.0f);
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a, b, d, d, pref, 0, results, &returned),
            CUBLAS_STATUS_INVALID_VALUE);
  // The algorithm checks out and runs.
  cublasLtMatmulHeuristicResult_t check = {};
  EXPECT_EQ(cublasLtMatmulAlgoCheck(handle_, desc_, a, b, d, d, &results[0].algo, &check),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(check.state, CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(Matmul(a, b, d, &results[0].algo), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(Rec().ops.size(), 1u);
  EXPECT_EQ(Rec().ops[0].gemm_m, 512);
  EXPECT_EQ(Rec().ops[0].gemm_n, 1024);
  EXPECT_EQ(Rec().ops[0].gemm_k, 256);
  EXPECT_EQ(cublasLtMatmulPreferenceDestroy(pref), CUBLAS_STATUS_SUCCESS);
}

TEST_F(CublasLtTest, AttributesRoundTripWithTheirSizes) {
  Desc(CUBLAS_OP_T, CUBLAS_OP_N);
  std::int32_t transa = -1;
  size_t written = 0;
  ASSERT_EQ(cublasLtMatmulDescGetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &transa,
                                           sizeof transa, &written),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(transa, CUBLAS_OP_T);
  EXPECT_EQ(written, sizeof transa);
  // Size 0 asks for the size; any other size must be the attribute's.
  ASSERT_EQ(cublasLtMatmulDescGetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, nullptr, 0,
                                           &written),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(written, sizeof(void*));
  EXPECT_EQ(
      cublasLtMatmulDescGetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, nullptr, 0, nullptr),
      CUBLAS_STATUS_INVALID_VALUE);
  const std::int64_t wide = 1;
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &wide, sizeof wide),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(desc_, static_cast<cublasLtMatmulDescAttributes_t>(9),
                                           &transa, sizeof transa),
            CUBLAS_STATUS_INVALID_VALUE);  // no attribute 9

  const void *bias = reinterpret_cast<void*>(0xb1a5), *bias_back = nullptr;
  ASSERT_EQ(
      cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
      CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmulDescGetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_back,
                                           sizeof bias_back, nullptr),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(bias_back, bias);
  std::int8_t fast_accum = 1, fast_back = 0;
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accum,
                                           sizeof fast_accum),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmulDescGetAttribute(desc_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_back,
                                           sizeof fast_back, &written),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(fast_back, 1);
  EXPECT_EQ(written, 1u);
  std::uint32_t epilogue = 0;
  std::int32_t compute = 0;
  ASSERT_EQ(cublasLtMatmulDescGetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                           sizeof epilogue, nullptr),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(epilogue, CUBLASLT_EPILOGUE_DEFAULT);
  ASSERT_EQ(cublasLtMatmulDescGetAttribute(desc_, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &compute,
                                           sizeof compute, nullptr),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(compute, CUBLAS_COMPUTE_32F);

  // A layout initialised in the caller's own storage.
  cublasLtMatrixLayoutOpaque_t storage;
  EXPECT_EQ(cublasLtMatrixLayoutInit_internal(&storage, sizeof storage - 8, CUDA_R_16F, 4, 4, 4),
            CUBLAS_STATUS_ALLOC_FAILED);
  ASSERT_EQ(cublasLtMatrixLayoutInit(&storage, CUDA_R_16F, 100, 50, 128), CUBLAS_STATUS_SUCCESS);
  std::uint64_t rows = 0;
  std::int64_t ld = 0;
  std::int32_t batch = 0, order = CUBLASLT_ORDER_ROW;
  ASSERT_EQ(cublasLtMatrixLayoutGetAttribute(&storage, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows,
                                             sizeof rows, &written),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(rows, 100u);
  EXPECT_EQ(written, 8u);
  ASSERT_EQ(cublasLtMatrixLayoutGetAttribute(&storage, CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof ld,
                                             nullptr),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(ld, 128);
  ASSERT_EQ(cublasLtMatrixLayoutGetAttribute(&storage, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                             sizeof batch, nullptr),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(batch, 1);
  ASSERT_EQ(cublasLtMatrixLayoutGetAttribute(&storage, CUBLASLT_MATRIX_LAYOUT_ORDER, &order,
                                             sizeof order, nullptr),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(order, CUBLASLT_ORDER_COL);

  cublasLtMatmulPreferenceOpaque_t pref;
  ASSERT_EQ(cublasLtMatmulPreferenceInit(&pref), CUBLAS_STATUS_SUCCESS);
  std::uint64_t workspace = 1;
  ASSERT_EQ(cublasLtMatmulPreferenceGetAttribute(&pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &workspace, sizeof workspace, &written),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(workspace, 0u);  // no workspace allowed by default
  workspace = 4u << 20;
  ASSERT_EQ(cublasLtMatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &workspace, sizeof workspace),
            CUBLAS_STATUS_SUCCESS);
  workspace = 0;
  ASSERT_EQ(cublasLtMatmulPreferenceGetAttribute(&pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &workspace, sizeof workspace, &written),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(workspace, 4u << 20);
  EXPECT_EQ(written, 8u);
}

TEST(CublasLtLibrary, VersionAndStatus) {
  EXPECT_EQ(cublasLtGetVersion(), static_cast<size_t>(CUBLAS_VERSION));
  EXPECT_EQ(cublasLtGetCudartVersion(), static_cast<size_t>(CUDART_VERSION));
  EXPECT_STREQ(cublasLtGetStatusName(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
  EXPECT_EQ(cublasLtDestroy(nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
}

}  // namespace
