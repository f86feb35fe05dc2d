package org.jtorch.ops;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.op.FrontEndOps;
import org.jtorch.op.OpDef;
import org.jtorch.op.RandomOps;
import org.jtorch.op.ViewOps;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * Calls of the ops declared with hand-written front ends ({@link FrontEndOps}, {@link ViewOps}) from a generic call: the op, its
 * tensors and its integer arguments as doubles, in signature order (what the trace records). The JIT replays
 * such ops through here.
 */
public final class FrontEnds {
    private FrontEnds() {}

    /** Whether {@code op}'s front end returns several tensors ({@link #callAll}). */
    static boolean returnsSeveral(OpDef op) {
        return op == ViewOps.SPLIT || op == ViewOps.SPLIT_WITH_SIZES || op == ViewOps.CHUNK || op == ViewOps.UNBIND
                || op == FrontEndOps.MAX_POOL3D_WITH_INDICES || op == FrontEndOps.ADAPTIVE_MAX_POOL3D
                || op == FrontEndOps.MAX_POOL1D_WITH_INDICES || op == FrontEndOps.ADAPTIVE_MAX_POOL1D;
    }

    /** A front end returning several tensors ({@link #returnsSeveral}), called as {@link #call}: all its outputs, in order. */
    static Tensor[] callAll(OpDef op, Tensor[] in, double[] args) {
        if (op == FrontEndOps.MAX_POOL3D_WITH_INDICES) {
            Lists l = new Lists(args);
            var r = Pooling3d.maxPool3dWithIndices(in[0], l.next(), l.next(), l.next(), l.next(), l.rest()[0] != 0);
            return new Tensor[] {r.values(), r.indices()};
        }
        if (op == FrontEndOps.MAX_POOL1D_WITH_INDICES) {
            Pool1dArgs p = Pool1dArgs.of(op, args, true);
            var r = Pooling.maxPool1dWithIndices(in[0], p.kernel(), p.stride(), p.padding(), p.dilation(), p.flags()[0] != 0);
            return new Tensor[] {r.values(), r.indices()};
        }
        if (op == FrontEndOps.ADAPTIVE_MAX_POOL1D) {
            var r = Pooling.adaptiveMaxPool1d(in[0], (long) args[0]);
            return new Tensor[] {r.values(), r.indices()};
        }
        if (op == FrontEndOps.ADAPTIVE_MAX_POOL3D) {
            if (args.length != 3) {
                throw new IllegalArgumentException(op.pyName() + ": output_size must be 3 sizes, got " + java.util.Arrays.toString(longs(args)));
            }
            var r = Pooling3d.adaptiveMaxPool3d(in[0], longs(args));
            return new Tensor[] {r.values(), r.indices()};
        }
        java.util.List<Tensor> r;
        if (op == ViewOps.SPLIT) r = in[0].split((long) args[0], (int) args[1]);
        else if (op == ViewOps.SPLIT_WITH_SIZES) r = in[0].split(longs(java.util.Arrays.copyOfRange(args, 1, args.length)), (int) args[0]);
        else if (op == ViewOps.CHUNK) r = in[0].chunk((int) args[0], (int) args[1]);
        else if (op == ViewOps.UNBIND) r = in[0].unbind((int) args[0]);
        else throw new IllegalStateException(op.name() + " has no front end returning several tensors");
        return r.toArray(new Tensor[0]);
    }

    /**
     * {@code sum_to_size}: {@code g} summed over the dimensions it was broadcast along from {@code shape} (a new tensor even
     * where nothing is summed: an op's result is never its input).
     */
    private static Tensor sumToSize(Tensor g, long[] shape) {
        if (Dispatcher.tracing()) return Dispatcher.traceFrontEnd(ViewOps.SUM_TO_SIZE, new Tensor[] {g}, args(shape), () -> sumToSize(g, shape));
        Tensor r = org.jtorch.autograd.Gradients.sumTo(g, shape, g.dtype());
        return r == g ? g.alias() : r;
    }

    static Tensor call(OpDef op, Tensor[] in, double[] args) {
        if (op == ViewOps.VIEW) return in[0].view(longs(args));
        if (op == ViewOps.RESHAPE) return in[0].reshape(longs(args));
        if (op == ViewOps.PERMUTE) return in[0].permute(ints(args));
        if (op == ViewOps.TRANSPOSE) return in[0].transpose((int) args[0], (int) args[1]);
        if (op == ViewOps.SQUEEZE) return in[0].squeeze();
        if (op == ViewOps.SQUEEZE_DIM) return in[0].squeeze((int) args[0]);
        if (op == ViewOps.UNSQUEEZE) return in[0].unsqueeze((int) args[0]);
        if (op == ViewOps.EXPAND) return in[0].expand(longs(args));
        if (op == FrontEndOps.CONTIGUOUS) return in[0].contiguous();
        if (op == FrontEndOps.ALIAS) return in[0].alias();
        if (op == FrontEndOps.ARANGE) {
            Device device = Device.Type.values()[(int) args[4]] == Device.Type.CPU ? Device.cpu() : Device.cuda((int) args[5]);
            return Torch.arange(args[0], args[1], args[2], DType.values()[(int) args[3]], device);
        }
        if (op == FrontEndOps.MATMUL) return Linalg.matmul(in[0], in[1]);
        if (op == FrontEndOps.ROWS) return Linalg.rowsOf(in[0]);
        if (op == ViewOps.SLICE) return in[0].slice((int) args[0], (long) args[1], (long) args[2], (long) args[3]);
        if (op == ViewOps.NARROW) return in[0].narrow((int) args[0], (long) args[1], (long) args[2]);
        if (op == ViewOps.SELECT) return in[0].select((int) args[0], (long) args[1]);
        if (op == ViewOps.UNFOLD) return in[0].unfold((int) args[0], (long) args[1], (long) args[2]);
        if (op == ViewOps.DIAGONAL) return Rearranging.diagonal(in[0], (long) args[0], (int) args[1], (int) args[2]);
        if (op == ViewOps.SUM_TO_SIZE) return sumToSize(in[0], longs(args));
        if (returnsSeveral(op)) {
            // a caller that asked for one output (the trace read only the first): the others are released
            Tensor[] all = callAll(op, in, args);
            for (int i = 1; i < all.length; i++) all[i].close();
            return all[0];
        }
        if (op == FrontEndOps.ZEROS) {
            Device device = Device.Type.values()[(int) args[1]] == Device.Type.CPU ? Device.cpu() : Device.cuda((int) args[2]);
            return Torch.zeros(longs(java.util.Arrays.copyOfRange(args, 3, args.length)), DType.values()[(int) args[0]], device);
        }
        if (op == FrontEndOps.EMPTY) {
            Device device = Device.Type.values()[(int) args[1]] == Device.Type.CPU ? Device.cpu() : Device.cuda((int) args[2]);
            return Torch.empty(longs(java.util.Arrays.copyOfRange(args, 3, args.length)), DType.values()[(int) args[0]], device);
        }
        if (op == FrontEndOps.EMPTY_LIKE) return Torch.emptyLike(in[0]);
        if (op == FrontEndOps.EMPTY_STRIDED) {
            Device device = Device.Type.values()[(int) args[1]] == Device.Type.CPU ? Device.cpu() : Device.cuda((int) args[2]);
            int n = (int) args[3];
            return Torch.emptyStrided(longs(java.util.Arrays.copyOfRange(args, 4, 4 + n)), longs(java.util.Arrays.copyOfRange(args, 4 + n, 4 + 2 * n)),
                    DType.values()[(int) args[0]], device);
        }
        if (op == FrontEndOps.FULL) {
            DType dtype = DType.values()[(int) args[3]];
            Device device = Device.Type.values()[(int) args[4]] == Device.Type.CPU ? Device.cpu() : Device.cuda((int) args[5]);
            long[] shape = longs(java.util.Arrays.copyOfRange(args, 6, args.length));
            return dtype.isFloatingPoint() ? Torch.full(shape, args[0], dtype, device)
                    : Torch.full(shape, org.jtorch.op.CopyOps.fillExact(args), dtype, device);
        }
        if (op == RandomOps.RAND || op == RandomOps.RANDN || op == RandomOps.RANDINT) {
            org.jtorch.types.Generator gen = org.jtorch.types.Generator.byId(op.pyName(), (long) args[0]);
            DType dtype = DType.values()[(int) args[1]];
            Device device = Device.Type.values()[(int) args[2]] == Device.Type.CPU ? Device.cpu() : Device.cuda((int) args[3]);
            int sizeAt = op == RandomOps.RANDINT ? 8 : 4;
            long[] shape = longs(java.util.Arrays.copyOfRange(args, sizeAt, args.length));
            if (op == RandomOps.RAND) return Torch.rand(shape, dtype, device, gen);
            if (op == RandomOps.RANDN) return Torch.randn(shape, dtype, device, gen);
            return Torch.randint(RandomOps.exact(args, 4), RandomOps.exact(args, 6), shape, dtype, device, gen);
        }
        if (op == RandomOps.RANDPERM) {
            Device device = Device.Type.values()[(int) args[2]] == Device.Type.CPU ? Device.cpu() : Device.cuda((int) args[3]);
            return Torch.randperm((long) args[4], DType.values()[(int) args[1]], device, org.jtorch.types.Generator.byId(op.pyName(), (long) args[0]));
        }
        if (op == FrontEndOps.CONV2D) {
            return Convolution.conv2d(in[0], in[1], in[2], ints(args, 0, 2), ints(args, 2, 4), ints(args, 4, 6), (int) args[6]);
        }
        if (op == FrontEndOps.CONV1D) return Convolution.conv1d(in[0], in[1], in[2], (int) args[0], (int) args[1], (int) args[2], (int) args[3]);
        if (op == FrontEndOps.CONV_TRANSPOSE2D) {
            return Convolution.convTranspose2d(in[0], in[1], in[2], ints(args, 0, 2), ints(args, 2, 4), ints(args, 4, 6), (int) args[6],
                    ints(args, 7, 9));
        }
        if (op == FrontEndOps.CONV_TRANSPOSE1D) {
            return Convolution.convTranspose1d(in[0], in[1], in[2], (int) args[0], (int) args[1], (int) args[2], (int) args[3], (int) args[4]);
        }
        if (op == FrontEndOps.CONV3D) {
            return Convolution3d.conv3d(in[0], in[1], in[2], ints(args, 0, 3), ints(args, 3, 6), ints(args, 6, 9), (int) args[9]);
        }
        if (op == FrontEndOps.CONV_TRANSPOSE3D) {
            return Convolution3d.convTranspose3d(in[0], in[1], in[2], ints(args, 0, 3), ints(args, 3, 6), ints(args, 6, 9), (int) args[9],
                    ints(args, 10, 13));
        }
        if (op == org.jtorch.op.SortingOps.SEARCHSORTED) return Sorting.searchsorted(in[0], in[1], args[0] != 0, args[1] != 0, in[2]);
        if (op == FrontEndOps.BILINEAR) return Linalg.bilinear(in[0], in[1], in[2], in[3]);
        if (op == FrontEndOps.MAX_UNPOOL2D) return Pooling.maxUnpool2d(in[0], in[1], (long) args[0], (long) args[1]);
        if (op == org.jtorch.op.NormalizationOps.BATCH_NORM_BACKWARD_COMPOSITE) {
            return Normalization.batchNormBackwardComposite(in[0], in[1], in[2], in[3], in[4], args[0] != 0, args[1], (int) args[2]);
        }
        if (op == org.jtorch.op.RecurrentOps.LSTM_CELL_BACKWARD_COMPOSITE) {
            return Recurrent.lstmCellBackwardComposite(in[0], in[1], in[2], in[3], in[4], in[5], (int) args[0]);
        }
        if (op == org.jtorch.op.RecurrentOps.RNN_LAYER_BACKWARD_COMPOSITE) {
            return Recurrent.layerBackwardComposite(in, (int) args[0], args[1] != 0, (int) args[2]);
        }
        if (op == org.jtorch.op.RecurrentOps.GRU_CELL_BACKWARD_COMPOSITE) {
            return Recurrent.gruCellBackwardComposite(in[0], in[1], in[2], in[3], (int) args[0]);
        }
        if (op == org.jtorch.op.NormalizationOps.LAYER_NORM_BACKWARD_COMPOSITE) {
            return Normalization.layerNormBackwardComposite(in[0], in[1], in[2], (int) args[0], args[1], (int) args[2]);
        }
        if (op == org.jtorch.op.LossOps.CROSS_ENTROPY_BACKWARD_COMPOSITE) {
            return LossBackward.crossEntropy(in[0], in[1], in[2], in[3], (int) args[0], (long) args[1], args[2]);
        }
        if (op == org.jtorch.op.AttentionOps.ATTENTION_MATH) return Attention.math(in[0], in[1], in[2], in[3], in[4], args[0] != 0, args[1]);
        if (op == org.jtorch.op.AttentionOps.FLASH_ATTENTION_BACKWARD_COMPOSITE) {
            return Attention.backwardComposite(in[0], in[1], in[2], in[3], in[4], in[5], args[0] != 0, args[1], (int) args[2]);
        }
        if (op == org.jtorch.op.ReductionOps.LOG_SOFTMAX_BACKWARD_COMPOSITE) return Reductions.logSoftmaxBackwardComposite(in[0], in[1], (int) args[0]);
        if (op == org.jtorch.op.ReductionOps.CUMPROD_BACKWARD) return Reductions.cumprodBackward(in[0], in[1], in[2], (int) args[0]);
        if (op == org.jtorch.op.LossOps.NLL_LOSS_COMPOSITE) return Losses.nllLossComposite(in[0], in[1], in[2], (int) args[0], (long) args[1]);
        if (op == org.jtorch.op.LossOps.NLL_LOSS_BACKWARD_COMPOSITE) {
            return Losses.nllLossBackwardComposite(in[0], in[1], in[2], in[3], (int) args[0], (long) args[1]);
        }
        if (op == org.jtorch.op.LossOps.CROSS_ENTROPY_COMPOSITE) {
            return Losses.crossEntropy(in[0], in[1], in[2], (int) args[0], (long) args[1], args[2]);
        }
        if (op == org.jtorch.op.NormalizationOps.LAYER_NORM_COMPOSITE) {
            return Normalization.layerNormComposite(in[0], in[1], in[2], (int) args[0], args[1]);
        }
        if (op == org.jtorch.op.LossOps.BINARY_CROSS_ENTROPY_BACKWARD) {
            return LossBackward.binaryCrossEntropy(in[0], in[1], in[2], in[3], (int) args[0]);
        }
        if (op == org.jtorch.op.LossOps.BINARY_CROSS_ENTROPY_TARGET_BACKWARD) {
            return LossBackward.binaryCrossEntropyTarget(in[0], in[1], in[2], in[3], (int) args[0]);
        }
        if (op == org.jtorch.op.LossOps.MSE_LOSS_BACKWARD_COMPOSITE) return LossBackward.mse(in[0], in[1], in[2], (int) args[0]);
        if (op == FrontEndOps.BATCH_NORM) return Normalization.batchNorm(in[0], in[1], in[2], in[3], in[4], args[0] != 0, args[1], args[2]);
        if (op == FrontEndOps.MAX_POOL2D) {
            Lists l = new Lists(args);
            return Pooling.maxPool2d(in[0], l.next(), l.next(), l.next(), l.next(), l.rest()[0] != 0);
        }
        if (op == FrontEndOps.MAX_POOL1D) {
            Pool1dArgs p = Pool1dArgs.of(op, args, true);
            return Pooling.maxPool1d(in[0], p.kernel(), p.stride(), p.padding(), p.dilation(), p.flags()[0] != 0);
        }
        if (op == FrontEndOps.AVG_POOL1D) {
            Pool1dArgs p = Pool1dArgs.of(op, args, false);
            return Pooling.avgPool1d(in[0], p.kernel(), p.stride(), p.padding(), p.flags()[0] != 0, p.flags()[1] != 0);
        }
        if (op == FrontEndOps.ADAPTIVE_AVG_POOL1D) return Pooling.adaptiveAvgPool1d(in[0], (long) args[0]);
        if (op == FrontEndOps.MAX_POOL3D) {
            Lists l = new Lists(args);
            return Pooling3d.maxPool3d(in[0], l.next(), l.next(), l.next(), l.next(), l.rest()[0] != 0);
        }
        if (op == FrontEndOps.ADAPTIVE_AVG_POOL3D) return Pooling3d.adaptiveAvgPool3d(in[0], longs(args));
        if (op == FrontEndOps.AVG_POOL3D) {
            Lists l = new Lists(args);
            int[] kernel = l.next(), stride = l.next(), padding = l.next();
            double[] rest = l.rest();
            return Pooling3d.avgPool3d(in[0], kernel, stride, padding, rest[0] != 0, rest[1] != 0, rest[2] == 0 ? null : (long) rest[2]);
        }
        if (op == FrontEndOps.MAX_UNPOOL3D) return Pooling3d.maxUnpool3d(in[0], in[1], longs(java.util.Arrays.copyOfRange(args, 0, 3)));
        if (Padding.modeOf(op) != null) return Padding.padAs(op, in[0], longs(args));
        if (op == FrontEndOps.PIXEL_SHUFFLE) return Resampling.pixelShuffle(in[0], (int) args[0]);
        if (op == FrontEndOps.PIXEL_UNSHUFFLE) return Resampling.pixelUnshuffle(in[0], (int) args[0]);
        if (Resampling.isUpsample(op)) return Resampling.upsampleAs(op, in[0], args);
        if (Dropouts.isDeclared(op)) return Dropouts.callAs(op, in[0], args);
        if (op == FrontEndOps.EMBEDDING_RENORM_) return Indexing.embeddingRenorm_(in[0], in[1], args[0], args[1]);
        if (op == org.jtorch.op.LossOps.CROSS_ENTROPY_LOSS) return Losses.crossEntropyLoss(in[0], in[1], in[2], (int) args[0], (long) args[1], args[2]);
        throw new IllegalStateException(op.name() + " has no front end to call");
    }

    /** The lists of {@link #lists}, read back in order, then the remaining scalars. */
    private static final class Lists {
        private final double[] args;
        private int at;

        Lists(double[] args) {
            this.args = args;
        }

        int[] next() {
            int n = (int) args[at++];
            if (n < 0) return null;
            int[] v = ints(args, at, at + n);
            at += n;
            return v;
        }

        double[] rest() {
            return java.util.Arrays.copyOfRange(args, at, args.length);
        }
    }

    /** A 1-d pool's traced lists, one int each (a missing stride: null), then its flags (ceil_mode, ...). */
    private record Pool1dArgs(int kernel, Integer stride, int padding, int dilation, double[] flags) {
        static Pool1dArgs of(OpDef op, double[] args, boolean dilated) {
            Lists l = new Lists(args);
            int kernel = one(op, l.next(), "kernel_size");
            int[] stride = l.next();
            int padding = one(op, l.next(), "padding");
            int dilation = dilated ? one(op, l.next(), "dilation") : 1;
            return new Pool1dArgs(kernel, stride == null ? null : one(op, stride, "stride"), padding, dilation, l.rest());
        }

        private static int one(OpDef op, int[] list, String name) {
            if (list == null || list.length != 1) {
                throw new IllegalArgumentException(op.pyName() + ": " + name + " must be one int, got " + java.util.Arrays.toString(list));
            }
            return list[0];
        }
    }

    private static int[] ints(double[] args, int from, int to) {
        return ints(java.util.Arrays.copyOfRange(args, from, to));
    }

    /** Integer lists of any length, each behind its length (-1 for null), then {@code scalars}: as the trace records them. */
    public static double[] lists(int[][] lists, double... scalars) {
        int n = scalars.length;
        for (int[] l : lists) n += 1 + (l == null ? 0 : l.length);
        double[] d = new double[n];
        int at = 0;
        for (int[] l : lists) {
            d[at++] = l == null ? -1 : l.length;
            if (l != null) for (int v : l) d[at++] = v;
        }
        System.arraycopy(scalars, 0, d, at, scalars.length);
        return d;
    }

    /** Concatenated integer arguments as doubles. */
    public static double[] concat(int[]... parts) {
        int n = 0;
        for (int[] p : parts) n += p.length;
        double[] d = new double[n];
        int at = 0;
        for (int[] p : parts) for (int v : p) d[at++] = v;
        return d;
    }

    private static long[] longs(double[] args) {
        long[] v = new long[args.length];
        for (int i = 0; i < v.length; i++) v[i] = (long) args[i];
        return v;
    }

    private static int[] ints(double[] args) {
        int[] v = new int[args.length];
        for (int i = 0; i < v.length; i++) v[i] = (int) args[i];
        return v;
    }

    /** A list of integer arguments as the trace records them. */
    public static double[] args(long[] values) {
        double[] d = new double[values.length];
        for (int i = 0; i < d.length; i++) d[i] = values[i];
        return d;
    }

    public static double[] args(int... values) {
        double[] d = new double[values.length];
        for (int i = 0; i < d.length; i++) d[i] = values[i];
        return d;
    }
}
