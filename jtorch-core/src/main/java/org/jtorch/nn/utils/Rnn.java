package org.jtorch.nn.utils;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.Shapes;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * Variable-length sequences for the recurrent layers, as {@code torch.nn.utils.rnn} (PyTorch 1.13): padding a list
 * of sequences into one tensor, packing a padded batch into a {@link PackedSequence} and back. Every function is
 * differentiable with respect to the sequence data (each is one gather with {@code indexSelect}, so backward costs
 * one pass whatever the length). Lengths are host values ({@code long[]}, or a CPU int64 tensor, as PyTorch requires).
 */
public final class Rnn {
    private Rnn() {}

    /** A padded batch and the length of each of its sequences, as {@code pad_packed_sequence} returns. */
    public record Padded(Tensor padded, long[] lengths) implements AutoCloseable {
        public Padded {
            Arguments.nonNull("Rnn.Padded", "padded", padded);
            Arguments.nonNull("Rnn.Padded", "lengths", lengths);
        }

        @Override
        public void close() {
            padded.close();
        }
    }

    /**
     * {@code pack_padded_sequence}: packs {@code input} ({@code [T, B, *]}, or {@code [B, T, *]} with {@code batchFirst})
     * whose sequence {@code b} has {@code lengths[b]} valid steps. With {@code enforceSorted} the lengths must be
     * non-increasing; otherwise the batch is sorted (stably) by decreasing length and the packed sequence remembers the
     * permutation.
     */
    public static PackedSequence packPaddedSequence(Tensor input, long[] lengths, boolean batchFirst, boolean enforceSorted) {
        final String op = "packPaddedSequence";
        Arguments.nonNull(op, "input", input);
        Arguments.nonNull(op, "lengths", lengths);
        input.checkOpen(op);
        if (input.dim() < 2) {
            throw new IllegalArgumentException(op + ": expected a padded input of at least 2 dimensions, got shape " + Shapes.format(input.shape()));
        }
        int batchDim = batchFirst ? 0 : 1;
        long batch = input.size(batchDim), steps = input.size(1 - batchDim);
        if (lengths.length != batch) {
            throw new IllegalArgumentException(op + ": Expected `len(lengths)` to be equal to batch_size, but got " + lengths.length
                    + " (batch_size=" + batch + ")");
        }
        Integer[] order = new Integer[lengths.length];
        for (int i = 0; i < order.length; i++) order[i] = i;
        if (enforceSorted) {
            for (int i = 1; i < lengths.length; i++) {
                if (lengths[i] > lengths[i - 1]) {
                    throw new IllegalArgumentException(op + ": `lengths` array must be sorted in decreasing order when `enforce_sorted`"
                            + " is True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep"
                            + " this requirement if you do not need ONNX exportability. Got " + Arrays.toString(lengths));
                }
            }
        } else {
            Arrays.sort(order, (a, b) -> Long.compare(lengths[b], lengths[a]));
        }
        long[] sortedLengths = new long[lengths.length];
        for (int i = 0; i < order.length; i++) sortedLengths[i] = lengths[order[i]];
        if (batch == 0 || sortedLengths[sortedLengths.length - 1] <= 0) {
            throw new IllegalArgumentException(op + ": Length of all samples has to be greater than 0, but found an element in"
                    + " 'lengths' that is <= 0: " + Arrays.toString(lengths));
        }
        if (sortedLengths[0] > steps) {
            throw new IllegalArgumentException(op + ": the longest length " + sortedLengths[0] + " exceeds the " + steps
                    + " time steps of the input of shape " + Shapes.format(input.shape()));
        }
        long[] batchSizes = new long[(int) sortedLengths[0]];
        for (long len : sortedLengths) for (int t = 0; t < len; t++) batchSizes[t]++;
        // Row t * batch + order[b] of the time-major input, for each step t and running sequence b.
        long[] rows = new long[(int) Arrays.stream(batchSizes).sum()];
        int k = 0;
        for (int t = 0; t < batchSizes.length; t++) for (int b = 0; b < batchSizes[t]; b++) rows[k++] = t * batch + order[b];
        Device device = input.device();
        try (MemoryScope scope = new MemoryScope()) {
            Tensor timeMajor = batchFirst ? input.transpose(0, 1) : input;
            Tensor data = timeMajor.flatten(0, 1).indexSelect(0, indices(rows, device));
            Tensor sorted = null, unsorted = null;
            if (!enforceSorted) {
                long[] s = new long[order.length], u = new long[order.length];
                for (int i = 0; i < order.length; i++) {
                    s[i] = order[i];
                    u[order[i]] = i;
                }
                sorted = scope.keep(indices(s, device));
                unsorted = scope.keep(indices(u, device));
            }
            return new PackedSequence(scope.keep(data), batchSizes, sorted, unsorted);
        }
    }

    /** As {@link #packPaddedSequence(Tensor, long[], boolean, boolean)}, with the lengths as a 1-D int64 CPU tensor. */
    public static PackedSequence packPaddedSequence(Tensor input, Tensor lengths, boolean batchFirst, boolean enforceSorted) {
        Arguments.nonNull("packPaddedSequence", "input", input);
        Arguments.nonNull("packPaddedSequence", "lengths", lengths);
        if (lengths.dim() != 1 || lengths.dtype() != DType.INT64 || !lengths.device().equals(Device.cpu())) {
            throw new IllegalArgumentException("packPaddedSequence: 'lengths' argument should be a 1D CPU int64 tensor, but got "
                    + lengths.dim() + "D " + lengths.device() + " " + lengths.dtype() + " tensor");
        }
        return packPaddedSequence(input, lengths.toLongArray(), batchFirst, enforceSorted);
    }

    /**
     * {@code pad_packed_sequence}: the padded batch ({@code [T, B, *]}, or {@code [B, T, *]} with {@code batchFirst}) in the
     * caller's order, with {@code paddingValue} after each sequence's end, and the lengths. {@code totalLength} (null:
     * the longest length) pads to that many steps.
     */
    public static Padded padPackedSequence(PackedSequence sequence, boolean batchFirst, double paddingValue, Long totalLength) {
        final String op = "padPackedSequence";
        Arguments.nonNull(op, "sequence", sequence);
        long[] batchSizes = sequence.batchSizes();
        Tensor data = sequence.data();
        data.checkOpen(op);
        int maxLength = batchSizes.length;
        if (totalLength != null && totalLength < maxLength) {
            throw new IllegalArgumentException(op + ": Expected total_length to be at least the length of the longest sequence in"
                    + " input, but got total_length=" + totalLength + " and max sequence length being " + maxLength);
        }
        long steps = totalLength == null ? maxLength : totalLength;
        long batch = batchSizes[0], packedRows = data.size(0);
        // Each padded cell reads its packed row, or the padding row appended after them.
        long[] rows = new long[(int) (steps * batch)];
        Arrays.fill(rows, packedRows);
        long offset = 0;
        for (int t = 0; t < maxLength; t++) {
            for (int b = 0; b < batchSizes[t]; b++) rows[(int) (t * batch + b)] = offset + b;
            offset += batchSizes[t];
        }
        long[] sortedLengths = new long[(int) batch];
        for (long bs : batchSizes) for (int b = 0; b < bs; b++) sortedLengths[b]++;
        long[] shape = data.shape().clone();
        shape[0] = 1;
        try (MemoryScope scope = new MemoryScope()) {
            Tensor padRow = Torch.full(shape, paddingValue, data.dtype(), data.device());
            Tensor gathered = Torch.cat(List.of(data, padRow), 0).indexSelect(0, indices(rows, data.device()));
            long[] paddedShape = new long[data.dim() + 1];
            paddedShape[0] = steps;
            paddedShape[1] = batch;
            System.arraycopy(data.shape(), 1, paddedShape, 2, data.dim() - 1);
            Tensor padded = gathered.view(paddedShape);
            long[] lengths = sortedLengths;
            Tensor unsorted = sequence.unsortedIndices();
            if (unsorted != null) {
                padded = padded.indexSelect(1, unsorted);
                long[] u = unsorted.to(Device.cpu()).toLongArray();
                lengths = new long[u.length];
                for (int i = 0; i < u.length; i++) lengths[i] = sortedLengths[(int) u[i]];
            }
            if (batchFirst) padded = padded.transpose(0, 1);
            return new Padded(scope.keep(padded), lengths);
        }
    }

    /** {@link #padPackedSequence(PackedSequence, boolean, double, Long)} padding with zeros to the longest length. */
    public static Padded padPackedSequence(PackedSequence sequence, boolean batchFirst) {
        return padPackedSequence(sequence, batchFirst, 0.0, null);
    }

    /**
     * {@code pad_sequence}: stacks sequences {@code [L_i, *]} (equal trailing shapes) into {@code [max L, B, *]} ({@code [B,
     * max L, *]} with {@code batchFirst}), filling the steps after each one's end with {@code paddingValue}.
     */
    public static Tensor padSequence(List<Tensor> sequences, boolean batchFirst, double paddingValue) {
        final String op = "padSequence";
        Arguments.nonNullElements(op, "sequences", sequences);
        if (sequences.isEmpty()) throw new IllegalArgumentException(op + ": received an empty list of sequences");
        Tensor first = sequences.get(0);
        long maxLength = 0;
        for (Tensor s : sequences) {
            s.checkOpen(op);
            if (s.dim() < 1 || s.dim() != first.dim()
                    || !Arrays.equals(Arrays.copyOfRange(s.shape(), 1, s.dim()), Arrays.copyOfRange(first.shape(), 1, first.dim()))) {
                throw new IllegalArgumentException(op + ": every sequence must be [L, *] with the same trailing dimensions, got "
                        + Shapes.format(first.shape()) + " and " + Shapes.format(s.shape()));
            }
            maxLength = Math.max(maxLength, s.size(0));
        }
        try (MemoryScope scope = new MemoryScope()) {
            List<Tensor> padded = new ArrayList<>(sequences.size());
            for (Tensor s : sequences) {
                if (s.size(0) == maxLength) {
                    padded.add(s);
                    continue;
                }
                long[] fill = s.shape().clone();
                fill[0] = maxLength - s.size(0);
                padded.add(Torch.cat(List.of(s, Torch.full(fill, paddingValue, s.dtype(), s.device())), 0));
            }
            return scope.keep(Torch.stack(padded, batchFirst ? 0 : 1));
        }
    }

    /** {@code pack_sequence}: packs sequences {@code [L_i, *]}; with {@code enforceSorted} they must come longest first. */
    public static PackedSequence packSequence(List<Tensor> sequences, boolean enforceSorted) {
        Arguments.nonNullElements("packSequence", "sequences", sequences);
        long[] lengths = new long[sequences.size()];
        for (int i = 0; i < lengths.length; i++) lengths[i] = sequences.get(i).dim() == 0 ? 0 : sequences.get(i).size(0);
        try (Tensor padded = padSequence(sequences, false, 0.0)) {
            return packPaddedSequence(padded, lengths, false, enforceSorted);
        }
    }

    private static Tensor indices(long[] values, Device device) {
        Tensor t = Torch.tensor(values);
        if (device.equals(Device.cpu())) return t;
        try (t) {
            return t.to(device);
        }
    }
}
