package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.firstGradient;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.op.IndexingOps;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.OpDef;
import org.jtorch.op.ReduceArgs;
import org.jtorch.op.TraceHook;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The in-place structured ops through {@link Dispatcher#callInPlace}: {@code masked_fill_}, {@code index_add_},
 * {@code scatter_} (src and value), {@code scatter_add_} and {@code index_fill_}, and the out-of-place {@code scatter} and
 * {@code index_fill} they share their declarations with: one version bump, PyTorch's node names, the trace's in-place
 * record, values equal to the out-of-place form, and gradients of both orders against finite differences in float64 on
 * a view of a non-leaf (its base rebased onto the op, as PyTorch's CopySlices).
 */
@ExtendWith(ScopePerTest.class)
class InPlaceStructuredOpsTest {
    private static final Device DEVICE = Fixtures.device();
    private static final Generator GEN = new Generator(37);

    private static Tensor cpu64(long... shape) {
        return Torch.randn(shape, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
    }

    /** The in-place ops on a [5, 6] self, each with the node name PyTorch 1.13 gives it. */
    private static Map<String, UnaryOperator<Tensor>> ops(Tensor src, Device device) {
        Tensor mask = Torch.tensor(new boolean[] {true, false, false, true, false, true}).to(device);
        Tensor rows = Torch.tensor(new long[] {4, 0, 4}).to(device);
        Tensor index = Torch.tensor(new long[] {0, 2, 2, 1, 5, 3}).reshape(2, 3).to(device);
        return Map.of(
                "MaskedFillBackward0", t -> t.maskedFill_(mask, -2.5),
                "IndexAddBackward0", t -> t.indexAdd_(0, rows, src.narrow(0, 0, 3), 2),
                "ScatterBackward0", t -> t.scatter_(1, index, src),
                "ScatterBackward1", t -> t.scatter_(1, index, 7.0),
                "ScatterAddBackward0", t -> t.scatterAdd_(1, index, src),
                "IndexFillBackward0", t -> t.indexFill_(1, Torch.tensor(new long[] {-1, 2}).to(device), 0.5));
    }

    @Test
    void theDeclarationsHaveKernelsOnTheTestDevice() {
        org.jtorch.backend.Backends.of(DEVICE);
        for (OpDef op : new OpDef[] {IndexingOps.SCATTER, IndexingOps.SCATTER_VALUE, IndexingOps.INDEX_FILL}) {
            assertEquals(OpDef.Kind.STRUCTURED, op.kind(), op.name());
            assertTrue(KernelRegistry.hasStructured(op, DEVICE.type()), op.name() + " on " + DEVICE);
        }
    }

    @Test
    void eachOpBumpsTheVersionOnceNamesItsNodeAndMatchesACopy() {
        Tensor src = Torch.randn(5, 6).to(DEVICE);
        for (var e : ops(src, DEVICE).entrySet()) {
            Tensor base = Torch.randn(5, 6).to(DEVICE).requiresGrad_(true);
            Tensor self = base.mul(1.0);
            Tensor copy = self.detach().clone();
            int version = self.version();
            assertSame(self, e.getValue().apply(self), e.getKey());
            assertEquals(version + 1, self.version(), e.getKey());
            assertEquals(e.getKey(), self.gradFn().name());
            Tensor expected = e.getValue().apply(copy);
            assertArrayEquals(expected.toFloatArray(), self.detach().toFloatArray(), 0, e.getKey());
        }
    }

    @Test
    void theTraceRecordsEachAsAnInPlaceOp() {
        Tensor src = Torch.randn(5, 6).to(DEVICE);
        List<String> inPlace = new ArrayList<>();
        TraceHook<Tensor> hook = new TraceHook<>() {
            @Override
            public void record(OpDef op, List<Tensor> inputs, double[] scalars, ReduceArgs reduce, Tensor output) {}

            @Override
            public void recordInPlace(OpDef op, List<Tensor> inputs, double[] scalars) {
                inPlace.add(op.pyName());
            }
        };
        Tensor self = Torch.zeros(new long[] {5, 6}, DType.FLOAT32, DEVICE);
        Map<String, UnaryOperator<Tensor>> ops = ops(src, DEVICE);
        try (Dispatcher.TraceScope t = Dispatcher.trace(hook)) {
            ops.get("MaskedFillBackward0").apply(self);
            ops.get("ScatterBackward1").apply(self);
            ops.get("IndexAddBackward0").apply(self);
        }
        assertEquals(List.of("masked_fill", "scatter", "index_add"), inPlace);
    }

    @Test
    void expandedSelfIsRefusedExceptByTheFills() {
        Tensor one = Torch.zeros(new long[] {1}, DType.FLOAT32, DEVICE);
        Tensor i = Torch.tensor(new long[] {0}).to(DEVICE);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> one.expand(4).indexAdd_(0, i, Torch.ones(1).to(DEVICE)));
        assertTrue(e.getMessage().startsWith("index_add_: unsupported operation: more than one element"), e.getMessage());
        assertArrayEquals(new float[] {3, 3, 3, 3}, one.expand(4).indexFill_(0, i, 3).toFloatArray());
        if (DEVICE.isCpu()) {
            // the kernel is where(mask, value, self): on CUDA the unmasked places also write self's old value into the shared
            // element, in parallel (as before masked_fill_ was declared); PyTorch's kernel writes the masked places only
            assertArrayEquals(new float[] {4, 4, 4, 4}, one.expand(4).maskedFill_(Torch.tensor(true, false, false, false).to(DEVICE), 4)
                    .toFloatArray());
        }
        e = assertThrows(IllegalArgumentException.class, () -> Torch.zeros(new long[] {2, 3}, DType.FLOAT32, DEVICE)
                .maskedFill_(Torch.tensor(new boolean[] {true, false}).reshape(2, 1, 1).to(DEVICE), 1));
        assertTrue(e.getMessage().startsWith("masked_fill_: output with shape [2, 3] doesn't match the broadcast shape [2, 2, 3]"),
                e.getMessage());
    }

    /** On a view of a non-leaf: the base's gradient goes through the rebased view (CopySlices), of both orders. */
    @Test
    void gradientsOfBothOrdersOnAViewMatchFiniteDifferences() {
        for (var e : ops(null, Device.cpu()).entrySet()) {
            if (e.getKey().equals("IndexAddBackward0") || e.getKey().startsWith("ScatterBackward0") || e.getKey().startsWith("ScatterAdd")) {
                continue; // these read src: below
            }
            Function<Tensor[], Tensor> f = a -> {
                Tensor base = a[0].mul(a[0]);
                e.getValue().apply(base.narrow(0, 0, 5).narrow(1, 0, 6));
                return base;
            };
            assertTrue(Gradcheck.check(f, cpu64(6, 7)), e.getKey());
            assertTrue(Gradcheck.check(firstGradient(f), cpu64(6, 7)), e.getKey());
        }
        // src larger than the index: only its index-shaped corner is read (this second derivative was wrong before the ops
        // were declared: the hand-written backward padded the corner's gradient with copy_ into zeros)
        Tensor index = Torch.tensor(new long[] {0, 2, 3, 1, 5, 4}).reshape(2, 3);
        Tensor rows = Torch.tensor(new long[] {4, 0, 4});
        List<Function<Tensor[], Tensor>> reading = List.of(
                a -> { Tensor b = a[0].mul(1.5); b.narrow(0, 1, 5).scatterAdd_(1, index, a[1].mul(a[1])); return b; },
                a -> { Tensor b = a[0].mul(1.5); b.narrow(0, 1, 5).scatter_(1, index, a[1].mul(a[1])); return b; },
                a -> { Tensor b = a[0].mul(1.5); b.narrow(0, 1, 5).indexAdd_(0, rows, a[1].mul(a[1]).narrow(0, 0, 3), 2); return b; });
        for (Function<Tensor[], Tensor> f : reading) {
            assertTrue(Gradcheck.check(f, cpu64(6, 6), cpu64(5, 6)));
            assertTrue(Gradcheck.check(firstGradient(f), cpu64(6, 6), cpu64(5, 6)));
        }
    }
}
