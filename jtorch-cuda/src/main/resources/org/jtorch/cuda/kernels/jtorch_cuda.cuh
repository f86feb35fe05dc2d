// Shared definitions of jtorch's CUDA kernels: fixed-width integers, the dtype codes, 16-bit float
// storage types, per-dtype load/store in the compute type, strided indexing and Philox.
//
// Self-contained on purpose: NVRTC has no system headers, and the cuda_fp16.h of one CUDA release does
// not compile under another release's NVRTC (CUDA 13's needs <nv/target> macros NVRTC 11.8 lacks). So
// half and bfloat16 are our own 2-byte structs converted with PTX instructions (as cuda_fp16 does), and
// in software where the file is compiled for the host (the CUDA simulator, jtorch-cuda/src/sim).
// The Java side passes this file to NVRTC as a named header; nvcc finds it beside the .cu file.
#pragma once

typedef signed char jt_i8;
typedef unsigned char jt_u8;
typedef short jt_i16;
typedef int jt_i32;
typedef long long jt_i64;
typedef unsigned int jt_u32;
typedef unsigned long long jt_u64;

// Dtype codes: the ordinals of org.jtorch.types.DType (checked by KernelSourcesTest).
#define JT_DTYPE_BOOL 0
#define JT_DTYPE_UINT8 1
#define JT_DTYPE_INT8 2
#define JT_DTYPE_INT16 3
#define JT_DTYPE_INT32 4
#define JT_DTYPE_INT64 5
#define JT_DTYPE_FLOAT16 6
#define JT_DTYPE_BFLOAT16 7
#define JT_DTYPE_FLOAT32 8
#define JT_DTYPE_FLOAT64 9

// Most dimensions a strided (non-contiguous) kernel handles; the Java side coalesces dimensions first.
#define JT_MAX_DIMS 8

namespace jt {

struct alignas(2) half { unsigned short bits; };
struct alignas(2) bfloat16 { unsigned short bits; };

// The bits of a float and back, on the device and in the host compilations (nvcc's host pass, the simulator).
__host__ __device__ __forceinline__ unsigned int float_bits(float f) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    unsigned int u;
    __builtin_memcpy(&u, &f, 4);
    return u;
#endif
}

__host__ __device__ __forceinline__ float bits_float(unsigned int u) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
#endif
}

// On the GPU the conversions are PTX instructions; compiled for the host (the CUDA simulator), the same
// IEEE conversions in software: round to nearest even, subnormals kept, NaN to the canonical 0x7fff.
__host__ __device__ __forceinline__ float half_to_float(half h) {
#ifdef __CUDA_ARCH__
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
    return f;
#else
    unsigned int sign = ((unsigned int)h.bits & 0x8000u) << 16, exponent = (h.bits >> 10) & 0x1fu, mantissa = h.bits & 0x3ffu;
    if (exponent == 31) return bits_float(sign | 0x7f800000u | (mantissa << 13));
    if (exponent == 0) {
        float magnitude = (float)mantissa * 5.9604644775390625e-8f;  // exact: mantissa * 2^-24
        return sign ? -magnitude : magnitude;
    }
    return bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
#endif
}

__host__ __device__ __forceinline__ half float_to_half(float f) {
    half h;
#ifdef __CUDA_ARCH__
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
#else
    unsigned int x = float_bits(f), sign = (x >> 16) & 0x8000u;
    x &= 0x7fffffffu;
    if (x > 0x7f800000u) {
        h.bits = 0x7fff;
    } else if (x >= 0x477ff000u) {  // 65520 and up (and infinity) round to infinity
        h.bits = (unsigned short)(sign | 0x7c00u);
    } else if (x >= 0x38800000u) {  // normal half: rebias the exponent, round the 13 dropped bits to even
        x += 0xfffu + ((x >> 13) & 1u);
        h.bits = (unsigned short)(sign | ((x - 0x38000000u) >> 13));
    } else if (x >= 0x33000001u) {  // subnormal half: units of 2^-24
        unsigned int mantissa = (x & 0x7fffffu) | 0x800000u, shift = 126 - (x >> 23);
        unsigned int r = mantissa >> shift, rest = mantissa & ((1u << shift) - 1), tie = 1u << (shift - 1);
        if (rest > tie || (rest == tie && (r & 1u))) r++;
        h.bits = (unsigned short)(sign | r);
    } else {  // at most 2^-25: rounds to zero
        h.bits = (unsigned short)sign;
    }
#endif
    return h;
}

__host__ __device__ __forceinline__ float bfloat16_to_float(bfloat16 b) {
    return bits_float(((unsigned int)b.bits) << 16);
}

// Round to nearest even; NaN stays a (quiet) NaN. Same rule as PyTorch's c10::BFloat16.
__host__ __device__ __forceinline__ bfloat16 float_to_bfloat16(float f) {
    unsigned int u = float_bits(f);
    bfloat16 b;
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        b.bits = 0x7fc0;
        return b;
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    b.bits = (unsigned short)(u >> 16);
    return b;
}

// Scalar<T>: the compute type ("acc") of storage type T, and the conversions to and from it.
// 16-bit floats compute in float and round once on store, as on the CPU backend.
template <typename T> struct Scalar {
    typedef T acc;
    __device__ __forceinline__ static acc load(T x) { return x; }
    template <typename A> __device__ __forceinline__ static T store(A a) { return (T)a; }
};
template <> struct Scalar<half> {
    typedef float acc;
    __device__ __forceinline__ static float load(half x) { return half_to_float(x); }
    template <typename A> __device__ __forceinline__ static half store(A a) { return float_to_half((float)a); }
};
template <> struct Scalar<bfloat16> {
    typedef float acc;
    __device__ __forceinline__ static float load(bfloat16 x) { return bfloat16_to_float(x); }
    template <typename A> __device__ __forceinline__ static bfloat16 store(A a) { return float_to_bfloat16((float)a); }
};
template <> struct Scalar<bool> {
    typedef bool acc;
    __device__ __forceinline__ static bool load(bool x) { return x; }
    template <typename A> __device__ __forceinline__ static bool store(A a) { return a != A(0); }
};

__device__ __forceinline__ int dtype_size(int dtype) {
    switch (dtype) {
        case JT_DTYPE_INT16: case JT_DTYPE_FLOAT16: case JT_DTYPE_BFLOAT16: return 2;
        case JT_DTYPE_INT32: case JT_DTYPE_FLOAT32: return 4;
        case JT_DTYPE_INT64: case JT_DTYPE_FLOAT64: return 8;
        default: return 1;
    }
}

// Loads element `p` of runtime dtype `dtype` converted to compute type C (the "dynamic cast" path
// for operands whose dtypes differ from the compute dtype).
template <typename C> __device__ __forceinline__ C load_as(const char* p, int dtype) {
    switch (dtype) {
        case JT_DTYPE_BOOL: return (C)(*(const bool*)p);
        case JT_DTYPE_UINT8: return (C)(*(const jt_u8*)p);
        case JT_DTYPE_INT8: return (C)(*(const jt_i8*)p);
        case JT_DTYPE_INT16: return (C)(*(const jt_i16*)p);
        case JT_DTYPE_INT32: return (C)(*(const jt_i32*)p);
        case JT_DTYPE_INT64: return (C)(*(const jt_i64*)p);
        case JT_DTYPE_FLOAT16: return (C)half_to_float(*(const half*)p);
        case JT_DTYPE_BFLOAT16: return (C)bfloat16_to_float(*(const bfloat16*)p);
        case JT_DTYPE_FLOAT32: return (C)(*(const float*)p);
        default: return (C)(*(const double*)p);
    }
}

template <typename C> __device__ __forceinline__ void store_as(char* p, int dtype, C v) {
    switch (dtype) {
        case JT_DTYPE_BOOL: *(bool*)p = v != C(0); break;
        case JT_DTYPE_UINT8: *(jt_u8*)p = (jt_u8)(jt_i64)v; break;
        case JT_DTYPE_INT8: *(jt_i8*)p = (jt_i8)(jt_i64)v; break;
        case JT_DTYPE_INT16: *(jt_i16*)p = (jt_i16)(jt_i64)v; break;
        case JT_DTYPE_INT32: *(jt_i32*)p = (jt_i32)(jt_i64)v; break;
        case JT_DTYPE_INT64: *(jt_i64*)p = (jt_i64)v; break;
        case JT_DTYPE_FLOAT16: *(half*)p = float_to_half((float)v); break;
        case JT_DTYPE_BFLOAT16: *(bfloat16*)p = float_to_bfloat16((float)v); break;
        case JT_DTYPE_FLOAT32: *(float*)p = (float)v; break;
        default: *(double*)p = (double)v; break;
    }
}

// Shape and per-operand element strides of a strided launch, passed by value (operand 0 is the output).
struct Strided {
    int ndim;
    int dtype[3];
    jt_i64 size[JT_MAX_DIMS];
    jt_i64 stride[3][JT_MAX_DIMS];
};

// Element offsets of linear index `i` (row-major over `size`) for `operands` operands.
template <int OPERANDS> __device__ __forceinline__ void strided_offsets(const Strided& s, jt_i64 i, jt_i64 (&off)[OPERANDS]) {
    #pragma unroll
    for (int k = 0; k < OPERANDS; k++) off[k] = 0;
    for (int d = s.ndim - 1; d >= 0; d--) {
        jt_i64 idx = i % s.size[d];
        i /= s.size[d];
        #pragma unroll
        for (int k = 0; k < OPERANDS; k++) off[k] += idx * s.stride[k][d];
    }
}

// A 16-byte vector of T for the contiguous fast paths (one LDG.128 / STG.128 per thread and step).
template <typename T> struct alignas(16) Vec16 {
    static const int N = 16 / sizeof(T);
    T v[N];
};

__device__ __forceinline__ bool aligned16(const void* p) {
    return (((jt_u64)p) & 15u) == 0;
}

__device__ __forceinline__ jt_i64 global_thread() {
    return (jt_i64)blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ jt_i64 grid_threads() {
    return (jt_i64)gridDim.x * blockDim.x;
}

// PyTorch's NaN-propagating max and min.
template <typename A> __device__ __forceinline__ A nan_max(A a, A b) { return (a != a || a > b) ? a : b; }
template <typename A> __device__ __forceinline__ A nan_min(A a, A b) { return (a != a || a < b) ? a : b; }

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a counter-based
// generator, so element i's numbers depend only on (seed, offset, i), not on the launch shape.
struct U32x4 { jt_u32 x, y, z, w; };

__host__ __device__ __forceinline__ jt_u32 mulhi32(jt_u32 a, jt_u32 b) {
    return (jt_u32)(((jt_u64)a * (jt_u64)b) >> 32);
}

__host__ __device__ __forceinline__ U32x4 philox4x32_10(U32x4 ctr, jt_u32 k0, jt_u32 k1) {
    #pragma unroll
    for (int round = 0; round < 10; round++) {
        jt_u32 hi0 = mulhi32(0xD2511F53u, ctr.x), lo0 = 0xD2511F53u * ctr.x;
        jt_u32 hi1 = mulhi32(0xCD9E8D57u, ctr.z), lo1 = 0xCD9E8D57u * ctr.z;
        U32x4 next = {hi1 ^ ctr.y ^ k0, lo1, hi0 ^ ctr.w ^ k1, lo0};
        ctr = next;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return ctr;
}

}  // namespace jt
