package org.jtorch.nn;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.AttentionOps;
import org.jtorch.op.IndexingOps;
import org.jtorch.op.LossOps;
import org.jtorch.op.PointwiseOps;
import org.jtorch.ops.Dispatcher;
import org.jtorch.ops.Dropouts;
import org.jtorch.ops.Indexing;
import org.jtorch.op.RandomOps;
import org.jtorch.ops.Losses;
import org.jtorch.ops.Padding;
import org.jtorch.ops.Pooling;
import org.jtorch.ops.Pooling3d;
import org.jtorch.ops.Resampling;
import org.jtorch.ops.Reductions.ValuesIndices;
import org.jtorch.op.Shapes;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Generator;

/**
 * The functional forms of the layers and losses, as {@code torch.nn.functional}. Most are
 * composites of primitive tensor ops (so their gradients come from the primitives' formulas);
 * {@link #embedding} records its own backward, as PyTorch's {@code embedding_backward}. Every
 * function returns a new tensor the caller owns and closes its temporaries.
 *
 * <p><b>Keyword arguments.</b> A function with a long PyTorch signature has an overload that takes its keywords as one
 * immutable record named after the op ({@link CrossEntropy}, {@link Conv}, {@link MaxPool}, {@link Interpolate}, ...;
 * {@link org.jtorch.Variance} for {@code var}/{@code std}). {@code options()} holds PyTorch's defaults and each wither,
 * named after the keyword in camelCase, returns a copy with that keyword changed, so only what differs is written:
 * <pre>{@code
 * F.crossEntropy(x, t, CrossEntropy.options().reduction(Reduction.SUM).labelSmoothing(0.1))
 * F.conv2d(x, w, Conv.options().bias(b).stride(2).padding(1))     // sizes: one int for every dimension, or one each
 * F.avgPool2d(x, 3, AvgPool.options().divisorOverride(2L))        // null (the default) is PyTorch's None
 * }</pre>
 * PyTorch's None is null (a boxed or reference component), never a sentinel value. A keyword that changes the return
 * type is a method of its own ({@code return_indices=True}: {@link #maxPool2dWithIndices(Tensor, int[], MaxPool)}).
 * Records hold the tensors they are given (weights, masks) without owning them. The positional overloads stay for
 * short calls.
 */
public final class F {
    private F() {}

    /** How a loss reduces its elementwise values. {@code BATCHMEAN} (sum / batch size) is for {@link #klDiv} only. */
    public enum Reduction { NONE, MEAN, SUM, BATCHMEAN }

    // ------------------------------------------------------------------ activations

    public static Tensor relu(Tensor x) {
        Arguments.nonNull("relu", "x", x);
        return x.relu();
    }

    public static Tensor leakyRelu(Tensor x, double negativeSlope) {
        Arguments.nonNull("leakyRelu", "x", x);
        return x.leakyRelu(negativeSlope);
    }

    public static Tensor leakyRelu(Tensor x) {
        Arguments.nonNull("leakyRelu", "x", x);
        return x.leakyRelu(0.01);
    }

    /** GELU; {@code approximate} is {@code "none"} (exact normal CDF) or {@code "tanh"}. */
    public static Tensor gelu(Tensor x, String approximate) {
        Arguments.nonNull("gelu", "x", x);
        Arguments.nonNull("gelu", "approximate", approximate);
        return x.gelu(approximate);
    }

    public static Tensor gelu(Tensor x) {
        Arguments.nonNull("gelu", "x", x);
        return x.gelu("none");
    }

    /** {@code F.logsigmoid} */
    public static Tensor logsigmoid(Tensor x) {
        Arguments.nonNull("logsigmoid", "x", x);
        return x.logSigmoid();
    }

    /** {@code F.hardtanh(x, min_val=-1, max_val=1)} */
    public static Tensor hardtanh(Tensor x, double minVal, double maxVal) {
        Arguments.nonNull("hardtanh", "x", x);
        return x.hardtanh(minVal, maxVal);
    }

    public static Tensor hardtanh(Tensor x) {
        return hardtanh(x, -1, 1);
    }

    /** {@code F.relu6} */
    public static Tensor relu6(Tensor x) {
        Arguments.nonNull("relu6", "x", x);
        return x.relu6();
    }

    /** {@code F.mish} */
    public static Tensor mish(Tensor x) {
        Arguments.nonNull("mish", "x", x);
        return x.mish();
    }

    public static Tensor silu(Tensor x) {
        Arguments.nonNull("silu", "x", x);
        return x.silu();
    }

    public static Tensor tanh(Tensor x) {
        Arguments.nonNull("tanh", "x", x);
        return x.tanh();
    }

    public static Tensor sigmoid(Tensor x) {
        Arguments.nonNull("sigmoid", "x", x);
        return x.sigmoid();
    }

    public static Tensor softmax(Tensor x, int dim) {
        Arguments.nonNull("softmax", "x", x);
        return x.softmax(dim);
    }

    public static Tensor logSoftmax(Tensor x, int dim) {
        Arguments.nonNull("logSoftmax", "x", x);
        return x.logSoftmax(dim);
    }

    /** {@code F.softmax(x, dim, dtype)}: the input converted to {@code dtype} first (null: as is). */
    public static Tensor softmax(Tensor x, int dim, DType dtype) {
        Arguments.nonNull("softmax", "x", x);
        return x.softmax(dim, dtype);
    }

    public static Tensor logSoftmax(Tensor x, int dim, DType dtype) {
        Arguments.nonNull("logSoftmax", "x", x);
        return x.logSoftmax(dim, dtype);
    }

    /** {@code F.softplus(x, beta=1, threshold=20)}. */
    public static Tensor softplus(Tensor x) {
        return softplus(x, 1, 20);
    }

    /** {@code log(1 + exp(beta x)) / beta}, linear where {@code beta x > threshold}. */
    public static Tensor softplus(Tensor x, double beta, double threshold) {
        Arguments.nonNull("softplus", "x", x);
        return x.softplus(beta, threshold);
    }

    /**
     * {@code F.normalize(x, p=2, dim=1, eps=1e-12)}: x divided by its p-norm along {@code dim}, the norm held at
     * least {@code eps}.
     */
    public static Tensor normalize(Tensor x) {
        return normalize(x, 2, 1, 1e-12);
    }

    public static Tensor normalize(Tensor x, double p, int dim, double eps) {
        Arguments.nonNull("normalize", "x", x);
        return MemoryScope.run(() -> x.div(x.norm(p, new int[] {dim}, true).clampMin(eps).expandAs(x)));
    }

    /** {@code F.one_hot(indices)}: as many classes as the largest index plus one (read on the host). */
    public static Tensor oneHot(Tensor indices) {
        return oneHot(indices, -1);
    }

    /**
     * {@code F.one_hot(indices, num_classes=-1)}: int64 indices to int64 one-hot vectors in a new last dim.
     * {@code numClasses} -1 takes the largest index plus one (read on the host).
     */
    public static Tensor oneHot(Tensor indices, long numClasses) {
        return Indexing.oneHot(indices, numClasses);
    }

    /** {@code x > 0 ? x : alpha * (exp(x) - 1)} */
    public static Tensor elu(Tensor x, double alpha) {
        Arguments.nonNull("elu", "x", x);
        return Dispatcher.call(PointwiseOps.ELU, new Tensor[] {x}, alpha);
    }

    public static Tensor elu(Tensor x) { return elu(x, 1.0); }

    /** {@code x * min(max(x + 3, 0), 6) / 6} */
    public static Tensor hardswish(Tensor x) {
        Arguments.nonNull("hardswish", "x", x);
        return MemoryScope.run(() -> x.mul(x.add(3.0).clamp(0, 6)).div(6.0));
    }

    // ------------------------------------------------------------------ linear layers

    /** {@code x @ weight.T + bias} over the last dimension; {@code bias} may be null. */
    public static Tensor linear(Tensor x, Tensor weight, Tensor bias) {
        Arguments.nonNull("linear", "x", x);
        Arguments.nonNull("linear", "weight", weight);
        return Torch.linear(x, weight, bias);
    }

    /**
     * {@code y[..., o] = x1[..., :] @ weight[o] @ x2[..., :] + bias[o]} with {@code weight} of shape
     * {@code [out, in1, in2]}; {@code bias} may be null. The declared {@link org.jtorch.op.FrontEndOps#BILINEAR}.
     */
    public static Tensor bilinear(Tensor x1, Tensor x2, Tensor weight, Tensor bias) {
        Arguments.nonNull("bilinear", "x1", x1);
        Arguments.nonNull("bilinear", "x2", x2);
        Arguments.nonNull("bilinear", "weight", weight);
        return org.jtorch.ops.Linalg.bilinear(x1, x2, weight, bias);
    }

    // ------------------------------------------------------------------ dropout (org.jtorch.ops.Dropouts)

    /** {@code F.dropout(x, **options)}: {@code p=0.5, training=True} unless the options say otherwise; see {@link Dropout}. */
    public static Tensor dropout(Tensor x, Dropout options) {
        Arguments.nonNull("dropout", "x", x);
        Arguments.nonNull("dropout", "options", options);
        Generator gen = options.generator() != null ? options.generator() : Generator.defaultGenerator();
        return options.inplace() ? dropout_(x, options.p(), options.training(), gen) : dropout(x, options.p(), options.training(), gen);
    }

    /**
     * {@code F.dropout(x, p, training, inplace=True)}: in training, {@code x} itself is multiplied by the mask scaled by
     * {@code 1 / (1 - p)}, as PyTorch's {@code dropout_} (the same mask as {@link #dropout(Tensor, double, boolean,
     * Generator)} draws from the same generator state). In-place rules as for every in-place op: a leaf that requires grad
     * is refused, a non-leaf's history is rebased. Returns a new handle to {@code x} (the caller closes it).
     */
    public static Tensor dropout_(Tensor x, double p, boolean training, Generator gen) {
        Arguments.nonNull("dropout_", "x", x);
        Arguments.nonNull("dropout_", "gen", gen);
        return Dropouts.dropout_(x, p, training, gen);
    }

    /** Dropout with the default generator. */
    public static Tensor dropout(Tensor x, double p, boolean training) {
        return dropout(x, p, training, Generator.defaultGenerator());
    }

    /**
     * Zeroes each element with probability {@code p} and scales the rest by {@code 1 / (1 - p)} in
     * training; the identity (a new reference) otherwise. The declared {@link RandomOps#DROPOUT}.
     */
    public static Tensor dropout(Tensor x, double p, boolean training, Generator gen) {
        Arguments.nonNull("dropout", "x", x);
        Arguments.nonNull("dropout", "gen", gen);
        return Dropouts.dropout(x, p, training, gen);
    }

    /**
     * {@code F.alpha_dropout}: SELU's dropout in training (dropped elements set to SELU's negative saturation, then
     * everything scaled and shifted to keep zero mean and unit variance); the identity otherwise. The declared {@link
     * RandomOps#ALPHA_DROPOUT}.
     */
    public static Tensor alphaDropout(Tensor x, double p, boolean training, Generator gen) {
        Arguments.nonNull("alphaDropout", "x", x);
        Arguments.nonNull("alphaDropout", "gen", gen);
        return Dropouts.alphaDropout(x, p, training, gen);
    }

    /** {@code F.feature_alpha_dropout}: {@link #alphaDropout} of whole {@code (n, c)} channels. The declared {@link RandomOps#FEATURE_ALPHA_DROPOUT}. */
    public static Tensor featureAlphaDropout(Tensor x, double p, boolean training, Generator gen) {
        Arguments.nonNull("featureAlphaDropout", "x", x);
        Arguments.nonNull("featureAlphaDropout", "gen", gen);
        return Dropouts.featureAlphaDropout(x, p, training, gen);
    }

    // ------------------------------------------------------------------ normalisation

    /** {@code F.layer_norm(x, normalized_shape, **options)}; see {@link Norm}. */
    public static Tensor layerNorm(Tensor x, long[] normalizedShape, Norm options) {
        Arguments.nonNull("layerNorm", "x", x);
        Arguments.nonNull("layerNorm", "normalizedShape", normalizedShape);
        Arguments.nonNull("layerNorm", "options", options);
        return layerNorm(x, normalizedShape, options.weight(), options.bias(), options.eps());
    }

    /**
     * Layer normalisation over the trailing dimensions {@code normalizedShape}: {@code (x - mean) /
     * sqrt(var + eps) * weight + bias} with the biased variance; {@code weight} and {@code bias} may be null.
     */
    public static Tensor layerNorm(Tensor x, long[] normalizedShape, Tensor weight, Tensor bias, double eps) {
        Arguments.nonNull("layerNorm", "x", x);
        Arguments.nonNull("layerNorm", "normalizedShape", normalizedShape);
        return org.jtorch.ops.Normalization.layerNorm(x, normalizedShape, weight, bias, eps);
    }

    /**
     * RMS normalisation, as PyTorch 2.4's {@code rms_norm}: {@code x / sqrt(mean(x^2) + eps) * weight} over
     * {@code normalizedShape}; a null {@code eps} means the machine epsilon of {@code x}'s dtype.
     */
    public static Tensor rmsNorm(Tensor x, long[] normalizedShape, Tensor weight, Double eps) {
        Arguments.nonNull("rmsNorm", "x", x);
        Arguments.nonNull("rmsNorm", "normalizedShape", normalizedShape);
        return org.jtorch.ops.Normalization.rmsNorm(x, normalizedShape, weight, eps);
    }

    // ------------------------------------------------------------------ embedding

    /** Rows of {@code weight} picked by {@code indices}: shape {@code indices.shape + [embedding_dim]}. */
    public static Tensor embedding(Tensor indices, Tensor weight) {
        return embedding(indices, weight, (Long) null);
    }

    /**
     * {@code F.embedding(indices, weight, **options)}; see {@link Embedding}. With {@code maxNorm}, the rows looked up
     * are first renormalised in place, as PyTorch's: each distinct row whose {@code normType}-norm exceeds
     * {@code maxNorm} is scaled by {@code maxNorm / (norm + 1e-7)} (under no-grad: the weight changes, its history does
     * not). {@code sparse=true} is refused: jtorch has no sparse tensors, so an embedding's gradient is always dense.
     */
    public static Tensor embedding(Tensor indices, Tensor weight, Embedding options) {
        Arguments.nonNull("embedding", "indices", indices);
        Arguments.nonNull("embedding", "weight", weight);
        Arguments.nonNull("embedding", "options", options);
        if (options.sparse()) throw Embedding.sparseRefused("embedding");
        if (options.maxNorm() != null) {
            checkEmbeddingArguments(indices, weight);
            Indexing.embeddingRenorm_(weight, indices, options.maxNorm(), options.normType()).close();
        }
        return embedding(indices, weight, options.paddingIdx(), options.scaleGradByFreq());
    }

    /**
     * Rows of {@code weight} ({@code [num_embeddings, embedding_dim]}) picked by the int64/int32
     * {@code indices}. The gradient of row {@code paddingIdx} (negative counts from the end; null for
     * none) stays zero, as PyTorch's {@code padding_idx}.
     */
    public static Tensor embedding(Tensor indices, Tensor weight, Long paddingIdx) {
        Arguments.nonNull("embedding", "indices", indices);
        Arguments.nonNull("embedding", "weight", weight);
        return embedding(indices, weight, paddingIdx, false);
    }

    private static void checkEmbeddingArguments(Tensor indices, Tensor weight) {
        if (weight.dim() != 2) {
            throw new IllegalArgumentException("embedding: expected a 2-D weight [num_embeddings, embedding_dim], got shape "
                    + Shapes.format(weight.shape()));
        }
        if (indices.dtype() != DType.INT64 && indices.dtype() != DType.INT32) {
            throw new IllegalArgumentException("embedding: expected indices of dtype int64 or int32, got " + indices.dtype());
        }
    }

    /**
     * The lookup ({@link IndexingOps#EMBEDDING}); its gradient is {@code embedding_dense_backward}, where with
     * {@code scaleGradByFreq} each looked-up row's gradient is divided by how often its index occurs in {@code indices},
     * as PyTorch's {@code scale_grad_by_freq}.
     */
    private static Tensor embedding(Tensor indices, Tensor weight, Long paddingIdx, boolean scaleGradByFreq) {
        checkEmbeddingArguments(indices, weight);
        long num = weight.size(0);
        long pad = paddingIdx == null ? -1 : paddingIdx < 0 ? paddingIdx + num : paddingIdx;
        if (paddingIdx != null && (pad < 0 || pad >= num)) {
            throw new IllegalArgumentException("embedding: padding_idx " + paddingIdx + " must be within num_embeddings " + num);
        }
        return Dispatcher.call(IndexingOps.EMBEDDING, new Tensor[] {weight, indices}, pad < 0 ? Double.NaN : pad,
                scaleGradByFreq ? 1 : 0);
    }

    // ------------------------------------------------------------------ attention

    /** {@link #scaledDotProductAttention(Tensor, Tensor, Tensor, Tensor, double, boolean, Generator)} with the default generator. */
    public static Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v, Tensor attnMask, double dropoutP, boolean isCausal) {
        return scaledDotProductAttention(q, k, v, attnMask, dropoutP, isCausal, Generator.defaultGenerator());
    }

    public static Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v) {
        return scaledDotProductAttention(q, k, v, null, 0, false);
    }

    /**
     * {@code softmax(q @ k^T / sqrt(E) + mask) @ v} over {@code [..., L, E]} queries and {@code [..., S, E]}
     * keys, as PyTorch 2's {@code scaled_dot_product_attention}: a bool {@code attnMask} keeps the
     * positions where it is true, a floating one is added to the scores; {@code isCausal} keeps
     * {@code j <= i} (and excludes {@code attnMask}); dropout applies to the attention weights. The declared front end
     * {@link AttentionOps#SCALED_DOT_PRODUCT_ATTENTION} (autocast's policy), which calls the fused op
     * {@link AttentionOps#FLASH_ATTENTION} (its composition where no kernel takes the call).
     */
    public static Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v, Tensor attnMask, double dropoutP, boolean isCausal,
                                                   Generator gen) {
        Arguments.nonNull("scaledDotProductAttention", "q", q);
        Arguments.nonNull("scaledDotProductAttention", "k", k);
        Arguments.nonNull("scaledDotProductAttention", "v", v);
        return scaledDotProductAttention(q, k, v, attnMask, dropoutP, isCausal, null, gen);
    }

    /** {@code F.scaled_dot_product_attention(q, k, v, **options)}; see {@link ScaledDotProductAttention}. */
    public static Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v, ScaledDotProductAttention options) {
        Arguments.nonNull("scaledDotProductAttention", "q", q);
        Arguments.nonNull("scaledDotProductAttention", "k", k);
        Arguments.nonNull("scaledDotProductAttention", "v", v);
        Arguments.nonNull("scaledDotProductAttention", "options", options);
        Generator gen = options.generator() != null ? options.generator() : Generator.defaultGenerator();
        return scaledDotProductAttention(q, k, v, options.attnMask(), options.dropoutP(), options.isCausal(), options.scale(), gen);
    }

    /** Autocast (the declared policy) around the front end; the trace sees the ops inside, the fused op among them. */
    private static Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v, Tensor attnMask, double dropoutP, boolean isCausal,
                                                    Double scale, Generator gen) {
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(AttentionOps.SCALED_DOT_PRODUCT_ATTENTION, new Tensor[] {q, k, v, attnMask}, null,
                    t -> scaledDotProductAttentionBody(t[0], t[1], t[2], t[3], dropoutP, isCausal, scale, gen));
        }
        return scaledDotProductAttentionBody(q, k, v, attnMask, dropoutP, isCausal, scale, gen);
    }

    private static Tensor scaledDotProductAttentionBody(Tensor q, Tensor k, Tensor v, Tensor attnMask, double dropoutP,
                                                        boolean isCausal, Double scale, Generator gen) {
        if (isCausal && attnMask != null) {
            throw new IllegalArgumentException("scaledDotProductAttention: explicit attn_mask should not be set when is_causal=True");
        }
        return attention(q, k, v, attnMask, dropoutP, isCausal, scale, gen, false).output();
    }

    /** Output {@code [..., L, Ev]} and, when asked for, the attention weights {@code [..., L, S]} (after dropout). */
    record Attention(Tensor output, Tensor weights) {}

    static Attention attention(Tensor q, Tensor k, Tensor v, Tensor attnMask, double dropoutP, boolean isCausal, Generator gen,
                               boolean keepWeights) {
        return attention(q, k, v, attnMask, dropoutP, isCausal, null, gen, keepWeights);
    }

    /**
     * {@code scale} null: {@code 1 / sqrt(E)}. Without the weights and with {@code dropoutP < 1}, the fused op
     * ({@link AttentionOps#FLASH_ATTENTION}) with the bool mask made additive in the query's dtype and dropout's mask drawn
     * here, in the scores' shape and dtype (as the composition draws it, so that both paths apply the same mask); else the
     * composition of ops ({@link org.jtorch.ops.Attention}).
     */
    static Attention attention(Tensor q, Tensor k, Tensor v, Tensor attnMask, double dropoutP, boolean isCausal, Double scaleOrNull,
                               Generator gen, boolean keepWeights) {
        if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2) {
            throw new IllegalArgumentException("scaledDotProductAttention: expected query, key and value with at least 2 dimensions, got "
                    + Shapes.format(q.shape()) + ", " + Shapes.format(k.shape()) + ", " + Shapes.format(v.shape()));
        }
        if (q.size(-1) != k.size(-1) || k.size(-2) != v.size(-2)) {
            throw new IllegalArgumentException("scaledDotProductAttention: query " + Shapes.format(q.shape()) + ", key "
                    + Shapes.format(k.shape()) + " and value " + Shapes.format(v.shape())
                    + " must agree on the embedding size (query/key) and the sequence length (key/value)");
        }
        double scale = scaleOrNull != null ? scaleOrNull : 1.0 / Math.sqrt(q.size(-1));
        try (MemoryScope scope = new MemoryScope()) {
            if (dropoutP < 1 && !keepWeights) {
                Tensor mask = attnMask != null && attnMask.dtype() == DType.BOOL ? org.jtorch.ops.Attention.additiveMask(attnMask, q) : attnMask;
                Tensor drop = null;
                if (dropoutP > 0) {
                    long[] scores = Arrays.copyOf(Shapes.broadcast("scaledDotProductAttention", Arrays.copyOf(q.shape(), q.dim() - 2),
                            Arrays.copyOf(k.shape(), k.dim() - 2)), Math.max(q.dim(), k.dim()));
                    scores[scores.length - 2] = q.size(-2);
                    scores[scores.length - 1] = k.size(-2);
                    DType dtype = q.dtype();
                    if (mask != null) {
                        scores = Shapes.broadcast("scaledDotProductAttention", scores, mask.shape());
                        if (mask.dtype().isFloatingPoint()) dtype = DType.promote(dtype, mask.dtype());
                    }
                    drop = Dropouts.dropoutScale(scores, dtype, q.device(), dropoutP, gen);
                }
                Tensor out = Dispatcher.call(AttentionOps.FLASH_ATTENTION, new Tensor[] {q, k, v, mask, drop}, isCausal ? 1 : 0, scale);
                return new Attention(scope.keep(out), null);
            }
            Tensor weights = org.jtorch.ops.Attention.weights(q, k, attnMask, isCausal, scale);
            if (dropoutP > 0) weights = dropout(weights, dropoutP, true, gen);
            Tensor out = weights.matmul(v);
            return new Attention(scope.keep(out), keepWeights ? scope.keep(weights) : null);
        }
    }

    // ------------------------------------------------------------------ losses

    /** {@code F.cross_entropy(input, target, **options)}: {@code F.crossEntropy(x, t, CrossEntropy.options().labelSmoothing(0.1))}. */
    public static Tensor crossEntropy(Tensor input, Tensor target, CrossEntropy options) {
        nonNullInputs("crossEntropy", input, target);
        Arguments.nonNull("crossEntropy", "options", options);
        return crossEntropy(input, target, options.weight(), options.ignoreIndex(), options.reduction(), options.labelSmoothing());
    }

    /** {@code F.nll_loss(input, target, **options)}; see {@link NllLoss}. */
    public static Tensor nllLoss(Tensor input, Tensor target, NllLoss options) {
        nonNullInputs("nllLoss", input, target);
        Arguments.nonNull("nllLoss", "options", options);
        return nllLoss(input, target, options.weight(), options.ignoreIndex(), options.reduction());
    }

    /** {@code F.binary_cross_entropy(input, target, **options)}; see {@link BinaryCrossEntropy}. */
    public static Tensor binaryCrossEntropy(Tensor input, Tensor target, BinaryCrossEntropy options) {
        nonNullInputs("binaryCrossEntropy", input, target);
        Arguments.nonNull("binaryCrossEntropy", "options", options);
        return binaryCrossEntropy(input, target, options.weight(), options.reduction());
    }

    /** {@code F.binary_cross_entropy_with_logits(input, target, **options)}; see {@link BinaryCrossEntropyWithLogits}. */
    public static Tensor binaryCrossEntropyWithLogits(Tensor input, Tensor target, BinaryCrossEntropyWithLogits options) {
        nonNullInputs("binaryCrossEntropyWithLogits", input, target);
        Arguments.nonNull("binaryCrossEntropyWithLogits", "options", options);
        return binaryCrossEntropyWithLogits(input, target, options.weight(), options.posWeight(), options.reduction());
    }

    /** Cross entropy with PyTorch's defaults: no weight, ignore index -100, mean, no label smoothing. */
    public static Tensor crossEntropy(Tensor input, Tensor target) {
        return crossEntropy(input, target, null, -100, Reduction.MEAN, 0);
    }

    /** Cross entropy with PyTorch's defaults but {@code reduction}, as {@code F.cross_entropy(x, t, reduction=...)}. */
    public static Tensor crossEntropy(Tensor input, Tensor target, Reduction reduction) {
        return crossEntropy(input, target, null, -100, reduction, 0);
    }

    /**
     * {@code nll_loss(log_softmax(input, 1), target)} for class-index targets (int64, shape {@code [N, d...]}
     * for input {@code [N, C, d...]}, or 0-d for input {@code [C]}), or {@code -sum(target * log_softmax(input))}
     * for class-probability targets (floating, the input's shape). {@code weight} ({@code [C]}, may be
     * null) rescales classes; a weighted mean divides by the summed weights of the non-ignored targets;
     * {@code labelSmoothing} mixes the target with the uniform distribution, as PyTorch 1.13. Class indices over
     * {@link LossOps#CROSS_ENTROPY_FUSED}: one fused kernel where the backend has one for the call's form, else its
     * decomposition into log_softmax and nll_loss (the dispatcher chooses).
     */
    public static Tensor crossEntropy(Tensor input, Tensor target, Tensor weight, long ignoreIndex, Reduction reduction,
                                      double labelSmoothing) {
        Arguments.nonNull("crossEntropy", "input", input);
        Arguments.nonNull("crossEntropy", "target", target);
        Arguments.nonNull("crossEntropy", "reduction", reduction);
        return Losses.crossEntropyLoss(input, target, weight, reduction("crossEntropy", reduction), ignoreIndex, labelSmoothing);
    }

    public static Tensor nllLoss(Tensor input, Tensor target) {
        return nllLoss(input, target, null, -100, Reduction.MEAN);
    }

    /** Negative log likelihood with PyTorch's defaults but {@code reduction}: no weight, ignore index -100. */
    public static Tensor nllLoss(Tensor input, Tensor target, Reduction reduction) {
        return nllLoss(input, target, null, -100, reduction);
    }

    /**
     * Negative log likelihood of log-probabilities {@code input} ({@code [N, C, d...]} or {@code [C]}) at
     * class indices {@code target} ({@code [N, d...]} or 0-d): {@code -weight[t] * input[n, t]}, zero where
     * {@code target == ignoreIndex}; the mean divides by the summed weights of the non-ignored targets
     * (NaN when all are ignored), as PyTorch. The declared {@link LossOps#NLL_LOSS}: its autocast policy (float32), then
     * a fused kernel or its decomposition, as the dispatcher chooses.
     */
    public static Tensor nllLoss(Tensor input, Tensor target, Tensor weight, long ignoreIndex, Reduction reduction) {
        Arguments.nonNull("nllLoss", "input", input);
        Arguments.nonNull("nllLoss", "target", target);
        Arguments.nonNull("nllLoss", "reduction", reduction);
        return Losses.nllLoss("nllLoss", input, target, weight, ignoreIndex, reduction("nllLoss", reduction));
    }

    /** PyTorch's {@code at::Reduction} value of {@code reduction}, which must not be klDiv's {@code BATCHMEAN}. */
    private static int reduction(String op, Reduction reduction) {
        checkReduction(op, reduction);
        return (int) reductionEnum(reduction);
    }

    private static void checkReduction(String op, Reduction reduction) {
        if (reduction == Reduction.BATCHMEAN) {
            throw new IllegalArgumentException(op + ": reduction BATCHMEAN is only defined for klDiv");
        }
    }

    /** PyTorch's {@code at::Reduction} value of {@code reduction}: the declared losses' first scalar ({@link LossOps}). */
    private static double reductionEnum(Reduction reduction) {
        return switch (reduction) {
            case NONE -> LossOps.NONE;
            case MEAN -> LossOps.MEAN;
            case SUM -> LossOps.SUM;
            case BATCHMEAN -> throw new IllegalArgumentException("reduction BATCHMEAN is only defined for klDiv");
        };
    }

    /**
     * Mean squared error {@code (input - target)^2}, broadcast, then reduced ({@link LossOps#MSE_LOSS}); reduced over operands
     * of one shape and floating dtype, one fused op where the backend has its kernel ({@link LossOps#MSE_LOSS_FUSED}: the
     * dispatcher chooses).
     */
    public static Tensor mseLoss(Tensor input, Tensor target, Reduction reduction) {
        Arguments.nonNull("mseLoss", "input", input);
        Arguments.nonNull("mseLoss", "target", target);
        Arguments.nonNull("mseLoss", "reduction", reduction);
        return Losses.mseLoss(input, target, reduction("mseLoss", reduction));
    }

    public static Tensor mseLoss(Tensor input, Tensor target) { return mseLoss(input, target, Reduction.MEAN); }

    /** Mean absolute error {@code |input - target|}. */
    public static Tensor l1Loss(Tensor input, Tensor target, Reduction reduction) {
        Arguments.nonNull("l1Loss", "input", input);
        Arguments.nonNull("l1Loss", "target", target);
        Arguments.nonNull("l1Loss", "reduction", reduction);
        return Losses.l1Loss(input, target, reduction("l1Loss", reduction));
    }

    public static Tensor l1Loss(Tensor input, Tensor target) { return l1Loss(input, target, Reduction.MEAN); }

    /** {@code |d| < beta ? 0.5 d^2 / beta : |d| - 0.5 beta}, and the L1 loss for {@code beta == 0}. */
    public static Tensor smoothL1Loss(Tensor input, Tensor target, Reduction reduction, double beta) {
        Arguments.nonNull("smoothL1Loss", "input", input);
        Arguments.nonNull("smoothL1Loss", "target", target);
        Arguments.nonNull("smoothL1Loss", "reduction", reduction);
        return Losses.smoothL1Loss(input, target, reduction("smoothL1Loss", reduction), beta);
    }

    public static Tensor smoothL1Loss(Tensor input, Tensor target) { return smoothL1Loss(input, target, Reduction.MEAN, 1.0); }

    public static Tensor smoothL1Loss(Tensor input, Tensor target, Reduction reduction) { return smoothL1Loss(input, target, reduction, 1.0); }

    /** {@code |d| < delta ? 0.5 d^2 : delta (|d| - 0.5 delta)}. */
    public static Tensor huberLoss(Tensor input, Tensor target, Reduction reduction, double delta) {
        Arguments.nonNull("huberLoss", "input", input);
        Arguments.nonNull("huberLoss", "target", target);
        Arguments.nonNull("huberLoss", "reduction", reduction);
        return Losses.huberLoss(input, target, reduction("huberLoss", reduction), delta);
    }

    public static Tensor huberLoss(Tensor input, Tensor target) { return huberLoss(input, target, Reduction.MEAN, 1.0); }

    public static Tensor huberLoss(Tensor input, Tensor target, Reduction reduction) { return huberLoss(input, target, reduction, 1.0); }

    /**
     * {@code -weight * (t log(x) + (1 - t) log(1 - x))} for probabilities {@code input} in [0, 1], with
     * each logarithm clamped at -100 as PyTorch; {@code weight} (broadcast) may be null. The declared
     * {@link LossOps#BINARY_CROSS_ENTROPY}, with its gradients as ops; an input outside [0, 1] (or NaN) is refused by its
     * kernel ({@link LossOps#BINARY_CROSS_ENTROPY_ELEMENTWISE}): at the call on the CPU, at the next synchronisation on CUDA.
     */
    public static Tensor binaryCrossEntropy(Tensor input, Tensor target, Tensor weight, Reduction reduction) {
        Arguments.nonNull("binaryCrossEntropy", "input", input);
        Arguments.nonNull("binaryCrossEntropy", "target", target);
        Arguments.nonNull("binaryCrossEntropy", "reduction", reduction);
        return Losses.binaryCrossEntropy(input, target, weight, reduction("binaryCrossEntropy", reduction));
    }

    public static Tensor binaryCrossEntropy(Tensor input, Tensor target) {
        return binaryCrossEntropy(input, target, null, Reduction.MEAN);
    }

    public static Tensor binaryCrossEntropy(Tensor input, Tensor target, Reduction reduction) {
        return binaryCrossEntropy(input, target, null, reduction);
    }

    /**
     * Sigmoid and binary cross entropy in one stable formula, as PyTorch 1.13:
     * {@code (1 - t) x + lw softplus(-x)} with {@code lw = (posWeight - 1) t + 1};
     * {@code weight} and {@code posWeight} (broadcast over the last dimension, one per class) may be null.
     */
    public static Tensor binaryCrossEntropyWithLogits(Tensor input, Tensor target, Tensor weight, Tensor posWeight, Reduction reduction) {
        Arguments.nonNull("binaryCrossEntropyWithLogits", "input", input);
        Arguments.nonNull("binaryCrossEntropyWithLogits", "target", target);
        Arguments.nonNull("binaryCrossEntropyWithLogits", "reduction", reduction);
        return Losses.binaryCrossEntropyWithLogits(input, target, weight, posWeight, reduction("binaryCrossEntropyWithLogits", reduction));
    }

    public static Tensor binaryCrossEntropyWithLogits(Tensor input, Tensor target) {
        return binaryCrossEntropyWithLogits(input, target, null, null, Reduction.MEAN);
    }

    public static Tensor binaryCrossEntropyWithLogits(Tensor input, Tensor target, Reduction reduction) {
        return binaryCrossEntropyWithLogits(input, target, null, null, reduction);
    }

    /**
     * Kullback-Leibler divergence of log-probabilities {@code input} from {@code target}: {@code
     * target (log target - input)} (0 where {@code target == 0}), or {@code exp(target) (target - input)}
     * when {@code logTarget}; {@code BATCHMEAN} divides the sum by the batch size (dimension 0).
     */
    public static Tensor klDiv(Tensor input, Tensor target, Reduction reduction, boolean logTarget) {
        Arguments.nonNull("klDiv", "input", input);
        Arguments.nonNull("klDiv", "target", target);
        Arguments.nonNull("klDiv", "reduction", reduction);
        boolean batchmean = reduction == Reduction.BATCHMEAN;
        return Losses.klDiv(input, target, batchmean ? (int) LossOps.SUM : (int) reductionEnum(reduction), batchmean, logTarget);
    }

    public static Tensor klDiv(Tensor input, Tensor target) { return klDiv(input, target, Reduction.MEAN, false); }

    public static Tensor klDiv(Tensor input, Tensor target, Reduction reduction) { return klDiv(input, target, reduction, false); }

    // ------------------------------------------------------------------ convolution (org.jtorch.ops.Convolution)
    // Arguments as torch.nn.functional's, in its order; int[] arguments take one value for every
    // spatial dimension or one per dimension.

    public static Tensor conv1d(Tensor input, Tensor weight, Tensor bias, int stride, int padding, int dilation, int groups) {
        Arguments.nonNull("conv1d", "input", input);
        Arguments.nonNull("conv1d", "weight", weight);
        return org.jtorch.ops.Convolution.conv1d(input, weight, bias, stride, padding, dilation, groups);
    }

    /** {@code padding} is "valid" or "same". */
    public static Tensor conv1d(Tensor input, Tensor weight, Tensor bias, int stride, String padding, int dilation, int groups) {
        Arguments.nonNull("conv1d", "input", input);
        Arguments.nonNull("conv1d", "weight", weight);
        Arguments.nonNull("conv1d", "padding", padding);
        return org.jtorch.ops.Convolution.conv1d(input, weight, bias, stride, padding, dilation, groups);
    }

    public static Tensor conv1d(Tensor input, Tensor weight, Tensor bias) {
        return conv1d(input, weight, bias, 1, 0, 1, 1);
    }

    public static Tensor conv2d(Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding, int[] dilation, int groups) {
        Arguments.nonNull("conv2d", "input", input);
        Arguments.nonNull("conv2d", "weight", weight);
        Arguments.nonNull("conv2d", "stride", stride);
        Arguments.nonNull("conv2d", "padding", padding);
        Arguments.nonNull("conv2d", "dilation", dilation);
        return org.jtorch.ops.Convolution.conv2d(input, weight, bias, stride, padding, dilation, groups);
    }

    /** {@code padding} is "valid" or "same". */
    public static Tensor conv2d(Tensor input, Tensor weight, Tensor bias, int[] stride, String padding, int[] dilation, int groups) {
        Arguments.nonNull("conv2d", "input", input);
        Arguments.nonNull("conv2d", "weight", weight);
        Arguments.nonNull("conv2d", "stride", stride);
        Arguments.nonNull("conv2d", "padding", padding);
        Arguments.nonNull("conv2d", "dilation", dilation);
        return org.jtorch.ops.Convolution.conv2d(input, weight, bias, stride, padding, dilation, groups);
    }

    /** Square stride and padding, no dilation, one group. */
    public static Tensor conv2d(Tensor input, Tensor weight, Tensor bias, int stride, int padding) {
        return conv2d(input, weight, bias, new int[] {stride}, new int[] {padding}, new int[] {1}, 1);
    }

    public static Tensor conv2d(Tensor input, Tensor weight, Tensor bias) {
        return conv2d(input, weight, bias, 1, 0);
    }

    public static Tensor convTranspose2d(Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding,
                                         int[] outputPadding, int groups, int[] dilation) {
        Arguments.nonNull("convTranspose2d", "input", input);
        Arguments.nonNull("convTranspose2d", "weight", weight);
        Arguments.nonNull("convTranspose2d", "stride", stride);
        Arguments.nonNull("convTranspose2d", "padding", padding);
        Arguments.nonNull("convTranspose2d", "outputPadding", outputPadding);
        Arguments.nonNull("convTranspose2d", "dilation", dilation);
        return org.jtorch.ops.Convolution.convTranspose2d(input, weight, bias, stride, padding, outputPadding, groups, dilation);
    }

    public static Tensor convTranspose2d(Tensor input, Tensor weight, Tensor bias, int stride, int padding) {
        return convTranspose2d(input, weight, bias, new int[] {stride}, new int[] {padding}, new int[] {0}, 1, new int[] {1});
    }

    /** {@code F.conv1d(input, weight)}: no bias, PyTorch's defaults. */
    public static Tensor conv1d(Tensor input, Tensor weight) {
        return conv1d(input, weight, Conv.options());
    }

    /** {@code F.conv2d(input, weight)}: no bias, PyTorch's defaults. */
    public static Tensor conv2d(Tensor input, Tensor weight) {
        return conv2d(input, weight, Conv.options());
    }

    /** {@code F.conv1d(input, weight, **options)}; see {@link Conv}. */
    public static Tensor conv1d(Tensor input, Tensor weight, Conv options) {
        nonNullInputs("conv1d", input, weight);
        Arguments.nonNull("conv1d", "options", options);
        int stride = single("conv1d", "stride", options.stride());
        int dilation = single("conv1d", "dilation", options.dilation());
        if (options.paddingMode() != null) {
            return conv1d(input, weight, options.bias(), stride, options.paddingMode(), dilation, options.groups());
        }
        return conv1d(input, weight, options.bias(), stride, single("conv1d", "padding", options.padding()), dilation, options.groups());
    }

    /** {@code F.conv2d(input, weight, **options)}; see {@link Conv}. */
    public static Tensor conv2d(Tensor input, Tensor weight, Conv options) {
        nonNullInputs("conv2d", input, weight);
        Arguments.nonNull("conv2d", "options", options);
        if (options.paddingMode() != null) {
            return conv2d(input, weight, options.bias(), options.stride(), options.paddingMode(), options.dilation(), options.groups());
        }
        return conv2d(input, weight, options.bias(), options.stride(), options.padding(), options.dilation(), options.groups());
    }

    /** {@code F.conv3d(input, weight)}: no bias, PyTorch's defaults. */
    public static Tensor conv3d(Tensor input, Tensor weight) {
        return conv3d(input, weight, Conv.options());
    }

    /**
     * {@code F.conv3d(input, weight, **options)} over {@code [N, C_in, D, H, W]} (or unbatched {@code [C_in, D, H, W]})
     * with weight {@code [C_out, C_in / groups, kD, kH, kW]}; sizes as {@link Conv}'s (1 or 3 values). A composite of
     * conv2d ({@link org.jtorch.ops.Convolution3d}): for each depth tap {@code kd}, the (zero-padded) input's depth slices
     * {@code od * strideD + kd * dilationD} go through one batched {@code conv2d} with {@code weight[:, :, kd]}, and the
     * taps are summed, so the gradients are conv2d's.
     */
    public static Tensor conv3d(Tensor input, Tensor weight, Conv options) {
        nonNullInputs("conv3d", input, weight);
        Arguments.nonNull("conv3d", "options", options);
        return options.paddingMode() != null
                ? org.jtorch.ops.Convolution3d.conv3d(input, weight, options.bias(), options.stride(), options.paddingMode(), options.dilation(), options.groups())
                : org.jtorch.ops.Convolution3d.conv3d(input, weight, options.bias(), options.stride(), options.padding(), options.dilation(), options.groups());
    }

    /** {@code F.conv_transpose3d(input, weight)}: no bias, PyTorch's defaults. */
    public static Tensor convTranspose3d(Tensor input, Tensor weight) {
        return convTranspose3d(input, weight, ConvTranspose.options());
    }

    /**
     * {@code F.conv_transpose3d(input, weight, **options)} over {@code [N, C_in, D, H, W]} (or unbatched
     * {@code [C_in, D, H, W]}) with weight {@code [C_in, C_out / groups, kD, kH, kW]}; sizes as {@link ConvTranspose}'s
     * (1 or 3 values). A composite as {@link #conv3d(Tensor, Tensor, Conv)} ({@link org.jtorch.ops.Convolution3d}): for each depth tap {@code kd}, every input
     * depth slice goes through one batched {@code convTranspose2d} with {@code weight[:, :, kd]}, and slice {@code d}
     * lands at output depth {@code d * strideD + kd * dilationD - paddingD}; the taps are summed, so the gradients are
     * convTranspose2d's.
     */
    public static Tensor convTranspose3d(Tensor input, Tensor weight, ConvTranspose options) {
        nonNullInputs("convTranspose3d", input, weight);
        Arguments.nonNull("convTranspose3d", "options", options);
        return org.jtorch.ops.Convolution3d.convTranspose3d(input, weight, options.bias(), options.stride(), options.padding(), options.outputPadding(),
                options.groups(), options.dilation());
    }

    /** {@code F.conv_transpose2d(input, weight, **options)}; see {@link ConvTranspose}. */
    public static Tensor convTranspose2d(Tensor input, Tensor weight, ConvTranspose options) {
        nonNullInputs("convTranspose2d", input, weight);
        Arguments.nonNull("convTranspose2d", "options", options);
        return convTranspose2d(input, weight, options.bias(), options.stride(), options.padding(), options.outputPadding(),
                options.groups(), options.dilation());
    }

    /**
     * {@code F.conv_transpose1d(input, weight, **options)} for {@code [N, C_in, L]} and weight {@code [C_in, C_out /
     * groups, k]}: the 2-d transposed convolution over a height of one.
     */
    public static Tensor convTranspose1d(Tensor input, Tensor weight, ConvTranspose options) {
        nonNullInputs("convTranspose1d", input, weight);
        Arguments.nonNull("convTranspose1d", "options", options);
        return org.jtorch.ops.Convolution.convTranspose1d(input, weight, options.bias(), single("convTranspose1d", "stride", options.stride()),
                single("convTranspose1d", "padding", options.padding()), single("convTranspose1d", "outputPadding", options.outputPadding()),
                options.groups(), single("convTranspose1d", "dilation", options.dilation()));
    }

    /** The first two tensor arguments of an options form, named as PyTorch names them when null. */
    private static void nonNullInputs(String op, Tensor input, Tensor second) {
        Arguments.nonNull(op, "input", input);
        Arguments.nonNull(op, op.startsWith("conv") ? "weight" : "target", second);
    }

    /** The one value of a 1-d size argument (given as 1 value, the form every spatial rank accepts). */
    private static int single(String op, String name, int[] sizes) {
        if (sizes.length != 1) {
            throw new IllegalArgumentException(op + ": expected " + name + " to be a single int, got " + Arrays.toString(sizes));
        }
        return sizes[0];
    }

    public static Tensor unfold(Tensor input, int[] kernelSize, int[] dilation, int[] padding, int[] stride) {
        Arguments.nonNull("unfold", "input", input);
        Arguments.nonNull("unfold", "kernelSize", kernelSize);
        Arguments.nonNull("unfold", "dilation", dilation);
        Arguments.nonNull("unfold", "padding", padding);
        Arguments.nonNull("unfold", "stride", stride);
        return org.jtorch.ops.Convolution.unfold(input, kernelSize, dilation, padding, stride);
    }

    public static Tensor unfold(Tensor input, int... kernelSize) {
        return unfold(input, kernelSize, new int[] {1}, new int[] {0}, new int[] {1});
    }

    public static Tensor fold(Tensor input, int[] outputSize, int[] kernelSize, int[] dilation, int[] padding, int[] stride) {
        Arguments.nonNull("fold", "input", input);
        Arguments.nonNull("fold", "outputSize", outputSize);
        Arguments.nonNull("fold", "kernelSize", kernelSize);
        Arguments.nonNull("fold", "dilation", dilation);
        Arguments.nonNull("fold", "padding", padding);
        Arguments.nonNull("fold", "stride", stride);
        return org.jtorch.ops.Convolution.fold(input, outputSize, kernelSize, dilation, padding, stride);
    }

    public static Tensor fold(Tensor input, int[] outputSize, int[] kernelSize) {
        return fold(input, outputSize, kernelSize, new int[] {1}, new int[] {0}, new int[] {1});
    }

    // ------------------------------------------------------------------ normalisation layers (org.jtorch.ops.Normalization)

    /** {@code F.batch_norm}; see {@link org.jtorch.ops.Normalization#batchNorm}. */
    public static Tensor batchNorm(Tensor input, Tensor runningMean, Tensor runningVar, Tensor weight, Tensor bias,
                                   boolean training, double momentum, double eps) {
        Arguments.nonNull("batchNorm", "input", input);
        return org.jtorch.ops.Normalization.batchNorm(input, runningMean, runningVar, weight, bias, training, momentum, eps);
    }

    /** {@code F.batch_norm(input, running_mean, running_var, **options)}; see {@link BatchNorm}. */
    public static Tensor batchNorm(Tensor input, Tensor runningMean, Tensor runningVar, BatchNorm options) {
        Arguments.nonNull("batchNorm", "input", input);
        Arguments.nonNull("batchNorm", "options", options);
        return batchNorm(input, runningMean, runningVar, options.weight(), options.bias(), options.training(), options.momentum(),
                options.eps());
    }

    /** {@code F.batch_norm} with PyTorch's defaults: evaluation mode, no affine parameters, momentum 0.1, eps 1e-5. */
    public static Tensor batchNorm(Tensor input, Tensor runningMean, Tensor runningVar) {
        return batchNorm(input, runningMean, runningVar, null, null, false, 0.1, 1e-5);
    }

    /** {@code F.instance_norm}; see {@link org.jtorch.ops.Normalization#instanceNorm}. */
    public static Tensor instanceNorm(Tensor input, Tensor runningMean, Tensor runningVar, Tensor weight, Tensor bias,
                                      boolean useInputStats, double momentum, double eps) {
        Arguments.nonNull("instanceNorm", "input", input);
        return org.jtorch.ops.Normalization.instanceNorm(input, runningMean, runningVar, weight, bias, useInputStats, momentum, eps);
    }

    /** {@code F.instance_norm(input)}: input statistics, no running statistics or affine parameters, eps 1e-5. */
    public static Tensor instanceNorm(Tensor input) {
        return instanceNorm(input, null, null, null, null, true, 0.1, 1e-5);
    }

    /** {@code F.group_norm}; see {@link org.jtorch.ops.Normalization#groupNorm}. */
    public static Tensor groupNorm(Tensor input, long numGroups, Tensor weight, Tensor bias, double eps) {
        Arguments.nonNull("groupNorm", "input", input);
        return org.jtorch.ops.Normalization.groupNorm(input, numGroups, weight, bias, eps);
    }

    /** {@code F.group_norm(input, num_groups, **options)}; see {@link Norm}. */
    public static Tensor groupNorm(Tensor input, long numGroups, Norm options) {
        Arguments.nonNull("groupNorm", "input", input);
        Arguments.nonNull("groupNorm", "options", options);
        return groupNorm(input, numGroups, options.weight(), options.bias(), options.eps());
    }

    public static Tensor groupNorm(Tensor input, long numGroups) {
        return groupNorm(input, numGroups, null, null, 1e-5);
    }

    /** {@code F.local_response_norm}; see {@link org.jtorch.ops.Normalization#localResponseNorm}. */
    public static Tensor localResponseNorm(Tensor input, int size, double alpha, double beta, double k) {
        Arguments.nonNull("localResponseNorm", "input", input);
        return org.jtorch.ops.Normalization.localResponseNorm(input, size, alpha, beta, k);
    }

    /** {@code F.local_response_norm} with PyTorch's defaults alpha 1e-4, beta 0.75, k 1. */
    public static Tensor localResponseNorm(Tensor input, int size) {
        return localResponseNorm(input, size, 1e-4, 0.75, 1.0);
    }

    // ================================================================== spatial (pooling, padding, resampling)
    // Pooling over (N, C, L) / (C, L) or (N, C, H, W) / (C, H, W); see org.jtorch.ops.Pooling for the rules.
    // Sizes are 1 or 2 ints; a null or empty stride means the kernel size.

    // Every pooling function takes its kernel as one int or an int[] and its keywords as MaxPool or AvgPool options.

    /** {@code F.max_pool2d(x, kernel_size, **options)}; see {@link MaxPool}. */
    public static Tensor maxPool2d(Tensor x, int[] kernelSize, MaxPool options) {
        checkPool("maxPool2d", x, kernelSize, options);
        return Pooling.maxPool2d(x, kernelSize, options.stride(), options.padding(), options.dilation(), options.ceilMode());
    }

    public static Tensor maxPool2d(Tensor x, int kernelSize, MaxPool options) {
        return maxPool2d(x, new int[] {kernelSize}, options);
    }

    /** {@code F.max_pool2d(x, kernel_size, return_indices=True, **options)}. */
    public static ValuesIndices maxPool2dWithIndices(Tensor x, int[] kernelSize, MaxPool options) {
        checkPool("maxPool2dWithIndices", x, kernelSize, options);
        return Pooling.maxPool2dWithIndices(x, kernelSize, options.stride(), options.padding(), options.dilation(), options.ceilMode());
    }

    public static ValuesIndices maxPool2dWithIndices(Tensor x, int kernelSize, MaxPool options) {
        return maxPool2dWithIndices(x, new int[] {kernelSize}, options);
    }

    /** {@code F.max_pool1d(x, kernel_size, **options)}; sizes are single ints (one value in an array). */
    public static Tensor maxPool1d(Tensor x, int[] kernelSize, MaxPool options) {
        Pool1d p = pool1d("maxPool1d", x, kernelSize, options);
        return Pooling.maxPool1d(x, p.kernel, p.stride, p.padding, p.dilation, options.ceilMode());
    }

    public static Tensor maxPool1d(Tensor x, int kernelSize, MaxPool options) {
        return maxPool1d(x, new int[] {kernelSize}, options);
    }

    /** {@code F.max_pool1d(x, kernel_size, return_indices=True, **options)}. */
    public static ValuesIndices maxPool1dWithIndices(Tensor x, int[] kernelSize, MaxPool options) {
        Pool1d p = pool1d("maxPool1dWithIndices", x, kernelSize, options);
        return Pooling.maxPool1dWithIndices(x, p.kernel, p.stride, p.padding, p.dilation, options.ceilMode());
    }

    public static ValuesIndices maxPool1dWithIndices(Tensor x, int kernelSize, MaxPool options) {
        return maxPool1dWithIndices(x, new int[] {kernelSize}, options);
    }

    /** {@code F.avg_pool2d(x, kernel_size, **options)}; see {@link AvgPool}. */
    public static Tensor avgPool2d(Tensor x, int[] kernelSize, AvgPool options) {
        checkPool("avgPool2d", x, kernelSize, options);
        long divisor = options.divisorOverride() == null ? 0 : options.divisorOverride(); // Pooling's internal spelling of None
        return Pooling.avgPool2d(x, kernelSize, options.stride(), options.padding(), options.ceilMode(), options.countIncludePad(), divisor);
    }

    public static Tensor avgPool2d(Tensor x, int kernelSize, AvgPool options) {
        return avgPool2d(x, new int[] {kernelSize}, options);
    }

    /** {@code F.avg_pool1d(x, kernel_size, **options)}; PyTorch's avg_pool1d has no divisor_override, nor has this one. */
    public static Tensor avgPool1d(Tensor x, int[] kernelSize, AvgPool options) {
        Pool1d p = pool1d("avgPool1d", x, kernelSize, options);
        if (options.divisorOverride() != null) {
            throw new IllegalArgumentException("avgPool1d: avg_pool1d has no divisor_override (PyTorch's neither), got "
                    + options.divisorOverride());
        }
        return Pooling.avgPool1d(x, p.kernel, p.stride, p.padding, options.ceilMode(), options.countIncludePad());
    }

    public static Tensor avgPool1d(Tensor x, int kernelSize, AvgPool options) {
        return avgPool1d(x, new int[] {kernelSize}, options);
    }

    private static void checkPool(String op, Tensor x, int[] kernelSize, Record options) {
        Arguments.nonNull(op, "x", x);
        Arguments.nonNull(op, "kernelSize", kernelSize);
        Arguments.nonNull(op, "options", options);
    }

    /** A 1-d pool's sizes, each given as one int (a null stride: the kernel size). */
    private record Pool1d(int kernel, Integer stride, int padding, int dilation) {}

    private static Pool1d pool1d(String op, Tensor x, int[] kernelSize, Record options) {
        checkPool(op, x, kernelSize, options);
        int[] stride = options instanceof MaxPool m ? m.stride() : ((AvgPool) options).stride();
        int[] padding = options instanceof MaxPool m ? m.padding() : ((AvgPool) options).padding();
        int[] dilation = options instanceof MaxPool m ? m.dilation() : new int[] {1};
        return new Pool1d(single(op, "kernelSize", kernelSize), stride == null ? null : single(op, "stride", stride),
                single(op, "padding", padding), single(op, "dilation", dilation));
    }

    public static Tensor maxPool2d(Tensor x, int kernelSize) {
        Arguments.nonNull("maxPool2d", "x", x);
        return Pooling.maxPool2d(x, new int[] {kernelSize}, null, new int[] {0}, new int[] {1}, false);
    }

    public static Tensor maxPool2d(Tensor x, int kernelSize, int stride, int padding) {
        Arguments.nonNull("maxPool2d", "x", x);
        return Pooling.maxPool2d(x, new int[] {kernelSize}, new int[] {stride}, new int[] {padding}, new int[] {1}, false);
    }

    public static Tensor maxPool2d(Tensor x, int[] kernelSize, int[] stride, int[] padding, int[] dilation, boolean ceilMode) {
        Arguments.nonNull("maxPool2d", "x", x);
        Arguments.nonNull("maxPool2d", "kernelSize", kernelSize);
        return Pooling.maxPool2d(x, kernelSize, stride, padding, dilation, ceilMode);
    }

    /** {@code max_pool2d(..., return_indices=True)}. */
    public static ValuesIndices maxPool2dWithIndices(Tensor x, int[] kernelSize, int[] stride, int[] padding, int[] dilation,
                                                     boolean ceilMode) {
        Arguments.nonNull("maxPool2dWithIndices", "x", x);
        Arguments.nonNull("maxPool2dWithIndices", "kernelSize", kernelSize);
        return Pooling.maxPool2dWithIndices(x, kernelSize, stride, padding, dilation, ceilMode);
    }

    public static Tensor maxPool1d(Tensor x, int kernelSize) {
        Arguments.nonNull("maxPool1d", "x", x);
        return Pooling.maxPool1d(x, kernelSize, null, 0, 1, false);
    }

    /** A null stride means the kernel size (PyTorch's None); zero or negative strides are rejected. */
    public static Tensor maxPool1d(Tensor x, int kernelSize, Integer stride, int padding, int dilation, boolean ceilMode) {
        Arguments.nonNull("maxPool1d", "x", x);
        return Pooling.maxPool1d(x, kernelSize, stride, padding, dilation, ceilMode);
    }

    /** A null stride means the kernel size (PyTorch's None). */
    public static ValuesIndices maxPool1dWithIndices(Tensor x, int kernelSize, Integer stride, int padding, int dilation, boolean ceilMode) {
        Arguments.nonNull("maxPool1dWithIndices", "x", x);
        return Pooling.maxPool1dWithIndices(x, kernelSize, stride, padding, dilation, ceilMode);
    }

    public static Tensor maxUnpool2d(Tensor x, Tensor indices, int[] kernelSize, int[] stride, int[] padding, long[] outputSize) {
        Arguments.nonNull("maxUnpool2d", "x", x);
        Arguments.nonNull("maxUnpool2d", "indices", indices);
        Arguments.nonNull("maxUnpool2d", "kernelSize", kernelSize);
        return Pooling.maxUnpool2d(x, indices, kernelSize, stride, padding, outputSize);
    }

    public static Tensor avgPool2d(Tensor x, int kernelSize) {
        Arguments.nonNull("avgPool2d", "x", x);
        return Pooling.avgPool2d(x, new int[] {kernelSize}, null, new int[] {0}, false, true, 0);
    }

    public static Tensor avgPool2d(Tensor x, int kernelSize, int stride, int padding) {
        Arguments.nonNull("avgPool2d", "x", x);
        return Pooling.avgPool2d(x, new int[] {kernelSize}, new int[] {stride}, new int[] {padding}, false, true, 0);
    }

    /**
     * A positive {@code divisorOverride} replaces the window size as divisor (0: none).
     *
     * @deprecated 0 stands for PyTorch's None here; use {@link #avgPool2d(Tensor, int[], AvgPool)}, whose
     *     {@link AvgPool#divisorOverride(Long)} takes null.
     */
    @Deprecated
    public static Tensor avgPool2d(Tensor x, int[] kernelSize, int[] stride, int[] padding, boolean ceilMode, boolean countIncludePad,
                                   long divisorOverride) {
        Arguments.nonNull("avgPool2d", "x", x);
        Arguments.nonNull("avgPool2d", "kernelSize", kernelSize);
        return Pooling.avgPool2d(x, kernelSize, stride, padding, ceilMode, countIncludePad, divisorOverride);
    }

    public static Tensor avgPool1d(Tensor x, int kernelSize) {
        Arguments.nonNull("avgPool1d", "x", x);
        return Pooling.avgPool1d(x, kernelSize, null, 0, false, true);
    }

    /** A null stride means the kernel size (PyTorch's None); zero or negative strides are rejected. */
    public static Tensor avgPool1d(Tensor x, int kernelSize, Integer stride, int padding, boolean ceilMode, boolean countIncludePad) {
        Arguments.nonNull("avgPool1d", "x", x);
        return Pooling.avgPool1d(x, kernelSize, stride, padding, ceilMode, countIncludePad);
    }

    /** Output size as 1 or 2 non-negative sizes; {@link #adaptiveAvgPool2d(Tensor, Long, Long)} keeps an input size. */
    public static Tensor adaptiveAvgPool2d(Tensor x, long... outputSize) {
        Arguments.nonNull("adaptiveAvgPool2d", "x", x);
        Arguments.nonNull("adaptiveAvgPool2d", "outputSize", outputSize);
        return Pooling.adaptiveAvgPool2d(x, checkSizes("adaptiveAvgPool2d", outputSize));
    }

    /** {@code F.adaptive_avg_pool2d(x, (outH, outW))}: a null size keeps the input's (PyTorch's None). */
    public static Tensor adaptiveAvgPool2d(Tensor x, Long outH, Long outW) {
        Arguments.nonNull("adaptiveAvgPool2d", "x", x);
        return Pooling.adaptiveAvgPool2d(x, noneAsInput("adaptiveAvgPool2d", outH), noneAsInput("adaptiveAvgPool2d", outW));
    }

    /** As {@link #adaptiveAvgPool2d(Tensor, Long, Long)}: a null size keeps the input's. */
    public static Tensor adaptiveMaxPool2d(Tensor x, Long outH, Long outW) {
        Arguments.nonNull("adaptiveMaxPool2d", "x", x);
        try (ValuesIndices r = adaptiveMaxPool2dWithIndices(x, outH, outW)) {
            return r.values().alias();
        }
    }

    /** As {@link #adaptiveAvgPool2d(Tensor, Long, Long)}, with the indices. */
    public static ValuesIndices adaptiveMaxPool2dWithIndices(Tensor x, Long outH, Long outW) {
        Arguments.nonNull("adaptiveMaxPool2dWithIndices", "x", x);
        return Pooling.adaptiveMaxPool2d(x, noneAsInput("adaptiveMaxPool2dWithIndices", outH), noneAsInput("adaptiveMaxPool2dWithIndices", outW));
    }

    /** Pooling's internal spelling of None is -1; a given size must be non-negative. */
    static long noneAsInput(String op, Long size) {
        if (size != null && size < 0) throw new IllegalArgumentException(op + ": output sizes must be non-negative (null for None), got " + size);
        return size == null ? -1 : size;
    }

    static long[] checkSizes(String op, long[] sizes) {
        for (long s : sizes) {
            if (s < 0) {
                throw new IllegalArgumentException(op + ": elements of output_size must be greater than or equal to 0 but received "
                        + Arrays.toString(sizes) + " (to keep an input size, PyTorch's None, pass null to the (Tensor, Long, Long) form)");
            }
        }
        return sizes;
    }

    public static Tensor adaptiveAvgPool1d(Tensor x, long outputSize) {
        Arguments.nonNull("adaptiveAvgPool1d", "x", x);
        return Pooling.adaptiveAvgPool1d(x, outputSize);
    }

    /** {@code adaptive_max_pool2d}: values only. */
    public static Tensor adaptiveMaxPool2d(Tensor x, long... outputSize) {
        Arguments.nonNull("adaptiveMaxPool2d", "x", x);
        Arguments.nonNull("adaptiveMaxPool2d", "outputSize", outputSize);
        ValuesIndices r = Pooling.adaptiveMaxPool2d(x, checkSizes("adaptiveMaxPool2d", outputSize));
        r.indices().close();
        return r.values();
    }

    public static ValuesIndices adaptiveMaxPool2dWithIndices(Tensor x, long... outputSize) {
        Arguments.nonNull("adaptiveMaxPool2dWithIndices", "x", x);
        Arguments.nonNull("adaptiveMaxPool2dWithIndices", "outputSize", outputSize);
        return Pooling.adaptiveMaxPool2d(x, checkSizes("adaptiveMaxPool2dWithIndices", outputSize));
    }

    public static Tensor adaptiveMaxPool1d(Tensor x, long outputSize) {
        Arguments.nonNull("adaptiveMaxPool1d", "x", x);
        ValuesIndices r = Pooling.adaptiveMaxPool1d(x, outputSize);
        r.indices().close();
        return r.values();
    }

    // ------------------------------------------------------------------ 3-d pooling (org.jtorch.ops.Pooling3d)
    // Over (N, C, D, H, W) / (C, D, H, W); sizes are 1 or 3 ints, the keywords MaxPool's or AvgPool's.

    /** {@code F.max_pool3d(x, kernel_size, **options)}; see {@link MaxPool}. */
    public static Tensor maxPool3d(Tensor x, int[] kernelSize, MaxPool options) {
        checkPool("maxPool3d", x, kernelSize, options);
        return Pooling3d.maxPool3d(x, kernelSize, options.stride(), options.padding(), options.dilation(), options.ceilMode());
    }

    public static Tensor maxPool3d(Tensor x, int kernelSize, MaxPool options) {
        return maxPool3d(x, new int[] {kernelSize}, options);
    }

    public static Tensor maxPool3d(Tensor x, int kernelSize) {
        return maxPool3d(x, new int[] {kernelSize}, MaxPool.options());
    }

    /** {@code F.max_pool3d(x, kernel_size, return_indices=True, **options)}: flat indices {@code d * H * W + h * W + w}. */
    public static ValuesIndices maxPool3dWithIndices(Tensor x, int[] kernelSize, MaxPool options) {
        checkPool("maxPool3dWithIndices", x, kernelSize, options);
        return Pooling3d.maxPool3dWithIndices(x, kernelSize, options.stride(), options.padding(), options.dilation(), options.ceilMode());
    }

    /** {@code F.avg_pool3d(x, kernel_size, **options)}; see {@link AvgPool}. */
    public static Tensor avgPool3d(Tensor x, int[] kernelSize, AvgPool options) {
        checkPool("avgPool3d", x, kernelSize, options);
        return Pooling3d.avgPool3d(x, kernelSize, options.stride(), options.padding(), options.ceilMode(), options.countIncludePad(),
                options.divisorOverride());
    }

    public static Tensor avgPool3d(Tensor x, int kernelSize, AvgPool options) {
        return avgPool3d(x, new int[] {kernelSize}, options);
    }

    public static Tensor avgPool3d(Tensor x, int kernelSize) {
        return avgPool3d(x, new int[] {kernelSize}, AvgPool.options());
    }

    /** {@code F.adaptive_avg_pool3d(x, output_size)}: 1 or 3 non-negative sizes. */
    public static Tensor adaptiveAvgPool3d(Tensor x, long... outputSize) {
        Arguments.nonNull("adaptiveAvgPool3d", "x", x);
        Arguments.nonNull("adaptiveAvgPool3d", "outputSize", outputSize);
        return Pooling3d.adaptiveAvgPool3d(x, checkSizes("adaptiveAvgPool3d", outputSize));
    }

    /** {@code F.adaptive_avg_pool3d(x, (outD, outH, outW))}: a null size keeps the input's (PyTorch's None). */
    public static Tensor adaptiveAvgPool3d(Tensor x, Long outD, Long outH, Long outW) {
        String op = "adaptiveAvgPool3d";
        Arguments.nonNull(op, "x", x);
        return Pooling3d.adaptiveAvgPool3d(x, noneAsInput(op, outD), noneAsInput(op, outH), noneAsInput(op, outW));
    }

    /** {@code F.adaptive_max_pool3d(x, output_size)}: values only. */
    public static Tensor adaptiveMaxPool3d(Tensor x, long... outputSize) {
        Arguments.nonNull("adaptiveMaxPool3d", "x", x);
        try (ValuesIndices r = adaptiveMaxPool3dWithIndices(x, outputSize)) {
            return r.values().alias();
        }
    }

    /** {@code F.adaptive_max_pool3d(x, output_size, return_indices=True)}; indices as {@link #maxPool3dWithIndices}'s. */
    public static ValuesIndices adaptiveMaxPool3dWithIndices(Tensor x, long... outputSize) {
        Arguments.nonNull("adaptiveMaxPool3dWithIndices", "x", x);
        Arguments.nonNull("adaptiveMaxPool3dWithIndices", "outputSize", outputSize);
        return Pooling3d.adaptiveMaxPool3d(x, checkSizes("adaptiveMaxPool3dWithIndices", outputSize));
    }

    /** As {@link #adaptiveAvgPool3d(Tensor, Long, Long, Long)}: a null size keeps the input's, with the indices. */
    public static ValuesIndices adaptiveMaxPool3dWithIndices(Tensor x, Long outD, Long outH, Long outW) {
        String op = "adaptiveMaxPool3dWithIndices";
        Arguments.nonNull(op, "x", x);
        return Pooling3d.adaptiveMaxPool3d(x, noneAsInput(op, outD), noneAsInput(op, outH), noneAsInput(op, outW));
    }

    /**
     * {@code F.max_unpool3d(x, indices, kernel_size, stride, padding, output_size)}: null stride is the kernel size, null
     * output size {@code (in - 1) * stride - 2 * padding + kernel}.
     */
    public static Tensor maxUnpool3d(Tensor x, Tensor indices, int[] kernelSize, int[] stride, int[] padding, long[] outputSize) {
        Arguments.nonNull("maxUnpool3d", "x", x);
        Arguments.nonNull("maxUnpool3d", "indices", indices);
        Arguments.nonNull("maxUnpool3d", "kernelSize", kernelSize);
        return Pooling3d.maxUnpool3d(x, indices, kernelSize, stride, padding, outputSize);
    }

    /** {@code F.pad(x, pad, **options)}; see {@link Pad}. */
    public static Tensor pad(Tensor x, long[] pads, Pad options) {
        Arguments.nonNull("pad", "x", x);
        Arguments.nonNull("pad", "pads", pads);
        Arguments.nonNull("pad", "options", options);
        return Padding.pad(x, pads, options.mode(), options.value());
    }

    /** {@code F.pad} with zeros (constant mode); pads are {@code (left, right)} pairs from the last dimension backwards. */
    public static Tensor pad(Tensor x, long... pads) {
        Arguments.nonNull("pad", "x", x);
        Arguments.nonNull("pad", "pads", pads);
        return Padding.pad(x, pads, Padding.Mode.CONSTANT, 0);
    }

    /** {@code F.pad}: mode {@code "constant"}, {@code "reflect"}, {@code "replicate"} or {@code "circular"}. */
    public static Tensor pad(Tensor x, long[] pads, String mode) {
        Arguments.nonNull("pad", "x", x);
        Arguments.nonNull("pad", "pads", pads);
        Arguments.nonNull("pad", "mode", mode);
        return Padding.pad(x, pads, mode, 0);
    }

    /** {@code F.pad} with a value (constant mode only; other modes reject a non-zero value as PyTorch). */
    public static Tensor pad(Tensor x, long[] pads, String mode, double value) {
        Arguments.nonNull("pad", "x", x);
        Arguments.nonNull("pad", "pads", pads);
        Arguments.nonNull("pad", "mode", mode);
        return Padding.pad(x, pads, mode, value);
    }

    /** {@code F.interpolate(x, **options)}: {@code F.interpolate(x, Interpolate.options().size(8, 8).mode("bilinear"))}. */
    public static Tensor interpolate(Tensor x, Interpolate options) {
        Arguments.nonNull("interpolate", "x", x);
        Arguments.nonNull("interpolate", "options", options);
        return Resampling.interpolate(x, options.size(), options.scaleFactor(), options.mode(), options.alignCorners(),
                options.recomputeScaleFactor(), options.antialias());
    }

    /** {@code F.interpolate(x, size=...)}; {@code alignCorners} may be null (false, linear modes only). */
    public static Tensor interpolate(Tensor x, long[] size, String mode, Boolean alignCorners) {
        Arguments.nonNull("interpolate", "x", x);
        Arguments.nonNull("interpolate", "mode", mode);
        return Resampling.interpolate(x, size, null, mode, alignCorners, false);
    }

    /** {@code F.interpolate(x, scale_factor=...)}; the source index uses {@code 1 / scale} (recompute_scale_factor=False). */
    public static Tensor interpolate(Tensor x, double[] scaleFactor, String mode, Boolean alignCorners) {
        Arguments.nonNull("interpolate", "x", x);
        Arguments.nonNull("interpolate", "mode", mode);
        return Resampling.interpolate(x, null, scaleFactor, mode, alignCorners, false);
    }

    /** {@code F.interpolate} with every argument; exactly one of {@code size} and {@code scaleFactor} is non-null. */
    public static Tensor interpolate(Tensor x, long[] size, double[] scaleFactor, String mode, Boolean alignCorners,
                                     boolean recomputeScaleFactor) {
        Arguments.nonNull("interpolate", "x", x);
        Arguments.nonNull("interpolate", "mode", mode);
        return Resampling.interpolate(x, size, scaleFactor, mode, alignCorners, recomputeScaleFactor);
    }

    public static Tensor pixelShuffle(Tensor x, int upscaleFactor) {
        Arguments.nonNull("pixelShuffle", "x", x);
        return Resampling.pixelShuffle(x, upscaleFactor);
    }

    public static Tensor pixelUnshuffle(Tensor x, int downscaleFactor) {
        Arguments.nonNull("pixelUnshuffle", "x", x);
        return Resampling.pixelUnshuffle(x, downscaleFactor);
    }

    /** Channel dropout of {@code (N, C, L)} or {@code (C, L)} with the default generator. */
    public static Tensor dropout1d(Tensor x, double p, boolean training) {
        return dropout1d(x, p, training, Generator.defaultGenerator());
    }

    /**
     * {@code F.dropout1d}: in training zeroes whole channels (each {@code L} row) with probability {@code p} and
     * scales the rest by {@code 1 / (1 - p)}; the identity (a new reference) otherwise. The declared {@link
     * RandomOps#FEATURE_DROPOUT}.
     */
    public static Tensor dropout1d(Tensor x, double p, boolean training, Generator gen) {
        Arguments.nonNull("dropout1d", "x", x);
        Arguments.nonNull("dropout1d", "gen", gen);
        return Dropouts.channelDropout("dropout1d", 1, x, p, training, gen);
    }

    /** Channel dropout of {@code (N, C, H, W)} with the default generator. */
    public static Tensor dropout2d(Tensor x, double p, boolean training) {
        return dropout2d(x, p, training, Generator.defaultGenerator());
    }

    /**
     * {@code F.dropout2d}: in training zeroes whole channels ({@code x[n, c]}) with probability {@code p} and scales
     * the rest by {@code 1 / (1 - p)}. As PyTorch 1.13, a 3-D input is read as {@code (N, C, L)} (channel-wise 1-D
     * behaviour), not as an unbatched image. The declared {@link RandomOps#FEATURE_DROPOUT}.
     */
    public static Tensor dropout2d(Tensor x, double p, boolean training, Generator gen) {
        Arguments.nonNull("dropout2d", "x", x);
        Arguments.nonNull("dropout2d", "gen", gen);
        return Dropouts.channelDropout("dropout2d", 2, x, p, training, gen);
    }

    /**
     * {@code F.dropout3d}: in training zeroes whole channels ({@code x[n, c]} of {@code (N, C, D, H, W)}, or {@code x[c]}
     * of an unbatched {@code (C, D, H, W)}) with probability {@code p} and scales the rest by {@code 1 / (1 - p)}. The
     * declared {@link RandomOps#FEATURE_DROPOUT}.
     */
    public static Tensor dropout3d(Tensor x, double p, boolean training, Generator gen) {
        Arguments.nonNull("dropout3d", "x", x);
        Arguments.nonNull("dropout3d", "gen", gen);
        return Dropouts.channelDropout("dropout3d", 3, x, p, training, gen);
    }

    // ================================================================== keyword options
    // One record per op with a long PyTorch signature (see the class comment): options() gives PyTorch's defaults,
    // each wither (named after the keyword, in camelCase) returns a copy with one keyword changed.

    /** {@code F.cross_entropy}'s keywords: {@code weight=None, ignore_index=-100, reduction='mean', label_smoothing=0.0}. */
    public record CrossEntropy(Tensor weight, long ignoreIndex, Reduction reduction, double labelSmoothing) {
        public CrossEntropy {
            Arguments.nonNull("CrossEntropy", "reduction", reduction);
        }

        public static CrossEntropy options() { return new CrossEntropy(null, -100, Reduction.MEAN, 0); }
        public CrossEntropy weight(Tensor weight) { return new CrossEntropy(weight, ignoreIndex, reduction, labelSmoothing); }
        public CrossEntropy ignoreIndex(long ignoreIndex) { return new CrossEntropy(weight, ignoreIndex, reduction, labelSmoothing); }
        public CrossEntropy reduction(Reduction reduction) { return new CrossEntropy(weight, ignoreIndex, reduction, labelSmoothing); }
        public CrossEntropy labelSmoothing(double labelSmoothing) { return new CrossEntropy(weight, ignoreIndex, reduction, labelSmoothing); }
    }

    /** {@code F.nll_loss}'s keywords: {@code weight=None, ignore_index=-100, reduction='mean'}. */
    public record NllLoss(Tensor weight, long ignoreIndex, Reduction reduction) {
        public NllLoss {
            Arguments.nonNull("NllLoss", "reduction", reduction);
        }

        public static NllLoss options() { return new NllLoss(null, -100, Reduction.MEAN); }
        public NllLoss weight(Tensor weight) { return new NllLoss(weight, ignoreIndex, reduction); }
        public NllLoss ignoreIndex(long ignoreIndex) { return new NllLoss(weight, ignoreIndex, reduction); }
        public NllLoss reduction(Reduction reduction) { return new NllLoss(weight, ignoreIndex, reduction); }
    }

    /** {@code F.binary_cross_entropy}'s keywords: {@code weight=None, reduction='mean'}. */
    public record BinaryCrossEntropy(Tensor weight, Reduction reduction) {
        public BinaryCrossEntropy {
            Arguments.nonNull("BinaryCrossEntropy", "reduction", reduction);
        }

        public static BinaryCrossEntropy options() { return new BinaryCrossEntropy(null, Reduction.MEAN); }
        public BinaryCrossEntropy weight(Tensor weight) { return new BinaryCrossEntropy(weight, reduction); }
        public BinaryCrossEntropy reduction(Reduction reduction) { return new BinaryCrossEntropy(weight, reduction); }
    }

    /** {@code F.binary_cross_entropy_with_logits}'s keywords: {@code weight=None, reduction='mean', pos_weight=None}. */
    public record BinaryCrossEntropyWithLogits(Tensor weight, Tensor posWeight, Reduction reduction) {
        public BinaryCrossEntropyWithLogits {
            Arguments.nonNull("BinaryCrossEntropyWithLogits", "reduction", reduction);
        }

        public static BinaryCrossEntropyWithLogits options() { return new BinaryCrossEntropyWithLogits(null, null, Reduction.MEAN); }
        public BinaryCrossEntropyWithLogits weight(Tensor weight) { return new BinaryCrossEntropyWithLogits(weight, posWeight, reduction); }
        public BinaryCrossEntropyWithLogits posWeight(Tensor posWeight) { return new BinaryCrossEntropyWithLogits(weight, posWeight, reduction); }
        public BinaryCrossEntropyWithLogits reduction(Reduction reduction) { return new BinaryCrossEntropyWithLogits(weight, posWeight, reduction); }
    }

    /** {@code F.batch_norm}'s keywords: {@code weight=None, bias=None, training=False, momentum=0.1, eps=1e-5}. */
    public record BatchNorm(Tensor weight, Tensor bias, boolean training, double momentum, double eps) {
        public static BatchNorm options() { return new BatchNorm(null, null, false, 0.1, 1e-5); }
        public BatchNorm weight(Tensor weight) { return new BatchNorm(weight, bias, training, momentum, eps); }
        public BatchNorm bias(Tensor bias) { return new BatchNorm(weight, bias, training, momentum, eps); }
        public BatchNorm training(boolean training) { return new BatchNorm(weight, bias, training, momentum, eps); }
        public BatchNorm momentum(double momentum) { return new BatchNorm(weight, bias, training, momentum, eps); }
        public BatchNorm eps(double eps) { return new BatchNorm(weight, bias, training, momentum, eps); }
    }

    /** {@code F.layer_norm}'s and {@code F.group_norm}'s keywords: {@code weight=None, bias=None, eps=1e-5}. */
    public record Norm(Tensor weight, Tensor bias, double eps) {
        public static Norm options() { return new Norm(null, null, 1e-5); }
        public Norm weight(Tensor weight) { return new Norm(weight, bias, eps); }
        public Norm bias(Tensor bias) { return new Norm(weight, bias, eps); }
        public Norm eps(double eps) { return new Norm(weight, bias, eps); }
    }

    /**
     * The keywords of {@code F.conv1d}, {@code F.conv2d} and {@code F.conv3d}: {@code bias=None, stride=1, padding=0, dilation=1,
     * groups=1}.
     * Sizes take one value for every spatial dimension or one per dimension; {@code padding} is sizes or
     * {@code "valid"}/{@code "same"} ({@link #paddingMode()} non-null then).
     */
    public record Conv(Tensor bias, int[] stride, int[] padding, String paddingMode, int[] dilation, int groups) {
        public Conv {
            Arguments.nonNull("Conv", "stride", stride);
            Arguments.nonNull("Conv", "dilation", dilation);
            if (padding == null && paddingMode == null) throw new NullPointerException("Conv: padding must not be null");
            stride = stride.clone();
            padding = padding == null ? null : padding.clone();
            dilation = dilation.clone();
        }

        public static Conv options() { return new Conv(null, new int[] {1}, new int[] {0}, null, new int[] {1}, 1); }
        public Conv bias(Tensor bias) { return new Conv(bias, stride, padding, paddingMode, dilation, groups); }
        public Conv stride(int... stride) { return new Conv(bias, stride, padding, paddingMode, dilation, groups); }
        public Conv padding(int... padding) { return new Conv(bias, stride, padding, null, dilation, groups); }
        /** {@code "valid"} (no padding) or {@code "same"} (the output as large as the input; stride 1 only). */
        public Conv padding(String padding) { return new Conv(bias, stride, null, padding, dilation, groups); }
        public Conv dilation(int... dilation) { return new Conv(bias, stride, padding, paddingMode, dilation, groups); }
        public Conv groups(int groups) { return new Conv(bias, stride, padding, paddingMode, dilation, groups); }
        @Override public int[] stride() { return stride.clone(); }
        @Override public int[] padding() { return padding == null ? null : padding.clone(); }
        @Override public int[] dilation() { return dilation.clone(); }
    }

    /**
     * The keywords of {@code F.conv_transpose1d} and {@code F.conv_transpose2d}: {@code bias=None, stride=1, padding=0,
     * output_padding=0, groups=1, dilation=1}; sizes as {@link Conv}'s.
     */
    public record ConvTranspose(Tensor bias, int[] stride, int[] padding, int[] outputPadding, int groups, int[] dilation) {
        public ConvTranspose {
            Arguments.nonNull("ConvTranspose", "stride", stride);
            Arguments.nonNull("ConvTranspose", "padding", padding);
            Arguments.nonNull("ConvTranspose", "outputPadding", outputPadding);
            Arguments.nonNull("ConvTranspose", "dilation", dilation);
            stride = stride.clone();
            padding = padding.clone();
            outputPadding = outputPadding.clone();
            dilation = dilation.clone();
        }

        public static ConvTranspose options() { return new ConvTranspose(null, new int[] {1}, new int[] {0}, new int[] {0}, 1, new int[] {1}); }
        public ConvTranspose bias(Tensor bias) { return new ConvTranspose(bias, stride, padding, outputPadding, groups, dilation); }
        public ConvTranspose stride(int... stride) { return new ConvTranspose(bias, stride, padding, outputPadding, groups, dilation); }
        public ConvTranspose padding(int... padding) { return new ConvTranspose(bias, stride, padding, outputPadding, groups, dilation); }
        public ConvTranspose outputPadding(int... outputPadding) { return new ConvTranspose(bias, stride, padding, outputPadding, groups, dilation); }
        public ConvTranspose groups(int groups) { return new ConvTranspose(bias, stride, padding, outputPadding, groups, dilation); }
        public ConvTranspose dilation(int... dilation) { return new ConvTranspose(bias, stride, padding, outputPadding, groups, dilation); }
        @Override public int[] stride() { return stride.clone(); }
        @Override public int[] padding() { return padding.clone(); }
        @Override public int[] outputPadding() { return outputPadding.clone(); }
        @Override public int[] dilation() { return dilation.clone(); }
    }

    /**
     * The keywords of {@code F.max_pool1d} and {@code F.max_pool2d}: {@code stride=None} (null: the kernel size),
     * {@code padding=0, dilation=1, ceil_mode=False}. PyTorch's {@code return_indices=True} changes what is returned, so
     * in Java it is a method of its own: {@link F#maxPool2dWithIndices(Tensor, int[], MaxPool)}.
     */
    public record MaxPool(int[] stride, int[] padding, int[] dilation, boolean ceilMode) {
        public MaxPool {
            Arguments.nonNull("MaxPool", "padding", padding);
            Arguments.nonNull("MaxPool", "dilation", dilation);
            stride = stride == null ? null : stride.clone();
            padding = padding.clone();
            dilation = dilation.clone();
        }

        public static MaxPool options() { return new MaxPool(null, new int[] {0}, new int[] {1}, false); }
        public MaxPool stride(int... stride) { return new MaxPool(stride, padding, dilation, ceilMode); }
        public MaxPool padding(int... padding) { return new MaxPool(stride, padding, dilation, ceilMode); }
        public MaxPool dilation(int... dilation) { return new MaxPool(stride, padding, dilation, ceilMode); }
        public MaxPool ceilMode(boolean ceilMode) { return new MaxPool(stride, padding, dilation, ceilMode); }
        @Override public int[] stride() { return stride == null ? null : stride.clone(); }
        @Override public int[] padding() { return padding.clone(); }
        @Override public int[] dilation() { return dilation.clone(); }
    }

    /**
     * The keywords of {@code F.avg_pool1d} and {@code F.avg_pool2d}: {@code stride=None} (null: the kernel size),
     * {@code padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None} (null: the window's size;
     * 2-d only, as PyTorch's).
     */
    public record AvgPool(int[] stride, int[] padding, boolean ceilMode, boolean countIncludePad, Long divisorOverride) {
        public AvgPool {
            Arguments.nonNull("AvgPool", "padding", padding);
            stride = stride == null ? null : stride.clone();
            padding = padding.clone();
            if (divisorOverride != null && divisorOverride <= 0) {
                throw new IllegalArgumentException("AvgPool: divisor_override must be positive, got " + divisorOverride);
            }
        }

        public static AvgPool options() { return new AvgPool(null, new int[] {0}, false, true, null); }
        public AvgPool stride(int... stride) { return new AvgPool(stride, padding, ceilMode, countIncludePad, divisorOverride); }
        public AvgPool padding(int... padding) { return new AvgPool(stride, padding, ceilMode, countIncludePad, divisorOverride); }
        public AvgPool ceilMode(boolean ceilMode) { return new AvgPool(stride, padding, ceilMode, countIncludePad, divisorOverride); }
        public AvgPool countIncludePad(boolean countIncludePad) { return new AvgPool(stride, padding, ceilMode, countIncludePad, divisorOverride); }
        public AvgPool divisorOverride(Long divisorOverride) { return new AvgPool(stride, padding, ceilMode, countIncludePad, divisorOverride); }
        @Override public int[] stride() { return stride == null ? null : stride.clone(); }
        @Override public int[] padding() { return padding.clone(); }
    }

    /**
     * {@code F.interpolate}'s keywords: {@code size=None, scale_factor=None, mode='nearest', align_corners=None,
     * recompute_scale_factor=None} (None behaves as False), {@code antialias=False} (bilinear and bicubic). Exactly one of
     * {@code size} and {@code scaleFactor} is given.
     */
    public record Interpolate(long[] size, double[] scaleFactor, String mode, Boolean alignCorners, boolean recomputeScaleFactor,
                              boolean antialias) {
        public Interpolate {
            Arguments.nonNull("Interpolate", "mode", mode);
            size = size == null ? null : size.clone();
            scaleFactor = scaleFactor == null ? null : scaleFactor.clone();
        }

        /** Without {@code antialias} (false). */
        public Interpolate(long[] size, double[] scaleFactor, String mode, Boolean alignCorners, boolean recomputeScaleFactor) {
            this(size, scaleFactor, mode, alignCorners, recomputeScaleFactor, false);
        }

        public static Interpolate options() { return new Interpolate(null, null, "nearest", null, false, false); }
        public Interpolate size(long... size) { return new Interpolate(size, scaleFactor, mode, alignCorners, recomputeScaleFactor, antialias); }
        public Interpolate scaleFactor(double... scaleFactor) { return new Interpolate(size, scaleFactor, mode, alignCorners, recomputeScaleFactor, antialias); }
        public Interpolate mode(String mode) { return new Interpolate(size, scaleFactor, mode, alignCorners, recomputeScaleFactor, antialias); }
        public Interpolate alignCorners(Boolean alignCorners) { return new Interpolate(size, scaleFactor, mode, alignCorners, recomputeScaleFactor, antialias); }
        public Interpolate recomputeScaleFactor(boolean recompute) { return new Interpolate(size, scaleFactor, mode, alignCorners, recompute, antialias); }
        public Interpolate antialias(boolean antialias) { return new Interpolate(size, scaleFactor, mode, alignCorners, recomputeScaleFactor, antialias); }
        @Override public long[] size() { return size == null ? null : size.clone(); }
        @Override public double[] scaleFactor() { return scaleFactor == null ? null : scaleFactor.clone(); }
    }

    /**
     * {@code F.embedding}'s keywords: {@code padding_idx=None} (null: none; negative counts from the end),
     * {@code max_norm=None} (null: no renormalisation), {@code norm_type=2.0}, {@code scale_grad_by_freq=False} and
     * {@code sparse=False}. {@code sparse=true} is refused by the ops: a sparse gradient needs sparse tensors, which
     * jtorch does not have ({@link org.jtorch.optim.SparseAdam} takes the dense gradient instead).
     */
    public record Embedding(Long paddingIdx, Double maxNorm, double normType, boolean scaleGradByFreq, boolean sparse) {
        /** Only {@code padding_idx}; the other keywords at their defaults. */
        public Embedding(Long paddingIdx) { this(paddingIdx, null, 2.0, false, false); }

        public static Embedding options() { return new Embedding(null, null, 2.0, false, false); }
        public Embedding paddingIdx(Long paddingIdx) { return new Embedding(paddingIdx, maxNorm, normType, scaleGradByFreq, sparse); }
        public Embedding maxNorm(Double maxNorm) { return new Embedding(paddingIdx, maxNorm, normType, scaleGradByFreq, sparse); }
        public Embedding normType(double normType) { return new Embedding(paddingIdx, maxNorm, normType, scaleGradByFreq, sparse); }
        public Embedding scaleGradByFreq(boolean scale) { return new Embedding(paddingIdx, maxNorm, normType, scale, sparse); }
        public Embedding sparse(boolean sparse) { return new Embedding(paddingIdx, maxNorm, normType, scaleGradByFreq, sparse); }

        static UnsupportedOperationException sparseRefused(String op) {
            return new UnsupportedOperationException(op + ": sparse=True asks for a sparse gradient of the weight, and jtorch has no "
                    + "sparse tensors: its embedding gradients are dense (SparseAdam updates only the rows a dense gradient touches)");
        }
    }

    /**
     * {@code F.dropout}'s keywords: {@code p=0.5, training=True, inplace=False}, and the {@link Generator} the mask is
     * drawn from (null: the default generator). With {@code inplace} the input itself is masked (see {@link #dropout_}).
     */
    public record Dropout(double p, boolean training, boolean inplace, Generator generator) {
        /** Not in place. */
        public Dropout(double p, boolean training, Generator generator) { this(p, training, false, generator); }

        public static Dropout options() { return new Dropout(0.5, true, false, null); }
        public Dropout p(double p) { return new Dropout(p, training, inplace, generator); }
        public Dropout training(boolean training) { return new Dropout(p, training, inplace, generator); }
        public Dropout inplace(boolean inplace) { return new Dropout(p, training, inplace, generator); }
        public Dropout generator(Generator generator) { return new Dropout(p, training, inplace, generator); }
    }

    /** {@code F.pad}'s keywords: {@code mode='constant', value=None} (None pads with 0; constant mode only). */
    public record Pad(String mode, double value) {
        public Pad {
            Arguments.nonNull("Pad", "mode", mode);
        }

        public static Pad options() { return new Pad("constant", 0); }
        public Pad mode(String mode) { return new Pad(mode, value); }
        public Pad value(double value) { return new Pad(mode, value); }
    }

    /**
     * {@code F.scaled_dot_product_attention}'s keywords (PyTorch 2.1): {@code attn_mask=None, dropout_p=0.0,
     * is_causal=False, scale=None} (null: {@code 1 / sqrt(E)}), and the dropout's {@link Generator} (null: the default).
     */
    public record ScaledDotProductAttention(Tensor attnMask, double dropoutP, boolean isCausal, Double scale, Generator generator) {
        public static ScaledDotProductAttention options() { return new ScaledDotProductAttention(null, 0, false, null, null); }
        public ScaledDotProductAttention attnMask(Tensor attnMask) { return new ScaledDotProductAttention(attnMask, dropoutP, isCausal, scale, generator); }
        public ScaledDotProductAttention dropoutP(double dropoutP) { return new ScaledDotProductAttention(attnMask, dropoutP, isCausal, scale, generator); }
        public ScaledDotProductAttention isCausal(boolean isCausal) { return new ScaledDotProductAttention(attnMask, dropoutP, isCausal, scale, generator); }
        public ScaledDotProductAttention scale(Double scale) { return new ScaledDotProductAttention(attnMask, dropoutP, isCausal, scale, generator); }
        public ScaledDotProductAttention generator(Generator generator) { return new ScaledDotProductAttention(attnMask, dropoutP, isCausal, scale, generator); }
    }
}
