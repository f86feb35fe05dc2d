package org.jtorch.cuda;

import java.lang.foreign.Arena;
import java.util.function.Supplier;
import org.jtorch.backend.RecurrentKernels;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.cuda.kernels.LaunchGeometry;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * {@link RecurrentKernels} on a CUDA device: the fused LSTM and GRU cell steps of {@code recurrent.cu} (compiled whole),
 * one grid-stride launch a step on the device's current stream, one thread an element of the {@code [batch, hidden]}
 * state. Tensors must be contiguous float32 or float64 of one dtype on one device, as the front end makes them;
 * anything else throws naming the op.
 */
final class CudaRecurrentKernels implements RecurrentKernels {
    private static final String FILE = "recurrent.cu";

    private final Supplier<CudaKernels> kernels;

    CudaRecurrentKernels(Supplier<CudaKernels> kernels) {
        this.kernels = kernels;
    }

    /** The entry of {@code kind} for the state's dtype, after checking every operand. */
    private static String entry(String op, String kind, StridedView state, StridedView... operands) {
        DType t = state.dtype();
        if (t != DType.FLOAT32 && t != DType.FLOAT64) {
            throw new IllegalArgumentException(op + ": the CUDA kernels take float32 or float64, got " + t + " on " + state.device());
        }
        for (StridedView o : operands) {
            if (o == null) continue;
            if (!o.isContiguous() || o.dtype() != t || !o.device().equals(state.device())) {
                throw new IllegalArgumentException(op + ": the CUDA kernels take contiguous tensors of one dtype on one device, got "
                        + o.dtype() + " " + java.util.Arrays.toString(o.shape()) + " strides " + java.util.Arrays.toString(o.strides())
                        + " on " + o.device() + " next to " + t + " on " + state.device());
            }
        }
        return "jt_" + kind + "_" + (t == DType.FLOAT32 ? "f32" : "f64");
    }

    private static long addr(StridedView t) {
        return t == null ? 0 : t.address();
    }

    private void launch(String entry, StridedView state, long... pointers) {
        long batch = state.size(0), hidden = state.size(1);
        Device d = state.device();
        CudaKernels k = kernels.get();
        try (Arena arena = Arena.ofConfined()) {
            k.launchRows(k.wholeFileFunction(d, FILE, entry), LaunchGeometry.blocks(batch * hidden, 1, k.multiprocessors(d)),
                    LaunchGeometry.THREADS, k.currentStream(d), KernelArgs.recurrentCell(arena, batch, hidden, pointers));
        }
    }

    @Override
    public void lstmCellForward(StridedView inputGates, StridedView hiddenGates, StridedView cx, StridedView hy,
                                StridedView cy, StridedView workspace) {
        String e = entry("lstmCellForward", "lstm_cell_forward", cx, inputGates, hiddenGates, cx, hy, cy, workspace);
        launch(e, cx, addr(inputGates), addr(hiddenGates), addr(cx), addr(hy), addr(cy), addr(workspace));
    }

    @Override
    public void lstmCellBackward(StridedView gradHy, StridedView gradCy, StridedView cx, StridedView cy,
                                 StridedView workspace, StridedView gradGates,
                                 StridedView gradCx) {
        String e = entry("lstmCellBackward", "lstm_cell_backward", cx, gradHy, gradCy, cx, cy, workspace, gradGates, gradCx);
        launch(e, cx, addr(gradHy), addr(gradCy), addr(cx), addr(cy), addr(workspace), addr(gradGates), addr(gradCx));
    }

    @Override
    public void gruCellForward(StridedView inputGates, StridedView hiddenGates, StridedView hx, StridedView hy,
                               StridedView workspace) {
        String e = entry("gruCellForward", "gru_cell_forward", hx, inputGates, hiddenGates, hx, hy, workspace);
        launch(e, hx, addr(inputGates), addr(hiddenGates), addr(hx), addr(hy), addr(workspace));
    }

    @Override
    public void gruCellBackward(StridedView gradHy, StridedView hx, StridedView workspace, StridedView gradInputGates,
                                StridedView gradHiddenGates,
                                StridedView gradHx) {
        String e = entry("gruCellBackward", "gru_cell_backward", hx, gradHy, hx, workspace, gradInputGates, gradHiddenGates, gradHx);
        launch(e, hx, addr(gradHy), addr(hx), addr(workspace), addr(gradInputGates), addr(gradHiddenGates), addr(gradHx));
    }
}
