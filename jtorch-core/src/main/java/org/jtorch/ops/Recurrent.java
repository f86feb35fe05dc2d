package org.jtorch.ops;

import static org.jtorch.ops.Dispatcher.view;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Grad;
import org.jtorch.autograd.SavedTensor;
import org.jtorch.backend.Backends;
import org.jtorch.backend.RecurrentKernels;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.RecurrentOps;
import org.jtorch.op.Shapes;

/**
 * The pointwise part of recurrent cells, as ATen's {@code _thnn_fused_lstm_cell} and {@code _thnn_fused_gru_cell}:
 * from the gate pre-activations of the input ({@code x @ W_ih^T + b_ih}) and of the hidden state
 * ({@code h @ W_hh^T + b_hh}), the next state. Float32 and float64 run one fused kernel forward and one backward
 * ({@link RecurrentKernels}); other floating dtypes, and the backward under {@code createGraph} (double backward),
 * run the same formulas as tensor ops ({@link #lstmCellComposed}, {@link #gruCellComposed}).
 *
 * <p>Derivatives (as derivatives.yaml's {@code _thnn_differentiable_lstm_cell_backward}): with activated gates
 * {@code i, f, g, o} and {@code dc = gcy + ghy * o * (1 - tanh(cy)^2)}, the gate gradient is {@code [dc g i(1-i),
 * dc cx f(1-f), dc i (1-g^2), ghy tanh(cy) o(1-o)]} and {@code gcx = dc f}; both gate inputs receive it. GRU:
 * {@code dn = ghy (1-z)(1-n^2)}, {@code dz = ghy (hx-n) z(1-z)}, {@code dr = dn hn r(1-r)}; the input gates get
 * {@code [dr, dz, dn]}, the hidden gates {@code [dr, dz, dn r]}, and {@code ghx = ghy z}.
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
        DType dtype = h0.dtype();
        Device device = h0.device();
        RecurrentKernels kernels = Backends.of(device).recurrent();
        Tensor y = Tensor.empty(new long[] {steps * batch, hidden}, dtype, device);
        Tensor cs = lstm ? Tensor.empty(new long[] {steps * batch, hidden}, dtype, device) : null;
        Tensor ws = Tensor.empty(new long[] {steps * batch, 4 * hidden}, dtype, device);
        Tensor hN, cN = null;
        try (MemoryScope scope = new MemoryScope(); Grad.Mode g = Grad.noGrad()) {
            Tensor gx = Torch.linear(x, wIh, bIh);
            Tensor h = h0.contiguous(), c = lstm ? c0.contiguous() : null;
            for (int s = 0; s < steps; s++) {
                long row = (reverse ? steps - 1 - s : s) * batch;
                Tensor hg = Torch.linear(h, wHh, bHh);
                Tensor yt = y.narrow(0, row, batch);
                if (lstm) {
                    Tensor ct = cs.narrow(0, row, batch);
                    kernels.lstmCellForward(view(gx.narrow(0, row, batch)), view(hg), view(c), view(yt), view(ct),
                            view(ws.narrow(0, row, batch)));
                    c = ct;
                } else {
                    kernels.gruCellForward(view(gx.narrow(0, row, batch)), view(hg), view(h), view(yt), view(ws.narrow(0, row, batch)));
                }
                hg.close();
                h = yt;
            }
            hN = scope.keep(h.clone());
            if (lstm) cN = scope.keep(c.clone());
        }
        if (Autograd.needsGrad(x, wIh, wHh, bIh, bHh, h0, c0)) {
            boolean[] need = {x.requiresGrad(), wIh.requiresGrad(), wHh.requiresGrad(), bIh != null && bIh.requiresGrad(),
                    bHh != null && bHh.requiresGrad(), h0.requiresGrad(), c0 != null && c0.requiresGrad()};
            SavedTensor sX = Autograd.save(x), sWih = Autograd.save(wIh), sWhh = Autograd.save(wHh), sH0 = Autograd.save(h0),
                    sY = Autograd.save(y), sWs = Autograd.save(ws);
            SavedTensor sC0 = lstm ? Autograd.save(c0) : null, sCs = lstm ? Autograd.save(cs) : null;
            SavedTensor sBih = bIh == null ? null : Autograd.save(bIh), sBhh = bHh == null ? null : Autograd.save(bHh);
            SavedTensor[] saved = java.util.stream.Stream.of(sX, sWih, sWhh, sH0, sC0, sY, sCs, sWs, sBih, sBhh)
                    .filter(java.util.Objects::nonNull).toArray(SavedTensor[]::new);
            Tensor[] outputs = lstm ? new Tensor[] {y, hN, cN} : new Tensor[] {y, hN};
            Autograd.record(lstm ? "LstmLayerBackward0" : "GruLayerBackward0", new Tensor[] {x, wIh, wHh, bIh, bHh, h0, c0}, outputs, gr -> {
                LayerSaved v = new LayerSaved(lstm, sX.get(), sWih.get(), sWhh.get(), sBih == null ? null : sBih.get(),
                        sBhh == null ? null : sBhh.get(), sH0.get(), lstm ? sC0.get() : null, sY.get(), steps, batch, reverse);
                Tensor gY = gr[0], ghN = gr[1], gcN = lstm ? gr[2] : null;
                if (Grad.isEnabled()) return layerBackwardComposed(v, gY, ghN, gcN, need);
                return lstm ? lstmLayerBackward(v, sCs.get(), sWs.get(), gY, ghN, gcN, need, kernels)
                        : gruLayerBackward(v, sWs.get(), gY, ghN, need, kernels);
            }, saved);
        }
        ws.close();
        if (cs != null) cs.close();
        return new Layer(y, hN, cN);
    }

    /** What a layer's backward reads besides the fused cells' intermediates. */
    private record LayerSaved(boolean lstm, Tensor x, Tensor wIh, Tensor wHh, Tensor bIh, Tensor bHh, Tensor h0, Tensor c0, Tensor y,
                              int steps, long batch, boolean reverse) {
        Tensor rows(Tensor t, int step) {
            return t.narrow(0, step * batch, batch);
        }

        /** The time step at position {@code s} in the forward's order. */
        int step(int s) {
            return reverse ? steps - 1 - s : s;
        }

        /** The hidden state the step at position {@code s} read: {@code h0}, or the output of the step before. */
        Tensor hiddenBefore(int s) {
            return s == 0 ? h0 : rows(y, step(s - 1));
        }

        Tensor zeroState() {
            return Torch.zeros(new long[] {batch, wHh.size(1)}, h0.dtype(), h0.device());
        }
    }

    /** The fused LSTM backward: cells back in time through the kernels, then one product per weight over the sequence. */
    private static Tensor[] lstmLayerBackward(LayerSaved v, Tensor cs, Tensor ws, Tensor gY, Tensor ghN, Tensor gcN, boolean[] need,
                                              RecurrentKernels kernels) {
        long hidden = v.wHh.size(1);
        Tensor gates = Tensor.empty(new long[] {v.steps * v.batch, 4 * hidden}, v.y.dtype(), v.y.device());
        Tensor dh = ghN != null ? ghN.contiguous() : v.zeroState();
        Tensor dc = gcN != null ? gcN.contiguous() : v.zeroState();
        for (int s = v.steps - 1; s >= 0; s--) {
            int t = v.step(s);
            Tensor ghy = gY == null ? dh : dh.add(v.rows(gY, t));
            Tensor cx = s == 0 ? v.c0.contiguous() : v.rows(cs, v.step(s - 1));
            Tensor gt = v.rows(gates, t);
            Tensor gcx = Tensor.empty(new long[] {v.batch, hidden}, v.y.dtype(), v.y.device());
            kernels.lstmCellBackward(view(ghy), view(dc), view(cx), view(v.rows(cs, t)), view(v.rows(ws, t)), view(gt), view(gcx));
            dc = gcx;
            if (s > 0 || need[5]) dh = gt.mm(v.wHh);
        }
        return layerGradients(v, gates, gates, dh, dc, need);
    }

    /** The fused GRU backward, as {@link #lstmLayerBackward}; the hidden state also gets {@code z}'s direct share. */
    private static Tensor[] gruLayerBackward(LayerSaved v, Tensor ws, Tensor gY, Tensor ghN, boolean[] need, RecurrentKernels kernels) {
        long hidden = v.wHh.size(1);
        long[] gateShape = {v.steps * v.batch, 3 * hidden};
        Tensor inputGates = Tensor.empty(gateShape, v.y.dtype(), v.y.device()), hiddenGates = Tensor.empty(gateShape, v.y.dtype(), v.y.device());
        Tensor dh = ghN != null ? ghN.contiguous() : v.zeroState();
        for (int s = v.steps - 1; s >= 0; s--) {
            int t = v.step(s);
            Tensor ghy = gY == null ? dh : dh.add(v.rows(gY, t));
            Tensor ghx = Tensor.empty(new long[] {v.batch, hidden}, v.y.dtype(), v.y.device());
            Tensor gh = v.rows(hiddenGates, t);
            kernels.gruCellBackward(view(ghy), view(v.hiddenBefore(s).contiguous()), view(v.rows(ws, t)), view(v.rows(inputGates, t)),
                    view(gh), view(ghx));
            dh = s > 0 || need[5] ? Torch.addmm(ghx, gh, v.wHh) : ghx;
        }
        return layerGradients(v, inputGates, hiddenGates, dh, null, need);
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
     * {@code x.split(sizes, 0)} (views of consecutive row blocks), recorded as one node whose backward
     * concatenates the blocks' gradients (zeros where a block got none), as PyTorch's {@code SplitWithSizesBackward0}.
     * A recurrent layer reads every time step of its input projection once; a {@code narrow} node per step
     * would embed each step's gradient into a zero tensor of the whole sequence, quadratic in its length.
     */
    public static List<Tensor> splitRows(Tensor x, long[] sizes) {
        Arguments.nonNull("splitRows", "x", x);
        Arguments.nonNull("splitRows", "sizes", sizes);
        if (!Autograd.needsGrad(x)) return x.split(sizes, 0);
        List<Tensor> steps;
        try (Grad.Mode g = Grad.noGrad()) {
            steps = x.split(sizes, 0);
        }
        DType dtype = x.dtype();
        Device device = x.device();
        long[][] shapes = new long[steps.size()][];
        for (int i = 0; i < shapes.length; i++) shapes[i] = steps.get(i).shape();
        Autograd.record("SplitWithSizesBackward0", new Tensor[] {x}, steps.toArray(new Tensor[0]), gr -> {
            List<Tensor> parts = new ArrayList<>(gr.length);
            try (MemoryScope scope = new MemoryScope()) {
                for (int i = 0; i < gr.length; i++) parts.add(gr[i] != null ? gr[i] : Torch.zeros(shapes[i], dtype, device));
                return new Tensor[] {scope.keep(Torch.cat(parts, 0))};
            }
        });
        return steps;
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
        if (!inputGates.device().equals(state.device()) || !hiddenGates.device().equals(state.device())) {
            throw new IllegalArgumentException(op + ": expected gates and state on one device, got " + inputGates.device() + ", "
                    + hiddenGates.device() + " and " + state.device());
        }
    }

    private static Tensor contiguousOrNull(Tensor t) {
        return t == null ? null : t.contiguous();
    }

    /** Closes the contiguous copies made of arguments (not the arguments themselves). */
    private static void closeTemporaries(Tensor... pairs) {
        for (int i = 0; i < pairs.length; i += 2) if (pairs[i + 1] != pairs[i]) pairs[i + 1].close();
    }
}
