// Layer norm over rows, shared by layernorm.cu (the declared native_layer_norm and its backward) and the JIT's
// generated kernels of a pointwise chain fused into a layer norm (FusedKernels.layerNormSource), so that both
// normalise a row with the same arithmetic. One block normalises a row (grid-stride over rows); the row's values come
// from a loader (a load of x, or the fused formula evaluated at the element), read three times: the sum, the centred
// sum of squares (two passes, as the CPU backend's CpuLayerNormKernels), then (v - mean) * rstd * w + b. Sums are in
// double, combined across the block by warp shuffles and one shared-memory stage in a fixed order (deterministic);
// mean and rstd = 1 / sqrt(var + eps) in double, rounded to the compute type A (float for 16/32-bit rows, double for
// float64) for the output, as the CPU rounds them to the row's type.
#pragma once
#include "jtorch_cuda.cuh"

namespace jt {

// Sums a and b across the block; every thread gets the totals, added in the same order (warp by warp) by all of them.
// `shared` holds 64 doubles.
__device__ __forceinline__ void ln_block_sum2(double& a, double& b, double* shared) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    #pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        a += __shfl_xor_sync(0xffffffffu, a, offset);
        b += __shfl_xor_sync(0xffffffffu, b, offset);
    }
    if (lane == 0) {
        shared[warp] = a;
        shared[32 + warp] = b;
    }
    __syncthreads();
    a = 0.0;
    b = 0.0;
    for (int w = 0; w < warps; w++) {
        a += shared[w];
        b += shared[32 + w];
    }
    __syncthreads();
}

__device__ __forceinline__ float ln_fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double ln_fma(double a, double b, double c) { return fma(a, b, c); }

// (v - m) * r, then the affine: fma(y, w, b) where both are given (as the CPU's rowF32), y * w, or y + b.
template <typename A, typename W>
__device__ __forceinline__ A ln_affine(A v, A m, A r, const W* __restrict__ w, const W* __restrict__ b, jt_i64 j) {
    A y = (v - m) * r;
    if (w != nullptr) {
        const A wj = (A)Scalar<W>::load(w[j]);
        y = b != nullptr ? ln_fma(y, wj, (A)Scalar<W>::load(b[j])) : y * wj;
    } else if (b != nullptr) {
        y = y + (A)Scalar<W>::load(b[j]);
    }
    return y;
}

// Row `row` of cols values load(j) normalised into out_row[j] (type O), its mean and rstd into mean[row], rstd[row]
// (type S) by thread 0. Every thread of the block calls it.
template <typename A, typename O, typename W, typename S, typename Load>
__device__ __forceinline__ void ln_row(Load load, jt_i64 cols, const W* __restrict__ w, const W* __restrict__ b, double eps,
                                       O* __restrict__ out_row, S* __restrict__ mean, S* __restrict__ rstd, jt_i64 row,
                                       double* shared) {
    double sum = 0.0, unused = 0.0;
    for (jt_i64 j = threadIdx.x; j < cols; j += blockDim.x) sum += (double)load(j);
    ln_block_sum2(sum, unused, shared);
    const double m = sum / (double)cols;
    double sq = 0.0;
    unused = 0.0;
    for (jt_i64 j = threadIdx.x; j < cols; j += blockDim.x) {
        const double d = (double)load(j) - m;
        sq += d * d;
    }
    ln_block_sum2(sq, unused, shared);
    const double r = 1.0 / sqrt(sq / (double)cols + eps);
    const A ma = (A)m, ra = (A)r;
    for (jt_i64 j = threadIdx.x; j < cols; j += blockDim.x) out_row[j] = Scalar<O>::store(ln_affine<A, W>(load(j), ma, ra, w, b, j));
    if (threadIdx.x == 0) {
        mean[row] = (S)m;
        rstd[row] = (S)r;
    }
}

}  // namespace jt
