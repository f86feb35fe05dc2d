package org.jtorch.nn.utils;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * A batch of variable-length sequences packed time step after time step, as {@code torch.nn.utils.rnn.PackedSequence}:
 * {@link #data()} holds the rows of step 0 (one per sequence still running), then those of step 1, and so on, the
 * sequences sorted by decreasing length; {@link #batchSizes()} says how many rows each step has. The recurrent layers
 * take it as input and return their output in the same layout. {@link #sortedIndices()} maps the packed order to the
 * caller's batch order ({@code sorted[i]} is the caller's index of packed sequence {@code i}) and
 * {@link #unsortedIndices()} back; both are null when the batch was already sorted. Make one with
 * {@link Rnn#packPaddedSequence} or {@link Rnn#packSequence}.
 *
 * <p>Ownership: the packed sequence owns its tensors; {@link #close()} closes them.
 */
public final class PackedSequence implements AutoCloseable {
    private final Tensor data;
    private final long[] batchSizes;
    private final Tensor sortedIndices;
    private final Tensor unsortedIndices;

    /** A packed sequence of {@code data} ({@code [sum(batchSizes), *]}); the index tensors are int64 or both null. */
    public PackedSequence(Tensor data, long[] batchSizes, Tensor sortedIndices, Tensor unsortedIndices) {
        Arguments.nonNull("PackedSequence", "data", data);
        Arguments.nonNull("PackedSequence", "batchSizes", batchSizes);
        if ((sortedIndices == null) != (unsortedIndices == null)) {
            throw new IllegalArgumentException("PackedSequence: sortedIndices and unsortedIndices must be given together");
        }
        long rows = 0;
        for (int t = 0; t < batchSizes.length; t++) {
            if (batchSizes[t] <= 0 || (t > 0 && batchSizes[t] > batchSizes[t - 1])) {
                throw new IllegalArgumentException("PackedSequence: batch sizes must be positive and non-increasing, got "
                        + java.util.Arrays.toString(batchSizes));
            }
            rows += batchSizes[t];
        }
        if (batchSizes.length == 0 || data.dim() == 0 || data.size(0) != rows) {
            throw new IllegalArgumentException("PackedSequence: data of shape " + org.jtorch.op.Shapes.format(data.shape())
                    + " does not hold the " + rows + " rows of batch sizes " + java.util.Arrays.toString(batchSizes));
        }
        this.data = data;
        this.batchSizes = batchSizes.clone();
        this.sortedIndices = sortedIndices;
        this.unsortedIndices = unsortedIndices;
    }

    /** The packed rows, {@code [sum(batchSizes), *]}. */
    public Tensor data() {
        return data;
    }

    /** The number of sequences still running at each time step (a copy; non-increasing). */
    public long[] batchSizes() {
        return batchSizes.clone();
    }

    /** The caller's batch index of each packed sequence, or null when the batch was given sorted. */
    public Tensor sortedIndices() {
        return sortedIndices;
    }

    /** The packed index of each of the caller's sequences, or null when the batch was given sorted. */
    public Tensor unsortedIndices() {
        return unsortedIndices;
    }

    /** The same batch structure around new data (a recurrent layer's output). */
    public PackedSequence withData(Tensor newData) {
        Arguments.nonNull("PackedSequence.withData", "newData", newData);
        return new PackedSequence(newData, batchSizes, sortedIndices == null ? null : sortedIndices.alias(),
                unsortedIndices == null ? null : unsortedIndices.alias());
    }

    @Override
    public void close() {
        data.close();
        if (sortedIndices != null) sortedIndices.close();
        if (unsortedIndices != null) unsortedIndices.close();
    }

    @Override
    public String toString() {
        return "PackedSequence(data=" + org.jtorch.op.Shapes.format(data.shape()) + ", batch_sizes="
                + java.util.Arrays.toString(batchSizes) + (sortedIndices == null ? "" : ", sorted") + ")";
    }
}
