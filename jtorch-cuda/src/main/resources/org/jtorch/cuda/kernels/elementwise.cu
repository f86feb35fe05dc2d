// torch.where over strided operands of any dtypes. The pointwise ops' kernels are generated from their declared
// formulas (org.jtorch.cuda.FormulaKernels, over elementwise.cuh's machinery); this file keeps what is not a formula.
// -DJT_SELECT -DJT_SELECT_where selects the entry, as the backend compiles one op at a time.
#include "elementwise.cuh"

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
