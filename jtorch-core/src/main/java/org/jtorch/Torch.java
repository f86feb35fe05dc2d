package org.jtorch;

import org.jtorch.op.CopyOps;
import org.jtorch.op.FrontEndOps;
import org.jtorch.op.RandomOps;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.jtorch.backend.Backends;
import org.jtorch.backend.cpu.Parallel;
import org.jtorch.memory.MemoryStats;
import org.jtorch.ops.Dispatcher;
import org.jtorch.ops.Einsum;
import org.jtorch.ops.Elementwise;
import org.jtorch.ops.Indexing;
import org.jtorch.ops.Joining;
import org.jtorch.ops.Linalg;
import org.jtorch.ops.Reductions;
import org.jtorch.ops.Sorting;
import org.jtorch.op.Shapes;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * Static entry points, as the {@code torch} namespace: tensor factories, global settings (default
 * dtype, threads, seed) and functional forms of tensor methods.
 */
public final class Torch {
    private static volatile DType defaultDtype = DType.FLOAT32;

    private Torch() {}

    // ------------------------------------------------------------------ settings

    /** The dtype of floating factories and of integer-to-float promotion ({@code float32} unless changed). */
    public static DType defaultDtype() {
        return defaultDtype;
    }

    public static void setDefaultDtype(DType dtype) {
        Arguments.nonNull("setDefaultDtype", "dtype", dtype);
        if (!dtype.isFloatingPoint()) {
            throw new IllegalArgumentException("setDefaultDtype: only floating-point types are supported as the default type, got " + dtype);
        }
        defaultDtype = dtype;
    }

    /** Seeds the default generator, as {@code torch.manual_seed}. */
    public static Generator manualSeed(long seed) {
        return Generator.defaultGenerator().manualSeed(seed);
    }

    public static void setNumThreads(int n) {
        Parallel.setNumThreads(n);
    }

    public static int getNumThreads() {
        return Parallel.numThreads();
    }

    /** Memory counters of a device's allocator. */
    public static MemoryStats memoryStats(Device device) {
        Arguments.nonNull("memoryStats", "device", device);
        return Backends.of("memoryStats", device).allocator(device).stats();
    }

    /** Returns a device's cached, unused memory to the system. */
    public static void emptyCache(Device device) {
        Arguments.nonNull("emptyCache", "device", device);
        Backends.of("emptyCache", device).allocator(device).emptyCache();
    }

    // ------------------------------------------------------------------ factories

    public static Tensor empty(long... shape) {
        Arguments.nonNull("empty", "shape", shape);
        return Tensor.empty(shape, defaultDtype, Device.cpu());
    }

    /** A new contiguous tensor whose values are undefined: traced as one op ({@code empty}), made anew by each replay. */
    public static Tensor empty(long[] shape, DType dtype, Device device) {
        Arguments.nonNull("empty", "shape", shape);
        Arguments.nonNull("empty", "dtype", dtype);
        Arguments.nonNull("empty", "device", device);
        if (Dispatcher.tracing()) {
            return Dispatcher.traceFrontEnd(FrontEndOps.EMPTY, new Tensor[0], factoryArgs(dtype, device, shape), () -> empty(shape, dtype, device));
        }
        return Tensor.empty(shape, dtype, device);
    }

    /**
     * A new tensor of {@code size} seen with {@code stride} (elements, storage offset 0) whose values are undefined, its memory
     * as much as the strides reach, as {@code torch.empty_strided}; traced as one op.
     */
    public static Tensor emptyStrided(long[] size, long[] stride, DType dtype, Device device) {
        Arguments.nonNull("emptyStrided", "size", size);
        Arguments.nonNull("emptyStrided", "stride", stride);
        Arguments.nonNull("emptyStrided", "dtype", dtype);
        Arguments.nonNull("emptyStrided", "device", device);
        if (Dispatcher.tracing()) {
            double[] geometry = factoryArgs(dtype, device, new long[] {size.length});
            double[] args = java.util.Arrays.copyOf(geometry, geometry.length + size.length + stride.length);
            for (int i = 0; i < size.length; i++) args[geometry.length + i] = size[i];
            for (int i = 0; i < stride.length; i++) args[geometry.length + size.length + i] = stride[i];
            return Dispatcher.traceFrontEnd(FrontEndOps.EMPTY_STRIDED, new Tensor[0], args, () -> emptyStrided(size, stride, dtype, device));
        }
        return Tensor.emptyStrided("emptyStrided", size, stride, dtype, device);
    }

    /** A factory's traced scalars: the dtype's and the device type's ordinals, the device index, then {@code shape}. */
    private static double[] factoryArgs(DType dtype, Device device, long[] shape) {
        double[] args = new double[3 + shape.length];
        args[0] = dtype.ordinal();
        args[1] = device.type().ordinal();
        args[2] = device.index();
        for (int i = 0; i < shape.length; i++) args[3 + i] = shape[i];
        return args;
    }

    public static Tensor zeros(long... shape) {
        return zeros(shape, defaultDtype, Device.cpu());
    }

    public static Tensor zeros(long[] shape, DType dtype, Device device) {
        if (Dispatcher.tracing()) {
            return Dispatcher.traceFrontEnd(FrontEndOps.ZEROS, new Tensor[0], factoryArgs(dtype, device, shape), () -> zeros(shape, dtype, device));
        }
        return Tensor.empty("zeros", shape, dtype, device).zero_();
    }

    public static Tensor ones(long... shape) {
        return ones(shape, defaultDtype, Device.cpu());
    }

    public static Tensor ones(long[] shape, DType dtype, Device device) {
        return filled("ones", shape, 1, 1, dtype, device);
    }

    /** A tensor filled with {@code value}, of the default dtype. */
    public static Tensor full(long[] shape, double value) {
        return full(shape, value, defaultDtype, Device.cpu());
    }

    /** A tensor filled with {@code value}, of int64 (as PyTorch infers from an integer fill value). */
    public static Tensor full(long[] shape, long value) {
        return full(shape, value, DType.INT64, Device.cpu());
    }

    public static Tensor full(long[] shape, double value, DType dtype, Device device) {
        return filled("full", shape, value, (long) value, dtype, device);
    }

    public static Tensor full(long[] shape, long value, DType dtype, Device device) {
        return filled("full", shape, value, value, dtype, device);
    }

    /** A new tensor filled with {@code value} ({@code exact} for int64): traced as one op ({@code full}), which the JIT replays. */
    private static Tensor filled(String op, long[] shape, double value, long exact, DType dtype, Device device) {
        if (Dispatcher.tracing()) {
            double[] fill = CopyOps.fillScalars(value, exact);
            double[] args = new double[6 + shape.length];
            System.arraycopy(fill, 0, args, 0, 3);
            args[3] = dtype.ordinal();
            args[4] = device.type().ordinal();
            args[5] = device.index();
            for (int i = 0; i < shape.length; i++) args[6 + i] = shape[i];
            return Dispatcher.traceFrontEnd(FrontEndOps.FULL, new Tensor[0], args, () -> filled(op, shape, value, exact, dtype, device));
        }
        Tensor t = Tensor.empty(op, shape, dtype, device);
        return Dispatcher.callInPlace(CopyOps.FILL, new Tensor[] {t}, CopyOps.fillScalars(value, exact));
    }

    /** A new contiguous tensor of {@code t}'s shape, dtype and device whose values are undefined; traced as one op ({@code empty_like}). */
    public static Tensor emptyLike(Tensor t) {
        Arguments.nonNull("emptyLike", "t", t);
        if (Dispatcher.tracing()) return Dispatcher.traceFrontEnd(FrontEndOps.EMPTY_LIKE, new Tensor[] {t}, new double[0], () -> emptyLike(t));
        return Tensor.empty(t.shape(), t.dtype(), t.device());
    }

    public static Tensor zerosLike(Tensor t) {
        Arguments.nonNull("zerosLike", "t", t);
        return zeros(t.shape(), t.dtype(), t.device());
    }

    public static Tensor onesLike(Tensor t) {
        Arguments.nonNull("onesLike", "t", t);
        return ones(t.shape(), t.dtype(), t.device());
    }

    public static Tensor fullLike(Tensor t, double value) {
        Arguments.nonNull("fullLike", "t", t);
        return full(t.shape(), value, t.dtype(), t.device());
    }

    public static Tensor randLike(Tensor t) {
        Arguments.nonNull("randLike", "t", t);
        return rand(t.shape(), t.dtype(), t.device(), Generator.defaultGenerator());
    }

    /** Integers uniform in {@code [low, high)} with {@code t}'s shape, dtype and device. */
    public static Tensor randintLike(Tensor t, long low, long high) {
        Arguments.nonNull("randintLike", "t", t);
        return randint(low, high, t.shape(), t.dtype(), t.device(), Generator.defaultGenerator());
    }

    public static Tensor randnLike(Tensor t) {
        Arguments.nonNull("randnLike", "t", t);
        return randn(t.shape(), t.dtype(), t.device(), Generator.defaultGenerator());
    }

    /** {@code [0, end)} as int64. */
    public static Tensor arange(long end) {
        return arange(0, end, 1);
    }

    /** {@code [start, end)} with an integer step, as int64. */
    public static Tensor arange(long start, long end, long step) {
        if (Dispatcher.tracing() && exactAsDouble(start) && exactAsDouble(end) && exactAsDouble(step)) {
            return tracedArange(start, end, step, DType.INT64, Device.cpu(), () -> arange(start, end, step));
        }
        if (step == 0) throw new IllegalArgumentException("arange: step must be nonzero");
        if (step > 0 ? end < start : end > start) {
            throw new IllegalArgumentException("arange: upper bound and larger bound inconsistent with step sign (start " + start
                    + ", end " + end + ", step " + step + ")");
        }
        // |end - start| and |step| as unsigned 64-bit values: exact even for the full int64 range.
        long span = step > 0 ? end - start : start - end;
        long stride = step > 0 ? step : -step;
        long n = Long.divideUnsigned(span, stride) + (Long.remainderUnsigned(span, stride) != 0 ? 1 : 0);
        if (n < 0) {
            throw new IllegalArgumentException("arange: invalid size, possible overflow? (start " + start + ", end " + end
                    + ", step " + step + " give " + Long.toUnsignedString(n) + " elements)");
        }
        Tensor r = Tensor.empty("arange", new long[] {n}, DType.INT64, Device.cpu());
        MemorySegment seg = r.storage().segment();
        for (long i = 0; i < n; i++) seg.setAtIndex(ValueLayout.JAVA_LONG, i, start + i * step);
        return r;
    }

    /** Whether the trace's double arguments hold {@code v} exactly (an integer arange's bounds up to 2^53). */
    private static boolean exactAsDouble(long v) {
        return Math.abs(v) <= (1L << 53);
    }

    /** An arange reported to the trace as one op ({@link FrontEndOps#ARANGE}); the integer and floating forms give the same values. */
    private static Tensor tracedArange(double start, double end, double step, DType dtype, Device device, java.util.function.Supplier<Tensor> body) {
        double[] args = {start, end, step, dtype.ordinal(), device.type().ordinal(), device.index()};
        return Dispatcher.traceFrontEnd(FrontEndOps.ARANGE, new Tensor[0], args, body);
    }

    /** {@code [start, end)} with a floating step, of the default dtype. */
    public static Tensor arange(double start, double end, double step) {
        return arange(start, end, step, defaultDtype, Device.cpu());
    }

    public static Tensor arange(double start, double end, double step, DType dtype, Device device) {
        Arguments.nonNull("arange", "dtype", dtype);
        Arguments.nonNull("arange", "device", device);
        if (Dispatcher.tracing()) return tracedArange(start, end, step, dtype, device, () -> arange(start, end, step, dtype, device));
        if (step == 0) throw new IllegalArgumentException("arange: step must be nonzero");
        if (!Double.isFinite(start) || !Double.isFinite(end)) {
            throw new IllegalArgumentException("arange: unsupported range: " + start + " -> " + end);
        }
        if ((end - start) / step < 0) {
            throw new IllegalArgumentException("arange: upper bound and larger bound inconsistent with step sign (start " + start
                    + ", end " + end + ", step " + step + ")");
        }
        double size = Math.ceil((end - start) / step);
        if (!(size <= Long.MAX_VALUE)) {
            throw new IllegalArgumentException("arange: invalid size, possible overflow? (start " + start + ", end " + end
                    + ", step " + step + " give " + size + " elements)");
        }
        long n = (long) size;
        Tensor r = Tensor.empty("arange", new long[] {n}, dtype, device);
        Tensor d = Tensor.empty("arange", new long[] {n}, DType.FLOAT64, Device.cpu());
        MemorySegment seg = d.storage().segment();
        if (dtype.isFloatingPoint()) {
            for (long i = 0; i < n; i++) seg.setAtIndex(ValueLayout.JAVA_DOUBLE, i, start + i * step);
        } else {
            // ATen accumulates integer dtypes in int64: start and step truncate first (arange(0., 5., 1.5, int32) is 0, 1, 2, 3).
            for (long i = 0; i < n; i++) seg.setAtIndex(ValueLayout.JAVA_DOUBLE, i, (long) start + i * (long) step);
        }
        return copyInto(r, d);
    }

    /** {@code steps} evenly spaced values from {@code start} to {@code end} inclusive, as {@code torch.linspace}. */
    public static Tensor linspace(double start, double end, long steps) {
        return linspace(start, end, steps, defaultDtype, Device.cpu());
    }

    public static Tensor linspace(double start, double end, long steps, DType dtype, Device device) {
        Arguments.nonNull("linspace", "dtype", dtype);
        Arguments.nonNull("linspace", "device", device);
        if (steps < 0) throw new IllegalArgumentException("linspace: number of steps must be non-negative, got " + steps);
        Tensor r = Tensor.empty("linspace", new long[] {steps}, dtype, device);
        Tensor d = Tensor.empty("linspace", new long[] {steps}, DType.FLOAT64, Device.cpu());
        MemorySegment seg = d.storage().segment();
        double step = steps > 1 ? (end - start) / (steps - 1) : 0;
        // Symmetric evaluation from both ends, as ATen does, so the end point is exact.
        long half = steps / 2;
        for (long i = 0; i < steps; i++) {
            seg.setAtIndex(ValueLayout.JAVA_DOUBLE, i, i < half ? start + step * i : end - step * (steps - 1 - i));
        }
        if (steps == 1) seg.setAtIndex(ValueLayout.JAVA_DOUBLE, 0, start); // ATen fills a single step with start, not end
        return copyInto(r, d);
    }

    public static Tensor eye(long n) {
        return eye(n, n, defaultDtype, Device.cpu());
    }

    public static Tensor eye(long n, long m, DType dtype, Device device) {
        Arguments.nonNull("eye", "dtype", dtype);
        Arguments.nonNull("eye", "device", device);
        if (n < 0 || m < 0) {
            throw new IllegalArgumentException("eye: n and m must be greater or equal to 0, got n=" + n + ", m=" + m);
        }
        Tensor r = Tensor.empty("eye", new long[] {n, m}, dtype, device).zero_();
        if (n == 0 || m == 0) return r;
        try (Tensor diag = r.asStrided(new long[] {Math.min(n, m)}, new long[] {m + 1}, 0)) {
            diag.fill_(1L);
        }
        return r;
    }

    /** Fills a factory's result from its float64 CPU staging copy (converting dtype and device), closing the copy. */
    private static Tensor copyInto(Tensor result, Tensor staging) {
        try (staging) {
            return result.copy_(staging);
        } catch (RuntimeException e) {
            result.close();
            throw e;
        }
    }

    // ------------------------------------------------------------------ random

    /** Uniform in {@code [0, 1)}, of the default dtype. */
    public static Tensor rand(long... shape) {
        return rand(shape, defaultDtype, Device.cpu(), Generator.defaultGenerator());
    }

    public static Tensor rand(long[] shape, DType dtype, Device device, Generator gen) {
        Arguments.nonNull("rand", "shape", shape);
        Arguments.nonNull("rand", "dtype", dtype);
        Arguments.nonNull("rand", "device", device);
        Arguments.nonNull("rand", "gen", gen);
        requireFloating("rand", dtype);
        if (Dispatcher.tracing()) {
            return Dispatcher.traceFrontEnd(RandomOps.RAND, new Tensor[0], factoryArgs(gen, dtype, device, new double[0], shape),
                    () -> rand(shape, dtype, device, gen));
        }
        return randomFill("rand", shape, dtype, device, RandomOps.UNIFORM, 0, 1, gen.id());
    }

    /** Standard normal samples, of the default dtype. */
    public static Tensor randn(long... shape) {
        return randn(shape, defaultDtype, Device.cpu(), Generator.defaultGenerator());
    }

    public static Tensor randn(long[] shape, DType dtype, Device device, Generator gen) {
        Arguments.nonNull("randn", "shape", shape);
        Arguments.nonNull("randn", "dtype", dtype);
        Arguments.nonNull("randn", "device", device);
        Arguments.nonNull("randn", "gen", gen);
        requireFloating("randn", dtype);
        if (Dispatcher.tracing()) {
            return Dispatcher.traceFrontEnd(RandomOps.RANDN, new Tensor[0], factoryArgs(gen, dtype, device, new double[0], shape),
                    () -> randn(shape, dtype, device, gen));
        }
        return randomFill("randn", shape, dtype, device, RandomOps.NORMAL, 0, 1, gen.id());
    }

    /** Integers uniform in {@code [low, high)}, as int64. */
    public static Tensor randint(long low, long high, long... shape) {
        return randint(low, high, shape, DType.INT64, Device.cpu(), Generator.defaultGenerator());
    }

    public static Tensor randint(long low, long high, long[] shape, DType dtype, Device device, Generator gen) {
        Arguments.nonNull("randint", "shape", shape);
        Arguments.nonNull("randint", "dtype", dtype);
        Arguments.nonNull("randint", "device", device);
        Arguments.nonNull("randint", "gen", gen);
        if (high <= low) {
            throw new IllegalArgumentException("randint: expects 'low' < 'high', but got low=" + low + " and high=" + high);
        }
        double[] bounds = RandomOps.randomScalars(low, high, gen.id());
        if (Dispatcher.tracing()) {
            return Dispatcher.traceFrontEnd(RandomOps.RANDINT, new Tensor[0],
                    factoryArgs(gen, dtype, device, java.util.Arrays.copyOfRange(bounds, 3, 7), shape),
                    () -> randint(low, high, shape, dtype, device, gen));
        }
        Tensor r = Tensor.empty("randint", shape, dtype, device);
        try {
            return Dispatcher.fillNew(RandomOps.RANDOM, r, bounds);
        } catch (RuntimeException e) {
            r.close();
            throw e;
        }
    }

    /** A new tensor filled in place by the random op {@code fill} with scalars {@code a}, {@code b} and the generator's id. */
    private static Tensor randomFill(String op, long[] shape, DType dtype, Device device, org.jtorch.op.OpDef fill, double a, double b,
                                     long generator) {
        Tensor r = Tensor.empty(op, shape, dtype, device);
        try {
            return Dispatcher.fillNew(fill, r, a, b, generator);
        } catch (RuntimeException e) {
            r.close();
            throw e;
        }
    }

    /** A random factory's traced scalars: the generator's id, dtype, device type and index, {@code extra}, then the shape. */
    private static double[] factoryArgs(Generator gen, DType dtype, Device device, double[] extra, long[] shape) {
        double[] args = new double[4 + extra.length + shape.length];
        args[0] = gen.id();
        args[1] = dtype.ordinal();
        args[2] = device.type().ordinal();
        args[3] = device.index();
        System.arraycopy(extra, 0, args, 4, extra.length);
        for (int i = 0; i < shape.length; i++) args[4 + extra.length + i] = shape[i];
        return args;
    }

    /** A random permutation of {@code 0..n-1}, as int64. */
    public static Tensor randperm(long n) {
        return randperm(n, DType.INT64, Device.cpu(), Generator.defaultGenerator());
    }

    public static Tensor randperm(long n, Generator gen) {
        return randperm(n, DType.INT64, Device.cpu(), gen);
    }

    /**
     * A random permutation of {@code 0..n-1} of {@code dtype} on {@code device} ({@code torch.randperm(n, generator=gen,
     * dtype=dtype, device=device)}): a Fisher-Yates shuffle drawing from {@code gen}, the same permutation on every device.
     */
    public static Tensor randperm(long n, DType dtype, Device device, Generator gen) {
        Arguments.nonNull("randperm", "dtype", dtype);
        Arguments.nonNull("randperm", "device", device);
        Arguments.nonNull("randperm", "gen", gen);
        if (n < 0) throw new IllegalArgumentException("randperm: n must be non-negative, got " + n);
        if (Dispatcher.tracing()) {
            return Dispatcher.traceFrontEnd(RandomOps.RANDPERM, new Tensor[0], factoryArgs(gen, dtype, device, new double[] {n}, new long[0]),
                    () -> randperm(n, dtype, device, gen));
        }
        Tensor r = Tensor.empty("randperm", new long[] {n}, dtype, device);
        try {
            return Dispatcher.fillNew(RandomOps.RANDPERM_OUT, r, n, gen.id());
        } catch (RuntimeException e) {
            r.close();
            throw e;
        }
    }

    // ------------------------------------------------------------------ from Java arrays

    /** A 1-d float32 tensor copying {@code data}. */
    public static Tensor tensor(float... data) {
        Arguments.nonNull("tensor", "data", data);
        return fromHeap(MemorySegment.ofArray(data), DType.FLOAT32, new long[] {data.length});
    }

    /** A float32 tensor of {@code shape} copying {@code data} (row-major). */
    public static Tensor tensor(float[] data, long... shape) {
        Arguments.nonNull("tensor", "data", data);
        Arguments.nonNull("tensor", "shape", shape);
        return fromHeap(MemorySegment.ofArray(data), DType.FLOAT32, checkShape(data.length, shape));
    }

    public static Tensor tensor(double... data) {
        Arguments.nonNull("tensor", "data", data);
        return fromHeap(MemorySegment.ofArray(data), DType.FLOAT64, new long[] {data.length});
    }

    public static Tensor tensor(double[] data, long... shape) {
        Arguments.nonNull("tensor", "data", data);
        Arguments.nonNull("tensor", "shape", shape);
        return fromHeap(MemorySegment.ofArray(data), DType.FLOAT64, checkShape(data.length, shape));
    }

    public static Tensor tensor(long... data) {
        Arguments.nonNull("tensor", "data", data);
        return fromHeap(MemorySegment.ofArray(data), DType.INT64, new long[] {data.length});
    }

    public static Tensor tensor(long[] data, long... shape) {
        Arguments.nonNull("tensor", "data", data);
        Arguments.nonNull("tensor", "shape", shape);
        return fromHeap(MemorySegment.ofArray(data), DType.INT64, checkShape(data.length, shape));
    }

    public static Tensor tensor(int... data) {
        Arguments.nonNull("tensor", "data", data);
        return fromHeap(MemorySegment.ofArray(data), DType.INT32, new long[] {data.length});
    }

    public static Tensor tensor(int[] data, long... shape) {
        Arguments.nonNull("tensor", "data", data);
        Arguments.nonNull("tensor", "shape", shape);
        return fromHeap(MemorySegment.ofArray(data), DType.INT32, checkShape(data.length, shape));
    }

    public static Tensor tensor(boolean... data) {
        Arguments.nonNull("tensor", "data", data);
        byte[] b = new byte[data.length];
        for (int i = 0; i < b.length; i++) b[i] = data[i] ? (byte) 1 : 0;
        return fromHeap(MemorySegment.ofArray(b), DType.BOOL, new long[] {data.length});
    }

    public static Tensor tensor(boolean[] data, long... shape) {
        Arguments.nonNull("tensor", "data", data);
        Arguments.nonNull("tensor", "shape", shape);
        try (Tensor flat = tensor(data)) {
            return flat.reshape(checkShape(data.length, shape));
        }
    }

    /** A 2-d float32 tensor from a rectangular array. */
    public static Tensor tensor(float[][] rows) {
        Arguments.nonNullElements("tensor", "rows", rows);
        int cols = rows.length == 0 ? 0 : rows[0].length;
        float[] flat = new float[rows.length * cols];
        for (int i = 0; i < rows.length; i++) {
            if (rows[i].length != cols) throw new IllegalArgumentException("tensor: ragged rows (row " + i + " has "
                    + rows[i].length + " elements, expected " + cols + ")");
            System.arraycopy(rows[i], 0, flat, i * cols, cols);
        }
        return tensor(flat, rows.length, cols);
    }

    /** A 0-d tensor of the default dtype. */
    public static Tensor scalar(double value) {
        return full(new long[0], value);
    }

    /** A 0-d int64 tensor. */
    public static Tensor scalar(long value) {
        return full(new long[0], value);
    }

    /** A tensor of a given dtype from a double array (converted). */
    public static Tensor tensor(double[] data, DType dtype, long... shape) {
        Arguments.nonNull("tensor", "data", data);
        Arguments.nonNull("tensor", "dtype", dtype);
        Arguments.nonNull("tensor", "shape", shape);
        try (Tensor d = tensor(data, shape)) {
            return d.to(dtype);
        }
    }

    private static Tensor fromHeap(MemorySegment heap, DType dtype, long[] shape) {
        Tensor r = Tensor.empty(shape, dtype, Device.cpu());
        MemorySegment.copy(heap, 0, r.storage().segment(), 0, heap.byteSize());
        return r;
    }

    private static long[] checkShape(long length, long[] shape) {
        long n = Shapes.checkedNumel("tensor", shape);
        if (n != length) {
            throw new IllegalArgumentException("tensor: shape " + Shapes.format(shape) + " holds " + n
                    + " elements but the data has " + length);
        }
        return shape;
    }

    // ------------------------------------------------------------------ linear algebra (ops/Linalg.java)

    public static Tensor matmul(Tensor a, Tensor b) {
        Arguments.nonNull("matmul", "a", a);
        Arguments.nonNull("matmul", "b", b);
        return Linalg.matmul(a, b);
    }

    public static Tensor mm(Tensor a, Tensor b) {
        Arguments.nonNull("mm", "a", a);
        Arguments.nonNull("mm", "b", b);
        return Linalg.mm(a, b);
    }

    public static Tensor bmm(Tensor a, Tensor b) {
        Arguments.nonNull("bmm", "a", a);
        Arguments.nonNull("bmm", "b", b);
        return Linalg.bmm(a, b);
    }

    /** {@code beta * input + alpha * (m1 @ m2)} */
    public static Tensor addmm(Tensor input, Tensor m1, Tensor m2, double beta, double alpha) {
        Arguments.nonNull("addmm", "input", input);
        Arguments.nonNull("addmm", "m1", m1);
        Arguments.nonNull("addmm", "m2", m2);
        return Linalg.addmm(input, m1, m2, beta, alpha);
    }

    public static Tensor addmm(Tensor input, Tensor m1, Tensor m2) {
        Arguments.nonNull("addmm", "input", input);
        Arguments.nonNull("addmm", "m1", m1);
        Arguments.nonNull("addmm", "m2", m2);
        return Linalg.addmm(input, m1, m2, 1, 1);
    }

    /** {@code beta * input + alpha * bmm(b1, b2)} */
    public static Tensor baddbmm(Tensor input, Tensor b1, Tensor b2, double beta, double alpha) {
        Arguments.nonNull("baddbmm", "input", input);
        Arguments.nonNull("baddbmm", "b1", b1);
        Arguments.nonNull("baddbmm", "b2", b2);
        return Linalg.baddbmm(input, b1, b2, beta, alpha);
    }

    /** {@code x @ weight.T + bias}; {@code bias} may be null. */
    public static Tensor linear(Tensor x, Tensor weight, Tensor bias) {
        Arguments.nonNull("linear", "x", x);
        Arguments.nonNull("linear", "weight", weight);
        return Linalg.linear(x, weight, bias);
    }

    public static Tensor outer(Tensor a, Tensor b) {
        Arguments.nonNull("outer", "a", a);
        Arguments.nonNull("outer", "b", b);
        return Linalg.outer(a, b);
    }

    public static Tensor dot(Tensor a, Tensor b) {
        Arguments.nonNull("dot", "a", a);
        Arguments.nonNull("dot", "b", b);
        return Linalg.dot(a, b);
    }

    /** {@code torch.einsum} with explicit labels, e.g. {@code einsum("bij,bjk->bik", a, b)}. */
    public static Tensor einsum(String equation, Tensor... operands) {
        Arguments.nonNull("einsum", "equation", equation);
        Arguments.nonNullElements("einsum", "operands", operands);
        return Einsum.einsum(equation, operands);
    }

    // ------------------------------------------------------------------ functional forms

    /**
     * {@code torch.count_nonzero(input, dim)}: the number of nonzero (true) elements over {@code dims} (every dimension
     * when none are given), int64 with those dimensions removed.
     */
    public static Tensor countNonzero(Tensor input, int... dims) {
        Arguments.nonNull("countNonzero", "input", input);
        return org.jtorch.ops.Indexing.countNonzero(input, dims);
    }

    /** {@code condition ? a : b}, broadcast. */
    public static Tensor where(Tensor condition, Tensor a, Tensor b) {
        Arguments.nonNull("where", "condition", condition);
        Arguments.nonNull("where", "a", a);
        Arguments.nonNull("where", "b", b);
        return Elementwise.where(condition, a, b);
    }

    // ------------------------------------------------------------------ indexing and joining (ops.Indexing, ops.Joining)

    /** {@code torch.cat}: joins tensors along an existing dimension, promoting dtypes (1-d empty tensors are skipped). */
    public static Tensor cat(List<Tensor> tensors, int dim) {
        Arguments.nonNullElements("cat", "tensors", tensors);
        return Joining.cat(tensors, dim);
    }

    public static Tensor cat(Tensor[] tensors, int dim) {
        Arguments.nonNullElements("cat", "tensors", tensors);
        return Joining.cat(List.of(tensors), dim);
    }

    /** {@code torch.cat} along dimension 0. */
    public static Tensor cat(Tensor... tensors) {
        Arguments.nonNullElements("cat", "tensors", tensors);
        return Joining.cat(List.of(tensors), 0);
    }

    /** {@code torch.stack}: joins equal-shaped tensors along a new dimension {@code dim}. */
    public static Tensor stack(List<Tensor> tensors, int dim) {
        Arguments.nonNullElements("stack", "tensors", tensors);
        return Joining.stack(tensors, dim);
    }

    public static Tensor stack(Tensor[] tensors, int dim) {
        Arguments.nonNullElements("stack", "tensors", tensors);
        return Joining.stack(List.of(tensors), dim);
    }

    /** {@code torch.stack} along a new leading dimension. */
    public static Tensor stack(Tensor... tensors) {
        Arguments.nonNullElements("stack", "tensors", tensors);
        return Joining.stack(List.of(tensors), 0);
    }

    /** {@code torch.where(condition)}: the coordinates of the true (nonzero) elements, one int64 vector per dimension. */
    public static List<Tensor> where(Tensor condition) {
        Arguments.nonNull("where", "condition", condition);
        return Indexing.nonzeroTuple(condition);
    }

    public static Tensor nonzero(Tensor t) {
        Arguments.nonNull("nonzero", "t", t);
        return Indexing.nonzero(t);
    }

    public static Tensor indexSelect(Tensor t, int dim, Tensor index) {
        Arguments.nonNull("indexSelect", "t", t);
        Arguments.nonNull("indexSelect", "index", index);
        return Indexing.indexSelect(t, dim, index);
    }

    public static Tensor gather(Tensor t, int dim, Tensor index) {
        Arguments.nonNull("gather", "t", t);
        Arguments.nonNull("gather", "index", index);
        return Indexing.gather(t, dim, index);
    }

    public static Tensor maskedSelect(Tensor t, Tensor mask) {
        Arguments.nonNull("maskedSelect", "t", t);
        Arguments.nonNull("maskedSelect", "mask", mask);
        return Indexing.maskedSelect(t, mask);
    }

    public static List<Tensor> split(Tensor t, long splitSize, int dim) {
        Arguments.nonNull("split", "t", t);
        return Joining.split(t, splitSize, dim);
    }

    public static List<Tensor> chunk(Tensor t, int chunks, int dim) {
        Arguments.nonNull("chunk", "t", t);
        return Joining.chunk(t, chunks, dim);
    }

    public static List<Tensor> unbind(Tensor t, int dim) {
        Arguments.nonNull("unbind", "t", t);
        return Joining.unbind(t, dim);
    }

    // ------------------------------------------------------------------ rearranging (ops/Rearranging.java)

    public static Tensor flip(Tensor x, int... dims) {
        Arguments.nonNull("flip", "x", x);
        return x.flip(dims);
    }

    public static Tensor roll(Tensor x, long[] shifts, int... dims) {
        Arguments.nonNull("roll", "x", x);
        return x.roll(shifts, dims);
    }

    public static Tensor rot90(Tensor x, int k, int dim0, int dim1) {
        Arguments.nonNull("rot90", "x", x);
        return x.rot90(k, dim0, dim1);
    }

    public static Tensor tile(Tensor x, long... dims) {
        Arguments.nonNull("tile", "x", x);
        return x.tile(dims);
    }

    public static Tensor tril(Tensor x, long diagonal) {
        Arguments.nonNull("tril", "x", x);
        return x.tril(diagonal);
    }

    public static Tensor triu(Tensor x, long diagonal) {
        Arguments.nonNull("triu", "x", x);
        return x.triu(diagonal);
    }

    public static Tensor diag(Tensor x, long diagonal) {
        Arguments.nonNull("diag", "x", x);
        return x.diag(diagonal);
    }

    public static Tensor diagonal(Tensor x, long offset, int dim1, int dim2) {
        Arguments.nonNull("diagonal", "x", x);
        return x.diagonal(offset, dim1, dim2);
    }

    public static Tensor trace(Tensor x) {
        Arguments.nonNull("trace", "x", x);
        return x.trace();
    }

    public static Tensor cross(Tensor a, Tensor b, int dim) {
        Arguments.nonNull("cross", "a", a);
        Arguments.nonNull("cross", "b", b);
        return a.cross(b, dim);
    }

    /** {@code torch.cdist(x1, x2, p)}: p-norm distances between the rows of two batches of row vectors. */
    public static Tensor cdist(Tensor x1, Tensor x2, double p) {
        return Linalg.cdist(x1, x2, p);
    }

    public static Tensor cdist(Tensor x1, Tensor x2) {
        return Linalg.cdist(x1, x2, 2);
    }

    // ------------------------------------------------------------------ reductions (org.jtorch.ops.Reductions)

    public static Tensor sum(Tensor x, int... dims) {
        Arguments.nonNull("sum", "x", x);
        return Reductions.sum(x, dims, false, null);
    }
    public static Tensor sum(Tensor x, int[] dims, boolean keepdim, DType dtype) {
        Arguments.nonNull("sum", "x", x);
        return Reductions.sum(x, dims, keepdim, dtype);
    }
    public static Tensor mean(Tensor x, int... dims) {
        Arguments.nonNull("mean", "x", x);
        return Reductions.mean(x, dims, false, null);
    }
    public static Tensor mean(Tensor x, int[] dims, boolean keepdim, DType dtype) {
        Arguments.nonNull("mean", "x", x);
        return Reductions.mean(x, dims, keepdim, dtype);
    }
    public static Tensor prod(Tensor x, int... dims) {
        Arguments.nonNull("prod", "x", x);
        return Reductions.prod(x, dims, false, null);
    }
    public static Tensor prod(Tensor x, int[] dims, boolean keepdim, DType dtype) {
        Arguments.nonNull("prod", "x", x);
        return Reductions.prod(x, dims, keepdim, dtype);
    }
    public static Tensor max(Tensor x) {
        Arguments.nonNull("max", "x", x);
        return Reductions.max(x);
    }
    public static Tensor min(Tensor x) {
        Arguments.nonNull("min", "x", x);
        return Reductions.min(x);
    }
    public static Reductions.ValuesIndices max(Tensor x, int dim, boolean keepdim) {
        Arguments.nonNull("max", "x", x);
        return Reductions.max(x, dim, keepdim);
    }
    public static Reductions.ValuesIndices min(Tensor x, int dim, boolean keepdim) {
        Arguments.nonNull("min", "x", x);
        return Reductions.min(x, dim, keepdim);
    }
    public static Tensor amax(Tensor x, int[] dims, boolean keepdim) {
        Arguments.nonNull("amax", "x", x);
        return Reductions.amax(x, dims, keepdim);
    }
    public static Tensor amin(Tensor x, int[] dims, boolean keepdim) {
        Arguments.nonNull("amin", "x", x);
        return Reductions.amin(x, dims, keepdim);
    }
    public static Tensor argmax(Tensor x) {
        Arguments.nonNull("argmax", "x", x);
        return Reductions.argmax(x);
    }
    public static Tensor argmax(Tensor x, int dim, boolean keepdim) {
        Arguments.nonNull("argmax", "x", x);
        return Reductions.argmax(x, dim, keepdim);
    }
    public static Tensor argmin(Tensor x) {
        Arguments.nonNull("argmin", "x", x);
        return Reductions.argmin(x);
    }
    public static Tensor argmin(Tensor x, int dim, boolean keepdim) {
        Arguments.nonNull("argmin", "x", x);
        return Reductions.argmin(x, dim, keepdim);
    }
    public static Tensor var(Tensor x, int[] dims, double correction, boolean keepdim) {
        Arguments.nonNull("var", "x", x);
        return Reductions.var(x, dims, correction, keepdim);
    }
    public static Tensor std(Tensor x, int[] dims, double correction, boolean keepdim) {
        Arguments.nonNull("std", "x", x);
        return Reductions.std(x, dims, correction, keepdim);
    }
    public static Tensor norm(Tensor x) {
        Arguments.nonNull("norm", "x", x);
        return Reductions.norm(x, 2, new int[0], false);
    }
    public static Tensor norm(Tensor x, double p, int[] dims, boolean keepdim) {
        Arguments.nonNull("norm", "x", x);
        return Reductions.norm(x, p, dims, keepdim);
    }
    public static Tensor logsumexp(Tensor x, int[] dims, boolean keepdim) {
        Arguments.nonNull("logsumexp", "x", x);
        return Reductions.logsumexp(x, dims, keepdim);
    }
    public static Tensor any(Tensor x, int... dims) {
        Arguments.nonNull("any", "x", x);
        return Reductions.any(x, dims, false);
    }
    public static Tensor all(Tensor x, int... dims) {
        Arguments.nonNull("all", "x", x);
        return Reductions.all(x, dims, false);
    }
    public static Tensor cumsum(Tensor x, int dim) {
        Arguments.nonNull("cumsum", "x", x);
        return Reductions.cumsum(x, dim, null);
    }
    public static Tensor cumprod(Tensor x, int dim) {
        Arguments.nonNull("cumprod", "x", x);
        return Reductions.cumprod(x, dim, null);
    }
    public static Tensor softmax(Tensor x, int dim) {
        Arguments.nonNull("softmax", "x", x);
        return Reductions.softmax(x, dim, null);
    }
    public static Tensor logSoftmax(Tensor x, int dim) {
        Arguments.nonNull("logSoftmax", "x", x);
        return Reductions.logSoftmax(x, dim, null);
    }

    // ------------------------------------------------------------------ sorting and sampling (see Sorting)

    public static Reductions.ValuesIndices sort(Tensor x, int dim, boolean descending, boolean stable) {
        return Sorting.sort(x, dim, descending, stable);
    }
    public static Reductions.ValuesIndices sort(Tensor x, int dim, boolean descending) {
        return Sorting.sort(x, dim, descending, false);
    }
    public static Tensor argsort(Tensor x, int dim, boolean descending, boolean stable) {
        return Sorting.argsort(x, dim, descending, stable);
    }
    public static Tensor argsort(Tensor x, int dim, boolean descending) {
        return Sorting.argsort(x, dim, descending, false);
    }
    public static Tensor msort(Tensor x) {
        return Sorting.msort(x);
    }
    public static Reductions.ValuesIndices topk(Tensor x, long k, int dim, boolean largest, boolean sorted) {
        return Sorting.topk(x, k, dim, largest, sorted);
    }
    public static Reductions.ValuesIndices topk(Tensor x, long k) {
        return Sorting.topk(x, k, -1, true, true);
    }
    public static Reductions.ValuesIndices kthvalue(Tensor x, long k, int dim, boolean keepdim) {
        return Sorting.kthvalue(x, k, dim, keepdim);
    }
    public static Tensor median(Tensor x) {
        return Sorting.median(x);
    }
    public static Reductions.ValuesIndices median(Tensor x, int dim, boolean keepdim) {
        return Sorting.median(x, dim, keepdim);
    }
    public static Reductions.ValuesIndices mode(Tensor x, int dim, boolean keepdim) {
        return Sorting.mode(x, dim, keepdim);
    }
    public static Sorting.Unique unique(Tensor x, boolean sorted, boolean returnInverse, boolean returnCounts) {
        return Sorting.unique(x, sorted, returnInverse, returnCounts);
    }
    /** {@code torch.unique(x, dim=dim, ...)}: the distinct slices along dim, sorted lexicographically. */
    public static Sorting.Unique unique(Tensor x, int dim, boolean returnInverse, boolean returnCounts) {
        return Sorting.unique(x, dim, returnInverse, returnCounts);
    }
    /** {@code torch.searchsorted}; {@code sorter} may be null. */
    public static Tensor searchsorted(Tensor sortedSequence, Tensor values, boolean outInt32, boolean right, Tensor sorter) {
        return Sorting.searchsorted(sortedSequence, values, outInt32, right, sorter);
    }
    /** {@code torch.searchsorted(..., side=)}: {@code side} is null, {@code "left"} or {@code "right"}. */
    public static Tensor searchsorted(Tensor sortedSequence, Tensor values, boolean outInt32, boolean right, String side,
                                      Tensor sorter) {
        return Sorting.searchsorted(sortedSequence, values, outInt32, right, side, sorter);
    }

    public static Tensor searchsorted(Tensor sortedSequence, Tensor values) {
        return Sorting.searchsorted(sortedSequence, values, false, false, null);
    }
    public static Tensor bucketize(Tensor x, Tensor boundaries, boolean outInt32, boolean right) {
        return Sorting.bucketize(x, boundaries, outInt32, right);
    }
    public static Tensor bucketize(Tensor x, Tensor boundaries) {
        return Sorting.bucketize(x, boundaries, false, false);
    }
    public static Tensor multinomial(Tensor probs, long numSamples, boolean replacement, Generator generator) {
        return Sorting.multinomial(probs, numSamples, replacement, generator);
    }
    public static Tensor multinomial(Tensor probs, long numSamples, boolean replacement) {
        return Sorting.multinomial(probs, numSamples, replacement, Generator.defaultGenerator());
    }
    public static Tensor bernoulli(Tensor p, Generator generator) {
        return Sorting.bernoulli(p, generator);
    }
    public static Tensor bernoulli(Tensor p) {
        return Sorting.bernoulli(p, Generator.defaultGenerator());
    }
    public static Tensor bernoulli(Tensor x, double p, Generator generator) {
        return Sorting.bernoulli(x, p, generator);
    }

    private static void requireFloating(String op, DType dtype) {
        if (!dtype.isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": expected a floating point dtype, got " + dtype);
        }
    }

    // ------------------------------------------------------------------ convolution (org.jtorch.ops.Convolution)

    public static Tensor conv1d(Tensor input, Tensor weight, Tensor bias, int stride, int padding, int dilation, int groups) {
        Arguments.nonNull("conv1d", "input", input);
        Arguments.nonNull("conv1d", "weight", weight);
        return org.jtorch.ops.Convolution.conv1d(input, weight, bias, stride, padding, dilation, groups);
    }

    public static Tensor conv2d(Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding, int[] dilation, int groups) {
        Arguments.nonNull("conv2d", "input", input);
        Arguments.nonNull("conv2d", "weight", weight);
        Arguments.nonNull("conv2d", "stride", stride);
        Arguments.nonNull("conv2d", "padding", padding);
        Arguments.nonNull("conv2d", "dilation", dilation);
        return org.jtorch.ops.Convolution.conv2d(input, weight, bias, stride, padding, dilation, groups);
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

    /** {@code torch.logit(input, eps=None)}; NaN {@code eps} is None. */
    public static Tensor logit(Tensor input, double eps) {
        Arguments.nonNull("logit", "input", input);
        return input.logit(eps);
    }

    public static Tensor fmod(Tensor input, Tensor other) {
        Arguments.nonNull("fmod", "input", input);
        return input.fmod(other);
    }

    public static Tensor floorDivide(Tensor input, Tensor other) {
        Arguments.nonNull("floor_divide", "input", input);
        return input.floorDivide(other);
    }

    /** {@code torch.clamp(input, min, max)} with tensor bounds; either may be null. */
    public static Tensor clamp(Tensor input, Tensor min, Tensor max) {
        Arguments.nonNull("clamp", "input", input);
        return input.clamp(min, max);
    }
}
