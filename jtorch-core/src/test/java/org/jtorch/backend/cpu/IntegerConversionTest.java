package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import org.jtorch.memory.ElementCodec;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * The vectorised integer casts store, element for element, what the copy's buffers store (the scalar
 * {@link ElementIO} conversions): random values and each dtype's extremes, at lengths around the lane counts.
 */
class IntegerConversionTest {
    private static final DType[][] PAIRS = {
        {DType.UINT8, DType.FLOAT32}, {DType.BOOL, DType.FLOAT32}, {DType.INT32, DType.FLOAT32}, {DType.INT32, DType.INT64},
        {DType.INT64, DType.INT32}, {DType.INT64, DType.FLOAT64}};
    private static final int[] LENGTHS = {0, 1, 7, 8, 9, 15, 16, 17, 33, 100};

    private final Random random = new Random(22);

    private long value(DType t) {
        if (t == DType.BOOL) return random.nextInt(2);
        return switch (random.nextInt(5)) {
            case 0 -> t == DType.UINT8 ? 255 : t == DType.INT32 ? Integer.MAX_VALUE : Long.MAX_VALUE;
            case 1 -> t == DType.UINT8 ? 0 : t == DType.INT32 ? Integer.MIN_VALUE : Long.MIN_VALUE;
            case 2 -> (1L << 53) + 1 + random.nextInt(3); // rounds in float64 (and in float32 from int32's range: 2^24 + 1)
            default -> random.nextLong();
        };
    }

    @Test
    void castsStoreWhatTheBuffersStore() {
        int checked = 0;
        try (Arena arena = Arena.ofConfined()) {
            for (DType[] pair : PAIRS) {
                DType st = pair[0];
                DType dt = pair[1];
                assertTrue(IntegerConversion.supports(st, dt));
                for (int n : LENGTHS) {
                    MemorySegment src = arena.allocate(st.byteSize() * Math.max(n, 1) + 8, 64);
                    for (int i = 0; i < n; i++) ElementCodec.setLong(st, src, 8 + i * st.byteSize(), value(st)); // offset: unaligned rows too
                    MemorySegment dst = arena.allocate(dt.byteSize() * Math.max(n, 1), 64);
                    ElementwiseKernels.copy(new StridedView(src, 8 / st.byteSize(), new long[] {n}, new long[] {1}, st),
                            new StridedView(dst, 0, new long[] {n}, new long[] {1}, dt));
                    MemorySegment expected = arena.allocate(dt.byteSize() * Math.max(n, 1), 64);
                    for (int i = 0; i < n; i++) {
                        long v = ElementCodec.getLong(st, src, 8 + i * st.byteSize());
                        if (dt.isFloatingPoint()) ElementCodec.setDouble(dt, expected, i * dt.byteSize(), v);
                        else ElementCodec.setLong(dt, expected, i * dt.byteSize(), v);
                    }
                    for (int i = 0; i < n; i++) {
                        for (long b = 0; b < dt.byteSize(); b++) {
                            assertEquals(expected.get(ElementIO.I8, i * dt.byteSize() + b), dst.get(ElementIO.I8, i * dt.byteSize() + b),
                                    st + " -> " + dt + " at " + i + " of " + n + ": " + ElementCodec.getLong(st, src, 8 + i * st.byteSize()));
                        }
                        checked++;
                    }
                }
            }
        }
        assertTrue(checked > 1000, "elements checked: " + checked);
    }
}
