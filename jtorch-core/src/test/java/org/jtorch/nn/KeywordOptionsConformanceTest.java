package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.Variance;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F.AvgPool;
import org.jtorch.nn.F.BatchNorm;
import org.jtorch.nn.F.BinaryCrossEntropy;
import org.jtorch.nn.F.BinaryCrossEntropyWithLogits;
import org.jtorch.nn.F.Conv;
import org.jtorch.nn.F.ConvTranspose;
import org.jtorch.nn.F.CrossEntropy;
import org.jtorch.nn.F.Dropout;
import org.jtorch.nn.F.Embedding;
import org.jtorch.nn.F.Interpolate;
import org.jtorch.nn.F.MaxPool;
import org.jtorch.nn.F.NllLoss;
import org.jtorch.nn.F.Norm;
import org.jtorch.nn.F.Pad;
import org.jtorch.nn.F.Reduction;
import org.jtorch.nn.F.ScaledDotProductAttention;
import org.jtorch.op.Param;
import org.jtorch.op.ReductionOps;
import org.jtorch.ops.Reductions.ValuesIndices;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The keyword-option records of {@link F} and {@link Variance} against PyTorch 1.13 ({@code
 * tools/fixtures/gen_keyword_options.py}): one case per (op, keyword), each keyword set through its wither with the
 * others left at {@code options()}'s defaults. The generator checks that every keyword changes PyTorch's result, so a
 * wither that were ignored, or a default that differed from PyTorch's, fails here.
 */
class KeywordOptionsConformanceTest {
    static Stream<Case> cases() {
        return Fixtures.load("keyword_options").stream().filter(c -> !c.op().equals("defaults"));
    }

    static Stream<Case> defaults() {
        return Fixtures.load("keyword_options").stream().filter(c -> c.op().equals("defaults"));
    }

    /** PyTorch's None that jtorch spells as a value, as documented on the record (PyTorch treats that None the same way). */
    private static final java.util.Map<String, Object> NONE_AS = java.util.Map.of("Pad.value", 0.0, "Interpolate.recomputeScaleFactor", false);

    @ParameterizedTest(name = "{0}")
    @MethodSource("defaults")
    void optionsDefaultsAreTheOnesInPyTorchsSignature(Case c) throws ReflectiveOperationException {
        String name = c.args().get("record").getAsString();
        Class<?> type = Class.forName("org.jtorch.nn.F$" + name);
        Object defaults = type.getMethod("options").invoke(null);
        for (var e : c.args().getAsJsonObject("defaults").entrySet()) {
            String component = Fixtures.javaName(e.getKey());
            Object mine = type.getMethod(component).invoke(defaults);
            JsonElement theirs = e.getValue();
            String what = c.name() + ": " + name + "." + component + " = " + describe(mine) + ", PyTorch's " + e.getKey() + " = " + theirs;
            assertTrue(sameDefault(mine, theirs, NONE_AS.get(name + "." + component)), what);
        }
    }

    private static boolean sameDefault(Object mine, JsonElement theirs, Object noneAs) {
        if (theirs.isJsonNull()) return mine == null || mine.equals(noneAs);
        if (theirs.isJsonArray()) {
            JsonArray list = theirs.getAsJsonArray();
            if (list.isEmpty()) return mine == null; // ATen's empty stride: the kernel size
            if (!(mine instanceof int[] sizes)) return false;
            for (int i = 0; i < list.size(); i++) {
                if (list.get(i).getAsInt() != (sizes.length == 1 ? sizes[0] : sizes[i])) return false;
            }
            return sizes.length == 1 || sizes.length == list.size();
        }
        var p = theirs.getAsJsonPrimitive();
        if (p.isBoolean()) return Boolean.valueOf(p.getAsBoolean()).equals(mine);
        if (p.isNumber() && mine instanceof int[] sizes) return java.util.Arrays.stream(sizes).allMatch(v -> v == p.getAsInt()); // 0 = (0, 0)
        if (p.isNumber()) return mine instanceof Number n && n.doubleValue() == p.getAsDouble();
        if (mine instanceof Enum<?> en) return en.name().equalsIgnoreCase(p.getAsString());
        return p.getAsString().equals(mine);
    }

    private static String describe(Object v) {
        return v instanceof int[] a ? java.util.Arrays.toString(a) : String.valueOf(v);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void eachKeywordActsAsInPyTorch(Case c) {
        try (MemoryScope scope = new MemoryScope()) {
            List<Tensor> in = c.inputTensors();
            List<Tensor> out = run(c, in);
            JsonArray expected = c.expected().getAsJsonArray();
            assertEquals(expected.size(), out.size(), c + ": outputs");
            for (int i = 0; i < out.size(); i++) Fixtures.assertMatches(expected.get(i).getAsJsonObject(), out.get(i), 1e-10, 1e-12, c + " #" + i);
        }
    }

    private static List<Tensor> run(Case c, List<Tensor> in) {
        Tensor x = in.get(0);
        return switch (c.op()) {
            case "cross_entropy" -> {
                CrossEntropy o = CrossEntropy.options();
                if (has(c, "weight")) o = o.weight(in.get(2));
                if (has(c, "ignore_index")) o = o.ignoreIndex(c.longArg("ignore_index", 0));
                if (has(c, "reduction")) o = o.reduction(reduction(c));
                if (has(c, "label_smoothing")) o = o.labelSmoothing(c.doubleArg("label_smoothing", 0));
                yield List.of(F.crossEntropy(x, in.get(1), o));
            }
            case "nll_loss" -> {
                NllLoss o = NllLoss.options();
                if (has(c, "weight")) o = o.weight(in.get(2));
                if (has(c, "ignore_index")) o = o.ignoreIndex(c.longArg("ignore_index", 0));
                if (has(c, "reduction")) o = o.reduction(reduction(c));
                yield List.of(F.nllLoss(x, in.get(1), o));
            }
            case "binary_cross_entropy" -> {
                BinaryCrossEntropy o = BinaryCrossEntropy.options();
                if (has(c, "weight")) o = o.weight(in.get(2));
                if (has(c, "reduction")) o = o.reduction(reduction(c));
                yield List.of(F.binaryCrossEntropy(x, in.get(1), o));
            }
            case "binary_cross_entropy_with_logits" -> {
                BinaryCrossEntropyWithLogits o = BinaryCrossEntropyWithLogits.options();
                if (has(c, "weight")) o = o.weight(in.get(2));
                if (has(c, "pos_weight")) o = o.posWeight(in.get(3));
                if (has(c, "reduction")) o = o.reduction(reduction(c));
                yield List.of(F.binaryCrossEntropyWithLogits(x, in.get(1), o));
            }
            case "batch_norm" -> {
                BatchNorm o = BatchNorm.options();
                if (has(c, "weight")) o = o.weight(in.get(3));
                if (has(c, "bias")) o = o.bias(in.get(4));
                if (has(c, "training")) o = o.training(c.boolArg("training", false));
                if (has(c, "momentum")) o = o.momentum(c.doubleArg("momentum", 0));
                if (has(c, "eps")) o = o.eps(c.doubleArg("eps", 0));
                yield List.of(F.batchNorm(x, in.get(1), in.get(2), o), in.get(1), in.get(2));
            }
            case "layer_norm" -> List.of(F.layerNorm(x, new long[] {4}, norm(c, in)));
            case "group_norm" -> List.of(F.groupNorm(x, 2, norm(c, in)));
            case "conv1d", "conv2d", "conv3d" -> {
                Conv o = Conv.options();
                if (has(c, "bias")) o = o.bias(in.get(2));
                if (has(c, "stride")) o = o.stride(c.intsArg("stride"));
                if (has(c, "padding")) o = c.args().get("padding").isJsonPrimitive() && c.args().get("padding").getAsJsonPrimitive().isString()
                        ? o.padding(c.stringArg("padding", null)) : o.padding(c.intsArg("padding"));
                if (has(c, "dilation")) o = o.dilation(c.intsArg("dilation"));
                if (has(c, "groups")) o = o.groups((int) c.longArg("groups", 1));
                yield List.of(switch (c.op()) {
                    case "conv1d" -> F.conv1d(x, in.get(1), o);
                    case "conv2d" -> F.conv2d(x, in.get(1), o);
                    default -> F.conv3d(x, in.get(1), o);
                });
            }
            case "conv_transpose1d", "conv_transpose2d" -> {
                ConvTranspose o = ConvTranspose.options();
                if (has(c, "bias")) o = o.bias(in.get(2));
                if (has(c, "stride")) o = o.stride(c.intsArg("stride"));
                if (has(c, "padding")) o = o.padding(c.intsArg("padding"));
                if (has(c, "output_padding")) o = o.outputPadding(c.intsArg("output_padding"));
                if (has(c, "groups")) o = o.groups((int) c.longArg("groups", 1));
                if (has(c, "dilation")) o = o.dilation(c.intsArg("dilation"));
                yield List.of(c.op().equals("conv_transpose1d") ? F.convTranspose1d(x, in.get(1), o) : F.convTranspose2d(x, in.get(1), o));
            }
            case "max_pool1d", "max_pool2d" -> {
                MaxPool o = MaxPool.options();
                if (has(c, "stride")) o = o.stride(c.intsArg("stride"));
                if (has(c, "padding")) o = o.padding(c.intsArg("padding"));
                if (has(c, "dilation")) o = o.dilation(c.intsArg("dilation"));
                if (has(c, "ceil_mode")) o = o.ceilMode(c.boolArg("ceil_mode", false));
                int[] k = c.intsArg("kernel_size");
                boolean oneD = c.op().equals("max_pool1d");
                Tensor values = oneD ? F.maxPool1d(x, k, o) : F.maxPool2d(x, k, o);
                ValuesIndices both = oneD ? F.maxPool1dWithIndices(x, k, o) : F.maxPool2dWithIndices(x, k, o);
                Fixtures.assertClose(both.values(), values, 0, 0, c + ": values with and without indices");
                yield List.of(both.values(), both.indices());
            }
            case "avg_pool1d", "avg_pool2d" -> {
                AvgPool o = AvgPool.options();
                if (has(c, "stride")) o = o.stride(c.intsArg("stride"));
                if (has(c, "padding")) o = o.padding(c.intsArg("padding"));
                if (has(c, "ceil_mode")) o = o.ceilMode(c.boolArg("ceil_mode", false));
                if (has(c, "count_include_pad")) o = o.countIncludePad(c.boolArg("count_include_pad", true));
                if (has(c, "divisor_override")) o = o.divisorOverride(c.longArg("divisor_override", 0));
                int[] k = c.intsArg("kernel_size");
                yield List.of(c.op().equals("avg_pool1d") ? F.avgPool1d(x, k, o) : F.avgPool2d(x, k, o));
            }
            case "interpolate" -> {
                Interpolate o = Interpolate.options();
                if (has(c, "size")) o = o.size(c.longsArg("size"));
                if (has(c, "scale_factor")) o = o.scaleFactor(c.doubleArg("scale_factor", 0));
                if (has(c, "mode")) o = o.mode(c.stringArg("mode", null));
                if (has(c, "align_corners")) o = o.alignCorners(c.boolArg("align_corners", false));
                if (has(c, "recompute_scale_factor")) o = o.recomputeScaleFactor(c.boolArg("recompute_scale_factor", false));
                if (has(c, "antialias")) o = o.antialias(c.boolArg("antialias", false));
                yield List.of(F.interpolate(x, o));
            }
            case "pad" -> {
                Pad o = Pad.options();
                if (has(c, "mode")) o = o.mode(c.stringArg("mode", null));
                if (has(c, "value")) o = o.value(c.doubleArg("value", 0));
                yield List.of(F.pad(x, c.longsArg("pad"), o));
            }
            case "var", "std" -> {
                Variance o = Variance.options();
                if (has(c, "dim")) o = o.dim(c.intsArg("dim"));
                if (has(c, "unbiased")) o = o.unbiased(c.boolArg("unbiased", true));
                if (has(c, "correction")) o = o.correction(c.doubleArg("correction", 1));
                if (has(c, "keepdim")) o = o.keepdim(c.boolArg("keepdim", false));
                yield List.of(c.op().equals("var") ? x.var(o) : x.std(o));
            }
            case "embedding" -> {
                Embedding o = Embedding.options();
                if (has(c, "padding_idx")) o = o.paddingIdx(c.longArg("padding_idx", 0));
                if (has(c, "max_norm")) o = o.maxNorm(c.doubleArg("max_norm", 0));
                if (has(c, "norm_type")) o = o.normType(c.doubleArg("norm_type", 2));
                if (has(c, "scale_grad_by_freq")) o = o.scaleGradByFreq(c.boolArg("scale_grad_by_freq", false));
                Tensor weight = in.get(1).requiresGrad_(true);
                Tensor y = F.embedding(x, weight, o);
                y.mul(Torch.arange(18).to(y.dtype()).view(2, 3, 3)).sum().backward();
                // max_norm renormalises the weight in place: the weight after the call is checked too.
                yield has(c, "max_norm") ? List.of(y, weight.grad(), weight) : List.of(y, weight.grad());
            }
            case "scaled_dot_product_attention" -> {
                ScaledDotProductAttention o = ScaledDotProductAttention.options();
                String mask = c.stringArg("attn_mask", null);
                if (mask != null) o = o.attnMask(mask.equals("bool") ? in.get(3) : in.get(4));
                if (has(c, "scale")) o = o.scale(c.doubleArg("scale", 0));
                boolean causal = c.boolArg("is_causal", false);
                if (causal) o = o.isCausal(true);
                // The causal case uses a square key/value (inputs 5 and 6), as PyTorch's causal mask is aligned top-left.
                yield List.of(causal ? F.scaledDotProductAttention(x, in.get(5), in.get(6), o) : F.scaledDotProductAttention(x, in.get(1), in.get(2), o));
            }
            default -> throw new IllegalArgumentException("unknown op " + c.op());
        };
    }

    private static Norm norm(Case c, List<Tensor> in) {
        Norm o = Norm.options();
        if (has(c, "weight")) o = o.weight(in.get(1));
        if (has(c, "bias")) o = o.bias(in.get(2));
        if (has(c, "eps")) o = o.eps(c.doubleArg("eps", 0));
        return o;
    }

    private static boolean has(Case c, String key) {
        JsonElement e = c.args().get(key);
        return e != null && !e.isJsonNull();
    }

    private static Reduction reduction(Case c) {
        return Reduction.valueOf(c.stringArg("reduction", "mean").toUpperCase(Locale.ROOT));
    }

    // ------------------------------------------------------------------ defaults

    @Test
    void varianceDefaultsAreTheRegistryDeclarationOfVarAndStd() {
        for (var op : List.of(ReductionOps.VAR, ReductionOps.STD)) {
            List<Param> params = op.signature().params();
            Param correction = params.stream().filter(p -> p.name().equals("correction")).findFirst().orElseThrow();
            Param keepdim = params.stream().filter(p -> p.name().equals("keepdim")).findFirst().orElseThrow();
            assertEquals(Double.parseDouble(correction.defaultValue()), Variance.options().correction(), op.name());
            assertEquals(Boolean.parseBoolean(keepdim.defaultValue().toLowerCase(Locale.ROOT)), Variance.options().keepdim(), op.name());
        }
        assertNull(Variance.options().dim(), "dim=None reduces every dimension");
    }

    /**
     * Every options record is checked against the registry where the registry declares its op (each keyword's declared
     * default against the record's {@code options()}), the same comparison as against PyTorch's signature above.
     */
    @Test
    void optionsDefaultsAgreeWithEveryRegistryDeclarationOfTheirOps() throws ReflectiveOperationException {
        int compared = 0;
        List<String> ops = new java.util.ArrayList<>();
        for (Case c : defaults().toList()) {
            var declared = org.jtorch.op.OpRegistry.all().stream().filter(op -> op.name().equals(c.name())).findFirst();
            // layer_norm is declared as PyTorch's native_layer_norm, with the same keywords
            if (declared.isEmpty()) {
                declared = org.jtorch.op.OpRegistry.all().stream().filter(op -> op.name().equals("native_" + c.name())).findFirst();
            }
            if (declared.isEmpty()) continue;
            ops.add(c.name());
            Class<?> type = Class.forName("org.jtorch.nn.F$" + c.args().get("record").getAsString());
            Object defaults = type.getMethod("options").invoke(null);
            for (Param p : declared.get().signature().params()) {
                if (p.defaultValue() == null || !c.args().getAsJsonObject("defaults").has(p.name())) continue;
                Object mine = type.getMethod(Fixtures.javaName(p.name())).invoke(defaults);
                assertTrue(sameDefault(mine, schemaDefault(p.defaultValue()), null),
                        c.name() + "." + p.name() + ": declared " + p.defaultValue() + ", options() has " + describe(mine));
                compared++;
            }
        }
        // batch_norm and dropout are declared without defaults (PyTorch's aten::batch_norm and
        // aten::dropout have none), avg_pool2d with its resolved geometry (no keywords): nothing to compare there.
        assertEquals(List.of("avg_pool1d", "avg_pool2d", "avg_pool3d", "batch_norm", "binary_cross_entropy", "binary_cross_entropy_with_logits", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "dropout", "embedding", "group_norm", "layer_norm", "max_pool1d", "max_pool2d", "max_pool3d", "nll_loss"), ops.stream().sorted().toList(),
                "the ops both declared in the registry and covered by an options record");
        assertTrue(compared >= 30, "compared " + compared + " declared defaults");
    }

    /** A registry default as the JSON PyTorch's signatures give: None, True/False, a number, a list, or a string. */
    private static JsonElement schemaDefault(String declared) {
        return switch (declared) {
            case "None" -> com.google.gson.JsonNull.INSTANCE;
            case "True", "False" -> new com.google.gson.JsonPrimitive(declared.equals("True"));
            default -> declared.startsWith("[") ? com.google.gson.JsonParser.parseString(declared)
                    : declared.matches("-?[0-9.eE+-]+") ? new com.google.gson.JsonPrimitive(Double.parseDouble(declared))
                    : new com.google.gson.JsonPrimitive(declared.replace("'", ""));
        };
    }

    /**
     * No options record has a component that no check reads: each is compared with PyTorch's signature (the "defaults"
     * fixture cases), or is one of the documented Java-only ones.
     */
    @Test
    void everyComponentOfEveryOptionsRecordIsChecked() {
        java.util.Map<String, java.util.Set<String>> checked = new java.util.HashMap<>();
        for (Case c : defaults().toList()) {
            var keywords = checked.computeIfAbsent(c.args().get("record").getAsString(), k -> new java.util.HashSet<>());
            for (String k : c.args().getAsJsonObject("defaults").keySet()) keywords.add(Fixtures.javaName(k));
        }
        java.util.Map<String, String> javaOnly = java.util.Map.of(
                "Dropout.generator", "the Generator the mask is drawn from (PyTorch uses the global one)",
                "Conv.paddingMode", "padding's string form ('valid', 'same'): padding is checked",
                "ScaledDotProductAttention.attnMask", "PyTorch 2.1's op, absent from 1.13: optionDefaultsAreTorchNnFunctionals",
                "ScaledDotProductAttention.dropoutP", "PyTorch 2.1's op, absent from 1.13: optionDefaultsAreTorchNnFunctionals",
                "ScaledDotProductAttention.isCausal", "PyTorch 2.1's op, absent from 1.13: optionDefaultsAreTorchNnFunctionals",
                "ScaledDotProductAttention.scale", "PyTorch 2.1's op, absent from 1.13: optionDefaultsAreTorchNnFunctionals",
                "ScaledDotProductAttention.generator", "the Generator of the dropout");
        List<String> unchecked = new java.util.ArrayList<>();
        int records = 0;
        for (Class<?> type : F.class.getDeclaredClasses()) {
            if (!type.isRecord() || java.util.Arrays.stream(type.getMethods()).noneMatch(m -> m.getName().equals("options")
                    && java.lang.reflect.Modifier.isStatic(m.getModifiers()))) {
                continue; // results (Attention) and private helpers, not options
            }
            records++;
            for (var component : type.getRecordComponents()) {
                String key = type.getSimpleName() + "." + component.getName();
                if (!checked.getOrDefault(type.getSimpleName(), java.util.Set.of()).contains(component.getName()) && !javaOnly.containsKey(key)) {
                    unchecked.add(key);
                }
            }
        }
        assertTrue(records >= 14, "found F's options records (" + records + ")");
        assertEquals(List.of(), unchecked, "options components no defaults check reads");
    }

    @Test
    void optionDefaultsAreTorchNnFunctionals() {
        // PyTorch 1.13's signatures (torch/nn/functional.py), keyword by keyword.
        assertEquals(new CrossEntropy(null, -100, Reduction.MEAN, 0.0), CrossEntropy.options());
        assertEquals(new NllLoss(null, -100, Reduction.MEAN), NllLoss.options());
        assertEquals(new BinaryCrossEntropy(null, Reduction.MEAN), BinaryCrossEntropy.options());
        assertEquals(new BinaryCrossEntropyWithLogits(null, null, Reduction.MEAN), BinaryCrossEntropyWithLogits.options());
        assertEquals(new BatchNorm(null, null, false, 0.1, 1e-5), BatchNorm.options());
        assertEquals(new Norm(null, null, 1e-5), Norm.options());
        assertEquals(new Embedding(null, null, 2.0, false, false), Embedding.options());
        assertEquals(new Dropout(0.5, true, false, null), Dropout.options());
        assertEquals(new Pad("constant", 0), Pad.options());
        assertEquals(new ScaledDotProductAttention(null, 0, false, null, null), ScaledDotProductAttention.options());
        Conv conv = Conv.options();
        assertTrue(conv.bias() == null && conv.stride()[0] == 1 && conv.padding()[0] == 0 && conv.paddingMode() == null
                && conv.dilation()[0] == 1 && conv.groups() == 1, conv.toString());
        MaxPool max = MaxPool.options();
        assertTrue(max.stride() == null && max.padding()[0] == 0 && max.dilation()[0] == 1 && !max.ceilMode());
        AvgPool avg = AvgPool.options();
        assertTrue(avg.stride() == null && avg.padding()[0] == 0 && !avg.ceilMode() && avg.countIncludePad() && avg.divisorOverride() == null);
        Interpolate up = Interpolate.options();
        assertTrue(up.size() == null && up.scaleFactor() == null && up.mode().equals("nearest") && up.alignCorners() == null
                && !up.recomputeScaleFactor());
    }

    @Test
    void withersChangeOneKeywordAndLeaveTheRecordTheyCameFromAsItWas() {
        CrossEntropy base = CrossEntropy.options();
        CrossEntropy summed = base.reduction(Reduction.SUM).labelSmoothing(0.1);
        assertEquals(Reduction.MEAN, base.reduction());
        assertEquals(new CrossEntropy(null, -100, Reduction.SUM, 0.1), summed);
        int[] stride = {2, 1};
        Conv conv = Conv.options().stride(stride);
        stride[0] = 7;
        assertEquals(2, conv.stride()[0], "the record copies the sizes it is given");
    }

    // ------------------------------------------------------------------ dropout (random: checked by its laws)

    @Test
    void dropoutOptionsSetProbabilityTrainingAndGenerator() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.ones(1000);
            assertEquals(1000.0, F.dropout(x, Dropout.options().training(false)).sum().item(), "evaluation: the identity");
            assertEquals(0.0, F.dropout(x, Dropout.options().p(1)).sum().item(), "p = 1 drops everything");
            Tensor a = F.dropout(x, Dropout.options().p(0.3).generator(new org.jtorch.types.Generator(7)));
            Tensor b = F.dropout(x, Dropout.options().p(0.3).generator(new org.jtorch.types.Generator(7)));
            Fixtures.assertClose(a, b, 0, 0, "the same seed draws the same mask");
            double kept = a.ne(0.0).sum().item();
            assertTrue(kept > 600 && kept < 800, "about 70% kept, got " + kept);
            assertEquals(1 / 0.7, a.max().item(), 1e-6, "kept values scaled by 1 / (1 - p)");
        }
    }

    @Test
    void attentionDropoutComesFromTheOptionsGenerator() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor q = Torch.randn(2, 4, 3);
            Tensor k = Torch.randn(2, 5, 3);
            Tensor v = Torch.randn(2, 5, 2);
            var dropped = ScaledDotProductAttention.options().dropoutP(0.5);
            Tensor a = F.scaledDotProductAttention(q, k, v, dropped.generator(new org.jtorch.types.Generator(3)));
            Tensor b = F.scaledDotProductAttention(q, k, v, dropped.generator(new org.jtorch.types.Generator(3)));
            Fixtures.assertClose(a, b, 0, 0, "the same seed drops the same weights");
            Tensor none = F.scaledDotProductAttention(q, k, v, ScaledDotProductAttention.options());
            assertTrue(!java.util.Arrays.equals(none.toDoubleArray(), a.toDoubleArray()), "dropoutP 0.5 changes the result");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> F.scaledDotProductAttention(q, k, v,
                    ScaledDotProductAttention.options().isCausal(true).attnMask(Torch.ones(4, 5).gt(0.0))));
            assertTrue(e.getMessage().contains("is_causal"), e.getMessage());
        }
    }

    // ------------------------------------------------------------------ no sentinels

    @Test
    void noneIsNullNotASentinel() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.randn(1, 2, 5, 4);
            assertEquals(List.of(1L, 2L, 3L, 4L), List.of(boxed(F.adaptiveAvgPool2d(x, 3L, null).shape())));
            assertEquals(List.of(1L, 2L, 5L, 2L), List.of(boxed(new AdaptiveMaxPool2d(null, 2L).forward(x).shape())));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> F.adaptiveAvgPool2d(x, -1, 2));
            assertTrue(e.getMessage().contains("adaptiveAvgPool2d") && e.getMessage().contains("null"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> new AdaptiveAvgPool2d(-1, 2));
            e = assertThrows(IllegalArgumentException.class, () -> AvgPool.options().divisorOverride(0L));
            assertTrue(e.getMessage().contains("divisor_override"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> F.avgPool1d(x.view(1, 2, 20), 2, AvgPool.options().divisorOverride(2L)));
            assertTrue(e.getMessage().contains("avgPool1d"), e.getMessage());
        }
    }

    @Test
    void oneDimensionalFormsRejectTwoSizesNamingTheOp() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.randn(1, 2, 9);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> F.maxPool1d(x, 3, MaxPool.options().stride(1, 2)));
            assertTrue(e.getMessage().contains("maxPool1d") && e.getMessage().contains("stride"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> F.conv1d(x, Torch.randn(3, 2, 3), Conv.options().padding(1, 1)));
            assertTrue(e.getMessage().contains("conv1d") && e.getMessage().contains("padding"), e.getMessage());
        }
    }

    private static Long[] boxed(long[] v) {
        Long[] r = new Long[v.length];
        for (int i = 0; i < v.length; i++) r[i] = v[i];
        return r;
    }
}
