// 2-D pooling over contiguous [planes, H, W] planes of float32 or float64 (the front end, ops.Pooling,
// converts other dtypes and layouts), with exactly the CPU backend's window rules (CpuSpatialKernels):
// max pooling walks the dilated window clipped to the input, NaN wins, ties keep the first position
// in row-major order, the index is ih * inW + iw within the plane; average pooling clips the window to
// the padded input for its size (count_include_pad) and to the input for its elements; adaptive
// windows are [floor(o * I / O), ceil((o + 1) * I / O)).
//
// Each output (or, for the gathering gradients, input) element is one __host__ __device__ function of
// its position, so that src/test/cuda/pool_windows_check.cu runs the very same window code on the host
// against brute-force definitions (scripts/check-kernels). Forward kernels run one thread per output
// element (grid-stride). Backward of average pooling is a
// gather, one thread per input element summing the shares of the windows that cover it (no atomics,
// deterministic); backward of max pooling scatters with atomicAdd into a gradient the launcher zeroes
// first, as PyTorch's, because the indices are all it is given.
// Entries (T = f32 | f64):
//   jt_pool_max_T(x, out, indices or null, Pool2d g)
//   jt_pool_max_backward_T(grad_out, indices, grad_in, planes, n, m)
//   jt_pool_avg_T(x, out, Pool2d g, count_include_pad, divisor_override)
//   jt_pool_avg_backward_T(grad_out, grad_in, Pool2d g, count_include_pad, divisor_override)
//   jt_pool_adaptive_avg_T(x, out, planes, in_h, in_w, out_h, out_w)
//   jt_pool_adaptive_avg_backward_T(grad_out, grad_in, planes, in_h, in_w, out_h, out_w)
//   jt_pool_adaptive_max_T(x, out, indices, planes, in_h, in_w, out_h, out_w)
#include "jtorch_cuda.cuh"

namespace jt {

// SpatialKernels.Pool2d, passed by value (PoolPlan.POOL2D mirrors it).
struct Pool2d {
    jt_i64 planes, in_h, in_w, out_h, out_w;
    int k_h, k_w, s_h, s_w, p_h, p_w, d_h, d_w;
};

#define JT_HD __host__ __device__ __forceinline__

JT_HD jt_i64 imin(jt_i64 a, jt_i64 b) { return a < b ? a : b; }
JT_HD jt_i64 imax(jt_i64 a, jt_i64 b) { return a > b ? a : b; }

// PyTorch's max rule: a larger value or a NaN replaces the running maximum (so any NaN makes the result NaN,
// with the index of the window's last NaN); ties keep the earlier position.
template <typename T> JT_HD bool takes_max(T v, T max) { return v > max || v != v; }

// -inf from its bits (NVRTC has no INFINITY; the union reads the same on host and device).
template <typename T> JT_HD T negative_infinity();
template <> JT_HD float negative_infinity<float>() {
    union { jt_u32 u; float f; } v = {0xff800000u};
    return v.f;
}
template <> JT_HD double negative_infinity<double>() {
    union { jt_u64 u; double f; } v = {0xfff0000000000000ull};
    return v.f;
}

// Max over output (oh, ow)'s dilated window clipped to the plane; `index` gets the winner's ih * in_w + iw,
// or the first tap inside the plane when nothing beats -inf.
template <typename T> JT_HD T max_pool_at(const T* plane, const Pool2d& g, jt_i64 oh, jt_i64 ow, jt_i64& index) {
    jt_i64 h0 = oh * g.s_h - g.p_h, w0 = ow * g.s_w - g.p_w;
    const jt_i64 h1 = imin(h0 + (jt_i64)(g.k_h - 1) * g.d_h + 1, g.in_h);
    const jt_i64 w1 = imin(w0 + (jt_i64)(g.k_w - 1) * g.d_w + 1, g.in_w);
    // First tap inside the input (the CPU's `while (h0 < 0) h0 += dH`).
    if (h0 < 0) h0 += ((-h0 + g.d_h - 1) / g.d_h) * g.d_h;
    if (w0 < 0) w0 += ((-w0 + g.d_w - 1) / g.d_w) * g.d_w;
    index = h0 * g.in_w + w0;
    T max = negative_infinity<T>();
    for (jt_i64 ih = h0; ih < h1; ih += g.d_h) {
        for (jt_i64 iw = w0; iw < w1; iw += g.d_w) {
            const T v = plane[ih * g.in_w + iw];
            if (takes_max(v, max)) {
                max = v;
                index = ih * g.in_w + iw;
            }
        }
    }
    return max;
}

// The window of output (oh, ow) clipped to the input, and its divisor; false when it holds no input element.
struct AvgWindow {
    jt_i64 h0, h1, w0, w1, divisor;
};

JT_HD bool avg_window(const Pool2d& g, jt_i64 oh, jt_i64 ow, int count_include_pad, jt_i64 divisor_override, AvgWindow& w) {
    const jt_i64 h0 = oh * g.s_h - g.p_h, w0 = ow * g.s_w - g.p_w;
    const jt_i64 h1 = imin(h0 + g.k_h, g.in_h + g.p_h), w1 = imin(w0 + g.k_w, g.in_w + g.p_w);
    const jt_i64 pool_size = (h1 - h0) * (w1 - w0);
    w.h0 = imax(h0, 0);
    w.w0 = imax(w0, 0);
    w.h1 = imin(h1, g.in_h);
    w.w1 = imin(w1, g.in_w);
    if (w.h0 >= w.h1 || w.w0 >= w.w1) return false;
    w.divisor = divisor_override > 0 ? divisor_override : count_include_pad ? pool_size : (w.h1 - w.h0) * (w.w1 - w.w0);
    return true;
}

template <typename T>
JT_HD T avg_pool_at(const T* plane, const Pool2d& g, jt_i64 oh, jt_i64 ow, int count_include_pad, jt_i64 divisor_override) {
    AvgWindow w;
    if (!avg_window(g, oh, ow, count_include_pad, divisor_override, w)) return T(0);
    T sum = T(0);
    for (jt_i64 ih = w.h0; ih < w.h1; ih++) {
        for (jt_i64 iw = w.w0; iw < w.w1; iw++) sum += plane[ih * g.in_w + iw];
    }
    return sum / (T)w.divisor;
}

// Output rows (or columns) whose windows of size k, stride s, padding p can cover input position i:
// [i + p < k ? 0 : (i + p - k) / s + 1, min((i + p) / s + 1, out)).
JT_HD void covering(jt_i64 i, int k, int s, int p, jt_i64 out, jt_i64& first, jt_i64& end) {
    first = i + p < k ? 0 : (i + p - k) / s + 1;
    end = imin((i + p) / s + 1, out);
}

// The gradient of average pooling at input (ih, iw): the shares of every window covering it.
template <typename T>
JT_HD T avg_pool_grad_at(const T* grad_plane, const Pool2d& g, jt_i64 ih, jt_i64 iw, int count_include_pad, jt_i64 divisor_override) {
    jt_i64 oh0, oh1, ow0, ow1;
    covering(ih, g.k_h, g.s_h, g.p_h, g.out_h, oh0, oh1);
    covering(iw, g.k_w, g.s_w, g.p_w, g.out_w, ow0, ow1);
    T sum = T(0);
    for (jt_i64 oh = oh0; oh < oh1; oh++) {
        for (jt_i64 ow = ow0; ow < ow1; ow++) {
            AvgWindow w;
            // Every covering window holds (ih, iw), so it is never empty; the check keeps the rule in one place.
            if (avg_window(g, oh, ow, count_include_pad, divisor_override, w)) sum += grad_plane[oh * g.out_w + ow] / (T)w.divisor;
        }
    }
    return sum;
}

// Adaptive windows: [floor(o * in / out), ceil((o + 1) * in / out)).
JT_HD jt_i64 adaptive_start(jt_i64 o, jt_i64 in, jt_i64 out) { return (o * in) / out; }
JT_HD jt_i64 adaptive_end(jt_i64 o, jt_i64 in, jt_i64 out) { return ((o + 1) * in + out - 1) / out; }

template <typename T>
JT_HD T adaptive_avg_at(const T* plane, jt_i64 in_h, jt_i64 in_w, jt_i64 out_h, jt_i64 out_w, jt_i64 oh, jt_i64 ow) {
    const jt_i64 h0 = adaptive_start(oh, in_h, out_h), h1 = adaptive_end(oh, in_h, out_h);
    const jt_i64 w0 = adaptive_start(ow, in_w, out_w), w1 = adaptive_end(ow, in_w, out_w);
    T sum = T(0);
    for (jt_i64 ih = h0; ih < h1; ih++) {
        for (jt_i64 iw = w0; iw < w1; iw++) sum += plane[ih * in_w + iw];
    }
    return sum / (T)((h1 - h0) * (w1 - w0));
}

// The gradient as a gather: the output cells whose windows hold input i are exactly
// [floor(i * out / in), ceil((i + 1) * out / in)).
template <typename T>
JT_HD T adaptive_avg_grad_at(const T* grad_plane, jt_i64 in_h, jt_i64 in_w, jt_i64 out_h, jt_i64 out_w, jt_i64 ih, jt_i64 iw) {
    const jt_i64 oh0 = adaptive_start(ih, out_h, in_h), oh1 = adaptive_end(ih, out_h, in_h);
    const jt_i64 ow0 = adaptive_start(iw, out_w, in_w), ow1 = adaptive_end(iw, out_w, in_w);
    T sum = T(0);
    for (jt_i64 oh = oh0; oh < oh1; oh++) {
        const jt_i64 rows = adaptive_end(oh, in_h, out_h) - adaptive_start(oh, in_h, out_h);
        for (jt_i64 ow = ow0; ow < ow1; ow++) {
            const jt_i64 cols = adaptive_end(ow, in_w, out_w) - adaptive_start(ow, in_w, out_w);
            sum += grad_plane[oh * out_w + ow] / (T)(rows * cols);
        }
    }
    return sum;
}

template <typename T>
JT_HD T adaptive_max_at(const T* plane, jt_i64 in_h, jt_i64 in_w, jt_i64 out_h, jt_i64 out_w, jt_i64 oh, jt_i64 ow, jt_i64& index) {
    const jt_i64 h0 = adaptive_start(oh, in_h, out_h), h1 = adaptive_end(oh, in_h, out_h);
    const jt_i64 w0 = adaptive_start(ow, in_w, out_w), w1 = adaptive_end(ow, in_w, out_w);
    index = h0 * in_w + w0;
    T max = negative_infinity<T>();
    for (jt_i64 ih = h0; ih < h1; ih++) {
        for (jt_i64 iw = w0; iw < w1; iw++) {
            const T v = plane[ih * in_w + iw];
            if (takes_max(v, max)) {
                max = v;
                index = ih * in_w + iw;
            }
        }
    }
    return max;
}

// ---- the kernels: grid-stride loops over elements, each calling the function of its position.

template <typename T>
__device__ __forceinline__ void max_pool(const T* __restrict__ x, T* __restrict__ out, jt_i64* __restrict__ indices, Pool2d g) {
    const jt_i64 plane_out = g.out_h * g.out_w, total = g.planes * plane_out;
    for (jt_i64 o = global_thread(); o < total; o += grid_threads()) {
        const jt_i64 p = o / plane_out;
        jt_i64 index;
        out[o] = max_pool_at(x + p * g.in_h * g.in_w, g, (o % plane_out) / g.out_w, o % g.out_w, index);
        if (indices != nullptr) indices[o] = index;
    }
}

// grad_in[p, indices[p, j]] += grad_out[p, j]; grad_in is zeroed by the launcher.
template <typename T>
__device__ __forceinline__ void max_pool_backward(const T* __restrict__ grad_out, const jt_i64* __restrict__ indices,
                                                  T* __restrict__ grad_in, jt_i64 planes, jt_i64 n, jt_i64 m) {
    const jt_i64 total = planes * n;
    for (jt_i64 j = global_thread(); j < total; j += grid_threads()) {
        // an index outside the plane: a window wholly in the padding, whose output depends on no input
        const jt_i64 i = indices[j];
        if (i >= 0 && i < m) atomicAdd(grad_in + (j / n) * m + i, grad_out[j]);
    }
}

template <typename T>
__device__ __forceinline__ void avg_pool(const T* __restrict__ x, T* __restrict__ out, Pool2d g, int count_include_pad,
                                         jt_i64 divisor_override) {
    const jt_i64 plane_out = g.out_h * g.out_w, total = g.planes * plane_out;
    for (jt_i64 o = global_thread(); o < total; o += grid_threads()) {
        const jt_i64 p = o / plane_out;
        out[o] = avg_pool_at(x + p * g.in_h * g.in_w, g, (o % plane_out) / g.out_w, o % g.out_w, count_include_pad, divisor_override);
    }
}

template <typename T>
__device__ __forceinline__ void avg_pool_backward(const T* __restrict__ grad_out, T* __restrict__ grad_in, Pool2d g,
                                                  int count_include_pad, jt_i64 divisor_override) {
    const jt_i64 plane_in = g.in_h * g.in_w, total = g.planes * plane_in;
    for (jt_i64 i = global_thread(); i < total; i += grid_threads()) {
        const jt_i64 p = i / plane_in;
        grad_in[i] = avg_pool_grad_at(grad_out + p * g.out_h * g.out_w, g, (i % plane_in) / g.in_w, i % g.in_w, count_include_pad,
                                      divisor_override);
    }
}

template <typename T>
__device__ __forceinline__ void adaptive_avg_pool(const T* __restrict__ x, T* __restrict__ out, jt_i64 planes, jt_i64 in_h,
                                                  jt_i64 in_w, jt_i64 out_h, jt_i64 out_w) {
    const jt_i64 plane_out = out_h * out_w, total = planes * plane_out;
    for (jt_i64 o = global_thread(); o < total; o += grid_threads()) {
        const jt_i64 p = o / plane_out;
        out[o] = adaptive_avg_at(x + p * in_h * in_w, in_h, in_w, out_h, out_w, (o % plane_out) / out_w, o % out_w);
    }
}

template <typename T>
__device__ __forceinline__ void adaptive_avg_pool_backward(const T* __restrict__ grad_out, T* __restrict__ grad_in, jt_i64 planes,
                                                           jt_i64 in_h, jt_i64 in_w, jt_i64 out_h, jt_i64 out_w) {
    const jt_i64 plane_in = in_h * in_w, total = planes * plane_in;
    for (jt_i64 i = global_thread(); i < total; i += grid_threads()) {
        const jt_i64 p = i / plane_in;
        grad_in[i] = adaptive_avg_grad_at(grad_out + p * out_h * out_w, in_h, in_w, out_h, out_w, (i % plane_in) / in_w, i % in_w);
    }
}

template <typename T>
__device__ __forceinline__ void adaptive_max_pool(const T* __restrict__ x, T* __restrict__ out, jt_i64* __restrict__ indices,
                                                  jt_i64 planes, jt_i64 in_h, jt_i64 in_w, jt_i64 out_h, jt_i64 out_w) {
    const jt_i64 plane_out = out_h * out_w, total = planes * plane_out;
    for (jt_i64 o = global_thread(); o < total; o += grid_threads()) {
        const jt_i64 p = o / plane_out;
        jt_i64 index;
        out[o] = adaptive_max_at(x + p * in_h * in_w, in_h, in_w, out_h, out_w, (o % plane_out) / out_w, o % out_w, index);
        indices[o] = index;
    }
}

}  // namespace jt

using namespace jt;

#define JT_POOL(T, suffix) \
    extern "C" __global__ void jt_pool_max_##suffix(const T* x, T* out, jt_i64* indices, Pool2d g) { \
        max_pool<T>(x, out, indices, g); } \
    extern "C" __global__ void jt_pool_max_backward_##suffix(const T* grad_out, const jt_i64* indices, T* grad_in, jt_i64 planes, \
                                                            jt_i64 n, jt_i64 m) { \
        max_pool_backward<T>(grad_out, indices, grad_in, planes, n, m); } \
    extern "C" __global__ void jt_pool_avg_##suffix(const T* x, T* out, Pool2d g, int count_include_pad, jt_i64 divisor_override) { \
        avg_pool<T>(x, out, g, count_include_pad, divisor_override); } \
    extern "C" __global__ void jt_pool_avg_backward_##suffix(const T* grad_out, T* grad_in, Pool2d g, int count_include_pad, \
                                                            jt_i64 divisor_override) { \
        avg_pool_backward<T>(grad_out, grad_in, g, count_include_pad, divisor_override); } \
    extern "C" __global__ void jt_pool_adaptive_avg_##suffix(const T* x, T* out, jt_i64 planes, jt_i64 in_h, jt_i64 in_w, \
                                                            jt_i64 out_h, jt_i64 out_w) { \
        adaptive_avg_pool<T>(x, out, planes, in_h, in_w, out_h, out_w); } \
    extern "C" __global__ void jt_pool_adaptive_avg_backward_##suffix(const T* grad_out, T* grad_in, jt_i64 planes, jt_i64 in_h, \
                                                                     jt_i64 in_w, jt_i64 out_h, jt_i64 out_w) { \
        adaptive_avg_pool_backward<T>(grad_out, grad_in, planes, in_h, in_w, out_h, out_w); } \
    extern "C" __global__ void jt_pool_adaptive_max_##suffix(const T* x, T* out, jt_i64* indices, jt_i64 planes, jt_i64 in_h, \
                                                            jt_i64 in_w, jt_i64 out_h, jt_i64 out_w) { \
        adaptive_max_pool<T>(x, out, indices, planes, in_h, in_w, out_h, out_w); }

JT_POOL(float, f32)
JT_POOL(double, f64)
