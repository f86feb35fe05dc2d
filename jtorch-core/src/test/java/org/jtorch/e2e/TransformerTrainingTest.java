package org.jtorch.e2e;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.Embedding;
import org.jtorch.nn.F;
import org.jtorch.nn.Linear;
import org.jtorch.nn.Transformer;
import org.jtorch.nn.TransformerEncoder;
import org.jtorch.nn.TransformerEncoderLayer;
import org.jtorch.optim.Adam;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/**
 * A tiny transformer encoder learns a task only attention solves: at every position, name the sequence's first token
 * (token and position embeddings, two pre-norm layers under a causal mask, a linear head, Adam). The loss must fall
 * from chance (ln 5 = 1.61) to a small fraction of it within fifty full-batch steps.
 */
class TransformerTrainingTest {
    private static final int VOCAB = 5;
    private static final int LENGTH = 6;
    private static final int DIM = 16;

    @Test
    void encoderLearnsToCopyTheFirstToken() {
        Generator gen = new Generator(7);
        Torch.manualSeed(7);
        var tokens = new Embedding(VOCAB, DIM, (Long) null, DType.FLOAT32, Device.cpu(), gen);
        var positions = new Embedding(LENGTH, DIM, (Long) null, DType.FLOAT32, Device.cpu(), gen);
        var options = Transformer.options().dimFeedforward(32).dropout(0).batchFirst(true).normFirst(true).generator(gen);
        TransformerEncoder encoder;
        try (var layer = new TransformerEncoderLayer(DIM, 2, options)) {
            encoder = new TransformerEncoder(layer, 2);
        }
        var head = new Linear(DIM, VOCAB, true, DType.FLOAT32, Device.cpu(), gen);
        List<Tensor> params = new ArrayList<>();
        for (var m : List.of(tokens, positions, encoder, head)) params.addAll(m.parameters());
        var opt = new Adam(params, Adam.options().lr(0.01));
        try (Tensor x = Torch.randint(0, VOCAB, new long[] {64, LENGTH}, DType.INT64, Device.cpu(), gen);
             Tensor target = x.narrow(1, 0, 1).expand(64, LENGTH).contiguous();
             Tensor where = Torch.arange(LENGTH);
             Tensor mask = Transformer.generateSquareSubsequentMask(LENGTH)) {
            double first = Double.NaN, last = Double.NaN;
            for (int step = 0; step < 50; step++) {
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor h = tokens.forward(x).add(positions.forward(where));
                    Tensor logits = head.forward(encoder.forward(h, mask, null, true));
                    Tensor loss = F.crossEntropy(logits.reshape(-1, VOCAB), target.reshape(-1));
                    opt.zeroGrad();
                    loss.backward();
                    opt.step();
                    if (step == 0) first = loss.item();
                    last = loss.item();
                }
            }
            assertTrue(first > 1.2, "starts near chance, ln 5 = 1.61: " + first);
            assertTrue(last < 0.1 * first, "loss fell from " + first + " to " + last);
        } finally {
            for (var m : List.of(tokens, positions, encoder, head)) m.close();
        }
    }
}
