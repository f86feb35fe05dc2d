package org.jtorch.backend;

import static org.jtorch.ops.Dispatcher.view;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Generator;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.testing.ScopePerTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The CPU's fused layer norm kernels against the composition of batch norm kernels that a backend without them runs
 * ({@link NormalizationOpKernels#composedLayerNorm}, the CUDA path), on random shapes: row lengths below, at and past a
 * vector, past a summation block, and row counts that split the backward's column sums into several parts.
 */
@ExtendWith(ScopePerTest.class)
class LayerNormKernelsTest {
    private static final Generator GEN = new Generator(5);
    private static final long[][] SHAPES = {{1, 1}, {3, 7}, {5, 16}, {4, 37}, {70, 33}, {300, 24}, {2, 4100}, {1000, 3}};

    @Test
    void fusedKernelsMatchTheBatchNormComposition() {
        Backend cpu = Backends.of(Device.cpu());
        NormalizationKernels k = cpu.normalization();
        for (DType dt : new DType[] {DType.FLOAT32, DType.FLOAT64}) {
            double tol = dt == DType.FLOAT32 ? 2e-5 : 1e-12;
            for (long[] s : SHAPES) {
                for (boolean affine : new boolean[] {false, true}) {
                    long rows = s[0], cols = s[1];
                    Tensor x = Torch.randn(s, dt, Device.cpu(), GEN).mul(3).add(2);
                    Tensor w = affine ? Torch.randn(new long[] {cols}, dt, Device.cpu(), GEN) : null;
                    Tensor b = affine ? Torch.randn(new long[] {cols}, dt, Device.cpu(), GEN) : null;
                    Tensor g = Torch.randn(s, dt, Device.cpu(), GEN);
                    Tensor[] fused = outputs(s, dt), composed = outputs(s, dt);
                    String what = dt + " " + rows + "x" + cols + (affine ? " affine" : "");
                    assertTrue(k.layerNorm(view(x), rows, cols, view(w), view(b), 1e-5, view(fused[0]), view(fused[1]), view(fused[2])));
                    try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(cpu)) {
                        NormalizationOpKernels.composedLayerNorm(cpu, scratch, view(x), rows, cols, view(w), view(b), 1e-5,
                                view(composed[0]), view(composed[1]), view(composed[2]));
                    }
                    for (int j = 0; j < 3; j++) assertClose(composed[j], fused[j], tol, what + " forward output " + j);
                    Tensor[] gf = gradients(s, dt), gc = gradients(s, dt);
                    assertTrue(k.layerNormBackward(view(g), view(x), rows, cols, view(fused[1]), view(fused[2]), view(w), view(gf[0]),
                            view(gf[1]), view(gf[2])));
                    try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(cpu)) {
                        NormalizationOpKernels.composedLayerNormBackward(cpu, scratch, view(g), view(x), rows, cols, view(fused[1]),
                                view(fused[2]), view(w), view(gc[0]), view(gc[1]), view(gc[2]));
                    }
                    // the column sums run over up to 1000 rows
                    for (int j = 0; j < 3; j++) assertClose(gc[j], gf[j], j == 0 ? tol : tol * 20, what + " gradient " + j);
                }
            }
        }
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
