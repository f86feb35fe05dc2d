package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * The vector casts between float32, float64 and int32/int64 ({@link FloatConversion}) store what Java's casts give,
 * element for element, as the double-buffer path did: NaN and infinities, values beyond every integer range, -0.0,
 * halfway roundings, and lengths around the vector width, from the same JVM (each pair its own compiled loop).
 */
class FloatConversionTest {
    private static final double[] SPECIAL = {Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, -0.0, 0.0, 1e300, -1e300,
            3e9, -3e9, 9.3e18, -9.3e18, 2.5, -2.5, 0.49999997, 16_777_217, 1.0000001, 3.4028235e38, 1e-45, 123456789.987654321};

    private static double[] values(int n) {
        double[] v = new double[n];
        for (int i = 0; i < n; i++) v[i] = i < SPECIAL.length ? SPECIAL[i] : (i * 7919 % 2001 - 1000) * 1.37e5 / (1 + i % 13);
        return v;
    }

    private static double[] expected(double[] source, DType from, DType to) {
        double[] out = new double[source.length];
        for (int i = 0; i < source.length; i++) {
            double v = from == DType.FLOAT32 ? (float) source[i] : from == DType.INT64 ? (long) source[i] : from == DType.INT32 ? (int) (long) source[i]
                    : source[i];
            out[i] = switch (to) {
                case FLOAT32 -> from == DType.INT64 ? (float) (double) (long) v : (float) v;
                case FLOAT64 -> v;
                case INT64 -> (long) v;
                default -> (int) (long) v;
            };
        }
        return out;
    }

    @Test
    void everyPairStoresJavasCastOfEveryElement() {
        DType[][] pairs = {{DType.FLOAT32, DType.FLOAT64}, {DType.FLOAT64, DType.FLOAT32}, {DType.FLOAT32, DType.INT64}, {DType.FLOAT64, DType.INT64},
                {DType.FLOAT32, DType.INT32}, {DType.FLOAT64, DType.INT32}, {DType.INT64, DType.FLOAT32}, {DType.INT32, DType.FLOAT64}};
        for (int n : new int[] {1, 7, 8, 9, 19, 64, 1001}) {
            for (DType[] p : pairs) {
                try (MemoryScope scope = new MemoryScope()) {
                    double[] v = values(n);
                    Tensor source = Torch.tensor(v, n).to(p[0]);
                    double[] want = expected(v, p[0], p[1]);
                    Tensor cast = source.to(p[1]);
                    double[] got = p[1].isFloatingPoint() ? cast.toDoubleArray() : toDoubles(cast.toLongArray());
                    for (int i = 0; i < n; i++) {
                        assertEquals(Double.doubleToRawLongBits(want[i]), Double.doubleToRawLongBits(got[i]),
                                p[0] + " -> " + p[1] + " n=" + n + " element " + i + ": " + v[i] + " gave " + got[i] + ", expected " + want[i]);
                    }
                }
            }
        }
    }

    private static double[] toDoubles(long[] x) {
        double[] d = new double[x.length];
        for (int i = 0; i < x.length; i++) d[i] = x[i];
        return d;
    }
}
