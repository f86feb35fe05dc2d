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
        final String op = "lstmCell";
        checkGates(op, inputGates, hiddenGates, cx, 4);
        if (!fused(cx)) return lstmCellComposed(inputGates, hiddenGates, cx);
        long[] stateShape = cx.shape();
        Device device = cx.device();
        DType dtype = cx.dtype();
        Tensor ig = inputGates.contiguous(), hg = hiddenGates.contiguous(), c0 = cx.contiguous();
        Tensor hy = Tensor.empty(stateShape, dtype, device), cy = Tensor.empty(stateShape, dtype, device);
        Tensor ws = Tensor.empty(inputGates.shape(), dtype, device);
        Backends.of(device).recurrent().lstmCellForward(view(ig), view(hg), view(c0), view(hy), view(cy), view(ws));
        if (Autograd.needsGrad(inputGates, hiddenGates, cx)) {
            boolean needCx = cx.requiresGrad();
            SavedTensor sIg = Autograd.save(ig), sHg = Autograd.save(hg), sCx = Autograd.save(c0), sCy = Autograd.save(cy),
                    sWs = Autograd.save(ws);
            Autograd.record("ThnnFusedLstmCellBackward0", new Tensor[] {inputGates, hiddenGates, cx}, new Tensor[] {hy, cy}, gr -> {
                if (Grad.isEnabled()) return lstmCellBackwardComposed(gr[0], gr[1], sIg.get(), sHg.get(), sCx.get(), sCy.get(), needCx);
                Tensor gates = Tensor.empty(sWs.get().shape(), dtype, device);
                Tensor gcx = needCx ? Tensor.empty(stateShape, dtype, device) : null;
                try (Tensor ghy = contiguousOrNull(gr[0]); Tensor gcy = contiguousOrNull(gr[1]);
                     Tensor scratch = gcx == null ? Tensor.empty(stateShape, dtype, device) : null) {
                    Backends.of(device).recurrent().lstmCellBackward(view(ghy), view(gcy), view(sCx.get()), view(sCy.get()),
                            view(sWs.get()), view(gates), view(gcx != null ? gcx : scratch));
                }
                return new Tensor[] {gates, gates, gcx};
            }, sIg, sHg, sCx, sCy, sWs);
        }
        closeTemporaries(inputGates, ig, hiddenGates, hg, cx, c0);
        ws.close();
        return new LstmStep(hy, cy);
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

    // ------------------------------------------------------------------ GRU

    /**
     * One GRU step from {@code inputGates} and {@code hiddenGates} ({@code [b, 3h]}, gates {@code r, z, n}) and the
     * hidden state {@code hx} ({@code [b, h]}); the hidden side's {@code n} block (bias included) is scaled by
     * {@code r}, as PyTorch's GRU.
     */
    public static Tensor gruCell(Tensor inputGates, Tensor hiddenGates, Tensor hx) {
        final String op = "gruCell";
        checkGates(op, inputGates, hiddenGates, hx, 3);
        if (!fused(hx)) return gruCellComposed(inputGates, hiddenGates, hx);
        long[] stateShape = hx.shape();
        Device device = hx.device();
        DType dtype = hx.dtype();
        Tensor ig = inputGates.contiguous(), hg = hiddenGates.contiguous(), h0 = hx.contiguous();
        Tensor hy = Tensor.empty(stateShape, dtype, device);
        Tensor ws = Tensor.empty(new long[] {hx.size(0), 4 * hx.size(1)}, dtype, device);
        Backends.of(device).recurrent().gruCellForward(view(ig), view(hg), view(h0), view(hy), view(ws));
        if (Autograd.needsGrad(inputGates, hiddenGates, hx)) {
            boolean needHx = hx.requiresGrad();
            long[] gateShape = inputGates.shape();
            SavedTensor sIg = Autograd.save(ig), sHg = Autograd.save(hg), sHx = Autograd.save(h0), sWs = Autograd.save(ws);
            Autograd.record("ThnnFusedGruCellBackward0", hy, gr -> {
                if (Grad.isEnabled()) return gruCellBackwardComposed(gr[0], sIg.get(), sHg.get(), sHx.get(), needHx);
                Tensor gi = Tensor.empty(gateShape, dtype, device), gh = Tensor.empty(gateShape, dtype, device);
                Tensor ghx = needHx ? Tensor.empty(stateShape, dtype, device) : null;
                try (Tensor ghy = contiguousOrNull(gr[0]);
                     Tensor scratch = ghx == null ? Tensor.empty(stateShape, dtype, device) : null) {
                    Backends.of(device).recurrent().gruCellBackward(view(ghy), view(sHx.get()), view(sWs.get()), view(gi),
                            view(gh),
                            view(ghx != null ? ghx : scratch));
                }
                return new Tensor[] {gi, gh, ghx};
            }, new Tensor[] {inputGates, hiddenGates, hx}, sIg, sHg, sHx, sWs);
        }
        closeTemporaries(inputGates, ig, hiddenGates, hg, hx, h0);
        ws.close();
        return hy;
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
