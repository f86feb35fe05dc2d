package org.jtorch.fuzz;

import java.lang.reflect.RecordComponent;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.jtorch.Tensor;

/**
 * Judges one fuzzer call, as PyTorch 1.13 would: {@link #expectedError} says when PyTorch raises for the arguments
 * (out-of-range dims, negative sizes, impossible geometry: the categories where a result is meaningless),
 * {@link #invalidResult} finds results no valid call can return (negative sizes, overflowing element counts, views
 * reaching outside their storage), and {@link #wrongKind} finds exceptions of the wrong kind: thrown from inside the
 * JDK or of a type that marks a bug (a bare {@code NullPointerException}, {@code ClassCastException},
 * {@code ArithmeticException}, array index errors...), or with a message that names no op. Each rule was checked
 * against PyTorch 1.13 (torch.narrow, expand, flatten, split, chunk, unfold, arange, randint, dropout, eye, linspace,
 * randperm, pixel_shuffle, adaptive pools, max/avg pools, conv, conv_transpose, unfold/fold, layer_norm).
 */
final class Oracle {
    private Oracle() {}

    private static final Set<String> CONVOLUTION_OPS = Set.of("F.conv1d", "F.conv2d", "Torch.conv1d", "Torch.conv2d",
            "F.convTranspose2d", "Torch.convTranspose2d", "F.unfold", "F.fold", "Conv1d.<init>", "Conv2d.<init>", "ConvTranspose2d.<init>",
            "Unfold.<init>", "Fold.<init>");
    private static final Set<String> POOLING_OPS = Set.of("F.maxPool1d", "F.maxPool2d", "F.maxPool1dWithIndices",
            "F.maxPool2dWithIndices", "F.avgPool1d", "F.avgPool2d", "MaxPool1d.<init>", "MaxPool2d.<init>", "AvgPool1d.<init>",
            "AvgPool2d.<init>", "F.maxUnpool2d");
    /** In-place ops PyTorch lets write to an expanded tensor (deprecated for some), or that write no elements. */
    private static final Set<String> NO_OVERLAP_CHECK = Set.of("requiresGrad_", "fill_", "zero_", "indexFill_", "maskedFill_",
            "indexPut_", "detach_");
    private static final Set<String> DROPOUT_OPS = Set.of("F.dropout", "F.dropout1d", "F.dropout2d", "F.dropout3d", "F.alphaDropout",
            "F.featureAlphaDropout", "Dropout.<init>",
            "Dropout1d.<init>", "Dropout2d.<init>");
    /** Ops that raise on a zero value of these size parameters, not only on a negative one. */
    private static final Set<String> POSITIVE_SIZES = Set.of("kernelSize", "chunks", "upscaleFactor", "downscaleFactor", "numGroups",
            "numHeads");
    /** Exception types that only a bug throws: a valid-argument check never should. */
    private static final Set<Class<?>> BUG_TYPES = Set.of(ClassCastException.class, ArithmeticException.class,
            ArrayIndexOutOfBoundsException.class, StringIndexOutOfBoundsException.class, NegativeArraySizeException.class,
            ArrayStoreException.class, NumberFormatException.class, java.util.ConcurrentModificationException.class,
            IllegalMonitorStateException.class, java.util.NoSuchElementException.class);
    private static final Pattern NULL_MESSAGE = Pattern.compile("[\\w.<>]+(\\([^)]*\\))?: [\\w\\[\\]]+ must not be null");
    /** "op: ...", "op(): ..." or "Class.op: ...". */
    private static final Pattern OP_PREFIX = Pattern.compile("^[A-Za-z_][\\w.<>]*(\\([^)]*\\))?: .*", Pattern.DOTALL);

    /**
     * Why PyTorch raises for these arguments, or null where the oracle does not judge (it may or may not raise).
     * {@code op} is qualified ({@code Tensor.narrow}, {@code F.conv2d}, {@code Conv2d.<init>}); {@code subject} is the
     * receiver or first tensor argument.
     */
    static String expectedError(String op, Map<String, Object> args, Tensor subject) {
        String method = op.substring(op.indexOf('.') + 1);
        boolean known = subject != null && !subject.isClosed();
        int n = known ? subject.dim() : -1;
        if (known) {
            String dims = dimRule(op, method, args, subject, n);
            if (dims != null) return dims;
            // On CUDA an index out of range is PyTorch's device-side assert: the call returns, the error comes later;
            // jtorch's CUDA index checks do the same, raising at the next synchronisation (DeferredIndexCheckTest)
            String indices = subject.device().isCpu() ? indexRule(op, method, args, subject, n) : null;
            if (indices != null) return indices;
            // "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"
            if (op.startsWith("Tensor.") && BINARY_POINTWISE.contains(method) && args.get("other") instanceof Tensor other
                    && !other.isClosed() && broadcast(subject.shape(), other.shape()) == null) {
                return "shapes " + Arrays.toString(subject.shape()) + " and " + Arrays.toString(other.shape()) + " do not broadcast";
            }
            if (op.startsWith("Tensor.") && method.endsWith("_") && !NO_OVERLAP_CHECK.contains(method) && overlaps(subject)) {
                return "in-place write to a tensor whose elements share memory";
            }
            // "a leaf Variable that requires grad is being used in an in-place operation" (the fuzzer never turns grad off)
            if (op.startsWith("Tensor.") && method.endsWith("_") && !method.equals("requiresGrad_") && !method.equals("detach_")
                    && subject.isLeaf() && subject.requiresGrad()) {
                return "in-place op on a leaf that requires grad";
            }
        }
        String sizes = sizeRule(op, method, args, subject);
        if (sizes != null) return sizes;
        if (CONVOLUTION_OPS.contains(op) || POOLING_OPS.contains(op)) {
            for (String name : List.of("stride", "dilation", "groups", "kernelSize")) {
                for (long v : values(args.get(name))) if (v <= 0) return name + " " + v + " must be positive";
            }
            for (String name : List.of("padding", "outputPadding")) {
                for (long v : values(args.get(name))) if (v < 0) return name + " " + v + " must be non-negative";
            }
            if (POOLING_OPS.contains(op) && args.get("kernelSize") != null && args.get("padding") != null) {
                long[] k = values(args.get("kernelSize")), p = values(args.get("padding"));
                for (int i = 0; i < p.length; i++) {
                    if (k.length > 0 && p[i] > k[Math.min(i, k.length - 1)] / 2) return "padding more than half the kernel";
                }
            }
        }
        if (DROPOUT_OPS.contains(op) && args.get("p") instanceof Double p && (p < 0 || p > 1)) return "p " + p + " not in [0, 1]";
        if (method.equals("arange")) return arangeRule(args);
        if (method.equals("randint") && args.get("low") instanceof Long lo && args.get("high") instanceof Long hi && lo >= hi) {
            return "low >= high";
        }
        return null;
    }

    /** Unary ops PyTorch 1.13 runs on any float32 or float64 CPU tensor (some refuse float16 on the CPU). */
    private static final Set<String> FLOAT_UNARY = Set.of("neg", "abs", "exp", "sqrt", "sin", "tanh", "sigmoid", "relu", "erf", "floor");
    /** Ops that keep the shape for any dtype. */
    private static final Set<String> SAME_SHAPE = Set.of("clone", "contiguous", "flip");

    /**
     * The shape PyTorch 1.13 returns for a call of a view or elementwise op that {@link #expectedError} lets through,
     * or null where the oracle does not judge. A call judged here that raises is a refusal: jtorch rejects what
     * PyTorch accepts.
     */
    static long[] expectedShape(String op, Map<String, Object> args, Tensor subject) {
        if (!op.startsWith("Tensor.") || subject == null || subject.isClosed() || args.containsValue(null)) return null;
        if (expectedError(op, args, subject) != null) return null;
        String method = op.substring("Tensor.".length());
        long[] shape = subject.shape();
        int n = shape.length;
        if (FLOAT_UNARY.contains(method) && args.isEmpty()) return isFloat(subject) ? shape : null;
        // float pointwise ops with a float tensor on the same device (broadcast) or a number
        if (BINARY_POINTWISE.contains(method) && !method.endsWith("_") && args.size() == 1 && isFloat(subject)) {
            if (args.get("value") instanceof Number) return shape;
            if (args.get("other") instanceof Tensor other && !other.isClosed() && isFloat(other)
                    && other.device().equals(subject.device())) {
                return broadcast(shape, other.shape());
            }
        }
        if ((method.equals("sum") || method.equals("mean")) && args.isEmpty() && isFloat(subject)) return new long[0];
        if (SAME_SHAPE.contains(method)) return shape;
        switch (method) {
            case "narrow" -> {
                if (args.get("dim") instanceof Integer d && args.get("length") instanceof Long length && length >= 0) {
                    shape[d < 0 ? d + n : d] = length;
                    return shape;
                }
            }
            case "unsqueeze" -> {
                if (args.get("dim") instanceof Integer d) {
                    int at = d < 0 ? d + n + 1 : d;
                    long[] out = new long[n + 1];
                    for (int i = 0, j = 0; i <= n; i++) out[i] = i == at ? 1 : shape[j++];
                    return out;
                }
            }
            case "transpose" -> {
                if (n == 0) return shape;
                if (args.get("dim0") instanceof Integer a && args.get("dim1") instanceof Integer b) {
                    int i = a < 0 ? a + n : a, j = b < 0 ? b + n : b;
                    long t = shape[i];
                    shape[i] = shape[j];
                    shape[j] = t;
                    return shape;
                }
            }
            case "squeeze" -> {
                if (n == 0) return shape;
                int only = args.get("dim") instanceof Integer d ? (d < 0 ? d + n : d) : -1;
                return java.util.stream.IntStream.range(0, n).filter(i -> shape[i] != 1 || only >= 0 && i != only)
                        .mapToLong(i -> shape[i]).toArray();
            }
            case "flatten" -> {
                if (n == 0) return new long[] {1};
                int start = args.get("startDim") instanceof Integer d ? (d < 0 ? d + n : d) : 0;
                int end = args.get("endDim") instanceof Integer d ? (d < 0 ? d + n : d) : n - 1;
                long[] out = new long[n - (end - start)];
                for (int i = 0; i < start; i++) out[i] = shape[i];
                out[start] = product(Arrays.copyOfRange(shape, start, end + 1), false);
                for (int i = end + 1; i < n; i++) out[i - (end - start)] = shape[i];
                return out;
            }
            case "permute" -> {
                if (args.get("dims") instanceof int[] dims) return Arrays.stream(dims).mapToLong(d -> shape[d < 0 ? d + n : d]).toArray();
            }
            case "expand" -> {
                if (args.get("sizes") instanceof long[] sizes) {
                    long[] out = sizes.clone();
                    for (int i = 0; i < out.length; i++) if (out[i] == -1) out[i] = shape[i - (out.length - n)];
                    return out;
                }
            }
            case "reshape" -> {
                if (args.get("newShape") instanceof long[] target) {
                    long[] out = target.clone();
                    long known = product(target, true);
                    for (int i = 0; i < out.length; i++) if (out[i] == -1) out[i] = subject.numel() / known;
                    return out;
                }
            }
            default -> {}
        }
        return null;
    }

    private static boolean isFloat(Tensor t) {
        return t.dtype() == org.jtorch.types.DType.FLOAT32 || t.dtype() == org.jtorch.types.DType.FLOAT64;
    }

    /** The broadcast of two shapes, or null when they do not broadcast. */
    static long[] broadcast(long[] a, long[] b) {
        long[] out = new long[Math.max(a.length, b.length)];
        for (int i = 1; i <= out.length; i++) {
            long x = i <= a.length ? a[a.length - i] : 1, y = i <= b.length ? b[b.length - i] : 1;
            if (x != y && x != 1 && y != 1) return null;
            out[out.length - i] = x == 1 ? y : x;
        }
        return out;
    }

    /** Binary pointwise ops whose {@code other} may be a 0-dim CPU tensor beside a tensor on another device. */
    private static final Set<String> BINARY_POINTWISE = Set.of("add", "sub", "mul", "div", "maximum", "minimum", "eq", "ne", "lt",
            "le", "gt", "ge", "add_", "sub_", "mul_", "div_");

    /** The devices of a call's open tensor arguments, the receiver's included. */
    static Set<org.jtorch.types.Device> devices(Tensor receiver, Map<String, Object> args) {
        Set<org.jtorch.types.Device> out = new HashSet<>();
        List<Object> all = new java.util.ArrayList<>(args.values());
        if (receiver != null) all.add(receiver);
        for (Object v : all) {
            List<?> items = v instanceof Object[] a ? Arrays.asList(a) : v instanceof List<?> l ? l : List.of(v == null ? "" : v);
            for (Object o : items) if (o instanceof Tensor t && !t.isClosed()) out.add(t.device());
        }
        return out;
    }

    /**
     * PyTorch 1.13's verdict on a binary pointwise call whose two tensors are on different devices: a 0-dim CPU tensor
     * is a scalar beside a tensor on any device (the result is on the other's device), unless it is the one written to;
     * any other pair raises ("Expected all tensors to be on the same device, but found at least two devices, cuda:0
     * and cpu!"). Returns the reason PyTorch raises, or null when it does not (or the call is not such a pair).
     */
    static String mixedDeviceError(String op, Map<String, Object> args, Tensor receiver) {
        String method = op.substring(op.indexOf('.') + 1);
        if (!op.startsWith("Tensor.") || !BINARY_POINTWISE.contains(method) || receiver == null || receiver.isClosed()
                || !(args.get("other") instanceof Tensor other) || other.isClosed() || receiver.device().equals(other.device())) {
            return null;
        }
        boolean scalarOther = other.device().isCpu() && other.dim() == 0;
        boolean scalarReceiver = receiver.device().isCpu() && receiver.dim() == 0 && !method.endsWith("_");
        return scalarOther || scalarReceiver ? null : "tensors on " + receiver.device() + " and " + other.device();
    }

    /**
     * The shape PyTorch 1.13 gives for a binary pointwise call of float tensors, one a 0-dim CPU tensor and the other
     * on another device ({@code cuda_x.add(torch.tensor(2.))} has cuda_x's shape), or null where not judged.
     */
    static long[] mixedDeviceShape(String op, Map<String, Object> args, Tensor receiver) {
        String method = op.substring(op.indexOf('.') + 1);
        if (!op.startsWith("Tensor.") || !BINARY_POINTWISE.contains(method) || receiver == null || receiver.isClosed()
                || !(args.get("other") instanceof Tensor other) || other.isClosed() || receiver.device().equals(other.device())
                || !args.keySet().equals(Set.of("other")) || mixedDeviceError(op, args, receiver) != null
                || expectedError(op, args, receiver) != null) {
            return null;
        }
        for (Tensor t : List.of(receiver, other)) {
            if (t.dtype() != org.jtorch.types.DType.FLOAT32 && t.dtype() != org.jtorch.types.DType.FLOAT64) return null;
        }
        // an in-place result keeps the receiver's dtype: float64 into float32 casts, which PyTorch allows
        return receiver.dim() == 0 ? other.shape() : receiver.shape();
    }

    /**
     * Index values out of range: PyTorch's "index out of range in self" (index_select, embedding), "index -1 is out of
     * bounds for dimension 0" (gather, indexing) and "Target 3 is out of bounds" (nll_loss, cross_entropy).
     */
    private static String indexRule(String op, String method, Map<String, Object> args, Tensor subject, int n) {
        int dim = args.get("dim") instanceof Integer d && d >= -Math.max(n, 1) && d < Math.max(n, 1) ? (d < 0 ? d + Math.max(n, 1) : d) : 0;
        long size = n == 0 ? 1 : subject.size(dim);
        if ((method.equals("indexSelect") || method.equals("gather")) && indexValues(args.get("index")) instanceof long[] v) {
            if (Arrays.stream(v).anyMatch(i -> i < 0 || i >= size)) return "index out of range for size " + size;
        }
        if (method.equals("embedding") && args.get("weight") instanceof Tensor w && !w.isClosed() && w.dim() == 2
                && indexValues(args.get("indices")) instanceof long[] v && Arrays.stream(v).anyMatch(i -> i < 0 || i >= w.size(0))) {
            return "embedding index out of range for " + w.size(0) + " rows";
        }
        // uint8 indices are masks in PyTorch 1.13 (deprecated), not positions
        if (op.equals("Tensor.index") && args.get("indices") instanceof Tensor[] ix && ix.length > 0 && n > 0
                && !ix[0].isClosed() && ix[0].dtype() != org.jtorch.types.DType.UINT8 && indexValues(ix[0]) instanceof long[] v && Arrays.stream(v).anyMatch(i -> i < -size || i >= size)) {
            return "index out of bounds for size " + size;
        }
        if ((method.equals("nllLoss") || method.equals("crossEntropy")) && n >= 1 && indexValues(args.get("target")) instanceof long[] v) {
            long classes = subject.size(n == 1 ? 0 : 1);
            long ignore = args.get("ignoreIndex") instanceof Long l ? l : -100;
            if (Arrays.stream(v).anyMatch(t -> t != ignore && (t < 0 || t >= classes))) return "target out of bounds for " + classes + " classes";
        }
        return null;
    }

    /** The values of an integral index tensor, or null. */
    private static long[] indexValues(Object index) {
        if (!(index instanceof Tensor t) || t.isClosed() || !t.dtype().isIntegral()) return null;
        return t.toLongArray();
    }

    /** Whether two elements of {@code t} share memory (a stride of 0 over a size above 1: an expanded view). */
    private static boolean overlaps(Tensor t) {
        for (int i = 0; i < t.dim(); i++) if (t.stride(i) == 0 && t.size(i) > 1) return true;
        return false;
    }

    private static String dimRule(String op, String method, Map<String, Object> args, Tensor subject, int n) {
        int range = Math.max(n + (method.equals("unsqueeze") || method.equals("stack") ? 1 : 0), 1);
        if ((method.equals("size") || method.equals("stride")) && n == 0 && args.containsKey("dim")) return "0-dim tensor has no dims";
        if (method.equals("narrow") && n == 0) return "narrow of a 0-dim tensor";
        if (method.equals("cat") && n == 0) return "cat of a 0-dim tensor";
        if (method.equals("cat") && n == 1 && subject.numel() == 0) return null; // PyTorch's legacy cat skips empty 1-d tensors
        for (String name : ArgumentGenerator.DIM_NAMES) {
            if (!(args.get(name) instanceof Integer d)) continue;
            if (d < -range || d >= range) return name + " " + d + " out of range for a " + n + "-d tensor";
        }
        if (method.equals("flatten") && args.get("startDim") instanceof Integer start && args.get("endDim") instanceof Integer end
                && (start < 0 ? start + range : start) > (end < 0 ? end + range : end)) {
            return "startDim after endDim";
        }
        if (args.get("dims") instanceof int[] dims) {
            if (method.equals("permute") && dims.length != n) return "permute of " + dims.length + " dims on a " + n + "-d tensor";
            Set<Integer> seen = new HashSet<>();
            for (int d : dims) {
                if (d < -range || d >= range) return "dim " + d + " out of range for a " + n + "-d tensor";
                // roll composes the shifts of a repeated dim (PyTorch 1.13 and 2.13: x.roll([4, 3], [-2, 0]) == x.roll(7, 0)).
                if (!seen.add(d < 0 ? d + range : d) && !method.equals("roll")) return "dim " + d + " repeated";
            }
        }
        if (args.get("dim") instanceof Integer d && n > 0) {
            long size = subject.size(d < 0 ? d + n : d);
            if (method.equals("narrow") && args.get("start") instanceof Long start && args.get("length") instanceof Long length) {
                if (start < -size || start > size) return "start " + start + " out of range for size " + size;
                long s = start < 0 ? start + size : start;
                if (length >= 0 && length > size - s) return "start + length beyond size " + size; // no overflow
            }
            if (op.equals("Tensor.unfold") && args.get("size") instanceof Long s && s > size) return "window larger than the dim";
            if (method.equals("split") && args.get("splitSize") instanceof Long s && s == 0 && size > 0) return "split size 0";
            if (method.equals("split") && args.get("sizes") instanceof long[] s && Arrays.stream(s).allMatch(v -> v >= 0)
                    && sumOrOverflow(s) != size) {
                return "split sizes do not sum to " + size;
            }
            if (method.equals("unflatten") && args.get("sizes") instanceof long[] s) {
                long product = product(s, true);
                long inferred = Arrays.stream(s).filter(v -> v == -1).count();
                if (inferred == 0 && product != size) return "unflatten sizes do not multiply to " + size;
                if (inferred == 1 && (product == 0 || size % product != 0)) return "unflatten sizes do not fit " + size;
            }
        }
        if (op.equals("Tensor.unfold") && n == 0 && args.get("size") instanceof Long s && s > 1) return "window larger than 1";
        if ((method.equals("view") || method.equals("reshape")) && args.get("newShape") instanceof long[] shape) {
            return reshapeRule(shape, subject.numel());
        }
        if (method.equals("expand") && args.get("sizes") instanceof long[] sizes) return expandRule(sizes, subject.shape());
        if (method.equals("layerNorm") && args.get("normalizedShape") instanceof long[] ns) {
            long[] s = subject.shape();
            if (ns.length > s.length || !Arrays.equals(ns, Arrays.copyOfRange(s, s.length - ns.length, s.length))) {
                return "normalizedShape does not match the trailing dims";
            }
        }
        return null;
    }

    private static String sizeRule(String op, String method, Map<String, Object> args, Tensor subject) {
        // nn.Unflatten infers a -1 as Tensor.unflatten does (PyTorch 1.13: Unflatten(1, [2, -1]) on [3, 4] gives [3, 2, 2]).
        boolean inferable = method.equals("view") || method.equals("reshape") || method.equals("expand") || method.equals("unflatten")
                || op.startsWith("Unflatten");
        for (String name : ArgumentGenerator.SIZE_NAMES) {
            Object v = args.get(name);
            if (v == null || name.equals("size") && !op.equals("Tensor.unfold")) continue;
            if ((name.equals("numFeatures") || name.equals("numChannels")) && !normMakesTensors(op, args)) continue;
            if (v instanceof long[] || v instanceof int[]) {
                if (inferable) continue;
                long[] sizes = values(v);
                for (long s : sizes) {
                    if (s < 0 || s == 0 && POSITIVE_SIZES.contains(name)) return name + " " + Arrays.toString(sizes) + " has a negative size";
                }
                // repeat of an empty tensor makes an empty result whatever the counts (PyTorch 1.13:
                // zeros(1, 4, 0).repeat(4, 1, 2**40, 2**40) has shape [4, 1, 2**42, 0]).
                boolean emptyRepeat = method.equals("repeat") && subject != null && subject.numel() == 0;
                if (product(sizes, false) < 0 && !emptyRepeat) return name + " " + Arrays.toString(sizes) + ": element count overflows";
            } else if (v instanceof Number num) {
                long s = num.longValue();
                if (s < 0 || s == 0 && POSITIVE_SIZES.contains(name)) return name + " " + s + " is negative";
            }
        }
        if (op.equals("Tensor.unfold") && args.get("step") instanceof Long step && step <= 0) return "step must be positive";
        if (method.equals("split") && args.get("sizes") instanceof long[] s && Arrays.stream(s).anyMatch(v -> v < 0)) {
            return "negative split size";
        }
        return null;
    }

    /** Whether a norm module makes tensors of its channel count (else PyTorch never reads it, and a negative one passes). */
    private static boolean normMakesTensors(String op, Map<String, Object> args) {
        Object affine = args.get("affine");
        Object tracked = args.get("trackRunningStats");
        if (op.startsWith("GroupNorm")) return affine != Boolean.FALSE;
        if (op.startsWith("InstanceNorm")) return affine == Boolean.TRUE || tracked == Boolean.TRUE;
        if (op.startsWith("BatchNorm")) return affine != Boolean.FALSE || tracked != Boolean.FALSE;
        return true;
    }

    private static String reshapeRule(long[] shape, long numel) {
        long inferred = Arrays.stream(shape).filter(v -> v == -1).count();
        if (inferred > 1) return "more than one -1";
        if (Arrays.stream(shape).anyMatch(v -> v < -1)) return "negative size";
        long product = product(shape, true);
        if (product < 0) return "element count overflows";
        if (inferred == 0 && product != numel) return "shape does not hold " + numel + " elements";
        if (inferred == 1 && (product == 0 || numel % product != 0)) return "shape does not hold " + numel + " elements";
        return null;
    }

    private static String expandRule(long[] sizes, long[] shape) {
        if (sizes.length < shape.length) return "fewer sizes than dims";
        long[] out = new long[sizes.length];
        for (int i = 0; i < sizes.length; i++) {
            int j = i - (sizes.length - shape.length);
            if (sizes[i] < -1 || sizes[i] == -1 && j < 0) return "size " + sizes[i] + " at " + i;
            long target = sizes[i] == -1 ? shape[j] : sizes[i];
            if (j >= 0 && shape[j] != 1 && shape[j] != target) return "size " + target + " does not match " + shape[j];
            out[i] = target;
        }
        return product(out, false) < 0 ? "element count overflows" : null;
    }

    private static String arangeRule(Map<String, Object> args) {
        if (!(args.get("end") instanceof Number end)) return null;
        double s = args.get("start") instanceof Number n ? n.doubleValue() : 0;
        double e = end.doubleValue();
        double step = args.get("step") instanceof Number n ? n.doubleValue() : 1;
        if (!Double.isFinite(s) || !Double.isFinite(e)) return "unsupported range";
        if (step == 0 || Double.isNaN(step)) return "step must be nonzero";
        if ((e - s) / step < 0) return "bounds inconsistent with the step's sign";
        if ((e - s) / step > 1e15) return "too many elements";
        return null;
    }

    /** The product of sizes (skipping -1 when {@code skipInferred}), or -1 when it overflows a long. */
    static long product(long[] sizes, boolean skipInferred) {
        long p = 1;
        boolean zero = false;
        boolean overflow = false;
        for (long s : sizes) {
            if (skipInferred && s == -1) continue;
            if (s == 0) zero = true;
            if (s < 0) continue;
            long hi = Math.multiplyHigh(p, s);
            if (hi != 0 || p * s < 0) overflow = true;
            p *= s;
        }
        return zero ? 0 : overflow ? -1 : p;
    }

    private static long sumOrOverflow(long[] s) {
        long sum = 0;
        for (long v : s) {
            sum += v;
            if (sum < 0) return -1;
        }
        return sum;
    }

    private static long[] values(Object v) {
        return switch (v) {
            case Integer i -> new long[] {i};
            case Long l -> new long[] {l};
            case int[] a -> Arrays.stream(a).asLongStream().toArray();
            case long[] a -> a;
            case null, default -> new long[0];
        };
    }

    /** What is wrong with a result no valid call returns, or null. */
    static String invalidResult(Object result) {
        switch (result) {
            case Tensor t -> {
                if (t.isClosed()) return null;
                long[] shape = t.shape();
                long[] strides = t.strides();
                for (long s : shape) if (s < 0) return "negative size in " + Arrays.toString(shape);
                long numel = product(shape, false);
                if (numel < 0) return "element count of " + Arrays.toString(shape) + " overflows";
                if (numel != t.numel()) return "numel " + t.numel() + " for shape " + Arrays.toString(shape);
                if (numel == 0) return null;
                if (t.storageOffset() < 0) return "negative storage offset " + t.storageOffset();
                long last = t.storageOffset();
                for (int i = 0; i < shape.length; i++) {
                    if (strides[i] < 0) return "negative stride in " + Arrays.toString(strides);
                    last += (shape[i] - 1) * strides[i];
                }
                long bytes = t.storage().byteSize();
                if (last < 0 || (last + 1) * t.dtype().byteSize() > bytes) {
                    return "view " + Arrays.toString(shape) + " strides " + Arrays.toString(strides) + " offset " + t.storageOffset()
                            + " reaches outside its storage of " + bytes + " bytes";
                }
                return null;
            }
            case Iterable<?> items -> {
                for (Object o : items) {
                    String bad = invalidResult(o);
                    if (bad != null) return bad;
                }
                return null;
            }
            case Object[] items -> {
                return invalidResult(Arrays.asList(items));
            }
            case Record r -> {
                for (RecordComponent c : r.getClass().getRecordComponents()) {
                    try {
                        String bad = invalidResult(c.getAccessor().invoke(r));
                        if (bad != null) return bad;
                    } catch (ReflectiveOperationException e) {
                        return null;
                    }
                }
                return null;
            }
            case null, default -> {
                return null;
            }
        }
    }

    /**
     * For a call whose tensors are on two devices: {@code "devices-unnamed"} when its error is about devices but does
     * not name both (the CPU and {@code other}), else null.
     */
    static String deviceErrorKind(Throwable e, org.jtorch.types.Device other) {
        String message = e.getMessage() == null ? "" : e.getMessage();
        if (!message.toLowerCase(java.util.Locale.ROOT).contains("device")) return null;
        return message.contains("cpu") && message.contains(other.toString()) ? null : "devices-unnamed";
    }

    /** The kind of wrong exception this is ({@code "jdk-internal"} or {@code "no-op-name"}), or null when it is right. */
    static String wrongKind(Throwable e, String op) {
        String message = e.getMessage();
        // The Java heap running out is memory running out; an impossible array request is a missing check.
        if (e instanceof OutOfMemoryError && "Java heap space".equals(message)) return null;
        if (e instanceof Error) return "jdk-internal";
        StackTraceElement[] trace = e.getStackTrace();
        String thrower = trace.length == 0 ? "" : trace[0].getClassName();
        if (e.getClass().getName().startsWith("java.") && (thrower.startsWith("java.") || thrower.startsWith("jdk.")
                || thrower.startsWith("sun."))) {
            return "jdk-internal";
        }
        // A JVM-raised NPE, cast or array error has no op prefix; jtorch's own checks of these kinds do
        // ("randn: gen must not be null", "div_trunc: integer division by zero").
        if (e instanceof NullPointerException) return message != null && NULL_MESSAGE.matcher(message).matches() ? null : "jdk-internal";
        if (BUG_TYPES.contains(e.getClass()) && (message == null || !OP_PREFIX.matcher(message).matches())) return "jdk-internal";
        if (message == null) return "no-op-name";
        String method = op.substring(op.indexOf('.') + 1).replace("<init>", op.substring(0, Math.max(0, op.indexOf('.'))));
        if (OP_PREFIX.matcher(message).matches() || message.toLowerCase().contains(method.toLowerCase())) return null;
        return "no-op-name";
    }
}
