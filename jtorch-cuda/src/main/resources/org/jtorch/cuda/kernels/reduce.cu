// Row reductions: out[r] = reduce(x[r * row_length .. (r + 1) * row_length)) for contiguous rows
// (the Java side moves the reduced dimensions last). One block per row, grid-stride over rows; each
// thread accumulates a strided slice, then warp shuffles and one shared-memory pass combine the
// block's 32 warp results. Accumulation is in Scalar<T>::acc widened to float / double / int64.
// Entries: jt_reduce_<sum|mean|max|min>_<dtype> (sums of integral dtypes write int64, as PyTorch's); launch with a block size that is a multiple of 32
// and at most 1024. "mean" is sum times `scale` (1 / row_length, passed by the caller).
#include "rowreduce.cuh"

namespace jt {

template <typename T> struct Accumulate { typedef typename Scalar<T>::acc type; };
template <> struct Accumulate<jt_u8> { typedef jt_i64 type; };
template <> struct Accumulate<jt_i8> { typedef jt_i64 type; };
template <> struct Accumulate<jt_i16> { typedef jt_i64 type; };
template <> struct Accumulate<jt_i32> { typedef jt_i64 type; };

// The dtype of a sum's result: integral sums are int64, as PyTorch's.
template <typename T> struct SumResult { typedef T type; };
template <> struct SumResult<jt_u8> { typedef jt_i64 type; };
template <> struct SumResult<jt_i8> { typedef jt_i64 type; };
template <> struct SumResult<jt_i16> { typedef jt_i64 type; };
template <> struct SumResult<jt_i32> { typedef jt_i64 type; };

// Sum (and mean, with scale != 1): identity 0.
template <typename T, typename Out>
__device__ __forceinline__ void reduce_sum_rows(const T* __restrict__ x, Out* __restrict__ out, jt_i64 rows, jt_i64 row_length,
                                                double scale) {
    typedef typename Accumulate<T>::type A;
    __shared__ A shared[32];
    for (jt_i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* row = x + r * row_length;
        A acc = A(0);
        for (jt_i64 i = threadIdx.x; i < row_length; i += blockDim.x) acc += (A)Scalar<T>::load(row[i]);
        acc = block_reduce<A, SumReduce>(acc, shared);
        if (threadIdx.x == 0) out[r] = Scalar<Out>::store(scale == 1.0 ? acc : (A)(acc * scale));
    }
}

// Max / min: each thread starts from its first element (no identity needed, so NaN and the full
// integer range behave); threads with no element take the row's first. Empty rows are rejected on the host.
template <typename T, typename R>
__device__ __forceinline__ void reduce_extreme_rows(const T* __restrict__ x, T* __restrict__ out, jt_i64 rows, jt_i64 row_length) {
    typedef typename Accumulate<T>::type A;
    __shared__ A shared[32];
    for (jt_i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* row = x + r * row_length;
        A acc = (A)Scalar<T>::load(row[threadIdx.x < row_length ? threadIdx.x : 0]);
        for (jt_i64 i = threadIdx.x + blockDim.x; i < row_length; i += blockDim.x) acc = R::combine(acc, (A)Scalar<T>::load(row[i]));
        acc = block_reduce<A, R>(acc, shared);
        if (threadIdx.x == 0) out[r] = Scalar<T>::store(acc);
    }
}

}  // namespace jt

using namespace jt;

#define JT_REDUCE(T, suffix) \
    extern "C" __global__ void jt_reduce_sum_##suffix(const T* x, SumResult<T>::type* out, jt_i64 rows, jt_i64 row_length) { \
        reduce_sum_rows<T, SumResult<T>::type>(x, out, rows, row_length, 1.0); } \
    extern "C" __global__ void jt_reduce_max_##suffix(const T* x, T* out, jt_i64 rows, jt_i64 row_length) { \
        reduce_extreme_rows<T, MaxReduce>(x, out, rows, row_length); } \
    extern "C" __global__ void jt_reduce_min_##suffix(const T* x, T* out, jt_i64 rows, jt_i64 row_length) { \
        reduce_extreme_rows<T, MinReduce>(x, out, rows, row_length); }
#define JT_REDUCE_MEAN(T, suffix) \
    extern "C" __global__ void jt_reduce_mean_##suffix(const T* x, T* out, jt_i64 rows, jt_i64 row_length) { \
        reduce_sum_rows<T, T>(x, out, rows, row_length, 1.0 / (double)row_length); }

JT_REDUCE(half, f16)
JT_REDUCE(bfloat16, bf16)
JT_REDUCE(float, f32)
JT_REDUCE(double, f64)
JT_REDUCE(jt_u8, u8)
JT_REDUCE(jt_i8, i8)
JT_REDUCE(jt_i16, i16)
JT_REDUCE(jt_i32, i32)
JT_REDUCE(jt_i64, i64)
JT_REDUCE_MEAN(half, f16)
JT_REDUCE_MEAN(bfloat16, bf16)
JT_REDUCE_MEAN(float, f32)
JT_REDUCE_MEAN(double, f64)

// ---------------------------------------------------------------------------------------------------
// The rest of the reduction family, same row layout (rows x row_length, contiguous rows, one block a
// row, grid-stride over rows; blockDim.x a multiple of 32, at most 1024):
//   jt_reduce_prod_<dtype>(x, out, rows, row_length)             integral products write int64
//   jt_reduce_<any|all>_<dtype>(x, jt_u8* out, rows, row_length)   1 / 0 bytes (valid bool and uint8); NaN is nonzero;
//                                        empty rows: any 0, all 1
//   jt_reduce_norm_<f16|bf16|f32|f64>(x, out, rows, row_length, double p)
//                                        (sum |x|^p)^(1/p); p = +-inf max / min |x|; p = 0 count of nonzeros; empty rows 0
//   jt_argreduce_<max|min>_<dtype>(x, values, indices, rows, row_length)
//                                        first occurrence on ties, the first NaN beats every number; values may be null
//   jt_logsumexp_<f16|bf16|f32|f64>(x, out, rows, row_length)   shifted by the row maximum unless it is infinite; empty -inf
//   jt_variance_<f16|bf16|f32|f64>(x, out, rows, row_length, double correction, int sqrt)
//                                        two passes in double: (sum d^2 - (sum d)^2 / N) / max(0, N - correction)
//   jt_softmax_<f16|bf16|f32|f64>(x, out, rows, row_length, int log)   out has x's row layout
//   jt_scan_<sum|prod>_<dtype>(x, out, rows, row_length)       inclusive scan of each row, one thread a row,
//                                        in the dtype's accumulator (float for 16/32-bit floats, int64 for integers)
// ---------------------------------------------------------------------------------------------------

namespace jt {

struct ProdReduce {
    template <typename A> __device__ static A combine(A a, A b) { return a * b; }
    template <typename A> __device__ static A pad(A) { return A(1); }
};

template <typename T, typename Out>
__device__ __forceinline__ void reduce_prod_rows(const T* __restrict__ x, Out* __restrict__ out, jt_i64 rows, jt_i64 row_length) {
    typedef typename Accumulate<T>::type A;
    __shared__ A shared[32];
    for (jt_i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* row = x + r * row_length;
        A acc = A(1);
        for (jt_i64 i = threadIdx.x; i < row_length; i += blockDim.x) acc *= (A)Scalar<T>::load(row[i]);
        acc = block_reduce<A, ProdReduce>(acc, shared);
        if (threadIdx.x == 0) out[r] = Scalar<Out>::store(acc);
    }
}

// any (ALL false) / all of x != 0 over each row, as bytes 0 / 1.
template <typename T, bool ALL>
__device__ __forceinline__ void reduce_logical_rows(const T* __restrict__ x, jt_u8* __restrict__ out, jt_i64 rows, jt_i64 row_length) {
    __shared__ int shared[32];
    for (jt_i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* row = x + r * row_length;
        int acc = ALL ? 1 : 0;
        for (jt_i64 i = threadIdx.x; i < row_length; i += blockDim.x) {
            const int nonzero = Scalar<T>::load(row[i]) != 0 ? 1 : 0;  // NaN != 0
            acc = ALL ? (acc & nonzero) : (acc | nonzero);
        }
        acc = ALL ? block_reduce<int, MinReduce>(acc, shared) : block_reduce<int, MaxReduce>(acc, shared);
        if (threadIdx.x == 0) out[r] = (jt_u8)acc;
    }
}

template <typename T>
__device__ __forceinline__ void reduce_norm_rows(const T* __restrict__ x, T* __restrict__ out, jt_i64 rows, jt_i64 row_length,
                                                 double p) {
    typedef typename Scalar<T>::acc A;
    __shared__ A shared[32];
    const bool is_max = isinf(p) && p > 0, is_min = isinf(p) && p < 0;
    const A pa = (A)p;
    for (jt_i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* row = x + r * row_length;
        A acc = is_min ? infinity<A>() : A(0);
        for (jt_i64 i = threadIdx.x; i < row_length; i += blockDim.x) {
            A a = fabs((A)Scalar<T>::load(row[i]));
            if (is_max) acc = nan_max(acc, a);
            else if (is_min) acc = nan_min(acc, a);
            else if (p == 2) acc += a * a;
            else if (p == 1) acc += a;
            else if (p == 0) acc += a != A(0) ? A(1) : A(0);
            else acc += pow(a, pa);
        }
        if (is_max) acc = block_reduce<A, MaxReduce>(acc, shared);
        else if (is_min) acc = block_reduce<A, MinReduce>(acc, shared);
        else acc = block_reduce<A, SumReduce>(acc, shared);
        if (threadIdx.x == 0) {
            A result = row_length == 0 ? A(0)
                     : p == 2 ? sqrt(acc)
                     : (p == 1 || p == 0 || is_max || is_min) ? acc
                     : pow(acc, A(1) / pa);
            out[r] = Scalar<T>::store(result);
        }
    }
}

// Whether (a, ia) beats (b, ib) for argmax (MAX) / argmin: a NaN beats a number, the lower index wins ties.
template <typename A, bool MAX> __device__ __forceinline__ bool arg_better(A a, jt_i64 ia, A b, jt_i64 ib) {
    const bool an = a != a, bn = b != b;
    if (an || bn) return an && bn ? ia < ib : an;
    if (a == b) return ia < ib;
    return MAX ? a > b : a < b;
}

template <typename T, bool MAX>
__device__ __forceinline__ void arg_reduce_rows(const T* __restrict__ x, T* __restrict__ values, jt_i64* __restrict__ indices,
                                                jt_i64 rows, jt_i64 row_length) {
    typedef typename Accumulate<T>::type A;
    __shared__ A shared_v[32];
    __shared__ jt_i64 shared_i[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    for (jt_i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* row = x + r * row_length;
        // Threads without an element start from element 0, a real candidate.
        jt_i64 idx = threadIdx.x < row_length ? (jt_i64)threadIdx.x : 0;
        A v = (A)Scalar<T>::load(row[idx]);
        for (jt_i64 i = threadIdx.x + blockDim.x; i < row_length; i += blockDim.x) {
            A c = (A)Scalar<T>::load(row[i]);
            if (arg_better<A, MAX>(c, i, v, idx)) { v = c; idx = i; }
        }
        #pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) {
            A ov = (A)__shfl_down_sync(0xffffffffu, v, offset);
            jt_i64 oi = (jt_i64)__shfl_down_sync(0xffffffffu, (long long)idx, offset);
            if (arg_better<A, MAX>(ov, oi, v, idx)) { v = ov; idx = oi; }
        }
        if (lane == 0) { shared_v[warp] = v; shared_i[warp] = idx; }
        __syncthreads();
        if (warp == 0) {
            v = lane < warps ? shared_v[lane] : shared_v[0];
            idx = lane < warps ? shared_i[lane] : shared_i[0];
            #pragma unroll
            for (int offset = 16; offset > 0; offset >>= 1) {
                A ov = (A)__shfl_down_sync(0xffffffffu, v, offset);
                jt_i64 oi = (jt_i64)__shfl_down_sync(0xffffffffu, (long long)idx, offset);
                if (arg_better<A, MAX>(ov, oi, v, idx)) { v = ov; idx = oi; }
            }
            if (lane == 0) {
                indices[r] = idx;
                if (values != nullptr) values[r] = row[idx];
            }
        }
        __syncthreads();
    }
}

template <typename T>
__device__ __forceinline__ void logsumexp_rows(const T* __restrict__ x, T* __restrict__ out, jt_i64 rows, jt_i64 row_length) {
    typedef typename Scalar<T>::acc A;
    __shared__ A shared[32];
    __shared__ A result;
    for (jt_i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* row = x + r * row_length;
        A m = row_max<T, A>(row, row_length, shared, &result);
        const A shift = isinf(m) ? A(0) : m;  // inf - inf would be NaN, as PyTorch
        A s = A(0);
        for (jt_i64 i = threadIdx.x; i < row_length; i += blockDim.x) s += exp((A)Scalar<T>::load(row[i]) - shift);
        s = block_reduce<A, SumReduce>(s, shared);
        if (threadIdx.x == 0) out[r] = Scalar<T>::store(log(s) + shift);
    }
}

template <typename T>
__device__ __forceinline__ void variance_rows(const T* __restrict__ x, T* __restrict__ out, jt_i64 rows, jt_i64 row_length,
                                              double correction, int take_sqrt) {
    __shared__ double shared[32];
    __shared__ double result;
    const double count = (double)row_length;
    for (jt_i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* row = x + r * row_length;
        double s = 0;
        for (jt_i64 i = threadIdx.x; i < row_length; i += blockDim.x) s += (double)Scalar<T>::load(row[i]);
        const double mean = block_all_reduce<double, SumReduce>(s, shared, &result) / count;
        double m2 = 0, sd = 0;
        for (jt_i64 i = threadIdx.x; i < row_length; i += blockDim.x) {
            const double d = (double)Scalar<T>::load(row[i]) - mean;
            m2 += d * d;
            sd += d;
        }
        m2 = block_reduce<double, SumReduce>(m2, shared);
        sd = block_reduce<double, SumReduce>(sd, shared);
        if (threadIdx.x == 0) {
            const double divisor = count - correction > 0 ? count - correction : 0.0;
            const double var = (m2 - sd * sd / count) / divisor;
            out[r] = Scalar<T>::store(take_sqrt ? sqrt(var) : var);
        }
    }
}

template <typename T>
__device__ __forceinline__ void softmax_rows(const T* __restrict__ x, T* __restrict__ out, jt_i64 rows, jt_i64 row_length, int log_softmax) {
    typedef typename Scalar<T>::acc A;
    __shared__ A shared[32];
    __shared__ A result;
    for (jt_i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        softmax_row<A>(RowLoad<T, A>{x + r * row_length}, out + r * row_length, row_length, log_softmax, shared, &result);
    }
}

template <typename T, bool PROD>
__device__ __forceinline__ void scan_rows(const T* __restrict__ x, T* __restrict__ out, jt_i64 rows, jt_i64 row_length) {
    typedef typename Accumulate<T>::type A;
    for (jt_i64 r = (jt_i64)blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += (jt_i64)gridDim.x * blockDim.x) {
        const T* row = x + r * row_length;
        T* orow = out + r * row_length;
        A acc = PROD ? A(1) : A(0);
        for (jt_i64 i = 0; i < row_length; i++) {
            const A v = (A)Scalar<T>::load(row[i]);
            acc = PROD ? acc * v : acc + v;
            orow[i] = Scalar<T>::store(acc);
        }
    }
}

}  // namespace jt

#define JT_REDUCE_MORE(T, suffix) \
    extern "C" __global__ void jt_reduce_prod_##suffix(const T* x, SumResult<T>::type* out, jt_i64 rows, jt_i64 row_length) { \
        reduce_prod_rows<T, SumResult<T>::type>(x, out, rows, row_length); } \
    extern "C" __global__ void jt_reduce_any_##suffix(const T* x, jt_u8* out, jt_i64 rows, jt_i64 row_length) { \
        reduce_logical_rows<T, false>(x, out, rows, row_length); } \
    extern "C" __global__ void jt_reduce_all_##suffix(const T* x, jt_u8* out, jt_i64 rows, jt_i64 row_length) { \
        reduce_logical_rows<T, true>(x, out, rows, row_length); } \
    extern "C" __global__ void jt_argreduce_max_##suffix(const T* x, T* values, jt_i64* indices, jt_i64 rows, jt_i64 row_length) { \
        arg_reduce_rows<T, true>(x, values, indices, rows, row_length); } \
    extern "C" __global__ void jt_argreduce_min_##suffix(const T* x, T* values, jt_i64* indices, jt_i64 rows, jt_i64 row_length) { \
        arg_reduce_rows<T, false>(x, values, indices, rows, row_length); } \
    extern "C" __global__ void jt_scan_sum_##suffix(const T* x, T* out, jt_i64 rows, jt_i64 row_length) { \
        scan_rows<T, false>(x, out, rows, row_length); } \
    extern "C" __global__ void jt_scan_prod_##suffix(const T* x, T* out, jt_i64 rows, jt_i64 row_length) { \
        scan_rows<T, true>(x, out, rows, row_length); }
#define JT_REDUCE_FLOATING(T, suffix) \
    extern "C" __global__ void jt_reduce_norm_##suffix(const T* x, T* out, jt_i64 rows, jt_i64 row_length, double p) { \
        reduce_norm_rows<T>(x, out, rows, row_length, p); } \
    extern "C" __global__ void jt_logsumexp_##suffix(const T* x, T* out, jt_i64 rows, jt_i64 row_length) { \
        logsumexp_rows<T>(x, out, rows, row_length); } \
    extern "C" __global__ void jt_variance_##suffix(const T* x, T* out, jt_i64 rows, jt_i64 row_length, double correction, int take_sqrt) { \
        variance_rows<T>(x, out, rows, row_length, correction, take_sqrt); } \
    extern "C" __global__ void jt_softmax_##suffix(const T* x, T* out, jt_i64 rows, jt_i64 row_length, int log_softmax) { \
        softmax_rows<T>(x, out, rows, row_length, log_softmax); }

JT_REDUCE_MORE(half, f16)
JT_REDUCE_MORE(bfloat16, bf16)
JT_REDUCE_MORE(float, f32)
JT_REDUCE_MORE(double, f64)
JT_REDUCE_MORE(jt_u8, u8)
JT_REDUCE_MORE(jt_i8, i8)
JT_REDUCE_MORE(jt_i16, i16)
JT_REDUCE_MORE(jt_i32, i32)
JT_REDUCE_MORE(jt_i64, i64)
JT_REDUCE_FLOATING(half, f16)
JT_REDUCE_FLOATING(bfloat16, bf16)
JT_REDUCE_FLOATING(float, f32)
JT_REDUCE_FLOATING(double, f64)

// ---------------------------------------------------------------------------------------------------
// Sort: jt_argsort_<dtype>(x, jt_i64* scratch, jt_i64* out, rows, row_length, padded, int descending, jt_i64 k)
// writes to each row of `out` (k a row) the positions of the row's first k elements in sorted order (stable; NaN above every
// number; -0.0 equals 0.0). One block a row, grid-stride over rows: a bitonic sort of (key, position)
// pairs, compared key first and position second, so the order is total and therefore stable. The block
// sorts positions in its own `padded` (a power of two >= row_length) slots of `scratch`
// (gridDim.x * padded int64s), reading keys from x; padding positions (-1) sort last.
// ---------------------------------------------------------------------------------------------------

namespace jt {

template <typename A> __device__ __forceinline__ bool is_nan_key(A a) { return a != a; }

// -1 / 0 / 1 as a is below / equal to / above b, NaN above every number.
template <typename A> __device__ __forceinline__ int key_compare(A a, A b) {
    if (a < b) return -1;
    if (a > b) return 1;
    const bool na = is_nan_key(a), nb = is_nan_key(b);
    return na == nb ? 0 : (na ? 1 : -1);
}

// Whether position p comes strictly before position q in the row's sorted order.
template <typename T>
__device__ __forceinline__ bool sorts_before(const T* __restrict__ row, jt_i64 p, jt_i64 q, int descending) {
    if (p < 0) return false;
    if (q < 0) return true;
    int c = key_compare(Scalar<T>::load(row[p]), Scalar<T>::load(row[q]));
    if (descending) c = -c;
    return c < 0 || (c == 0 && p < q);
}

template <typename T>
__device__ __forceinline__ void argsort_rows(const T* __restrict__ x, jt_i64* __restrict__ scratch, jt_i64* __restrict__ out,
                                             jt_i64 rows, jt_i64 row_length, jt_i64 padded, int descending, jt_i64 k_out) {
    jt_i64* s = scratch + (jt_i64)blockIdx.x * padded;
    for (jt_i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* row = x + r * row_length;
        for (jt_i64 i = threadIdx.x; i < padded; i += blockDim.x) s[i] = i < row_length ? i : -1;
        __syncthreads();
        for (jt_i64 k = 2; k <= padded; k <<= 1) {
            for (jt_i64 j = k >> 1; j > 0; j >>= 1) {
                for (jt_i64 i = threadIdx.x; i < padded; i += blockDim.x) {
                    const jt_i64 l = i ^ j;
                    if (l <= i) continue;
                    const jt_i64 a = s[i], b = s[l];
                    const bool up = (i & k) == 0;
                    if (up ? sorts_before(row, b, a, descending) : sorts_before(row, a, b, descending)) {
                        s[i] = b;
                        s[l] = a;
                    }
                }
                __syncthreads();
            }
        }
        for (jt_i64 i = threadIdx.x; i < k_out; i += blockDim.x) out[r * k_out + i] = s[i];
        __syncthreads();
    }
}

}  // namespace jt

#define JT_ARGSORT(T, suffix) \
    extern "C" __global__ void jt_argsort_##suffix(const T* x, jt_i64* scratch, jt_i64* out, jt_i64 rows, jt_i64 row_length, \
                                                   jt_i64 padded, int descending, jt_i64 k) { \
        argsort_rows<T>(x, scratch, out, rows, row_length, padded, descending, k); }

JT_ARGSORT(half, f16)
JT_ARGSORT(bfloat16, bf16)
JT_ARGSORT(float, f32)
JT_ARGSORT(double, f64)
JT_ARGSORT(jt_u8, u8)
JT_ARGSORT(jt_i8, i8)
JT_ARGSORT(jt_i16, i16)
JT_ARGSORT(jt_i32, i32)
JT_ARGSORT(jt_i64, i64)

// ---------------------------------------------------------------------------------------------------
// jt_searchsorted_<dtype>(boundaries, values, jt_i64* out, rows, m, n, boundary_rows, int right): one thread a
// value (grid-stride over rows * m), PyTorch's binary search in the value's row of `boundaries` ([boundary_rows, n],
// boundary_rows 1 or rows): move right while !(b >= v), or !(b > v) when right.
// ---------------------------------------------------------------------------------------------------

namespace jt {

template <typename T>
__device__ __forceinline__ void searchsorted_values(const T* __restrict__ boundaries, const T* __restrict__ values,
                                                    jt_i64* __restrict__ out, jt_i64 rows, jt_i64 m, jt_i64 n,
                                                    jt_i64 boundary_rows, int right) {
    const jt_i64 total = rows * m;
    for (jt_i64 i = (jt_i64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (jt_i64)gridDim.x * blockDim.x) {
        const jt_i64 r = i / m;
        const T* b = boundaries + (boundary_rows == 1 ? 0 : r) * n;
        const typename Scalar<T>::acc v = Scalar<T>::load(values[i]);
        jt_i64 lo = 0, hi = n;
        while (lo < hi) {
            const jt_i64 mid = lo + ((hi - lo) >> 1);
            const typename Scalar<T>::acc x = Scalar<T>::load(b[mid]);
            if (right ? !(x > v) : !(x >= v)) lo = mid + 1;
            else hi = mid;
        }
        out[i] = lo;
    }
}

}  // namespace jt

#define JT_SEARCHSORTED(T, suffix) \
    extern "C" __global__ void jt_searchsorted_##suffix(const T* boundaries, const T* values, jt_i64* out, jt_i64 rows, jt_i64 m, \
                                                        jt_i64 n, jt_i64 boundary_rows, int right) { \
        searchsorted_values<T>(boundaries, values, out, rows, m, n, boundary_rows, right); }

JT_SEARCHSORTED(half, f16)
JT_SEARCHSORTED(bfloat16, bf16)
JT_SEARCHSORTED(float, f32)
JT_SEARCHSORTED(double, f64)
JT_SEARCHSORTED(jt_u8, u8)
JT_SEARCHSORTED(jt_i8, i8)
JT_SEARCHSORTED(jt_i16, i16)
JT_SEARCHSORTED(jt_i32, i32)
JT_SEARCHSORTED(jt_i64, i64)
