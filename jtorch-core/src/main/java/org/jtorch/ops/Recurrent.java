package org.jtorch.ops;

import java.util.Arrays;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.RecurrentOps;
import org.jtorch.op.Shapes;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;

/**
 * The front ends of the recurrent cells and layers, as ATen's {@code _thnn_fused_lstm_cell} and {@code _thnn_fused_gru_cell}:
 * from the gate pre-activations of the input ({@code x @ W_ih^T + b_ih}) and of the hidden state ({@code h @ W_hh^T + b_hh}),
 * the next state. Float32 and float64 (and autocast's float16 on CUDA) run the declared ops ({@link RecurrentOps}: one fused
 * kernel forward and one backward, a layer direction as one op); other floating dtypes run the same formulas as tensor ops
 * ({@link #lstmCellComposed}, {@link #gruCellComposed}), and so do the backwards under {@code createGraph} (double
 * backward). {@link RecurrentOps} writes out the derivatives.
 */
public final class Recurrent {
    private Recurrent() {}

    /** The next hidden and cell state of an LSTM step. */
    public record LstmStep(Tensor hy, Tensor cy) {}

    // ------------------------------------------------------------------ LSTM

    /**
     * One LSTM step from {@code inputGates} and {@code hiddenGates} ({@code [b, 4h]}, gates {@code i, f, g, o})
     * and the cell state {@code cx} ({@code [b, h]}).
     */
    public static LstmStep lstmCell(Tensor inputGates, Tensor hiddenGates, Tensor cx) {
        checkGates("lstmCell", inputGates, hiddenGates, cx, 4);
        if (!fused(cx)) return lstmCellComposed(inputGates, hiddenGates, cx);
        Tensor[] out = Dispatcher.callAll(RecurrentOps.LSTM_CELL, new Tensor[] {inputGates, hiddenGates, cx});
        out[2].close();
        return new LstmStep(out[0], out[1]);
    }

    /** {@link #lstmCell} as tensor ops (any floating dtype). */
    public static LstmStep lstmCellComposed(Tensor inputGates, Tensor hiddenGates, Tensor cx) {
        checkGates("lstmCell", inputGates, hiddenGates, cx, 4);
        try (MemoryScope scope = new MemoryScope()) {
            List<Tensor> gates = inputGates.add(hiddenGates).chunk(4, 1);
            Tensor i = gates.get(0).sigmoid(), f = gates.get(1).sigmoid(), g = gates.get(2).tanh(), o = gates.get(3).sigmoid();
            Tensor cy = f.mul(cx).add(i.mul(g));
            Tensor hy = o.mul(cy.tanh());
            return new LstmStep(scope.keep(hy), scope.keep(cy));
        }
    }

    /**
     * Gradient {@code output} (0: the gates, 1: {@code cx}) of the LSTM cell as differentiable ops, for gradients of gradients
     * ({@link RecurrentOps#LSTM_CELL_BACKWARD_COMPOSITE}); {@code ghy} and {@code gcy} may be null (zero).
     */
    static Tensor lstmCellBackwardComposite(Tensor ghy, Tensor gcy, Tensor ig, Tensor hg, Tensor cx, Tensor cy, int output) {
        try (MemoryScope scope = new MemoryScope()) {
            return scope.keep(lstmCellBackwardComposed(ghy, gcy, ig, hg, cx, cy, output == 1)[output == 0 ? 0 : 2]);
        }
    }

    private static Tensor[] lstmCellBackwardComposed(Tensor ghy, Tensor gcy, Tensor ig, Tensor hg, Tensor cx, Tensor cy, boolean needCx) {
        List<Tensor> gates = ig.add(hg).chunk(4, 1);
        Tensor i = gates.get(0).sigmoid(), f = gates.get(1).sigmoid(), g = gates.get(2).tanh(), o = gates.get(3).sigmoid();
        Tensor tc = cy.tanh();
        Tensor dh = ghy != null ? ghy : Torch.zerosLike(cx);
        Tensor dc = dh.mul(o).mul(tc.mul(tc).rsub(1));
        if (gcy != null) dc = dc.add(gcy);
        Tensor grad = Torch.cat(List.of(dc.mul(g).mul(i).mul(i.rsub(1)), dc.mul(cx).mul(f).mul(f.rsub(1)),
                dc.mul(i).mul(g.mul(g).rsub(1)), dh.mul(tc).mul(o).mul(o.rsub(1))), 1);
        return new Tensor[] {grad, grad, needCx ? dc.mul(f) : null};
    }

    // ------------------------------------------------------------------ whole layers

    /**
     * The rows of one layer direction ({@code [steps * batch, hidden]}) and its final states ({@code [batch, hidden]};
     * {@code cN} null for a GRU).
     */
    public record Layer(Tensor output, Tensor hN, Tensor cN) {}

    /**
     * One direction of one LSTM layer over {@code steps} time steps of {@code batch} rows each ({@code x}: {@code [steps
     * * batch, in]}, time-major), from {@code h0} and {@code c0} ({@code [batch, hidden]}); {@code reverse} runs from the
     * last step to the first. The same values as {@link #lstmCell} step after step, recorded as one autograd node, as
     * oneDNN's and cuDNN's RNN layers: its backward runs the cells back in time (each step's hidden gradient one
     * {@code [batch, 4h] x [4h, h]} product), keeps every step's gate gradients, and then forms the weight and bias
     * gradients and the input gradient as one product each over the whole sequence, where the per-step graph formed
     * and accumulated one short ({@code k = batch}) product per step and weight. Float32 and float64 only, as the
     * fused cells; double backward (a backward under {@code createGraph}) recomputes the layer as differentiable ops.
     */
    public static Layer lstmLayer(Tensor x, Tensor wIh, Tensor wHh, Tensor bIh, Tensor bHh, Tensor h0, Tensor c0, int steps,
                                  boolean reverse) {
        Arguments.nonNull("lstmLayer", "c0", c0);
        return layer(true, x, wIh, wHh, bIh, bHh, h0, c0, steps, reverse);
    }

    /** {@link #lstmLayer} for a GRU layer ({@link #gruCell} step after step), from {@code h0}. */
    public static Layer gruLayer(Tensor x, Tensor wIh, Tensor wHh, Tensor bIh, Tensor bHh, Tensor h0, int steps, boolean reverse) {
        return layer(false, x, wIh, wHh, bIh, bHh, h0, null, steps, reverse);
    }

    private static Layer layer(boolean lstm, Tensor x, Tensor wIh, Tensor wHh, Tensor bIh, Tensor bHh, Tensor h0, Tensor c0, int steps,
                               boolean reverse) {
        final String op = lstm ? "lstmLayer" : "gruLayer";
        Arguments.nonNull(op, "x", x);
        Arguments.nonNull(op, "wIh", wIh);
        Arguments.nonNull(op, "wHh", wHh);
        Arguments.nonNull(op, "h0", h0);
        int gates = lstm ? 4 : 3;
        long batch = h0.size(0), hidden = wHh.size(1);
        boolean shapes = steps >= 1 && x.dim() == 2 && x.size(0) == steps * batch && wHh.size(0) == gates * hidden && h0.dim() == 2
                && h0.size(1) == hidden && (c0 == null || c0.dim() == 2 && c0.size(0) == batch && c0.size(1) == hidden);
        if (!fused(h0) || !shapes) {
            throw new IllegalArgumentException(op + ": expected float32 or float64 rows [steps * batch, in] and states [batch, hidden]"
                    + " with weight_hh [" + gates + " * hidden, hidden], got x " + Shapes.format(x.shape()) + " (" + steps
                    + " steps), weight_hh " + Shapes.format(wHh.shape()) + ", h0 " + Shapes.format(h0.shape())
                    + (c0 == null ? "" : " and c0 " + Shapes.format(c0.shape())) + " of " + h0.dtype());
        }
        Tensor[] inputs = lstm ? new Tensor[] {x, wIh, wHh, bIh, bHh, h0, c0} : new Tensor[] {x, wIh, wHh, bIh, bHh, h0};
        Tensor[] out = Dispatcher.callAll(lstm ? RecurrentOps.LSTM_LAYER : RecurrentOps.GRU_LAYER, inputs, steps, reverse ? 1 : 0);
        for (int i = lstm ? 3 : 2; i < out.length; i++) out[i].close();
        return new Layer(out[0], out[1], lstm ? out[2] : null);
    }

    /**
     * Gradient {@code output} (0 input, 1-2 weights, 3-4 biases, 5 h0, 6 c0) of a fused layer as differentiable ops, for
     * gradients of gradients ({@link RecurrentOps#RNN_LAYER_BACKWARD_COMPOSITE}): {@code in} is {@code grad_output, grad_hy,
     * input, weight_ih, weight_hh, bias_ih, bias_hh, h0}, then for an LSTM {@code grad_cy, c0}; the gradients may be null.
     */
    static Tensor layerBackwardComposite(Tensor[] in, int steps, boolean reverse, int output) {
        boolean lstm = in.length > 8;
        Tensor h0 = in[7];
        LayerSaved v = new LayerSaved(lstm, in[2], in[3], in[4], in[5], in[6], h0, lstm ? in[9] : null, null, steps, h0.size(0), reverse);
        boolean[] need = new boolean[7];
        need[output] = true;
        try (MemoryScope scope = new MemoryScope()) {
            return scope.keep(layerBackwardComposed(v, in[0], in[1], lstm ? in[8] : null, need)[output]);
        }
    }

    /** What the composite backward of a layer reads: its inputs, and its output where it has one. */
    private record LayerSaved(boolean lstm, Tensor x, Tensor wIh, Tensor wHh, Tensor bIh, Tensor bHh, Tensor h0, Tensor c0, Tensor y,
                              int steps, long batch, boolean reverse) {
        Tensor rows(Tensor t, int step) {
            return t.narrow(0, step * batch, batch);
        }

        /** The time step at position {@code s} in the forward's order. */
        int step(int s) {
            return reverse ? steps - 1 - s : s;
        }
    }

    /**
     * The backward as differentiable ops, for a backward under {@code createGraph}: the layer is recomputed from its
     * saved inputs, and each step's gate gradients come from the cells' composed backward formulas.
     */
    private static Tensor[] layerBackwardComposed(LayerSaved v, Tensor gY, Tensor ghN, Tensor gcN, boolean[] need) {
        Tensor gx = Torch.linear(v.x, v.wIh, v.bIh);
        int n = v.steps;
        Tensor[] ig = new Tensor[n], hg = new Tensor[n], hx = new Tensor[n], cx = new Tensor[n], cy = new Tensor[n], hy = new Tensor[n];
        Tensor h = v.h0, c = v.c0;
        for (int s = 0; s < n; s++) {
            int t = v.step(s);
            ig[t] = v.rows(gx, t);
            hg[t] = Torch.linear(h, v.wHh, v.bHh);
            hx[t] = h;
            if (v.lstm) {
                LstmStep step = lstmCellComposed(ig[t], hg[t], c);
                cx[t] = c;
                c = cy[t] = step.cy();
                h = step.hy();
            } else {
                h = gruCellComposed(ig[t], hg[t], h);
            }
            hy[t] = h;
        }
        Tensor[] inputGates = new Tensor[n], hiddenGates = new Tensor[n];
        Tensor dh = ghN != null ? ghN : Torch.zerosLike(v.h0), dc = gcN != null ? gcN : v.lstm ? Torch.zerosLike(v.c0) : null;
        for (int s = n - 1; s >= 0; s--) {
            int t = v.step(s);
            Tensor ghy = gY == null ? dh : dh.add(v.rows(gY, t));
            if (v.lstm) {
                Tensor[] g = lstmCellBackwardComposed(ghy, dc, ig[t], hg[t], cx[t], cy[t], true);
                inputGates[t] = hiddenGates[t] = g[0];
                dc = g[2];
                dh = g[0].mm(v.wHh);
            } else {
                Tensor[] g = gruCellBackwardComposed(ghy, ig[t], hg[t], hx[t], true);
                inputGates[t] = g[0];
                hiddenGates[t] = g[1];
                dh = g[2].add(g[1].mm(v.wHh));
            }
        }
        Tensor in = Torch.cat(List.of(inputGates), 0);
        Tensor hid = v.lstm ? in : Torch.cat(List.of(hiddenGates), 0);
        LayerSaved recomputed = new LayerSaved(v.lstm, v.x, v.wIh, v.wHh, v.bIh, v.bHh, v.h0, v.c0, Torch.cat(List.of(hy), 0), n, v.batch,
                v.reverse);
        return layerGradients(recomputed, in, hid, dh, dc, need);
    }

    /**
     * The gradients of the layer's inputs from every step's input-side and hidden-side gate gradients ({@code [steps *
     * batch, k h]}; one tensor for an LSTM): each step's hidden product read the previous step's output (in the
     * forward's order), the first read {@code h0}.
     */
    private static Tensor[] layerGradients(LayerSaved v, Tensor inputGates, Tensor hiddenGates, Tensor dh0, Tensor dc0, boolean[] need) {
        Tensor[] g = new Tensor[7];
        if (need[0]) g[0] = inputGates.mm(v.wIh);
        if (need[1]) g[1] = inputGates.t().mm(v.x);
        if (need[2]) {
            long later = (v.steps - 1) * v.batch;
            Tensor fromH0 = v.rows(hiddenGates, v.step(0)).t().mm(v.h0);
            g[2] = later == 0 ? fromH0
                    : Torch.addmm(fromH0, hiddenGates.narrow(0, v.reverse ? 0 : v.batch, later).t(), v.y.narrow(0, v.reverse ? v.batch : 0, later));
        }
        if (need[3]) g[3] = inputGates.sum(0);
        if (need[4]) g[4] = hiddenGates == inputGates && g[3] != null ? g[3] : hiddenGates.sum(0);
        g[5] = need[5] ? dh0 : null;
        g[6] = need[6] ? dc0 : null;
        return g;
    }

    // ------------------------------------------------------------------ GRU

    /**
     * One GRU step from {@code inputGates} and {@code hiddenGates} ({@code [b, 3h]}, gates {@code r, z, n}) and the
     * hidden state {@code hx} ({@code [b, h]}); the hidden side's {@code n} block (bias included) is scaled by
     * {@code r}, as PyTorch's GRU.
     */
    public static Tensor gruCell(Tensor inputGates, Tensor hiddenGates, Tensor hx) {
        checkGates("gruCell", inputGates, hiddenGates, hx, 3);
        if (!fused(hx)) return gruCellComposed(inputGates, hiddenGates, hx);
        Tensor[] out = Dispatcher.callAll(RecurrentOps.GRU_CELL, new Tensor[] {inputGates, hiddenGates, hx});
        out[1].close();
        return out[0];
    }

    /** {@link #gruCell} as tensor ops (any floating dtype). */
    public static Tensor gruCellComposed(Tensor inputGates, Tensor hiddenGates, Tensor hx) {
        checkGates("gruCell", inputGates, hiddenGates, hx, 3);
        try (MemoryScope scope = new MemoryScope()) {
            List<Tensor> in = inputGates.chunk(3, 1), hid = hiddenGates.chunk(3, 1);
            Tensor r = in.get(0).add(hid.get(0)).sigmoid();
            Tensor z = in.get(1).add(hid.get(1)).sigmoid();
            Tensor n = in.get(2).add(r.mul(hid.get(2))).tanh();
            return scope.keep(n.add(z.mul(hx.sub(n))));
        }
    }

    /**
     * Gradient {@code output} (0: the input gates, 1: the hidden gates, 2: {@code hx}) of the GRU cell as differentiable ops,
     * for gradients of gradients ({@link RecurrentOps#GRU_CELL_BACKWARD_COMPOSITE}).
     */
    static Tensor gruCellBackwardComposite(Tensor ghy, Tensor ig, Tensor hg, Tensor hx, int output) {
        try (MemoryScope scope = new MemoryScope()) {
            return scope.keep(gruCellBackwardComposed(ghy, ig, hg, hx, output == 2)[output]);
        }
    }

    private static Tensor[] gruCellBackwardComposed(Tensor ghy, Tensor ig, Tensor hg, Tensor hx, boolean needHx) {
        if (ghy == null) return new Tensor[3];
        List<Tensor> in = ig.chunk(3, 1), hid = hg.chunk(3, 1);
        Tensor r = in.get(0).add(hid.get(0)).sigmoid();
        Tensor z = in.get(1).add(hid.get(1)).sigmoid();
        Tensor hn = hid.get(2);
        Tensor n = in.get(2).add(r.mul(hn)).tanh();
        Tensor dn = ghy.mul(z.rsub(1)).mul(n.mul(n).rsub(1));
        Tensor dz = ghy.mul(hx.sub(n)).mul(z).mul(z.rsub(1));
        Tensor dr = dn.mul(hn).mul(r).mul(r.rsub(1));
        return new Tensor[] {Torch.cat(List.of(dr, dz, dn), 1), Torch.cat(List.of(dr, dz, dn.mul(r)), 1), needHx ? ghy.mul(z) : null};
    }

    // ------------------------------------------------------------------ time steps

    /**
     * {@code x.split(sizes, 0)}: views of consecutive row blocks, one autograd node for all of them ({@code
     * SplitWithSizesBackward0}), whose backward joins the blocks' gradients once. A recurrent layer reads every time step of
     * its input projection once; a {@code narrow} node per step would embed each step's gradient into a zero tensor of the
     * whole sequence, quadratic in its length.
     */
    public static List<Tensor> splitRows(Tensor x, long[] sizes) {
        Arguments.nonNull("splitRows", "x", x);
        Arguments.nonNull("splitRows", "sizes", sizes);
        return x.split(sizes, 0);
    }

    // ------------------------------------------------------------------ helpers

    /** Whether the fused kernels take these operands: float32 or float64 (others run the composed formulas). */
    private static boolean fused(Tensor state) {
        return state.dtype() == DType.FLOAT32 || state.dtype() == DType.FLOAT64;
    }

    private static void checkGates(String op, Tensor inputGates, Tensor hiddenGates, Tensor state, int gates) {
        Arguments.nonNull(op, "inputGates", inputGates);
        Arguments.nonNull(op, "hiddenGates", hiddenGates);
        Arguments.nonNull(op, state == null ? "state" : gates == 4 ? "cx" : "hx", state);
        inputGates.checkOpen(op);
        hiddenGates.checkOpen(op);
        state.checkOpen(op);
        // the fused cell's device layer, for the composed form too (its parts would each name themselves)
        Dispatcher.sameDevice(gates == 4 ? RecurrentOps.LSTM_CELL : RecurrentOps.GRU_CELL, inputGates, hiddenGates, state);
        boolean shapes = state.dim() == 2 && inputGates.dim() == 2 && Arrays.equals(inputGates.shape(), hiddenGates.shape())
                && inputGates.size(0) == state.size(0) && inputGates.size(1) == gates * state.size(1);
        if (!shapes) {
            throw new IllegalArgumentException(op + ": expected gates of shape [batch, " + gates + " * hidden] and a state of shape"
                    + " [batch, hidden], got input gates " + Shapes.format(inputGates.shape()) + ", hidden gates "
                    + Shapes.format(hiddenGates.shape()) + " and state " + Shapes.format(state.shape()));
        }
        if (inputGates.dtype() != state.dtype() || hiddenGates.dtype() != state.dtype() || !state.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": expected gates and state of one floating dtype, got " + inputGates.dtype()
                    + ", " + hiddenGates.dtype() + " and " + state.dtype());
        }
    }
}
