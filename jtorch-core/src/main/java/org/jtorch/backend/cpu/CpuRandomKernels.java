package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import org.jtorch.backend.RandomKernels;
import org.jtorch.memory.ElementCodec;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Generator;

/** CPU implementation of {@link RandomKernels}: Philox blocks computed per chunk, in parallel. */
final class CpuRandomKernels implements RandomKernels {
    private static final double TWO_POW_M24 = 1.0 / (1 << 24);
    private static final double TWO_POW_M53 = 1.0 / (1L << 53);
    private static final long GRAIN = 16_384;

    @Override
    public void uniform(StridedView out, double low, double high, long seed, long firstBlock) {
        MemorySegment s = out.memory();
        DType t = out.dtype();
        long base = out.offset() * t.byteSize();
        boolean wide = t == DType.FLOAT64;
        double range = high - low;
        if ((t == DType.FLOAT32 || t == DType.FLOAT64) && VectorPhilox.supported()) {
            Parallel.forRange(out.numel(), GRAIN, (begin, end) -> {
                if (wide) VectorPhilox.uniformDoubles(s, base, begin, end, low, high, seed, firstBlock);
                else VectorPhilox.uniformFloats(s, base, begin, end, low, high, seed, firstBlock);
            });
            return;
        }
        Parallel.forRange(out.numel(), GRAIN, (begin, end) -> {
            int[] w = new int[4];
            long loaded = -1;
            for (long i = begin; i < end; i++) {
                double u;
                if (wide) {
                    // 53 bits from two words: element i uses half of block i/2.
                    long block = firstBlock + i / 2;
                    if (block != loaded) {
                        Generator.philox(seed, block, w);
                        loaded = block;
                    }
                    int k = (int) (i & 1) * 2;
                    long bits = ((w[k] & 0xffffffffL) << 21) ^ ((w[k + 1] & 0xffffffffL) >>> 11);
                    u = (bits & ((1L << 53) - 1)) * TWO_POW_M53;
                } else {
                    long block = firstBlock + i / 4;
                    if (block != loaded) {
                        Generator.philox(seed, block, w);
                        loaded = block;
                    }
                    u = (w[(int) (i & 3)] >>> 8) * TWO_POW_M24;
                }
                double v = low + u * range;
                // Rounding to a narrow float type may land on 'high'; keep the interval half-open.
                ElementCodec.setDouble(t, s, base + i * t.byteSize(), v);
                if (ElementCodec.getDouble(t, s, base + i * t.byteSize()) >= high && high > low) {
                    ElementCodec.setDouble(t, s, base + i * t.byteSize(), low);
                }
            }
        });
    }

    @Override
    public void normal(StridedView out, double mean, double std, long seed, long firstBlock) {
        MemorySegment s = out.memory();
        DType t = out.dtype();
        long base = out.offset() * t.byteSize();
        Parallel.forRange(out.numel(), GRAIN, (begin, end) -> {
            int[] w = new int[4];
            long loaded = -1;
            for (long i = begin; i < end; i++) {
                long pair = i / 2;
                long block = firstBlock + pair / 2;
                if (block != loaded) {
                    Generator.philox(seed, block, w);
                    loaded = block;
                }
                int k = (int) (pair & 1) * 2;
                // u1 in (0, 1] so that log(u1) is finite.
                double u1 = ((w[k] >>> 8) + 1) * TWO_POW_M24;
                double u2 = (w[k + 1] >>> 8) * TWO_POW_M24;
                double r = Math.sqrt(-2.0 * Math.log(u1));
                double z = (i & 1) == 0 ? r * Math.cos(2 * Math.PI * u2) : r * Math.sin(2 * Math.PI * u2);
                ElementCodec.setDouble(t, s, base + i * t.byteSize(), mean + std * z);
            }
        });
    }

    @Override
    public void randint(StridedView out, long low, long high, long seed, long firstBlock) {
        MemorySegment s = out.memory();
        DType t = out.dtype();
        long base = out.offset() * t.byteSize();
        long range = high - low;
        Parallel.forRange(out.numel(), GRAIN, (begin, end) -> {
            Generator.Bits64 bits = new Generator.Bits64(seed, firstBlock);
            for (long i = begin; i < end; i++) {
                long v = low + Long.remainderUnsigned(bits.at(i), range);
                if (t.isFloatingPoint()) ElementCodec.setDouble(t, s, base + i * t.byteSize(), v);
                else ElementCodec.setLong(t, s, base + i * t.byteSize(), v);
            }
        });
    }
}
