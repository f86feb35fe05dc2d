package org.jtorch.backend;

import org.jtorch.op.StridedView;

/**
 * Fused recurrent cell steps, as ATen's {@code _thnn_fused_lstm_cell} and {@code _thnn_fused_gru_cell}: the
 * gate nonlinearities and the state update of one time step in one pass over memory, forward and backward.
 * The matrix products that make the gates ({@code x @ W_ih^T + b_ih}, {@code h @ W_hh^T + b_hh}) stay
 * outside, so that the front end can batch the input products of a whole sequence into one GEMM.
 *
 * <p>Every tensor is contiguous {@code [batch, k * hidden]} of one floating dtype (float32 or float64) on
 * this backend's device, as the front end makes them; gate blocks are in PyTorch's order ({@code i, f, g,
 * o} for LSTM, {@code r, z, n} for GRU). A null incoming gradient means zero. Outputs are written whole.
 */
public interface RecurrentKernels {
    /**
     * LSTM step: {@code gates = inputGates + hiddenGates}, {@code i, f, o = sigmoid}, {@code g = tanh},
     * {@code cy = f * cx + i * g}, {@code hy = o * tanh(cy)}; {@code workspace} ({@code [b, 4h]}) receives the
     * activated gates for the backward.
     */
    void lstmCellForward(StridedView inputGates, StridedView hiddenGates, StridedView cx, StridedView hy, StridedView cy,
                         StridedView workspace);

    /**
     * LSTM step backward from the forward's {@code cx}, {@code cy} and {@code workspace}: {@code gradGates}
     * ({@code [b, 4h]}, the gradient of both gate inputs, before the nonlinearities) and {@code gradCx}.
     * {@code gradHy} and {@code gradCy} may be null.
     */
    void lstmCellBackward(StridedView gradHy, StridedView gradCy, StridedView cx, StridedView cy, StridedView workspace,
                          StridedView gradGates, StridedView gradCx);

    /**
     * GRU step: {@code r, z = sigmoid(input + hidden)} per gate, {@code n = tanh(in + r * hn)}, {@code hy = (1 - z)
     * * n + z * hx}; {@code workspace} ({@code [b, 4h]}) receives {@code r, z, n, hn}.
     */
    void gruCellForward(StridedView inputGates, StridedView hiddenGates, StridedView hx, StridedView hy, StridedView workspace);

    /**
     * GRU step backward from the forward's {@code hx} and {@code workspace}: the gradients of the input gates and
     * of the hidden gates ({@code [b, 3h]} each; they differ in the {@code n} block, which the hidden side sees
     * through {@code r}) and of {@code hx}. {@code gradHy} may be null.
     */
    void gruCellBackward(StridedView gradHy, StridedView hx, StridedView workspace, StridedView gradInputGates,
                         StridedView gradHiddenGates, StridedView gradHx);

    /**
     * Runs {@code block} over blocks of the batch rows {@code [0, batch)} that may run at once, each on one thread: a
     * recurrent layer's rows are independent through all its time steps (a step's hidden product and cell read only their
     * own rows of the state), so one block runs every step without waiting for another, where a split inside each step
     * waits for every thread at every step. {@code work} is the layer's multiply-adds, for the backend to judge whether a
     * split pays. By default one block, on the calling thread.
     */
    default void forBatchBlocks(long batch, long work, BatchBlock block) {
        block.run(0, batch);
    }

    /** The rows {@code [begin, end)} of a batch, for {@link #forBatchBlocks}. */
    @FunctionalInterface
    interface BatchBlock {
        void run(long begin, long end);
    }
}
