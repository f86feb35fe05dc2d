// Kernels that refuse some values of their inputs, reporting into a record of the device's check log (IndexCheckLog,
// mapped pinned memory the host reads at its next synchronisation) instead of asserting: the first bad element's
// row-major position goes into record[0] by atomicMin, so nothing is read back at the call.
//   jt_bce_<f32|f64>(out, x, t, w, n, record): binary_cross_entropy's loss of each element,
//     (t - 1) * max(log1p(-x), -100) - t * max(log(x), -100), times w where w is not null, each step rounded once in
//     the dtype (the CPU's order: its kernel and the composition of pointwise kernels it replaced), an x outside [0, 1]
//     or NaN reported (its loss left NaN);
//   jt_unit_interval_<f32|f64>(p, n, record): bernoulli's probabilities, the first outside [0, 1] or NaN reported.
// Every operand is contiguous, of n elements; grid-stride over n.
#include "jtorch_cuda.cuh"

namespace jt {

__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

__device__ __forceinline__ float nan_like(float) { return __int_as_float(0x7fc00000); }
__device__ __forceinline__ double nan_like(double) { return __longlong_as_double(0x7ff8000000000000LL); }

// NaN fails both comparisons.
template <typename T> __device__ __forceinline__ bool in_unit_interval(T v) { return v >= (T)0 && v <= (T)1; }

template <typename T> __device__ __forceinline__ T at_least_minus_100(T v) { return v < (T)-100 ? (T)-100 : v; }

template <typename T>
__device__ __forceinline__ void bce(T* out, const T* x, const T* t, const T* w, jt_i64 n, jt_u64* record) {
    for (jt_i64 i = blockIdx.x * (jt_i64)blockDim.x + threadIdx.x; i < n; i += (jt_i64)gridDim.x * blockDim.x) {
        T v = x[i];
        if (!in_unit_interval(v)) {
            atomicMin(record, (jt_u64)i);
            out[i] = nan_like(v);
            continue;
        }
        T log_x = at_least_minus_100(log(v));
        T log_1mx = at_least_minus_100(log1p(-v));
        T tv = t[i];
        T loss = sub_rn(mul_rn(sub_rn(tv, (T)1), log_1mx), mul_rn(tv, log_x));
        out[i] = w != nullptr ? mul_rn(loss, w[i]) : loss;
    }
}

template <typename T> __device__ __forceinline__ void unit_interval(const T* p, jt_i64 n, jt_u64* record) {
    for (jt_i64 i = blockIdx.x * (jt_i64)blockDim.x + threadIdx.x; i < n; i += (jt_i64)gridDim.x * blockDim.x) {
        if (!in_unit_interval(p[i])) atomicMin(record, (jt_u64)i);
    }
}

}  // namespace jt

using namespace jt;

extern "C" __global__ void jt_bce_f32(float* out, const float* x, const float* t, const float* w, jt_i64 n, jt_u64* record) {
    bce(out, x, t, w, n, record);
}

extern "C" __global__ void jt_bce_f64(double* out, const double* x, const double* t, const double* w, jt_i64 n, jt_u64* record) {
    bce(out, x, t, w, n, record);
}

extern "C" __global__ void jt_unit_interval_f32(const float* p, jt_i64 n, jt_u64* record) { unit_interval(p, n, record); }

extern "C" __global__ void jt_unit_interval_f64(const double* p, jt_i64 n, jt_u64* record) { unit_interval(p, n, record); }
