package org.jtorch.bench;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.GRU;
import org.jtorch.nn.LSTM;
import org.jtorch.nn.RNNBase;
import org.jtorch.ops.Recurrent;

/**
 * Recurrent layers on the CPU: an LSTM and a GRU layer of pytorch/examples' word language model (sequence 35, batch 20,
 * 200 features in and hidden, 2 layers), forward and forward+backward; and one LSTM/GRU cell step's pointwise part
 * ({@code [20, 4*200]} gates) fused ({@link Recurrent#lstmCell}) against the same formulas as tensor ops
 * ({@link Recurrent#lstmCellComposed}), forward+backward, measured in alternating rounds. With {@code cpuTime} the layers
 * are timed in the calling thread's CPU time (for {@code JTORCH_NUM_THREADS=1} on a loaded machine).
 */
final class RnnBench {
    private static final int SEQ = 35, BATCH = 20, HIDDEN = 200, LAYERS = 2;

    private RnnBench() {}

    static Map<String, Double> run(boolean quick, boolean cpuTime) {
        Map<String, Double> r = new LinkedHashMap<>();
        int reps = quick ? 5 : 15;
        Torch.manualSeed(1);
        try (Tensor x = Torch.randn(SEQ, BATCH, HIDDEN); Tensor up = Torch.randn(SEQ, BATCH, HIDDEN)) {
            try (LSTM lstm = new LSTM(HIDDEN, HIDDEN, LSTM.options().numLayers(LAYERS))) {
                layer(r, "lstm", lstm, x, up, reps, cpuTime);
            }
            try (GRU gru = new GRU(HIDDEN, HIDDEN, GRU.options().numLayers(LAYERS))) {
                layer(r, "gru", gru, x, up, reps, cpuTime);
            }
        }
        cellSteps(r, quick ? 5 : 11);
        return r;
    }

    private static void layer(Map<String, Double> r, String name, RNNBase m, Tensor x, Tensor up, int reps, boolean cpuTime) {
        String shape = "_35x20x200_2l_ms";
        java.util.function.ToDoubleFunction<Runnable> time = body -> cpuTime ? Timing.medianCpu(3, reps, body) : Timing.median(3, reps, body);
        double fwd = time.applyAsDouble(() -> {
            try (MemoryScope s = new MemoryScope(); var g = org.jtorch.autograd.Grad.noGrad()) {
                m.forward(x);
            }
        });
        r.put(name + "_fwd" + shape, fwd * 1e3);
        Tensor xg = x.alias().requiresGrad_(true);
        double step = time.applyAsDouble(() -> {
            try (MemoryScope s = new MemoryScope()) {
                m.zeroGrad();
                m.forward(xg).mul(up).sum().backward();
                xg.setGrad(null);
            }
        });
        xg.close();
        r.put(name + "_fwdbwd" + shape, step * 1e3);
    }

    /** The pointwise step alone, fused and composed, forward+backward: the medians of {@code rounds} alternating rounds. */
    private static void cellSteps(Map<String, Double> r, int rounds) {
        try (Tensor ig = Torch.randn(BATCH, 4 * HIDDEN).requiresGrad_(true); Tensor hg = Torch.randn(BATCH, 4 * HIDDEN).requiresGrad_(true);
             Tensor cx = Torch.randn(BATCH, HIDDEN).requiresGrad_(true); Tensor gi = Torch.randn(BATCH, 3 * HIDDEN).requiresGrad_(true);
             Tensor gh = Torch.randn(BATCH, 3 * HIDDEN).requiresGrad_(true)) {
            Runnable lstmFused = () -> lstmStep(Recurrent.lstmCell(ig, hg, cx), ig, hg, cx);
            Runnable lstmComposed = () -> lstmStep(Recurrent.lstmCellComposed(ig, hg, cx), ig, hg, cx);
            Runnable gruFused = () -> gruStep(Recurrent.gruCell(gi, gh, cx), gi, gh, cx);
            Runnable gruComposed = () -> gruStep(Recurrent.gruCellComposed(gi, gh, cx), gi, gh, cx);
            Runnable[] bodies = {lstmFused, lstmComposed, gruFused, gruComposed};
            String[] names = {"lstm_cell_fused_fwdbwd_20x200_us", "lstm_cell_composed_fwdbwd_20x200_us", "gru_cell_fused_fwdbwd_20x200_us",
                    "gru_cell_composed_fwdbwd_20x200_us"};
            double[][] t = new double[bodies.length][rounds];
            for (int round = 0; round < rounds; round++) {
                for (int b = 0; b < bodies.length; b++) t[b][round] = Timing.medianPerIteration(8, 50, bodies[b]);
            }
            for (int b = 0; b < bodies.length; b++) {
                Arrays.sort(t[b]);
                r.put(names[b], t[b][rounds / 2] * 1e6);
            }
        }
    }

    private static void lstmStep(Recurrent.LstmStep s, Tensor... inputs) {
        try (MemoryScope scope = new MemoryScope()) {
            s.hy().add(s.cy()).sum().backward();
            for (Tensor t : inputs) clearGrad(t);
            s.hy().close();
            s.cy().close();
        }
    }

    private static void gruStep(Tensor hy, Tensor... inputs) {
        try (MemoryScope scope = new MemoryScope()) {
            hy.sum().backward();
            for (Tensor t : inputs) clearGrad(t);
            hy.close();
        }
    }

    private static void clearGrad(Tensor t) {
        Tensor g = t.grad();
        t.setGrad(null);
        if (g != null) g.close();
    }
}
