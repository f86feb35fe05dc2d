package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.memory.MemoryScope;
import org.jtorch.testing.Fixtures;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/** The transformer modules' behaviour beyond the PyTorch fixtures: gradcheck, initialisation, names, the causal hint, errors. */
class TransformerTest {
    private static final Generator GEN = new Generator(11);

    private static TransformerOptions tiny() {
        return Transformer.options().dimFeedforward(6).dropout(0).dtype(DType.FLOAT64).generator(GEN);
    }

    private static Tensor randn(long... shape) {
        return Torch.randn(shape, DType.FLOAT64, Device.cpu(), GEN);
    }

    private static boolean same(Tensor a, Tensor b) {
        try (Tensor d = a.sub(b); Tensor m = d.abs().max()) {
            return m.item() == 0;
        }
    }

    @Test
    void encoderLayerPassesGradcheckForInputAndParameters() {
        try (MemoryScope scope = new MemoryScope(); TransformerEncoderLayer layer = new TransformerEncoderLayer(4, 2, tiny())) {
            Tensor mask = Transformer.generateSquareSubsequentMask(3, DType.FLOAT64, Device.cpu());
            Tensor src = randn(3, 2, 4).requiresGrad_(true);
            Map<String, Tensor> p = layer.namedParameters();
            assertTrue(Gradcheck.check(x -> layer.forward(x[0], mask, null), src, p.get("self_attn.in_proj_weight"),
                    p.get("linear1.weight"), p.get("norm2.bias")));
        }
    }

    @Test
    void preNormDecoderLayerPassesGradcheck() {
        try (MemoryScope scope = new MemoryScope();
             TransformerDecoderLayer layer = new TransformerDecoderLayer(4, 2, tiny().normFirst(true).activation("gelu").batchFirst(true))) {
            Tensor tgtMask = Transformer.generateSquareSubsequentMask(3, DType.FLOAT64, Device.cpu());
            Tensor padding = Torch.tensor(new boolean[] {false, false, false, true, false, true, false, false}, 2, 4);
            Tensor tgt = randn(2, 3, 4).requiresGrad_(true);
            Tensor memory = randn(2, 4, 4).requiresGrad_(true);
            assertTrue(Gradcheck.check(x -> layer.forward(x[0], x[1], tgtMask, null, null, padding), tgt, memory,
                    layer.namedParameters().get("multihead_attn.in_proj_weight")));
        }
    }

    @Test
    void causalHintGivesTheMasksResult() {
        try (MemoryScope scope = new MemoryScope(); TransformerEncoderLayer layer = new TransformerEncoderLayer(4, 2, tiny())) {
            Tensor mask = Transformer.generateSquareSubsequentMask(5, DType.FLOAT64, Device.cpu());
            Tensor src = randn(5, 2, 4);
            Tensor withMask = layer.forward(src, mask, null, false);
            Tensor hinted = layer.forward(src, mask, null, true);
            Fixtures.assertClose(withMask, hinted, 1e-12, 1e-12, "same result");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> layer.forward(src, null, null, true));
            assertTrue(e.getMessage().contains("Need attn_mask if specifying the is_causal hint"), e.getMessage());
        }
    }

    @Test
    void transformerXavierInitialisesEveryMatrixIndependently() {
        try (Transformer t = new Transformer(8, 2, Transformer.options().dimFeedforward(16).numEncoderLayers(2).numDecoderLayers(2)
                .generator(new Generator(5)))) {
            for (Map.Entry<String, Tensor> e : t.namedParameters().entrySet()) {
                Tensor p = e.getValue();
                if (p.dim() < 2) continue;
                double bound = Math.sqrt(6.0 / (p.size(0) + p.size(1)));
                assertTrue(p.abs().max().item() <= bound, e.getKey() + " within the xavier-uniform bound " + bound);
                assertTrue(p.abs().max().item() > 0.5 * bound, e.getKey() + " drawn, not left at a smaller init");
            }
            Map<String, Tensor> p = t.namedParameters();
            assertFalse(same(p.get("encoder.layers.0.linear1.weight"), p.get("encoder.layers.1.linear1.weight")));
            assertEquals(0.0, p.get("decoder.layers.1.multihead_attn.in_proj_bias").abs().sum().item());
            assertEquals(8.0, p.get("encoder.norm.weight").sum().item());
        }
    }

    @Test
    void stackLayersStartAsCopiesOfTheGivenLayer() {
        try (TransformerEncoderLayer layer = new TransformerEncoderLayer(8, 2, Transformer.options().dimFeedforward(16));
             TransformerEncoder encoder = new TransformerEncoder(layer, 3)) {
            Map<String, Tensor> p = encoder.namedParameters();
            assertTrue(same(p.get("layers.0.self_attn.in_proj_weight"), layer.selfAttn().parameter("in_proj_weight")));
            assertTrue(same(p.get("layers.2.linear2.weight"), p.get("layers.0.linear2.weight")));
            assertFalse(p.get("layers.0.linear2.weight") == p.get("layers.1.linear2.weight"), "separate tensors, not shared");
            assertFalse(encoder.namedChildren().containsKey("norm"));
        }
    }

    @Test
    void parameterNamesArePyTorchs() {
        try (Transformer t = new Transformer(8, 2, Transformer.options().dimFeedforward(16).numEncoderLayers(1).numDecoderLayers(1))) {
            var keys = t.stateDict().keySet();
            // PyTorch 1.13: list(nn.Transformer(8, 2, 1, 1, 16).state_dict())
            assertEquals(java.util.List.of("encoder.layers.0.self_attn.in_proj_weight", "encoder.layers.0.self_attn.in_proj_bias",
                    "encoder.layers.0.self_attn.out_proj.weight", "encoder.layers.0.self_attn.out_proj.bias",
                    "encoder.layers.0.linear1.weight", "encoder.layers.0.linear1.bias", "encoder.layers.0.linear2.weight",
                    "encoder.layers.0.linear2.bias", "encoder.layers.0.norm1.weight", "encoder.layers.0.norm1.bias",
                    "encoder.layers.0.norm2.weight", "encoder.layers.0.norm2.bias", "encoder.norm.weight", "encoder.norm.bias",
                    "decoder.layers.0.self_attn.in_proj_weight", "decoder.layers.0.self_attn.in_proj_bias",
                    "decoder.layers.0.self_attn.out_proj.weight", "decoder.layers.0.self_attn.out_proj.bias",
                    "decoder.layers.0.multihead_attn.in_proj_weight", "decoder.layers.0.multihead_attn.in_proj_bias",
                    "decoder.layers.0.multihead_attn.out_proj.weight", "decoder.layers.0.multihead_attn.out_proj.bias",
                    "decoder.layers.0.linear1.weight", "decoder.layers.0.linear1.bias", "decoder.layers.0.linear2.weight",
                    "decoder.layers.0.linear2.bias", "decoder.layers.0.norm1.weight", "decoder.layers.0.norm1.bias",
                    "decoder.layers.0.norm2.weight", "decoder.layers.0.norm2.bias", "decoder.layers.0.norm3.weight",
                    "decoder.layers.0.norm3.bias", "decoder.norm.weight", "decoder.norm.bias"), java.util.List.copyOf(keys));
        }
    }

    @Test
    void withoutBiasNoModuleHasOne() {
        try (Transformer t = new Transformer(8, 2, Transformer.options().dimFeedforward(16).numEncoderLayers(1).numDecoderLayers(1)
                .bias(false))) {
            for (String k : t.stateDict().keySet()) assertFalse(k.endsWith("bias"), k);
            try (MemoryScope scope = new MemoryScope()) {
                Tensor out = t.forward(Torch.randn(5, 2, 8), Torch.randn(3, 2, 8));
                assertEquals(java.util.List.of(3L, 2L, 8L), java.util.Arrays.stream(out.shape()).boxed().toList());
            }
        }
    }

    /** An encoder that passes the source through: the transformer is then its decoder attending to the raw source. */
    private static final class IdentityEncoder extends Module implements AttentionEncoder {
        @Override
        public Tensor forward(Tensor src) {
            return src.alias();
        }

        @Override
        public Tensor forward(Tensor src, Tensor mask, Tensor srcKeyPaddingMask, boolean isCausal) {
            return src.alias();
        }
    }

    @Test
    void customEncoderAndDecoderAreUsedAndReinitialised() {
        try (MemoryScope scope = new MemoryScope()) {
            TransformerDecoderLayer layer = new TransformerDecoderLayer(4, 2, tiny());
            TransformerDecoder decoder = new TransformerDecoder(layer, 1);
            Tensor before = decoder.namedParameters().get("layers.0.linear1.weight").clone();
            Transformer t = new Transformer(4, 2, new IdentityEncoder(), decoder, tiny());
            assertTrue(t.encoder() instanceof IdentityEncoder);
            assertFalse(same(before, t.namedParameters().get("decoder.layers.0.linear1.weight")), "xavier re-drew the custom decoder");
            assertFalse(t.stateDict().keySet().stream().anyMatch(k -> k.startsWith("encoder.")));
            Tensor src = randn(5, 2, 4);
            Tensor tgt = randn(3, 2, 4);
            Fixtures.assertClose(decoder.forward(tgt, src), t.forward(src, tgt), 0, 0, "decoder(tgt, src)");
        }
    }

    @Test
    void unbatchedTransformerMatchesTheBatchOfOne() {
        try (MemoryScope scope = new MemoryScope();
             Transformer t = new Transformer(4, 2, tiny().numEncoderLayers(1).numDecoderLayers(2))) {
            Tensor src = randn(5, 4);
            Tensor tgt = randn(3, 4);
            Tensor mask = Transformer.generateSquareSubsequentMask(3, DType.FLOAT64, Device.cpu());
            Tensor one = t.forward(src, tgt, null, mask);
            Tensor batch = t.forward(src.unsqueeze(1), tgt.unsqueeze(1), null, mask).squeeze(1);
            Fixtures.assertClose(one, batch, 1e-12, 1e-12, "same result");
        }
    }

    @Test
    void errorsNameTheModuleAndShapes() {
        try (MemoryScope scope = new MemoryScope(); Transformer t = new Transformer(4, 2, tiny().numEncoderLayers(1).numDecoderLayers(1))) {
            var batch = assertThrows(IllegalArgumentException.class, () -> t.forward(randn(5, 2, 4), randn(3, 3, 4)));
            assertTrue(batch.getMessage().contains("the batch number of src and tgt must be equal"), batch.getMessage());
            var features = assertThrows(IllegalArgumentException.class, () -> t.forward(randn(5, 2, 4), randn(3, 2, 6)));
            assertTrue(features.getMessage().contains("d_model (4)") && features.getMessage().contains("[3, 2, 6]"), features.getMessage());
            assertThrows(UnsupportedOperationException.class, () -> t.forward(randn(5, 2, 4)));
            var padding = assertThrows(IllegalArgumentException.class,
                    () -> t.encoder().forward(randn(5, 2, 4), null, Torch.zeros(new long[] {2, 4}, DType.BOOL, Device.cpu())));
            assertTrue(padding.getMessage().contains("key_padding_mask"), padding.getMessage());
        }
        var activation = assertThrows(IllegalArgumentException.class, () -> Transformer.options().activation("tanh"));
        assertEquals("activation should be relu/gelu, not tanh", activation.getMessage());
        var heads = assertThrows(IllegalArgumentException.class, () -> new TransformerEncoderLayer(6, 4));
        assertTrue(heads.getMessage().startsWith("TransformerEncoderLayer: d_model (6)"), heads.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Transformer.generateSquareSubsequentMask(3, DType.INT64, Device.cpu()));
    }

    @Test
    void customActivationIsApplied() {
        try (MemoryScope scope = new MemoryScope()) {
            TransformerEncoderLayer relu = new TransformerEncoderLayer(4, 2, tiny());
            TransformerEncoderLayer custom = new TransformerEncoderLayer(4, 2, tiny().activation(x -> x.clamp(0, Double.POSITIVE_INFINITY)));
            custom.loadStateDict(relu.stateDict());
            Tensor src = randn(3, 2, 4);
            Fixtures.assertClose(relu.forward(src), custom.forward(src), 1e-12, 1e-12, "same result");
            assertNotNull(custom.selfAttn());
        }
    }
}
