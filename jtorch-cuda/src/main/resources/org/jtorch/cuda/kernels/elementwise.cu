// Elementwise unary and binary ops.
//
// Two paths per op, as PyTorch's:
//  - contiguous: every operand contiguous and of the op's dtype T; grid-stride loop over 16-byte vectors
//    (when the pointers are 16-byte aligned) plus a scalar tail. Entry: jt_<unary|binary>_<op>_<dtype>.
//  - strided: any strides (broadcast = stride 0) and any operand dtypes, converted to and from the
//    compute type C on load and store. Entry: jt_<unary|binary>_<op>_strided_<f32|f64|i64>.
// And where (jt_where_strided): out = cond ? a : b, any strides and dtypes for cond, a, b, into a
// contiguous out.
// The op functors compute in Scalar<T>::acc (float for half and bfloat16).
// Compiling everything takes NVRTC ~25 s on two cores, so the backend compiles one op at a time:
// -DJT_SELECT -DJT_SELECT_add instantiates only add (all dtypes); without JT_SELECT, every op.
#include "jtorch_cuda.cuh"

namespace jt {

// ---- op functors (p0, p1 and alpha are the op's scalar parameters) ----
struct NegOp { template <typename A> __device__ A operator()(A x) const { return -x; } };
struct AbsOp {
    template <typename A> __device__ A operator()(A x) const { return x < A(0) ? -x : x; }
    __device__ jt_u8 operator()(jt_u8 x) const { return x; }
};
struct ReluOp { template <typename A> __device__ A operator()(A x) const { return (x != x || x > A(0)) ? x : A(0); } };
struct ExpOp { template <typename A> __device__ A operator()(A x) const { return exp(x); } };
struct LogOp { template <typename A> __device__ A operator()(A x) const { return log(x); } };
struct SqrtOp { template <typename A> __device__ A operator()(A x) const { return sqrt(x); } };
struct RsqrtOp { template <typename A> __device__ A operator()(A x) const { return A(1) / sqrt(x); } };
struct SinOp { template <typename A> __device__ A operator()(A x) const { return sin(x); } };
struct CosOp { template <typename A> __device__ A operator()(A x) const { return cos(x); } };
struct TanhOp { template <typename A> __device__ A operator()(A x) const { return tanh(x); } };
struct SigmoidOp { template <typename A> __device__ A operator()(A x) const { return A(1) / (A(1) + exp(-x)); } };

struct AddOp { template <typename A> __device__ A operator()(A a, A b, A alpha) const { return a + alpha * b; } };
struct SubOp { template <typename A> __device__ A operator()(A a, A b, A alpha) const { return a - alpha * b; } };
struct MulOp { template <typename A> __device__ A operator()(A a, A b, A) const { return a * b; } };
struct DivOp { template <typename A> __device__ A operator()(A a, A b, A) const { return a / b; } };
struct MaximumOp { template <typename A> __device__ A operator()(A a, A b, A) const { return nan_max(a, b); } };
struct MinimumOp { template <typename A> __device__ A operator()(A a, A b, A) const { return nan_min(a, b); } };

template <typename T, typename Op>
__device__ __forceinline__ void unary_contiguous(const T* __restrict__ x, T* __restrict__ y, jt_i64 n, Op op) {
    typedef Scalar<T> S;
    const int N = Vec16<T>::N;
    const jt_i64 start = global_thread(), step = grid_threads();
    jt_i64 vectors = (aligned16(x) && aligned16(y)) ? n / N : 0;
    const Vec16<T>* xv = (const Vec16<T>*)x;
    Vec16<T>* yv = (Vec16<T>*)y;
    for (jt_i64 i = start; i < vectors; i += step) {
        Vec16<T> a = xv[i], r;
        #pragma unroll
        for (int k = 0; k < N; k++) r.v[k] = S::store(op(S::load(a.v[k])));
        yv[i] = r;
    }
    for (jt_i64 i = vectors * N + start; i < n; i += step) y[i] = S::store(op(S::load(x[i])));
}

template <typename T, typename Op>
__device__ __forceinline__ void binary_contiguous(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out,
                                                  jt_i64 n, double alpha, Op op) {
    typedef Scalar<T> S;
    typedef typename S::acc A;
    const A al = (A)alpha;
    const int N = Vec16<T>::N;
    const jt_i64 start = global_thread(), step = grid_threads();
    jt_i64 vectors = (aligned16(a) && aligned16(b) && aligned16(out)) ? n / N : 0;
    const Vec16<T>* av = (const Vec16<T>*)a;
    const Vec16<T>* bv = (const Vec16<T>*)b;
    Vec16<T>* ov = (Vec16<T>*)out;
    for (jt_i64 i = start; i < vectors; i += step) {
        Vec16<T> x = av[i], y = bv[i], r;
        #pragma unroll
        for (int k = 0; k < N; k++) r.v[k] = S::store(op(S::load(x.v[k]), S::load(y.v[k]), al));
        ov[i] = r;
    }
    for (jt_i64 i = vectors * N + start; i < n; i += step) out[i] = S::store(op(S::load(a[i]), S::load(b[i]), al));
}

template <typename C, typename Op>
__device__ __forceinline__ void unary_strided(const char* x, char* y, jt_i64 n, Strided s, Op op) {
    const int sx = dtype_size(s.dtype[1]), sy = dtype_size(s.dtype[0]);
    for (jt_i64 i = global_thread(); i < n; i += grid_threads()) {
        jt_i64 off[2];
        strided_offsets<2>(s, i, off);
        store_as<C>(y + off[0] * sy, s.dtype[0], op(load_as<C>(x + off[1] * sx, s.dtype[1])));
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
        store_as<C>(out + off[0] * so, s.dtype[0], op(va, vb, al));
    }
}

}  // namespace jt

using namespace jt;

#define JT_UNARY(op, Functor, T, suffix) \
    extern "C" __global__ void jt_unary_##op##_##suffix(const T* x, T* y, jt_i64 n) { unary_contiguous<T>(x, y, n, Functor()); }
#define JT_UNARY_STRIDED(op, Functor, C, suffix) \
    extern "C" __global__ void jt_unary_##op##_strided_##suffix(const char* x, char* y, jt_i64 n, Strided s) { \
        unary_strided<C>(x, y, n, s, Functor()); }
#define JT_BINARY(op, Functor, T, suffix) \
    extern "C" __global__ void jt_binary_##op##_##suffix(const T* a, const T* b, T* out, jt_i64 n, double alpha) { \
        binary_contiguous<T>(a, b, out, n, alpha, Functor()); }
#define JT_BINARY_STRIDED(op, Functor, C, suffix) \
    extern "C" __global__ void jt_binary_##op##_strided_##suffix(const char* a, const char* b, char* out, jt_i64 n, double alpha, Strided s) { \
        binary_strided<C>(a, b, out, n, alpha, s, Functor()); }

// Floating-point dtypes for the contiguous path, floating compute types for the strided path.
#define JT_FLOAT_TYPES(X, op, Functor) X(op, Functor, half, f16) X(op, Functor, bfloat16, bf16) X(op, Functor, float, f32) X(op, Functor, double, f64)
#define JT_INT_TYPES(X, op, Functor) X(op, Functor, jt_u8, u8) X(op, Functor, jt_i8, i8) X(op, Functor, jt_i16, i16) X(op, Functor, jt_i32, i32) X(op, Functor, jt_i64, i64)
#define JT_FLOAT_COMPUTE(X, op, Functor) X(op, Functor, float, f32) X(op, Functor, double, f64)
#define JT_INT_COMPUTE(X, op, Functor) X(op, Functor, jt_i64, i64)

// Ops defined for every numeric dtype.
#define JT_NUMERIC_UNARY(op, Functor) JT_FLOAT_TYPES(JT_UNARY, op, Functor) JT_INT_TYPES(JT_UNARY, op, Functor) \
    JT_FLOAT_COMPUTE(JT_UNARY_STRIDED, op, Functor) JT_INT_COMPUTE(JT_UNARY_STRIDED, op, Functor)
// Ops defined for floating dtypes only (integer inputs are promoted by the front end).
#define JT_FLOATING_UNARY(op, Functor) JT_FLOAT_TYPES(JT_UNARY, op, Functor) JT_FLOAT_COMPUTE(JT_UNARY_STRIDED, op, Functor)
#define JT_NUMERIC_BINARY(op, Functor) JT_FLOAT_TYPES(JT_BINARY, op, Functor) JT_INT_TYPES(JT_BINARY, op, Functor) \
    JT_FLOAT_COMPUTE(JT_BINARY_STRIDED, op, Functor) JT_INT_COMPUTE(JT_BINARY_STRIDED, op, Functor)
#define JT_FLOATING_BINARY(op, Functor) JT_FLOAT_TYPES(JT_BINARY, op, Functor) JT_FLOAT_COMPUTE(JT_BINARY_STRIDED, op, Functor)

#if !defined(JT_SELECT) || defined(JT_SELECT_neg)
JT_NUMERIC_UNARY(neg, NegOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_abs)
JT_NUMERIC_UNARY(abs, AbsOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_relu)
JT_NUMERIC_UNARY(relu, ReluOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_exp)
JT_FLOATING_UNARY(exp, ExpOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_log)
JT_FLOATING_UNARY(log, LogOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_sqrt)
JT_FLOATING_UNARY(sqrt, SqrtOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_rsqrt)
JT_FLOATING_UNARY(rsqrt, RsqrtOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_sin)
JT_FLOATING_UNARY(sin, SinOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_cos)
JT_FLOATING_UNARY(cos, CosOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_tanh)
JT_FLOATING_UNARY(tanh, TanhOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_sigmoid)
JT_FLOATING_UNARY(sigmoid, SigmoidOp)
#endif

#if !defined(JT_SELECT) || defined(JT_SELECT_add)
JT_NUMERIC_BINARY(add, AddOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_sub)
JT_NUMERIC_BINARY(sub, SubOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_mul)
JT_NUMERIC_BINARY(mul, MulOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_div)
JT_FLOATING_BINARY(div, DivOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_maximum)
JT_NUMERIC_BINARY(maximum, MaximumOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_minimum)
JT_NUMERIC_BINARY(minimum, MinimumOp)
#endif

// out[i] = cond ? a : b for a contiguous out of dtype out_dtype; Strided operands: 0 = cond (bool),
// 1 = a, 2 = b. Integral outputs go through int64 (exact), the others through double (exact for the
// promoted dtypes of a and b).
#if !defined(JT_SELECT) || defined(JT_SELECT_where)
extern "C" __global__ void jt_where_strided(char* out, const char* cond, const char* a, const char* b, jt_i64 n,
                                            int out_dtype, Strided s) {
    const int so = dtype_size(out_dtype), sa = dtype_size(s.dtype[1]), sb = dtype_size(s.dtype[2]);
    const bool integral = out_dtype <= JT_DTYPE_INT64;
    for (jt_i64 i = global_thread(); i < n; i += grid_threads()) {
        jt_i64 off[3];
        strided_offsets<3>(s, i, off);
        const bool c = *(const bool*)(cond + off[0]);
        char* o = out + i * so;
        if (integral) {
            store_as<jt_i64>(o, out_dtype, c ? load_as<jt_i64>(a + off[1] * sa, s.dtype[1]) : load_as<jt_i64>(b + off[2] * sb, s.dtype[2]));
        } else {
            store_as<double>(o, out_dtype, c ? load_as<double>(a + off[1] * sa, s.dtype[1]) : load_as<double>(b + off[2] * sb, s.dtype[2]));
        }
    }
}
#endif
