// Layer norm's kernels (NormalizationKernels.layerNorm / layerNormBackward on CUDA, LayerNormPlan launches them) over a
// contiguous [rows, cols] block of T (f16, bf16, f32, f64; weight, bias, output and gradients of T too), statistics
// of S (float, double for f64), as PyTorch's CUDA kernels: 16-bit rows compute in float, statistics in float32.
//   jt_layer_norm_forward_T(x, weight or null, bias or null, out, mean, rstd, rows, cols, eps): one block a row
//       (layernorm.cuh's ln_row), grid-stride over rows.
//   jt_layer_norm_backward_input_T(grad, x, mean, rstd, weight or null, grad_in, rows, cols): one block a row; with
//       xhat = (x - mean) * rstd and gw = grad * weight, grad_in = gw * rstd + xhat * c1 + c0, c1 = -sum(gw (x - mean))
//       rstd^2 / cols, c0 = -sum(gw) rstd / cols (the sums in double), as the CPU's backwardRowF32.
//   jt_layer_norm_backward_columns_T(grad, x, mean, rstd, grad_weight or null, grad_bias or null, partial, rows, cols,
//       part_rows, parts): the column sums of grad * xhat and grad without atomics. Block b covers the 32 columns of
//       tile b % tiles over rows [part * part_rows, ...) of part b / tiles: a lane a column (a warp reads 32 neighbouring
//       columns of a row), the block's 8 warps rows w, w + 8, ...; the warps' sums added in warp order. With one part
//       the block writes the gradients; with more it writes its two sums to partial[(2 part + k) cols + col] and
//   jt_layer_norm_backward_finish_T(grad_weight, grad_bias, partial, cols, parts) adds each column's parts in part
//       order, one thread a column. The parts depend on the row count only (LayerNormPlan), so the weight and bias
//       gradients are the same bits on every device and run.
#include "layernorm.cuh"

#define JT_LN_COLUMN_WARPS 8

namespace jt {

// A row of x as ln_row reads it, in x's compute type.
template <typename T> struct RowLoad {
    const T* row;
    __device__ __forceinline__ typename Scalar<T>::acc operator()(jt_i64 j) const { return Scalar<T>::load(row[j]); }
};

template <typename T, typename S>
__device__ __forceinline__ void ln_forward(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b, T* __restrict__ out,
                                           S* __restrict__ mean, S* __restrict__ rstd, jt_i64 rows, jt_i64 cols, double eps) {
    typedef typename Scalar<T>::acc A;
    __shared__ double shared[64];
    for (jt_i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * cols;
        ln_row<A, T, T, S>(RowLoad<T>{xr}, cols, w, b, eps, out + r * cols, mean, rstd, r, shared);
    }
}

template <typename T, typename S>
__device__ __forceinline__ void ln_backward_input(const T* __restrict__ grad, const T* __restrict__ x, const S* __restrict__ mean,
                                                  const S* __restrict__ rstd, const T* __restrict__ w, T* __restrict__ grad_in,
                                                  jt_i64 rows, jt_i64 cols) {
    typedef typename Scalar<T>::acc A;
    __shared__ double shared[64];
    for (jt_i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* gr = grad + r * cols;
        const T* xr = x + r * cols;
        const A m = (A)mean[r], rs = (A)rstd[r];
        double sa = 0.0, sb = 0.0;
        for (jt_i64 j = threadIdx.x; j < cols; j += blockDim.x) {
            A gw = Scalar<T>::load(gr[j]);
            if (w != nullptr) gw = gw * (A)Scalar<T>::load(w[j]);
            sa += (double)gw;
            sb += (double)(gw * ((A)Scalar<T>::load(xr[j]) - m));
        }
        ln_block_sum2(sa, sb, shared);
        const A c1 = (A)(-sb * (double)rs * (double)rs / (double)cols), c0 = (A)(-sa * (double)rs / (double)cols);
        T* gi = grad_in + r * cols;
        for (jt_i64 j = threadIdx.x; j < cols; j += blockDim.x) {
            const A xhat = ((A)Scalar<T>::load(xr[j]) - m) * rs;
            A gw = Scalar<T>::load(gr[j]);
            if (w != nullptr) gw = gw * (A)Scalar<T>::load(w[j]);
            gi[j] = Scalar<T>::store(ln_fma(gw, rs, ln_fma(xhat, c1, c0)));
        }
    }
}

template <typename T, typename S>
__device__ __forceinline__ void ln_backward_columns(const T* __restrict__ grad, const T* __restrict__ x, const S* __restrict__ mean,
                                                    const S* __restrict__ rstd, T* __restrict__ grad_w, T* __restrict__ grad_b,
                                                    double* __restrict__ partial, jt_i64 rows, jt_i64 cols, jt_i64 part_rows, int parts) {
    typedef typename Scalar<T>::acc A;
    __shared__ double shared[2 * JT_LN_COLUMN_WARPS * 32];
    const jt_i64 tiles = (cols + 31) / 32;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (jt_i64 b = blockIdx.x; b < tiles * parts; b += gridDim.x) {
        const jt_i64 part = b / tiles, col = (b % tiles) * 32 + lane;
        const jt_i64 r1 = min(rows, (part + 1) * part_rows);
        double sw = 0.0, sb = 0.0;
        if (col < cols) {
            for (jt_i64 r = part * part_rows + warp; r < r1; r += JT_LN_COLUMN_WARPS) {
                const A g = Scalar<T>::load(grad[r * cols + col]);
                const A xhat = ((A)Scalar<T>::load(x[r * cols + col]) - (A)mean[r]) * (A)rstd[r];
                sw += (double)(g * xhat);
                sb += (double)g;
            }
        }
        shared[warp * 32 + lane] = sw;
        shared[(JT_LN_COLUMN_WARPS + warp) * 32 + lane] = sb;
        __syncthreads();
        if (warp == 0 && col < cols) {
            double tw = 0.0, tb = 0.0;
            for (int k = 0; k < JT_LN_COLUMN_WARPS; k++) {
                tw += shared[k * 32 + lane];
                tb += shared[(JT_LN_COLUMN_WARPS + k) * 32 + lane];
            }
            if (parts == 1) {
                if (grad_w != nullptr) grad_w[col] = Scalar<T>::store(tw);
                if (grad_b != nullptr) grad_b[col] = Scalar<T>::store(tb);
            } else {
                partial[(2 * part) * cols + col] = tw;
                partial[(2 * part + 1) * cols + col] = tb;
            }
        }
        __syncthreads();
    }
}

template <typename T>
__device__ __forceinline__ void ln_backward_finish(T* __restrict__ grad_w, T* __restrict__ grad_b, const double* __restrict__ partial,
                                                   jt_i64 cols, int parts) {
    for (jt_i64 col = global_thread(); col < cols; col += grid_threads()) {
        double tw = 0.0, tb = 0.0;
        for (int part = 0; part < parts; part++) {
            tw += partial[(2 * part) * cols + col];
            tb += partial[(2 * part + 1) * cols + col];
        }
        if (grad_w != nullptr) grad_w[col] = Scalar<T>::store(tw);
        if (grad_b != nullptr) grad_b[col] = Scalar<T>::store(tb);
    }
}

}  // namespace jt

using namespace jt;

#define JT_LAYER_NORM(T, S, suffix) \
    extern "C" __global__ void jt_layer_norm_forward_##suffix(const T* x, const T* w, const T* b, T* out, S* mean, S* rstd, jt_i64 rows, \
                                                             jt_i64 cols, double eps) { \
        ln_forward<T, S>(x, w, b, out, mean, rstd, rows, cols, eps); } \
    extern "C" __global__ void jt_layer_norm_backward_input_##suffix(const T* grad, const T* x, const S* mean, const S* rstd, const T* w, \
                                                                    T* grad_in, jt_i64 rows, jt_i64 cols) { \
        ln_backward_input<T, S>(grad, x, mean, rstd, w, grad_in, rows, cols); } \
    extern "C" __global__ void jt_layer_norm_backward_columns_##suffix(const T* grad, const T* x, const S* mean, const S* rstd, \
                                                                      T* grad_w, T* grad_b, double* partial, jt_i64 rows, \
                                                                      jt_i64 cols, jt_i64 part_rows, int parts) { \
        ln_backward_columns<T, S>(grad, x, mean, rstd, grad_w, grad_b, partial, rows, cols, part_rows, parts); } \
    extern "C" __global__ void jt_layer_norm_backward_finish_##suffix(T* grad_w, T* grad_b, const double* partial, jt_i64 cols, \
                                                                     int parts) { \
        ln_backward_finish<T>(grad_w, grad_b, partial, cols, parts); }

JT_LAYER_NORM(half, float, f16)
JT_LAYER_NORM(bfloat16, float, bf16)
JT_LAYER_NORM(float, float, f32)
JT_LAYER_NORM(double, double, f64)
