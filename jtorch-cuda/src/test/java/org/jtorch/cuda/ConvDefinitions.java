package org.jtorch.cuda;

import java.util.Arrays;
import org.jtorch.backend.ConvolutionKernels.Geometry;

/**
 * The convolution of a {@link Geometry} and its adjoints written from the definition, in double over
 * contiguous NCHW arrays, for the tests: {@code y[n, co, oy, ox] = sum over ci in co's group, i, j of
 * x[n, ci, oy*sh - ph + i*dh, ox*sw - pw + j*dw] * w[co, ci - group start, i, j]} (terms outside the
 * image are zero padding), the input gradient and weight gradient as the same sum read the other ways,
 * and im2col / col2im (its adjoint, as a scatter).
 */
final class ConvDefinitions {
    private ConvDefinitions() {}


    private static int inIndex(Geometry g, int n, int c, int yy, int xx) {
        return ((n * g.cin() + c) * g.h() + yy) * g.w() + xx;
    }

    private static int outIndex(Geometry g, int n, int c, int oy, int ox) {
        return ((n * g.cout() + c) * g.oh() + oy) * g.ow() + ox;
    }

    private static int wIndex(Geometry g, int co, int ci, int i, int j) {
        return ((co * g.cinG() + ci) * g.kh() + i) * g.kw() + j;
    }

    /** Calls {@code body(n, co, ci (global), i, j, oy, ox, iy, ix)} for every in-bounds term of the convolution's sum. */
    private interface Term {
        void at(int n, int co, int ci, int i, int j, int oy, int ox, int iy, int ix);
    }

    private static void terms(Geometry g, Term t) {
        for (int n = 0; n < g.n(); n++) {
            for (int co = 0; co < g.cout(); co++) {
                int grp = co / g.coutG();
                for (int cl = 0; cl < g.cinG(); cl++) {
                    int ci = grp * g.cinG() + cl;
                    for (int i = 0; i < g.kh(); i++) {
                        for (int j = 0; j < g.kw(); j++) {
                            for (int oy = 0; oy < g.oh(); oy++) {
                                int iy = oy * g.sh() - g.ph() + i * g.dh();
                                if (iy < 0 || iy >= g.h()) continue;
                                for (int ox = 0; ox < g.ow(); ox++) {
                                    int ix = ox * g.sw() - g.pw() + j * g.dw();
                                    if (ix >= 0 && ix < g.w()) t.at(n, co, ci, i, j, oy, ox, iy, ix);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    static double[] forward(Geometry g, double[] x, double[] w) {
        double[] y = new double[g.n() * g.cout() * g.oh() * g.ow()];
        terms(g, (n, co, ci, i, j, oy, ox, iy, ix) ->
                y[outIndex(g, n, co, oy, ox)] += x[inIndex(g, n, ci, iy, ix)] * w[wIndex(g, co, ci % g.cinG(), i, j)]);
        return y;
    }

    static double[] backwardData(Geometry g, double[] dy, double[] w) {
        double[] dx = new double[g.n() * g.cin() * g.h() * g.w()];
        terms(g, (n, co, ci, i, j, oy, ox, iy, ix) ->
                dx[inIndex(g, n, ci, iy, ix)] += dy[outIndex(g, n, co, oy, ox)] * w[wIndex(g, co, ci % g.cinG(), i, j)]);
        return dx;
    }

    static double[] backwardFilter(Geometry g, double[] dy, double[] x) {
        double[] dw = new double[g.cout() * g.cinG() * g.kh() * g.kw()];
        terms(g, (n, co, ci, i, j, oy, ox, iy, ix) ->
                dw[wIndex(g, co, ci % g.cinG(), i, j)] += dy[outIndex(g, n, co, oy, ox)] * x[inIndex(g, n, ci, iy, ix)]);
        return dw;
    }

    /** col[image - first][(c*kh + i)*kw + j][oy*ow + ox] = x at the tap, 0 in the padding. */
    static void im2col(Geometry g, double[] x, int first, int count, double[] col) {
        int l = g.oh() * g.ow(), rows = g.cin() * g.kh() * g.kw();
        for (int n = 0; n < count; n++) {
            for (int c = 0; c < g.cin(); c++) {
                for (int i = 0; i < g.kh(); i++) {
                    for (int j = 0; j < g.kw(); j++) {
                        int r = (c * g.kh() + i) * g.kw() + j;
                        for (int oy = 0; oy < g.oh(); oy++) {
                            for (int ox = 0; ox < g.ow(); ox++) {
                                int iy = oy * g.sh() - g.ph() + i * g.dh(), ix = ox * g.sw() - g.pw() + j * g.dw();
                                boolean inside = iy >= 0 && iy < g.h() && ix >= 0 && ix < g.w();
                                col[(n * rows + r) * l + oy * g.ow() + ox] = inside ? x[inIndex(g, first + n, c, iy, ix)] : 0;
                            }
                        }
                    }
                }
            }
        }
    }

    /** The adjoint of im2col: every column entry added at the input position it came from (a scatter). */
    static void col2im(Geometry g, double[] col, int first, int count, double[] x) {
        int l = g.oh() * g.ow(), rows = g.cin() * g.kh() * g.kw(), image = g.cin() * g.h() * g.w();
        Arrays.fill(x, first * image, (first + count) * image, 0);
        for (int n = 0; n < count; n++) {
            for (int c = 0; c < g.cin(); c++) {
                for (int i = 0; i < g.kh(); i++) {
                    for (int j = 0; j < g.kw(); j++) {
                        int r = (c * g.kh() + i) * g.kw() + j;
                        for (int oy = 0; oy < g.oh(); oy++) {
                            for (int ox = 0; ox < g.ow(); ox++) {
                                int iy = oy * g.sh() - g.ph() + i * g.dh(), ix = ox * g.sw() - g.pw() + j * g.dw();
                                if (iy >= 0 && iy < g.h() && ix >= 0 && ix < g.w()) {
                                    x[inIndex(g, first + n, c, iy, ix)] += col[(n * rows + r) * l + oy * g.ow() + ox];
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
