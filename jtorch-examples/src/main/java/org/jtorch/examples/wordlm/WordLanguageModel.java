package org.jtorch.examples.wordlm;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.examples.Example;
import org.jtorch.examples.ExampleOptions;
import org.jtorch.examples.TextData;
import org.jtorch.io.PyTorchFile;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.Dropout;
import org.jtorch.nn.Embedding;
import org.jtorch.nn.F;
import org.jtorch.nn.Init;
import org.jtorch.nn.LSTM;
import org.jtorch.nn.Linear;
import org.jtorch.nn.Module;
import org.jtorch.nn.Transformer;
import org.jtorch.nn.TransformerEncoder;
import org.jtorch.nn.TransformerEncoderLayer;
import org.jtorch.nn.utils.ClipGrad;

/**
 * pytorch/examples {@code word_language_model} with its default LSTM: embedding 200, 2 LSTM layers of 200,
 * dropout 0.2, plain SGD by hand at lr 20 (divided by 4 whenever the validation loss does not improve),
 * gradient clipping at 0.25, truncated backpropagation every 35 words, batches of 20 (10 for evaluation),
 * 40 epochs; the best model is saved as {@code model.pt} and tested at the end. Wikitext-2 cannot be had
 * here: the text is {@link TextData}'s, its lines split 80/10/10 into train, validation and test.
 * {@code --model Transformer}: main.py's Transformer variant (2 heads, 2 causal encoder layers of 200 with a
 * 200-wide feed-forward, sinusoidal positions), trained the same way. The log
 * interval is 200 batches, or a fifth of an epoch when that is shorter (the default text is small).
 * {@code --quick}: 3 epochs.
 */
public final class WordLanguageModel implements Example {
    @Override
    public String name() {
        return "word_language_model";
    }

    @Override
    public String summary() {
        return "a word language model, 2-layer LSTM (default) or causal Transformer (--model Transformer), as word_language_model";
    }

    /** data.py's {@code Corpus}: a word index (with {@code <eos>} ending each line) and the three splits as int64 tensors. */
    public record Corpus(List<String> idx2word, Tensor train, Tensor valid, Tensor test) {
        public static Corpus of(String text) {
            String[] lines = text.split("\n", -1);
            int a = (int) (lines.length * 0.8), b = (int) (lines.length * 0.9);
            Map<String, Integer> word2idx = new HashMap<>();
            List<String> idx2word = new ArrayList<>();
            Tensor train = tokenize(lines, 0, a, word2idx, idx2word);
            Tensor valid = tokenize(lines, a, b, word2idx, idx2word);
            Tensor test = tokenize(lines, b, lines.length, word2idx, idx2word);
            return new Corpus(idx2word, train, valid, test);
        }

        private static Tensor tokenize(String[] lines, int from, int to, Map<String, Integer> word2idx, List<String> idx2word) {
            List<Long> ids = new ArrayList<>();
            for (int i = from; i < to; i++) {
                List<String> words = new ArrayList<>(List.of(lines[i].trim().isEmpty() ? new String[0] : lines[i].trim().split("\\s+")));
                words.add("<eos>");
                for (String w : words) {
                    Integer id = word2idx.get(w);
                    if (id == null) {
                        id = idx2word.size();
                        word2idx.put(w, id);
                        idx2word.add(w);
                    }
                    ids.add((long) id);
                }
            }
            return Torch.tensor(ids.stream().mapToLong(Long::longValue).toArray()).untrack();
        }
    }

    /** main.py's {@code batchify}: the sequence cut into {@code bsz} columns, {@code [n / bsz, bsz]}. */
    public static Tensor batchify(Tensor data, int bsz) {
        long nbatch = data.size(0) / bsz;
        return data.narrow(0, 0, nbatch * bsz).view(bsz, -1).t().contiguous().untrack();
    }

    /** main.py's {@code get_batch}: up to {@code bptt} rows from {@code i}, and the next word of each as targets. */
    public static Tensor[] getBatch(Tensor source, long i, int bptt) {
        long seqLen = Math.min(bptt, source.size(0) - 1 - i);
        return new Tensor[] {source.narrow(0, i, seqLen), source.narrow(0, i + 1, seqLen).reshape(-1)};
    }

    /** What main.py's loops need of a model: log-probabilities {@code [T * B, ntoken]} and the next state (null without one). */
    public abstract static class WordModel extends Module {
        public record Output(Tensor logProbs, LSTM.State hidden) {}

        /** The zero state for {@code bsz} columns, or null for a model that carries none. */
        public abstract LSTM.State initHidden(long bsz);

        public abstract Output forward(Tensor input, LSTM.State hidden);

        @Override
        public Tensor forward(Tensor input) {
            return forward(input, initHidden(input.size(1))).logProbs();
        }
    }

    /** model.py's {@code init_weights}: embedding and output weights U(-0.1, 0.1), output bias 0. */
    static void initWeights(Embedding encoder, Linear decoder) {
        double initrange = 0.1;
        Init.uniform_(encoder.weight(), -initrange, initrange);
        Init.zeros_(decoder.parameter("bias"));
        Init.uniform_(decoder.weight(), -initrange, initrange);
    }

    /** model.py's {@code RNNModel} for LSTM. */
    public static final class RNNModel extends WordModel {
        // Children are not final: deepCopy points a copy's fields at its own children (Module#deepCopy).
        private Dropout drop;
        private Embedding encoder;
        private LSTM rnn;
        private Linear decoder;
        private final int nlayers, nhid;
        public final int ntoken;

        public RNNModel(int ntoken, int ninp, int nhid, int nlayers, double dropout) {
            this.ntoken = ntoken;
            this.nhid = nhid;
            this.nlayers = nlayers;
            drop = registerModule("drop", new Dropout(dropout));
            encoder = registerModule("encoder", new Embedding(ntoken, ninp));
            rnn = registerModule("rnn", new LSTM(ninp, nhid, LSTM.options().numLayers(nlayers).dropout(dropout)));
            decoder = registerModule("decoder", new Linear(nhid, ntoken));
            initWeights(encoder, decoder);
        }

        @Override
        public LSTM.State initHidden(long bsz) {
            return new LSTM.State(Torch.zeros(nlayers, bsz, nhid), Torch.zeros(nlayers, bsz, nhid));
        }

        @Override
        public Output forward(Tensor input, LSTM.State hidden) {
            Tensor emb = drop.forward(encoder.forward(input));
            LSTM.Output out = rnn.forward(emb, hidden);
            Tensor decoded = decoder.forward(drop.forward(out.output())).view(-1, ntoken);
            return new Output(F.logSoftmax(decoded, 1), out.state());
        }
    }

    /**
     * model.py's {@code PositionalEncoding}: adds sin/cos of position / 10000^(2i / d) to {@code [T, B, d]}
     * inputs (a buffer {@code pe} of {@code [maxLen, 1, d]}), then dropout.
     */
    public static final class PositionalEncoding extends Module {
        private Dropout dropout;

        public PositionalEncoding(int dModel, double dropout, int maxLen) {
            this.dropout = registerModule("dropout", new Dropout(dropout));
            float[] v = new float[maxLen * dModel];
            for (int pos = 0; pos < maxLen; pos++) {
                for (int i = 0; i < dModel; i += 2) {
                    double angle = pos * Math.exp(i * (-Math.log(10000.0) / dModel));
                    v[pos * dModel + i] = (float) Math.sin(angle);
                    if (i + 1 < dModel) v[pos * dModel + i + 1] = (float) Math.cos(angle);
                }
            }
            registerBuffer("pe", Torch.tensor(v, maxLen, 1, dModel));
        }

        @Override
        public Tensor forward(Tensor x) {
            // Read by name: to(device) and deepCopy replace the buffer.
            return dropout.forward(x.add(buffer("pe").narrow(0, 0, x.size(0))));
        }
    }

    /** model.py's {@code TransformerModel}: embedding x sqrt(ninp), positional encoding, a causal TransformerEncoder, a Linear. */
    public static final class TransformerModel extends WordModel {
        private PositionalEncoding posEncoder;
        private TransformerEncoder transformerEncoder;
        private Embedding encoder;
        private Linear decoder;
        private final int ninp;
        public final int ntoken;

        public TransformerModel(int ntoken, int ninp, int nhead, int nhid, int nlayers, double dropout) {
            this.ntoken = ntoken;
            this.ninp = ninp;
            posEncoder = registerModule("pos_encoder", new PositionalEncoding(ninp, dropout, 5000));
            transformerEncoder = registerModule("transformer_encoder", new TransformerEncoder(
                    new TransformerEncoderLayer(ninp, nhead, TransformerEncoderLayer.options().dimFeedforward(nhid).dropout(dropout)), nlayers));
            encoder = registerModule("encoder", new Embedding(ntoken, ninp));
            decoder = registerModule("decoder", new Linear(ninp, ntoken));
            initWeights(encoder, decoder);
        }

        @Override
        public LSTM.State initHidden(long bsz) {
            return null;
        }

        @Override
        public Output forward(Tensor input, LSTM.State hidden) {
            Tensor mask = Transformer.generateSquareSubsequentMask(input.size(0));
            Tensor src = posEncoder.forward(encoder.forward(input).mul(Math.sqrt(ninp)));
            Tensor output = decoder.forward(transformerEncoder.forward(src, mask, null, false));
            return new Output(F.logSoftmax(output, -1).view(-1, ntoken), null);
        }
    }

    /** One truncated-BPTT step of main.py's {@code train}, with the hidden state carried (detached) from step to step. */
    public static final class Training {
        public final WordModel model;
        public double lr;
        private LSTM.State hidden;

        public Training(WordModel model, double lr, int batchSize) {
            this.model = model;
            this.lr = lr;
            resetHidden(batchSize);
        }

        /** Zero states, as at the start of each epoch. */
        public void resetHidden(int batchSize) {
            if (hidden != null) hidden.close();
            hidden = keepOutOfScopes(model.initHidden(batchSize));

        }

        public double step(Tensor data, Tensor targets) {
            model.train();
            LSTM.State previous = hidden;
            double loss;
            try (MemoryScope scope = new MemoryScope()) {
                model.zeroGrad();
                WordModel.Output out = model.forward(data, previous);
                Tensor l = F.nllLoss(out.logProbs(), targets);
                l.backward();
                ClipGrad.clipGradNorm_(model.parameters(), 0.25);
                try (var g = Grad.noGrad()) {
                    for (Tensor p : model.parameters()) p.add_(p.grad(), -lr);
                }
                loss = l.item();
                // repackage_hidden: the next step starts from these values, outside this step's graph.
                LSTM.State next = out.hidden() == null ? null : out.hidden().detach();
                hidden = next == null ? null : new LSTM.State(scope.keep(next.h()), scope.keep(next.c()));
            }
            if (previous != null) previous.close();
            hidden = keepOutOfScopes(hidden);
            return loss;
        }

        private static LSTM.State keepOutOfScopes(LSTM.State s) {
            return s == null ? null : new LSTM.State(s.h().untrack(), s.c().untrack());
        }
    }

    /** main.py's {@code evaluate}: the mean loss per word of {@code source} (batchified). */
    public static double evaluate(WordModel model, Tensor source, int bptt) {
        model.eval();
        double total = 0;
        LSTM.State hidden = Training.keepOutOfScopes(model.initHidden(source.size(1)));
        try (var g = Grad.noGrad()) {
            for (long i = 0; i < source.size(0) - 1; i += bptt) {
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor[] dt = getBatch(source, i, bptt);
                    WordModel.Output out = model.forward(dt[0], hidden);
                    total += dt[0].size(0) * F.nllLoss(out.logProbs(), dt[1]).item();
                    if (hidden != null) {
                        hidden.close();
                        hidden = new LSTM.State(scope.keep(out.hidden().h()).untrack(), scope.keep(out.hidden().c()).untrack());
                    }
                }
            }
        }
        if (hidden != null) hidden.close();
        return total / (source.size(0) - 1);
    }

    @Override
    public void run(ExampleOptions o, PrintStream out) throws IOException {
        Torch.manualSeed(o.seed());
        Corpus corpus = Corpus.of(TextData.read(o.text()));
        int batchSize = o.batchSize(20), evalBatchSize = 10, bptt = 35;
        Tensor trainData = batchify(corpus.train(), batchSize);
        Tensor valData = batchify(corpus.valid(), evalBatchSize);
        Tensor testData = batchify(corpus.test(), evalBatchSize);
        out.printf(Locale.ROOT, "vocabulary %d words; train %d, valid %d, test %d tokens%n", corpus.idx2word().size(),
                corpus.train().size(0), corpus.valid().size(0), corpus.test().size(0));
        String kind = o.model() == null ? "LSTM" : o.model();
        WordModel model = switch (kind) {
            case "LSTM" -> new RNNModel(corpus.idx2word().size(), 200, 200, 2, 0.2);
            case "Transformer" -> new TransformerModel(corpus.idx2word().size(), 200, 2, 200, 2, 0.2);
            default -> throw new IllegalArgumentException("word_language_model: --model must be LSTM or Transformer, got '" + kind + "'");
        };
        Training t = new Training(model, o.lr(20), batchSize);
        long batches = trainData.size(0) / bptt;
        int logInterval = (int) Math.max(1, Math.min(200, batches / 5));
        int epochs = o.epochs(o.quick() ? 3 : 40);
        Path save = o.outDir().resolve("model.pt");
        Files.createDirectories(o.outDir());
        Double bestValLoss = null;
        int steps = 0;
        for (int epoch = 1; epoch <= epochs && steps < o.maxSteps(); epoch++) {
            long epochStart = System.nanoTime(), start = epochStart;
            double totalLoss = 0;
            t.resetHidden(batchSize);
            int batch = 0;
            for (long i = 0; i < trainData.size(0) - 1 && steps < o.maxSteps(); i += bptt, batch++, steps++) {
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor[] dt = getBatch(trainData, i, bptt);
                    totalLoss += t.step(dt[0], dt[1]);
                }
                if (batch % logInterval == 0 && batch > 0) {
                    double curLoss = totalLoss / logInterval;
                    double elapsed = (System.nanoTime() - start) / 1e9;
                    out.printf(Locale.ROOT, "| epoch %3d | %5d/%5d batches | lr %02.2f | ms/batch %5.2f | loss %5.2f | ppl %8.2f%n",
                            epoch, batch, batches, t.lr, elapsed * 1000 / logInterval, curLoss, Math.exp(curLoss));
                    totalLoss = 0;
                    start = System.nanoTime();
                }
            }
            double valLoss = evaluate(model, valData, bptt);
            out.println("-".repeat(89));
            out.printf(Locale.ROOT, "| end of epoch %3d | time: %5.2fs | valid loss %5.2f | valid ppl %8.2f%n",
                    epoch, (System.nanoTime() - epochStart) / 1e9, valLoss, Math.exp(valLoss));
            out.println("-".repeat(89));
            if (bestValLoss == null || valLoss < bestValLoss) {
                PyTorchFile.saveStateDict(save, model);
                bestValLoss = valLoss;
            } else {
                t.lr /= 4.0;   // anneal when validation stops improving
            }
        }
        if (Files.exists(save)) PyTorchFile.loadStateDict(save, model, true);
        double testLoss = evaluate(model, testData, bptt);
        out.println("=".repeat(89));
        out.printf(Locale.ROOT, "| End of training | test loss %5.2f | test ppl %8.2f%n", testLoss, Math.exp(testLoss));
        out.println("=".repeat(89));
    }
}
