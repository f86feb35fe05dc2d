package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The transformer layers, their stacks and {@link Transformer} against PyTorch 1.13 ({@code tools/fixtures/gen_transformer.py}):
 * PyTorch's parameters are loaded through the state dict (strictly: every name must match both ways), then the output
 * and the gradients of the inputs and of every parameter, for {@code sum(out * w)} with {@code w[i] = sin(0.7 i + 0.3)},
 * dropout 0 in training mode, with attention and key padding masks.
 */
class TransformerConformanceTest {
    private static final List<Case> CASES = Fixtures.load("transformer");

    static Stream<Case> modules() {
        return CASES.stream().filter(c -> c.op().startsWith("Transformer"));
    }

    static Stream<Case> masks() {
        return CASES.stream().filter(c -> c.op().equals("generate_square_subsequent_mask"));
    }

    private static Tensor upstream(Tensor t) {
        double[] w = new double[(int) t.numel()];
        for (int i = 0; i < w.length; i++) w[i] = Math.sin(0.7 * i + 0.3);
        try (Tensor d = Torch.tensor(w, t.shape())) {
            return d.to(t.device(), t.dtype());
        }
    }

    private static void assertNamed(JsonObject exp, String key, Tensor actual, Case c) {
        JsonObject e = exp.getAsJsonObject(key);
        boolean f64 = e.get("dtype").getAsString().equals("float64");
        Fixtures.assertMatches(e, actual, f64 ? 1e-9 : 1e-4, f64 ? 1e-9 : 1e-4, c + " " + key);
    }

    private static Map<String, Tensor> tensors(JsonObject o) {
        Map<String, Tensor> m = new LinkedHashMap<>();
        for (Map.Entry<String, JsonElement> e : o.entrySet()) m.put(e.getKey(), Fixtures.decode(e.getValue().getAsJsonObject(), Fixtures.device()));
        return m;
    }

    static TransformerOptions options(JsonObject cfg, DType dtype) {
        return Transformer.options().dimFeedforward(cfg.get("dim_feedforward").getAsLong()).dropout(0)
                .activation(cfg.get("activation").getAsString()).layerNormEps(cfg.get("layer_norm_eps").getAsDouble())
                .batchFirst(cfg.get("batch_first").getAsBoolean()).normFirst(cfg.get("norm_first").getAsBoolean()).dtype(dtype);
    }

    private static Module build(Case c, DType dtype) {
        JsonObject cfg = c.args().getAsJsonObject("config");
        long dModel = cfg.get("d_model").getAsLong(), nhead = cfg.get("nhead").getAsLong();
        TransformerOptions o = options(cfg, dtype);
        boolean finalNorm = cfg.has("final_norm") && cfg.get("final_norm").getAsBoolean();
        LayerNorm norm = finalNorm ? new LayerNorm(new long[] {dModel}, cfg.get("layer_norm_eps").getAsDouble(), true, dtype,
                org.jtorch.types.Device.cpu()) : null;
        return switch (c.op()) {
            case "TransformerEncoderLayer" -> new TransformerEncoderLayer(dModel, nhead, o);
            case "TransformerDecoderLayer" -> new TransformerDecoderLayer(dModel, nhead, o);
            case "TransformerEncoder" -> {
                try (TransformerEncoderLayer layer = new TransformerEncoderLayer(dModel, nhead, o)) {
                    yield new TransformerEncoder(layer, cfg.get("num_layers").getAsInt(), norm);
                }
            }
            case "TransformerDecoder" -> {
                try (TransformerDecoderLayer layer = new TransformerDecoderLayer(dModel, nhead, o)) {
                    yield new TransformerDecoder(layer, cfg.get("num_layers").getAsInt(), norm);
                }
            }
            default -> new Transformer(dModel, nhead, o.numEncoderLayers(cfg.get("num_encoder_layers").getAsInt())
                    .numDecoderLayers(cfg.get("num_decoder_layers").getAsInt()));
        };
    }

    private static Tensor run(Module m, List<Tensor> in, Map<String, Tensor> masks) {
        return switch (m) {
            case TransformerEncoderLayer l -> l.forward(in.get(0), masks.get("src_mask"), masks.get("src_key_padding_mask"));
            case TransformerEncoder e -> e.forward(in.get(0), masks.get("mask"), masks.get("src_key_padding_mask"));
            case TransformerDecoderLayer l -> l.forward(in.get(0), in.get(1), masks.get("tgt_mask"), masks.get("memory_mask"),
                    masks.get("tgt_key_padding_mask"), masks.get("memory_key_padding_mask"));
            case TransformerDecoder d -> d.forward(in.get(0), in.get(1), masks.get("tgt_mask"), masks.get("memory_mask"),
                    masks.get("tgt_key_padding_mask"), masks.get("memory_key_padding_mask"));
            case Transformer t -> t.forward(in.get(0), in.get(1), masks.get("src_mask"), masks.get("tgt_mask"), masks.get("memory_mask"),
                    masks.get("src_key_padding_mask"), masks.get("tgt_key_padding_mask"), masks.get("memory_key_padding_mask"));
            default -> throw new IllegalArgumentException(m.getClass().getName());
        };
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("modules")
    void moduleMatchesPyTorch(Case c) {
        DType dtype = DType.parse(c.inputs().get(0).getAsJsonObject().get("dtype").getAsString());
        try (MemoryScope scope = new MemoryScope(); Module m = build(c, dtype)) {
            m.loadStateDict(tensors(c.args().getAsJsonObject("params")));
            m.to(Fixtures.device());
            m.train();
            List<Tensor> in = new ArrayList<>();
            for (Tensor t : c.inputTensors()) in.add(t.requiresGrad_(true));
            Tensor out = run(m, in, tensors(c.args().getAsJsonObject("masks")));
            out.mul(upstream(out)).sum().backward();
            JsonObject exp = c.expected().getAsJsonObject();
            assertNamed(exp, "output", out, c);
            String[] labels = c.op().startsWith("TransformerDecoder") ? new String[] {"tgt", "memory"}
                    : c.op().equals("Transformer") ? new String[] {"src", "tgt"} : new String[] {"src"};
            for (int i = 0; i < labels.length; i++) assertNamed(exp, "grad." + labels[i], in.get(i).grad(), c);
            Map<String, Tensor> params = m.namedParameters();
            for (Map.Entry<String, Tensor> p : params.entrySet()) assertNamed(exp, "grad." + p.getKey(), p.getValue().grad(), c);
            long expectedGrads = exp.keySet().stream().filter(k -> k.startsWith("grad.")).count() - labels.length;
            assertEquals(expectedGrads, params.size(), c + ": PyTorch's and jtorch's parameter counts");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("masks")
    void squareSubsequentMaskMatchesPyTorch(Case c) {
        try (Tensor mask = Transformer.generateSquareSubsequentMask(c.longArg("size", -1))) {
            Fixtures.assertMatches(c.expected().getAsJsonObject().getAsJsonObject("mask"), mask, 0, 0, c.toString());
        }
    }
}
