package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.utils.PackedSequence;
import org.jtorch.nn.utils.Rnn;
import org.jtorch.optim.SGD;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The recurrent cells and layers, packed sequences and an LSTM training run against PyTorch 1.13
 * ({@code tools/fixtures/gen_rnn.py}): outputs, final states and the gradients, through time, of the input, the initial
 * states and every parameter, for {@code sum(out * w) + sum(h_n * w) + sum(c_n * w)} with {@code w[i] = sin(0.7 i + 0.3)}.
 * Modules and inputs live on {@link Fixtures#device()} (the CUDA suites run it on {@code cuda:0}).
 */
class RecurrentConformanceTest {
    private static final List<Case> CASES = Fixtures.load("rnn");

    static Stream<Case> cells() {
        return CASES.stream().filter(c -> c.op().endsWith("Cell"));
    }

    static Stream<Case> layers() {
        return CASES.stream().filter(c -> c.op().equals("LSTM") || c.op().equals("GRU") || c.op().equals("RNN"));
    }

    static Stream<Case> packed() {
        return CASES.stream().filter(c -> c.op().startsWith("packed_"));
    }

    private static Case named(String op) {
        return CASES.stream().filter(c -> c.op().equals(op)).findFirst().orElseThrow();
    }

    private static JsonObject expected(Case c) {
        return c.expected().getAsJsonObject();
    }

    private static Tensor upstream(Tensor t) {
        double[] w = new double[(int) t.numel()];
        for (int i = 0; i < w.length; i++) w[i] = Math.sin(0.7 * i + 0.3);
        try (Tensor d = Torch.tensor(w, t.shape())) {
            return d.to(t.device(), t.dtype());
        }
    }

    private static Tensor loss(Tensor... outputs) {
        Tensor total = null;
        for (Tensor o : outputs) {
            if (o == null) continue;
            Tensor term = o.mul(upstream(o)).sum();
            total = total == null ? term : total.add(term);
        }
        return total;
    }

    private static double[] tolerance(JsonObject t) {
        return t.get("dtype").getAsString().equals("float64") ? new double[] {1e-10, 1e-10} : new double[] {2e-5, 2e-5};
    }

    private static void assertNamed(JsonObject exp, String key, Tensor actual, Case c) {
        JsonObject e = exp.getAsJsonObject(key);
        double[] tol = tolerance(e);
        Fixtures.assertMatches(e, actual, tol[0], tol[1], c + " " + key);
    }

    private static Map<String, Tensor> params(Case c) {
        Map<String, Tensor> state = new LinkedHashMap<>();
        for (Map.Entry<String, JsonElement> e : c.args().getAsJsonObject("params").entrySet()) {
            state.put(e.getKey(), Fixtures.decode(e.getValue().getAsJsonObject()));
        }
        return state;
    }

    private static DType dtypeOf(Case c) {
        return DType.parse(c.inputs().get(0).getAsJsonObject().get("dtype").getAsString());
    }

    static RNNOptions options(Case c) {
        JsonObject cfg = c.args().getAsJsonObject("config");
        RNNOptions o = new RNNOptions().dtype(dtypeOf(c));
        if (cfg.has("num_layers")) o.numLayers(cfg.get("num_layers").getAsInt());
        if (cfg.has("bidirectional")) o.bidirectional(cfg.get("bidirectional").getAsBoolean());
        if (cfg.has("batch_first")) o.batchFirst(cfg.get("batch_first").getAsBoolean());
        if (cfg.has("bias")) o.bias(cfg.get("bias").getAsBoolean());
        if (cfg.has("proj_size")) o.projSize(cfg.get("proj_size").getAsLong());
        if (cfg.has("nonlinearity")) o.nonlinearity(cfg.get("nonlinearity").getAsString());
        return o;
    }

    private static RNNBase layer(String kind, Case c) {
        long in = c.args().get("input_size").getAsLong(), hidden = c.args().get("hidden_size").getAsLong();
        RNNBase m = switch (kind) {
            case "LSTM" -> new LSTM(in, hidden, options(c));
            case "GRU" -> new GRU(in, hidden, options(c));
            default -> new RNN(in, hidden, options(c));
        };
        m.loadStateDict(params(c));
        m.to(Fixtures.device());
        return m;
    }

    private static void assertParameterGrads(Module m, JsonObject exp, Case c) {
        for (Map.Entry<String, Tensor> p : m.namedParameters().entrySet()) assertNamed(exp, "grad." + p.getKey(), p.getValue().grad(), c);
    }

    /** The final states ({@code c_n} when given) and the gradients of the inputs ({@code input, h0, c0}) and of every parameter. */
    private static void assertStatesAndGradients(Case c, Tensor hN, Tensor cN, List<Tensor> inputs, Module m) {
        JsonObject exp = expected(c);
        assertNamed(exp, "h_n", hN, c);
        if (cN != null) assertNamed(exp, "c_n", cN, c);
        String[] labels = {"input", "h0", "c0"};
        for (int i = 0; i < inputs.size(); i++) assertNamed(exp, "grad." + labels[i], inputs.get(i).grad(), c);
        assertParameterGrads(m, exp, c);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("layers")
    void layerMatchesPyTorch(Case c) {
        try (MemoryScope scope = new MemoryScope(); RNNBase m = layer(c.op(), c)) {
            List<Tensor> in = new ArrayList<>();
            for (Tensor t : c.inputTensors()) in.add(t.requiresGrad_(true));
            Tensor h0 = in.size() > 1 ? in.get(1) : null;
            Tensor out, hN, cN = null;
            if (m instanceof LSTM lstm) {
                LSTM.Output o = lstm.forward(in.get(0), h0 == null ? null : new LSTM.State(h0, in.get(2)));
                out = o.output();
                hN = o.hN();
                cN = o.cN();
            } else {
                RNN.Output o = ((RNN) m).forward(in.get(0), h0);
                out = o.output();
                hN = o.hN();
            }
            loss(out, hN, cN).backward();
            assertNamed(expected(c), "output", out, c);
            assertStatesAndGradients(c, hN, cN, in, m);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cells")
    void cellMatchesPyTorch(Case c) {
        long in = c.args().get("input_size").getAsLong(), hidden = c.args().get("hidden_size").getAsLong();
        JsonObject cfg = c.args().getAsJsonObject("config");
        boolean bias = cfg.get("bias").getAsBoolean();
        DType dtype = dtypeOf(c);
        RNNCellBase m = switch (c.op()) {
            case "LSTMCell" -> new LSTMCell(in, hidden, bias, dtype, org.jtorch.types.Device.cpu(), org.jtorch.types.Generator.defaultGenerator());
            case "GRUCell" -> new GRUCell(in, hidden, bias, dtype, org.jtorch.types.Device.cpu(), org.jtorch.types.Generator.defaultGenerator());
            default -> new RNNCell(in, hidden, bias, cfg.get("nonlinearity").getAsString(), dtype, org.jtorch.types.Device.cpu(),
                    org.jtorch.types.Generator.defaultGenerator());
        };
        try (MemoryScope scope = new MemoryScope(); m) {
            m.loadStateDict(params(c));
            m.to(Fixtures.device());
            List<Tensor> x = new ArrayList<>();
            for (Tensor t : c.inputTensors()) x.add(t.requiresGrad_(true));
            Tensor hy, cy = null;
            if (m instanceof LSTMCell cell) {
                LSTM.State s = cell.forward(x.get(0), new LSTM.State(x.get(1), x.get(2)));
                hy = s.h();
                cy = s.c();
            } else if (m instanceof GRUCell cell) {
                hy = cell.forward(x.get(0), x.get(1));
            } else {
                hy = ((RNNCell) m).forward(x.get(0), x.get(1));
            }
            loss(hy, cy).backward();
            assertStatesAndGradients(c, hy, cy, x, m);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("packed")
    void packedLayerMatchesPyTorch(Case c) {
        String kind = c.op().substring("packed_".length());
        try (MemoryScope scope = new MemoryScope(); RNNBase m = layer(kind, c)) {
            List<Tensor> in = new ArrayList<>();
            for (Tensor t : c.inputTensors()) in.add(t.requiresGrad_(true));
            long[] lengths = longs(c.args().getAsJsonArray("lengths"));
            PackedSequence packed = Rnn.packPaddedSequence(in.get(0), lengths, false, c.args().get("enforce_sorted").getAsBoolean());
            JsonObject exp = expected(c);
            assertNamed(exp, "packed.data", packed.data(), c);
            try (Tensor bs = Fixtures.decode(exp.getAsJsonObject("packed.batch_sizes"))) {
                assertArrayEquals(bs.toLongArray(), packed.batchSizes(), c + " batch sizes");
            }
            if (exp.has("packed.sorted_indices")) {
                try (Tensor si = Fixtures.decode(exp.getAsJsonObject("packed.sorted_indices"))) {
                    assertArrayEquals(si.toLongArray(), packed.sortedIndices().toLongArray(), c + " sorted indices");
                }
            }
            PackedSequence out;
            Tensor hN, cN = null;
            if (m instanceof LSTM lstm) {
                LSTM.PackedOutput o = lstm.forward(packed, new LSTM.State(in.get(1), in.get(2)));
                out = o.output();
                hN = o.hN();
                cN = o.cN();
            } else {
                RNN.PackedOutput o = ((RNN) m).forward(packed, in.get(1));
                out = o.output();
                hN = o.hN();
            }
            Rnn.Padded padded = Rnn.padPackedSequence(out, false);
            loss(padded.padded(), hN, cN).backward();
            assertNamed(exp, "output", padded.padded(), c);
            try (Tensor lens = Fixtures.decode(exp.getAsJsonObject("lengths"))) {
                assertArrayEquals(lens.toLongArray(), padded.lengths(), c + " lengths");
            }
            assertStatesAndGradients(c, hN, cN, in, m);
        }
    }

    @Test
    void padSequenceMatchesPyTorch() {
        for (Case c : CASES.stream().filter(k -> k.op().equals("pad_sequence")).toList()) {
            try (MemoryScope scope = new MemoryScope()) {
                Tensor padded = Rnn.padSequence(c.inputTensors(), c.boolArg("batch_first", false), c.doubleArg("padding_value", 0));
                assertNamed(expected(c), "padded", padded, c);
            }
        }
    }

    @Test
    void packAndPadRoundTripMatchesPyTorch() {
        Case c = named("pack_padded_sequence");
        try (MemoryScope scope = new MemoryScope()) {
            JsonObject exp = expected(c);
            PackedSequence p = Rnn.packPaddedSequence(c.input(0), longs(c.args().getAsJsonArray("lengths")), true, false);
            assertNamed(exp, "data", p.data(), c);
            assertArrayEquals(Fixtures.decode(exp.getAsJsonObject("batch_sizes")).toLongArray(), p.batchSizes());
            assertArrayEquals(Fixtures.decode(exp.getAsJsonObject("sorted_indices")).toLongArray(), p.sortedIndices().toLongArray());
            assertArrayEquals(Fixtures.decode(exp.getAsJsonObject("unsorted_indices")).toLongArray(), p.unsortedIndices().toLongArray());
            Rnn.Padded padded = Rnn.padPackedSequence(p, true, c.doubleArg("padding_value", 0), c.longArg("total_length", 0));
            assertNamed(exp, "padded", padded.padded(), c);
            assertArrayEquals(Fixtures.decode(exp.getAsJsonObject("lengths")).toLongArray(), padded.lengths());
        }
    }

    /**
     * pytorch/examples' time_sequence_prediction task in small: LSTM(1, 24) + Linear predict the next value of sine waves;
     * twelve SGD steps from PyTorch's initial weights give PyTorch's losses, and the loss falls.
     */
    @Test
    void lstmLearnsSineWavesAsPyTorchDoes() {
        Case c = named("train_sine");
        Map<String, Tensor> state = params(c);
        try (MemoryScope scope = new MemoryScope();
             LSTM lstm = new LSTM(1, 24, LSTM.options().batchFirst(true)); Linear head = new Linear(24, 1)) {
            Sequential model = new Sequential(lstm, head);
            model.loadStateDict(remap(state));
            model.to(Fixtures.device());
            Tensor x = c.input(0), y = c.input(1);
            SGD opt = new SGD(model.parameters(), SGD.options().lr(c.doubleArg("lr", 0)).momentum(c.doubleArg("momentum", 0)));
            double[] expectedLosses = Fixtures.decode(expected(c).getAsJsonObject("losses")).toDoubleArray();
            double[] losses = new double[expectedLosses.length];
            for (int step = 0; step < losses.length; step++) {
                try (MemoryScope s = new MemoryScope()) {
                    opt.zeroGrad();
                    Tensor loss = F.mseLoss(model.forward(x), y);
                    loss.backward();
                    opt.step();
                    losses[step] = loss.item();
                }
            }
            for (int i = 0; i < losses.length; i++) assertEquals(expectedLosses[i], losses[i], 2e-5 + 2e-4 * expectedLosses[i], "loss at step " + i);
            assertEquals(true, losses[losses.length - 1] < losses[0] / 10, "the loss falls tenfold: " + java.util.Arrays.toString(losses));
        }
    }

    /** The fixture's "lstm."/"head." keys as Sequential's "0."/"1.". */
    private static Map<String, Tensor> remap(Map<String, Tensor> state) {
        Map<String, Tensor> out = new LinkedHashMap<>();
        for (Map.Entry<String, Tensor> e : state.entrySet()) {
            out.put(e.getKey().replaceFirst("^lstm\\.", "0.").replaceFirst("^head\\.", "1."), e.getValue());
        }
        return out;
    }

    private static long[] longs(JsonArray a) {
        long[] r = new long[a.size()];
        for (int i = 0; i < r.length; i++) r[i] = a.get(i).getAsLong();
        return r;
    }
}
