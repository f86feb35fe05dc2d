// Row reductions: out[r] = reduce(x[r * row_length .. (r + 1) * row_length)) for contiguous rows
// (the Java side moves the reduced dimensions last). One block per row, grid-stride over rows; each
// thread accumulates a strided slice, then warp shuffles and one shared-memory pass combine the
// block's 32 warp results. Accumulation is in Scalar<T>::acc widened to float / double / int64.
// Entries: jt_reduce_<sum|mean|max|min>_<dtype> (sums of integral dtypes write int64, as PyTorch's); launch with a block size that is a multiple of 32
// and at most 1024. "mean" is sum times `scale` (1 / row_length, passed by the caller).
#include "jtorch_cuda.cuh"

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

struct SumReduce {
    template <typename A> __device__ static A combine(A a, A b) { return a + b; }
};
struct MaxReduce {
    template <typename A> __device__ static A combine(A a, A b) { return nan_max(a, b); }
};
struct MinReduce {
    template <typename A> __device__ static A combine(A a, A b) { return nan_min(a, b); }
};

template <typename A, typename R> __device__ __forceinline__ A warp_reduce(A v) {
    #pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v = R::combine(v, (A)__shfl_down_sync(0xffffffffu, v, offset));
    return v;
}

// Reduces `v` across the block; the result is valid in thread 0. `shared` holds 32 values.
template <typename A, typename R> __device__ __forceinline__ A block_reduce(A v, A* shared) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    v = warp_reduce<A, R>(v);
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < warps ? shared[lane] : shared[0];
        v = warp_reduce<A, R>(v);
    }
    __syncthreads();
    return v;
}

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
