package org.jtorch.examples.wordlm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.examples.LossCurve;
import org.jtorch.examples.TextData;
import org.jtorch.memory.MemoryScope;
import org.junit.jupiter.api.Test;

/** The CI variant of word_language_model (LSTM): three epochs of truncated BPTT on Debian's GPL-3 text. */
class WordLanguageModelTest {
    @Test
    void lossFallsOverThreeEpochsWithTheStateCarried() throws IOException {
        Torch.manualSeed(1);
        var corpus = WordLanguageModel.Corpus.of(TextData.read(null));
        Tensor train = WordLanguageModel.batchify(corpus.train(), 20);
        var t = new WordLanguageModel.Training(new WordLanguageModel.RNNModel(corpus.idx2word().size(), 200, 200, 2, 0.2), 20, 20);
        double[] losses = new double[21];
        int n = 0;
        while (n < losses.length) {
            t.resetHidden(20);
            for (long i = 0; i < train.size(0) - 1 && n < losses.length; i += 35) {
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor[] dt = WordLanguageModel.getBatch(train, i, 35);
                    losses[n++] = t.step(dt[0], dt[1]);
                }
            }
        }
        LossCurve.assertFalls("word_language_model", losses, 4, 0.9);
    }

    @Test
    void batchifyAndGetBatchFollowMainPy() {
        // 0..10 in 2 columns: [[0, 5], [1, 6], [2, 7], [3, 8], [4, 9]] (the last element is dropped)
        Tensor b = WordLanguageModel.batchify(Torch.arange(11), 2);
        assertArrayEquals(new long[] {5, 2}, b.shape());
        Tensor[] dt = WordLanguageModel.getBatch(b, 3, 35);
        assertArrayEquals(new double[] {3, 8}, dt[0].reshape(-1).toDoubleArray());
        assertArrayEquals(new double[] {4, 9}, dt[1].toDoubleArray());
    }

    @Test
    void eachLineEndsWithEos() {
        var c = WordLanguageModel.Corpus.of("a b\nb c\na\n\nc\nb\nb\na\nc\nc\n");
        assertEquals("<eos>", c.idx2word().get((int) c.train().toDoubleArray()[2]));
        assertEquals(java.util.List.of("a", "b", "<eos>", "c"), c.idx2word());
    }
}
