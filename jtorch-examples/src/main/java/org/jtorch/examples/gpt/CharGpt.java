package org.jtorch.examples.gpt;

import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.examples.Example;
import org.jtorch.examples.ExampleOptions;
import org.jtorch.examples.TextData;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.Dropout;
import org.jtorch.nn.Embedding;
import org.jtorch.nn.F;
import org.jtorch.nn.Init;
import org.jtorch.nn.LayerNorm;
import org.jtorch.nn.Linear;
import org.jtorch.nn.Module;
import org.jtorch.nn.ModuleList;
import org.jtorch.nn.utils.ClipGrad;
import org.jtorch.optim.AdamW;
import org.jtorch.optim.ParamGroup;
import org.jtorch.types.Generator;

/**
 * A character-level GPT in the style of Karpathy's nanoGPT ({@code model.py}, {@code train.py} with
 * {@code config/train_shakespeare_char.py} and the CPU settings of nanoGPT's README: block 64, batch 12,
 * 4 layers, 4 heads, 128 wide, no dropout, 2,000 iterations). Causal self-attention through
 * {@link F#scaledDotProductAttention} with {@code isCausal}; the output layer shares the token embedding's
 * weight; AdamW (betas 0.9, 0.99; weight decay 0.1 on matrices only), warm-up then cosine decay of the
 * learning rate (1e-3 to 1e-4), gradient clipping at 1. Trains on a text file's characters (90% train, 10%
 * validation; see {@link TextData}), then samples 300 characters at temperature 0.8 (top-k 200) as
 * {@code sample.py} does.
 * {@code --quick}: 2 layers, 100 iterations.
 */
public final class CharGpt implements Example {
    @Override
    public String name() {
        return "char_gpt";
    }

    @Override
    public String summary() {
        return "a nanoGPT-style character-level transformer (causal self-attention, AdamW, cosine LR), then a sample";
    }

    /** nanoGPT's {@code GPTConfig}. */
    public record Config(int blockSize, int vocabSize, int nLayer, int nHead, int nEmbd, double dropout) {}

    static final class CausalSelfAttention extends Module {
        // Children are not final: deepCopy points a copy's fields at its own children (Module#deepCopy).
        private Linear cAttn, cProj;
        private Dropout residDropout;
        private final int nHead, nEmbd;
        private final double dropout;

        CausalSelfAttention(Config c) {
            cAttn = registerModule("c_attn", new Linear(c.nEmbd(), 3L * c.nEmbd()));
            cProj = registerModule("c_proj", new Linear(c.nEmbd(), c.nEmbd()));
            residDropout = registerModule("resid_dropout", new Dropout(c.dropout()));
            nHead = c.nHead();
            nEmbd = c.nEmbd();
            dropout = c.dropout();
        }

        @Override
        public Tensor forward(Tensor x) {
            long b = x.size(0), t = x.size(1);
            // q, k, v: [B, nh, T, hs] views of the projection split along its last dimension, as model.py: no copies, one
            // backward node that joins the three gradients, and an attention output already laid out as [B, T, nh, hs].
            List<Tensor> qkv = cAttn.forward(x).split(nEmbd, 2);
            Tensor q = heads(qkv.get(0), b, t);
            Tensor k = heads(qkv.get(1), b, t);
            Tensor v = heads(qkv.get(2), b, t);
            Tensor y = F.scaledDotProductAttention(q, k, v, null, isTraining() ? dropout : 0, true);
            y = y.transpose(1, 2).contiguous().view(b, t, nEmbd);
            return residDropout.forward(cProj.forward(y));
        }

        private Tensor heads(Tensor x, long b, long t) {
            return x.view(b, t, nHead, nEmbd / nHead).transpose(1, 2);
        }
    }

    static final class Mlp extends Module {
        private Linear cFc, cProj;
        private Dropout dropout;

        Mlp(Config c) {
            cFc = registerModule("c_fc", new Linear(c.nEmbd(), 4L * c.nEmbd()));
            cProj = registerModule("c_proj", new Linear(4L * c.nEmbd(), c.nEmbd()));
            dropout = registerModule("dropout", new Dropout(c.dropout()));
        }

        @Override
        public Tensor forward(Tensor x) {
            return dropout.forward(cProj.forward(F.gelu(cFc.forward(x))));
        }
    }

    static final class Block extends Module {
        private LayerNorm ln1, ln2;
        private CausalSelfAttention attn;
        private Mlp mlp;

        Block(Config c) {
            ln1 = registerModule("ln_1", new LayerNorm(c.nEmbd()));
            attn = registerModule("attn", new CausalSelfAttention(c));
            ln2 = registerModule("ln_2", new LayerNorm(c.nEmbd()));
            mlp = registerModule("mlp", new Mlp(c));
        }

        @Override
        public Tensor forward(Tensor x) {
            x = x.add(attn.forward(ln1.forward(x)));
            return x.add(mlp.forward(ln2.forward(x)));
        }
    }

    /** nanoGPT's {@code GPT}: token indices {@code [B, T]} to logits {@code [B, T, vocab]}. */
    public static final class GPT extends Module {
        public final Config config;
        private Embedding wte, wpe;
        private Dropout drop;
        private ModuleList h;
        private LayerNorm lnF;

        public GPT(Config c) {
            config = c;
            wte = registerModule("wte", new Embedding(c.vocabSize(), c.nEmbd()));
            wpe = registerModule("wpe", new Embedding(c.blockSize(), c.nEmbd()));
            drop = registerModule("drop", new Dropout(c.dropout()));
            h = registerModule("h", new ModuleList());
            for (int i = 0; i < c.nLayer(); i++) h.add(new Block(c));
            lnF = registerModule("ln_f", new LayerNorm(c.nEmbd()));
            // model.py's _init_weights: N(0, 0.02) weights, zero biases; residual projections N(0, 0.02 / sqrt(2 n_layer)).
            for (Map.Entry<String, Tensor> e : namedParameters().entrySet()) {
                String n = e.getKey();
                if (n.endsWith("c_proj.weight")) Init.normal_(e.getValue(), 0, 0.02 / Math.sqrt(2.0 * c.nLayer()));
                else if (n.endsWith(".weight") && !n.contains("ln_")) Init.normal_(e.getValue(), 0, 0.02);
                else if (n.endsWith(".bias")) Init.zeros_(e.getValue());
            }
        }

        @Override
        public Tensor forward(Tensor idx) {
            long t = idx.size(1);
            if (t > config.blockSize()) {
                throw new IllegalArgumentException("GPT: cannot forward a sequence of length " + t + ", the block size is only " + config.blockSize());
            }
            Tensor x = drop.forward(wte.forward(idx).add(wpe.forward(Torch.arange(t))));
            for (Module block : h.children()) x = block.forward(x);
            // The output layer is the token embedding, transposed (weight tying).
            return F.linear(lnF.forward(x), wte.weight(), null);
        }

        /** The mean cross-entropy of the logits for {@code idx} against {@code targets}. */
        public Tensor loss(Tensor idx, Tensor targets) {
            Tensor logits = forward(idx);
            return F.crossEntropy(logits.view(-1, logits.size(-1)), targets.view(-1));
        }
    }

    /** The text as character indices, with nanoGPT's {@code prepare.py} vocabulary (the sorted distinct characters). */
    public record Corpus(List<Character> chars, long[] train, long[] val) {
        public static Corpus of(String text) {
            TreeMap<Character, Integer> stoi = new TreeMap<>();
            for (char ch : text.toCharArray()) stoi.put(ch, 0);
            List<Character> chars = new ArrayList<>(stoi.keySet());
            for (int i = 0; i < chars.size(); i++) stoi.put(chars.get(i), i);
            long[] all = new long[text.length()];
            for (int i = 0; i < all.length; i++) all[i] = stoi.get(text.charAt(i));
            int n = (int) (all.length * 0.9);
            return new Corpus(chars, java.util.Arrays.copyOfRange(all, 0, n), java.util.Arrays.copyOfRange(all, n, all.length));
        }

        /** train.py's {@code get_batch}: {@code batchSize} random windows x and the same shifted by one, y. */
        public Tensor[] batch(boolean training, int batchSize, int blockSize, Random random) {
            long[] data = training ? train : val;
            long[] x = new long[batchSize * blockSize], y = new long[batchSize * blockSize];
            for (int b = 0; b < batchSize; b++) {
                int i = random.nextInt(data.length - blockSize);
                System.arraycopy(data, i, x, b * blockSize, blockSize);
                System.arraycopy(data, i + 1, y, b * blockSize, blockSize);
            }
            return new Tensor[] {Torch.tensor(x, batchSize, blockSize), Torch.tensor(y, batchSize, blockSize)};
        }
    }

    /** One iteration of train.py, reusable by tests and benchmarks. */
    public static final class Training {
        public final GPT model;
        public final AdamW optimizer;

        public Training(Config c, double lr) {
            model = new GPT(c);
            // train.py's configure_optimizers: weight decay on matrices (dim >= 2) only.
            List<Tensor> decay = new ArrayList<>(), noDecay = new ArrayList<>();
            for (Tensor p : model.parameters()) (p.dim() >= 2 ? decay : noDecay).add(p);
            optimizer = new AdamW(List.of(ParamGroup.of(decay, AdamW.options().weightDecay(0.1)),
                    ParamGroup.of(noDecay, AdamW.options().weightDecay(0.0))), AdamW.options().lr(lr).betas(0.9, 0.99));
        }

        /** Forward, backward, clipping at 1 and an AdamW step at learning rate {@code lr}; returns the loss. */
        public double step(Tensor x, Tensor y, double lr) {
            for (ParamGroup g : optimizer.paramGroups()) g.setLr(lr);
            model.train();
            try (MemoryScope scope = new MemoryScope()) {
                Tensor loss = model.loss(x, y);
                loss.backward();
                ClipGrad.clipGradNorm_(model.parameters(), 1.0);
                optimizer.step();
                optimizer.zeroGrad();
                return loss.item();
            }
        }
    }

    /** train.py's {@code get_lr}: linear warm-up, cosine decay to {@code minLr} at {@code decayIters}, then {@code minLr}. */
    public static double learningRate(int it, double lr, double minLr, int warmupIters, int decayIters) {
        if (it < warmupIters) return lr * (it + 1) / (warmupIters + 1);
        if (it > decayIters) return minLr;
        double ratio = (double) (it - warmupIters) / (decayIters - warmupIters);
        return minLr + 0.5 * (1.0 + Math.cos(Math.PI * ratio)) * (lr - minLr);
    }

    @Override
    public void run(ExampleOptions o, PrintStream out) throws IOException {
        Torch.manualSeed(o.seed());
        Random random = new Random(o.seed());
        Corpus corpus = Corpus.of(TextData.read(o.text()));
        out.printf(Locale.ROOT, "length of dataset in characters: %,d; vocab size: %d; train has %,d tokens, val has %,d tokens%n",
                corpus.train().length + corpus.val().length, corpus.chars().size(), corpus.train().length, corpus.val().length);
        int blockSize = 64, batchSize = o.batchSize(12);
        int maxIters = Math.min(o.quick() ? 100 : 2000, o.maxSteps());
        int evalInterval = o.quick() ? 50 : 250, evalIters = o.quick() ? 5 : 20, logInterval = 10;
        Config c = new Config(blockSize, corpus.chars().size(), o.quick() ? 2 : 4, 4, 128, 0.0);
        double lr = o.lr(1e-3), minLr = lr / 10;
        Training t = new Training(c, lr);
        long params = t.model.parameters().stream().mapToLong(Tensor::numel).sum() - t.model.wpe.weight().numel();
        out.printf(Locale.ROOT, "number of parameters: %.2fM%n", params / 1e6);
        long t0 = System.nanoTime();
        for (int it = 0; it <= maxIters; it++) {
            if (it % evalInterval == 0 || it == maxIters) {
                out.printf(Locale.ROOT, "step %d: train loss %.4f, val loss %.4f%n", it,
                        estimateLoss(t.model, corpus, true, evalIters, batchSize, random), estimateLoss(t.model, corpus, false, evalIters, batchSize, random));
            }
            if (it == maxIters) break;
            double loss;
            try (MemoryScope scope = new MemoryScope()) {
                Tensor[] xy = corpus.batch(true, batchSize, blockSize, random);
                loss = t.step(xy[0], xy[1], learningRate(it, lr, minLr, Math.min(100, maxIters / 10), maxIters));
            }
            long t1 = System.nanoTime();
            if (it % logInterval == 0) out.printf(Locale.ROOT, "iter %d: loss %.4f, time %.2fms%n", it, loss, (t1 - t0) / 1e6);
            t0 = t1;
        }
        out.println("---------------");
        out.println(sample(t.model, corpus.chars(), 300, 0.8, 200, new Generator(o.seed())));
        out.println("---------------");
    }

    private static double estimateLoss(GPT model, Corpus corpus, boolean training, int iters, int batchSize, Random random) {
        model.eval();
        double sum = 0;
        try (var g = Grad.noGrad()) {
            for (int k = 0; k < iters; k++) {
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor[] xy = corpus.batch(training, batchSize, model.config.blockSize(), random);
                    sum += model.loss(xy[0], xy[1]).item();
                }
            }
        }
        model.train();
        return sum / iters;
    }

    /**
     * sample.py through model.py's {@code generate}: {@code n} characters after a newline, each drawn by
     * {@code multinomial} from the softmax of the last logits / temperature, the logits below the top k's
     * smallest set to minus infinity.
     */
    public static String sample(GPT model, List<Character> chars, int n, double temperature, int topK, Generator generator) {
        model.eval();
        List<Long> idx = new ArrayList<>(List.of((long) Math.max(0, chars.indexOf('\n'))));
        StringBuilder s = new StringBuilder();
        try (var g = Grad.noGrad()) {
            for (int i = 0; i < n; i++) {
                int from = Math.max(0, idx.size() - model.config.blockSize());
                long[] window = idx.subList(from, idx.size()).stream().mapToLong(Long::longValue).toArray();
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor out = model.forward(Torch.tensor(window, 1, window.length));
                    Tensor logits = out.narrow(1, window.length - 1, 1).reshape(1, -1).div(temperature);
                    long k = Math.min(topK, logits.size(-1));
                    Tensor kth = logits.topk(k).values().narrow(1, k - 1, 1);
                    Tensor probs = logits.maskedFill(logits.lt(kth), Double.NEGATIVE_INFINITY).softmax(-1);
                    int next = (int) probs.multinomial(1, false, generator).item();
                    idx.add((long) next);
                    s.append(chars.get(next));
                }
            }
        }
        return s.toString();
    }
}
