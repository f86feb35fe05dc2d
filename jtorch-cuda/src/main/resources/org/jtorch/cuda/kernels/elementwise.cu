// Elementwise unary and binary ops: every org.jtorch.ops.UnaryOp and BinaryOp, with the CPU backend's
// semantics (each op's scalar definition in UnaryOp/BinaryOp is the reference).
//
// Two paths per op, as PyTorch's:
//  - contiguous: every input contiguous and of the compute dtype T, the output contiguous and of the op's
//    result dtype (T, or bool for predicates and comparisons); grid-stride loop over 16-byte vectors of T
//    (when the pointers are aligned) plus a scalar tail. Entry: jt_<unary|binary>_<op>_<dtype of T>.
//  - strided: any strides (broadcast = stride 0) and any operand dtypes, converted to and from the
//    compute type C on load and store. Entry: jt_<unary|binary>_<op>_strided_<f32|f64|i64>.
// And where (jt_where_strided): out = cond ? a : b, any strides and dtypes for cond, a, b, into a
// contiguous out.
// Unary entries take the op's two scalar parameters p0, p1 (clamp bounds, leaky_relu's slope, softplus'
// beta and threshold, pow's exponent; ignored by the others), binary entries alpha (add, sub).
// The op functors compute in Scalar<T>::acc (float for half and bfloat16); integer results are computed
// in 64 bits and wrapped to T on store, as the CPU backend computes integers in long (so int32 shifts,
// powers and clamps to out-of-range bounds agree).
// Compiling everything (541 entries) takes nvcc ~15 s here, so the backend compiles one op at a time:
// -DJT_SELECT -DJT_SELECT_add instantiates only add (all dtypes); without JT_SELECT, every op.
#include "elementwise.cuh"

namespace jt {

// ---- op functors: unary ops read p0, p1; binary ops (a, b, alpha) ----
struct NegOp : ToSame, UnaryParams { template <typename A> __device__ A operator()(A x) const { return -x; } };
// Math.abs: abs(-0.0) is +0.0 (fabs), abs(Long.MIN_VALUE) wraps to itself.
struct AbsOp : ToSame, UnaryParams {
    template <typename A> __device__ A operator()(A x) const {
        if constexpr (IsIntegral<A>::value) {
            jt_i64 v = (jt_i64)x;
            return (A)(v < 0 ? (jt_i64)(0ull - (jt_u64)v) : v);
        } else {
            return fabs(x);
        }
    }
};
// (0 < x) - (x < 0): NaN and -0.0 give +0.0.
struct SignOp : ToSame, UnaryParams {
    template <typename A> __device__ A operator()(A x) const {
        if constexpr (IsIntegral<A>::value) {
            jt_i64 v = (jt_i64)x;
            return (A)((v > 0) - (v < 0));
        } else {
            return x > A(0) ? A(1) : x < A(0) ? A(-1) : A(0);
        }
    }
};
// Rounding ops leave integers as they are.
struct FloorOp : ToSame, UnaryParams {
    template <typename A> __device__ A operator()(A x) const {
        if constexpr (IsIntegral<A>::value) return x; else return floor(x);
    }
};
struct CeilOp : ToSame, UnaryParams {
    template <typename A> __device__ A operator()(A x) const {
        if constexpr (IsIntegral<A>::value) return x; else return ceil(x);
    }
};
// rint rounds half to even (Math.rint, torch.round).
struct RoundOp : ToSame, UnaryParams {
    template <typename A> __device__ A operator()(A x) const {
        if constexpr (IsIntegral<A>::value) return x; else return rint(x);
    }
};
struct TruncOp : ToSame, UnaryParams {
    template <typename A> __device__ A operator()(A x) const {
        if constexpr (IsIntegral<A>::value) return x; else return trunc(x);
    }
};
struct ReluOp : ToSame, UnaryParams { template <typename A> __device__ A operator()(A x) const { return (x != x || x > A(0)) ? x : A(0); } };
// p0 = negative_slope.
struct LeakyReluOp : ToSame, UnaryParams {
    template <typename A> __device__ A operator()(A x) const { return x > A(0) ? x : x * A(p0); }
};
// clamp(min = p0, max = p1); the front end passes an absent bound as -inf / +inf (integers: Long.MIN/MAX);
// a NaN bound is no bound, a NaN input stays NaN.
struct ClampOp : ToSame, UnaryParams {
    template <typename A> __device__ A operator()(A x) const {
        if constexpr (IsIntegral<A>::value) {
            jt_i64 v = (jt_i64)x, lo = java_long(p0), hi = java_long(p1);
            v = v < lo ? lo : v;
            return (A)(v > hi ? hi : v);
        } else {
            if (x != x) return x;
            if (p0 == p0 && x < A(p0)) x = A(p0);
            if (p1 == p1 && x > A(p1)) x = A(p1);
            return x;
        }
    }
};
struct ExpOp : ToSame, UnaryParams { template <typename A> __device__ A operator()(A x) const { return exp(x); } };
struct LogOp : ToSame, UnaryParams { template <typename A> __device__ A operator()(A x) const { return log(x); } };
struct Log1pOp : ToSame, UnaryParams { template <typename A> __device__ A operator()(A x) const { return log1p(x); } };
struct Expm1Op : ToSame, UnaryParams { template <typename A> __device__ A operator()(A x) const { return expm1(x); } };
struct SqrtOp : ToSame, UnaryParams { template <typename A> __device__ A operator()(A x) const { return sqrt(x); } };
struct RsqrtOp : ToSame, UnaryParams { template <typename A> __device__ A operator()(A x) const { return A(1) / sqrt(x); } };
struct ReciprocalOp : ToSame, UnaryParams { template <typename A> __device__ A operator()(A x) const { return A(1) / x; } };
struct SinOp : ToSame, UnaryParams { template <typename A> __device__ A operator()(A x) const { return sin(x); } };
struct CosOp : ToSame, UnaryParams { template <typename A> __device__ A operator()(A x) const { return cos(x); } };
struct TanhOp : ToSame, UnaryParams { template <typename A> __device__ A operator()(A x) const { return tanh(x); } };
struct SigmoidOp : ToSame, UnaryParams { template <typename A> __device__ A operator()(A x) const { return A(1) / (A(1) + exp(-x)); } };
// x * Phi(x) with the exact normal CDF: 0.5 x (1 + erf(x / sqrt 2)) written with erfc, which is the same
// function without the cancellation of 1 + erf for negative x (float keeps its relative accuracy there).
struct GeluOp : ToSame, UnaryParams {
    template <typename A> __device__ A operator()(A x) const { return A(0.5) * x * erfc(-x / sqrt(A(2))); }
};
// 0.5 x (1 + tanh(z)) = x / (1 + exp(-2z)), z = sqrt(2 / pi) (x + 0.044715 x^3): the same function without the
// cancellation of 1 + tanh for negative x.
struct GeluTanhOp : ToSame, UnaryParams {
    template <typename A> __device__ A operator()(A x) const {
        A inner = sqrt(A(2) / A(3.14159265358979323846)) * (x + A(0.044715) * x * x * x);
        return x / (A(1) + exp(A(-2) * inner));
    }
};
struct SiluOp : ToSame, UnaryParams { template <typename A> __device__ A operator()(A x) const { return x / (A(1) + exp(-x)); } };
// softplus(beta = p0, threshold = p1): linear above the threshold.
struct SoftplusOp : ToSame, UnaryParams {
    template <typename A> __device__ A operator()(A x) const {
        const A beta = A(p0);
        return x * beta > A(p1) ? x : log1p(exp(x * beta)) / beta;
    }
};
struct ErfOp : ToSame, UnaryParams { template <typename A> __device__ A operator()(A x) const { return erf(x); } };
// pow(x, exponent = p0): the exponents ATen special-cases through the same functions as ATen
// (pow(-inf, 0.5) is sqrt(-inf) = nan); integers by squaring with the exponent as Java's (long) p0.
struct PowScalarOp : ToSame, UnaryParams {
    template <typename A> __device__ A operator()(A x) const {
        if constexpr (IsIntegral<A>::value) {
            return (A)int_pow((jt_i64)x, java_long(p0));
        } else {
            if (p0 == 0.5) return sqrt(x);
            if (p0 == -0.5) return A(1) / sqrt(x);
            if (p0 == 2) return x * x;
            if (p0 == 3) return x * x * x;
            if (p0 == -1) return A(1) / x;
            if (p0 == -2) return A(1) / (x * x);
            return java_pow(x, A(p0));
        }
    }
};
// Predicates: bool results, computed in the input's dtype; integers are never NaN or infinite.
struct LogicalNotOp : ToBool, UnaryParams { template <typename A> __device__ bool operator()(A x) const { return x == A(0); } };
struct BitwiseNotOp : ToSame, UnaryParams {
    template <typename A> __device__ A operator()(A x) const { return (A)(~(jt_i64)x); }
};
struct IsnanOp : ToBool, UnaryParams {
    template <typename A> __device__ bool operator()(A x) const {
        if constexpr (IsIntegral<A>::value) return false; else return x != x;
    }
};
struct IsinfOp : ToBool, UnaryParams {
    template <typename A> __device__ bool operator()(A x) const {
        if constexpr (IsIntegral<A>::value) return false; else return x == x && !is_finite(x);
    }
};
struct IsfiniteOp : ToBool, UnaryParams {
    template <typename A> __device__ bool operator()(A x) const {
        if constexpr (IsIntegral<A>::value) return true; else return is_finite(x);
    }
};

// a + alpha * b as one fused multiply-add for floats: what NVRTC's contraction makes of it on a GPU, and what the
// CPU backend computes; written out so that no compiler or optimisation level rounds twice (the simulator's).
template <typename A> __device__ __forceinline__ A mul_add(A x, A y, A z) { return x * y + z; }
template <> __device__ __forceinline__ float mul_add<float>(float x, float y, float z) { return fmaf(x, y, z); }
template <> __device__ __forceinline__ double mul_add<double>(double x, double y, double z) { return fma(x, y, z); }
struct AddOp : ToSame { template <typename A> __device__ A operator()(A a, A b, A alpha) const { return mul_add<A>(alpha, b, a); } };
struct SubOp : ToSame { template <typename A> __device__ A operator()(A a, A b, A alpha) const { return mul_add<A>(A(-alpha), b, a); } };
struct MulOp : ToSame { template <typename A> __device__ A operator()(A a, A b, A) const { return a * b; } };
struct DivOp : ToSame { template <typename A> __device__ A operator()(A a, A b, A) const { return a / b; } };
// The rounding divisions and the remainder of floating operands are computed in double whatever the dtype,
// as the CPU backend does: their results are integers (or exact remainders) that a float quotient could
// round across, so double keeps them equal to the CPU's bit for bit.
struct DivTruncOp : ToSame {
    template <typename A> __device__ A operator()(A a, A b, A) const {
        if constexpr (IsIntegral<A>::value) {
            return (A)java_div((jt_i64)a, (jt_i64)b);
        } else {
            return (A)trunc((double)a / (double)b);
        }
    }
};
// Python's floor division: ATen's div_floor_floating (from fmod, so that -0.001 // inf == -1 and
// inf // 2 == nan); integers round the quotient towards -inf (Math.floorDiv).
struct DivFloorOp : ToSame {
    template <typename A> __device__ A operator()(A a, A b, A) const {
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
};
// Python's modulus: the result takes the divisor's sign (Math.floorMod for integers).
struct RemainderOp : ToSame {
    template <typename A> __device__ A operator()(A a, A b, A) const {
        if constexpr (IsIntegral<A>::value) {
            jt_i64 x = (jt_i64)a, y = (jt_i64)b, r = java_rem(x, y);
            return (A)((r != 0 && ((r ^ y) < 0)) ? r + y : r);
        } else {
            double x = (double)a, y = (double)b, r = fmod(x, y);
            return (A)((r != 0 && (r < 0) != (y < 0)) ? r + y : r);
        }
    }
};
struct PowOp : ToSame {
    template <typename A> __device__ A operator()(A a, A b, A) const {
        if constexpr (IsIntegral<A>::value) return (A)int_pow((jt_i64)a, (jt_i64)b); else return java_pow(a, b);
    }
};
struct MaximumOp : ToSame { template <typename A> __device__ A operator()(A a, A b, A) const { return nan_max(a, b); } };
struct MinimumOp : ToSame { template <typename A> __device__ A operator()(A a, A b, A) const { return nan_min(a, b); } };
// ReLU's backward: b <= 0 ? 0 : a; a NaN b keeps the gradient.
struct ThresholdBackwardOp : ToSame {
    template <typename A> __device__ A operator()(A a, A b, A) const { return b <= A(0) ? A(0) : a; }
};
// Comparisons and logical ops: bool results, computed in the promoted dtype (NaN compares unequal).
struct EqOp : ToBool { template <typename A> __device__ bool operator()(A a, A b, A) const { return a == b; } };
struct NeOp : ToBool { template <typename A> __device__ bool operator()(A a, A b, A) const { return a != b; } };
struct LtOp : ToBool { template <typename A> __device__ bool operator()(A a, A b, A) const { return a < b; } };
struct LeOp : ToBool { template <typename A> __device__ bool operator()(A a, A b, A) const { return a <= b; } };
struct GtOp : ToBool { template <typename A> __device__ bool operator()(A a, A b, A) const { return a > b; } };
struct GeOp : ToBool { template <typename A> __device__ bool operator()(A a, A b, A) const { return a >= b; } };
struct LogicalAndOp : ToBool { template <typename A> __device__ bool operator()(A a, A b, A) const { return a != A(0) && b != A(0); } };
struct LogicalOrOp : ToBool { template <typename A> __device__ bool operator()(A a, A b, A) const { return a != A(0) || b != A(0); } };
struct LogicalXorOp : ToBool { template <typename A> __device__ bool operator()(A a, A b, A) const { return (a != A(0)) != (b != A(0)); } };
// Bitwise ops and shifts (integer and bool compute only), on the 64-bit values as Java's long.
struct BitwiseAndOp : ToSame { template <typename A> __device__ A operator()(A a, A b, A) const { return (A)((jt_i64)a & (jt_i64)b); } };
struct BitwiseOrOp : ToSame { template <typename A> __device__ A operator()(A a, A b, A) const { return (A)((jt_i64)a | (jt_i64)b); } };
struct BitwiseXorOp : ToSame { template <typename A> __device__ A operator()(A a, A b, A) const { return (A)((jt_i64)a ^ (jt_i64)b); } };
// A count outside [0, 64) shifts everything out (0); shifted as unsigned so that negative values are defined.
struct BitwiseLeftShiftOp : ToSame {
    template <typename A> __device__ A operator()(A a, A b, A) const {
        jt_i64 n = (jt_i64)b;
        return (A)(n >= 64 || n < 0 ? 0 : (jt_i64)((jt_u64)(jt_i64)a << n));
    }
};
// Arithmetic shift with the count clamped to [0, 63]: a negative count shifts by 0, a large one leaves the sign.
struct BitwiseRightShiftOp : ToSame {
    template <typename A> __device__ A operator()(A a, A b, A) const {
        jt_i64 n = (jt_i64)b;
        return (A)((jt_i64)a >> (n < 0 ? 0 : n > 63 ? 63 : n));
    }
};

}  // namespace jt


#if !defined(JT_SELECT) || defined(JT_SELECT_neg)
JT_NUMERIC_UNARY(neg, NegOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_abs)
JT_NUMERIC_UNARY(abs, AbsOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_sign)
JT_NUMERIC_UNARY(sign, SignOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_floor)
JT_NUMERIC_UNARY(floor, FloorOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_ceil)
JT_NUMERIC_UNARY(ceil, CeilOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_round)
JT_NUMERIC_UNARY(round, RoundOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_trunc)
JT_NUMERIC_UNARY(trunc, TruncOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_relu)
JT_NUMERIC_UNARY(relu, ReluOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_leaky_relu)
JT_FLOATING_UNARY(leaky_relu, LeakyReluOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_clamp)
JT_NUMERIC_UNARY(clamp, ClampOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_exp)
JT_FLOATING_UNARY(exp, ExpOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_log)
JT_FLOATING_UNARY(log, LogOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_log1p)
JT_FLOATING_UNARY(log1p, Log1pOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_expm1)
JT_FLOATING_UNARY(expm1, Expm1Op)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_sqrt)
JT_FLOATING_UNARY(sqrt, SqrtOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_rsqrt)
JT_FLOATING_UNARY(rsqrt, RsqrtOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_reciprocal)
JT_FLOATING_UNARY(reciprocal, ReciprocalOp)
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
#if !defined(JT_SELECT) || defined(JT_SELECT_gelu)
JT_FLOATING_UNARY(gelu, GeluOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_gelu_tanh)
JT_FLOATING_UNARY(gelu_tanh, GeluTanhOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_silu)
JT_FLOATING_UNARY(silu, SiluOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_softplus)
JT_FLOATING_UNARY(softplus, SoftplusOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_erf)
JT_FLOATING_UNARY(erf, ErfOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_pow_scalar)
JT_NUMERIC_UNARY(pow_scalar, PowScalarOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_logical_not)
JT_NUMERIC_UNARY(logical_not, LogicalNotOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_bitwise_not)
JT_INTEGRAL_UNARY(bitwise_not, BitwiseNotOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_isnan)
JT_NUMERIC_UNARY(isnan, IsnanOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_isinf)
JT_NUMERIC_UNARY(isinf, IsinfOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_isfinite)
JT_NUMERIC_UNARY(isfinite, IsfiniteOp)
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
#if !defined(JT_SELECT) || defined(JT_SELECT_div_trunc)
JT_NUMERIC_BINARY(div_trunc, DivTruncOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_div_floor)
JT_NUMERIC_BINARY(div_floor, DivFloorOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_remainder)
JT_NUMERIC_BINARY(remainder, RemainderOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_pow)
JT_NUMERIC_BINARY(pow, PowOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_maximum)
JT_NUMERIC_BINARY(maximum, MaximumOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_minimum)
JT_NUMERIC_BINARY(minimum, MinimumOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_threshold_backward)
JT_NUMERIC_BINARY(threshold_backward, ThresholdBackwardOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_eq)
JT_NUMERIC_BINARY(eq, EqOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_ne)
JT_NUMERIC_BINARY(ne, NeOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_lt)
JT_NUMERIC_BINARY(lt, LtOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_le)
JT_NUMERIC_BINARY(le, LeOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_gt)
JT_NUMERIC_BINARY(gt, GtOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_ge)
JT_NUMERIC_BINARY(ge, GeOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_logical_and)
JT_NUMERIC_BINARY(logical_and, LogicalAndOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_logical_or)
JT_NUMERIC_BINARY(logical_or, LogicalOrOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_logical_xor)
JT_NUMERIC_BINARY(logical_xor, LogicalXorOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_bitwise_and)
JT_INTEGRAL_BINARY(bitwise_and, BitwiseAndOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_bitwise_or)
JT_INTEGRAL_BINARY(bitwise_or, BitwiseOrOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_bitwise_xor)
JT_INTEGRAL_BINARY(bitwise_xor, BitwiseXorOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_bitwise_left_shift)
JT_INTEGRAL_BINARY(bitwise_left_shift, BitwiseLeftShiftOp)
#endif
#if !defined(JT_SELECT) || defined(JT_SELECT_bitwise_right_shift)
JT_INTEGRAL_BINARY(bitwise_right_shift, BitwiseRightShiftOp)
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
