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

/** The CI variants of word_language_model (LSTM and Transformer) on Debian's GPL-3 text. */
class WordLanguageModelTest {
    /** {@code n} training steps over the GPL text in batches of 20, epoch after epoch (the state reset at each). */
    private static double[] train(WordLanguageModel.WordModel model, double lr, int n) throws IOException {
        var corpus = WordLanguageModel.Corpus.of(TextData.read(null));
        Tensor train = WordLanguageModel.batchify(corpus.train(), 20);
        var t = new WordLanguageModel.Training(model, lr, 20);
        double[] losses = new double[n];
        int k = 0;
        while (k < n) {
            t.resetHidden(20);
            for (long i = 0; i < train.size(0) - 1 && k < n; i += 35) {
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor[] dt = WordLanguageModel.getBatch(train, i, 35);
                    losses[k++] = t.step(dt[0], dt[1]);
                }
            }
        }
        return losses;
    }

    private static int vocabulary() throws IOException {
        return WordLanguageModel.Corpus.of(TextData.read(null)).idx2word().size();
    }

    @Test
    void lossFallsOverThreeEpochsWithTheStateCarried() throws IOException {
        Torch.manualSeed(1);
        double[] losses = train(new WordLanguageModel.RNNModel(vocabulary(), 200, 200, 2, 0.2), 20, 21);
        LossCurve.assertFalls("word_language_model", losses, 4, 0.9);
    }

    @Test
    void transformerVariantLossFalls() throws IOException {
        Torch.manualSeed(1);
        double[] losses = train(new WordLanguageModel.TransformerModel(vocabulary(), 64, 2, 64, 1, 0.0), 1.0, 14);
        LossCurve.assertFalls("word_language_model --model Transformer", losses, 3, 0.9);
    }

    @Test
    void transformerVariantIsCausal() {
        // Changing the last word must leave the log-probabilities of the earlier positions as they were.
        Torch.manualSeed(2);
        var model = new WordLanguageModel.TransformerModel(10, 16, 2, 16, 1, 0.0);
        model.eval();
        Tensor a = model.forward(Torch.tensor(new long[] {1, 2, 3, 4}, 4, 1));
        Tensor b = model.forward(Torch.tensor(new long[] {1, 2, 3, 9}, 4, 1));
        assertArrayEquals(a.narrow(0, 0, 3).reshape(-1).toDoubleArray(), b.narrow(0, 0, 3).reshape(-1).toDoubleArray(), 1e-5);
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
