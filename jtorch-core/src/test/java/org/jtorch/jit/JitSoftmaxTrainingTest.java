package org.jtorch.jit;

import static org.jtorch.jit.JitChecks.DEVICE;
import static org.jtorch.jit.JitChecks.randn;
import static org.jtorch.jit.JitChecks.values;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.function.UnaryOperator;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.nn.F;
import org.jtorch.types.DType;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/**
 * A fused softmax's backward in one pass: each block of rows' (on CUDA, each row's) softmax gradient {@code y (g - sum(g y))}
 * (log-softmax: {@code g - exp(y) sum(g)}) goes through the group's gradient kernels while in cache, never stored.
 * Compiled gradients against eager's (the dot product is summed in another order: within 1e-5 relative plus 2e-6 of
 * the gradient's scale) for the attention's scaled causal mask, gradient kernels of their own per operand, broadcast
 * operands summed back, rows longer than a block, incoming gradients that are contiguous, broadcast over rows, one
 * value expanded or transposed; against eager float64; gradcheck. The plan says so on every device (CUDA: one generated
 * kernel a direction, {@code FusedKernels.softmaxSource}). The simulator pass runs this class on cuda:0.
 */
class JitSoftmaxTrainingTest {
    /** The output and each leaf's gradient of {@code loss(f(x))}, the leaves' gradients cleared first. */
    private static float[][] run(TensorFunction f, Tensor x, Tensor[] leaves, UnaryOperator<Tensor> loss) {
        for (Tensor t : leaves) t.setGrad(null);
        Tensor out = f.apply(x);
        loss.apply(out).backward();
        float[][] r = new float[leaves.length + 1][];
        r[0] = values(out);
        for (int i = 0; i < leaves.length; i++) r[i + 1] = values(leaves[i].grad());
        return r;
    }

    /**
     * {@code f} compiled with autograd (its plan fuses the softmax and its backward) against
     * eager, for each loss: output and gradients within 1e-5 relative plus 2e-6 of the largest magnitude (1e-6 absolute
     * more for the plain sum).
     */
    private static void assertTrainingMatchesEager(TensorFunction f, Tensor x, Tensor[] leaves) {
        String plan = Jit.explain(f, x);
        assertTrue(plan.contains("softmax of rows") && plan.contains("softmax's gradient and the group's in one pass"), plan);
        TensorFunction compiled = Jit.trace(f, x);
        compiled.apply(x).sum().backward(); // the trace
        long[] shape = f.apply(new Tensor[] {x}).shape();
        Tensor weights = randn(new Generator(77), shape);
        Tensor perColumn = randn(new Generator(78), shape[shape.length - 1]);
        long[] swapped = shape.clone();
        swapped[shape.length - 1] = shape[shape.length - 2];
        swapped[shape.length - 2] = shape[shape.length - 1];
        Tensor transposed = randn(new Generator(79), swapped);
        java.util.List<UnaryOperator<Tensor>> losses = java.util.List.of(
                y -> y.mul(weights).sum(), // a contiguous incoming gradient
                y -> y.mul(perColumn).sum(), // the weights broadcast over rows: rows with stride 0
                y -> y.sum(), // one value expanded: zero in exact arithmetic, rounding left
                y -> y.transpose(-1, -2).mul(transposed).sum()); // a transposed gradient, gathered
        for (int l = 0; l < losses.size(); l++) {
            float[][] eager = run(f, x, leaves, losses.get(l));
            float[][] fused = run(compiled, x, leaves, losses.get(l));
            for (int i = 0; i < eager.length; i++) {
                String what = "loss " + l + (i == 0 ? ", output" : ", gradient of leaf " + (i - 1));
                assertEquals(eager[i].length, fused[i].length, what);
                float scale = 0;
                for (float e : eager[i]) scale = Math.max(scale, Math.abs(e));
                for (int j = 0; j < eager[i].length; j++) {
                    float e = eager[i][j], a = fused[i][j];
                    // g - sum(g y) cancels where g is near the row's mean: the dot product's other order shows as an
                    // absolute error on the gradient's scale. Through a softmax the plain sum's gradients are rounding
                    // residues of a zero: 1e-6 absolute there.
                    float tolerance = 1e-5f * Math.abs(e) + 2e-6f * scale + (l == 2 ? 1e-6f : 0);
                    assertTrue(Math.abs(e - a) <= tolerance || e == a,
                            what + " at " + j + ": eager " + e + ", compiled " + a);
                }
            }
        }
    }

    @Test
    void theAttentionsScaledCausalMask() {
        Generator data = new Generator(60);
        for (long[] shape : new long[][] {{2, 64, 64}, {1, 256, 256}, {3, 7, 7}}) {
            long t = shape[shape.length - 1];
            Tensor scores = randn(data, shape).requiresGrad_(true);
            Tensor mask = Torch.ones(new long[] {t, t}, DType.FLOAT32, DEVICE).triu(1).mul(-1e9);
            assertTrainingMatchesEager(in -> in[0].mul(0.125).add(mask).softmax(-1), scores, new Tensor[] {scores});
            assertTrainingMatchesEager(in -> F.logSoftmax(in[0].mul(0.125).add(mask), -1), scores, new Tensor[] {scores});
        }
    }

    @Test
    void gradientKernelsOfTheirOwnAndBroadcastOperands() {
        Generator data = new Generator(61);
        for (long[] shape : new long[][] {{6, 9, 37}, {48, 1024}, {3, 20000}, {1, 5}}) {
            long cols = shape[shape.length - 1];
            Tensor x = randn(data, shape).requiresGrad_(true), r = randn(data, shape).requiresGrad_(true);
            Tensor col = randn(data, cols).requiresGrad_(true), c = randn(data, shape);
            // x and r have gradient kernels of their own; the per-column operand's gradient is summed over the rows.
            assertTrainingMatchesEager(in -> in[0].mul(r).add(col).softmax(-1), x, new Tensor[] {x, r, col});
            // A chain through a nonlinearity, an operand without grad, and a log-softmax.
            assertTrainingMatchesEager(in -> F.logSoftmax(in[0].mul(c).relu().sub(col), -1), x, new Tensor[] {x, col});
            // The operand's gradient is the softmax's gradient itself (an add), and x's a product's.
            assertTrainingMatchesEager(in -> in[0].add(r).mul(2.0).softmax(-1), x, new Tensor[] {x, r});
        }
    }

    @Test
    void aRetainedGraphAndTheDoubleBackwardError() {
        Generator data = new Generator(62);
        Tensor x = randn(data, 8, 33).requiresGrad_(true), b = randn(data, 33).requiresGrad_(true);
        TensorFunction f = in -> in[0].mul(0.5).add(b).softmax(-1);
        TensorFunction compiled = Jit.trace(f, x);
        compiled.apply(x);
        Tensor weights = randn(new Generator(63), 8, 33);
        Tensor y = compiled.apply(x).mul(weights).sum();
        Tensor first = Autograd.grad(new Tensor[] {y}, new Tensor[] {b}, null, true, false, false)[0];
        Tensor second = Autograd.grad(new Tensor[] {y}, new Tensor[] {b}, null, false, false, false)[0];
        assertArrayEquals(values(first), values(second));
        Tensor z = compiled.apply(x).mul(weights).sum();
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                () -> Autograd.grad(new Tensor[] {z}, new Tensor[] {x}, null, true, true, false));
        assertTrue(e.getMessage().contains("softmax fused with") && e.getMessage().contains("double backward"),
                e.getMessage());
    }

    /**
     * The fused kernels compute in float32: the compiled float32 gradients against eager's in float64 (within float32's
     * rounding), and gradcheck of the compiled function in float64 (replayed op by op: the fusion is float32 only).
     */
    @Test
    void gradientsAgreeWithFloat64AndGradcheckPasses() {
        Generator data = new Generator(64);
        Tensor x = randn(data, 24, 40).requiresGrad_(true), r = randn(data, 24, 40).requiresGrad_(true);
        Tensor col = randn(data, 40).requiresGrad_(true);
        TensorFunction f = in -> in[0].mul(r).add(col).sigmoid().softmax(-1);
        TensorFunction compiled = Jit.trace(f, x);
        compiled.apply(x);
        Tensor weights = randn(new Generator(65), 24, 40);
        Tensor[] leaves = {x, r, col};
        float[][] fused = run(compiled, x, leaves, y -> y.mul(weights).sum());
        Tensor[] wide = new Tensor[leaves.length];
        for (int i = 0; i < leaves.length; i++) wide[i] = leaves[i].detach().to(DType.FLOAT64).requiresGrad_(true);
        wide[0].mul(wide[1]).add(wide[2]).sigmoid().softmax(-1).mul(weights.to(DType.FLOAT64)).sum().backward();
        for (int i = 0; i < leaves.length; i++) {
            float[] exact = values(wide[i].grad().to(DType.FLOAT32));
            for (int j = 0; j < exact.length; j++) {
                assertEquals(exact[j], fused[i + 1][j], 2e-6f * Math.max(1, Math.abs(exact[j])), "leaf " + i + " at " + j);
            }
        }
        Tensor x64 = Torch.randn(new long[] {3, 6}, DType.FLOAT64, DEVICE, new Generator(66)).requiresGrad_(true);
        Tensor r64 = Torch.randn(new long[] {3, 6}, DType.FLOAT64, DEVICE, new Generator(67)).requiresGrad_(true);
        TensorFunction g = in -> in[0].mul(in[1]).add(in[1]).tanh().softmax(-1);
        TensorFunction c64 = Jit.trace(g, x64, r64);
        assertTrue(Gradcheck.check(c64::apply, x64, r64));
    }
}
