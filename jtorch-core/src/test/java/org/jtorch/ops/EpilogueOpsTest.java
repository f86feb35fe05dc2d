package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.Autocast;
import org.jtorch.autograd.Grad;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.backend.ConvolutionKernels;
import org.jtorch.backend.LinalgKernels;
import org.jtorch.nn.F;
import org.jtorch.op.Callback;
import org.jtorch.op.ConvolutionOps;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.LinalgOps;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.op.Param;
import org.jtorch.op.StridedView;
import org.jtorch.op.TraceHook;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The JIT's GEMM and convolution with an epilogue as declared ops taking a callback ({@link LinalgOps#LINEAR_EPILOGUE},
 * {@link ConvolutionOps#CONVOLUTION_EPILOGUE}) through {@code Dispatcher.call}: the kernel hands the callback the output's
 * view and runs its work on blocks covering the output once; the result equals the plain op bit for bit; autograd is the
 * plain op's (same node, same gradients, gradcheck in float64); the trace never records them; autocast leaves them
 * alone; bad arguments name the op. The simulator pass runs this class on cuda:0 (there the whole output is one block).
 */
@ExtendWith(ScopePerTest.class)
class EpilogueOpsTest {
    private static final Device DEVICE = Fixtures.device();

    private static Tensor randn(DType dtype, long... shape) {
        return Torch.randn(shape).to(dtype).to(DEVICE);
    }

    /** The blocks a callback's work was run on, and the view the kernel gave the callback. */
    private static final class Blocks {
        final List<long[]> blocks = Collections.synchronizedList(new ArrayList<>());
        StridedView out;
    }

    private static Callback<LinalgKernels.Epilogue> recording(Blocks seen) {
        return out -> {
            seen.out = out;
            return (r0, r1, c0, c1) -> seen.blocks.add(new long[] {r0, r1, c0, c1});
        };
    }

    /** How many blocks cover each element of a {@code [rows, cols]} output (row-major). */
    private static int[] coverage(List<long[]> blocks, int rows, int cols) {
        int[] n = new int[rows * cols];
        for (long[] b : blocks) {
            for (long r = b[0]; r < b[1]; r++) for (long c = b[2]; c < b[3]; c++) n[(int) (r * cols + c)]++;
        }
        return n;
    }

    @Test
    void theOpsAreDeclaredWithACallbackAndKernelsOnTheTestDevice() {
        for (OpDef op : new OpDef[] {LinalgOps.LINEAR_EPILOGUE, ConvolutionOps.CONVOLUTION_EPILOGUE}) {
            assertEquals(op, OpRegistry.get(op.name()));
            assertEquals(OpDef.Kind.STRUCTURED, op.kind());
            assertTrue(op.takesCallback(), op.name());
            assertTrue(op.isDifferentiable(), op.name());
            assertNull(op.autocast(DEVICE.type()), op.name());
            assertTrue(op.signature().toString().contains("Callback? epilogue=None"), op.signature().toString());
            org.jtorch.backend.Backends.of(DEVICE);
            assertTrue(KernelRegistry.hasStructured(op, DEVICE.type()), op.name() + " on " + DEVICE);
        }
        assertEquals(0, LinalgOps.LINEAR_EPILOGUE.tensorInputs() - 3, "the callback is not a tensor input");
        assertTrue(!LinalgOps.LINEAR.takesCallback());
    }

    @Test
    void linearEpilogueCoversTheOutputOnceAndEqualsLinearBitForBit() {
        Torch.manualSeed(41);
        // A short product, several row and column blocks, k over a cache block, a 3-d input.
        long[][] sizes = {{5, 40, 30}, {300, 60, 70}, {130, 1100, 96}, {3, 7, 48, 40}};
        for (long[] s : sizes) {
            long[] xShape = java.util.Arrays.copyOf(s, s.length - 1);
            long in = s[s.length - 2], out = s[s.length - 1];
            Tensor x = randn(DType.FLOAT32, xShape);
            Tensor w = randn(DType.FLOAT32, out, in);
            Tensor b = randn(DType.FLOAT32, out);
            Blocks seen = new Blocks();
            Tensor r = Linalg.linear(x, w, b, recording(seen));
            int rows = (int) (x.numel() / in);
            assertArrayEquals(new long[] {rows, out}, seen.out.shape(), "the callback sees the output as [rows, out_features]");
            int[] n = coverage(seen.blocks, rows, (int) out);
            for (int i = 0; i < n.length; i++) assertEquals(1, n[i], "element " + i + " of " + java.util.Arrays.toString(s));
            assertArrayEquals(F.linear(x, w, b).toFloatArray(), r.toFloatArray(), java.util.Arrays.toString(s));
            assertArrayEquals(F.linear(x, w, null).toFloatArray(), Linalg.linear(x, w, null, null).toFloatArray());
        }
    }

    @Test
    void theCallbacksWorkWritesTheOutputAsTheJitsEpilogueDoes() {
        Torch.manualSeed(42);
        Tensor x = randn(DType.FLOAT32, 70, 33);
        Tensor w = randn(DType.FLOAT32, 50, 33);
        Tensor b = randn(DType.FLOAT32, 50);
        // A ReLU of each finished block, by the device's pointwise kernel, in place.
        var relu = KernelRegistry.pointwise(org.jtorch.op.PointwiseOps.RELU, DEVICE.type());
        Tensor r = Linalg.linear(x, w, b, out -> (r0, r1, c0, c1) -> {
            StridedView block = out.restrided(new long[] {r1 - r0, c1 - c0}, out.strides(), out.offset() + r0 * out.stride(0)
                    + c0 * out.stride(1));
            relu.run(DEVICE.index(), DType.FLOAT32, block, block, null, 0, 0);
        });
        assertArrayEquals(F.linear(x, w, b).relu().toFloatArray(), r.toFloatArray());
    }

    @Test
    void linearEpiloguesAutogradIsLinearsAndPassesGradcheckInFloat64() {
        Torch.manualSeed(43);
        Tensor x = randn(DType.FLOAT64, 6, 5).requiresGrad_(true);
        Tensor w = randn(DType.FLOAT64, 4, 5).requiresGrad_(true);
        Tensor b = randn(DType.FLOAT64, 4).requiresGrad_(true);
        Blocks seen = new Blocks();
        assertTrue(Gradcheck.check(t -> Linalg.linear(t[0], t[1], t[2], recording(seen)), x, w, b));
        assertTrue(!seen.blocks.isEmpty(), "the callback ran");
        Tensor r = Linalg.linear(x, w, b, recording(new Blocks()));
        assertEquals("LinearBackward0", r.gradFn().name());
        // The same gradients as linear's, bit for bit (the same derivatives, read from the inputs only).
        Tensor g = randn(DType.FLOAT64, 6, 4);
        r.backward(g);
        Tensor[] mine = {x.grad().clone(), w.grad().clone(), b.grad().clone()};
        for (Tensor t : new Tensor[] {x, w, b}) t.setGrad(null);
        F.linear(x, w, b).backward(g);
        assertArrayEquals(x.grad().toDoubleArray(), mine[0].toDoubleArray());
        assertArrayEquals(w.grad().toDoubleArray(), mine[1].toDoubleArray());
        assertArrayEquals(b.grad().toDoubleArray(), mine[2].toDoubleArray());
    }

    @Test
    void convolutionEpilogueCoversTheOutputOnceWithConv2dsValuesAndAutograd() {
        Torch.manualSeed(44);
        // {n, cin, h, w, cout, k, stride, padding}: a 3x3 map, a 1x1 (pointwise) one, a strided one, a one-channel input.
        int[][] cases = {{2, 8, 10, 10, 16, 3, 1, 1}, {3, 16, 7, 7, 24, 1, 1, 0}, {2, 8, 13, 11, 8, 3, 2, 1}, {4, 1, 9, 9, 6, 3, 1, 0}};
        for (int[] c : cases) {
            Tensor x = randn(DType.FLOAT32, c[0], c[1], c[2], c[3]).requiresGrad_(true);
            Tensor w = randn(DType.FLOAT32, c[4], c[1], c[5], c[5]).requiresGrad_(true);
            Tensor b = randn(DType.FLOAT32, c[4]).requiresGrad_(true);
            double[] args = {c[6], c[6], c[7], c[7], 1, 1, 1};
            List<long[]> blocks = Collections.synchronizedList(new ArrayList<>());
            StridedView[] given = new StridedView[1];
            Callback<ConvolutionKernels.Epilogue> observer = out -> {
                given[0] = out;
                return (i0, i1, c0, c1, p0, p1) -> blocks.add(new long[] {i0, i1, c0, c1, p0, p1});
            };
            Tensor r = Convolution.conv2dObserved(x, w, b, args, observer);
            Tensor expected = F.conv2d(x, w, b, c[6], c[7]);
            assertArrayEquals(expected.shape(), given[0].shape());
            assertArrayEquals(expected.toFloatArray(), r.toFloatArray(), java.util.Arrays.toString(c));
            long n = r.size(0), channels = r.size(1), pixels = r.size(2) * r.size(3);
            int[] cover = new int[(int) (n * channels * pixels)];
            for (long[] k : blocks) {
                for (long i = k[0]; i < k[1]; i++) for (long ch = k[2]; ch < k[3]; ch++) for (long p = k[4]; p < k[5]; p++) {
                    cover[(int) ((i * channels + ch) * pixels + p)]++;
                }
            }
            for (int i = 0; i < cover.length; i++) assertEquals(1, cover[i], "element " + i + " of " + java.util.Arrays.toString(c));
            assertEquals("ConvolutionBackward0", r.gradFn().name());
            Tensor g = randn(DType.FLOAT32, r.shape());
            r.backward(g);
            float[][] mine = {x.grad().toFloatArray(), w.grad().toFloatArray(), b.grad().toFloatArray()};
            for (Tensor t : new Tensor[] {x, w, b}) t.setGrad(null);
            expected.backward(g);
            assertArrayEquals(x.grad().toFloatArray(), mine[0]);
            assertArrayEquals(w.grad().toFloatArray(), mine[1]);
            assertArrayEquals(b.grad().toFloatArray(), mine[2]);
            // The writing entry records nothing: its output is the epilogue's, not the convolution's.
            Tensor inference = Convolution.conv2d(x, w, b, args, out -> (i0, i1, c0, c1, p0, p1) -> { });
            assertNull(inference.gradFn());
            assertArrayEquals(expected.toFloatArray(), inference.toFloatArray());
        }
    }

    @Test
    void theTraceNeverRecordsAnOpTakingACallback() {
        Tensor x = randn(DType.FLOAT32, 4, 3);
        Tensor w = randn(DType.FLOAT32, 2, 3);
        List<String> recorded = new ArrayList<>();
        List<Tensor> created = new ArrayList<>();
        TraceHook<Tensor> hook = new TraceHook<>() {
            @Override
            public void record(OpDef op, List<Tensor> inputs, double[] scalars, org.jtorch.op.ReduceArgs reduce, Tensor output) {
                recorded.add(op.name());
            }

            @Override
            public void created(Tensor t) {
                created.add(t);
            }
        };
        Tensor r;
        try (var scope = Dispatcher.trace(hook)) {
            r = Linalg.linear(x, w, null, recording(new Blocks()));
            Linalg.linear(x, w, null);
        }
        assertEquals(List.of("linear"), recorded, "the plain linear is traced, the one with a callback is not");
        assertTrue(created.contains(r), "its output is seen as made by an op the trace does not see");
    }

    @Test
    void autocastLeavesTheOpsAlone() {
        Tensor x = randn(DType.FLOAT32, 4, 3);
        Tensor w = randn(DType.FLOAT32, 2, 3);
        try (Autocast ac = Autocast.enable(DEVICE, DType.BFLOAT16)) {
            assertEquals(DType.BFLOAT16, Linalg.linear(x, w, null).dtype(), "linear is autocast");
            assertEquals(DType.FLOAT32, Linalg.linear(x, w, null, recording(new Blocks())).dtype());
        }
    }

    @Test
    void badArgumentsNameTheOp() {
        Tensor x = randn(DType.FLOAT32, 4, 3);
        Tensor w = randn(DType.FLOAT32, 2, 5);
        var shapes = assertThrows(IllegalArgumentException.class, () -> Linalg.linear(x, w, null, recording(new Blocks())));
        assertTrue(shapes.getMessage().contains("[4, 3]") && shapes.getMessage().contains("[2, 5]"), shapes.getMessage());
        Tensor w3 = randn(DType.FLOAT32, 2, 3);
        Callback<?> wrong = out -> "not an epilogue";
        var type = assertThrows(IllegalArgumentException.class,
                () -> Dispatcher.call(LinalgOps.LINEAR_EPILOGUE, new Tensor[] {x, w3, null}, wrong));
        assertTrue(type.getMessage().startsWith("_linear_epilogue: expected a callback returning") && type.getMessage().contains("String"),
                type.getMessage());
        var none = assertThrows(IllegalArgumentException.class,
                () -> Dispatcher.call(LinalgOps.LINEAR, new Tensor[] {x, w3, null}, recording(new Blocks())));
        assertEquals("linear: takes no callback argument", none.getMessage());
        // The convolution's epilogue kernels are float32's: a float64 call names the op, the operand and its dtype.
        Tensor xd = randn(DType.FLOAT64, 1, 2, 4, 4);
        Tensor wd = randn(DType.FLOAT64, 3, 2, 3, 3);
        double[] geometry = {1, 2, 4, 4, 3, 3, 3, 1, 1, 0, 0, 1, 1, 1, 2, 2};
        var dtype = assertThrows(IllegalArgumentException.class,
                () -> Dispatcher.call(ConvolutionOps.CONVOLUTION_EPILOGUE, new Tensor[] {xd, wd, null}, null, geometry));
        assertEquals("_convolution_epilogue: expected float32 operands, got input of torch.float64 (shape [1, 2, 4, 4] on " + DEVICE + ")",
                dtype.getMessage());
        // The JIT's entry declines what the op does not take (the JIT then runs the convolution, then the group).
        assertNull(Convolution.conv2d(xd, wd, null, new double[] {1, 1, 0, 0, 1, 1, 1}, out -> (i0, i1, c0, c1, p0, p1) -> { }));
        var geometryShape = assertThrows(IllegalArgumentException.class, () -> Dispatcher.call(ConvolutionOps.CONVOLUTION_EPILOGUE,
                new Tensor[] {randn(DType.FLOAT32, 1, 2, 5, 4), randn(DType.FLOAT32, 3, 2, 3, 3), null}, null, geometry));
        assertTrue(geometryShape.getMessage().contains("convolution_epilogue: expected input of shape [1, 2, 4, 4]"), geometryShape.getMessage());
    }

    @Test
    void anOpTakingACallbackIsStructuredWithOneOutputAndNoAutocast() {
        var e = assertThrows(IllegalArgumentException.class, () -> OpDef.unary("bad_callback").rule(org.jtorch.op.DTypeRule.SAME)
                .signature(Param.tensor("self"), Param.callback("epilogue")).build());
        assertTrue(e.getMessage().startsWith("bad_callback: an op taking a callback is structured"), e.getMessage());
        assertNotNull(Param.callback("epilogue"));
        assertTrue(Param.callback("epilogue").isCallback());
    }
}
