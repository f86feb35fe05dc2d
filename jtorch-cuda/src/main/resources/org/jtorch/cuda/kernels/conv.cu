// The convolution kernels of the fallback path (CudaConvolutionKernels when cuDNN is absent, and the
// im2col/col2im ops themselves): im2col and col2im over a chunk of contiguous NCHW images, the bias
// added to a convolution's output, and the bias gradient (sum over images and positions per channel).
// The matrix products between them are cuBLASLt GEMMs planned by ConvPlan.
//
//   im2col:  col[n][(c*kh + i)*kw + j][oy*ow + ox] = x[n][c][oy*sh - ph + i*dh][ox*sw - pw + j*dw] (0 outside)
//   col2im:  x[n][c][y][x] = sum of the col entries im2col would read from (y, x): a gather, one thread
//            an output element, so no atomics and a result that does not depend on scheduling
//   bias:    out[n][c][p] += bias[c]
//   bias grad: grad_bias[c] = sum over n, p of grad[n][c][p], one block a channel, in double
//
// Entries (T = f16, bf16, f32, f64; 16-bit floats accumulate in float and round once):
//   jt_conv_im2col_<T>(const T* x, T* col, jt_i64 images, ConvShape s)
//   jt_conv_col2im_<T>(const T* col, T* x, jt_i64 images, ConvShape s)
//   jt_conv_bias_add_<T>(T* out, const T* bias, jt_i64 images, jt_i64 channels, jt_i64 plane)
//   jt_conv_bias_grad_<T>(const T* grad, T* grad_bias, jt_i64 images, jt_i64 channels, jt_i64 plane)
#include "jtorch_cuda.cuh"

namespace jt {

// One image's geometry (ConvPlan.Shape packs it): channels of x, its size, kernel, stride, padding,
// dilation and the output size. 13 ints, passed by value.
struct ConvShape {
    int channels, h, w;
    int kh, kw;
    int sh, sw;
    int ph, pw;
    int dh, dw;
    int oh, ow;
};

// The index arithmetic is __host__ __device__ so that scripts/check-kernels can test it on the host
// (src/test/cuda/conv_index_test.cu) against a scatter written from the definition.

// The input element (within the chunk's images) that column element e reads, or -1 in the padding.
__host__ __device__ __forceinline__ jt_i64 im2col_source(jt_i64 e, const ConvShape& s) {
    const jt_i64 plane = (jt_i64)s.oh * s.ow;
    const jt_i64 rows = (jt_i64)s.channels * s.kh * s.kw;
    const jt_i64 p = e % plane;
    const jt_i64 r = (e / plane) % rows;
    const jt_i64 n = e / (plane * rows);
    const int oy = (int)(p / s.ow), ox = (int)(p % s.ow);
    const int j = (int)(r % s.kw), i = (int)((r / s.kw) % s.kh), c = (int)(r / ((jt_i64)s.kw * s.kh));
    const int y = oy * s.sh - s.ph + i * s.dh;
    const int x = ox * s.sw - s.pw + j * s.dw;
    if (y < 0 || y >= s.h || x < 0 || x >= s.w) return -1;
    return ((n * s.channels + c) * s.h + y) * s.w + x;
}

// Calls visit(k) for every column element k that im2col copied from input element e: the kernel tap
// (i, j) read (y, x) for the output position with oy*sh = y + ph - i*dh (and likewise for x), when that
// is a whole multiple of the stride inside the output.
template <typename Visit>
__host__ __device__ __forceinline__ void col2im_sources(jt_i64 e, const ConvShape& s, Visit visit) {
    const jt_i64 plane = (jt_i64)s.oh * s.ow;
    const jt_i64 rows = (jt_i64)s.channels * s.kh * s.kw;
    const int x = (int)(e % s.w);
    const int y = (int)((e / s.w) % s.h);
    const jt_i64 nc = e / ((jt_i64)s.w * s.h);
    const int c = (int)(nc % s.channels);
    const jt_i64 image = (nc / s.channels) * rows * plane;
    for (int i = 0; i < s.kh; i++) {
        const int ty = y + s.ph - i * s.dh;
        if (ty < 0 || ty % s.sh != 0) continue;
        const int oy = ty / s.sh;
        if (oy >= s.oh) continue;
        for (int j = 0; j < s.kw; j++) {
            const int tx = x + s.pw - j * s.dw;
            if (tx < 0 || tx % s.sw != 0) continue;
            const int ox = tx / s.sw;
            if (ox >= s.ow) continue;
            const jt_i64 r = ((jt_i64)c * s.kh + i) * s.kw + j;
            visit(image + r * plane + (jt_i64)oy * s.ow + ox);
        }
    }
}

template <typename T>
__device__ __forceinline__ void im2col(const T* __restrict__ x, T* __restrict__ col, jt_i64 images, const ConvShape s) {
    const jt_i64 total = images * s.channels * s.kh * s.kw * ((jt_i64)s.oh * s.ow);
    for (jt_i64 e = global_thread(); e < total; e += grid_threads()) {
        const jt_i64 src = im2col_source(e, s);
        col[e] = src >= 0 ? x[src] : Scalar<T>::store(0.0f);
    }
}

// A gather: one thread an input element, so no atomics and a result that does not depend on scheduling.
template <typename T>
__device__ __forceinline__ void col2im(const T* __restrict__ col, T* __restrict__ x, jt_i64 images, const ConvShape s) {
    typedef typename Scalar<T>::acc A;
    const jt_i64 total = images * s.channels * (jt_i64)s.h * s.w;
    for (jt_i64 e = global_thread(); e < total; e += grid_threads()) {
        A sum = A(0);
        col2im_sources(e, s, [&](jt_i64 k) { sum += Scalar<T>::load(col[k]); });
        x[e] = Scalar<T>::store(sum);
    }
}

template <typename T>
__device__ __forceinline__ void bias_add(T* out, const T* __restrict__ bias, jt_i64 images, jt_i64 channels, jt_i64 plane) {
    const jt_i64 total = images * channels * plane;
    for (jt_i64 e = global_thread(); e < total; e += grid_threads()) {
        const jt_i64 c = (e / plane) % channels;
        out[e] = Scalar<T>::store(Scalar<T>::load(out[e]) + Scalar<T>::load(bias[c]));
    }
}

// Block-wide sum of one double a thread (blockDim.x a multiple of 32, at most 1024); thread 0 gets it.
__device__ __forceinline__ double block_sum(double v) {
    __shared__ double partial[32];
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    const int warps = blockDim.x >> 5;
    v = (warp == 0 && lane < warps) ? partial[lane] : 0.0;
    if (warp == 0) {
        for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    __syncthreads(); // partial is reused by the next channel of a grid-stride loop
    return v;
}

template <typename T>
__device__ __forceinline__ void bias_grad(const T* __restrict__ grad, T* __restrict__ grad_bias, jt_i64 images, jt_i64 channels,
                                          jt_i64 plane) {
    const jt_i64 count = images * plane;
    for (jt_i64 c = blockIdx.x; c < channels; c += gridDim.x) {
        double sum = 0.0;
        for (jt_i64 k = threadIdx.x; k < count; k += blockDim.x) {
            const jt_i64 n = k / plane, p = k % plane;
            sum += (double)Scalar<T>::load(grad[(n * channels + c) * plane + p]);
        }
        sum = block_sum(sum);
        if (threadIdx.x == 0) grad_bias[c] = Scalar<T>::store(sum);
    }
}

}  // namespace jt

using namespace jt;

#define JT_CONV(T, suffix) \
    extern "C" __global__ void jt_conv_im2col_##suffix(const T* x, T* col, jt_i64 images, ConvShape s) { \
        im2col<T>(x, col, images, s); } \
    extern "C" __global__ void jt_conv_col2im_##suffix(const T* col, T* x, jt_i64 images, ConvShape s) { \
        col2im<T>(col, x, images, s); } \
    extern "C" __global__ void jt_conv_bias_add_##suffix(T* out, const T* bias, jt_i64 images, jt_i64 channels, jt_i64 plane) { \
        bias_add<T>(out, bias, images, channels, plane); } \
    extern "C" __global__ void jt_conv_bias_grad_##suffix(const T* grad, T* grad_bias, jt_i64 images, jt_i64 channels, \
                                                          jt_i64 plane) { \
        bias_grad<T>(grad, grad_bias, images, channels, plane); }

JT_CONV(half, f16)
JT_CONV(bfloat16, bf16)
JT_CONV(float, f32)
JT_CONV(double, f64)
