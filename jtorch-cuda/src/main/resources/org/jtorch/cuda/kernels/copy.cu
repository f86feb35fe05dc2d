// Fill and copy-with-cast.
//  - jt_fill_<dtype>(out, n, value, long_value): contiguous fill with 16-byte stores; integral dtypes
//    take long_value (exact for all of int64), the others value.
//  - jt_copy_strided(dst, src, n, Strided): any strides and any pair of dtypes (operand 0 = dst,
//    operand 1 = src). Integral-to-integral copies go through int64 (exact); everything else through
//    double, which holds every value of every other dtype exactly.
#include "jtorch_cuda.cuh"

namespace jt {

template <typename T>
__device__ __forceinline__ void fill_contiguous(T* __restrict__ out, jt_i64 n, T value) {
    const int N = Vec16<T>::N;
    const jt_i64 start = global_thread(), step = grid_threads();
    jt_i64 vectors = aligned16(out) ? n / N : 0;
    Vec16<T> v;
    #pragma unroll
    for (int k = 0; k < N; k++) v.v[k] = value;
    Vec16<T>* ov = (Vec16<T>*)out;
    for (jt_i64 i = start; i < vectors; i += step) ov[i] = v;
    for (jt_i64 i = vectors * N + start; i < n; i += step) out[i] = value;
}

__device__ __forceinline__ bool is_integral(int dtype) {
    return dtype >= JT_DTYPE_BOOL && dtype <= JT_DTYPE_INT64;
}

}  // namespace jt

using namespace jt;

#define JT_FILL_FLOAT(T, suffix) \
    extern "C" __global__ void jt_fill_##suffix(T* out, jt_i64 n, double value, jt_i64 long_value) { \
        fill_contiguous<T>(out, n, Scalar<T>::store(value)); }
#define JT_FILL_INT(T, suffix) \
    extern "C" __global__ void jt_fill_##suffix(T* out, jt_i64 n, double value, jt_i64 long_value) { \
        fill_contiguous<T>(out, n, Scalar<T>::store(long_value)); }

JT_FILL_INT(bool, bool)
JT_FILL_INT(jt_u8, u8)
JT_FILL_INT(jt_i8, i8)
JT_FILL_INT(jt_i16, i16)
JT_FILL_INT(jt_i32, i32)
JT_FILL_INT(jt_i64, i64)
JT_FILL_FLOAT(half, f16)
JT_FILL_FLOAT(bfloat16, bf16)
JT_FILL_FLOAT(float, f32)
JT_FILL_FLOAT(double, f64)

extern "C" __global__ void jt_copy_strided(char* dst, const char* src, jt_i64 n, Strided s) {
    const int sd = dtype_size(s.dtype[0]), ss = dtype_size(s.dtype[1]);
    const bool exact_integral = is_integral(s.dtype[0]) && is_integral(s.dtype[1]);
    for (jt_i64 i = global_thread(); i < n; i += grid_threads()) {
        jt_i64 off[2];
        strided_offsets<2>(s, i, off);
        if (exact_integral) {
            store_as<jt_i64>(dst + off[0] * sd, s.dtype[0], load_as<jt_i64>(src + off[1] * ss, s.dtype[1]));
        } else {
            store_as<double>(dst + off[0] * sd, s.dtype[0], load_as<double>(src + off[1] * ss, s.dtype[1]));
        }
    }
}
