// Fused recurrent cell steps (org.jtorch.backend.RecurrentKernels; CpuRecurrentKernels is the reference): the
// gate nonlinearities and the state update of one LSTM or GRU time step, forward and backward, one thread an
// element of the [batch, hidden] state, grid-stride. Gates are contiguous [batch, G * hidden] rows in PyTorch's
// order (LSTM i, f, g, o; GRU r, z, n); the workspace is [batch, 4 * hidden] (LSTM: the activated gates; GRU:
// r, z, n and the hidden side's n block). A null incoming gradient is zero. float32 and float64.
#include "jtorch_cuda.cuh"

namespace jt {

template <typename T>
__device__ __forceinline__ T sigmoid(T x) {
    return T(1) / (T(1) + exp(-x));
}

template <typename T>
__device__ __forceinline__ T load_or_zero(const T* p, jt_i64 i) {
    return p == nullptr ? T(0) : p[i];
}

template <typename T>
__device__ void lstm_forward(const T* ig, const T* hg, const T* cx, T* hy, T* cy, T* ws, jt_i64 batch, jt_i64 h) {
    for (jt_i64 e = (jt_i64)blockIdx.x * blockDim.x + threadIdx.x; e < batch * h; e += (jt_i64)gridDim.x * blockDim.x) {
        const jt_i64 b = e / h, j = e - b * h, g0 = b * 4 * h + j;
        const T i = sigmoid(ig[g0] + hg[g0]);
        const T f = sigmoid(ig[g0 + h] + hg[g0 + h]);
        const T g = tanh(ig[g0 + 2 * h] + hg[g0 + 2 * h]);
        const T o = sigmoid(ig[g0 + 3 * h] + hg[g0 + 3 * h]);
        const T c = f * cx[e] + i * g;
        cy[e] = c;
        hy[e] = o * tanh(c);
        ws[g0] = i;
        ws[g0 + h] = f;
        ws[g0 + 2 * h] = g;
        ws[g0 + 3 * h] = o;
    }
}

template <typename T>
__device__ void lstm_backward(const T* ghy, const T* gcy, const T* cx, const T* cy, const T* ws, T* grad_gates, T* gcx,
                              jt_i64 batch, jt_i64 h) {
    for (jt_i64 e = (jt_i64)blockIdx.x * blockDim.x + threadIdx.x; e < batch * h; e += (jt_i64)gridDim.x * blockDim.x) {
        const jt_i64 b = e / h, j = e - b * h, g0 = b * 4 * h + j;
        const T i = ws[g0], f = ws[g0 + h], g = ws[g0 + 2 * h], o = ws[g0 + 3 * h];
        const T tc = tanh(cy[e]);
        const T dh = load_or_zero(ghy, e);
        const T dc = load_or_zero(gcy, e) + dh * o * (T(1) - tc * tc);
        grad_gates[g0] = dc * g * i * (T(1) - i);
        grad_gates[g0 + h] = dc * cx[e] * f * (T(1) - f);
        grad_gates[g0 + 2 * h] = dc * i * (T(1) - g * g);
        grad_gates[g0 + 3 * h] = dh * tc * o * (T(1) - o);
        gcx[e] = dc * f;
    }
}

template <typename T>
__device__ void gru_forward(const T* ig, const T* hg, const T* hx, T* hy, T* ws, jt_i64 batch, jt_i64 h) {
    for (jt_i64 e = (jt_i64)blockIdx.x * blockDim.x + threadIdx.x; e < batch * h; e += (jt_i64)gridDim.x * blockDim.x) {
        const jt_i64 b = e / h, j = e - b * h, g0 = b * 3 * h + j, w0 = b * 4 * h + j;
        const T r = sigmoid(ig[g0] + hg[g0]);
        const T z = sigmoid(ig[g0 + h] + hg[g0 + h]);
        const T hn = hg[g0 + 2 * h];
        const T n = tanh(ig[g0 + 2 * h] + r * hn);
        hy[e] = n + z * (hx[e] - n);
        ws[w0] = r;
        ws[w0 + h] = z;
        ws[w0 + 2 * h] = n;
        ws[w0 + 3 * h] = hn;
    }
}

template <typename T>
__device__ void gru_backward(const T* ghy, const T* hx, const T* ws, T* gi, T* gh, T* ghx, jt_i64 batch, jt_i64 h) {
    for (jt_i64 e = (jt_i64)blockIdx.x * blockDim.x + threadIdx.x; e < batch * h; e += (jt_i64)gridDim.x * blockDim.x) {
        const jt_i64 b = e / h, j = e - b * h, g0 = b * 3 * h + j, w0 = b * 4 * h + j;
        const T r = ws[w0], z = ws[w0 + h], n = ws[w0 + 2 * h], hn = ws[w0 + 3 * h];
        const T dh = load_or_zero(ghy, e);
        const T dn = dh * (T(1) - z) * (T(1) - n * n);
        const T dz = dh * (hx[e] - n) * z * (T(1) - z);
        const T dr = dn * hn * r * (T(1) - r);
        gi[g0] = dr;
        gi[g0 + h] = dz;
        gi[g0 + 2 * h] = dn;
        gh[g0] = dr;
        gh[g0 + h] = dz;
        gh[g0 + 2 * h] = dn * r;
        ghx[e] = dh * z;
    }
}

}  // namespace jt

#define JT_RECURRENT(T, suffix)                                                                                          \
    extern "C" __global__ void jt_lstm_cell_forward_##suffix(const T* ig, const T* hg, const T* cx, T* hy, T* cy, T* ws, \
                                                             jt_i64 batch, jt_i64 h) {                                   \
        jt::lstm_forward(ig, hg, cx, hy, cy, ws, batch, h);                                                              \
    }                                                                                                                    \
    extern "C" __global__ void jt_lstm_cell_backward_##suffix(const T* ghy, const T* gcy, const T* cx, const T* cy,      \
                                                              const T* ws, T* grad_gates, T* gcx, jt_i64 batch,         \
                                                              jt_i64 h) {                                                \
        jt::lstm_backward(ghy, gcy, cx, cy, ws, grad_gates, gcx, batch, h);                                              \
    }                                                                                                                    \
    extern "C" __global__ void jt_gru_cell_forward_##suffix(const T* ig, const T* hg, const T* hx, T* hy, T* ws,         \
                                                            jt_i64 batch, jt_i64 h) {                                    \
        jt::gru_forward(ig, hg, hx, hy, ws, batch, h);                                                                   \
    }                                                                                                                    \
    extern "C" __global__ void jt_gru_cell_backward_##suffix(const T* ghy, const T* hx, const T* ws, T* gi, T* gh,       \
                                                             T* ghx, jt_i64 batch, jt_i64 h) {                           \
        jt::gru_backward(ghy, hx, ws, gi, gh, ghx, batch, h);                                                            \
    }

JT_RECURRENT(float, f32)
JT_RECURRENT(double, f64)
