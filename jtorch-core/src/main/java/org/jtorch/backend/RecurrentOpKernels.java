package org.jtorch.backend;

import org.jtorch.op.KernelRegistry;
import org.jtorch.op.LinalgOps;
import org.jtorch.op.OpKernel;
import org.jtorch.op.PointwiseOps;
import org.jtorch.op.RecurrentOps;
import org.jtorch.op.ReduceOp;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The kernels of the declared fused recurrent cells ({@link RecurrentOps}) for one backend, from its {@link RecurrentKernels}
 * over the contiguous operands the dispatcher hands them. Float16 and bfloat16 operands are widened to float32 in scratch
 * memory and the results rounded once (the backends' fused cells take float32 and float64). The layers
 * ({@link RecurrentOps#LSTM_LAYER}, {@link RecurrentOps#GRU_LAYER}) run the backend's GEMM, sum and add kernels as the
 * products, sums and additions they replace ran them, with the fused cells between; the per-step products with the hidden
 * weights run on {@code W_hh} packed once per layer call where the backend packs ({@link LinalgKernels#packRight}), as
 * oneDNN's layers do, instead of a GEMM that packs it again at every step.
 */
public final class RecurrentOpKernels {
    private RecurrentOpKernels() {}

    static void register(Backend backend) {
        Device.Type type = backend.deviceType();
        KernelRegistry.registerMulti(type, RecurrentOps.LSTM_CELL.kernel(), (outs, in, s) -> run(backend, outs, in,
                (k, o, i) -> k.lstmCellForward(i[0], i[1], i[2], o[0], o[1], o[2])));
        KernelRegistry.registerMulti(type, RecurrentOps.LSTM_CELL_BACKWARD.kernel(), (outs, in, s) -> run(backend, outs, in,
                (k, o, i) -> k.lstmCellBackward(i[0], i[1], i[2], i[3], i[4], o[0], o[1])));
        KernelRegistry.registerMulti(type, RecurrentOps.GRU_CELL.kernel(), (outs, in, s) -> run(backend, outs, in,
                (k, o, i) -> k.gruCellForward(i[0], i[1], i[2], o[0], o[1])));
        KernelRegistry.registerMulti(type, RecurrentOps.GRU_CELL_BACKWARD.kernel(), (outs, in, s) -> run(backend, outs, in,
                (k, o, i) -> k.gruCellBackward(i[0], i[1], i[2], o[0], o[1], o[2])));
        KernelRegistry.registerMulti(type, RecurrentOps.LSTM_LAYER.kernel(), (outs, in, s) -> layer(backend, true, outs, in, s));
        KernelRegistry.registerMulti(type, RecurrentOps.GRU_LAYER.kernel(), (outs, in, s) -> layer(backend, false, outs, in, s));
        KernelRegistry.registerMulti(type, RecurrentOps.LSTM_LAYER_BACKWARD.kernel(), (outs, in, s) -> lstmLayerBackward(backend, outs, in, s));
        KernelRegistry.registerMulti(type, RecurrentOps.GRU_LAYER_BACKWARD.kernel(), (outs, in, s) -> gruLayerBackward(backend, outs, in, s));
    }

    private static final double[] NO_SCALARS = {}, PLAIN = {1, 1};

    /** {@code rows} rows of a contiguous matrix from row {@code first}. */
    private static StridedView rows(StridedView m, long first, long rows) {
        return m.restrided(new long[] {rows, m.size(1)}, m.strides(), m.offset() + first * m.stride(0));
    }

    private static StridedView t(StridedView m) {
        return m.permute(1, 0);
    }

    /** The layer's steps in the forward's order: position {@code s} ran time step {@code step(s)}. */
    private record Steps(int steps, long batch, boolean reverse) {
        static Steps of(double[] scalars, long batch) {
            return new Steps((int) scalars[0], batch, scalars[1] != 0);
        }

        int step(int s) {
            return reverse ? steps - 1 - s : s;
        }

        StridedView at(StridedView m, int s) {
            return rows(m, (long) step(s) * batch, batch);
        }

        /** The rows {@code [first, first + count)} of the batch at position {@code s}. */
        StridedView at(StridedView m, int s, long first, long count) {
            return rows(m, (long) step(s) * batch + first, count);
        }

        /** Multiply-adds of the layer's hidden products ({@code [batch, hidden] x [hidden, gates]} a step). */
        long work(StridedView wHh) {
            return steps * batch * wHh.size(0) * wHh.size(1);
        }
    }

    /**
     * The forward of one layer direction: the input gates of the whole sequence as one GEMM, then per step the hidden gates
     * ({@code h @ W_hh^T + b_hh}) and the fused cell, writing that step's rows of the output (and of the cell states and the
     * workspace); the final states copied out. Blocks of batch rows run every step on their own where the backend splits
     * them ({@link RecurrentKernels#forBatchBlocks}).
     */
    private static void layer(Backend backend, boolean lstm, StridedView[] outs, StridedView[] in, double[] scalars) {
        StridedView x = in[0], wIh = in[1], wHh = in[2], bIh = in[3], bHh = in[4], h0 = in[5], c0 = lstm ? in[6] : null;
        Steps steps = Steps.of(scalars, h0.size(0));
        StridedView y = outs[0], hN = outs[1], cN = lstm ? outs[2] : null, cs = lstm ? outs[3] : null, ws = outs[lstm ? 4 : 2];
        RecurrentKernels k = backend.recurrent();
        try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
            StridedView gx = scratch.allocate(x.device(), new long[] {x.size(0), wIh.size(0)}, h0.dtype());
            StridedView hg = scratch.allocate(x.device(), new long[] {steps.batch(), wHh.size(0)}, h0.dtype());
            LinalgOpKernels.linear(backend, x, wIh, bIh, gx, null);
            try (LinalgKernels.PackedRight wHhT = backend.linalg().packRight(t(wHh))) {
                k.forBatchBlocks(steps.batch(), steps.work(wHh), (first, end) -> {
                    long n = end - first;
                    StridedView h = rows(h0, first, n), c = lstm ? rows(c0, first, n) : null, gates = rows(hg, first, n);
                    for (int s = 0; s < steps.steps(); s++) {
                        hiddenGates(backend, h, wHh, wHhT, bHh, gates);
                        StridedView yt = steps.at(y, s, first, n);
                        if (lstm) {
                            StridedView ct = steps.at(cs, s, first, n);
                            k.lstmCellForward(steps.at(gx, s, first, n), gates, c, yt, ct, steps.at(ws, s, first, n));
                            c = ct;
                        } else {
                            k.gruCellForward(steps.at(gx, s, first, n), gates, h, yt, steps.at(ws, s, first, n));
                        }
                        h = yt;
                    }
                });
            }
            int last = steps.steps() - 1;
            backend.copy(steps.at(y, last), hN);
            if (lstm) backend.copy(steps.at(cs, last), cN);
        }
    }

    /** The LSTM layer's backward: the cells back in time through the fused kernel, then one product per weight. */
    private static void lstmLayerBackward(Backend backend, StridedView[] outs, StridedView[] in, double[] scalars) {
        StridedView gY = in[0], ghN = in[1], gcN = in[2], x = in[3], wIh = in[4], wHh = in[5], h0 = in[6], c0 = in[7], y = in[8];
        StridedView cs = in[9], ws = in[10];
        long mask = (long) scalars[2];
        Steps steps = Steps.of(scalars, h0.size(0));
        RecurrentKernels k = backend.recurrent();
        try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
            Device device = h0.device();
            DType dtype = h0.dtype();
            long[] state = h0.shape();
            StridedView gates = scratch.allocate(device, ws.shape(), dtype);
            StridedView dhN = ghN != null ? ghN : zeros(backend, scratch, state, h0);
            StridedView dcN = gcN != null ? gcN : zeros(backend, scratch, state, h0);
            StridedView ghy = gY == null ? null : scratch.allocate(device, state, dtype);
            // Two cell-state gradients in turn (a step reads the one the step after it wrote), one hidden-state gradient
            // (read by the step's cell backward before the product overwrites it): no allocation per step. Allocated before
            // the batch blocks start, which write disjoint rows of them.
            StridedView[] gc = {scratch.allocate(device, state, dtype), scratch.allocate(device, state, dtype)};
            StridedView dhNext = scratch.allocate(device, state, dtype);
            try (LinalgKernels.PackedRight packedWHh = backend.linalg().packRight(wHh)) {
                k.forBatchBlocks(steps.batch(), steps.work(wHh), (first, end) -> {
                    long n = end - first;
                    StridedView dh = rows(dhN, first, n), dc = rows(dcN, first, n);
                    for (int s = steps.steps() - 1; s >= 0; s--) {
                        StridedView stepGrad = stepGradient(backend, steps, s, first, dh, gY, ghy);
                        StridedView cx = s == 0 ? rows(c0, first, n) : steps.at(cs, s - 1, first, n);
                        StridedView gt = steps.at(gates, s, first, n);
                        StridedView gcx = rows(s == 0 && (mask & 1 << 6) != 0 ? outs[5] : gc[s & 1], first, n);
                        k.lstmCellBackward(stepGrad, dc, cx, steps.at(cs, s, first, n), steps.at(ws, s, first, n), gt, gcx);
                        dc = gcx;
                        if (s > 0) {
                            dh = rows(dhNext, first, n);
                            hiddenGradient(backend, null, gt, wHh, packedWHh, dh);
                        } else if ((mask & 1 << 5) != 0) {
                            hiddenGradient(backend, null, gt, wHh, packedWHh, rows(outs[4], first, n));
                        }
                    }
                });
            }
            layerGradients(backend, scratch, steps, mask, x, wIh, h0, y, gates, gates, outs);
        }
    }

    /** The GRU layer's backward, as the LSTM's; the hidden state also gets {@code z}'s direct share. */
    private static void gruLayerBackward(Backend backend, StridedView[] outs, StridedView[] in, double[] scalars) {
        StridedView gY = in[0], ghN = in[1], x = in[2], wIh = in[3], wHh = in[4], h0 = in[5], y = in[6], ws = in[7];
        long mask = (long) scalars[2];
        Steps steps = Steps.of(scalars, h0.size(0));
        RecurrentKernels k = backend.recurrent();
        try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
            Device device = h0.device();
            DType dtype = h0.dtype();
            long[] state = h0.shape(), gateShape = {ws.size(0), wHh.size(0)};
            StridedView inputGates = scratch.allocate(device, gateShape, dtype), hiddenGates = scratch.allocate(device, gateShape, dtype);
            StridedView dhN = ghN != null ? ghN : zeros(backend, scratch, state, h0);
            StridedView ghy = gY == null ? null : scratch.allocate(device, state, dtype);
            // One buffer each for the step's direct hidden gradient and the next hidden-state gradient, as the LSTM's.
            StridedView ghxAll = scratch.allocate(device, state, dtype);
            StridedView dhNext = scratch.allocate(device, state, dtype);
            try (LinalgKernels.PackedRight packedWHh = backend.linalg().packRight(wHh)) {
                k.forBatchBlocks(steps.batch(), steps.work(wHh), (first, end) -> {
                    long n = end - first;
                    StridedView dh = rows(dhN, first, n), ghx = rows(ghxAll, first, n);
                    for (int s = steps.steps() - 1; s >= 0; s--) {
                        StridedView stepGrad = stepGradient(backend, steps, s, first, dh, gY, ghy);
                        StridedView hx = s == 0 ? rows(h0, first, n) : steps.at(y, s - 1, first, n);
                        StridedView gh = steps.at(hiddenGates, s, first, n);
                        k.gruCellBackward(stepGrad, hx, steps.at(ws, s, first, n), steps.at(inputGates, s, first, n), gh, ghx);
                        if (s > 0) {
                            dh = rows(dhNext, first, n);
                            hiddenGradient(backend, ghx, gh, wHh, packedWHh, dh);
                        } else if ((mask & 1 << 5) != 0) {
                            hiddenGradient(backend, ghx, gh, wHh, packedWHh, rows(outs[5], first, n));
                        }
                    }
                });
            }
            layerGradients(backend, scratch, steps, mask, x, wIh, h0, y, inputGates, hiddenGates, outs);
        }
    }

    /**
     * The gradients of the layer's input, weights and biases from every step's input-side and hidden-side gate gradients
     * ({@code [steps * batch, k h]}; one matrix for an LSTM, whose two biases share one gradient, {@code outs[3]}): each step's
     * hidden product read the previous step's output (in the forward's order), the first read {@code h0}.
     */
    private static void layerGradients(Backend backend, ConvolutionOpKernels.Scratch scratch, Steps steps, long mask, StridedView x,
                                       StridedView wIh, StridedView h0, StridedView y, StridedView inputGates, StridedView hiddenGates,
                                       StridedView[] outs) {
        if ((mask & 1) != 0) mm(backend, inputGates, wIh, outs[0]);
        if ((mask & 1 << 1) != 0) mm(backend, t(inputGates), x, outs[1]);
        if ((mask & 1 << 2) != 0) {
            long later = (long) (steps.steps() - 1) * steps.batch();
            StridedView first = steps.at(hiddenGates, 0);
            if (later == 0) {
                mm(backend, t(first), h0, outs[2]);
            } else {
                StridedView fromH0 = scratch.allocate(h0.device(), outs[2].shape(), h0.dtype());
                mm(backend, t(first), h0, fromH0);
                addmm(backend, fromH0, t(rows(hiddenGates, steps.reverse() ? 0 : steps.batch(), later)),
                        rows(y, steps.reverse() ? steps.batch() : 0, later), outs[2]);
            }
        }
        boolean shared = inputGates == hiddenGates;
        if ((mask & (shared ? 3L << 3 : 1L << 3)) != 0) sumRows(backend, inputGates, outs[3]);
        if (!shared && (mask & 1 << 4) != 0) sumRows(backend, hiddenGates, outs[4]);
    }

    /**
     * A step's hidden gates {@code h @ W_hh^T + b_hh} ({@code b_hh} may be null): on {@code W_hh^T} packed once for the layer
     * where the backend packs ({@code wHhT} not null; the bias copied in first, as the linear kernel does), else the linear kernel.
     */
    private static void hiddenGates(Backend backend, StridedView h, StridedView wHh, LinalgKernels.PackedRight wHhT, StridedView bHh,
                                    StridedView out) {
        if (wHhT == null) {
            LinalgOpKernels.linear(backend, h, wHh, bHh, out, null);
            return;
        }
        if (bHh != null) backend.copy(bHh.expand("linear", out.shape()), out);
        wHhT.multiply(h, out, 1, bHh != null ? 1 : 0);
    }

    /**
     * A step's gradient of the previous hidden state, {@code direct + g @ W_hh} ({@code direct} null for none): on
     * {@code W_hh} packed once for the layer where the backend packs ({@code packed} not null), else the mm or addmm kernel.
     */
    private static void hiddenGradient(Backend backend, StridedView direct, StridedView g, StridedView wHh, LinalgKernels.PackedRight packed,
                                       StridedView out) {
        if (packed == null) {
            if (direct == null) mm(backend, g, wHh, out);
            else addmm(backend, direct, g, wHh, out);
            return;
        }
        if (direct != null) backend.copy(direct, out);
        packed.multiply(g, out, 1, direct != null ? 1 : 0);
    }

    /**
     * The gradient of the output of the step at position {@code s} in the batch rows from {@code first} ({@code dh}'s rows):
     * what flowed back from the later steps ({@code dh}), plus those rows of the output's own gradient where it has one
     * (written into the same rows of {@code into}).
     */
    private static StridedView stepGradient(Backend backend, Steps steps, int s, long first, StridedView dh, StridedView gY,
                                            StridedView into) {
        if (gY == null) return dh;
        long n = dh.size(0);
        StridedView out = rows(into, first, n);
        add(backend, dh, steps.at(gY, s, first, n), out);
        return out;
    }

    private static StridedView zeros(Backend backend, ConvolutionOpKernels.Scratch scratch, long[] shape, StridedView like) {
        StridedView z = scratch.allocate(like.device(), shape, like.dtype());
        backend.fill(z, 0, 0);
        return z;
    }

    /** {@code out = a @ b}: the kernel of {@link LinalgOps#MM}, as {@code Tensor.mm} runs it. */
    private static void mm(Backend backend, StridedView a, StridedView b, StridedView out) {
        OpKernel k = KernelRegistry.kernel(LinalgOps.MM, backend.deviceType());
        k.run(out, new StridedView[] {a, b}, NO_SCALARS);
    }

    /** {@code out = c + a @ b}: the kernel of {@link LinalgOps#ADDMM}, as {@code Torch.addmm} runs it. */
    private static void addmm(Backend backend, StridedView c, StridedView a, StridedView b, StridedView out) {
        OpKernel k = KernelRegistry.kernel(LinalgOps.ADDMM, backend.deviceType());
        k.run(out, new StridedView[] {c, a, b}, PLAIN);
    }

    /** {@code out = a + b} of one floating dtype: the kernel of {@link PointwiseOps#ADD}. */
    private static void add(Backend backend, StridedView a, StridedView b, StridedView out) {
        KernelRegistry.pointwise(PointwiseOps.ADD, backend.deviceType()).run(out.device().index(), out.dtype(), out, a, b, 1, 0);
    }

    /** {@code out = m.sum(0)}: the backend's sum, its output broadcast along the summed rows as reductions take it. */
    private static void sumRows(Backend backend, StridedView m, StridedView out) {
        StridedView broadcast = out.restrided(m.shape(), new long[] {0, out.stride(0)}, out.offset());
        backend.reductions().reduce(ReduceOp.SUM, m, broadcast, 0);
    }

    /** One call of a backend's fused cell kernel on its outputs and inputs (null where an optional gradient is absent). */
    @FunctionalInterface
    private interface Cell {
        void run(RecurrentKernels k, StridedView[] outs, StridedView[] in);
    }

    private static void run(Backend backend, StridedView[] outs, StridedView[] in, Cell cell) {
        DType dtype = outs[0].dtype(), compute = RecurrentOps.computeType(dtype);
        if (compute == dtype) {
            cell.run(backend.recurrent(), outs, in);
            return;
        }
        try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
            StridedView[] wide = new StridedView[in.length];
            for (int i = 0; i < in.length; i++) if (in[i] != null) wide[i] = scratch.operand(in[i], compute, in[i].shape());
            StridedView[] r = new StridedView[outs.length];
            for (int j = 0; j < outs.length; j++) r[j] = scratch.result(outs[j], compute);
            cell.run(backend.recurrent(), r, wide);
            for (int j = 0; j < outs.length; j++) scratch.finish(r[j], outs[j]);
        }
    }
}
