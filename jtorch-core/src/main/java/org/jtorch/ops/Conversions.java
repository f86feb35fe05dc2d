package org.jtorch.ops;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.jtorch.Tensor;
import org.jtorch.memory.ElementCodec;
import org.jtorch.op.CopyOps;
import org.jtorch.op.Shapes;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The conversions' front end, behind {@link Tensor}'s {@code to}, {@code pinMemory}, {@code item} and {@code to*Array}
 * methods: a conversion that changes nothing returns an alias (a new reference to the same data, as PyTorch's {@code to});
 * one that does is the declared copy op ({@link CopyOps#TO_COPY}). Reads to the host ({@code item}, the arrays) are
 * reported to the trace, which cannot replay them.
 */
public final class Conversions {
    private Conversions() {}

    /** The JDK's largest safe array length ({@code ArraysSupport.SOFT_MAX_ARRAY_LENGTH}). */
    private static final int MAX_ARRAY_LENGTH = Integer.MAX_VALUE - 8;

    /** {@code self.to(dtype)}: an alias when the dtype already matches. */
    public static Tensor to(Tensor self, DType target) {
        Arguments.nonNull("to", "target", target);
        self.checkOpen("to");
        if (target == self.dtype()) return self.alias();
        return Dispatcher.call(CopyOps.TO_COPY, new Tensor[] {self}, target.ordinal(), Double.NaN, 0);
    }

    /** {@code self.to(device, non_blocking)}: an alias when it is there already (see {@link Tensor#to(Device, boolean)}). */
    public static Tensor to(Tensor self, Device target, boolean nonBlocking) {
        Arguments.nonNull("to", "target", target);
        self.checkOpen("to");
        if (target.equals(self.device())) return self.alias();
        return Dispatcher.call(CopyOps.TO_COPY, new Tensor[] {self}, Double.NaN, CopyOps.deviceScalar(target), nonBlocking ? 1 : 0);
    }

    /** {@code self.to(device, dtype)}: one copy for both; an alias when neither changes. */
    public static Tensor to(Tensor self, Device target, DType targetType) {
        Arguments.nonNull("to", "target", target);
        Arguments.nonNull("to", "targetType", targetType);
        self.checkOpen("to");
        if (target.equals(self.device())) return self.to(targetType);
        return Dispatcher.call(CopyOps.TO_COPY, new Tensor[] {self}, targetType == self.dtype() ? Double.NaN : targetType.ordinal(),
                CopyOps.deviceScalar(target), 0);
    }

    /** {@code self.pin_memory()}: a contiguous copy in page-locked host memory, an alias when pinned already (see {@link Tensor#pinMemory()}). */
    public static Tensor pinMemory(Tensor self) {
        self.checkOpen("pinMemory");
        if (!self.device().isCpu()) throw new IllegalArgumentException("pinMemory: cannot pin a tensor on " + self.device() + ", only CPU tensors");
        if (self.isPinned()) return self.alias();
        long[] shape = self.shape();
        Tensor pinned = Tensor.fromStorage(Dispatcher.allocatePinnedHost("pinMemory", self.numel() * self.dtype().byteSize()), self.dtype(),
                shape, Shapes.contiguousStrides(shape), 0);
        if (self.numel() > 0) Dispatcher.copyBetween(self, pinned, false);
        return pinned;
    }

    /** {@code self.item()}: the value of a one-element tensor, as a double. */
    public static double item(Tensor self) {
        self.checkOpen("item");
        if (Dispatcher.tracing()) Dispatcher.traceHostRead(self, "item");
        checkOneElement(self, "item");
        try (Tensor host = self.cpu()) {
            return ElementCodec.getDouble(host.dtype(), host.storage().segment(), host.storageOffset() * host.dtype().byteSize());
        }
    }

    /** {@code self.item()} as a long (exact for int64). */
    public static long itemLong(Tensor self) {
        self.checkOpen("item");
        if (Dispatcher.tracing()) Dispatcher.traceHostRead(self, "itemLong");
        checkOneElement(self, "itemLong");
        try (Tensor host = self.cpu()) {
            return ElementCodec.getLong(host.dtype(), host.storage().segment(), host.storageOffset() * host.dtype().byteSize());
        }
    }

    private static void checkOneElement(Tensor self, String op) {
        if (self.numel() != 1) {
            throw new IllegalArgumentException(op + ": a tensor with " + self.numel() + " elements (shape " + Shapes.format(self.shapeArray())
                    + ") cannot be converted to a scalar");
        }
    }

    public static float[] toFloatArray(Tensor self) {
        float[] a = new float[javaArrayLength(self, "toFloatArray")];
        copyOut(self, DType.FLOAT32, ValueLayout.JAVA_FLOAT_UNALIGNED, a, a.length);
        return a;
    }

    public static double[] toDoubleArray(Tensor self) {
        double[] a = new double[javaArrayLength(self, "toDoubleArray")];
        copyOut(self, DType.FLOAT64, ValueLayout.JAVA_DOUBLE_UNALIGNED, a, a.length);
        return a;
    }

    public static long[] toLongArray(Tensor self) {
        long[] a = new long[javaArrayLength(self, "toLongArray")];
        copyOut(self, DType.INT64, ValueLayout.JAVA_LONG_UNALIGNED, a, a.length);
        return a;
    }

    public static int[] toIntArray(Tensor self) {
        int[] a = new int[javaArrayLength(self, "toIntArray")];
        copyOut(self, DType.INT32, ValueLayout.JAVA_INT_UNALIGNED, a, a.length);
        return a;
    }

    public static boolean[] toBooleanArray(Tensor self) {
        byte[] b = new byte[javaArrayLength(self, "toBooleanArray")];
        copyOut(self, DType.BOOL, ValueLayout.JAVA_BYTE, b, b.length);
        boolean[] a = new boolean[b.length];
        for (int i = 0; i < b.length; i++) a[i] = b[i] != 0;
        return a;
    }

    private static int javaArrayLength(Tensor self, String op) {
        if (Dispatcher.tracing()) Dispatcher.traceHostRead(self, op);
        long n = self.numel();
        if (n > MAX_ARRAY_LENGTH) {
            throw new IllegalArgumentException(op + ": a tensor of shape " + Shapes.format(self.shapeArray()) + " has " + n
                    + " elements, more than a Java array holds (" + MAX_ARRAY_LENGTH + "); copy it out in slices (narrow())");
        }
        return (int) n;
    }

    /** Copies the elements in row-major order, converted to {@code type}, into a heap segment. */
    /**
     * {@code self} converted to {@code type} into native memory, then copied in bulk into {@code array} ({@code length}
     * elements of {@code layout}): no heap segment is ever made, so no kernel's compiled stores see one (ScalarCells says why).
     */
    private static void copyOut(Tensor self, DType type, ValueLayout layout, Object array, int length) {
        self.checkOpen("toArray");
        try (Tensor host = self.cpu(); Tensor out = Tensor.empty(self.shape(), type, Device.cpu())) {
            Dispatcher.copyBetween(host, out, false);
            MemorySegment.copy(out.storage().segment(), layout, out.storageOffset() * type.byteSize(), array, 0, length);
        }
    }
}
