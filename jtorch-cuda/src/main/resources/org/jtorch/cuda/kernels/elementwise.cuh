// The shared machinery of the elementwise kernels: the functor traits and helpers, the contiguous and
// strided paths, and the macros that instantiate an op's entry points for its dtypes. Included by the sources
// the backend generates from an op's declared formula (org.jtorch.cuda.FormulaKernels) and fused group
// (FusedKernels), and by elementwise.cu (where). Entries: jt_<unary|binary>_<op>_<dtype> for contiguous
// operands of the compute dtype (16-byte vectors plus a scalar tail), jt_<unary|binary>_<op>_strided_<f32|f64|i64>
// for any strides and operand dtypes (converted to and from the compute type on load and store).
#pragma once
#include "jtorch_cuda.cuh"

namespace jt {

// ---- traits and helpers of the functors ----

// Whether compute type A is an integer type (integer and bool compute): such ops follow Fn.applyLong, computed in
// jt_i64.
template <typename A> struct IsIntegral { static const bool value = true; };
template <> struct IsIntegral<float> { static const bool value = false; };
template <> struct IsIntegral<double> { static const bool value = false; };

// The result type of a functor for compute storage type T: the same, or bool (predicates, comparisons).
struct ToSame { template <typename T> using out = T; };
struct ToBool { template <typename T> using out = bool; };

// The scalar parameters of unary ops (p0, p1); integer compute reads them as Java's (long) cast.
struct UnaryParams { double p0, p1; };

template <typename F> __device__ __forceinline__ F with_params(double p0, double p1) {
    F f;
    f.p0 = p0;
    f.p1 = p1;
    return f;
}

// Java's (long) of a double: NaN is 0, out-of-range values saturate (so clamp's infinite "no bound" is
// Long.MIN_VALUE / MAX_VALUE), as the CPU backend's (long) p0.
__device__ __forceinline__ jt_i64 java_long(double d) {
    if (d != d) return 0;
    if (d >= 9223372036854775807.0) return (jt_i64)0x7fffffffffffffffLL;
    if (d <= -9223372036854775808.0) return (jt_i64)(-0x7fffffffffffffffLL - 1);
    return (jt_i64)d;
}

template <typename A> __device__ __forceinline__ A quiet_nan();
template <> __device__ __forceinline__ float quiet_nan<float>() { return __int_as_float(0x7fc00000); }
template <> __device__ __forceinline__ double quiet_nan<double>() { return __longlong_as_double(0x7ff8000000000000LL); }

// x is +-inf or NaN exactly when x - x is NaN (no INFINITY constant without system headers).
template <typename A> __device__ __forceinline__ bool is_finite(A x) { return (x - x) == (x - x); }

// a + b * c and a - b * c rounded once for floating compute (add and sub with alpha; ATen's fmadd), exact for integers.
template <typename A> __device__ __forceinline__ A mul_add(A a, A b, A c) { return a + b * c; }
template <> __device__ __forceinline__ float mul_add<float>(float a, float b, float c) { return fmaf(b, c, a); }
template <> __device__ __forceinline__ double mul_add<double>(double a, double b, double c) { return fma(b, c, a); }
template <typename A> __device__ __forceinline__ A mul_sub(A a, A b, A c) { return a - b * c; }
template <> __device__ __forceinline__ float mul_sub<float>(float a, float b, float c) { return fmaf(-b, c, a); }
template <> __device__ __forceinline__ double mul_sub<double>(double a, double b, double c) { return fma(-b, c, a); }

// C's pow, as ATen's kernels and Fn.cPow: pow(1, y) = 1 for every y (NaN included) and pow(-1, +-inf) = 1.
// Spelled out rather than left to the math library, so that the simulator's host libm cannot differ.
template <typename A> __device__ __forceinline__ A c_pow(A x, A y) {
    if (x == A(1) || (x == A(-1) && !is_finite(y) && y == y)) return A(1);
    return pow(x, y);
}

// Fn.intPow (ATen's powi): by squaring, wrapping; negative exponents give 0 except for bases 1 and -1.
__device__ __forceinline__ jt_i64 int_pow(jt_i64 base, jt_i64 exp) {
    if (exp < 0) {
        if (base == 1) return 1;
        if (base == -1) return (exp & 1) == 0 ? 1 : -1;
        return 0;
    }
    jt_u64 result = 1, b = (jt_u64)base;
    while (exp > 0) {
        if (exp & 1) result *= b;
        b *= b;
        exp >>= 1;
    }
    return (jt_i64)result;
}

// Integer division as Java's long: a zero divisor never reaches a kernel (the host checks first and throws,
// as the CPU backend); Long.MIN_VALUE / -1 wraps to Long.MIN_VALUE (C leaves it undefined).
__device__ __forceinline__ jt_i64 java_div(jt_i64 a, jt_i64 b) {
    if (b == 0) return 0;
    if (b == -1) return (jt_i64)(0ull - (jt_u64)a);
    return a / b;
}

__device__ __forceinline__ jt_i64 java_rem(jt_i64 a, jt_i64 b) {
    if (b == 0 || b == -1) return 0;
    return a % b;
}


// ---- the scalar functions of declared formulas (org.jtorch.op.Fn's C templates); each is the Java reference's
// (Fn.apply for floating compute, Fn.applyLong for integer compute, which is jt_i64 with Java's wrapping) ----

// A scalar parameter as the reference reads it: floating compute takes if_none where the parameter is None
// (NaN); integer compute takes Java's (long) of the double, as Expr.compileLong.
template <typename A> __device__ __forceinline__ A scalar_param(double p, double if_none) {
    if constexpr (IsIntegral<A>::value) return (A)java_long(p); else return A(p != p ? if_none : p);
}

// Math.abs: abs(-0.0) is +0.0, abs(Long.MIN_VALUE) wraps to itself.
template <typename A> __device__ __forceinline__ A java_abs(A x) {
    if constexpr (IsIntegral<A>::value) return x < 0 ? (A)(0ull - (jt_u64)x) : x; else return fabs(x);
}

// Java's negation: Long.MIN_VALUE wraps to itself (C leaves it undefined).
template <typename A> __device__ __forceinline__ A java_neg(A x) {
    if constexpr (IsIntegral<A>::value) return (A)(0ull - (jt_u64)x); else return -x;
}

// clamp(x, lo, hi): a NaN bound is no bound and a NaN input stays NaN (torch.clamp); integers min(max(x, lo), hi).
template <typename A> __device__ __forceinline__ A clamp_opt(A x, A lo, A hi) {
    if constexpr (IsIntegral<A>::value) {
        x = x < lo ? lo : x;
        return x > hi ? hi : x;
    } else {
        if (x != x) return x;
        if (lo == lo && x < lo) x = lo;
        if (hi == hi && x > hi) x = hi;
        return x;
    }
}

// GELU's derivative times the gradient, g (Phi(x) + x phi(x)) (Fn.GELU_BACKWARD): floating compute only.
template <typename A> __device__ __forceinline__ A gelu_backward(A g, A x) {
    return g * (A(0.5) * erfc(-x * A(0.7071067811865476)) + x * exp(A(-0.5) * x * x) * A(0.3989422804014327));
}

// C's fmod, which is Java's %: the remainder takes the dividend's sign. A zero integer divisor never reaches a
// kernel (the dispatcher checks first and throws); Long.MIN_VALUE % -1 is 0 as in Java.
template <typename A> __device__ __forceinline__ A java_fmod(A a, A b) {
    if constexpr (IsIntegral<A>::value) return java_rem(a, b); else return fmod(a, b);
}

// Rounding leaves integers as they are; rint rounds half to even (Math.rint, torch.round).
template <typename A> __device__ __forceinline__ A round_floor(A x) { if constexpr (IsIntegral<A>::value) return x; else return floor(x); }
template <typename A> __device__ __forceinline__ A round_ceil(A x) { if constexpr (IsIntegral<A>::value) return x; else return ceil(x); }
template <typename A> __device__ __forceinline__ A round_rint(A x) { if constexpr (IsIntegral<A>::value) return x; else return rint(x); }
template <typename A> __device__ __forceinline__ A round_trunc(A x) { if constexpr (IsIntegral<A>::value) return x; else return trunc(x); }

// C's pow for floating compute, powi (by squaring) for integer compute.
template <typename A> __device__ __forceinline__ A pow_any(A x, A y) {
    if constexpr (IsIntegral<A>::value) return (A)int_pow((jt_i64)x, (jt_i64)y); else return c_pow(x, y);
}

// pow with a scalar exponent: the exponents ATen special-cases go through the same functions as ATen's
// (pow(-inf, 0.5) is sqrt(-inf) = nan); integers by squaring.
template <typename A> __device__ __forceinline__ A pow_scalar(A x, A e) {
    if constexpr (IsIntegral<A>::value) {
        return (A)int_pow((jt_i64)x, (jt_i64)e);
    } else {
        if (e == A(0.5)) return sqrt(x);
        if (e == A(-0.5)) return A(1) / sqrt(x);
        if (e == A(2)) return x * x;
        if (e == A(3)) return x * x * x;
        if (e == A(-1)) return A(1) / x;
        if (e == A(-2)) return A(1) / (x * x);
        return c_pow(x, e);
    }
}

// The rounding divisions and the remainder of floating operands are computed in double whatever the dtype, as
// the CPU's reference: their results are integers (or exact remainders) that a float quotient could round
// across. A zero integer divisor never reaches a kernel (the host checks first and throws).
template <typename A> __device__ __forceinline__ A div_trunc(A a, A b) {
    if constexpr (IsIntegral<A>::value) return (A)java_div((jt_i64)a, (jt_i64)b); else return (A)trunc((double)a / (double)b);
}

// Python's floor division: ATen's div_floor_floating (from fmod, so that -0.001 // inf == -1 and inf // 2 == nan);
// integers round the quotient towards -inf (Math.floorDiv).
template <typename A> __device__ __forceinline__ A div_floor(A a, A b) {
    if constexpr (IsIntegral<A>::value) {
        jt_i64 x = (jt_i64)a, y = (jt_i64)b, q = java_div(x, y);
        return (A)((java_rem(x, y) != 0 && ((x ^ y) < 0)) ? q - 1 : q);
    } else {
        double x = (double)a, y = (double)b;
        if (y == 0) return (A)(x / y);
        double mod = fmod(x, y);
        double div = (x - mod) / y;
        if (mod != 0 && (y < 0) != (mod < 0)) div -= 1;
        if (div == 0) return (A)copysign(0.0, x / y);
        double fl = floor(div);
        return (A)(div - fl > 0.5 ? fl + 1 : fl);
    }
}

// Python's modulus: the result takes the divisor's sign (Math.floorMod for integers).
template <typename A> __device__ __forceinline__ A remainder(A a, A b) {
    if constexpr (IsIntegral<A>::value) {
        jt_i64 x = (jt_i64)a, y = (jt_i64)b, r = java_rem(x, y);
        return (A)((r != 0 && ((r ^ y) < 0)) ? r + y : r);
    } else {
        double x = (double)a, y = (double)b, r = fmod(x, y);
        return (A)((r != 0 && (r < 0) != (y < 0)) ? r + y : r);
    }
}

// 1 or 0 in the compute type; integers are never infinite and always finite.
template <typename A> __device__ __forceinline__ A is_inf(A x) {
    if constexpr (IsIntegral<A>::value) return A(0); else return A(x == x && !is_finite(x));
}

template <typename A> __device__ __forceinline__ A is_finite_01(A x) {
    if constexpr (IsIntegral<A>::value) return A(1); else return A(is_finite(x));
}

// Shifts on the 64-bit values: a left count outside [0, 64) shifts everything out, shifted as unsigned so that
// negative values are defined; a right count is clamped to [0, 63] (a large one leaves the sign).
__device__ __forceinline__ jt_i64 shift_left(jt_i64 a, jt_i64 n) {
    return n >= 64 || n < 0 ? 0 : (jt_i64)((jt_u64)a << n);
}

__device__ __forceinline__ jt_i64 shift_right(jt_i64 a, jt_i64 n) {
    return a >> (n < 0 ? 0 : n > 63 ? 63 : n);
}

// N values of O, aligned to their total size: the output of a contiguous step (16 bytes when O is T,
// N bytes of bool for a predicate or comparison).
template <typename O, int N> struct alignas(sizeof(O) * N) Pack {
    O v[N];
};

__device__ __forceinline__ bool aligned_to(const void* p, unsigned bytes) {
    return (((jt_u64)p) & (bytes - 1)) == 0;
}

template <typename T, typename O, typename Op>
__device__ __forceinline__ void unary_contiguous(const T* __restrict__ x, O* __restrict__ y, jt_i64 n, Op op) {
    typedef Scalar<T> S;
    typedef Scalar<O> R;
    const int N = Vec16<T>::N;
    typedef Pack<O, N> Out;
    const jt_i64 start = global_thread(), step = grid_threads();
    jt_i64 vectors = (aligned16(x) && aligned_to(y, sizeof(Out))) ? n / N : 0;
    const Vec16<T>* xv = (const Vec16<T>*)x;
    Out* yv = (Out*)y;
    for (jt_i64 i = start; i < vectors; i += step) {
        Vec16<T> a = xv[i];
        Out r;
        #pragma unroll
        for (int k = 0; k < N; k++) r.v[k] = R::store(op(S::load(a.v[k])));
        yv[i] = r;
    }
    for (jt_i64 i = vectors * N + start; i < n; i += step) y[i] = R::store(op(S::load(x[i])));
}

template <typename T, typename O, typename Op>
__device__ __forceinline__ void binary_contiguous(const T* __restrict__ a, const T* __restrict__ b, O* __restrict__ out,
                                                  jt_i64 n, double alpha, Op op) {
    typedef Scalar<T> S;
    typedef Scalar<O> R;
    typedef typename S::acc A;
    const A al = (A)alpha;
    const int N = Vec16<T>::N;
    typedef Pack<O, N> Out;
    const jt_i64 start = global_thread(), step = grid_threads();
    jt_i64 vectors = (aligned16(a) && aligned16(b) && aligned_to(out, sizeof(Out))) ? n / N : 0;
    const Vec16<T>* av = (const Vec16<T>*)a;
    const Vec16<T>* bv = (const Vec16<T>*)b;
    Out* ov = (Out*)out;
    for (jt_i64 i = start; i < vectors; i += step) {
        Vec16<T> x = av[i], y = bv[i];
        Out r;
        #pragma unroll
        for (int k = 0; k < N; k++) r.v[k] = R::store(op(S::load(x.v[k]), S::load(y.v[k]), al));
        ov[i] = r;
    }
    for (jt_i64 i = vectors * N + start; i < n; i += step) out[i] = R::store(op(S::load(a[i]), S::load(b[i]), al));
}

template <typename C, typename Op>
__device__ __forceinline__ void unary_strided(const char* x, char* y, jt_i64 n, Strided s, Op op) {
    const int sx = dtype_size(s.dtype[1]), sy = dtype_size(s.dtype[0]);
    for (jt_i64 i = global_thread(); i < n; i += grid_threads()) {
        jt_i64 off[2];
        strided_offsets<2>(s, i, off);
        store_as<C>(y + off[0] * sy, s.dtype[0], (C)op(load_as<C>(x + off[1] * sx, s.dtype[1])));
    }
}

template <typename C, typename Op>
__device__ __forceinline__ void binary_strided(const char* a, const char* b, char* out, jt_i64 n, double alpha, Strided s, Op op) {
    const int so = dtype_size(s.dtype[0]), sa = dtype_size(s.dtype[1]), sb = dtype_size(s.dtype[2]);
    const C al = (C)alpha;
    for (jt_i64 i = global_thread(); i < n; i += grid_threads()) {
        jt_i64 off[3];
        strided_offsets<3>(s, i, off);
        C va = load_as<C>(a + off[1] * sa, s.dtype[1]);
        C vb = load_as<C>(b + off[2] * sb, s.dtype[2]);
        store_as<C>(out + off[0] * so, s.dtype[0], (C)op(va, vb, al));
    }
}

}  // namespace jt

using namespace jt;

#define JT_UNARY(op, Functor, T, suffix) \
    extern "C" __global__ void jt_unary_##op##_##suffix(const T* x, typename Functor::template out<T>* y, jt_i64 n, \
                                                        double p0, double p1) { \
        unary_contiguous<T>(x, y, n, with_params<Functor>(p0, p1)); }
#define JT_UNARY_STRIDED(op, Functor, C, suffix) \
    extern "C" __global__ void jt_unary_##op##_strided_##suffix(const char* x, char* y, jt_i64 n, double p0, double p1, \
                                                                Strided s) { \
        unary_strided<C>(x, y, n, s, with_params<Functor>(p0, p1)); }
#define JT_BINARY(op, Functor, T, suffix) \
    extern "C" __global__ void jt_binary_##op##_##suffix(const T* a, const T* b, typename Functor::template out<T>* out, \
                                                         jt_i64 n, double alpha) { \
        binary_contiguous<T>(a, b, out, n, alpha, Functor()); }
#define JT_BINARY_STRIDED(op, Functor, C, suffix) \
    extern "C" __global__ void jt_binary_##op##_strided_##suffix(const char* a, const char* b, char* out, jt_i64 n, double alpha, Strided s) { \
        binary_strided<C>(a, b, out, n, alpha, s, Functor()); }

// Floating-point dtypes for the contiguous path, floating compute types for the strided path.
#define JT_FLOAT_TYPES(X, op, Functor) X(op, Functor, half, f16) X(op, Functor, bfloat16, bf16) X(op, Functor, float, f32) X(op, Functor, double, f64)
#define JT_INT_TYPES(X, op, Functor) X(op, Functor, jt_u8, u8) X(op, Functor, jt_i8, i8) X(op, Functor, jt_i16, i16) X(op, Functor, jt_i32, i32) X(op, Functor, jt_i64, i64)
#define JT_FLOAT_COMPUTE(X, op, Functor) X(op, Functor, float, f32) X(op, Functor, double, f64)
#define JT_INT_COMPUTE(X, op, Functor) X(op, Functor, jt_i64, i64)

// Which dtypes an op computes in follows its declared dtype rule (ElementwisePlan.supports):
// numeric = every dtype (bool through the strided int64 kernel); floating = Result.FLOAT (integer inputs are
// promoted by the front end); integral = Result.INTEGRAL_OR_BOOL.
#define JT_NUMERIC_UNARY(op, Functor) JT_FLOAT_TYPES(JT_UNARY, op, Functor) JT_INT_TYPES(JT_UNARY, op, Functor) \
    JT_FLOAT_COMPUTE(JT_UNARY_STRIDED, op, Functor) JT_INT_COMPUTE(JT_UNARY_STRIDED, op, Functor)
#define JT_FLOATING_UNARY(op, Functor) JT_FLOAT_TYPES(JT_UNARY, op, Functor) JT_FLOAT_COMPUTE(JT_UNARY_STRIDED, op, Functor)
#define JT_INTEGRAL_UNARY(op, Functor) JT_INT_TYPES(JT_UNARY, op, Functor) JT_INT_COMPUTE(JT_UNARY_STRIDED, op, Functor)
#define JT_NUMERIC_BINARY(op, Functor) JT_FLOAT_TYPES(JT_BINARY, op, Functor) JT_INT_TYPES(JT_BINARY, op, Functor) \
    JT_FLOAT_COMPUTE(JT_BINARY_STRIDED, op, Functor) JT_INT_COMPUTE(JT_BINARY_STRIDED, op, Functor)
#define JT_FLOATING_BINARY(op, Functor) JT_FLOAT_TYPES(JT_BINARY, op, Functor) JT_FLOAT_COMPUTE(JT_BINARY_STRIDED, op, Functor)
#define JT_INTEGRAL_BINARY(op, Functor) JT_INT_TYPES(JT_BINARY, op, Functor) JT_INT_COMPUTE(JT_BINARY_STRIDED, op, Functor)
