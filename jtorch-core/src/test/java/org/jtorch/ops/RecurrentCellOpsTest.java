package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.assertCloseRelative;
import static org.jtorch.ops.OpTestSupport.firstGradient;
import static org.jtorch.ops.OpTestSupport.kernelCalls;
import static org.jtorch.ops.OpTestSupport.traced;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.Autocast;
import org.jtorch.amp.AutocastPolicy;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.backend.Backends;
import org.jtorch.op.CastPolicy;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.op.RecurrentOps;
import org.jtorch.testing.ChildJvm;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The fused LSTM and GRU cells as declared multi-output ops ({@link RecurrentOps}): one node in the trace and in the graph,
 * one fused backward call, the fused values and gradients against the same formulas run as tensor ops
 * ({@link Recurrent#lstmCellComposed}, {@link Recurrent#gruCellComposed}) on random shapes, gradients of both orders
 * against finite differences in float64, half operands computed in float32, and autocast as PyTorch's. Values against
 * PyTorch 1.13 are in {@code nn.RecurrentConformanceTest}.
 */
@ExtendWith(ScopePerTest.class)
class RecurrentCellOpsTest {
    private static final Device DEVICE = Fixtures.device();
    private static final Generator GEN = new Generator(41);

    private static Tensor randn(long... shape) {
        return Torch.randn(shape, DType.FLOAT32, Device.cpu(), GEN).to(DEVICE);
    }

    private static Tensor randn64(long... shape) {
        return Torch.randn(shape, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
    }

    @Test
    void theCellsAreMultiOutputOpsWithKernelsOnTheTestDevice() {
        Backends.of(DEVICE);
        for (OpDef op : new OpDef[] {RecurrentOps.LSTM_CELL, RecurrentOps.LSTM_CELL_BACKWARD, RecurrentOps.GRU_CELL,
                RecurrentOps.GRU_CELL_BACKWARD}) {
            assertEquals(OpDef.Kind.STRUCTURED, op.kind(), op.name());
            assertSame(op, OpRegistry.get(op.name()));
            assertTrue(KernelRegistry.hasStructured(op, DEVICE.type()), op.name() + " on " + DEVICE);
        }
        assertEquals(List.of("hy", "cy", "workspace"), RecurrentOps.LSTM_CELL.outputNames());
        assertEquals(2, RecurrentOps.LSTM_CELL.gradOutputs());
        assertEquals(List.of("hy", "workspace"), RecurrentOps.GRU_CELL.outputNames());
        assertEquals(1, RecurrentOps.GRU_CELL.gradOutputs());
        // PyTorch 1.13's autocast lists: lower precision on CUDA, untouched on the CPU
        for (String name : new String[] {"_thnn_fused_lstm_cell", "_thnn_fused_gru_cell"}) {
            assertEquals(CastPolicy.LOWER_PRECISION, AutocastPolicy.of(name, Device.Type.CUDA), name);
            assertNull(AutocastPolicy.of(name, Device.Type.CPU), name);
        }
    }

    @Test
    void theTraceAndTheGraphSeeOneNodePerCell() {
        Tensor ig = randn(2, 12).requiresGrad_(true), hg = randn(2, 12), cx = randn(2, 3);
        Recurrent.LstmStep[] step = new Recurrent.LstmStep[1];
        assertEquals(List.of("_thnn_fused_lstm_cell"), traced(() -> step[0] = Recurrent.lstmCell(ig, hg, cx)));
        assertEquals("ThnnFusedLstmCellBackward0", step[0].hy().gradFn().name());
        assertSame(step[0].hy().gradFn(), step[0].cy().gradFn());
        assertEquals(1, step[0].cy().outputNr());
        Tensor gig = randn(2, 9).requiresGrad_(true), ghg = randn(2, 9), hx = randn(2, 3);
        Tensor[] hy = new Tensor[1];
        assertEquals(List.of("_thnn_fused_gru_cell"), traced(() -> hy[0] = Recurrent.gruCell(gig, ghg, hx)));
        assertEquals("ThnnFusedGruCellBackward0", hy[0].gradFn().name());
    }

    @Test
    void oneFusedBackwardCallGivesTheGradientsOfEveryInput() {
        Tensor ig = randn(3, 16).requiresGrad_(true), hg = randn(3, 16).requiresGrad_(true), cx = randn(3, 4).requiresGrad_(true);
        Recurrent.LstmStep step = Recurrent.lstmCell(ig, hg, cx);
        Tensor loss = step.hy().mul(randn(3, 4)).sum().add(step.cy().mul(randn(3, 4)).sum());
        Tensor[][] g = new Tensor[1][];
        assertEquals(1, kernelCalls("_thnn_fused_lstm_cell_backward_impl",
                () -> g[0] = Autograd.grad(new Tensor[] {loss}, new Tensor[] {ig, hg, cx})));
        assertArrayEquals(g[0][0].toFloatArray(), g[0][1].toFloatArray());
        Tensor gig = randn(3, 12).requiresGrad_(true), ghg = randn(3, 12).requiresGrad_(true), hx = randn(3, 4).requiresGrad_(true);
        Tensor gruLoss = Recurrent.gruCell(gig, ghg, hx).mul(randn(3, 4)).sum();
        assertEquals(1, kernelCalls("_thnn_fused_gru_cell_backward", () -> Autograd.grad(new Tensor[] {gruLoss}, new Tensor[] {gig, ghg, hx})));
    }

    @Test
    void lstmValuesAndGradientsMatchTheComposedFormulasOnRandomShapes() {
        java.util.Random r = new java.util.Random(5);
        for (int trial = 0; trial < 12; trial++) {
            long b = 1 + r.nextInt(6), h = 1 + r.nextInt(40);
            // a third of the trials read hy only, a third cy only: the other output's gradient is absent (zero)
            int reads = trial % 3;
            Tensor ig = randn(b, 4 * h), hg = randn(b, 4 * h), cx = randn(b, h), ph = randn(b, h), pc = randn(b, h);
            Tensor[] fused = lstmGradients(Recurrent::lstmCell, ig, hg, cx, ph, pc, reads);
            Tensor[] composed = lstmGradients(Recurrent::lstmCellComposed, ig, hg, cx, ph, pc, reads);
            String what = "b=" + b + " h=" + h + " reads=" + reads;
            for (int j = 0; j < fused.length; j++) assertCloseRelative(composed[j], fused[j], 2e-5, what + " #" + j);
        }
    }

    private interface LstmFn {
        Recurrent.LstmStep apply(Tensor ig, Tensor hg, Tensor cx);
    }

    /** hy, cy and the gradients of the gate inputs and cx of {@code hy * ph} (reads 0, 1), {@code cy * pc} (reads 0, 2), summed. */
    private static Tensor[] lstmGradients(LstmFn cell, Tensor ig0, Tensor hg0, Tensor cx0, Tensor ph, Tensor pc, int reads) {
        Tensor ig = ig0.detach().requiresGrad_(true), hg = hg0.detach().requiresGrad_(true), cx = cx0.detach().requiresGrad_(true);
        Recurrent.LstmStep step = cell.apply(ig, hg, cx);
        Tensor loss = reads == 1 ? step.hy().mul(ph).sum() : reads == 2 ? step.cy().mul(pc).sum()
                : step.hy().mul(ph).sum().add(step.cy().mul(pc).sum());
        Tensor[] g = Autograd.grad(new Tensor[] {loss}, new Tensor[] {ig, hg, cx}, null, false, false, true);
        return new Tensor[] {step.hy(), step.cy(), g[0], g[1], g[2]};
    }

    @Test
    void gruValuesAndGradientsMatchTheComposedFormulasOnRandomShapes() {
        java.util.Random r = new java.util.Random(6);
        for (int trial = 0; trial < 12; trial++) {
            long b = 1 + r.nextInt(6), h = 1 + r.nextInt(40);
            Tensor ig = randn(b, 3 * h), hg = randn(b, 3 * h), hx = randn(b, h), probe = randn(b, h);
            Tensor[] fused = gruGradients(true, ig, hg, hx, probe), composed = gruGradients(false, ig, hg, hx, probe);
            for (int j = 0; j < fused.length; j++) assertCloseRelative(composed[j], fused[j], 2e-5, "b=" + b + " h=" + h + " #" + j);
        }
    }

    private static Tensor[] gruGradients(boolean fused, Tensor ig0, Tensor hg0, Tensor hx0, Tensor probe) {
        Tensor ig = ig0.detach().requiresGrad_(true), hg = hg0.detach().requiresGrad_(true), hx = hx0.detach().requiresGrad_(true);
        Tensor hy = fused ? Recurrent.gruCell(ig, hg, hx) : Recurrent.gruCellComposed(ig, hg, hx);
        Tensor[] g = Autograd.grad(new Tensor[] {hy.mul(probe).sum()}, new Tensor[] {ig, hg, hx});
        return new Tensor[] {hy, g[0], g[1], g[2]};
    }

    @Test
    void gradientsOfBothOrdersMatchFiniteDifferences() {
        Function<Tensor[], Tensor> lstm = a -> {
            Recurrent.LstmStep s = Recurrent.lstmCell(a[0], a[1], a[2]);
            return Torch.cat(List.of(s.hy().reshape(-1), s.cy().mul(s.cy()).reshape(-1)), 0);
        };
        assertTrue(Gradcheck.check(lstm, randn64(2, 12), randn64(2, 12), randn64(2, 3)));
        assertTrue(Gradcheck.check(firstGradient(lstm), randn64(2, 12), randn64(2, 12), randn64(2, 3)));
        Function<Tensor[], Tensor> hyOnly = a -> Recurrent.lstmCell(a[0], a[1], a[2]).hy();
        assertTrue(Gradcheck.check(hyOnly, randn64(3, 8), randn64(3, 8), randn64(3, 2)));
        assertTrue(Gradcheck.check(firstGradient(hyOnly), randn64(3, 8), randn64(3, 8), randn64(3, 2)));
        Function<Tensor[], Tensor> gru = a -> Recurrent.gruCell(a[0], a[1], a[2]);
        assertTrue(Gradcheck.check(gru, randn64(2, 9), randn64(2, 9), randn64(2, 3)));
        assertTrue(Gradcheck.check(firstGradient(gru), randn64(2, 9), randn64(2, 9), randn64(2, 3)));
    }

    @Test
    void halfOperandsComputeInFloat32AndRoundOnce() {
        for (DType half : new DType[] {DType.BFLOAT16, DType.FLOAT16}) {
            Tensor ig = randn(3, 20).to(half), hg = randn(3, 20).to(half), cx = randn(3, 5).to(half);
            Tensor[] lstm = Dispatcher.callAll(RecurrentOps.LSTM_CELL, new Tensor[] {ig, hg, cx});
            Tensor[] wide = Dispatcher.callAll(RecurrentOps.LSTM_CELL,
                    new Tensor[] {ig.to(DType.FLOAT32), hg.to(DType.FLOAT32), cx.to(DType.FLOAT32)});
            for (int j = 0; j < 3; j++) {
                assertEquals(half, lstm[j].dtype());
                assertArrayEquals(wide[j].to(half).toFloatArray(), lstm[j].toFloatArray(), half + " output " + j);
            }
            Tensor gig = randn(3, 15).to(half), ghg = randn(3, 15).to(half), hx = randn(3, 5).to(half);
            Tensor[] gru = Dispatcher.callAll(RecurrentOps.GRU_CELL, new Tensor[] {gig, ghg, hx});
            Tensor[] gruWide = Dispatcher.callAll(RecurrentOps.GRU_CELL,
                    new Tensor[] {gig.to(DType.FLOAT32), ghg.to(DType.FLOAT32), hx.to(DType.FLOAT32)});
            assertArrayEquals(gruWide[0].to(half).toFloatArray(), gru[0].toFloatArray(), half + " gru");
        }
    }

    @Test
    void autocastRunsTheCellsInLowerPrecisionOnCudaOnly() {
        Tensor ig = randn(2, 8), hg = randn(2, 8), cx = randn(2, 2);
        try (Autocast ac = Autocast.enable(DEVICE)) {
            Recurrent.LstmStep s = Recurrent.lstmCell(ig, hg, cx);
            DType expected = DEVICE.type() == Device.Type.CUDA ? DType.FLOAT16 : DType.FLOAT32;
            assertEquals(expected, s.hy().dtype());
            assertEquals(expected, s.cy().dtype());
            assertEquals(expected, Recurrent.gruCell(randn(2, 6), randn(2, 6), cx).dtype());
        }
    }

    @Test
    void aLayerIsOneNodeWithOneFusedBackwardCall() {
        for (boolean lstm : new boolean[] {true, false}) {
            int g = lstm ? 4 : 3;
            Tensor x = randn(3 * 2, 5), wIh = randn(g * 4, 5).requiresGrad_(true), wHh = randn(g * 4, 4).requiresGrad_(true);
            Tensor bIh = randn(g * 4).requiresGrad_(true), bHh = randn(g * 4).requiresGrad_(true), h0 = randn(2, 4), c0 = randn(2, 4);
            Recurrent.Layer[] layer = new Recurrent.Layer[1];
            List<String> ops = traced(() -> layer[0] = lstm ? Recurrent.lstmLayer(x, wIh, wHh, bIh, bHh, h0, c0, 3, true)
                    : Recurrent.gruLayer(x, wIh, wHh, bIh, bHh, h0, 3, true));
            assertEquals(List.of(lstm ? "_lstm_layer" : "_gru_layer"), ops);
            Recurrent.Layer l = layer[0];
            assertEquals(lstm ? "LstmLayerBackward0" : "GruLayerBackward0", l.output().gradFn().name());
            assertSame(l.output().gradFn(), l.hN().gradFn());
            Tensor[] probes = {randn(6, 4), randn(2, 4), randn(2, 4)};
            Tensor[][] grads = new Tensor[1][];
            assertEquals(1, kernelCalls(lstm ? "_lstm_layer_backward" : "_gru_layer_backward",
                    () -> grads[0] = Autograd.grad(new Tensor[] {probed(l, probes)}, new Tensor[] {wIh, wHh, bIh, bHh})));
            // the same weight gradients when the input and the initial states need theirs too (grad_input_mask)
            Tensor x2 = x.detach().requiresGrad_(true), h2 = h0.detach().requiresGrad_(true), c2 = c0.detach().requiresGrad_(true);
            Recurrent.Layer l2 = lstm ? Recurrent.lstmLayer(x2, wIh, wHh, bIh, bHh, h2, c2, 3, true)
                    : Recurrent.gruLayer(x2, wIh, wHh, bIh, bHh, h2, 3, true);
            Tensor[] all = Autograd.grad(new Tensor[] {probed(l2, probes)}, lstm ? new Tensor[] {wIh, wHh, bIh, bHh, x2, h2, c2}
                    : new Tensor[] {wIh, wHh, bIh, bHh, x2, h2});
            for (int i = 0; i < 4; i++) assertArrayEquals(grads[0][i].toFloatArray(), all[i].toFloatArray(), (lstm ? "lstm #" : "gru #") + i);
        }
    }

    /**
     * A layer's batch rows run through all the steps in blocks, one per thread ({@code RecurrentKernels.forBatchBlocks}):
     * on two and three threads its outputs and every gradient equal the one-thread run's bit for bit (LSTM and GRU, float32
     * and float64, both directions, an output gradient at every step and final-state gradients). The one-thread layer
     * against the cells step after step: {@code nn.RecurrentTest}.
     */
    @Test
    void aLayersBatchBlocksOnSeveralThreadsGiveTheOneThreadValuesBitForBit() throws Exception {
        // On the CPU the cells' exp and tanh are the JDK's unless the deterministic switch is on, and those differ in the
        // last bit between C2's SVML call and the interpreted fallback: which one a run gets depends on when C2 compiles
        // each kernel, not on the thread split. So the comparison runs under the switch, in a child JVM if this one has
        // it off (the CI failure of the seventeenth session, docs/BENCHMARKS.md).
        if (DEVICE.type() == Device.Type.CPU && !Boolean.getBoolean(DETERMINISTIC_MATH)) {
            String verdict = ChildJvm.lastLine(List.of("-D" + DETERMINISTIC_MATH + "=true"), ThreadSplitMain.class);
            assertEquals(SAME_BITS, verdict);
        } else {
            assertEquals(SAME_BITS, threadSplitMismatch());
        }
    }

    private static final String DETERMINISTIC_MATH = "jtorch.cpu.deterministicMath", SAME_BITS = "same bits";

    /** A child JVM's side of the thread-split test: prints {@link #threadSplitMismatch}. */
    public static final class ThreadSplitMain {
        public static void main(String[] args) {
            System.out.println(threadSplitMismatch());
        }
    }

    /**
     * LSTM and GRU layers' outputs and gradients on 2 and 3 threads against one thread: {@link #SAME_BITS}, or the first
     * difference.
     */
    private static String threadSplitMismatch() {
        int threads = Torch.getNumThreads();
        try {
            for (DType dtype : new DType[] {DType.FLOAT32, DType.FLOAT64}) {
                for (boolean lstm : new boolean[] {true, false}) {
                    for (long batch : new long[] {20, 27}) {
                        boolean reverse = batch == 27;
                        Torch.setNumThreads(1);
                        Tensor[] one = layerRun(lstm, dtype, batch, reverse);
                        for (int t : new int[] {2, 3}) {
                            Torch.setNumThreads(t);
                            Tensor[] split = layerRun(lstm, dtype, batch, reverse);
                            for (int j = 0; j < one.length; j++) {
                                double[] expected = one[j].to(DType.FLOAT64).toDoubleArray(), actual = split[j].to(DType.FLOAT64).toDoubleArray();
                                for (int i = 0; i < expected.length; i++) {
                                    if (Double.doubleToRawLongBits(expected[i]) != Double.doubleToRawLongBits(actual[i])) {
                                        return (lstm ? "lstm " : "gru ") + dtype + " batch " + batch + " threads " + t + " output #" + j
                                                + " element " + i + ": " + expected[i] + " on one thread, " + actual[i];
                                    }
                                }
                            }
                        }
                    }
                }
            }
            return SAME_BITS;
        } finally {
            Torch.setNumThreads(threads);
        }
    }

    /**
     * The outputs of a 6-step layer of hidden size 24 and the gradients of its inputs, weights, biases and initial states
     * (a fixed generator: every call draws the same values).
     */
    private static Tensor[] layerRun(boolean lstm, DType dtype, long batch, boolean reverse) {
        Generator gen = new Generator(7);
        int g = lstm ? 4 : 3, steps = 6, in = 11, hidden = 24;
        Function<long[], Tensor> draw = shape -> Torch.randn(shape, dtype, Device.cpu(), gen).mul(0.5).to(DEVICE).requiresGrad_(true);
        Tensor x = draw.apply(new long[] {steps * batch, in}), wIh = draw.apply(new long[] {g * hidden, in});
        Tensor wHh = draw.apply(new long[] {g * hidden, hidden}), bIh = draw.apply(new long[] {g * hidden});
        Tensor bHh = draw.apply(new long[] {g * hidden}), h0 = draw.apply(new long[] {batch, hidden}), c0 = draw.apply(new long[] {batch, hidden});
        Tensor[] probes = {draw.apply(new long[] {steps * batch, hidden}).detach(), draw.apply(new long[] {batch, hidden}).detach(),
                draw.apply(new long[] {batch, hidden}).detach()};
        Recurrent.Layer l = lstm ? Recurrent.lstmLayer(x, wIh, wHh, bIh, bHh, h0, c0, steps, reverse)
                : Recurrent.gruLayer(x, wIh, wHh, bIh, bHh, h0, steps, reverse);
        Tensor[] wrt = lstm ? new Tensor[] {x, wIh, wHh, bIh, bHh, h0, c0} : new Tensor[] {x, wIh, wHh, bIh, bHh, h0};
        Tensor[] grads = Autograd.grad(new Tensor[] {probed(l, probes)}, wrt);
        List<Tensor> all = new java.util.ArrayList<>(List.of(l.output(), l.hN()));
        if (lstm) all.add(l.cN());
        all.addAll(List.of(grads));
        return all.toArray(new Tensor[0]);
    }

    private static Tensor probed(Recurrent.Layer l, Tensor[] probes) {
        Tensor loss = l.output().mul(probes[0]).sum().add(l.hN().mul(probes[1]).sum());
        return l.cN() == null ? loss : loss.add(l.cN().mul(probes[2]).sum());
    }

    @Test
    void badOperandsNameTheOpTheShapesAndTheDtypes() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Dispatcher.callAll(RecurrentOps.LSTM_CELL, new Tensor[] {randn(2, 8), randn(2, 8), randn(2, 3)}));
        assertEquals("_thnn_fused_lstm_cell: expected input_gates and hidden_gates of shape [batch, 4 * hidden] and cx of shape "
                + "[batch, hidden], got [2, 8], [2, 8] and [2, 3]", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Dispatcher.callAll(RecurrentOps.GRU_CELL,
                new Tensor[] {randn(2, 6), randn(2, 6).to(DType.FLOAT64), randn(2, 2)}));
        assertEquals("_thnn_fused_gru_cell: expected gates and hx of one floating dtype, got torch.float32, torch.float64 and "
                + "torch.float32", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Recurrent.lstmCell(randn(2, 8), randn(2, 8), randn(2, 3)));
        assertTrue(e.getMessage().startsWith("lstmCell: expected gates of shape [batch, 4 * hidden]"), e.getMessage());
    }
}
