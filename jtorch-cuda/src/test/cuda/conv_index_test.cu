// Host test of conv.cu's index arithmetic (the same __host__ __device__ functions its im2col and col2im
// kernels call): for each geometry, im2col through im2col_source and col2im through col2im_sources
// must equal im2col and its adjoint written from the definition as a scatter:
//   col[n][(c*kh + i)*kw + j][oy*ow + ox] = x[n][c][oy*sh - ph + i*dh][ox*sw - pw + j*dw] (0 outside).
// Built and run by scripts/check-kernels; exit status = number of geometries with a mismatch.
#include "conv.cu"
#include <cstdio>
#include <vector>

// Sums the visited column entries (a functor: a host lambda may not be called from __host__ __device__ code).
struct SumOf {
    const double* col;
    double* sum;
    __host__ __device__ void operator()(jt_i64 k) const { *sum += col[k]; }
};

static int check(jt::ConvShape s, int images) {
    const long plane = (long)s.oh * s.ow, rows = (long)s.channels * s.kh * s.kw;
    const long in = (long)images * s.channels * s.h * s.w, cols = images * rows * plane;
    std::vector<double> x(in), col(cols), gathered(in), scattered(in, 0.0), dcol(cols), want(cols);
    for (long k = 0; k < in; k++) x[k] = (double)((k * 7919) % 23) - 11;
    for (long k = 0; k < cols; k++) dcol[k] = (double)((k * 104729) % 31) - 15;
    for (int n = 0; n < images; n++)
        for (int c = 0; c < s.channels; c++)
            for (int i = 0; i < s.kh; i++)
                for (int j = 0; j < s.kw; j++)
                    for (int oy = 0; oy < s.oh; oy++)
                        for (int ox = 0; ox < s.ow; ox++) {
                            long k = ((long)n * rows + ((long)c * s.kh + i) * s.kw + j) * plane + (long)oy * s.ow + ox;
                            int y = oy * s.sh - s.ph + i * s.dh, xx = ox * s.sw - s.pw + j * s.dw;
                            bool inside = y >= 0 && y < s.h && xx >= 0 && xx < s.w;
                            long src = (((long)n * s.channels + c) * s.h + y) * s.w + xx;
                            want[k] = inside ? x[src] : 0.0;
                            if (inside) scattered[src] += dcol[k];
                        }
    int bad = 0;
    for (long k = 0; k < cols; k++) {
        jt_i64 src = jt::im2col_source(k, s);
        col[k] = src >= 0 ? x[src] : 0.0;
        bad += col[k] != want[k];
    }
    for (long e = 0; e < in; e++) {
        double sum = 0;
        jt::col2im_sources(e, s, SumOf{dcol.data(), &sum});
        gathered[e] = sum;
        bad += gathered[e] != scattered[e];
    }
    printf("conv index: c=%d %dx%d k=%dx%d s=%d,%d p=%d,%d d=%d,%d out=%dx%d images=%d: %s\n", s.channels, s.h, s.w, s.kh, s.kw,
           s.sh, s.sw, s.ph, s.pw, s.dh, s.dw, s.oh, s.ow, images, bad ? "MISMATCH" : "ok");
    return bad != 0;
}

static jt::ConvShape shape(int c, int h, int w, int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw) {
    int oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1, ow = (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
    return jt::ConvShape{c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow};
}

int main() {
    int failed = 0;
    failed += check(shape(3, 7, 6, 3, 3, 1, 1, 0, 0, 1, 1), 2);
    failed += check(shape(3, 9, 8, 3, 2, 2, 3, 1, 2, 1, 1), 2);
    failed += check(shape(2, 9, 9, 3, 3, 1, 2, 2, 1, 2, 3), 3);
    failed += check(shape(4, 7, 7, 1, 1, 2, 2, 0, 0, 1, 1), 2);
    failed += check(shape(3, 1, 12, 1, 5, 1, 2, 0, 2, 1, 2), 2);
    failed += check(shape(2, 5, 5, 3, 3, 3, 3, 2, 2, 1, 1), 1);   // stride larger than the kernel: some inputs unread
    failed += check(jt::ConvShape{2, 5, 6, 4, 4, 1, 1, 1, 1, 1, 1, 5, 6}, 2); // "same", even kernel: bottom/right padding 2
    return failed;
}
