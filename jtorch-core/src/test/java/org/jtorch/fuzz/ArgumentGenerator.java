package org.jtorch.fuzz;

import java.lang.reflect.Parameter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * Adversarial arguments for one fuzzer call, drawn from the call's own {@link Random} so that a call is reproduced
 * from its seed and index alone. Values are chosen by the parameter's type and name: a {@code dim} is mostly in
 * range for the call's subject tensor and sometimes just outside it, a size is mostly small and sometimes negative
 * or huge, a tensor is of any dtype and shape, sometimes 0-dim, empty, a non-contiguous or expanded view, closed,
 * requiring grad, or holding NaN and infinities. Huge sizes are only ones no machine can allocate (2^40 and more),
 * so that a call never legitimately asks for gigabytes.
 */
final class ArgumentGenerator {
    static final Set<String> DIM_NAMES = Set.of("dim", "dim0", "dim1", "startDim", "endDim");
    static final Set<String> SIZE_NAMES = Set.of("shape", "newShape", "sizes", "size", "outputSize", "normalizedShape", "length",
            "steps", "n", "m", "splitSize", "numGroups", "chunks", "inFeatures", "outFeatures", "in1Features", "in2Features",
            "inChannels", "outChannels", "numFeatures", "numEmbeddings", "embeddingDim", "numChannels", "embedDim", "numHeads",
            "upscaleFactor", "downscaleFactor", "kernelSize", "unflattenedSize", "numSamples");
    static final Set<String> GEOMETRY_NAMES = Set.of("stride", "padding", "dilation", "groups", "outputPadding", "step");
    private static final long[] HUGE = {1L << 40, 1L << 62, Long.MAX_VALUE};
    private static final long[] NEGATIVE = {-1, -2, -7, Integer.MIN_VALUE, Long.MIN_VALUE};
    private static final double[] DOUBLES = {0.0, -0.0, 0.5, 1.0, 2.0, -1.0, -3.5, 1e-3, Double.NaN, Double.POSITIVE_INFINITY,
            Double.NEGATIVE_INFINITY, 1e308, -1e308, 1e-300};
    private static final Map<String, String[]> STRINGS = Map.ofEntries(
            Map.entry("roundingMode", new String[] {"floor", "trunc", "round", ""}),
            Map.entry("approximate", new String[] {"none", "tanh", "exact"}),
            Map.entry("mode", new String[] {"constant", "reflect", "replicate", "circular", "nearest", "linear", "bilinear",
                    "bicubic", "area", "nearest-exact", "trilinear", "zeros", ""}),
            Map.entry("padding", new String[] {"same", "valid", "full"}),
            Map.entry("paddingMode", new String[] {"zeros", "reflect", "replicate", "circular", "bogus"}),
            Map.entry("equation", new String[] {"ij->ji", "ij,jk->ik", "i,i->", "...ij->...ji", "ii->i", "bij,bjk->bik", "ij->",
                    "i->ii", "ab,ab", "->", "a...b...->", "ij,jk->ikk", "ζ->ζ"}),
            Map.entry("reduction", new String[] {"mean", "sum", "none", "batchmean", "max"}),
            Map.entry("nonlinearity", new String[] {"relu", "tanh", "leaky_relu", "linear", "selu", "x"}),
            Map.entry("spec", new String[] {"cpu", "cuda", "cuda:0", "cuda:-1", "cpu:1", "tpu", ""}));
    private static final String[] ANY_STRING = {"mean", "sum", "none", "", "x", "nearest", "constant", "weight", "0", "-1"};

    private final Random random;
    private final Generator data;
    private final Map<Object, String> labels = new IdentityHashMap<>();
    /** The tensors this call made, closed after it (in threads mode, those not shared). */
    final List<Tensor> created = new ArrayList<>();

    /** Mixed-device mode: the device half of the tensors are moved to (the others stay on the CPU), or null. */
    private final Device other;

    ArgumentGenerator(Random random) {
        this(random, null);
    }

    ArgumentGenerator(Random random, Device other) {
        this.random = random;
        this.data = new Generator(random.nextLong());
        this.other = other;
    }

    /** In mixed-device mode, {@code t} half of the time copied to the other device (contiguous), else {@code t}. */
    private Tensor maybeMoved(Tensor t) {
        if (other == null || t.isClosed() || random.nextBoolean()) return t;
        Tensor moved = t.to(other);
        created.add(moved);
        return moved;
    }

    Random random() {
        return random;
    }

    /** A short description of an argument, for the call's line in the report. */
    String describe(Object value) {
        if (value == null) return "null";
        String label = labels.get(value);
        if (label != null) return label;
        return switch (value) {
            case long[] a -> Arrays.toString(a);
            case int[] a -> Arrays.toString(a);
            case double[] a -> Arrays.toString(a);
            case float[] a -> Arrays.toString(a);
            case boolean[] a -> Arrays.toString(a);
            case Object[] a -> Arrays.stream(a).map(this::describe).toList().toString();
            case List<?> l -> "List" + l.stream().map(this::describe).toList();
            case String s -> '"' + s + '"';
            case Tensor t -> t.isClosed() ? "closed tensor" : t.dtype() + Arrays.toString(t.shape());
            default -> String.valueOf(value);
        };
    }

    void label(Object value, String label) {
        labels.put(value, label);
    }

    // ---- tensors ----

    /** A random tensor: {@code like}'s shape half of the time when given, else a fresh one. */
    Tensor tensor(Tensor like) {
        if (like != null && !like.isClosed() && random.nextInt(2) == 0) {
            DType dtype = random.nextInt(3) == 0 ? anyDtype() : like.dtype();
            return tensor(dtype, like.shape(), random.nextInt(4) == 0);
        }
        return tensor(anyDtype(), anyShape(), true);
    }

    Tensor tensor(DType dtype, long[] shape, boolean adversarialView) {
        int kind = adversarialView ? random.nextInt(20) : 0;
        Tensor t;
        String how;
        if (kind == 1 && shape.length >= 2) { // transposed
            long[] swapped = shape.clone();
            swapped[shape.length - 1] = shape[shape.length - 2];
            swapped[shape.length - 2] = shape[shape.length - 1];
            t = filled(dtype, swapped).transpose(-1, -2);
            how = "transposed";
        } else if (kind == 2 && shape.length >= 1) { // expanded: stride 0 along a dim
            int d = random.nextInt(shape.length);
            long[] one = shape.clone();
            one[d] = 1;
            t = filled(dtype, one).expand(shape);
            how = "expanded";
        } else if (kind == 3 && shape.length >= 1) { // every other element of the last dim
            long[] wide = Arrays.copyOf(shape, shape.length + 1);
            wide[shape.length] = 2;
            t = filled(dtype, wide).narrow(shape.length, 1, 1).squeeze(shape.length);
            how = "strided";
        } else if (kind == 4 && shape.length >= 1) { // a storage offset
            long[] taller = shape.clone();
            taller[0] += 1;
            t = filled(dtype, taller).narrow(0, 1, shape[0]);
            how = "offset";
        } else {
            t = filled(dtype, shape);
            how = "";
        }
        Tensor moved = maybeMoved(t);
        if (moved != t) {
            t = moved;
            how = " " + other; // the copy is contiguous: the view's kind no longer holds
        }
        String label = shortName(dtype) + Arrays.toString(shape) + how;
        if (dtype.isFloatingPoint() && random.nextInt(8) == 0 && !t.isClosed()) {
            if (how.isEmpty() || how.equals("offset") || how.equals("transposed") || how.equals(" " + other)) {
                t.requiresGrad_(true);
                label += " grad";
            }
        }
        if (random.nextInt(30) == 0) {
            t.close();
            label += " closed";
        }
        labels.put(t, label);
        return t;
    }

    private Tensor filled(DType dtype, long[] shape) {
        long numel = 1;
        for (long s : shape) numel *= s;
        double[] values = new double[(int) numel];
        boolean specials = dtype.isFloatingPoint() && random.nextInt(6) == 0;
        for (int i = 0; i < values.length; i++) {
            if (dtype == DType.BOOL) values[i] = random.nextInt(2);
            else if (!dtype.isFloatingPoint()) values[i] = random.nextInt(9) - 4;
            else if (specials && random.nextInt(3) == 0) values[i] = DOUBLES[random.nextInt(DOUBLES.length)];
            else values[i] = random.nextGaussian();
        }
        if (dtype == DType.UINT8) for (int i = 0; i < values.length; i++) values[i] = Math.abs(values[i]);
        Tensor t = Torch.tensor(values, dtype, shape);
        created.add(t);
        return t;
    }

    DType anyDtype() {
        int i = random.nextInt(14);
        return i < 5 ? DType.FLOAT32 : i < 7 ? DType.INT64 : DType.values()[random.nextInt(DType.values().length)];
    }

    /** Rank 0-4 with sizes 0-4 (0 in a tenth of dims): at most 256 elements. */
    long[] anyShape() {
        int rank = new int[] {0, 1, 1, 2, 2, 2, 3, 3, 4}[random.nextInt(9)];
        long[] shape = new long[rank];
        for (int i = 0; i < rank; i++) shape[i] = random.nextInt(10) == 0 ? 0 : 1 + random.nextInt(4);
        return shape;
    }

    private static String shortName(DType d) {
        return switch (d) {
            case FLOAT32 -> "f32";
            case FLOAT64 -> "f64";
            case FLOAT16 -> "f16";
            case BFLOAT16 -> "bf16";
            case INT64 -> "i64";
            case INT32 -> "i32";
            case INT16 -> "i16";
            case INT8 -> "i8";
            case UINT8 -> "u8";
            case BOOL -> "bool";
        };
    }

    /** An index tensor for a subject: integral values around the subject's sizes, or bool. */
    Tensor indexTensor(Tensor subject) {
        int kind = random.nextInt(6);
        if (kind == 0) return tensor(subject);
        if (kind == 1 && subject != null && !subject.isClosed()) return tensor(DType.BOOL, subject.shape(), false);
        long[] shape = random.nextInt(3) == 0 ? anyShape() : new long[] {random.nextInt(4)};
        long bound = subject == null || subject.isClosed() || subject.dim() == 0 ? 3 : Math.max(1, subject.size(0));
        long numel = 1;
        for (long s : shape) numel *= s;
        double[] values = new double[(int) numel];
        for (int i = 0; i < values.length; i++) {
            values[i] = random.nextInt(8) == 0 ? bound + random.nextInt(3) - (random.nextBoolean() ? 2 * bound + 2 : 0)
                    : random.nextInt((int) bound);
        }
        Tensor t = Torch.tensor(values, random.nextInt(6) == 0 ? DType.INT32 : DType.INT64, shape);
        created.add(t);
        Tensor moved = maybeMoved(t);
        labels.put(moved, "index" + Arrays.toString(shape) + (moved == t ? "" : " " + other));
        return moved;
    }

    // ---- scalars and arrays, by parameter name ----

    /** A dim for a tensor of {@code rank} dims: mostly in [-rank-1, rank], sometimes far outside. */
    int dim(int rank) {
        if (random.nextInt(8) == 0) {
            return new int[] {Integer.MIN_VALUE, Integer.MAX_VALUE, -100, 100, rank + 1, -rank - 2}[random.nextInt(6)];
        }
        return random.nextInt(2 * rank + 2) - rank - 1;
    }

    /** A size: mostly 0-4, sometimes negative or huge. */
    long size() {
        int k = random.nextInt(16);
        if (k == 0) return NEGATIVE[random.nextInt(NEGATIVE.length)];
        if (k == 1) return HUGE[random.nextInt(HUGE.length)];
        return k == 2 ? 0 : 1 + random.nextInt(4);
    }

    int intSize() {
        long s = size();
        return s == (int) s ? (int) s : s < 0 ? Integer.MIN_VALUE : Integer.MAX_VALUE;
    }

    /** Geometry (stride, padding, dilation, groups): mostly 1-2 (padding 0-1), sometimes 0 or negative. */
    int geometry(String name) {
        int k = random.nextInt(10);
        if (k == 0) return new int[] {0, -1, Integer.MIN_VALUE}[random.nextInt(3)];
        if (k == 1 && name.equals("padding")) return 2 + random.nextInt(3);
        return name.equals("padding") || name.equals("outputPadding") ? random.nextInt(2) : 1 + random.nextInt(2);
    }

    double doubleValue(String name) {
        if (name.equals("p") || name.equals("dropoutP")) {
            return new double[] {0.0, 0.25, 0.5, 1.0, -0.1, 1.5, Double.NaN}[random.nextInt(7)];
        }
        return random.nextInt(3) == 0 ? DOUBLES[random.nextInt(DOUBLES.length)] : random.nextInt(5) * 0.5;
    }

    String string(String name) {
        String[] pool = STRINGS.getOrDefault(name, ANY_STRING);
        return pool[random.nextInt(pool.length)];
    }

    /** A shape the subject's elements fit (for view, reshape, expand, unflatten) or a random one. */
    long[] shapeFor(Tensor subject, String op) {
        if (subject == null || subject.isClosed() || random.nextInt(3) == 0) return randomSizes();
        long[] shape = subject.shape();
        long numel = subject.numel();
        return switch (random.nextInt(5)) {
            case 0 -> new long[] {numel};
            case 1 -> new long[] {-1};
            case 2 -> shape.length == 0 ? new long[] {1} : withExtra(shape, op.startsWith("expand") ? 3 : 1);
            case 3 -> shape.length == 0 ? new long[0] : replaceOne(shape, -1);
            default -> shape;
        };
    }

    private long[] withExtra(long[] shape, long extra) {
        long[] out = new long[shape.length + 1];
        out[0] = extra;
        System.arraycopy(shape, 0, out, 1, shape.length);
        return out;
    }

    private long[] replaceOne(long[] shape, long value) {
        long[] out = shape.clone();
        out[random.nextInt(out.length)] = value;
        return out;
    }

    long[] randomSizes() {
        long[] out = new long[random.nextInt(5)];
        for (int i = 0; i < out.length; i++) out[i] = size();
        return out;
    }

    int[] dims(Tensor subject, boolean permutation) {
        int rank = subject == null || subject.isClosed() ? 2 : subject.dim();
        if (permutation && random.nextInt(3) != 0) {
            List<Integer> order = new ArrayList<>();
            for (int i = 0; i < rank; i++) order.add(random.nextBoolean() ? i : i - rank);
            java.util.Collections.shuffle(order, random);
            return order.stream().mapToInt(Integer::intValue).toArray();
        }
        int[] out = new int[random.nextInt(Math.max(rank, 1) + 2)];
        for (int i = 0; i < out.length; i++) out[i] = dim(rank);
        return out;
    }

    /** An argument for {@code p} of a call whose subject (receiver or first tensor) is {@code subject}. */
    Object argument(Parameter p, String op, Tensor subject) {
        Class<?> type = p.getType();
        String name = p.getName();
        int rank = subject == null || subject.isClosed() ? 2 : subject.dim();
        if (!type.isPrimitive() && random.nextInt(60) == 0) return null;
        if (type == Tensor.class) {
            if (name.contains("ndex") || name.contains("ndices") || name.equals("target") || name.equals("mask")
                    || name.equals("condition")) {
                return indexTensor(subject);
            }
            return tensor(subject);
        }
        if (type == int.class || type == Integer.class) {
            if (DIM_NAMES.contains(name)) return dim(rank);
            if (GEOMETRY_NAMES.contains(name)) return geometry(name);
            return intSize();
        }
        if (type == long.class || type == Long.class) {
            if (name.equals("start") && subject != null && !subject.isClosed()) return (long) dim((int) Math.min(5, rank + 2));
            if (name.equals("low") || name.equals("high") || name.equals("seed")) return (long) random.nextInt(11) - 5;
            return size();
        }
        if (type == double.class || type == Double.class) return doubleValue(name);
        if (type == float.class) return (float) doubleValue(name);
        if (type == boolean.class || type == Boolean.class) return random.nextBoolean();
        if (type == String.class) return string(name);
        if (type == long[].class) {
            if (op.equals("view") || op.equals("reshape") || op.equals("expand") || op.equals("unflatten")) return shapeFor(subject, op);
            if (name.equals("normalizedShape") && subject != null && !subject.isClosed() && random.nextBoolean()) {
                long[] s = subject.shape();
                return Arrays.copyOfRange(s, Math.max(0, s.length - 1 - random.nextInt(2)), s.length);
            }
            return randomSizes();
        }
        if (type == int[].class) {
            if (name.equals("dims")) return dims(subject, op.equals("permute"));
            int[] out = new int[1 + random.nextInt(2)];
            for (int i = 0; i < out.length; i++) out[i] = GEOMETRY_NAMES.contains(name) ? geometry(name) : (int) Math.min(intSize(), 5);
            return out;
        }
        if (type == double[].class) {
            double[] out = new double[1 + random.nextInt(2)];
            for (int i = 0; i < out.length; i++) out[i] = new double[] {0.5, 1.0, 2.0, 3.0, 0.0, -1.0, Double.NaN, 1e30}[random.nextInt(8)];
            return out;
        }
        if (type == float[].class) {
            float[] a = new float[random.nextInt(5)];
            for (int i = 0; i < a.length; i++) a[i] = (float) doubleValue("");
            return a;
        }
        if (type == boolean[].class) return new boolean[random.nextInt(5)];
        if (type == Tensor[].class || type == List.class || type == Iterable.class) {
            Tensor[] ts = new Tensor[random.nextInt(4)];
            for (int i = 0; i < ts.length; i++) ts[i] = tensor(i == 0 ? subject : ts[0]);
            return type == Tensor[].class ? ts : Arrays.asList(ts);
        }
        if (type == DType.class) return anyDtype();
        if (type == Device.class) return random.nextInt(6) == 0 ? Device.cuda() : Device.cpu();
        if (type == Generator.class) return new Generator(random.nextLong());
        if (type.isEnum()) return type.getEnumConstants()[random.nextInt(type.getEnumConstants().length)];
        return Unsupported.VALUE;
    }

    /** The marker for a parameter type the generator does not make: the entry is left out of the catalogue. */
    enum Unsupported { VALUE }
}
