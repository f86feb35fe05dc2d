package org.jtorch.examples.gpt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.util.Random;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.examples.LossCurve;
import org.jtorch.examples.TextData;
import org.jtorch.memory.MemoryScope;
import org.junit.jupiter.api.Test;

/** The CI variant of the char GPT: a one-layer model for 40 iterations on Debian's GPL-3 text. */
class CharGptTest {
    @Test
    void lossFallsOnTheGplText() throws IOException {
        Torch.manualSeed(1);
        Random random = new Random(1);
        var corpus = CharGpt.Corpus.of(TextData.read(null));
        var c = new CharGpt.Config(16, corpus.chars().size(), 1, 2, 32, 0.0);
        var t = new CharGpt.Training(c, 3e-3);
        double[] losses = new double[40];
        for (int i = 0; i < losses.length; i++) {
            try (MemoryScope scope = new MemoryScope()) {
                Tensor[] xy = corpus.batch(true, 8, 16, random);
                losses[i] = t.step(xy[0], xy[1], 3e-3);
            }
        }
        LossCurve.assertFalls("char_gpt", losses, 5, 0.8);
    }

    @Test
    void attentionIsCausal() {
        // Changing the last token must leave the logits of every earlier position as they were.
        Torch.manualSeed(2);
        var model = new CharGpt.GPT(new CharGpt.Config(8, 10, 1, 2, 16, 0.0));
        double[] a = model.forward(Torch.tensor(new long[] {1, 2, 3, 4}, 1, 4)).narrow(1, 0, 3).reshape(-1).toDoubleArray();
        double[] b = model.forward(Torch.tensor(new long[] {1, 2, 3, 9}, 1, 4)).narrow(1, 0, 3).reshape(-1).toDoubleArray();
        for (int i = 0; i < a.length; i++) assertEquals(a[i], b[i], 1e-6);
    }

    @Test
    void samplingWithTopOneIsGreedy() {
        // top-k 1 leaves one candidate, so multinomial must pick the argmax of the last position's logits.
        Torch.manualSeed(3);
        var model = new CharGpt.GPT(new CharGpt.Config(8, 5, 1, 2, 16, 0.0));
        var chars = java.util.List.of('\n', 'a', 'b', 'c', 'd');
        String text = CharGpt.sample(model, chars, 6, 0.8, 1, new org.jtorch.types.Generator(1));
        long[] idx = new long[7];
        for (int i = 0; i < 6; i++) idx[i + 1] = chars.indexOf(text.charAt(i));
        for (int i = 0; i < 6; i++) {
            Tensor logits = model.forward(Torch.tensor(java.util.Arrays.copyOf(idx, i + 1), 1, i + 1));
            assertEquals(idx[i + 1], (long) logits.narrow(1, i, 1).reshape(-1).argmax(0, false).item(), "character " + i + " of " + text);
        }
    }

    @Test
    void learningRateWarmsUpThenDecaysToTheMinimum() {
        // train.py's get_lr with lr 1e-3, min 1e-4, warm-up 10, decay over 100 iterations
        assertEquals(1e-3 / 11, CharGpt.learningRate(0, 1e-3, 1e-4, 10, 100), 1e-12);
        assertEquals(1e-3, CharGpt.learningRate(10, 1e-3, 1e-4, 10, 100), 1e-12);
        assertEquals(5.5e-4, CharGpt.learningRate(55, 1e-3, 1e-4, 10, 100), 1e-12);
        assertEquals(1e-4, CharGpt.learningRate(101, 1e-3, 1e-4, 10, 100), 1e-12);
    }

    @Test
    void longerThanTheBlockIsRefused() {
        var model = new CharGpt.GPT(new CharGpt.Config(4, 10, 1, 2, 16, 0.0));
        assertThrows(IllegalArgumentException.class, () -> model.forward(Torch.tensor(new long[] {1, 2, 3, 4, 5}, 1, 5)));
    }
}
