// The synchronised batch norm's per-channel arithmetic between ranks, one launch each, one thread a channel: the
// merge of the all-gathered statistics (batch_norm_gather_stats_with_counts) and the input gradient's coefficients
// (batch_norm_backward_elemt). Each thread takes the steps core's NormalizationOpKernels composes from pointwise kernels,
// in the same order, each in double and rounded once (__dadd_rn, __dmul_rn, __ddiv_rn: never contracted to an FMA, as
// each step was its own kernel), so the results are those kernels' bit for bit:
//   total = sum_r n_r; mean = (sum_r n_r * mean_r) / total
//   m2 = sum_r (n_r * (1 / max(invstd_r, TINY)^2 - eps) + (n_r * (mean_r - mean)) * (mean_r - mean))
//   invstd = 1 / sqrt(m2 / total + eps)
//   running_mean = fma(momentum, mean, running_mean * (1 - momentum))       (the product in the running dtype's
//   running_var  = fma(momentum, m2 / (total - 1 + 0 * log(total - 1)), running_var * (1 - momentum))   compute type)
//   coef[c][0..2] = invstd * weight (invstd without a weight), sum_dy_xmu / total * invstd * invstd, sum_dy / total
// Operands are read and written where they lie: a pointer, strides in bytes and a dtype code (jtorch_cuda.cuh's
// load_as/store_as, as the strided pointwise kernels convert); a null running statistic or weight is skipped.
// Entries: jt_sync_bn_gather(mean, mean_rank_stride, mean_stride, mean_dtype, invstd, ..., counts, counts_stride,
//                            counts_dtype, running_mean, rm_stride, rm_dtype, running_var, rv_stride, rv_dtype,
//                            mean_out, mo_stride, mo_dtype, invstd_out, io_stride, io_dtype, ranks, c, momentum, eps)
//          jt_sync_bn_coefficients(invstd, invstd_stride, invstd_dtype, weight, w_stride, w_dtype, sum_dy, ..., sum_dy_xmu,
//                            ..., counts, counts_stride, counts_dtype, coef, ranks, c)
#include "jtorch_cuda.cuh"

namespace jt {

// A positive floor for invstd whose reciprocal square is finite in double (NormalizationOpKernels.TINY).
#define JT_SYNC_BN_TINY 1e-150

__device__ __forceinline__ double load_at(const char* p, jt_i64 i, jt_i64 stride, int dtype) {
    return load_as<double>(p + i * stride, dtype);
}

// running = running * (1 - momentum) in the running dtype's compute type (float for 16/32-bit floats: the factor a
// float32 wrapped number for 16-bit, the dtype's own otherwise), then running = fma(momentum, batch, running) in double.
__device__ __forceinline__ void move_towards(char* running, jt_i64 i, jt_i64 stride, int dtype, double batch, double momentum) {
    char* p = running + i * stride;
    if (dtype == JT_DTYPE_FLOAT64) {
        store_as<double>(p, dtype, __dmul_rn(load_as<double>(p, dtype), __dadd_rn(1.0, -momentum)));
    } else {
        store_as<float>(p, dtype, __fmul_rn(load_as<float>(p, dtype), (float)__dadd_rn(1.0, -momentum)));
    }
    store_as<double>(p, dtype, fma(momentum, batch, load_as<double>(p, dtype)));
}

}  // namespace jt

using namespace jt;

extern "C" __global__ void jt_sync_bn_gather(const char* mean, jt_i64 mean_rank_stride, jt_i64 mean_stride, int mean_dtype,
                                             const char* invstd, jt_i64 invstd_rank_stride, jt_i64 invstd_stride, int invstd_dtype,
                                             const char* counts, jt_i64 counts_stride, int counts_dtype,
                                             char* running_mean, jt_i64 rm_stride, int rm_dtype,
                                             char* running_var, jt_i64 rv_stride, int rv_dtype,
                                             char* mean_out, jt_i64 mo_stride, int mo_dtype,
                                             char* invstd_out, jt_i64 io_stride, int io_dtype,
                                             jt_i64 ranks, jt_i64 c, double momentum, double eps) {
    for (jt_i64 j = global_thread(); j < c; j += grid_threads()) {
        double total = 0, weighted = 0;
        for (jt_i64 r = 0; r < ranks; r++) {
            double n = load_at(counts, r, counts_stride, counts_dtype);
            total = __dadd_rn(total, n);
            weighted = __dadd_rn(weighted, __dmul_rn(n, load_as<double>(mean + r * mean_rank_stride + j * mean_stride, mean_dtype)));
        }
        const double m = __ddiv_rn(weighted, total);
        double m2 = 0;
        for (jt_i64 r = 0; r < ranks; r++) {
            double n = load_at(counts, r, counts_stride, counts_dtype);
            double mean_r = load_as<double>(mean + r * mean_rank_stride + j * mean_stride, mean_dtype);
            double t = nan_max(load_as<double>(invstd + r * invstd_rank_stride + j * invstd_stride, invstd_dtype),
                               (double)JT_SYNC_BN_TINY);
            t = __dmul_rn(t, t);
            t = __ddiv_rn(1.0, t);
            t = __dadd_rn(t, -eps);
            t = __dmul_rn(n, t);
            double e = __dadd_rn(mean_r, -m);
            double d = __dmul_rn(__dmul_rn(n, e), e);
            m2 = __dadd_rn(m2, __dadd_rn(t, d));
        }
        store_as<double>(mean_out + j * mo_stride, mo_dtype, m);
        store_as<double>(invstd_out + j * io_stride, io_dtype,
                         __ddiv_rn(1.0, sqrt(__dadd_rn(__ddiv_rn(m2, total), eps))));
        if (running_mean != nullptr) move_towards(running_mean, j, rm_stride, rm_dtype, m, momentum);
        if (running_var != nullptr) {
            // the unbiased variance, NaN where total <= 1: the divisor plus 0 * log(divisor)
            double d = __dadd_rn(total, -1.0);
            d = __dadd_rn(d, __dmul_rn(log(d), 0.0));
            move_towards(running_var, j, rv_stride, rv_dtype, __ddiv_rn(m2, d), momentum);
        }
    }
}

extern "C" __global__ void jt_sync_bn_coefficients(const char* invstd, jt_i64 invstd_stride, int invstd_dtype,
                                                   const char* weight, jt_i64 weight_stride, int weight_dtype,
                                                   const char* sum_dy, jt_i64 sum_dy_stride, int sum_dy_dtype,
                                                   const char* sum_dy_xmu, jt_i64 sum_dy_xmu_stride, int sum_dy_xmu_dtype,
                                                   const char* counts, jt_i64 counts_stride, int counts_dtype,
                                                   double* coef, jt_i64 ranks, jt_i64 c) {
    for (jt_i64 j = global_thread(); j < c; j += grid_threads()) {
        double total = 0;
        for (jt_i64 r = 0; r < ranks; r++) total = __dadd_rn(total, load_at(counts, r, counts_stride, counts_dtype));
        double s = load_at(invstd, j, invstd_stride, invstd_dtype);
        double scale = weight == nullptr ? s : __dmul_rn(s, load_at(weight, j, weight_stride, weight_dtype));
        double centred = __ddiv_rn(load_at(sum_dy_xmu, j, sum_dy_xmu_stride, sum_dy_xmu_dtype), total);
        centred = __dmul_rn(__dmul_rn(centred, s), s);
        coef[3 * j] = scale;
        coef[3 * j + 1] = centred;
        coef[3 * j + 2] = __ddiv_rn(load_at(sum_dy, j, sum_dy_stride, sum_dy_dtype), total);
    }
}
