// Batch norm over a contiguous [n, c, s] block (batch, channels, spatial size) of x, with the CPU
// backend's arithmetic (CpuNormalizationKernels): statistics in double, shifted by the channel's first
// element x[0, ch, 0] so that a large mean does not cancel the variance; var = max(0, E[d^2] - E[d]^2);
// an empty channel gives NaN. Per-channel tensors (mean, var, invstd, weight, bias and the gradients of
// weight and bias) may be strided and of any floating dtype, and null where the front end passes null
// (a null weight reads 1, a null bias 0, a null output is not written): ChannelTensors carries their
// addresses, element strides and dtype codes.
//
// Statistics and the backward sums are per-channel reductions: each thread accumulates a strided slice
// in double, then warp shuffles and one shared-memory stage combine a block's. A channel takes one block,
// or `splits` blocks when there are too few channels to fill the device (the host decides, NormPlan);
// split channels write partial sums to a double workspace and a finish kernel (one thread a channel)
// adds them in order. The forward apply and the input gradient are elementwise, one thread an element
// (grid-stride), in Scalar<T>::acc (float for 16/32-bit floats, double for f64).
// Entries (T = f16 | bf16 | f32 | f64):
//   jt_norm_stats_T(x, n, c, s, ChannelTensors {mean, var}, partial, splits)
//   jt_norm_stats_finish_T(x, n, c, s, ChannelTensors {mean, var}, partial, splits)
//   jt_norm_apply_T(x, out, n, c, s, ChannelTensors {mean, invstd, weight, bias})
//   jt_norm_backward_sums_T(grad_out, x, n, c, s, ChannelTensors {mean, invstd, grad_weight, grad_bias}, coef or null,
//                           weight or null, weight_stride, weight_dtype, partial, splits)
//   jt_norm_backward_finish(n, c, s, ChannelTensors {mean, invstd, grad_weight, grad_bias}, coef or null,
//                           weight or null, weight_stride, weight_dtype, partial, splits)
//   jt_norm_backward_input_T(grad_out, x, grad_in, n, c, s, ChannelTensors {mean, invstd, weight, -}, coef or null)
//   jt_norm_relu_backward_sums_T, jt_norm_relu_backward_sums_rows_T, jt_norm_relu_backward_input_T: the three above with a
//                           last parameter ChannelTensors relu {mean, invstd, weight, bias}: the backward of relu(batch_norm(x))
//                           in training, the gradient masked where the ReLU's input is not positive (recomputed from x)
//   jt_norm_stats_rows_T, jt_norm_backward_sums_rows_T: the two reductions for s == 1 ([n, c] blocks), without s,
//                           launched with JT_ROWS_THREADS threads a block, one block a tile of 32 channels and split
// partial (2 doubles per channel and split) is unused (null) when splits == 1.
// coef is a double workspace of 3 c values per channel written by the sums in training:
// (a = invstd * weight, k = sum(g * (x - mean)) / count * invstd^2, mean(g)), so that the input gradient
// is (g - (x - mean) * k - mean(g)) * a; without coef (evaluation) it is g * invstd * weight.
#include "jtorch_cuda.cuh"

#define JT_CHANNEL_TENSORS 4

namespace jt {

// Up to four per-channel tensors, passed by value (NormPlan.CHANNEL_TENSORS_LAYOUT mirrors it).
struct ChannelTensors {
    char* data[JT_CHANNEL_TENSORS];
    jt_i64 stride[JT_CHANNEL_TENSORS];
    int dtype[JT_CHANNEL_TENSORS];
};

__device__ __forceinline__ double channel_value(const ChannelTensors& t, int which, jt_i64 ch, double fallback) {
    if (t.data[which] == nullptr) return fallback;
    return load_as<double>(t.data[which] + ch * t.stride[which] * dtype_size(t.dtype[which]), t.dtype[which]);
}

__device__ __forceinline__ void store_channel(const ChannelTensors& t, int which, jt_i64 ch, double v) {
    if (t.data[which] != nullptr) store_as<double>(t.data[which] + ch * t.stride[which] * dtype_size(t.dtype[which]), t.dtype[which], v);
}

// Sums two doubles across the block; the results are valid in thread 0. `shared` holds 64 values.
__device__ __forceinline__ void block_sum2(double& a, double& b, double* shared) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    #pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        a += __shfl_down_sync(0xffffffffu, a, offset);
        b += __shfl_down_sync(0xffffffffu, b, offset);
    }
    if (lane == 0) {
        shared[warp] = a;
        shared[32 + warp] = b;
    }
    __syncthreads();
    if (warp == 0) {
        a = lane < warps ? shared[lane] : 0.0;
        b = lane < warps ? shared[32 + lane] : 0.0;
        #pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) {
            a += __shfl_down_sync(0xffffffffu, a, offset);
            b += __shfl_down_sync(0xffffffffu, b, offset);
        }
    }
    __syncthreads();
}

// Element k (in [0, n * s)) of channel ch of an [n, c, s] block.
__device__ __forceinline__ jt_i64 channel_element(jt_i64 k, jt_i64 ch, jt_i64 c, jt_i64 s) {
    const jt_i64 i = k / s;
    return (i * c + ch) * s + (k - i * s);
}

// The value the statistics of channel ch are shifted by: its first element x[0, ch, 0] (0 for an empty channel).
template <typename T> __device__ __forceinline__ double stats_shift(const T* x, jt_i64 ch, jt_i64 s, jt_i64 count) {
    return count > 0 ? (double)Scalar<T>::load(x[ch * s]) : 0.0;
}

__device__ __forceinline__ void finish_stats(const ChannelTensors& out, jt_i64 ch, double shift, double sum, double sq, jt_i64 count) {
    const double nan = __longlong_as_double(0x7ff8000000000000LL);
    const double d = sum / (double)count, var = sq / (double)count - d * d;
    store_channel(out, 0, ch, count > 0 ? shift + d : nan);
    // Clamped at 0 like Java's Math.max(0, var), which keeps a NaN (fmax would drop it).
    store_channel(out, 1, ch, count > 0 ? (var < 0.0 ? 0.0 : var) : nan);
}

// Block b of the reductions handles part b % splits of channel b / splits: its elements k = part * blockDim + t,
// stepping splits * blockDim. With one part a block writes the channel's results; with more it writes its two
// partial sums to partial[2b], partial[2b + 1], and the finish kernel adds a channel's parts in order (so the
// result does not depend on scheduling) and writes the results.
template <typename T>
__device__ __forceinline__ void stats(const T* __restrict__ x, jt_i64 n, jt_i64 c, jt_i64 s, ChannelTensors out,
                                      double* __restrict__ partial, int splits) {
    __shared__ double shared[64];
    const jt_i64 count = n * s;
    for (jt_i64 b = blockIdx.x; b < c * splits; b += gridDim.x) {
        const jt_i64 ch = b / splits, part = b % splits;
        const double shift = stats_shift(x, ch, s, count);
        double sum = 0.0, sq = 0.0;
        for (jt_i64 k = part * blockDim.x + threadIdx.x; k < count; k += (jt_i64)splits * blockDim.x) {
            const double d = (double)Scalar<T>::load(x[channel_element(k, ch, c, s)]) - shift;
            sum += d;
            sq += d * d;
        }
        block_sum2(sum, sq, shared);
        if (threadIdx.x == 0) {
            if (splits == 1) {
                finish_stats(out, ch, shift, sum, sq, count);
            } else {
                partial[2 * b] = sum;
                partial[2 * b + 1] = sq;
            }
        }
    }
}

template <typename T>
__device__ __forceinline__ void stats_finish(const T* __restrict__ x, jt_i64 n, jt_i64 c, jt_i64 s, ChannelTensors out,
                                             const double* __restrict__ partial, int splits) {
    for (jt_i64 ch = global_thread(); ch < c; ch += grid_threads()) {
        double sum = 0.0, sq = 0.0;
        for (int part = 0; part < splits; part++) {
            sum += partial[2 * (ch * splits + part)];
            sq += partial[2 * (ch * splits + part) + 1];
        }
        finish_stats(out, ch, stats_shift(x, ch, s, n * s), sum, sq, n * s);
    }
}

// out = (x - mean) * (invstd * weight) + bias.
template <typename T>
__device__ __forceinline__ void apply(const T* __restrict__ x, T* __restrict__ out, jt_i64 n, jt_i64 c, jt_i64 s, ChannelTensors p) {
    typedef typename Scalar<T>::acc A;
    const jt_i64 total = n * c * s;
    for (jt_i64 e = global_thread(); e < total; e += grid_threads()) {
        const jt_i64 ch = (e / s) % c;
        const A mean = (A)channel_value(p, 0, ch, 0.0);
        const A scale = (A)(channel_value(p, 1, ch, 1.0) * channel_value(p, 2, ch, 1.0));
        const A bias = (A)channel_value(p, 3, ch, 0.0);
        out[e] = Scalar<T>::store((Scalar<T>::load(x[e]) - mean) * scale + bias);
    }
}

// grad_bias = sum(g), grad_weight = sum(g * (x - mean)) * invstd, and in training the input gradient's coefficients.
__device__ __forceinline__ void finish_backward(const ChannelTensors& p, const ChannelTensors& weight, double* coef, jt_i64 ch,
                                                double sum_g, double sum_gx, jt_i64 count) {
    const double invstd = channel_value(p, 1, ch, 1.0);
    store_channel(p, 2, ch, sum_gx * invstd);
    store_channel(p, 3, ch, sum_g);
    if (coef != nullptr) {
        coef[3 * ch] = invstd * channel_value(weight, 0, ch, 1.0);
        coef[3 * ch + 1] = count > 0 ? sum_gx / (double)count * invstd * invstd : 0.0;
        coef[3 * ch + 2] = count > 0 ? sum_g / (double)count : 0.0;
    }
}

// Per channel: sum(g) and sum(g * (x - mean)) in double, split over blocks as the statistics are.
// The ReLU after a training batch norm lets the gradient through where its input y = (x - mean) * invstd * weight + bias
// is positive: recomputed from x with relu = {mean, invstd, weight, bias}, in the CPU kernel's order of operations
// (CpuBatchNormReluBackward), so that the masked gradient is never written.
template <typename T>
__device__ __forceinline__ double relu_masked(double g, T xv, const ChannelTensors& relu, jt_i64 ch) {
    typedef typename Scalar<T>::acc A;
    const A xm = Scalar<T>::load(xv) - (A)channel_value(relu, 0, ch, 0.0);
    const A y = xm * (A)channel_value(relu, 1, ch, 1.0) * (A)channel_value(relu, 2, ch, 1.0) + (A)channel_value(relu, 3, ch, 0.0);
    return y > (A)0 ? g : 0.0;
}

template <typename T, bool RELU>
__device__ __forceinline__ void backward_sums(const T* __restrict__ grad, const T* __restrict__ x, jt_i64 n, jt_i64 c, jt_i64 s,
                                              ChannelTensors p, double* __restrict__ coef, const ChannelTensors weight,
                                              double* __restrict__ partial, int splits, const ChannelTensors relu) {
    __shared__ double shared[64];
    const jt_i64 count = n * s;
    for (jt_i64 b = blockIdx.x; b < c * splits; b += gridDim.x) {
        const jt_i64 ch = b / splits, part = b % splits;
        const double mean = channel_value(p, 0, ch, 0.0);
        double sum_g = 0.0, sum_gx = 0.0;
        for (jt_i64 k = part * blockDim.x + threadIdx.x; k < count; k += (jt_i64)splits * blockDim.x) {
            const jt_i64 e = channel_element(k, ch, c, s);
            double g = (double)Scalar<T>::load(grad[e]);
            if (RELU) g = relu_masked<T>(g, x[e], relu, ch);
            sum_g += g;
            sum_gx += g * ((double)Scalar<T>::load(x[e]) - mean);
        }
        block_sum2(sum_g, sum_gx, shared);
        if (threadIdx.x == 0) {
            if (splits == 1) {
                finish_backward(p, weight, coef, ch, sum_g, sum_gx, count);
            } else {
                partial[2 * b] = sum_g;
                partial[2 * b + 1] = sum_gx;
            }
        }
    }
}

__device__ __forceinline__ void backward_finish(jt_i64 n, jt_i64 c, jt_i64 s, ChannelTensors p, double* __restrict__ coef,
                                                const ChannelTensors weight, const double* __restrict__ partial, int splits) {
    for (jt_i64 ch = global_thread(); ch < c; ch += grid_threads()) {
        double sum_g = 0.0, sum_gx = 0.0;
        for (int part = 0; part < splits; part++) {
            sum_g += partial[2 * (ch * splits + part)];
            sum_gx += partial[2 * (ch * splits + part) + 1];
        }
        finish_backward(p, weight, coef, ch, sum_g, sum_gx, n * s);
    }
}

template <typename T, bool RELU>
__device__ __forceinline__ void backward_input(const T* __restrict__ grad, const T* __restrict__ x, T* __restrict__ grad_in, jt_i64 n,
                                               jt_i64 c, jt_i64 s, ChannelTensors p, const double* __restrict__ coef,
                                               const ChannelTensors relu) {
    typedef typename Scalar<T>::acc A;
    const jt_i64 total = n * c * s;
    for (jt_i64 e = global_thread(); e < total; e += grid_threads()) {
        const jt_i64 ch = (e / s) % c;
        A g = Scalar<T>::load(grad[e]);
        if (RELU) g = (A)relu_masked<T>((double)g, x[e], relu, ch);
        if (coef != nullptr) {
            const A mean = (A)channel_value(p, 0, ch, 0.0);
            const A a = (A)coef[3 * ch], k = (A)coef[3 * ch + 1], mean_g = (A)coef[3 * ch + 2];
            grad_in[e] = Scalar<T>::store((g - (Scalar<T>::load(x[e]) - mean) * k - mean_g) * a);
        } else {
            grad_in[e] = Scalar<T>::store(g * (A)(channel_value(p, 1, ch, 1.0) * channel_value(p, 2, ch, 1.0)));
        }
    }
}

// The weight alone, as slot 0 of a ChannelTensors (the sums kernel's own slots hold its outputs).
__device__ __forceinline__ ChannelTensors weight_only(const char* data, jt_i64 stride, int dtype) {
    ChannelTensors t = {};
    t.data[0] = const_cast<char*>(data);
    t.stride[0] = stride;
    t.dtype[0] = dtype;
    return t;
}

// ---- [n, c] blocks (s == 1, BatchNorm1d): one channel a lane, so that a warp reads 32 neighbouring channels
// of a row (coalesced) where the kernels above would read one channel with stride c. A block of
// JT_ROWS_THREADS threads is one tile of 32 channels; its warps take rows part * warps + warp, stepping
// splits * warps; the warps' sums meet in shared memory. Partial sums use the layout of the kernels above,
// so the same finish kernels complete split channels.
#define JT_ROWS_THREADS 256

// Sums (a, b) over the block's warps lane by lane: lane l of warp 0 gets the totals of its tile's channel l.
__device__ __forceinline__ void warps_sum2(double& a, double& b, double* shared) {
    const int warps = blockDim.x >> 5, lane = threadIdx.x & 31;
    shared[threadIdx.x] = a;
    shared[JT_ROWS_THREADS + threadIdx.x] = b;
    __syncthreads();
    if (threadIdx.x < 32) {
        for (int w = 1; w < warps; w++) {
            a += shared[w * 32 + lane];
            b += shared[JT_ROWS_THREADS + w * 32 + lane];
        }
    }
    __syncthreads();
}

template <typename T>
__device__ __forceinline__ void stats_rows(const T* __restrict__ x, jt_i64 n, jt_i64 c, ChannelTensors out, double* __restrict__ partial,
                                           int splits) {
    __shared__ double shared[2 * JT_ROWS_THREADS];
    const jt_i64 tiles = (c + 31) / 32, warps = blockDim.x >> 5;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (jt_i64 b = blockIdx.x; b < tiles * splits; b += gridDim.x) {
        const jt_i64 part = b % splits, ch = (b / splits) * 32 + lane;
        const bool active = ch < c;
        const double shift = active ? stats_shift(x, ch, 1, n) : 0.0;
        double sum = 0.0, sq = 0.0;
        for (jt_i64 i = part * warps + warp; active && i < n; i += splits * warps) {
            const double d = (double)Scalar<T>::load(x[i * c + ch]) - shift;
            sum += d;
            sq += d * d;
        }
        warps_sum2(sum, sq, shared);
        if (warp == 0 && active) {
            if (splits == 1) {
                finish_stats(out, ch, shift, sum, sq, n);
            } else {
                partial[2 * (ch * splits + part)] = sum;
                partial[2 * (ch * splits + part) + 1] = sq;
            }
        }
    }
}

template <typename T, bool RELU>
__device__ __forceinline__ void backward_sums_rows(const T* __restrict__ grad, const T* __restrict__ x, jt_i64 n, jt_i64 c,
                                                   ChannelTensors p, double* __restrict__ coef, const ChannelTensors weight,
                                                   double* __restrict__ partial, int splits, const ChannelTensors relu) {
    __shared__ double shared[2 * JT_ROWS_THREADS];
    const jt_i64 tiles = (c + 31) / 32, warps = blockDim.x >> 5;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (jt_i64 b = blockIdx.x; b < tiles * splits; b += gridDim.x) {
        const jt_i64 part = b % splits, ch = (b / splits) * 32 + lane;
        const bool active = ch < c;
        const double mean = active ? channel_value(p, 0, ch, 0.0) : 0.0;
        double sum_g = 0.0, sum_gx = 0.0;
        for (jt_i64 i = part * warps + warp; active && i < n; i += splits * warps) {
            double g = (double)Scalar<T>::load(grad[i * c + ch]);
            if (RELU) g = relu_masked<T>(g, x[i * c + ch], relu, ch);
            sum_g += g;
            sum_gx += g * ((double)Scalar<T>::load(x[i * c + ch]) - mean);
        }
        warps_sum2(sum_g, sum_gx, shared);
        if (warp == 0 && active) {
            if (splits == 1) {
                finish_backward(p, weight, coef, ch, sum_g, sum_gx, n);
            } else {
                partial[2 * (ch * splits + part)] = sum_g;
                partial[2 * (ch * splits + part) + 1] = sum_gx;
            }
        }
    }
}

}  // namespace jt

using namespace jt;

#define JT_NORM(T, suffix) \
    extern "C" __global__ void jt_norm_stats_##suffix(const T* x, jt_i64 n, jt_i64 c, jt_i64 s, ChannelTensors out, double* partial, \
                                                     int splits) { \
        stats<T>(x, n, c, s, out, partial, splits); } \
    extern "C" __global__ void jt_norm_stats_finish_##suffix(const T* x, jt_i64 n, jt_i64 c, jt_i64 s, ChannelTensors out, \
                                                            const double* partial, int splits) { \
        stats_finish<T>(x, n, c, s, out, partial, splits); } \
    extern "C" __global__ void jt_norm_apply_##suffix(const T* x, T* out, jt_i64 n, jt_i64 c, jt_i64 s, ChannelTensors p) { \
        apply<T>(x, out, n, c, s, p); } \
    extern "C" __global__ void jt_norm_backward_sums_##suffix(const T* grad, const T* x, jt_i64 n, jt_i64 c, jt_i64 s, ChannelTensors p, \
                                                             double* coef, const char* weight, jt_i64 weight_stride, int weight_dtype, \
                                                             double* partial, int splits) { \
        backward_sums<T, false>(grad, x, n, c, s, p, coef, weight_only(weight, weight_stride, weight_dtype), partial, splits, \
                                ChannelTensors{}); } \
    extern "C" __global__ void jt_norm_relu_backward_sums_##suffix(const T* grad, const T* x, jt_i64 n, jt_i64 c, jt_i64 s, \
                                                                  ChannelTensors p, double* coef, const char* weight, \
                                                                  jt_i64 weight_stride, int weight_dtype, double* partial, int splits, \
                                                                  ChannelTensors relu) { \
        backward_sums<T, true>(grad, x, n, c, s, p, coef, weight_only(weight, weight_stride, weight_dtype), partial, splits, relu); } \
    extern "C" __global__ void jt_norm_stats_rows_##suffix(const T* x, jt_i64 n, jt_i64 c, ChannelTensors out, double* partial, \
                                                          int splits) { \
        stats_rows<T>(x, n, c, out, partial, splits); } \
    extern "C" __global__ void jt_norm_backward_sums_rows_##suffix(const T* grad, const T* x, jt_i64 n, jt_i64 c, ChannelTensors p, \
                                                                  double* coef, const char* weight, jt_i64 weight_stride, \
                                                                  int weight_dtype, double* partial, int splits) { \
        backward_sums_rows<T, false>(grad, x, n, c, p, coef, weight_only(weight, weight_stride, weight_dtype), partial, splits, \
                                     ChannelTensors{}); } \
    extern "C" __global__ void jt_norm_relu_backward_sums_rows_##suffix(const T* grad, const T* x, jt_i64 n, jt_i64 c, \
                                                                       ChannelTensors p, double* coef, const char* weight, \
                                                                       jt_i64 weight_stride, int weight_dtype, double* partial, \
                                                                       int splits, ChannelTensors relu) { \
        backward_sums_rows<T, true>(grad, x, n, c, p, coef, weight_only(weight, weight_stride, weight_dtype), partial, splits, relu); } \
    extern "C" __global__ void jt_norm_backward_input_##suffix(const T* grad, const T* x, T* grad_in, jt_i64 n, jt_i64 c, jt_i64 s, \
                                                              ChannelTensors p, const double* coef) { \
        backward_input<T, false>(grad, x, grad_in, n, c, s, p, coef, ChannelTensors{}); } \
    extern "C" __global__ void jt_norm_relu_backward_input_##suffix(const T* grad, const T* x, T* grad_in, jt_i64 n, jt_i64 c, \
                                                                   jt_i64 s, ChannelTensors p, const double* coef, ChannelTensors relu) { \
        backward_input<T, true>(grad, x, grad_in, n, c, s, p, coef, relu); }

// The backward's finish reads no element of x or grad: one entry for every dtype.
extern "C" __global__ void jt_norm_backward_finish(jt_i64 n, jt_i64 c, jt_i64 s, ChannelTensors p, double* coef, const char* weight,
                                                   jt_i64 weight_stride, int weight_dtype, const double* partial, int splits) {
    backward_finish(n, c, s, p, coef, weight_only(weight, weight_stride, weight_dtype), partial, splits);
}

JT_NORM(half, f16)
JT_NORM(bfloat16, bf16)
JT_NORM(float, f32)
JT_NORM(double, f64)
