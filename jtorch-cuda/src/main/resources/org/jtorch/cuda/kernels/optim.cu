// Fused multi-tensor optimizer steps (one launch updates many parameters, as PyTorch's
// _foreach / fused optimizers). The host (MultiTensorPlan) packs up to JT_MT_TENSORS tensors and a
// block -> (tensor, chunk) table of up to JT_MT_BLOCKS blocks into TensorChunks, passed by value (under
// the 4 KiB kernel-parameter limit); each block updates one chunk of JT_MT_CHUNK elements, a
// block-stride loop inside.
//
// float32, contiguous. The update rules are PyTorch 1.13's; the arithmetic is CpuOptimizerKernels'
// exactly: the same float operations in the same order, each rounded on its own (__fmul_rn,
// __fadd_rn, __fdiv_rn, __fsqrt_rn are never contracted into FMAs), with the scalars precomputed and
// rounded to float by the host as for the CPU kernels, so both backends give the same bits.
#include "jtorch_cuda.cuh"

#define JT_MT_LISTS 5
#define JT_MT_TENSORS 24
#define JT_MT_BLOCKS 320
#define JT_MT_CHUNK 65536

namespace jt {

// lists[0] = params, lists[1] = grads, lists[2..4] = optimizer states (SGD: momentum buffer;
// Adam: exp_avg, exp_avg_sq, max_exp_avg_sq; Adadelta: square_avg, acc_delta). Unused lists are zero.
struct TensorChunks {
    jt_u64 lists[JT_MT_LISTS][JT_MT_TENSORS];
    jt_i64 numel[JT_MT_TENSORS];
    int block_tensor[JT_MT_BLOCKS];
    int block_chunk[JT_MT_BLOCKS];
};

template <typename Step>
__device__ __forceinline__ void for_chunk(const TensorChunks& c, const Step& step) {
    const int t = c.block_tensor[blockIdx.x];
    const jt_i64 begin = (jt_i64)c.block_chunk[blockIdx.x] * JT_MT_CHUNK;
    jt_i64 end = begin + JT_MT_CHUNK;
    if (end > c.numel[t]) end = c.numel[t];
    float* p = (float*)c.lists[0][t];
    const float* g = (const float*)c.lists[1][t];
    float* s0 = (float*)c.lists[2][t];
    float* s1 = (float*)c.lists[3][t];
    float* s2 = (float*)c.lists[4][t];
    for (jt_i64 i = begin + threadIdx.x; i < end; i += blockDim.x) step(p, g, s0, s1, s2, i);
}

// Java's Math.max(float, float): NaN if either is NaN, +0 over -0.
__device__ __forceinline__ float java_max(float a, float b) {
    if (a != a) return a;
    if (b != b) return b;
    if (a == 0.0f && b == 0.0f) return __int_as_float(__float_as_int(a) & __float_as_int(b));
    return a > b ? a : b;
}

// CpuOptimizerKernels.sgdF32: d = ±g (+ p*wd); with momentum buf = first ? d : buf*mu + d*(1-dampening),
// d = nesterov ? d + buf*mu : buf; p = p + d*negLr. (momentum == 0: no buffer, lists[2] unused.)
struct SgdStep {
    float neg_lr, weight_decay, momentum, one_minus_dampening;
    bool nesterov, maximize, first_step;
    __device__ __forceinline__ void operator()(float* p, const float* g, float* buf, float*, float*, jt_i64 i) const {
        float pv = p[i];
        float d = g[i];
        if (maximize) d = -d;
        if (weight_decay != 0.0f) d = __fadd_rn(d, __fmul_rn(pv, weight_decay));
        if (momentum != 0.0f) {
            float b = first_step ? d : __fadd_rn(__fmul_rn(buf[i], momentum), __fmul_rn(d, one_minus_dampening));
            buf[i] = b;
            d = nesterov ? __fadd_rn(d, __fmul_rn(b, momentum)) : b;
        }
        p[i] = __fadd_rn(pv, __fmul_rn(d, neg_lr));
    }
};

// CpuOptimizerKernels.adamF32 (Adam and AdamW): p *= paramScale (AdamW's 1 - lr*wd), d = ±g (+ p*wd, Adam),
// m = m*b1 + d*(1-b1), v = v*b2 + (d*(1-b2))*d, AMSGrad vmax = max(vmax, v),
// p = p + (m*negStepSize) / (sqrt(v or vmax)/bc2Sqrt + eps).
struct AdamStep {
    float param_scale, weight_decay, beta1, one_minus_beta1, beta2, one_minus_beta2, bc2_sqrt, eps, neg_step_size;
    bool maximize, amsgrad;
    __device__ __forceinline__ void operator()(float* p, const float* g, float* m, float* v, float* vmax, jt_i64 i) const {
        float pv = p[i];
        if (param_scale != 1.0f) pv = __fmul_rn(pv, param_scale);
        float d = g[i];
        if (maximize) d = -d;
        if (weight_decay != 0.0f) d = __fadd_rn(d, __fmul_rn(pv, weight_decay));
        float mv = __fadd_rn(__fmul_rn(m[i], beta1), __fmul_rn(d, one_minus_beta1));
        m[i] = mv;
        float vv = __fadd_rn(__fmul_rn(v[i], beta2), __fmul_rn(__fmul_rn(d, one_minus_beta2), d));
        v[i] = vv;
        if (amsgrad) {
            vv = java_max(vmax[i], vv);
            vmax[i] = vv;
        }
        float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vv), bc2_sqrt), eps);
        p[i] = __fadd_rn(pv, __fdiv_rn(__fmul_rn(mv, neg_step_size), denom));
    }
};

// CpuOptimizerKernels.adadeltaF32: d = ±g (+ p*wd), s = s*rho + (d*(1-rho))*d,
// delta = sqrt(a + eps) / sqrt(s + eps) * d, a = a*rho + (delta*(1-rho))*delta, p = p + delta*negLr.
struct AdadeltaStep {
    float neg_lr, rho, one_minus_rho, eps, weight_decay;
    bool maximize;
    __device__ __forceinline__ void operator()(float* p, const float* g, float* sq, float* acc, float*, jt_i64 i) const {
        float pv = p[i];
        float d = g[i];
        if (maximize) d = -d;
        if (weight_decay != 0.0f) d = __fadd_rn(d, __fmul_rn(pv, weight_decay));
        float s = __fadd_rn(__fmul_rn(sq[i], rho), __fmul_rn(__fmul_rn(d, one_minus_rho), d));
        sq[i] = s;
        float a = acc[i];
        float delta = __fmul_rn(__fdiv_rn(__fsqrt_rn(__fadd_rn(a, eps)), __fsqrt_rn(__fadd_rn(s, eps))), d);
        acc[i] = __fadd_rn(__fmul_rn(a, rho), __fmul_rn(__fmul_rn(delta, one_minus_rho), delta));
        p[i] = __fadd_rn(pv, __fmul_rn(delta, neg_lr));
    }
};

}  // namespace jt

using namespace jt;

extern "C" __global__ void jt_sgd_step_f32(TensorChunks chunks, float neg_lr, float weight_decay, float momentum,
                                           float one_minus_dampening, int nesterov, int maximize, int first_step) {
    SgdStep s = {neg_lr, weight_decay, momentum, one_minus_dampening, nesterov != 0, maximize != 0, first_step != 0};
    for_chunk(chunks, s);
}

extern "C" __global__ void jt_adam_step_f32(TensorChunks chunks, float param_scale, float weight_decay, float beta1,
                                            float one_minus_beta1, float beta2, float one_minus_beta2, float bc2_sqrt,
                                            float eps, float neg_step_size, int maximize, int amsgrad) {
    AdamStep s = {param_scale, weight_decay, beta1, one_minus_beta1, beta2, one_minus_beta2, bc2_sqrt, eps, neg_step_size,
                  maximize != 0, amsgrad != 0};
    for_chunk(chunks, s);
}

extern "C" __global__ void jt_adadelta_step_f32(TensorChunks chunks, float neg_lr, float rho, float one_minus_rho, float eps,
                                                float weight_decay, int maximize) {
    AdadeltaStep s = {neg_lr, rho, one_minus_rho, eps, weight_decay, maximize != 0};
    for_chunk(chunks, s);
}

// GradScaler's unscale, as ATen's _amp_foreach_non_finite_check_and_unscale_: lists[0] holds gradients of
// one dtype T. Every element is multiplied by inv_scale in place in CpuOptimizerKernels.unscaleAndCheckFinite's
// arithmetic (float32: one float product; float64: times inv_scale widened; bfloat16: in float, rounded
// once), and *found_inf becomes 1 when an element was inf or NaN before. Non-finite is tested as the CPU
// does: x * 0 is NaN exactly for inf and NaN (no math header needed). Several threads may store the same 1.
namespace jt {

__device__ __forceinline__ bool non_finite(float v) { return __fmul_rn(v, 0.0f) != 0.0f; }
__device__ __forceinline__ bool non_finite(double v) { return __dmul_rn(v, 0.0) != 0.0; }
__device__ __forceinline__ float unscaled(float v, float inv_scale) { return __fmul_rn(v, inv_scale); }
__device__ __forceinline__ double unscaled(double v, float inv_scale) { return __dmul_rn(v, (double)inv_scale); }

template <typename T>
__device__ __forceinline__ void unscale_chunk(const TensorChunks& c, float* found_inf, float inv_scale) {
    const int t = c.block_tensor[blockIdx.x];
    const jt_i64 begin = (jt_i64)c.block_chunk[blockIdx.x] * JT_MT_CHUNK;
    jt_i64 end = begin + JT_MT_CHUNK;
    if (end > c.numel[t]) end = c.numel[t];
    T* g = (T*)c.lists[0][t];
    bool bad = false;
    for (jt_i64 i = begin + threadIdx.x; i < end; i += blockDim.x) {
        typename Scalar<T>::acc v = Scalar<T>::load(g[i]);
        bad |= non_finite(v);
        g[i] = Scalar<T>::store(unscaled(v, inv_scale));
    }
    if (bad) *found_inf = 1.0f;
}

}  // namespace jt

#define JT_AMP_UNSCALE(T, suffix)                                                                          \
    extern "C" __global__ void jt_amp_unscale_##suffix(TensorChunks chunks, float* found_inf, float inv_scale) { \
        unscale_chunk<T>(chunks, found_inf, inv_scale);                                                    \
    }
JT_AMP_UNSCALE(float, f32)
JT_AMP_UNSCALE(double, f64)
JT_AMP_UNSCALE(bfloat16, bf16)
