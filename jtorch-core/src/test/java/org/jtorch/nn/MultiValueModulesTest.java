package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.testing.Fixtures;
import org.junit.jupiter.api.Test;

/**
 * The convention for modules with several inputs or outputs ({@link TupleModule}, records named after PyTorch's tuples,
 * {@link TensorTree}) and typed {@link Sequential} chains, on PyTorch's two cases: LSTM's {@code (input, (h, c)) ->
 * (output, (h, c))} and the transformer's {@code (src, mask)}. The reference for each typed call is the positional call
 * it stands for (whose values are checked against PyTorch in RecurrentConformanceTest and TransformerConformanceTest).
 */
class MultiValueModulesTest {
    private static void same(Tensor expected, Tensor actual, String what) {
        Fixtures.assertClose(expected, actual, 0, 0, what);
    }

    @Test
    void lstmTakesInputAndStateAndReturnsOutputAndState() {
        try (MemoryScope scope = new MemoryScope()) {
            Torch.manualSeed(0);
            LSTM lstm = new LSTM(3, 4, LSTM.options().numLayers(2));
            Tensor x = Torch.randn(5, 2, 3);
            LSTM.State state = new LSTM.State(Torch.randn(2, 2, 4), Torch.randn(2, 2, 4));
            TupleModule<LSTM.Input, LSTM.Output> typed = lstm;
            LSTM.Output out = typed.forward(new LSTM.Input(x, state));
            LSTM.Output positional = lstm.forward(x, state);
            same(positional.output(), out.output(), "output");
            same(positional.hN(), out.state().h(), "h_n");
            same(positional.cN(), out.state().c(), "c_n");
            // The state carries on: (output, (h, c)) feeds the next call's (input, (h, c)).
            LSTM.Output next = lstm.forward(new LSTM.Input(x, out.state()));
            same(lstm.forward(x, new LSTM.State(out.hN(), out.cN())).output(), next.output(), "continued");
            same(lstm.forward(x, (LSTM.State) null).output(), lstm.forward(new LSTM.Input(x)).output(), "null state: zeros");
        }
    }

    @Test
    void lstmCellMapsInputAndStateToTheNextState() {
        try (MemoryScope scope = new MemoryScope()) {
            Torch.manualSeed(1);
            LSTMCell cell = new LSTMCell(3, 4);
            Tensor x = Torch.randn(2, 3);
            LSTM.State state = new LSTM.State(Torch.randn(2, 4), Torch.randn(2, 4));
            LSTM.State next = cell.forward(new LSTM.Input(x, state));
            same(cell.forward(x, state).c(), next.c(), "c'");
        }
    }

    @Test
    void rnnAndGruCellsMapInputAndHiddenStateToTheNextHiddenState() {
        try (MemoryScope scope = new MemoryScope()) {
            Torch.manualSeed(6);
            RNNCell rnn = new RNNCell(3, 4, true, "relu");
            GRUCell gru = new GRUCell(3, 4);
            Tensor x = Torch.randn(2, 3);
            Tensor h = Torch.randn(2, 4);
            TupleModule<RNN.Input, Tensor> typedRnn = rnn;
            TupleModule<RNN.Input, Tensor> typedGru = gru;
            same(rnn.forward(x, h), typedRnn.forward(new RNN.Input(x, h)), "RNNCell");
            same(gru.forward(x, h), typedGru.forward(new RNN.Input(x, h)), "GRUCell");
            same(gru.forward(x), typedGru.forward(new RNN.Input(x, null)), "null hx: zeros");
            // A typed chain steps a cell twice, the second step continuing from the first's state.
            Sequential.Chain<RNN.Input, Tensor> twice = Sequential.of(gru).map(h1 -> new RNN.Input(x, h1)).then(gru);
            same(gru.forward(x, gru.forward(x, h)), twice.forward(new RNN.Input(x, h)), "chain");
        }
    }

    @Test
    void decodersAndTheTransformerTakeTheirTuplesAsRecords() {
        try (MemoryScope scope = new MemoryScope()) {
            Torch.manualSeed(7);
            var options = TransformerDecoderLayer.options().dimFeedforward(16).dropout(0);
            TransformerDecoderLayer layer = new TransformerDecoderLayer(8, 2, options);
            TransformerDecoder decoder = new TransformerDecoder(layer, 2);
            Tensor tgt = Torch.randn(5, 3, 8);
            Tensor memory = Torch.randn(6, 3, 8);
            Tensor tgtMask = Transformer.generateSquareSubsequentMask(5);
            Tensor padding = Torch.zeros(3, 6).gt(0.0).indexFill(1, Torch.tensor(new long[] {5}, new long[] {1}), 1.0);
            TupleModule<AttentionDecoder.Input, Tensor> typedLayer = layer;
            same(layer.forward(tgt, memory, tgtMask, null), typedLayer.forward(new AttentionDecoder.Input(tgt, memory, tgtMask, null)), "layer");
            same(decoder.forward(tgt, memory, tgtMask, null, null, padding, true, false),
                    decoder.forward(new AttentionDecoder.Input(tgt, memory, tgtMask, null, null, padding, true, false)), "stack");
            assertFalse(same(decoder.forward(tgt, memory), decoder.forward(new AttentionDecoder.Input(tgt, memory, tgtMask, null))),
                    "the mask is applied");

            Transformer transformer = new Transformer(8, 2, Transformer.options().numEncoderLayers(1).numDecoderLayers(1).dimFeedforward(16).dropout(0));
            Tensor src = Torch.randn(6, 3, 8);
            TupleModule<Transformer.Input, Tensor> typed = transformer;
            same(transformer.forward(src, tgt, null, tgtMask), typed.forward(new Transformer.Input(src, tgt, null, tgtMask)), "transformer");
            same(transformer.forward(src, tgt, null, tgtMask, null, null, null, padding),
                    typed.forward(new Transformer.Input(src, tgt, null, tgtMask, null, null, null, padding, false, false, false)),
                    "with a memory key padding mask");
        }
    }

    @Test
    void encodersTakeSrcAndMask() {
        try (MemoryScope scope = new MemoryScope()) {
            Torch.manualSeed(2);
            TransformerEncoderLayer layer = new TransformerEncoderLayer(8, 2, TransformerEncoderLayer.options().dimFeedforward(16).dropout(0));
            TransformerEncoder encoder = new TransformerEncoder(layer, 2);
            Tensor src = Torch.randn(6, 3, 8);
            Tensor mask = Transformer.generateSquareSubsequentMask(6);
            same(layer.forward(src, mask, null), layer.forward(new AttentionEncoder.Input(src, mask)), "layer");
            TupleModule<AttentionEncoder.Input, Tensor> typed = encoder;
            same(encoder.forward(src, mask, null), typed.forward(new AttentionEncoder.Input(src, mask)), "stack");
            assertFalse(same(encoder.forward(src), typed.forward(new AttentionEncoder.Input(src, mask))), "the mask is applied");
        }
    }

    @Test
    void multiheadAttentionTakesItsKeywordsInItsInputRecord() {
        try (MemoryScope scope = new MemoryScope()) {
            Torch.manualSeed(5);
            MultiheadAttention mha = new MultiheadAttention(8, 2);
            Tensor x = Torch.randn(4, 2, 8);
            Tensor mask = Transformer.generateSquareSubsequentMask(4);
            MultiheadAttention.Output positional = mha.forward(x, x, x, null, true, mask, false);
            MultiheadAttention.Output typed = mha.forward(new MultiheadAttention.Input(x, x, x).attnMask(mask).averageAttnWeights(false));
            same(positional.output(), typed.output(), "output");
            same(positional.weights(), typed.weights(), "per-head weights");
            MultiheadAttention.Output noWeights = mha.forward(new MultiheadAttention.Input(x, x, x).needWeights(false));
            assertEquals(null, noWeights.weights(), "need_weights=False: no weights, as PyTorch's None");
        }
    }

    private static boolean same(Tensor a, Tensor b) {
        return java.util.Arrays.equals(a.toDoubleArray(), b.toDoubleArray());
    }

    // ------------------------------------------------------------------ Sequential

    @Test
    void aSequentialChainRunsAnLstmThenPicksItsOutputThenALinear() {
        try (MemoryScope scope = new MemoryScope()) {
            Torch.manualSeed(3);
            LSTM lstm = new LSTM(3, 4);
            Linear head = new Linear(4, 2);
            Sequential.Chain<LSTM.Input, Tensor> model = Sequential.of(lstm).map(LSTM.Output::output).then(head);
            Tensor x = Torch.randn(5, 2, 3);
            Tensor h0 = Torch.randn(1, 2, 4).requiresGrad_(true);
            LSTM.State state = new LSTM.State(h0, Torch.zeros(1, 2, 4));
            Tensor y = model.forward(new LSTM.Input(x, state));
            same(head.forward(lstm.forward(x, state).output()), y, "chain = the steps by hand");
            // Children are named by position, a function step taking an index as PyTorch's parameterless module would.
            assertEquals(List.of("0.weight_ih_l0", "0.weight_hh_l0", "0.bias_ih_l0", "0.bias_hh_l0", "2.weight", "2.bias"),
                    List.copyOf(model.stateDict().keySet()));
            y.sum().backward();
            assertNotNull(h0.grad(), "the initial state gets a gradient through the chain");
            assertNotNull(lstm.parameter("weight_ih_l0").grad());
        }
    }

    @Test
    void aSequentialChainPassesSrcAndMaskFromLayerToLayer() {
        try (MemoryScope scope = new MemoryScope()) {
            Torch.manualSeed(4);
            var options = TransformerEncoderLayer.options().dimFeedforward(16).dropout(0);
            TransformerEncoderLayer first = new TransformerEncoderLayer(8, 2, options);
            TransformerEncoderLayer second = new TransformerEncoderLayer(8, 2, options);
            Tensor mask = Transformer.generateSquareSubsequentMask(6);
            Sequential.Chain<AttentionEncoder.Input, Tensor> model = Sequential.of(first)
                    .map(x -> new AttentionEncoder.Input(x, mask))
                    .then(second);
            Tensor src = Torch.randn(6, 3, 8);
            same(second.forward(first.forward(src, mask, null), mask, null), model.forward(new AttentionEncoder.Input(src, mask)), "chain");
        }
    }

    @Test
    void aChainKeepsEveryTensorOfItsResultForTheCaller() {
        try (Tensor x = Torch.randn(5, 2, 3); LSTM lstm = new LSTM(3, 4)) {
            Sequential.Chain<LSTM.Input, LSTM.Output> model = Sequential.of(lstm);
            LSTM.Output out;
            try (MemoryScope outer = new MemoryScope()) {
                out = model.forward(new LSTM.Input(x));
                TensorTree.keep(outer, out);
            }
            for (Tensor t : TensorTree.flatten(out)) t.checkOpen("the chain's result after the scopes");
            out.close();
        }
    }

    @Test
    void aChainCalledWithOneTensorOrGivenARecordWhereATensorIsDueSaysHowToCallIt() {
        try (MemoryScope scope = new MemoryScope()) {
            Module asModule = Sequential.of(new LSTM(3, 4));
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, () -> asModule.forward(Torch.randn(5, 2, 3)));
            assertTrue(e.getMessage().contains("LSTM") && e.getMessage().contains("input record"), e.getMessage());
            // A tensor step after a step returning a record: the error names both steps and the fix.
            Sequential.Chain<LSTM.Input, Tensor> wrong = Sequential.of(new LSTM(3, 4)).then(new Identity());
            IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                    () -> wrong.forward(new LSTM.Input(Torch.randn(5, 2, 3))));
            assertTrue(bad.getMessage().contains("step 1 (Identity)") && bad.getMessage().contains("Output"), bad.getMessage());
        }
    }

    // ------------------------------------------------------------------ TensorTree

    record Nested(Tensor a, List<Tensor> list, Map<String, Tensor> map, Optional<Tensor> maybe, boolean flag, Tensor absent) {}

    @Test
    void tensorTreeFlattensRecordsListsMapsAndOptionalsInOrder() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor[] t = new Tensor[5];
            for (int i = 0; i < t.length; i++) t[i] = Torch.zeros(1);
            Nested n = new Nested(t[0], List.of(t[1], t[2]), Map.of("k", t[3]), Optional.of(t[4]), true, null);
            List<Tensor> flat = TensorTree.flatten(n);
            assertEquals(5, flat.size());
            for (int i = 0; i < t.length; i++) assertSame(t[i], flat.get(i));
            LSTM.Output out = new LSTM.Output(t[0], t[1], t[2]);
            assertEquals(List.of(t[0], t[1], t[2]), TensorTree.flatten(out));
            assertEquals(List.of(), TensorTree.flatten("not a tensor"));
        }
    }
}
