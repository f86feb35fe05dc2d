package org.jtorch.jit;

import static org.jtorch.jit.JitChecks.assertCompiledMatchesEager;
import static org.jtorch.jit.JitChecks.randn;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.F;
import org.junit.jupiter.api.Test;

/**
 * The front ends declared from {@code F}'s composites (issue 15): each traced as one op, replayed by the compiled function
 * from the recorded arguments, with the eager values and gradients.
 */
class JitDeclaredFrontEndsTest {
    @Test
    void padModesAndPixelShuffleTraceAsOneOpEachAndDifferentiateAsEager() {
        Torch.manualSeed(25);
        Tensor w = randn(8, 4, 7).requiresGrad_(true);
        TensorFunction f = in -> {
            Tensor reflected = F.pad(in[0], new long[] {1, 2, 0, 1}, "reflect").mul(w);
            Tensor replicated = F.pad(reflected.tanh(), new long[] {1, 0, -1, 1}, "replicate");
            Tensor wrapped = F.pad(replicated, new long[] {1, 1, 0, 1}, "circular");
            return F.pixelUnshuffle(F.pixelShuffle(wrapped.narrow(-1, 0, 6).narrow(-2, 0, 4), 2).relu(), 2);
        };
        Tensor x = randn(2, 8, 3, 4);
        String plan = Jit.explain(f, x);
        assertTrue(plan.contains("reflection_pad2d") && plan.contains("replication_pad2d") && plan.contains("_pad_circular")
                && plan.contains("pixel_shuffle") && plan.contains("pixel_unshuffle") && !plan.contains("index_select"), plan);
        assertCompiledMatchesEager(f, x, new Tensor[] {w}, 1e-6f);
    }

    @Test
    void averagePoolingAndUnpoolingInThreeDimensionsTraceAsOneOpEachAndDifferentiateAsEager() {
        Torch.manualSeed(26);
        Tensor w = randn(2, 3, 4, 4, 4).requiresGrad_(true);
        TensorFunction f = in -> {
            Tensor avg = F.avgPool3d(in[0].mul(w), 3, F.AvgPool.options().stride(1).padding(1).countIncludePad(false));
            var pooled = F.maxPool3dWithIndices(avg, new int[] {2}, F.MaxPool.options());
            return F.maxUnpool3d(pooled.values().tanh(), pooled.indices(), new int[] {2}, null, new int[] {0}, null);
        };
        Tensor x = randn(2, 3, 4, 4, 4);
        String plan = Jit.explain(f, x);
        assertTrue(plan.contains("avg_pool3d") && plan.contains("max_unpool3d") && !plan.contains("avg_pool2d"), plan);
        assertCompiledMatchesEager(f, x, new Tensor[] {w}, 1e-6f);
    }

    @Test
    void interpolateModesTraceAsOneOpEachAndDifferentiateAsEager() {
        Torch.manualSeed(27);
        Tensor w = randn(2, 3, 8, 10).requiresGrad_(true);
        TensorFunction f = in -> {
            Tensor up = F.interpolate(in[0], new double[] {2, 2.5}, "bilinear", false).mul(w);
            Tensor cubic = F.interpolate(up.tanh(), new long[] {5, 7}, "bicubic", true);
            Tensor aa = F.interpolate(cubic, F.Interpolate.options().size(3, 4).mode("bilinear").antialias(true));
            return F.interpolate(aa.unsqueeze(2), new double[] {2, 1.5, 0.5}, "nearest", null).relu();
        };
        Tensor x = randn(2, 3, 4, 4);
        String plan = Jit.explain(f, x);
        assertTrue(plan.contains("upsample_bilinear2d") && plan.contains("upsample_bicubic2d") && plan.contains("_upsample_bilinear2d_aa")
                && plan.contains("upsample_nearest3d") && !plan.contains("index_select"), plan);
        assertCompiledMatchesEager(f, x, new Tensor[] {w}, 1e-5f);
    }

    @Test
    void oneDimensionalPoolsTraceAsOneOpEachAndDifferentiateAsEager() {
        Torch.manualSeed(28);
        Tensor w = randn(2, 3, 12).requiresGrad_(true);
        TensorFunction f = in -> {
            Tensor avg = F.avgPool1d(in[0].mul(w), 3, F.AvgPool.options().stride(1).padding(1).countIncludePad(false));
            Tensor max = F.maxPool1d(avg.tanh(), 2, F.MaxPool.options().ceilMode(true));
            return F.adaptiveAvgPool1d(max, 4).relu();
        };
        Tensor x = randn(2, 3, 12);
        String plan = Jit.explain(f, x);
        assertTrue(plan.contains("avg_pool1d") && plan.contains("max_pool1d") && plan.contains("adaptive_avg_pool1d")
                && !plan.contains("avg_pool2d") && !plan.contains("max_pool2d"), plan);
        assertCompiledMatchesEager(f, x, new Tensor[] {w}, 1e-6f);
    }

    @Test
    void maxPoolsWithIndicesInThreeDimensionsTraceAsOneOpEachAndDifferentiateAsEager() {
        Torch.manualSeed(29);
        Tensor w = randn(2, 3, 4, 6, 6).requiresGrad_(true);
        TensorFunction f = in -> {
            var pooled = F.maxPool3dWithIndices(in[0].mul(w), new int[] {2}, F.MaxPool.options());
            Tensor unpooled = F.maxUnpool3d(pooled.values().tanh(), pooled.indices(), new int[] {2}, null, new int[] {0}, null);
            var adaptive = F.adaptiveMaxPool3dWithIndices(unpooled, 3, 2, 4);
            return adaptive.values().mul(adaptive.indices().to(adaptive.values().dtype()).mul(1e-3).add(1.0));
        };
        Tensor x = randn(2, 3, 4, 6, 6);
        String plan = Jit.explain(f, x);
        assertTrue(plan.contains("max_pool3d_with_indices") && plan.contains("adaptive_max_pool3d") && !plan.contains("max_pool2d_with_indices")
                && !plan.contains("adaptive_max_pool2d"), plan);
        assertCompiledMatchesEager(f, x, new Tensor[] {w}, 1e-6f);
    }
}
