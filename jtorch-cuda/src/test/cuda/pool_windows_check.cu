// Host check of pool.cu's window code: the same __host__ __device__ functions the kernels call per element
// (max_pool_at, avg_pool_at, avg_pool_grad_at, adaptive_avg_at, adaptive_avg_grad_at, adaptive_max_at),
// run on the host over a sweep of geometries and compared with brute-force definitions written from
// PyTorch's (taps ih = oh * s - p + kh * d inside the input; NaN replaces the running maximum, ties keep the
// first tap; average windows clipped to the padded input for their size and to the input for their
// elements; adaptive windows [floor(o I / O), ceil((o + 1) I / O)); gradients as the adjoint sums).
// Built and run by scripts/check-kernels; exit status = number of mismatches (capped at 255 by the shell).
#include "pool.cu"
#include <cmath>
#include <cstdio>
#include <vector>

using jt::Pool2d;

static int failures = 0;

static void report(const char* what, const Pool2d& g, jt_i64 at, double expected, double actual) {
    if (failures++ < 20) {
        printf("MISMATCH %s in %lldx%lld k %dx%d s %dx%d p %dx%d d %dx%d out %lldx%lld at %lld: expected %.17g, got %.17g\n", what,
               g.in_h, g.in_w, g.k_h, g.k_w, g.s_h, g.s_w, g.p_h, g.p_w, g.d_h, g.d_w, g.out_h, g.out_w, at, expected, actual);
    }
}

static bool close(double a, double b) {
    return a == b || (std::isnan(a) && std::isnan(b)) || std::fabs(a - b) <= 1e-12 * (1 + std::fabs(b));
}

// PyTorch's pooling_output_shape.
static jt_i64 out_size(jt_i64 in, int k, int s, int p, int d, bool ceil) {
    jt_i64 num = in + 2 * p - (jt_i64)d * (k - 1) - 1 + (ceil ? s - 1 : 0);
    jt_i64 o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
    if (ceil && (o - 1) * s >= in + p) o--;
    return o;
}

// Deterministic values with ties (a few distinct integers) and, when asked, NaNs and infinities.
static std::vector<double> plane(jt_i64 n, int seed, bool specials) {
    std::vector<double> v(n);
    for (jt_i64 i = 0; i < n; i++) {
        unsigned h = (unsigned)(i * 2654435761u + seed * 40503u);
        v[i] = (double)((h >> 7) % 5) - 2;
        if (specials && (h >> 3) % 13 == 0) v[i] = (h >> 5) % 2 ? NAN : -INFINITY;
    }
    return v;
}

// Max pooling on g; average pooling and its gradient too when `averages` (g then has no dilation).
static void check_pooling(const Pool2d& g, int seed, bool averages) {
    const jt_i64 in_n = g.in_h * g.in_w, out_n = g.out_h * g.out_w;
    std::vector<double> x = plane(in_n, seed, seed % 2 == 1), go = plane(out_n, seed + 7, false);
    for (jt_i64 oh = 0; oh < g.out_h; oh++) {
        for (jt_i64 ow = 0; ow < g.out_w; ow++) {
            double best = -INFINITY;
            jt_i64 best_at = -1;
            for (int kh = 0; kh < g.k_h; kh++) {
                for (int kw = 0; kw < g.k_w; kw++) {
                    jt_i64 ih = oh * g.s_h - g.p_h + (jt_i64)kh * g.d_h, iw = ow * g.s_w - g.p_w + (jt_i64)kw * g.d_w;
                    if (ih < 0 || ih >= g.in_h || iw < 0 || iw >= g.in_w) continue;
                    double v = x[ih * g.in_w + iw];
                    if (best_at < 0) best_at = ih * g.in_w + iw;
                    if (v > best || std::isnan(v)) {
                        best = v;
                        best_at = ih * g.in_w + iw;
                    }
                }
            }
            jt_i64 index;
            double got = jt::max_pool_at(x.data(), g, oh, ow, index);
            if (!close(best, got)) report("max value", g, oh * g.out_w + ow, best, got);
            if (best_at >= 0 && index != best_at) report("max index", g, oh * g.out_w + ow, (double)best_at, (double)index);
        }
    }
    for (int cip = 0; cip <= 1 && averages; cip++) {
        for (jt_i64 divisor : {(jt_i64)0, (jt_i64)3}) {
            std::vector<double> grad(in_n, 0.0);
            for (jt_i64 oh = 0; oh < g.out_h; oh++) {
                for (jt_i64 ow = 0; ow < g.out_w; ow++) {
                    jt_i64 hs = oh * g.s_h - g.p_h, ws = ow * g.s_w - g.p_w;
                    jt_i64 he = std::min(hs + g.k_h, g.in_h + g.p_h), we = std::min(ws + g.k_w, g.in_w + g.p_w);
                    jt_i64 pool = (he - hs) * (we - ws);
                    hs = std::max(hs, (jt_i64)0);
                    ws = std::max(ws, (jt_i64)0);
                    he = std::min(he, g.in_h);
                    we = std::min(we, g.in_w);
                    double sum = 0;
                    jt_i64 inside = 0;
                    for (jt_i64 ih = hs; ih < he; ih++)
                        for (jt_i64 iw = ws; iw < we; iw++) {
                            sum += x[ih * g.in_w + iw];
                            inside++;
                        }
                    double div = divisor > 0 ? (double)divisor : cip ? (double)pool : (double)inside;
                    double expected = inside == 0 ? 0.0 : sum / div;
                    double got = jt::avg_pool_at(x.data(), g, oh, ow, cip, divisor);
                    if (!close(expected, got)) report(cip ? "avg (count_include_pad)" : "avg", g, oh * g.out_w + ow, expected, got);
                    for (jt_i64 ih = hs; ih < he; ih++)
                        for (jt_i64 iw = ws; iw < we; iw++) grad[ih * g.in_w + iw] += go[oh * g.out_w + ow] / div;
                }
            }
            for (jt_i64 i = 0; i < in_n; i++) {
                double got = jt::avg_pool_grad_at(go.data(), g, i / g.in_w, i % g.in_w, cip, divisor);
                if (!close(grad[i], got)) report("avg gradient", g, i, grad[i], got);
            }
        }
    }
}

// Adaptive windows by search: the first input of cell o is the largest s with s * O <= o * I, its end the
// smallest e with e * O >= (o + 1) * I.
static jt_i64 search_start(jt_i64 o, jt_i64 in, jt_i64 out) {
    jt_i64 s = 0;
    while ((s + 1) * out <= o * in) s++;
    return s;
}

static jt_i64 search_end(jt_i64 o, jt_i64 in, jt_i64 out) {
    jt_i64 e = 0;
    while (e * out < (o + 1) * in) e++;
    return e;
}

static void check_adaptive(jt_i64 in_h, jt_i64 in_w, jt_i64 out_h, jt_i64 out_w, int seed) {
    Pool2d g = {1, in_h, in_w, out_h, out_w, 0, 0, 0, 0, 0, 0, 0, 0};
    std::vector<double> x = plane(in_h * in_w, seed, seed % 2 == 1), go = plane(out_h * out_w, seed + 3, false);
    std::vector<double> grad(in_h * in_w, 0.0);
    for (jt_i64 oh = 0; oh < out_h; oh++) {
        for (jt_i64 ow = 0; ow < out_w; ow++) {
            jt_i64 h0 = search_start(oh, in_h, out_h), h1 = search_end(oh, in_h, out_h);
            jt_i64 w0 = search_start(ow, in_w, out_w), w1 = search_end(ow, in_w, out_w);
            double sum = 0, best = -INFINITY;
            jt_i64 best_at = h0 * in_w + w0;
            for (jt_i64 ih = h0; ih < h1; ih++)
                for (jt_i64 iw = w0; iw < w1; iw++) {
                    double v = x[ih * in_w + iw];
                    sum += v;
                    if (v > best || std::isnan(v)) {
                        best = v;
                        best_at = ih * in_w + iw;
                    }
                }
            double count = (double)((h1 - h0) * (w1 - w0));
            jt_i64 at = oh * out_w + ow, index;
            double avg = jt::adaptive_avg_at(x.data(), in_h, in_w, out_h, out_w, oh, ow);
            if (!close(sum / count, avg)) report("adaptive avg", g, at, sum / count, avg);
            double max = jt::adaptive_max_at(x.data(), in_h, in_w, out_h, out_w, oh, ow, index);
            if (!close(best, max)) report("adaptive max value", g, at, best, max);
            if (index != best_at) report("adaptive max index", g, at, (double)best_at, (double)index);
            for (jt_i64 ih = h0; ih < h1; ih++)
                for (jt_i64 iw = w0; iw < w1; iw++) grad[ih * in_w + iw] += go[at] / count;
        }
    }
    for (jt_i64 i = 0; i < in_h * in_w; i++) {
        double got = jt::adaptive_avg_grad_at(go.data(), in_h, in_w, out_h, out_w, i / in_w, i % in_w);
        if (!close(grad[i], got)) report("adaptive avg gradient", g, i, grad[i], got);
    }
}

int main() {
    // One-dimensional configurations (in, k, s, p, d, ceil) with PyTorch's constraints (p <= k / 2, output >= 1).
    struct Dim { jt_i64 in; int k, s, p, d; bool ceil; jt_i64 out; };
    std::vector<Dim> dims;
    for (jt_i64 in = 1; in <= 8; in++)
        for (int k = 1; k <= 4; k++)
            for (int s = 1; s <= 3; s++)
                for (int p = 0; p <= k / 2; p++)
                    for (int d = 1; d <= 3; d++)
                        for (int ceil = 0; ceil <= 1; ceil++) {
                            jt_i64 out = out_size(in, k, s, p, d, ceil);
                            if (out >= 1) dims.push_back({in, k, s, p, d, ceil == 1, out});
                        }
    long configurations = 0;
    for (size_t i = 0; i < dims.size(); i++) {
        const Dim& h = dims[i];
        for (size_t j : {i, (i * 7919 + 13) % dims.size(), (i * 104729 + 5) % dims.size()}) {
            const Dim& w = dims[j];
            Pool2d g = {1, h.in, w.in, h.out, w.out, h.k, w.k, h.s, w.s, h.p, w.p, h.d, w.d};
            check_pooling(g, (int)(i + j), h.d == 1 && w.d == 1);
            configurations++;
        }
    }
    for (jt_i64 ih = 1; ih <= 9; ih++)
        for (jt_i64 oh = 1; oh <= 9; oh++)
            for (jt_i64 iw : {(jt_i64)1, (jt_i64)5, (jt_i64)12})
                for (jt_i64 ow : {(jt_i64)1, (jt_i64)4, (jt_i64)13}) {
                    check_adaptive(ih, iw, oh, ow, (int)(ih * 100 + oh * 10 + iw + ow));
                    configurations++;
                }
    printf("pool windows: %ld configurations, %d mismatches\n", configurations, failures);
    return failures > 255 ? 255 : failures;
}
