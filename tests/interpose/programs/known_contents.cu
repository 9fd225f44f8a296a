// Loops bounded by a table the program copies from the host, as a CUDA C program writes them
// (per-row lengths of a ragged batch, CSR offsets): each row folds a prefix of one shared
// array whose length its entry gives. Under `myriad run` the table's bytes are known, so the
// kernel's work follows them: halving every entry halves its time, and once a kernel has
// written the table (its values are then a kernel's, which Myriad does not compute) it is
// bounded by what its pointers reach instead. (tests/interpose/run_test.cc)
#include <cstdio>
#include <vector>

__global__ void fold_prefixes(const int* lengths, const float* x, float* out, int rows) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  float s = 0;
  for (int j = 0; j < lengths[row]; ++j) s = fmaf(s, 0.5f, x[j]);
  out[row] = s;
}

__global__ void halve(int* lengths, int rows) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < rows) lengths[row] /= 2;
}

int main() {
  constexpr int kRows = 16384, kValues = 1 << 16;
  std::vector<int> lengths(kRows);
  for (int r = 0; r < kRows; ++r) lengths[r] = 4096 * (r % 4 + 1);  // 4,096 to 16,384
  int* table = nullptr;
  float *x = nullptr, *out = nullptr;
  cudaMalloc(&table, kRows * sizeof(int));
  cudaMalloc(&x, kValues * sizeof(float));
  cudaMalloc(&out, kRows * sizeof(float));
  cudaMemset(x, 0, kValues * sizeof(float));
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  const auto timed = [&](const char* what) {
    cudaEventRecord(a);
    fold_prefixes<<<kRows / 256, 256>>>(table, x, out, kRows);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    std::printf("%s: %.2f us\n", what, ms * 1000);
  };
  cudaMemcpy(table, lengths.data(), kRows * sizeof(int), cudaMemcpyHostToDevice);
  timed("lengths from the host");
  for (int& n : lengths) n /= 2;
  cudaMemcpy(table, lengths.data(), kRows * sizeof(int), cudaMemcpyHostToDevice);
  timed("halved on the host");
  halve<<<kRows / 256, 256>>>(table, kRows);
  timed("halved by a kernel");
  std::printf("error %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
