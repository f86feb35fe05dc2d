// Random numbers from Philox4x32-10 (jtorch_cuda.cuh), in exactly the counter scheme of the CPU
// backend (CpuRandomKernels, Generator.philox): block b is philox(counter = {b (64-bit), 0 (64-bit)},
// key = seed), and element i of a fill reads fixed words of block first_block + i / per_block:
//   uniform, 16/32-bit floats: word i % 4 of block i / 4, u = (w >> 8) * 2^-24
//   uniform, float64:          words 2(i%2), 2(i%2)+1 of block i / 2, 53 bits ((w0 << 21) ^ (w1 >> 11))
//   normal:                    Box-Muller on pair j = i / 2 (words 2(j%2), 2(j%2)+1 of block j / 2),
//                              cos for even i, sin for odd i
//   randint:                   the 64-bit word pair 2(i%2), 2(i%2)+1 of block i / 2, modulo (high - low)
// So element i depends only on (seed, first_block, i): one thread computes one Philox block and writes
// its elements, in a grid-stride loop over blocks, and any grid gives the same tensor. Arithmetic is
// in double with explicitly rounded operations (__dmul_rn, __dadd_rn: never contracted to an FMA),
// as Java evaluates it, then stored as ElementIO.setDouble / setLong store (double -> float -> 16-bit
// float; integers truncated), so uniform and randint equal the CPU's bit for bit. normal goes through
// CUDA's double log/sin/cos (1-2 ulp) where the CPU uses Java's Math (< 1 ulp): equal to a few ulp.
// Entries: jt_random_uniform_<f16|bf16|f32|f64>(out, n, seed, first_block, low, high)
//          jt_random_normal_<f16|bf16|f32|f64>(out, n, seed, first_block, mean, std)
//          jt_random_randint_<every dtype>(out, n, seed, first_block, low, high)   (low, high: int64)
#include "jtorch_cuda.cuh"

namespace jt {

// Generator.philox: counter words {c0, c1} = the 64-bit block number, {c2, c3} = 0; key = seed.
__device__ __forceinline__ U32x4 philox_block(jt_u64 seed, jt_u64 block) {
    U32x4 ctr = {(jt_u32)block, (jt_u32)(block >> 32), 0u, 0u};
    return philox4x32_10(ctr, (jt_u32)seed, (jt_u32)(seed >> 32));
}

__device__ __forceinline__ jt_u32 word(const U32x4& r, int k) {
    return k == 0 ? r.x : k == 1 ? r.y : k == 2 ? r.z : r.w;
}

// The dtype code of storage type T.
template <typename T> __device__ __forceinline__ int dtype_of();
template <> __device__ __forceinline__ int dtype_of<bool>() { return JT_DTYPE_BOOL; }
template <> __device__ __forceinline__ int dtype_of<jt_u8>() { return JT_DTYPE_UINT8; }
template <> __device__ __forceinline__ int dtype_of<jt_i8>() { return JT_DTYPE_INT8; }
template <> __device__ __forceinline__ int dtype_of<jt_i16>() { return JT_DTYPE_INT16; }
template <> __device__ __forceinline__ int dtype_of<jt_i32>() { return JT_DTYPE_INT32; }
template <> __device__ __forceinline__ int dtype_of<jt_i64>() { return JT_DTYPE_INT64; }
template <> __device__ __forceinline__ int dtype_of<half>() { return JT_DTYPE_FLOAT16; }
template <> __device__ __forceinline__ int dtype_of<bfloat16>() { return JT_DTYPE_BFLOAT16; }
template <> __device__ __forceinline__ int dtype_of<float>() { return JT_DTYPE_FLOAT32; }
template <> __device__ __forceinline__ int dtype_of<double>() { return JT_DTYPE_FLOAT64; }

// ElementIO.setDouble followed by getDouble: the value as stored in dtype T, read back as double.
template <typename T> __device__ __forceinline__ double store_double(T* out, jt_i64 i, double v) {
    store_as<double>((char*)(out + i), dtype_of<T>(), v);
    return load_as<double>((const char*)(out + i), dtype_of<T>());
}

template <typename T>
__device__ __forceinline__ void uniform(T* out, jt_i64 n, jt_u64 seed, jt_u64 first_block, double low, double high) {
    const bool wide = sizeof(T) == 8;
    const int per = wide ? 2 : 4;
    const double range = __dadd_rn(high, -low);
    const jt_i64 blocks = (n + per - 1) / per;
    for (jt_i64 b = global_thread(); b < blocks; b += grid_threads()) {
        U32x4 r = philox_block(seed, first_block + (jt_u64)b);
        for (int e = 0; e < per; e++) {
            jt_i64 i = b * per + e;
            if (i >= n) break;
            double u;
            if (wide) {
                jt_u64 bits = ((jt_u64)word(r, 2 * e) << 21) ^ ((jt_u64)word(r, 2 * e + 1) >> 11);
                u = __dmul_rn((double)(bits & ((1ull << 53) - 1)), 1.0 / 9007199254740992.0);
            } else {
                u = __dmul_rn((double)(word(r, e) >> 8), 1.0 / 16777216.0);
            }
            double v = __dadd_rn(low, __dmul_rn(u, range));
            // Rounding to a narrow float type may land on `high`; keep the interval half-open (as the CPU).
            if (store_double(out, i, v) >= high && high > low) store_double(out, i, low);
        }
    }
}

template <typename T>
__device__ __forceinline__ void normal(T* out, jt_i64 n, jt_u64 seed, jt_u64 first_block, double mean, double std) {
    const jt_i64 blocks = (n + 3) / 4;
    for (jt_i64 b = global_thread(); b < blocks; b += grid_threads()) {
        U32x4 r = philox_block(seed, first_block + (jt_u64)b);
        for (int e = 0; e < 4; e++) {
            jt_i64 i = b * 4 + e;
            if (i >= n) break;
            int k = e & 2;  // pair (i / 2) % 2 of this block: words k, k + 1
            // u1 in (0, 1] so that log(u1) is finite.
            double u1 = __dmul_rn((double)((word(r, k) >> 8) + 1u), 1.0 / 16777216.0);
            double u2 = __dmul_rn((double)(word(r, k + 1) >> 8), 1.0 / 16777216.0);
            double radius = sqrt(__dmul_rn(-2.0, log(u1)));
            double angle = __dmul_rn(6.283185307179586, u2);  // Java: 2 * Math.PI * u2, 2 * PI exact
            double z = __dmul_rn(radius, (e & 1) ? sin(angle) : cos(angle));
            store_double(out, i, __dadd_rn(mean, __dmul_rn(std, z)));
        }
    }
}

template <typename T>
__device__ __forceinline__ void randint(T* out, jt_i64 n, jt_u64 seed, jt_u64 first_block, jt_i64 low, jt_i64 high) {
    const jt_u64 range = (jt_u64)high - (jt_u64)low;
    const jt_i64 blocks = (n + 1) / 2;
    for (jt_i64 b = global_thread(); b < blocks; b += grid_threads()) {
        U32x4 r = philox_block(seed, first_block + (jt_u64)b);
        for (int e = 0; e < 2; e++) {
            jt_i64 i = b * 2 + e;
            if (i >= n) break;
            jt_u64 bits = ((jt_u64)word(r, 2 * e) << 32) | word(r, 2 * e + 1);
            jt_i64 v = (jt_i64)((jt_u64)low + bits % range);
            const int dt = dtype_of<T>();
            if (dt == JT_DTYPE_FLOAT16 || dt == JT_DTYPE_BFLOAT16 || dt == JT_DTYPE_FLOAT32 || dt == JT_DTYPE_FLOAT64) {
                store_as<double>((char*)(out + i), dt, (double)v);
            } else {
                store_as<jt_i64>((char*)(out + i), dt, v);
            }
        }
    }
}

}  // namespace jt

using namespace jt;

#define JT_RANDOM_FLOAT(T, suffix) \
    extern "C" __global__ void jt_random_uniform_##suffix(T* out, jt_i64 n, jt_u64 seed, jt_u64 first_block, double low, double high) { \
        uniform<T>(out, n, seed, first_block, low, high); } \
    extern "C" __global__ void jt_random_normal_##suffix(T* out, jt_i64 n, jt_u64 seed, jt_u64 first_block, double mean, double std) { \
        normal<T>(out, n, seed, first_block, mean, std); }

#define JT_RANDINT(T, suffix) \
    extern "C" __global__ void jt_random_randint_##suffix(T* out, jt_i64 n, jt_u64 seed, jt_u64 first_block, jt_i64 low, jt_i64 high) { \
        randint<T>(out, n, seed, first_block, low, high); }

JT_RANDOM_FLOAT(half, f16)
JT_RANDOM_FLOAT(bfloat16, bf16)
JT_RANDOM_FLOAT(float, f32)
JT_RANDOM_FLOAT(double, f64)

JT_RANDINT(bool, bool)
JT_RANDINT(jt_u8, u8)
JT_RANDINT(jt_i8, i8)
JT_RANDINT(jt_i16, i16)
JT_RANDINT(jt_i32, i32)
JT_RANDINT(jt_i64, i64)
JT_RANDINT(half, f16)
JT_RANDINT(bfloat16, bf16)
JT_RANDINT(float, f32)
JT_RANDINT(double, f64)
