package org.jtorch.distributed;

import java.util.Arrays;
import java.util.PrimitiveIterator;
import org.jtorch.data.Dataset;
import org.jtorch.data.Sampler;

/**
 * The share of a dataset's indices that one rank reads, as {@code torch.utils.data.distributed.DistributedSampler},
 * index for index: the indices are shuffled with PyTorch's {@code randperm} on a generator seeded with
 * {@code seed + epoch} (so every rank draws the same permutation and {@link #setEpoch} changes it), padded by
 * repeating its start until it divides evenly among the replicas (or, with {@code dropLast}, cut to a multiple),
 * and rank r takes every {@code numReplicas}-th index from position r.
 *
 * <p>Call {@link #setEpoch} before each epoch, as in PyTorch; otherwise every epoch has the same order.
 */
public final class DistributedSampler implements Sampler {
    private final int datasetSize;
    private final int numReplicas;
    private final int rank;
    private final boolean shuffle;
    private final long seed;
    private final boolean dropLast;
    private final int numSamples;
    private long epoch;

    /** The sampler for this process's rank in the default group ({@link Distributed}), shuffled, seed 0. */
    public DistributedSampler(Dataset<?> dataset) {
        this(requireDataset(dataset).size(), Distributed.worldSize(), Distributed.rank(), true, 0, false);
    }

    public DistributedSampler(int datasetSize, int numReplicas, int rank, boolean shuffle, long seed, boolean dropLast) {
        if (datasetSize < 0) throw new IllegalArgumentException("DistributedSampler: negative dataset size " + datasetSize);
        if (numReplicas < 1) throw new IllegalArgumentException("DistributedSampler: numReplicas must be positive, got " + numReplicas);
        if (rank < 0 || rank >= numReplicas) {
            throw new IllegalArgumentException("DistributedSampler: Invalid rank " + rank + ", rank should be in the interval [0, "
                    + (numReplicas - 1) + "]");
        }
        this.datasetSize = datasetSize;
        this.numReplicas = numReplicas;
        this.rank = rank;
        this.shuffle = shuffle;
        this.seed = seed;
        this.dropLast = dropLast;
        this.numSamples = dropLast && datasetSize % numReplicas != 0
                ? (int) Math.ceil((datasetSize - numReplicas) / (double) numReplicas)
                : (int) Math.ceil(datasetSize / (double) numReplicas);
    }

    private static Dataset<?> requireDataset(Dataset<?> dataset) {
        if (dataset == null) throw new NullPointerException("DistributedSampler: dataset is null");
        return dataset;
    }

    /** Sets the epoch, which reseeds the shuffle ({@code seed + epoch}). */
    public void setEpoch(long epoch) {
        this.epoch = epoch;
    }

    public long epoch() {
        return epoch;
    }

    @Override
    public PrimitiveIterator.OfInt iterator() {
        return Arrays.stream(indices()).iterator();
    }

    /** This rank's indices for the current epoch. */
    public int[] indices() {
        int[] all;
        if (shuffle) {
            all = new MersenneTwister(seed + epoch).randperm(datasetSize);
        } else {
            all = new int[datasetSize];
            for (int i = 0; i < datasetSize; i++) all[i] = i;
        }
        int totalSize = numSamples * numReplicas;
        int[] padded = new int[totalSize];
        if (datasetSize > 0) {
            for (int i = 0; i < totalSize; i++) padded[i] = all[i % datasetSize]; // repeats the start, as PyTorch
        }
        int[] mine = new int[numSamples];
        for (int k = 0; k < numSamples; k++) mine[k] = padded[rank + k * numReplicas];
        return mine;
    }

    @Override
    public int size() {
        return numSamples;
    }
}
