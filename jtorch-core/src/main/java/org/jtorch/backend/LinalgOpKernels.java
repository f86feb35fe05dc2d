package org.jtorch.backend;

import org.jtorch.memory.Storage;
import org.jtorch.op.Callback;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.LinalgOps;
import org.jtorch.op.OpDef;
import org.jtorch.op.PointwiseOps;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The kernels of the declared matrix products ({@link LinalgOps}) for one backend, from its batched GEMM
 * ({@link LinalgKernels#bmm}) over strided views: a matrix is a batch of one, a transposed operand is a permuted view.
 */
public final class LinalgOpKernels {
    private LinalgOpKernels() {}

    /** Registers {@code backend}'s kernels of the products on its device type. */
    static void register(Backend backend) {
        Device.Type type = backend.deviceType();
        KernelRegistry.register(type, LinalgOps.MM.kernel(), (out, in, s) ->
                backend.linalg().bmm(batchOfOne(in[0]), batchOfOne(in[1]), batchOfOne(out), 1, 0));
        KernelRegistry.register(type, LinalgOps.BMM.kernel(), (out, in, s) -> backend.linalg().bmm(in[0], in[1], out, 1, 0));
        KernelRegistry.register(type, LinalgOps.MV.kernel(), (out, in, s) ->
                backend.linalg().bmm(batchOfOne(in[0]), batchOfOne(column(in[1])), batchOfOne(column(out)), 1, 0));
        KernelRegistry.register(type, LinalgOps.DOT.kernel(), (out, in, s) ->
                backend.linalg().bmm(batchOfOne(row(in[0])), batchOfOne(column(in[1])), batchOfOne(column(out.view(1))), 1, 0));
        KernelRegistry.register(type, LinalgOps.ADDMM.kernel(), (out, in, s) -> {
            if (s[0] != 0) backend.copy(in[0].expand("addmm", out.shape()), out);
            backend.linalg().bmm(batchOfOne(in[1]), batchOfOne(in[2]), batchOfOne(out), s[1], s[0]);
        });
        KernelRegistry.register(type, LinalgOps.BADDBMM.kernel(), (out, in, s) -> {
            if (s[0] != 0) backend.copy(in[0].expand("baddbmm", out.shape()), out);
            backend.linalg().bmm(in[1], in[2], out, s[1], s[0]);
        });
        KernelRegistry.register(type, LinalgOps.LINEAR.kernel(), (out, in, s) -> linear(backend, in[0], in[1], in[2], out, null));
        KernelRegistry.registerWithCallback(type, LinalgOps.LINEAR_EPILOGUE.kernel(),
                (out, in, s, callback) -> linearWithCallback(backend, in[0], in[1], in[2], out, callback));
        KernelRegistry.registerMulti(type, LinalgOps.LINEAR_ACTIVATION.kernel(),
                (outs, in, s) -> linearActivation(backend, in[0], in[1], in[2], outs[0], outs[1], activation(s), s[1] != 0),
                (in, s) -> fusesLinearActivation(backend, in[0], in[1], in[2], activation(s), s[1] != 0));
    }

    private static LinalgKernels.Activation activation(double[] scalars) {
        return LinalgKernels.Activation.values()[(int) scalars[0]];
    }

    /**
     * Whether the backend's GEMM applies bias and activation itself ({@link LinalgKernels#takesBiasActivation}) for these
     * operands, the outputs being fresh contiguous tensors: {@link LinalgOps#LINEAR_ACTIVATION}'s test, answered before
     * anything is allocated. False where {@code x}'s rows cannot be seen as one matrix.
     */
    static boolean fusesLinearActivation(Backend backend, StridedView x, StridedView weight, StridedView bias,
                                         LinalgKernels.Activation activation, boolean keepInput) {
        StridedView x2 = x.view(rows(x), weight.size(1));
        return x2 != null && backend.linalg().takesBiasActivation(batchOfOne(x2), batchOfOne(weight.permute(1, 0)), bias, activation,
                keepsInput(activation, keepInput));
    }

    private static boolean keepsInput(LinalgKernels.Activation activation, boolean keepInput) {
        return keepInput && activation == LinalgKernels.Activation.GELU_TANH;
    }

    /**
     * {@link LinalgOps#LINEAR_ACTIVATION}'s kernel: {@code out = activation(x @ weight.T + bias)} and, for tanh-GELU with
     * {@code keepInput}, {@code pre = x @ weight.T + bias} ({@code pre} is empty otherwise). One kernel where the backend's
     * GEMM takes it ({@link LinalgKernels#mmBiasActivation}); else, or where it declines at run time, the product into
     * {@code pre} (or {@code out}) and the activation's pointwise kernel over it.
     */
    private static void linearActivation(Backend backend, StridedView x, StridedView weight, StridedView bias, StridedView out,
                                         StridedView pre, LinalgKernels.Activation activation, boolean keepInput) {
        StridedView kept = keepsInput(activation, keepInput) ? pre : null;
        if (linearActivation(backend, x, weight, bias, out, activation, kept)) return;
        StridedView product = kept != null ? kept : out;
        linear(backend, x, weight, bias, product, null);
        if (activation == LinalgKernels.Activation.NONE) return;
        OpDef op = activation == LinalgKernels.Activation.RELU ? PointwiseOps.RELU : PointwiseOps.GELU_TANH;
        KernelRegistry.pointwise(op, backend.deviceType()).run(out.device().index(), op.computeType(out.dtype(), DType.FLOAT32), out,
                product, null, 0, 0);
    }

    /**
     * {@link #linear(Backend, StridedView, StridedView, StridedView, StridedView, LinalgKernels.Epilogue)} with the
     * epilogue that {@code callback} (null for none) makes for the output seen as {@code [rows, out_features]}: the
     * kernel of {@link LinalgOps#LINEAR_EPILOGUE}.
     */
    private static void linearWithCallback(Backend backend, StridedView x, StridedView weight, StridedView bias, StridedView out,
                                           Callback<?> callback) {
        LinalgKernels.Epilogue epilogue = Callback.work(LinalgOps.LINEAR_EPILOGUE.pyName(), callback, out.view(rows(x), weight.size(0)),
                LinalgKernels.Epilogue.class);
        linear(backend, x, weight, bias, out, epilogue);
    }

    /** The rows of {@code x} as a matrix: the product of all but its last dimension. */
    private static long rows(StridedView x) {
        long rows = 1;
        for (int d = 0; d < x.dim() - 1; d++) rows *= x.size(d);
        return rows;
    }

    /**
     * {@code out = x @ weight.T + bias} as one GEMM over {@code x}'s rows ({@code bias} may be null); with an
     * {@code epilogue} on each finished block of the product ({@link LinalgKernels#mmWithEpilogue}; its rows and
     * columns index {@code out} seen as {@code [rows, out_features]}). {@code x} is copied first only where its rows
     * cannot be seen as one matrix.
     */
    public static void linear(Backend backend, StridedView x, StridedView weight, StridedView bias, StridedView out,
                              LinalgKernels.Epilogue epilogue) {
        long in = weight.size(1);
        long features = weight.size(0);
        long rows = rows(x);
        StridedView o2 = out.view(rows, features);
        StridedView x2 = x.view(rows, in);
        Storage scratch = null;
        if (x2 == null) {
            scratch = backend.allocate(x.device(), x.numel() * x.dtype().byteSize());
            x2 = StridedView.contiguous(scratch, new long[] {rows, in}, x.dtype());
            backend.copy(x, x2.view(x.shape()));
        }
        try {
            StridedView a = batchOfOne(x2), b = batchOfOne(weight.permute(1, 0)), c = batchOfOne(o2);
            // The bias added by the GEMM itself where the backend can (cuBLASLt's bias epilogue), else copied in first.
            if (bias != null && backend.linalg().mmBiasActivation(a, b, c, bias, LinalgKernels.Activation.NONE, null)) {
                if (epilogue != null) epilogue.block(0, rows, 0, features);
                return;
            }
            if (bias != null) backend.copy(bias.expand("linear", o2.shape()), o2);
            double beta = bias != null ? 1 : 0;
            if (epilogue == null) backend.linalg().bmm(a, b, c, 1, beta);
            else backend.linalg().mmWithEpilogue(a, b, c, 1, beta, epilogue);
        } finally {
            if (scratch != null) scratch.release();
        }
    }

    /**
     * {@code out = activation(x @ weight.T + bias)} as one kernel of the backend ({@link LinalgKernels#mmBiasActivation});
     * {@code preActivation}, where not null, receives {@code x @ weight.T + bias}. False, having done nothing, where the
     * backend has no such kernel for these operands, or {@code x}'s rows cannot be seen as one matrix.
     */
    private static boolean linearActivation(Backend backend, StridedView x, StridedView weight, StridedView bias, StridedView out,
                                           LinalgKernels.Activation activation, StridedView preActivation) {
        long features = weight.size(0);
        long rows = rows(x);
        StridedView x2 = x.view(rows, weight.size(1));
        if (x2 == null) return false;
        return backend.linalg().mmBiasActivation(batchOfOne(x2), batchOfOne(weight.permute(1, 0)), batchOfOne(out.view(rows, features)),
                bias, activation, preActivation == null ? null : batchOfOne(preActivation.view(rows, features)));
    }

    /** A vector {@code [n]} as a column {@code [n, 1]} (strided as {@code unsqueeze(1)} makes it). */
    private static StridedView column(StridedView v) {
        return v.restrided(new long[] {v.size(0), 1}, new long[] {v.stride(0), 1}, v.offset());
    }

    /** A vector {@code [n]} as a row {@code [1, n]} (strided as {@code unsqueeze(0)} makes it). */
    private static StridedView row(StridedView v) {
        return v.restrided(new long[] {1, v.size(0)}, new long[] {v.size(0) * v.stride(0), v.stride(0)}, v.offset());
    }

    /** A matrix as a batch of one (strided as {@code unsqueeze(0)} makes it). */
    private static StridedView batchOfOne(StridedView m) {
        return m.restrided(new long[] {1, m.size(0), m.size(1)}, new long[] {m.size(0) * m.stride(0), m.stride(0), m.stride(1)},
                m.offset());
    }
}
