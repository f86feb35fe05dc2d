package org.jtorch.backend;

import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.RecurrentOps;
import org.jtorch.op.StridedView;

/**
 * The kernels of the declared fused recurrent cells ({@link RecurrentOps}) for one backend, from its {@link RecurrentKernels}
 * over the contiguous operands the dispatcher hands them. Float16 and bfloat16 operands are widened to float32 in scratch
 * memory and the results rounded once (the backends' fused cells take float32 and float64).
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
