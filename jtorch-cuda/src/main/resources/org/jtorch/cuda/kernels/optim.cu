// Fused multi-tensor optimizer steps (one launch updates many parameters, as PyTorch's
// _foreach / fused optimizers). The host packs up to JT_MT_TENSORS tensors and a block -> (tensor,
// chunk) table of up to JT_MT_BLOCKS blocks into TensorChunks, passed by value (under the 4 KiB
// kernel-parameter limit); each block updates one chunk of JT_MT_CHUNK elements, grid-stride inside.
// Parameters, gradients and states share the dtype T (float or double); update rules are PyTorch 1.13's.
#include "jtorch_cuda.cuh"

#define JT_MT_TENSORS 24
#define JT_MT_BLOCKS 320
#define JT_MT_CHUNK 65536

namespace jt {

// lists[0] = params, lists[1] = grads, lists[2..] = optimizer states (momentum; exp_avg, exp_avg_sq).
struct TensorChunks {
    jt_u64 lists[4][JT_MT_TENSORS];
    jt_i64 numel[JT_MT_TENSORS];
    int block_tensor[JT_MT_BLOCKS];
    int block_chunk[JT_MT_BLOCKS];
};

template <typename T, typename Step>
__device__ __forceinline__ void for_chunk(const TensorChunks& c, Step step) {
    const int t = c.block_tensor[blockIdx.x];
    const jt_i64 begin = (jt_i64)c.block_chunk[blockIdx.x] * JT_MT_CHUNK;
    jt_i64 end = begin + JT_MT_CHUNK;
    if (end > c.numel[t]) end = c.numel[t];
    T* p = (T*)c.lists[0][t];
    const T* g = (const T*)c.lists[1][t];
    T* s0 = (T*)c.lists[2][t];
    T* s1 = (T*)c.lists[3][t];
    for (jt_i64 i = begin + threadIdx.x; i < end; i += blockDim.x) step(p, g, s0, s1, i);
}

// torch.optim.SGD: d = g + wd * p; buf = first ? d : momentum * buf + (1 - dampening) * d;
// d = nesterov ? d + momentum * buf : buf; p -= lr * d. (momentum == 0: no buffer, lists[2] unused.)
template <typename T> struct SgdStep {
    T lr, momentum, dampening, weight_decay;
    bool nesterov, first_step, maximize;
    __device__ void operator()(T* p, const T* g, T* buf, T*, jt_i64 i) const {
        T d = maximize ? -g[i] : g[i];
        if (weight_decay != T(0)) d += weight_decay * p[i];
        if (momentum != T(0)) {
            T b = first_step ? d : momentum * buf[i] + (T(1) - dampening) * d;
            buf[i] = b;
            d = nesterov ? d + momentum * b : b;
        }
        p[i] -= lr * d;
    }
};

// torch.optim.Adam / AdamW (amsgrad off): Adam adds wd * p to the gradient, AdamW decays p by
// (1 - lr * wd) first. m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps), bc_k = 1 - beta_k^step (computed on the host).
template <typename T> struct AdamStep {
    T lr, beta1, beta2, eps, weight_decay, bias_correction1, bias_correction2_sqrt;
    bool decoupled, maximize;
    __device__ void operator()(T* p, const T* g, T* m, T* v, jt_i64 i) const {
        T grad = maximize ? -g[i] : g[i];
        T param = p[i];
        if (weight_decay != T(0)) {
            if (decoupled) param *= T(1) - lr * weight_decay;
            else grad += weight_decay * param;
        }
        T mi = beta1 * m[i] + (T(1) - beta1) * grad;
        T vi = beta2 * v[i] + (T(1) - beta2) * grad * grad;
        m[i] = mi;
        v[i] = vi;
        T denom = sqrt(vi) / bias_correction2_sqrt + eps;
        p[i] = param - (lr / bias_correction1) * mi / denom;
    }
};

}  // namespace jt

using namespace jt;

#define JT_OPTIM(T, suffix) \
    extern "C" __global__ void jt_sgd_step_##suffix(TensorChunks chunks, T lr, T momentum, T dampening, T weight_decay, \
                                                     int nesterov, int first_step, int maximize) { \
        SgdStep<T> s = {lr, momentum, dampening, weight_decay, nesterov != 0, first_step != 0, maximize != 0}; \
        for_chunk<T>(chunks, s); } \
    extern "C" __global__ void jt_adam_step_##suffix(TensorChunks chunks, T lr, T beta1, T beta2, T eps, T weight_decay, \
                                                      T bias_correction1, T bias_correction2_sqrt, int decoupled, int maximize) { \
        AdamStep<T> s = {lr, beta1, beta2, eps, weight_decay, bias_correction1, bias_correction2_sqrt, decoupled != 0, maximize != 0}; \
        for_chunk<T>(chunks, s); }

JT_OPTIM(float, f32)
JT_OPTIM(double, f64)
