package org.jtorch.op;

import static org.jtorch.op.Expr.call;
import static org.jtorch.op.Expr.in;

import java.util.Arrays;
import java.util.List;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The fused recurrent cells, as ATen's {@code _thnn_fused_lstm_cell} and {@code _thnn_fused_gru_cell}: from the gate
 * pre-activations of the input ({@code x @ W_ih^T + b_ih}) and of the hidden state ({@code h @ W_hh^T + b_hh}), the next
 * state in one kernel, and a workspace of the activated gates that one fused backward kernel reads. The matrix products
 * stay outside, so that a layer batches the input products of a whole sequence. The kernels compute in float32 or
 * float64; float16 and bfloat16 operands (autocast's on CUDA, which runs the cells in lower precision as PyTorch) compute
 * widened to float32 and are rounded once. When the backward records a graph, the derivatives run the cells' backward
 * formulas as differentiable ops instead ({@code ops.Recurrent}'s composed backward).
 *
 * <p>Derivatives (as derivatives.yaml's {@code _thnn_differentiable_lstm_cell_backward}): with activated gates {@code i,
 * f, g, o} and {@code dc = gcy + ghy * o * (1 - tanh(cy)^2)}, the gate gradient is {@code [dc g i(1-i), dc cx f(1-f), dc i
 * (1-g^2), ghy tanh(cy) o(1-o)]} and {@code gcx = dc f}; both gate inputs receive it. GRU: {@code dn = ghy (1-z)(1-n^2)},
 * {@code dz = ghy (hx-n) z(1-z)}, {@code dr = dn hn r(1-r)}; the input gates get {@code [dr, dz, dn]}, the hidden gates
 * {@code [dr, dz, dn r]}, and {@code ghx = ghy z}.
 */
public final class RecurrentOps {
    private RecurrentOps() {}

    private static final Expr INPUT_GATES = in(0, "input_gates");
    private static final Expr HIDDEN_GATES = in(1, "hidden_gates");
    private static final Expr STATE = in(2, "state");

    /**
     * One LSTM step: {@code gates = input_gates + hidden_gates} ({@code [b, 4h]}, blocks {@code i, f, g, o}), {@code cy = f
     * * cx + i * g}, {@code hy = o * tanh(cy)}. Outputs {@code hy}, {@code cy} (both differentiable) and the workspace of
     * the activated gates ({@code [b, 4h]}), which the backward reads.
     */
    public static final OpDef LSTM_CELL = OpDef.structured("_thnn_fused_lstm_cell").rule(DTypeRule.FLOATING_ONLY)
            .outputs(RecurrentOps::lstmCellMeta, "hy", "cy", "workspace").gradOutputs(2)
            .signature(Param.tensor("input_gates"), Param.tensor("hidden_gates"), Param.tensor("cx"))
            .denseInputs(0, 1, 2)
            .derivatives(RecurrentOps::lstmCellDerivatives)
            .autocast(Device.Type.CUDA, CastPolicy.LOWER_PRECISION)
            .node("ThnnFusedLstmCellBackward0")
            .doc("gate nonlinearities and state update of one LSTM step in one kernel").build();

    /**
     * The gradients of {@link #LSTM_CELL} from one fused kernel call: of the gate pre-activations (the same for both gate
     * inputs, {@code [b, 4h]}) and of {@code cx}. {@code grad_hy} and {@code grad_cy} may be absent (zero). No derivative of
     * its own: a backward that records a graph runs {@link #LSTM_CELL_BACKWARD_COMPOSITE}.
     */
    public static final OpDef LSTM_CELL_BACKWARD = OpDef.structured("_thnn_fused_lstm_cell_backward_impl").rule(DTypeRule.FLOATING_ONLY)
            .outputs(RecurrentOps::lstmCellBackwardMeta, "grad_gates", "grad_cx")
            .signature(new Param("grad_hy", "Tensor?", null), new Param("grad_cy", "Tensor?", null), Param.tensor("cx"),
                    Param.tensor("cy"), Param.tensor("workspace"))
            .denseInputs(0, 1, 2, 3, 4)
            .doc("one fused kernel for the gate and cell-state gradients").build();

    /**
     * Gradient {@code output} (0: the gates, 1: {@code cx}) of {@link #LSTM_CELL} as differentiable tensor ops (the gates
     * recomputed from their inputs), for gradients of gradients: {@code ops.Recurrent}'s front end.
     */
    public static final OpDef LSTM_CELL_BACKWARD_COMPOSITE = OpDef.frontEnd("lstm_cell_backward_composite", true)
            .rule(DTypeRule.FLOATING_ONLY)
            .signature(new Param("grad_hy", "Tensor?", null), new Param("grad_cy", "Tensor?", null), Param.tensor("input_gates"),
                    Param.tensor("hidden_gates"), Param.tensor("cx"), Param.tensor("cy"), Param.scalar("output", "int", null))
            .doc("`ops.Recurrent.lstmCellBackwardComposite`: the backward as ops, differentiable").build();

    /**
     * One GRU step: {@code r, z = sigmoid(input + hidden)} per gate block ({@code [b, 3h]}, blocks {@code r, z, n}), {@code n
     * = tanh(in + r * hn)} (the hidden side's {@code n} block, bias included, scaled by {@code r}, as PyTorch's GRU),
     * {@code hy = (1 - z) * n + z * hx}. Outputs {@code hy} and the workspace {@code r, z, n, hn} ({@code [b, 4h]}).
     */
    public static final OpDef GRU_CELL = OpDef.structured("_thnn_fused_gru_cell").rule(DTypeRule.FLOATING_ONLY)
            .outputs(RecurrentOps::gruCellMeta, "hy", "workspace")
            .signature(Param.tensor("input_gates"), Param.tensor("hidden_gates"), Param.tensor("hx"))
            .denseInputs(0, 1, 2)
            .derivatives(RecurrentOps::gruCellDerivatives)
            .autocast(Device.Type.CUDA, CastPolicy.LOWER_PRECISION)
            .node("ThnnFusedGruCellBackward0")
            .doc("gate nonlinearities and state update of one GRU step in one kernel").build();

    /**
     * The gradients of {@link #GRU_CELL} from one fused kernel call: of the input gates, of the hidden gates ({@code [b,
     * 3h]} each; they differ in the {@code n} block) and of {@code hx}. No derivative of its own: a backward that records a
     * graph runs {@link #GRU_CELL_BACKWARD_COMPOSITE}.
     */
    public static final OpDef GRU_CELL_BACKWARD = OpDef.structured("_thnn_fused_gru_cell_backward").rule(DTypeRule.FLOATING_ONLY)
            .outputs(RecurrentOps::gruCellBackwardMeta, "grad_input_gates", "grad_hidden_gates", "grad_hx")
            .signature(Param.tensor("grad_hy"), Param.tensor("hx"), Param.tensor("workspace"))
            .denseInputs(0, 1, 2)
            .doc("one fused kernel for the gate and hidden-state gradients").build();

    /**
     * Gradient {@code output} (0: the input gates, 1: the hidden gates, 2: {@code hx}) of {@link #GRU_CELL} as
     * differentiable tensor ops, for gradients of gradients: {@code ops.Recurrent}'s front end.
     */
    public static final OpDef GRU_CELL_BACKWARD_COMPOSITE = OpDef.frontEnd("gru_cell_backward_composite", true)
            .rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("grad_hy"), Param.tensor("input_gates"), Param.tensor("hidden_gates"), Param.tensor("hx"),
                    Param.scalar("output", "int", null))
            .doc("`ops.Recurrent.gruCellBackwardComposite`: the backward as ops, differentiable").build();

    /**
     * One direction of one LSTM layer over {@code steps} time steps of {@code batch} rows each, time-major ({@code input}:
     * {@code [steps * batch, in]}), from {@code hx} and {@code cx} ({@code [batch, hidden]}); {@code reverse} runs from the
     * last step to the first. One GEMM for the input gates of the whole sequence, then per step the hidden product and the
     * fused cell, as {@link #LSTM_CELL} step after step; recorded as one node, as oneDNN's and cuDNN's RNN layers (PyTorch
     * 2's {@code mkldnn_rnn_layer}). Outputs: the rows of every step, the final {@code hy} and {@code cy} (the three
     * differentiable), and every step's cell state and gate workspace, which the backward reads. Scalars: {@code steps,
     * reverse}. Float32 and float64.
     */
    public static final OpDef LSTM_LAYER = OpDef.structured("_lstm_layer").rule(DTypeRule.FLOATING_ONLY)
            .outputs((in, s) -> layerMeta(true, in, s), "output", "hy", "cy", "cell_states", "workspace").gradOutputs(3)
            .signature(Param.tensor("input"), Param.tensor("weight_ih"), Param.tensor("weight_hh"), new Param("bias_ih", "Tensor?", null),
                    new Param("bias_hh", "Tensor?", null), Param.tensor("hx"), Param.tensor("cx"), Param.scalar("steps", "int", null),
                    Param.scalar("reverse", "bool", null))
            .denseInputs(5, 6)
            .derivatives(() -> layerDerivatives(true))
            .node("LstmLayerBackward0")
            .doc("one LSTM layer direction: the input GEMM, then the hidden GEMM and the fused cell per step").build();

    /** {@link #LSTM_LAYER} for a GRU layer ({@link #GRU_CELL} step after step), from {@code hx}; outputs: the rows, {@code hy} and the workspace. */
    public static final OpDef GRU_LAYER = OpDef.structured("_gru_layer").rule(DTypeRule.FLOATING_ONLY)
            .outputs((in, s) -> layerMeta(false, in, s), "output", "hy", "workspace").gradOutputs(2)
            .signature(Param.tensor("input"), Param.tensor("weight_ih"), Param.tensor("weight_hh"), new Param("bias_ih", "Tensor?", null),
                    new Param("bias_hh", "Tensor?", null), Param.tensor("hx"), Param.scalar("steps", "int", null),
                    Param.scalar("reverse", "bool", null))
            .denseInputs(5)
            .derivatives(() -> layerDerivatives(false))
            .node("GruLayerBackward0")
            .doc("one GRU layer direction: the input GEMM, then the hidden GEMM and the fused cell per step").build();

    /**
     * The gradients of {@link #LSTM_LAYER}: the cells back in time through the fused backward kernel (each step's hidden
     * gradient one {@code [batch, 4h] x [4h, h]} product), every step's gate gradients kept, then the input's, the weights'
     * and the bias's gradients as one product (or sum) each over the whole sequence. Outputs: {@code grad_input,
     * grad_weight_ih, grad_weight_hh, grad_bias} (the same for both biases), {@code grad_hx, grad_cx}; those whose input's bit
     * is clear in {@code grad_input_mask} (the layer's inputs, in its signature order) are not written. No derivative of its
     * own: a backward that records a graph runs {@link #RNN_LAYER_BACKWARD_COMPOSITE}.
     */
    public static final OpDef LSTM_LAYER_BACKWARD = OpDef.structured("_lstm_layer_backward").rule(DTypeRule.FLOATING_ONLY)
            .outputs((in, s) -> layerBackwardMeta(true, in), "grad_input", "grad_weight_ih", "grad_weight_hh", "grad_bias", "grad_hx",
                    "grad_cx")
            .signature(new Param("grad_output", "Tensor?", null), new Param("grad_hy", "Tensor?", null), new Param("grad_cy", "Tensor?", null),
                    Param.tensor("input"), Param.tensor("weight_ih"), Param.tensor("weight_hh"), Param.tensor("hx"), Param.tensor("cx"),
                    Param.tensor("output"), Param.tensor("cell_states"), Param.tensor("workspace"), Param.scalar("steps", "int", null),
                    Param.scalar("reverse", "bool", null), Param.scalar("grad_input_mask", "int", null))
            .denseInputs(0, 1, 2, 6, 7)
            .doc("the layer's backward: fused cells back in time, one GEMM per weight").build();

    /**
     * The gradients of {@link #GRU_LAYER}, as {@link #LSTM_LAYER_BACKWARD}: {@code grad_input, grad_weight_ih, grad_weight_hh,
     * grad_bias_ih, grad_bias_hh, grad_hx} (the biases' differ in the {@code n} block).
     */
    public static final OpDef GRU_LAYER_BACKWARD = OpDef.structured("_gru_layer_backward").rule(DTypeRule.FLOATING_ONLY)
            .outputs((in, s) -> layerBackwardMeta(false, in), "grad_input", "grad_weight_ih", "grad_weight_hh", "grad_bias_ih",
                    "grad_bias_hh", "grad_hx")
            .signature(new Param("grad_output", "Tensor?", null), new Param("grad_hy", "Tensor?", null), Param.tensor("input"),
                    Param.tensor("weight_ih"), Param.tensor("weight_hh"), Param.tensor("hx"), Param.tensor("output"),
                    Param.tensor("workspace"), Param.scalar("steps", "int", null), Param.scalar("reverse", "bool", null),
                    Param.scalar("grad_input_mask", "int", null))
            .denseInputs(0, 1, 5)
            .doc("the layer's backward: fused cells back in time, one GEMM per weight").build();

    /**
     * Gradient {@code output} (the layer's input in signature order: 0 input, 1-2 weights, 3-4 biases, 5 hx, 6 cx) of
     * {@link #LSTM_LAYER} (called with {@code grad_cy} and {@code cx}) or {@link #GRU_LAYER} (without) as differentiable ops (the layer recomputed from its
     * inputs, the cells' backward formulas per step), for gradients of gradients: {@code ops.Recurrent}'s front end.
     */
    public static final OpDef RNN_LAYER_BACKWARD_COMPOSITE = OpDef.frontEnd("rnn_layer_backward_composite", true)
            .rule(DTypeRule.FLOATING_ONLY)
            .signature(new Param("grad_output", "Tensor?", null), new Param("grad_hy", "Tensor?", null), Param.tensor("input"),
                    Param.tensor("weight_ih"), Param.tensor("weight_hh"), new Param("bias_ih", "Tensor?", null),
                    new Param("bias_hh", "Tensor?", null), Param.tensor("hx"), new Param("grad_cy", "Tensor?", "None"),
                    new Param("cx", "Tensor?", "None"), Param.scalar("steps", "int", null), Param.scalar("reverse", "bool", null),
                    Param.scalar("output", "int", null))
            .doc("`ops.Recurrent.layerBackwardComposite`: the layer's backward as ops, differentiable").build();

    private static List<Expr> layerDerivatives(boolean lstm) {
        Expr x = in(0, "input"), wIh = in(1, "weight_ih"), wHh = in(2, "weight_hh"), bIh = in(3, "bias_ih"), bHh = in(4, "bias_hh");
        Expr hx = in(5, "hx"), cx = lstm ? in(6, "cx") : null;
        Expr gY = Expr.outputGrad(0, "output"), ghy = Expr.outputGrad(1, "hy"), gcy = lstm ? Expr.outputGrad(2, "cy") : null;
        Expr y = Expr.output(0, "output");
        Expr steps = Expr.scalar(0, "steps"), reverse = Expr.scalar(1, "reverse");
        Expr.Op fused = lstm
                ? (Expr.Op) call(LSTM_LAYER_BACKWARD, gY, ghy, gcy, x, wIh, wHh, hx, cx, Expr.RESULT, Expr.output(3, "cell_states"),
                        Expr.output(4, "workspace"), steps, reverse, Expr.GRAD_INPUT_MASK)
                : (Expr.Op) call(GRU_LAYER_BACKWARD, gY, ghy, x, wIh, wHh, hx, Expr.RESULT, Expr.output(2, "workspace"), steps, reverse,
                        Expr.GRAD_INPUT_MASK);
        int inputs = lstm ? 7 : 6;
        // the fused call's output for each of the layer's inputs (the LSTM's two biases share one gradient)
        int[] select = lstm ? new int[] {0, 1, 2, 3, 3, 4, 5} : new int[] {0, 1, 2, 3, 4, 5};
        Expr[] d = new Expr[inputs];
        for (int i = 0; i < inputs; i++) {
            // a GRU passes no cell state: its call ends with hx, and the front end reads the LSTM's by the tensor count
            Expr composite = lstm ? call(RNN_LAYER_BACKWARD_COMPOSITE, gY, ghy, x, wIh, wHh, bIh, bHh, hx, gcy, cx, steps, reverse, Expr.c(i))
                    : call(RNN_LAYER_BACKWARD_COMPOSITE, gY, ghy, x, wIh, wHh, bIh, bHh, hx, steps, reverse, Expr.c(i));
            d[i] = new Expr.IfGrad(composite, new Expr.Select(fused, select[i]));
        }
        return Arrays.asList(d);
    }

    private static List<Expr> lstmCellDerivatives() {
        Expr ghy = Expr.outputGrad(0, "hy"), gcy = Expr.outputGrad(1, "cy");
        Expr cy = Expr.output(1, "cy"), workspace = Expr.output(2, "workspace");
        Expr.Op fused = (Expr.Op) call(LSTM_CELL_BACKWARD, ghy, gcy, STATE, cy, workspace);
        Expr gates = new Expr.IfGrad(call(LSTM_CELL_BACKWARD_COMPOSITE, ghy, gcy, INPUT_GATES, HIDDEN_GATES, STATE, cy, Expr.c(0)),
                new Expr.Select(fused, 0));
        Expr cx = new Expr.IfGrad(call(LSTM_CELL_BACKWARD_COMPOSITE, ghy, gcy, INPUT_GATES, HIDDEN_GATES, STATE, cy, Expr.c(1)),
                new Expr.Select(fused, 1));
        return List.of(gates, gates, cx);
    }

    private static List<Expr> gruCellDerivatives() {
        Expr workspace = Expr.output(1, "workspace");
        Expr.Op fused = (Expr.Op) call(GRU_CELL_BACKWARD, Expr.GRAD, STATE, workspace);
        Expr[] d = new Expr[3];
        for (int j = 0; j < 3; j++) {
            d[j] = new Expr.IfGrad(call(GRU_CELL_BACKWARD_COMPOSITE, Expr.GRAD, INPUT_GATES, HIDDEN_GATES, STATE, Expr.c(j)),
                    new Expr.Select(fused, j));
        }
        return Arrays.asList(d);
    }

    // ------------------------------------------------------------------ meta functions

    private static Meta.Output[] lstmCellMeta(StridedView[] in, double[] scalars) {
        StridedView state = checkCell("_thnn_fused_lstm_cell", in, 4, "cx");
        Meta.Output s = new Meta.Output(state.shape(), state.dtype());
        return new Meta.Output[] {s, s, new Meta.Output(in[0].shape(), state.dtype())};
    }

    private static Meta.Output[] gruCellMeta(StridedView[] in, double[] scalars) {
        StridedView state = checkCell("_thnn_fused_gru_cell", in, 3, "hx");
        return new Meta.Output[] {new Meta.Output(state.shape(), state.dtype()),
                new Meta.Output(new long[] {state.size(0), 4 * state.size(1)}, state.dtype())};
    }

    private static Meta.Output[] lstmCellBackwardMeta(StridedView[] in, double[] scalars) {
        String op = "_thnn_fused_lstm_cell_backward_impl";
        StridedView cx = in[2];
        long[] state = cx.shape();
        checkOperand(op, "cy", in[3], state, cx);
        checkOperand(op, "workspace", in[4], workspaceShape(op, cx, 4), cx);
        if (in[0] != null) checkOperand(op, "grad_hy", in[0], state, cx);
        if (in[1] != null) checkOperand(op, "grad_cy", in[1], state, cx);
        return new Meta.Output[] {new Meta.Output(in[4].shape(), cx.dtype()), new Meta.Output(state, cx.dtype())};
    }

    private static Meta.Output[] gruCellBackwardMeta(StridedView[] in, double[] scalars) {
        String op = "_thnn_fused_gru_cell_backward";
        StridedView hx = in[1];
        long[] state = hx.shape();
        checkOperand(op, "grad_hy", in[0], state, hx);
        checkOperand(op, "workspace", in[2], workspaceShape(op, hx, 4), hx);
        Meta.Output gates = new Meta.Output(new long[] {hx.size(0), 3 * hx.size(1)}, hx.dtype());
        return new Meta.Output[] {gates, gates, new Meta.Output(state, hx.dtype())};
    }

    private static Meta.Output[] layerMeta(boolean lstm, StridedView[] in, double[] scalars) {
        String op = lstm ? "_lstm_layer" : "_gru_layer";
        StridedView x = in[0], wIh = in[1], wHh = in[2], h0 = in[5], c0 = lstm ? in[6] : null;
        int gates = lstm ? 4 : 3;
        long steps = (long) scalars[0];
        boolean shapes = steps >= 1 && h0.dim() == 2 && x.dim() == 2 && wIh.dim() == 2 && wHh.dim() == 2;
        long batch = shapes ? h0.size(0) : 0, hidden = shapes ? wHh.size(1) : 0;
        shapes = shapes && x.size(0) == steps * batch && wHh.size(0) == gates * hidden && wIh.size(0) == gates * hidden
                && wIh.size(1) == x.size(1) && h0.size(1) == hidden && (c0 == null || Arrays.equals(c0.shape(), h0.shape()));
        for (int b = 3; b < 5; b++) shapes &= in[b] == null || in[b].dim() == 1 && in[b].size(0) == gates * hidden;
        DType dtype = h0.dtype();
        boolean types = dtype == DType.FLOAT32 || dtype == DType.FLOAT64;
        for (StridedView t : in) types &= t == null || t.dtype() == dtype && t.device().equals(h0.device());
        if (!shapes || !types) {
            throw new IllegalArgumentException(op + ": expected float32 or float64 rows [steps * batch, in], weight_ih [" + gates
                    + " * hidden, in], weight_hh [" + gates + " * hidden, hidden] and states [batch, hidden] of one dtype on one device,"
                    + " got input " + describe(x) + " (" + steps + " steps), weight_ih " + describe(wIh) + ", weight_hh " + describe(wHh)
                    + ", hx " + describe(h0) + (c0 == null ? "" : " and cx " + describe(c0)));
        }
        Meta.Output rows = new Meta.Output(new long[] {steps * batch, hidden}, dtype), state = new Meta.Output(h0.shape(), dtype);
        Meta.Output workspace = new Meta.Output(new long[] {steps * batch, 4 * hidden}, dtype);
        return lstm ? new Meta.Output[] {rows, state, state, rows, workspace} : new Meta.Output[] {rows, state, workspace};
    }

    private static Meta.Output[] layerBackwardMeta(boolean lstm, StridedView[] in) {
        int first = lstm ? 3 : 2;
        StridedView x = in[first], wIh = in[first + 1], wHh = in[first + 2], h0 = in[first + 3];
        DType dtype = h0.dtype();
        Meta.Output bias = new Meta.Output(new long[] {wHh.size(0)}, dtype), state = new Meta.Output(h0.shape(), dtype);
        Meta.Output gx = new Meta.Output(x.shape(), dtype), gWih = new Meta.Output(wIh.shape(), dtype);
        Meta.Output gWhh = new Meta.Output(wHh.shape(), dtype);
        return lstm ? new Meta.Output[] {gx, gWih, gWhh, bias, state, state} : new Meta.Output[] {gx, gWih, gWhh, bias, bias, state};
    }

    private static String describe(StridedView t) {
        return Shapes.format(t.shape()) + " of " + t.dtype() + " on " + t.device();
    }

    /** Checks a cell's gates ({@code [b, gates * h]}, one floating dtype and device with the state) and returns the state. */
    private static StridedView checkCell(String op, StridedView[] in, int gates, String stateName) {
        StridedView ig = in[0], hg = in[1], state = in[2];
        boolean shapes = state.dim() == 2 && ig.dim() == 2 && Arrays.equals(ig.shape(), hg.shape()) && ig.size(0) == state.size(0)
                && ig.size(1) == gates * state.size(1);
        if (!shapes) {
            throw new IllegalArgumentException(op + ": expected input_gates and hidden_gates of shape [batch, " + gates + " * hidden] and "
                    + stateName + " of shape [batch, hidden], got " + Shapes.format(ig.shape()) + ", " + Shapes.format(hg.shape())
                    + " and " + Shapes.format(state.shape()));
        }
        if (ig.dtype() != state.dtype() || hg.dtype() != state.dtype() || !state.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": expected gates and " + stateName + " of one floating dtype, got " + ig.dtype()
                    + ", " + hg.dtype() + " and " + state.dtype());
        }
        if (!ig.device().equals(state.device()) || !hg.device().equals(state.device())) {
            throw new IllegalArgumentException(op + ": expected gates and " + stateName + " on one device, got " + ig.device() + ", "
                    + hg.device() + " and " + state.device());
        }
        return state;
    }

    private static long[] workspaceShape(String op, StridedView state, int blocks) {
        if (state.dim() != 2) {
            throw new IllegalArgumentException(op + ": expected a state of shape [batch, hidden], got " + Shapes.format(state.shape()));
        }
        return new long[] {state.size(0), blocks * state.size(1)};
    }

    private static void checkOperand(String op, String name, StridedView t, long[] shape, StridedView state) {
        if (!Arrays.equals(t.shape(), shape) || t.dtype() != state.dtype() || !t.device().equals(state.device())) {
            throw new IllegalArgumentException(op + ": expected " + name + " of shape " + Shapes.format(shape) + " of " + state.dtype()
                    + " on " + state.device() + ", got " + Shapes.format(t.shape()) + " of " + t.dtype() + " on " + t.device());
        }
    }

    /** The dtype the fused kernels compute {@code dtype} in: float32 for the half types, else itself. */
    public static DType computeType(DType dtype) {
        return dtype == DType.FLOAT16 || dtype == DType.BFLOAT16 ? DType.FLOAT32 : dtype;
    }
}
