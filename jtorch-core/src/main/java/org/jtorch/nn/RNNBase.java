package org.jtorch.nn;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.Autocast;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.utils.PackedSequence;
import org.jtorch.ops.Recurrent;
import org.jtorch.op.Shapes;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Generator;

/**
 * The multi-layer recurrent layers {@link RNN}, {@link LSTM} and {@link GRU}, as PyTorch 1.13's {@code RNNBase}.
 *
 * <p>Parameters, per layer {@code l} and direction (suffix {@code _reverse} for the backward one), in PyTorch's
 * order and with its names, so that state dicts move both ways: {@code weight_ih_l<l>} {@code [G*H, in]},
 * {@code weight_hh_l<l>} {@code [G*H, H_out]}, {@code bias_ih_l<l>}, {@code bias_hh_l<l>} {@code [G*H]} and, for
 * an LSTM with a projection, {@code weight_hr_l<l>} {@code [P, H]}; {@code G} is 1 (RNN), 4 (LSTM: gates i, f,
 * g, o) or 3 (GRU: r, z, n), {@code H_out} is {@code P} with a projection and {@code H} otherwise, and {@code in}
 * is the input size for layer 0 and {@code D * H_out} above. Every parameter starts as PyTorch's:
 * U(-1/sqrt(H), 1/sqrt(H)).
 *
 * <p>How it runs: per layer and direction, the input projection of the whole sequence is one matrix product;
 * each time step then adds the hidden projection and runs the fused cell ({@link Recurrent#lstmCell},
 * {@link Recurrent#gruCell}). Packed sequences run the same loop with the batch shrinking (forward direction) or
 * growing (reverse) to {@code batchSizes[t]} rows at step {@code t}.
 */
public abstract class RNNBase extends Module {
    /** The cell a layer runs. */
    enum Mode {
        RNN_TANH(1), RNN_RELU(1), LSTM(4), GRU(3);

        final int gates;

        Mode(int gates) {
            this.gates = gates;
        }
    }

    private final String name;
    final Mode mode;
    final long inputSize;
    final long hiddenSize;
    final int numLayers;
    final boolean bias;
    final boolean batchFirst;
    final double dropout;
    final boolean bidirectional;
    final long projSize;
    private final Generator gen;

    RNNBase(String name, Mode mode, long inputSize, long hiddenSize, RNNOptions o) {
        Arguments.nonNull(name, "options", o);
        Arguments.nonNull(name, "dtype", o.dtype);
        Arguments.nonNull(name, "device", o.device);
        Arguments.nonNull(name, "generator", o.generator);
        if (!(o.dropout >= 0 && o.dropout <= 1)) {
            throw new IllegalArgumentException(name + ": dropout should be a number in range [0, 1] representing the probability of"
                    + " an element being zeroed, got " + o.dropout);
        }
        if (inputSize <= 0) throw new IllegalArgumentException(name + ": input_size must be greater than zero, got " + inputSize);
        if (hiddenSize <= 0) throw new IllegalArgumentException(name + ": hidden_size must be greater than zero, got " + hiddenSize);
        if (o.numLayers <= 0) throw new IllegalArgumentException(name + ": num_layers must be greater than zero, got " + o.numLayers);
        if (o.projSize < 0) throw new IllegalArgumentException(name + ": proj_size should be a positive integer or zero to disable projections, got " + o.projSize);
        if (o.projSize >= hiddenSize) throw new IllegalArgumentException(name + ": proj_size has to be smaller than hidden_size, got " + o.projSize + " >= " + hiddenSize);
        if (o.projSize > 0 && mode != Mode.LSTM) throw new IllegalArgumentException(name + ": proj_size argument is only supported for LSTM, not RNN or GRU");
        if (!o.dtype.isFloatingPoint()) throw new IllegalArgumentException(name + ": parameters need a floating point dtype, got " + o.dtype);
        this.name = name;
        this.mode = mode;
        this.inputSize = inputSize;
        this.hiddenSize = hiddenSize;
        this.numLayers = o.numLayers;
        this.bias = o.bias;
        this.batchFirst = o.batchFirst;
        this.dropout = o.dropout;
        this.bidirectional = o.bidirectional;
        this.projSize = o.projSize;
        this.gen = o.generator;
        long gateSize = mode.gates * hiddenSize;
        long outSize = outputFeatures();
        for (int layer = 0; layer < numLayers; layer++) {
            for (int dir = 0; dir < directions(); dir++) {
                String sfx = suffix(layer, dir);
                long in = layer == 0 ? inputSize : outSize * directions();
                registerParameter("weight_ih" + sfx, Tensor.empty(new long[] {gateSize, in}, o.dtype, o.device));
                registerParameter("weight_hh" + sfx, Tensor.empty(new long[] {gateSize, outSize}, o.dtype, o.device));
                if (bias) {
                    registerParameter("bias_ih" + sfx, Tensor.empty(new long[] {gateSize}, o.dtype, o.device));
                    registerParameter("bias_hh" + sfx, Tensor.empty(new long[] {gateSize}, o.dtype, o.device));
                }
                if (projSize > 0) registerParameter("weight_hr" + sfx, Tensor.empty(new long[] {projSize, hiddenSize}, o.dtype, o.device));
            }
        }
        resetParameters(gen);
    }

    private static String suffix(int layer, int dir) {
        return "_l" + layer + (dir == 1 ? "_reverse" : "");
    }

    int directions() {
        return bidirectional ? 2 : 1;
    }

    /** The features of a hidden state and of each direction's output: the projection size, or the hidden size. */
    long outputFeatures() {
        return projSize > 0 ? projSize : hiddenSize;
    }

    /** PyTorch's initialisation: every parameter U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), in registration order. */
    public void resetParameters(Generator g) {
        Arguments.nonNull("resetParameters", "g", g);
        double stdv = 1 / Math.sqrt(hiddenSize);
        for (Tensor p : parameters()) Init.uniform_(p, -stdv, stdv, g);
    }

    public void resetParameters() {
        resetParameters(Generator.defaultGenerator());
    }

    public long inputSize() {
        return inputSize;
    }

    public long hiddenSize() {
        return hiddenSize;
    }

    public int numLayers() {
        return numLayers;
    }

    public boolean isBidirectional() {
        return bidirectional;
    }

    public boolean isBatchFirst() {
        return batchFirst;
    }

    /** The shape of {@code h_0} / {@code h_n} for a batch of {@code batch} ({@code batch < 0}: unbatched). */
    long[] hiddenShape(long batch, long features) {
        return batch < 0 ? new long[] {numLayers * directions(), features} : new long[] {numLayers * directions(), batch, features};
    }

    // ------------------------------------------------------------------ running

    /** What one run produced: the output (padded or packed layout, as given), {@code h_n}, and {@code c_n} (LSTM; else null). */
    record Result(Tensor output, Tensor hN, Tensor cN) {}

    /**
     * Runs a padded input ({@code [T, N, in]} or {@code [N, T, in]} with {@code batchFirst}; unbatched {@code [T, in]}) from the
     * initial states (null: zeros).
     */
    Result runPadded(Tensor input, Tensor h0, Tensor c0) {
        Arguments.nonNull(name, "input", input);
        input.checkOpen(name);
        if (input.dim() != 2 && input.dim() != 3) {
            throw new IllegalArgumentException(name + ": expected input to be 2-D (unbatched) or 3-D, got " + input.dim()
                    + "-D tensor of shape " + Shapes.format(input.shape()));
        }
        boolean batched = input.dim() == 3;
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = batched ? (batchFirst ? input.transpose(0, 1) : input) : input.unsqueeze(1);
            long steps = x.size(0), batch = x.size(1);
            if (steps == 0) {
                throw new IllegalArgumentException(name + ": expected a sequence of at least one time step, got input of shape "
                        + Shapes.format(input.shape()));
            }
            Tensor h = h0 == null ? null : batched ? h0 : checkUnbatchedState("hx", h0).unsqueeze(1);
            Tensor c = c0 == null ? null : batched ? c0 : checkUnbatchedState("cx", c0).unsqueeze(1);
            long[] sizes = new long[(int) steps];
            java.util.Arrays.fill(sizes, batch);
            Result r = run(x.reshape(steps * batch, x.size(2)), sizes, batch, h, c);
            Tensor out = r.output.view(steps, batch, r.output.size(1));
            out = batched ? (batchFirst ? out.transpose(0, 1) : out) : out.squeeze(1);
            Tensor hN = batched ? r.hN : r.hN.squeeze(1);
            Tensor cN = r.cN == null ? null : batched ? r.cN : r.cN.squeeze(1);
            return new Result(scope.keep(out), scope.keep(hN), scope.keep(cN));
        }
    }

    private Tensor checkUnbatchedState(String what, Tensor s) {
        if (s.dim() != 2) {
            throw new IllegalArgumentException(name + ": for unbatched 2-D input, " + what + " should also be 2-D but got " + s.dim()
                    + "-D tensor of shape " + Shapes.format(s.shape()));
        }
        return s;
    }

    /** Runs a packed sequence; {@code h0} and {@code c0} are in the caller's batch order (as PyTorch's). */
    Result runPacked(PackedSequence input, Tensor h0, Tensor c0) {
        Arguments.nonNull(name, "input", input);
        long batch = input.batchSizes()[0];
        Tensor sorted = input.sortedIndices();
        try (MemoryScope scope = new MemoryScope()) {
            Tensor h = h0 == null || sorted == null ? h0 : h0.indexSelect(1, sorted);
            Tensor c = c0 == null || sorted == null ? c0 : c0.indexSelect(1, sorted);
            Result r = run(input.data(), input.batchSizes(), batch, h, c);
            Tensor unsorted = input.unsortedIndices();
            Tensor hN = unsorted == null ? r.hN : r.hN.indexSelect(1, unsorted);
            Tensor cN = r.cN == null || unsorted == null ? r.cN : r.cN.indexSelect(1, unsorted);
            return new Result(scope.keep(r.output), scope.keep(hN), scope.keep(cN));
        }
    }

    /**
     * The layers over rows {@code x} ({@code [sum(batchSizes), in]}, time step after time step, each step's rows a prefix of
     * the batch) from {@code h0}/{@code c0} ({@code [L*D, batch, *]} or null). Returns the last layer's output rows.
     */
    private Result run(Tensor x, long[] batchSizes, long batch, Tensor h0, Tensor c0) {
        if (x.size(x.dim() - 1) != inputSize) {
            throw new IllegalArgumentException(name + ": input.size(-1) must be equal to input_size. Expected " + inputSize + ", got "
                    + x.size(x.dim() - 1));
        }
        Tensor w0 = parameter("weight_ih_l0");
        if (x.dtype() != w0.dtype() || !x.device().equals(w0.device())) {
            throw new IllegalArgumentException(name + ": input and parameters must have the same dtype and device, got input "
                    + x.dtype() + " on " + x.device() + " and parameters " + w0.dtype() + " on " + w0.device());
        }
        long out = outputFeatures();
        Tensor h = h0 != null ? checkState("hx", h0, hiddenShape(batch, out), w0) : Torch.zeros(hiddenShape(batch, out), x.dtype(), x.device());
        Tensor c = null;
        if (mode == Mode.LSTM) {
            c = c0 != null ? checkState("cx", c0, hiddenShape(batch, hiddenSize), w0)
                    : Torch.zeros(hiddenShape(batch, hiddenSize), x.dtype(), x.device());
        }
        List<Tensor> hN = new ArrayList<>(), cN = new ArrayList<>();
        Tensor layerInput = x;
        for (int layer = 0; layer < numLayers; layer++) {
            List<Tensor> dirOutputs = new ArrayList<>();
            for (int dir = 0; dir < directions(); dir++) {
                int index = layer * directions() + dir;
                Tensor[] last = new Tensor[2];
                dirOutputs.add(direction(layerInput, batchSizes, suffix(layer, dir), dir == 1, h.select(0, index),
                        c == null ? null : c.select(0, index), last));
                hN.add(last[0]);
                if (c != null) cN.add(last[1]);
            }
            layerInput = dirOutputs.size() == 1 ? dirOutputs.get(0) : Torch.cat(dirOutputs, 1);
            if (dropout > 0 && isTraining() && layer < numLayers - 1) layerInput = F.dropout(layerInput, dropout, true, gen);
        }
        return new Result(layerInput, Torch.stack(hN, 0), c == null ? null : Torch.stack(cN, 0));
    }

    private Tensor checkState(String what, Tensor s, long[] expected, Tensor w) {
        s.checkOpen(name);
        if (!java.util.Arrays.equals(s.shape(), expected)) {
            throw new IllegalArgumentException(name + ": Expected hidden size " + Shapes.format(expected) + ", got "
                    + Shapes.format(s.shape()) + " for " + what);
        }
        if (s.dtype() != w.dtype() || !s.device().equals(w.device())) {
            throw new IllegalArgumentException(name + ": " + what + " must have the parameters' dtype and device, got " + s.dtype()
                    + " on " + s.device() + " and " + w.dtype() + " on " + w.device());
        }
        return s;
    }

    /**
     * One direction of one layer: returns its output rows ({@code [sum(batchSizes), H_out]}) and puts the final hidden (and
     * cell) state of every batch row into {@code last}.
     */
    private Tensor direction(Tensor x, long[] batchSizes, String sfx, boolean reverse, Tensor h0, Tensor c0, Tensor[] last) {
        Tensor wIh = parameter("weight_ih" + sfx), wHh = parameter("weight_hh" + sfx);
        Tensor bIh = bias ? parameter("bias_ih" + sfx) : null, bHh = bias ? parameter("bias_hh" + sfx) : null;
        Tensor wHr = projSize > 0 ? parameter("weight_hr" + sfx) : null;
        // A padded LSTM or GRU layer in float32/float64 runs as one fused op (its weight gradients one product each, not
        // one per step); packed batches, projections and autocast's mixed dtypes run step by step.
        boolean fusedLayer = (mode == Mode.LSTM || mode == Mode.GRU) && wHr == null && sameBatchEveryStep(batchSizes)
                && (x.dtype() == DType.FLOAT32 || x.dtype() == DType.FLOAT64) && !Autocast.isEnabled(x.device());
        if (fusedLayer) {
            Recurrent.Layer layer = mode == Mode.LSTM ? Recurrent.lstmLayer(x, wIh, wHh, bIh, bHh, h0, c0, batchSizes.length, reverse)
                    : Recurrent.gruLayer(x, wIh, wHh, bIh, bHh, h0, batchSizes.length, reverse);
            last[0] = layer.hN();
            last[1] = layer.cN();
            return layer.output();
        }
        List<Tensor> inputGates = Recurrent.splitRows(F.linear(x, wIh, bIh), batchSizes);
        int steps = batchSizes.length;
        Tensor[] outputs = new Tensor[steps];
        List<Tensor> finishedH = new ArrayList<>(), finishedC = new ArrayList<>();
        long rows = reverse ? batchSizes[steps - 1] : batchSizes[0];
        Tensor h = h0.narrow(0, 0, rows);
        Tensor c = c0 == null ? null : c0.narrow(0, 0, rows);
        for (int s = 0; s < steps; s++) {
            int t = reverse ? steps - 1 - s : s;
            long bs = batchSizes[t];
            if (bs < rows) {
                // Forward direction: the sequences that ended keep their last state.
                finishedH.add(h.narrow(0, bs, rows - bs));
                h = h.narrow(0, 0, bs);
                if (c != null) {
                    finishedC.add(c.narrow(0, bs, rows - bs));
                    c = c.narrow(0, 0, bs);
                }
            } else if (bs > rows) {
                // Reverse direction: the sequences that start here join from their initial state.
                h = Torch.cat(List.of(h, h0.narrow(0, rows, bs - rows)), 0);
                if (c != null) c = Torch.cat(List.of(c, c0.narrow(0, rows, bs - rows)), 0);
            }
            rows = bs;
            Tensor hiddenGates = F.linear(h, wHh, bHh);
            Tensor ig = inputGates.get(t);
            switch (mode) {
                case LSTM -> {
                    Recurrent.LstmStep step = Recurrent.lstmCell(ig, hiddenGates, c);
                    c = step.cy();
                    h = wHr == null ? step.hy() : F.linear(step.hy(), wHr, null);
                }
                case GRU -> h = Recurrent.gruCell(ig, hiddenGates, h);
                case RNN_TANH -> h = ig.add(hiddenGates).tanh();
                case RNN_RELU -> h = ig.add(hiddenGates).relu();
            }
            outputs[t] = h;
        }
        Collections.reverse(finishedH);
        Collections.reverse(finishedC);
        finishedH.add(0, h);
        last[0] = finishedH.size() == 1 ? h : Torch.cat(finishedH, 0);
        if (c != null) {
            finishedC.add(0, c);
            last[1] = finishedC.size() == 1 ? c : Torch.cat(finishedC, 0);
        }
        return Torch.cat(List.of(outputs), 0);
    }

    /** A padded batch: every sequence runs every step (the fused layer's case; packed sequences shrink the batch). */
    private static boolean sameBatchEveryStep(long[] batchSizes) {
        for (long b : batchSizes) if (b != batchSizes[0]) return false;
        return true;
    }

    @Override
    protected String extraRepr() {
        StringBuilder sb = new StringBuilder().append(inputSize).append(", ").append(hiddenSize);
        if (projSize != 0) sb.append(", proj_size=").append(projSize);
        if (numLayers != 1) sb.append(", num_layers=").append(numLayers);
        if (!bias) sb.append(", bias=False");
        if (batchFirst) sb.append(", batch_first=True");
        if (dropout != 0) sb.append(", dropout=").append(dropout);
        if (bidirectional) sb.append(", bidirectional=True");
        return sb.toString();
    }
}
