package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.types.DType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * float64 linear layers and products with one input feature, one output feature or one row (time_sequence_prediction's
 * {@code Linear(1, 204)}, {@code Linear(51, 1)} and their gradients {@code G^T x}, {@code g^T h}), which take the GEMM's
 * rows-of-B path and the bias copied row by row: forward and every gradient against the formulas evaluated here in
 * double ({@code y = x W^T + b}, {@code dx = g W}, {@code dW = g^T x}, {@code db = sum_rows g}), with the input
 * contiguous, transposed and with padded rows, batch 1 and empty.
 */
class SmallProductsF64Test {
    private MemoryScope scope;

    @BeforeEach
    void open() {
        scope = new MemoryScope();
        Torch.manualSeed(20);
    }

    @AfterEach
    void close() {
        scope.close();
    }

    private static void assertNear(double[] want, double[] mag, double[] got, String what) {
        assertTrue(want.length == got.length, what + ": " + got.length + " elements, want " + want.length);
        for (int e = 0; e < want.length; e++) {
            assertTrue(Math.abs(got[e] - want[e]) <= 1e-13 * (mag[e] + 1), what + "[" + e + "]: " + got[e] + ", want " + want[e]);
        }
    }

    /** The input laid out as: 0 contiguous, 1 a transposed [in, rows] leaf's view, 2 rows padded by three columns. */
    private static Tensor[] input(int rows, int in, int layout) {
        Tensor leaf = switch (layout) {
            case 1 -> Torch.randn(in, rows).to(DType.FLOAT64);
            case 2 -> Torch.randn(rows, in + 3).to(DType.FLOAT64);
            default -> Torch.randn(rows, in).to(DType.FLOAT64);
        };
        leaf.requiresGrad_(true);
        Tensor x = switch (layout) {
            case 1 -> leaf.t();
            case 2 -> leaf.narrow(1, 2, in);
            default -> leaf;
        };
        return new Tensor[] {leaf, x};
    }

    @Test
    void linearWithOneFeatureOrOneRowMatchesTheFormulasWithItsGradients() {
        int[][] shapes = {{97, 1, 204}, {97, 51, 1}, {1, 51, 204}, {1, 1, 1}, {7, 2, 33}, {1, 97, 13}, {13, 1, 7}, {0, 3, 5}, {4, 1, 0}};
        for (int[] s : shapes) {
            int rows = s[0], in = s[1], out = s[2];
            for (int layout = 0; layout < 3; layout++) {
                String what = "linear [" + rows + ", " + in + "] -> " + out + ", layout " + layout;
                Tensor[] xs = input(rows, in, layout);
                Tensor leaf = xs[0], x = xs[1];
                Tensor w = Torch.randn(out, in).to(DType.FLOAT64).requiresGrad_(true);
                Tensor b = Torch.randn(out).to(DType.FLOAT64).requiresGrad_(true);
                Tensor y = F.linear(x, w, b);
                assertArrayEquals(new long[] {rows, out}, y.shape(), what);
                double[] xv = x.contiguous().toDoubleArray(), wv = w.toDoubleArray(), bv = b.toDoubleArray();
                double[] want = new double[rows * out], mag = new double[rows * out];
                for (int i = 0; i < rows; i++) {
                    for (int o = 0; o < out; o++) {
                        double sum = bv[o], m = Math.abs(bv[o]);
                        for (int p = 0; p < in; p++) {
                            sum += xv[i * in + p] * wv[o * in + p];
                            m += Math.abs(xv[i * in + p] * wv[o * in + p]);
                        }
                        want[i * out + o] = sum;
                        mag[i * out + o] = m;
                    }
                }
                assertNear(want, mag, y.toDoubleArray(), what + " forward");

                Tensor g = Torch.randn(rows, out).to(DType.FLOAT64);
                y.backward(g);
                double[] gv = g.toDoubleArray();
                double[] dx = new double[rows * in], dxMag = new double[rows * in];
                for (int i = 0; i < rows; i++) {
                    for (int p = 0; p < in; p++) {
                        for (int o = 0; o < out; o++) {
                            dx[i * in + p] += gv[i * out + o] * wv[o * in + p];
                            dxMag[i * in + p] += Math.abs(gv[i * out + o] * wv[o * in + p]);
                        }
                    }
                }
                double[] dw = new double[out * in], dwMag = new double[out * in], db = new double[out], dbMag = new double[out];
                for (int o = 0; o < out; o++) {
                    for (int i = 0; i < rows; i++) {
                        for (int p = 0; p < in; p++) {
                            dw[o * in + p] += gv[i * out + o] * xv[i * in + p];
                            dwMag[o * in + p] += Math.abs(gv[i * out + o] * xv[i * in + p]);
                        }
                        db[o] += gv[i * out + o];
                        dbMag[o] += Math.abs(gv[i * out + o]);
                    }
                }
                Tensor gx = switch (layout) {
                    case 1 -> leaf.grad().t();
                    case 2 -> leaf.grad().narrow(1, 2, in);
                    default -> leaf.grad();
                };
                assertNear(dx, dxMag, gx.contiguous().toDoubleArray(), what + " input gradient");
                assertNear(dw, dwMag, w.grad().toDoubleArray(), what + " weight gradient");
                assertNear(db, dbMag, b.grad().toDoubleArray(), what + " bias gradient");
            }
        }
    }

    /** The products the layers' gradients are made of, alone: a transposed matrix times a column, a row times a matrix. */
    @Test
    void transposedMatrixTimesAColumnAndARowTimesAMatrixMatchTheFormulas() {
        for (int[] s : new int[][] {{97, 204}, {97, 51}, {1, 9}, {33, 1}, {0, 5}}) {
            int rows = s[0], cols = s[1];
            Tensor g = Torch.randn(rows, cols).to(DType.FLOAT64), x = Torch.randn(rows, 1).to(DType.FLOAT64);
            double[] gv = g.toDoubleArray(), xv = x.toDoubleArray();
            double[] want = new double[cols], mag = new double[cols];
            for (int j = 0; j < cols; j++) {
                for (int i = 0; i < rows; i++) {
                    want[j] += gv[i * cols + j] * xv[i];
                    mag[j] += Math.abs(gv[i * cols + j] * xv[i]);
                }
            }
            Tensor gtx = g.t().mm(x), xtg = x.t().mm(g);
            assertArrayEquals(new long[] {cols, 1}, gtx.shape());
            assertArrayEquals(new long[] {1, cols}, xtg.shape());
            assertNear(want, mag, gtx.toDoubleArray(), "G^T x of [" + rows + ", " + cols + "]");
            assertNear(want, mag, xtg.toDoubleArray(), "x^T G of [" + rows + ", " + cols + "]");
            // addmm's beta and alpha over the same product: beta * input + alpha * G^T x.
            Tensor c = Torch.randn(cols, 1).to(DType.FLOAT64);
            double[] cv = c.toDoubleArray(), want2 = new double[cols], mag2 = new double[cols];
            for (int j = 0; j < cols; j++) {
                want2[j] = 0.5 * cv[j] - 2 * want[j];
                mag2[j] = 0.5 * Math.abs(cv[j]) + 2 * mag[j];
            }
            assertNear(want2, mag2, Linalg.addmm(c, g.t(), x, 0.5, -2).toDoubleArray(), "addmm over G^T x of [" + rows + ", " + cols + "]");
        }
    }
}
