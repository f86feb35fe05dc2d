package org.jtorch.backend;

import static org.jtorch.ops.Dispatcher.view;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.op.NormalizationOps;
import org.jtorch.op.OpDef;
import org.jtorch.ops.Dispatcher;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The CPU's fused layer norm kernels against the decomposition that a backend without them runs
 * ({@link NormalizationOps#LAYER_NORM_COMPOSITE}: batch norm of the rows, then the affine, the CUDA path), on random shapes: row lengths below, at and past a
 * vector, past a summation block, and row counts that split the backward's column sums into several parts.
 */
@ExtendWith(ScopePerTest.class)
class LayerNormKernelsTest {
    private static final Generator GEN = new Generator(5);
    private static final long[][] SHAPES = {{1, 1}, {3, 7}, {5, 16}, {4, 37}, {70, 33}, {300, 24}, {2, 4100}, {1000, 3}};

    @Test
    void fusedKernelsMatchTheBatchNormComposition() {
        for (DType dt : new DType[] {DType.FLOAT32, DType.FLOAT64}) {
            double tol = dt == DType.FLOAT32 ? 2e-5 : 1e-12;
            for (long[] s : SHAPES) {
                for (boolean affine : new boolean[] {false, true}) {
                    long cols = s[1];
                    Tensor x = Torch.randn(s, dt, Device.cpu(), GEN).mul(3).add(2);
                    Tensor w = affine ? Torch.randn(new long[] {cols}, dt, Device.cpu(), GEN) : null;
                    Tensor b = affine ? Torch.randn(new long[] {cols}, dt, Device.cpu(), GEN) : null;
                    Tensor g = Torch.randn(s, dt, Device.cpu(), GEN);
                    String what = dt + " " + s[0] + "x" + cols + (affine ? " affine" : "");
                    Tensor[] fused = run(NormalizationOps.NATIVE_LAYER_NORM, x, w, b, g);
                    Tensor[] composed = run(NormalizationOps.LAYER_NORM_COMPOSITE, x, w, b, g);
                    assertClose(composed[0], fused[0], tol, what + " forward");
                    // the column sums run over up to 1000 rows
                    for (int j = 1; j < fused.length; j++) {
                        assertClose(composed[j], fused[j], j == 1 ? tol : tol * 20, what + " gradient " + (j - 1));
                    }
                }
            }
        }
    }

    /** The output of {@code op} (native layer norm or its decomposition) over the last dimension, then the gradients of {@code <out, g>}. */
    private static Tensor[] run(OpDef op, Tensor x, Tensor w, Tensor b, Tensor g) {
        Tensor xi = x.detach().requiresGrad_(true);
        Tensor wi = w == null ? null : w.detach().requiresGrad_(true), bi = b == null ? null : b.detach().requiresGrad_(true);
        Tensor out = Dispatcher.call(op, new Tensor[] {xi, wi, bi}, 1, 1e-5);
        out.mul(g).sum().backward();
        return w == null ? new Tensor[] {out.detach(), xi.grad()} : new Tensor[] {out.detach(), xi.grad(), wi.grad(), bi.grad()};
    }

    @Test
    void theWeightAndBiasGradientsDoNotDependOnTheThreadCount() {
        long[] s = {513, 40};
        Tensor x = Torch.randn(s, DType.FLOAT32, Device.cpu(), GEN);
        Tensor g = Torch.randn(s, DType.FLOAT32, Device.cpu(), GEN);
        Tensor mean = x.mean(new int[] {1}, false), rstd = x.var(new int[] {1}, 0, false).add(1e-5).rsqrt();
        NormalizationKernels k = Backends.of(Device.cpu()).normalization();
        float[][] seen = new float[2][];
        int before = org.jtorch.Torch.getNumThreads();
        try {
            for (int t = 1; t <= 2; t++) {
                org.jtorch.Torch.setNumThreads(t);
                Tensor[] gr = gradients(s, DType.FLOAT32);
                k.layerNormBackward(view(g), view(x), s[0], s[1], view(mean), view(rstd), null, view(gr[0]), view(gr[1]), view(gr[2]));
                seen[t - 1] = Torch.cat(java.util.List.of(gr[1], gr[2]), 0).toFloatArray();
            }
        } finally {
            org.jtorch.Torch.setNumThreads(before);
        }
        org.junit.jupiter.api.Assertions.assertArrayEquals(seen[0], seen[1]);
    }

    /**
     * The float32 weight and bias gradients are the same bits without an input gradient (the column sums alone), and
     * after a larger call has left other sums in the kernel's kept buffer.
     */
    @Test
    void theColumnSumsAloneAndAfterALargerCallAreTheSame() {
        long[] s = {300, 40}, large = {700, 72};
        NormalizationKernels k = Backends.of(Device.cpu()).normalization();
        float[][] seen = new float[2][];
        for (int run = 0; run < 2; run++) {
            if (run == 1) {
                Tensor[] in = statistics(large, 3);
                Tensor[] gr = gradients(large, DType.FLOAT32);
                k.layerNormBackward(view(in[0]), view(in[1]), large[0], large[1], view(in[2]), view(in[3]), null, view(gr[0]),
                        view(gr[1]), view(gr[2]));
            }
            Tensor[] in = statistics(s, 4);
            Tensor w = Torch.randn(new long[] {s[1]}, DType.FLOAT32, Device.cpu(), new Generator(6));
            Tensor[] gr = gradients(s, DType.FLOAT32);
            k.layerNormBackward(view(in[0]), view(in[1]), s[0], s[1], view(in[2]), view(in[3]), view(w), run == 0 ? view(gr[0]) : null,
                    view(gr[1]), view(gr[2]));
            seen[run] = Torch.cat(java.util.List.of(gr[1], gr[2]), 0).toFloatArray();
        }
        org.junit.jupiter.api.Assertions.assertArrayEquals(seen[0], seen[1]);
    }

    /** g, x, and x's row means and reciprocal deviations, from a fixed seed. */
    private static Tensor[] statistics(long[] s, long seed) {
        Generator gen = new Generator(seed);
        Tensor g = Torch.randn(s, DType.FLOAT32, Device.cpu(), gen);
        Tensor x = Torch.randn(s, DType.FLOAT32, Device.cpu(), gen);
        return new Tensor[] {g, x, x.mean(new int[] {1}, false), x.var(new int[] {1}, 0, false).add(1e-5).rsqrt()};
    }

    private static Tensor[] outputs(long[] s, DType dt) {
        return new Tensor[] {Torch.empty(s, dt, Device.cpu()), Torch.empty(new long[] {s[0]}, dt, Device.cpu()),
                Torch.empty(new long[] {s[0]}, dt, Device.cpu())};
    }

    private static Tensor[] gradients(long[] s, DType dt) {
        return new Tensor[] {Torch.empty(s, dt, Device.cpu()), Torch.empty(new long[] {s[1]}, dt, Device.cpu()),
                Torch.empty(new long[] {s[1]}, dt, Device.cpu())};
    }

    private static void assertClose(Tensor expected, Tensor actual, double tol, String what) {
        double[] e = expected.to(DType.FLOAT64).toDoubleArray();
        double[] a = actual.to(DType.FLOAT64).toDoubleArray();
        assertEquals(e.length, a.length, what);
        for (int i = 0; i < e.length; i++) assertEquals(e[i], a[i], tol * Math.max(1, Math.abs(e[i])), what + " at " + i);
    }
}
