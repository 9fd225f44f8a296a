// Device code loaded through the driver API by driver_module.cu, compiled on its own to a
// cubin and to PTX beside it (NAME.cubin, NAME.ptx: Triton's cache keeps its kernels so).
// extern "C": the driver finds kernels by these names, as Triton's and Inductor's are.
extern "C" __global__ void scale_add(float* out, const float* in, int n, float a) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = a * in[i] + out[i];
}
