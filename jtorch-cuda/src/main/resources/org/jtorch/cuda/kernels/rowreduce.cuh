// Reductions of one row by one block, shared by reduce.cu (the declared reductions and softmax) and the JIT's generated
// kernels of a pointwise chain fused into a softmax (FusedKernels.softmaxSource), so that both reduce a row in the same
// order and normalise it with the same arithmetic. Each thread accumulates a strided slice (i = threadIdx.x, + blockDim.x,
// ...), then warp shuffles and one shared-memory stage combine the block's warps in a fixed order (deterministic).
#pragma once
#include "jtorch_cuda.cuh"

namespace jt {

// combine: the reduction; pad: what a lane without a warp result contributes in block_reduce's second
// stage (the identity for sums and products; any real value, here the first warp's, for max and min).
struct SumReduce {
    template <typename A> __device__ static A combine(A a, A b) { return a + b; }
    template <typename A> __device__ static A pad(A) { return A(0); }
};
struct MaxReduce {
    template <typename A> __device__ static A combine(A a, A b) { return nan_max(a, b); }
    template <typename A> __device__ static A pad(A first) { return first; }
};
struct MinReduce {
    template <typename A> __device__ static A combine(A a, A b) { return nan_min(a, b); }
    template <typename A> __device__ static A pad(A first) { return first; }
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
        v = lane < warps ? shared[lane] : R::pad(shared[0]);
        v = warp_reduce<A, R>(v);
    }
    __syncthreads();
    return v;
}

// The row's value of `v` in every thread (block_reduce leaves it in thread 0 only).
template <typename A, typename R> __device__ __forceinline__ A block_all_reduce(A v, A* shared, A* result) {
    v = block_reduce<A, R>(v, shared);
    if (threadIdx.x == 0) *result = v;
    __syncthreads();
    v = *result;
    __syncthreads();
    return v;
}

// +infinity without <math.h>'s INFINITY (NVRTC has no standard headers).
template <typename A> __device__ __forceinline__ A infinity();
template <> __device__ __forceinline__ float infinity<float>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double infinity<double>() { return __longlong_as_double(0x7ff0000000000000LL); }

// A row of T read as the accumulator type A: softmax_row's loader in the declared softmax.
template <typename T, typename A> struct RowLoad {
    const T* __restrict__ row;
    __device__ __forceinline__ A operator()(jt_i64 i) const { return (A)Scalar<T>::load(row[i]); }
};

// The maximum of the row_length values load(i) (NaN propagates; -inf for an empty row) in every thread.
template <typename A, typename Load>
__device__ __forceinline__ A load_max(Load load, jt_i64 row_length, A* shared, A* result) {
    A m = -infinity<A>();
    for (jt_i64 i = threadIdx.x; i < row_length; i += blockDim.x) m = nan_max(m, load(i));
    return block_all_reduce<A, MaxReduce>(m, shared, result);
}

// The row maximum of a row of T in every thread.
template <typename T, typename A>
__device__ __forceinline__ A row_max(const T* __restrict__ row, jt_i64 row_length, A* shared, A* result) {
    return load_max<A>(RowLoad<T, A>{row}, row_length, shared, result);
}

// Softmax (log_softmax != 0: log-softmax) of the row_length values load(i) (type A, read three times: the maximum, the
// sum of exp(v - max), the output) into orow (type T). exp(v - max) / sum, or v - (max + log(sum)); NaN propagates
// through the maximum; a row of -inf gives NaN, as PyTorch. Every thread of the block calls it; `shared` holds 32 values.
template <typename A, typename T, typename Load>
__device__ __forceinline__ void softmax_row(Load load, T* __restrict__ orow, jt_i64 row_length, int log_softmax, A* shared, A* result) {
    const A m = load_max<A>(load, row_length, shared, result);
    A s = A(0);
    for (jt_i64 i = threadIdx.x; i < row_length; i += blockDim.x) s += exp(load(i) - m);
    s = block_all_reduce<A, SumReduce>(s, shared, result);
    if (log_softmax) {
        const A shift = m + log(s);
        for (jt_i64 i = threadIdx.x; i < row_length; i += blockDim.x) orow[i] = Scalar<T>::store(load(i) - shift);
    } else {
        for (jt_i64 i = threadIdx.x; i < row_length; i += blockDim.x) orow[i] = Scalar<T>::store(exp(load(i) - m) / s);
    }
}

}  // namespace jt
