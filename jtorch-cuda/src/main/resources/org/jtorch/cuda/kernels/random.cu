// Random numbers from Philox4x32-10 (jtorch_cuda.cuh). Element i uses word (i % 4) of the block
// philox(counter = {i / 4 (64-bit), offset (64-bit)}, key = seed), so the result depends only on
// (seed, offset, i): any launch shape gives the same tensor, and a generator advances `offset` by
// ceil(n / 4) per call. Normals use Box-Muller on words (0, 1) and (2, 3) of the same block.
// Entries: jt_random_uniform_<dtype>(out, n, seed, offset, low, high) -> [low, high);
//          jt_random_normal_<dtype>(out, n, seed, offset, mean, std).
#include "jtorch_cuda.cuh"

namespace jt {

__device__ __forceinline__ U32x4 philox_block(jt_u64 seed, jt_u64 offset, jt_u64 group) {
    U32x4 ctr = {(jt_u32)group, (jt_u32)(group >> 32), (jt_u32)offset, (jt_u32)(offset >> 32)};
    return philox4x32_10(ctr, (jt_u32)seed, (jt_u32)(seed >> 32));
}

__device__ __forceinline__ jt_u32 word(const U32x4& r, int k) {
    return k == 0 ? r.x : k == 1 ? r.y : k == 2 ? r.z : r.w;
}

// [0, 1) with 24 random bits (float) or 53 (double, from two words), as PyTorch's uniform_.
__device__ __forceinline__ float uniform_float(jt_u32 a) { return (float)(a & 0xffffffu) * (1.0f / 16777216.0f); }
__device__ __forceinline__ double uniform_double(jt_u32 a, jt_u32 b) {
    jt_u64 bits = (((jt_u64)a << 32) | b) & ((1ull << 53) - 1);
    return (double)bits * (1.0 / 9007199254740992.0);
}

template <typename T>
__device__ __forceinline__ void uniform(T* out, jt_i64 n, jt_u64 seed, jt_u64 offset, double low, double high) {
    typedef typename Scalar<T>::acc A;
    for (jt_i64 i = global_thread(); i < n; i += grid_threads()) {
        U32x4 r = philox_block(seed, offset, (jt_u64)i >> 2);
        int k = (int)(i & 3);
        A u = sizeof(A) == 8 ? (A)uniform_double(word(r, k), word(r, (k + 1) & 3)) : (A)uniform_float(word(r, k));
        out[i] = Scalar<T>::store((A)low + ((A)high - (A)low) * u);
    }
}

template <typename T>
__device__ __forceinline__ void normal(T* out, jt_i64 n, jt_u64 seed, jt_u64 offset, double mean, double std) {
    typedef typename Scalar<T>::acc A;
    for (jt_i64 i = global_thread(); i < n; i += grid_threads()) {
        U32x4 r = philox_block(seed, offset, (jt_u64)i >> 2);
        int k = (int)(i & 3), pair = k & 2;
        // u1 in (0, 1] so that log(u1) is finite.
        A u1 = A(1) - (A)uniform_float(word(r, pair));
        A u2 = (A)uniform_float(word(r, pair + 1));
        A radius = sqrt(A(-2) * log(u1));
        A angle = A(6.283185307179586) * u2;
        A z = (k & 1) ? radius * sin(angle) : radius * cos(angle);
        out[i] = Scalar<T>::store((A)mean + (A)std * z);
    }
}

}  // namespace jt

using namespace jt;

#define JT_RANDOM(T, suffix) \
    extern "C" __global__ void jt_random_uniform_##suffix(T* out, jt_i64 n, jt_u64 seed, jt_u64 offset, double low, double high) { \
        uniform<T>(out, n, seed, offset, low, high); } \
    extern "C" __global__ void jt_random_normal_##suffix(T* out, jt_i64 n, jt_u64 seed, jt_u64 offset, double mean, double std) { \
        normal<T>(out, n, seed, offset, mean, std); }

JT_RANDOM(half, f16)
JT_RANDOM(bfloat16, bf16)
JT_RANDOM(float, f32)
JT_RANDOM(double, f64)
