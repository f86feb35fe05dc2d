package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * The CPU's fused LSTM and GRU cells at every row width around the vector lengths (float32's 16 or 8 lanes, float64's
 * 8 or 4): rows of whole vectors, rows whose last window overlaps the one before it, rows narrower than a vector.
 * The reference is {@link org.jtorch.backend.RecurrentKernels}' formulas, evaluated in double in this test.
 */
class RecurrentCellRowsTest {
    private static final int[] WIDTHS = {1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 23, 31, 32, 33, 51, 200};
    private static final int BATCH = 3;
    private final CpuRecurrentKernels kernels = new CpuRecurrentKernels();

    private static double sigmoid(double x) {
        return 1 / (1 + Math.exp(-x));
    }

    /** A contiguous [rows, cols] tensor of {@code dtype} with random values in (-2, 2), or zeros. */
    private static final class Rows {
        final StridedView view;
        final boolean f64;

        Rows(Arena arena, DType dtype, int rows, int cols, Random random) {
            f64 = dtype == DType.FLOAT64;
            MemorySegment seg = arena.allocate((long) rows * cols * (f64 ? 8 : 4), 64);
            view = new StridedView(seg, 0, new long[] {rows, cols}, new long[] {cols, 1}, dtype);
            for (int i = 0; random != null && i < rows * cols; i++) set(i, 4 * random.nextDouble() - 2);
        }

        double get(int i) {
            return f64 ? view.memory().get(ElementIO.F64, 8L * i) : view.memory().get(ElementIO.F32, 4L * i);
        }

        void set(int i, double v) {
            if (f64) view.memory().set(ElementIO.F64, 8L * i, v);
            else view.memory().set(ElementIO.F32, 4L * i, (float) v);
        }
    }

    private static void assertNear(double expected, double actual, DType dtype, String what) {
        double tol = dtype == DType.FLOAT64 ? 1e-14 + 1e-13 * Math.abs(expected) : 1e-6 + 1e-5 * Math.abs(expected);
        assertEquals(expected, actual, tol, what);
    }

    @Test
    void lstmCellsMatchTheirFormulasAtEveryWidth() {
        for (DType dtype : new DType[] {DType.FLOAT32, DType.FLOAT64}) {
            for (int h : WIDTHS) {
                try (Arena arena = Arena.ofConfined()) {
                    Random r = new Random(h);
                    Rows ig = new Rows(arena, dtype, BATCH, 4 * h, r), hg = new Rows(arena, dtype, BATCH, 4 * h, r),
                            cx = new Rows(arena, dtype, BATCH, h, r), hy = new Rows(arena, dtype, BATCH, h, null),
                            cy = new Rows(arena, dtype, BATCH, h, null), ws = new Rows(arena, dtype, BATCH, 4 * h, null);
                    kernels.lstmCellForward(ig.view, hg.view, cx.view, hy.view, cy.view, ws.view);
                    Rows ghy = new Rows(arena, dtype, BATCH, h, r), gcy = new Rows(arena, dtype, BATCH, h, r),
                            gg = new Rows(arena, dtype, BATCH, 4 * h, null), gcx = new Rows(arena, dtype, BATCH, h, null);
                    kernels.lstmCellBackward(ghy.view, gcy.view, cx.view, cy.view, ws.view, gg.view, gcx.view);
                    assertLstmLanes(BATCH, h, dtype, dtype + " h=" + h, ig, hg, cx, hy, cy, ws, ghy, gcy, gg, gcx);
                }
            }
        }
    }

    /**
     * float64 LSTM cells over many rows (time_sequence_prediction's [97, 51] among them), rows with tails of 3, 1, 5 and
     * 3 lanes past their whole vectors, and an absent hidden-state or cell-state gradient (a null operand): every lane of
     * every row against the formulas, so that a change to how the rows' last lanes run (packed across rows, an
     * overlapping window) must keep them right.
     */
    @Test
    void lstmFloat64ManyRowsAndAbsentGradientsMatchTheirFormulas() {
        DType dtype = DType.FLOAT64;
        for (int batch : new int[] {1, 2, 7, 97}) {
            for (int h : new int[] {3, 9, 13, 51}) {
                for (int absent = 0; absent < 3; absent++) {
                    try (Arena arena = Arena.ofConfined()) {
                        Random r = new Random(31L * batch + h + 1000L * absent);
                        Rows ig = new Rows(arena, dtype, batch, 4 * h, r), hg = new Rows(arena, dtype, batch, 4 * h, r),
                                cx = new Rows(arena, dtype, batch, h, r), hy = new Rows(arena, dtype, batch, h, null),
                                cy = new Rows(arena, dtype, batch, h, null), ws = new Rows(arena, dtype, batch, 4 * h, null);
                        kernels.lstmCellForward(ig.view, hg.view, cx.view, hy.view, cy.view, ws.view);
                        Rows ghy = absent == 1 ? null : new Rows(arena, dtype, batch, h, r);
                        Rows gcy = absent == 2 ? null : new Rows(arena, dtype, batch, h, r);
                        Rows gg = new Rows(arena, dtype, batch, 4 * h, null), gcx = new Rows(arena, dtype, batch, h, null);
                        kernels.lstmCellBackward(ghy == null ? null : ghy.view, gcy == null ? null : gcy.view, cx.view, cy.view, ws.view,
                                gg.view, gcx.view);
                        assertLstmLanes(batch, h, dtype, "batch " + batch + " h=" + h + " absent " + absent, ig, hg, cx, hy, cy, ws,
                                ghy, gcy, gg, gcx);
                    }
                }
            }
        }
    }

    /** Every lane of a forward and backward LSTM cell against the formulas; a null {@code ghy} or {@code gcy} reads as zeros. */
    private static void assertLstmLanes(int batch, int h, DType dtype, String label, Rows ig, Rows hg, Rows cx, Rows hy, Rows cy,
                                        Rows ws, Rows ghy, Rows gcy, Rows gg, Rows gcx) {
        for (int b = 0; b < batch; b++) {
            for (int j = 0; j < h; j++) {
                int g0 = b * 4 * h, s = b * h + j;
                String at = label + " [" + b + ", " + j + "]";
                double i = sigmoid(ig.get(g0 + j) + hg.get(g0 + j)), f = sigmoid(ig.get(g0 + h + j) + hg.get(g0 + h + j));
                double g = Math.tanh(ig.get(g0 + 2 * h + j) + hg.get(g0 + 2 * h + j));
                double o = sigmoid(ig.get(g0 + 3 * h + j) + hg.get(g0 + 3 * h + j));
                double c = f * cx.get(s) + i * g;
                assertNear(c, cy.get(s), dtype, "cy " + at);
                assertNear(o * Math.tanh(c), hy.get(s), dtype, "hy " + at);
                assertNear(i, ws.get(g0 + j), dtype, "i " + at);
                assertNear(f, ws.get(g0 + h + j), dtype, "f " + at);
                assertNear(g, ws.get(g0 + 2 * h + j), dtype, "g " + at);
                assertNear(o, ws.get(g0 + 3 * h + j), dtype, "o " + at);
                double tc = Math.tanh(c), dh = ghy == null ? 0 : ghy.get(s);
                double dc = (gcy == null ? 0 : gcy.get(s)) + dh * o * (1 - tc * tc);
                assertNear(dc * g * i * (1 - i), gg.get(g0 + j), dtype, "d i " + at);
                assertNear(dc * cx.get(s) * f * (1 - f), gg.get(g0 + h + j), dtype, "d f " + at);
                assertNear(dc * i * (1 - g * g), gg.get(g0 + 2 * h + j), dtype, "d g " + at);
                assertNear(dh * tc * o * (1 - o), gg.get(g0 + 3 * h + j), dtype, "d o " + at);
                assertNear(dc * f, gcx.get(s), dtype, "d cx " + at);
            }
        }
    }

    @Test
    void gruCellsMatchTheirFormulasAtEveryWidth() {
        for (DType dtype : new DType[] {DType.FLOAT32, DType.FLOAT64}) {
            for (int h : WIDTHS) {
                try (Arena arena = Arena.ofConfined()) {
                    Random r = new Random(100 + h);
                    Rows ig = new Rows(arena, dtype, BATCH, 3 * h, r), hg = new Rows(arena, dtype, BATCH, 3 * h, r),
                            hx = new Rows(arena, dtype, BATCH, h, r), hy = new Rows(arena, dtype, BATCH, h, null),
                            ws = new Rows(arena, dtype, BATCH, 4 * h, null);
                    kernels.gruCellForward(ig.view, hg.view, hx.view, hy.view, ws.view);
                    Rows ghy = new Rows(arena, dtype, BATCH, h, r), gi = new Rows(arena, dtype, BATCH, 3 * h, null),
                            gh = new Rows(arena, dtype, BATCH, 3 * h, null), ghx = new Rows(arena, dtype, BATCH, h, null);
                    kernels.gruCellBackward(ghy.view, hx.view, ws.view, gi.view, gh.view, ghx.view);
                    for (int b = 0; b < BATCH; b++) {
                        for (int j = 0; j < h; j++) {
                            int g0 = b * 3 * h, s = b * h + j;
                            String at = dtype + " h=" + h + " [" + b + ", " + j + "]";
                            double rr = sigmoid(ig.get(g0 + j) + hg.get(g0 + j)), z = sigmoid(ig.get(g0 + h + j) + hg.get(g0 + h + j));
                            double hn = hg.get(g0 + 2 * h + j), n = Math.tanh(ig.get(g0 + 2 * h + j) + rr * hn);
                            assertNear(n + z * (hx.get(s) - n), hy.get(s), dtype, "hy " + at);
                            double dh = ghy.get(s), dn = dh * (1 - z) * (1 - n * n), dz = dh * (hx.get(s) - n) * z * (1 - z);
                            double dr = dn * hn * rr * (1 - rr);
                            assertNear(dr, gi.get(g0 + j), dtype, "d r " + at);
                            assertNear(dz, gi.get(g0 + h + j), dtype, "d z " + at);
                            assertNear(dn, gi.get(g0 + 2 * h + j), dtype, "d n " + at);
                            assertNear(dr, gh.get(g0 + j), dtype, "d r (hidden) " + at);
                            assertNear(dz, gh.get(g0 + h + j), dtype, "d z (hidden) " + at);
                            assertNear(dn * rr, gh.get(g0 + 2 * h + j), dtype, "d hn " + at);
                            assertNear(dh * z, ghx.get(s), dtype, "d hx " + at);
                        }
                    }
                }
            }
        }
    }
}
