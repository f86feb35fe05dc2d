package org.jtorch.cuda.kernels;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.jtorch.cuda.KernelStructs;

/**
 * The {@code void** kernelParams} array of {@code cuLaunchKernel}: one pointer per kernel parameter,
 * each to a copy of that parameter's value (device pointers and {@code jt_i64} as 8 bytes, {@code int}
 * as 4, {@code double} as 8, {@code jt::Strided} as its {@link KernelStructs#STRIDED} bytes), all
 * allocated in the caller's arena, which must outlive the launch call (the driver copies the values
 * when the call enqueues the kernel).
 */
public final class KernelArgs {
    private final Arena arena;
    private final List<MemorySegment> values = new ArrayList<>();

    // ---- the parameter lists of the entry points (checked against nvcc's PTX by KernelArgsTest) ----

    /**
     * {@code jt_unary_<op>_<T>(const T* x, O* y, jt_i64 n, double p0, double p1)} ({@code O} is T or bool),
     * strided form {@code (..., Strided s)}; {@code p0, p1} are the op's scalar parameters.
     */
    public static KernelArgs unary(Arena arena, ElementwisePlan.Launch l, long x, long out, double p0, double p1) {
        KernelArgs a = new KernelArgs(arena).pointer(x).pointer(out).i64(l.n()).f64(p0).f64(p1);
        return l.contiguous() ? a : a.strided(l.strided());
    }

    /** {@code jt_binary_<op>_<T>(const T* a, const T* b, O* out, jt_i64 n, double alpha)} ({@code O} is T or bool), strided form {@code (..., Strided s)}. */
    public static KernelArgs binary(Arena arena, ElementwisePlan.Launch l, long a, long b, long out, double alpha) {
        KernelArgs k = new KernelArgs(arena).pointer(a).pointer(b).pointer(out).i64(l.n()).f64(alpha);
        return l.contiguous() ? k : k.strided(l.strided());
    }

    /** {@code jt_where_strided(char* out, const char* cond, const char* a, const char* b, jt_i64 n, int out_dtype, Strided s)}. */
    public static KernelArgs where(Arena arena, ElementwisePlan.Launch l, long out, long cond, long a, long b, int outDtype) {
        return new KernelArgs(arena).pointer(out).pointer(cond).pointer(a).pointer(b).i64(l.n()).i32(outDtype).strided(l.strided());
    }

    /** {@code jt_fill_<T>(T* out, jt_i64 n, double value, jt_i64 long_value)}. */
    public static KernelArgs fill(Arena arena, long out, long n, double value, long longValue) {
        return new KernelArgs(arena).pointer(out).i64(n).f64(value).i64(longValue);
    }

    /** {@code jt_copy_strided(char* dst, const char* src, jt_i64 n, Strided s)}. */
    public static KernelArgs copy(Arena arena, ElementwisePlan.Launch l, long dst, long src) {
        return new KernelArgs(arena).pointer(dst).pointer(src).i64(l.n()).strided(l.strided());
    }

    /**
     * {@code jt_random_<uniform|normal>_<T>(T* out, jt_i64 n, jt_u64 seed, jt_u64 first_block, double a, double b)}
     * ({@code a, b} = low, high or mean, std).
     */
    public static KernelArgs random(Arena arena, RandomPlan.Launch l, long out, long seed, long firstBlock, double a, double b) {
        return new KernelArgs(arena).pointer(out).i64(l.n()).i64(seed).i64(firstBlock).f64(a).f64(b);
    }

    /** {@code jt_random_randint_<T>(T* out, jt_i64 n, jt_u64 seed, jt_u64 first_block, jt_i64 low, jt_i64 high)}. */
    public static KernelArgs randint(Arena arena, RandomPlan.Launch l, long out, long seed, long firstBlock, long low, long high) {
        return new KernelArgs(arena).pointer(out).i64(l.n()).i64(seed).i64(firstBlock).i64(low).i64(high);
    }

    /**
     * {@code jt_sgd_step_f32(TensorChunks chunks, float neg_lr, float weight_decay, float momentum,
     * float one_minus_dampening, int nesterov, int maximize, int first_step)}.
     */
    public static KernelArgs sgd(Arena arena, MemorySegment chunks, float negLr, float weightDecay, float momentum,
                                 float oneMinusDampening, boolean nesterov, boolean maximize, boolean firstStep) {
        return new KernelArgs(arena).struct(chunks).f32(negLr).f32(weightDecay).f32(momentum).f32(oneMinusDampening)
                .i32(nesterov ? 1 : 0).i32(maximize ? 1 : 0).i32(firstStep ? 1 : 0);
    }

    /**
     * {@code jt_adam_step_f32(TensorChunks chunks, float param_scale, float weight_decay, float beta1, float one_minus_beta1,
     * float beta2, float one_minus_beta2, float bc2_sqrt, float eps, float neg_step_size, int maximize, int amsgrad)}.
     */
    public static KernelArgs adam(Arena arena, MemorySegment chunks, float paramScale, float weightDecay, float beta1,
                                  float oneMinusBeta1, float beta2, float oneMinusBeta2, float bc2Sqrt, float eps,
                                  float negStepSize, boolean maximize, boolean amsgrad) {
        return new KernelArgs(arena).struct(chunks).f32(paramScale).f32(weightDecay).f32(beta1).f32(oneMinusBeta1).f32(beta2)
                .f32(oneMinusBeta2).f32(bc2Sqrt).f32(eps).f32(negStepSize).i32(maximize ? 1 : 0).i32(amsgrad ? 1 : 0);
    }

    /**
     * {@code jt_adadelta_step_f32(TensorChunks chunks, float neg_lr, float rho, float one_minus_rho, float eps,
     * float weight_decay, int maximize)}.
     */
    public static KernelArgs adadelta(Arena arena, MemorySegment chunks, float negLr, float rho, float oneMinusRho, float eps,
                                      float weightDecay, boolean maximize) {
        return new KernelArgs(arena).struct(chunks).f32(negLr).f32(rho).f32(oneMinusRho).f32(eps).f32(weightDecay)
                .i32(maximize ? 1 : 0);
    }

    /**
     * The fused cell steps of {@code recurrent.cu}, {@code jt_<lstm|gru>_cell_<forward|backward>_<T>(pointers..., jt_i64 batch,
     * jt_i64 h)}: the tensor pointers in the order of the C declaration (0 for a null gradient), then the state's shape.
     */
    public static KernelArgs recurrentCell(Arena arena, long batch, long hidden, long... pointers) {
        KernelArgs a = new KernelArgs(arena);
        for (long p : pointers) a.pointer(p);
        return a.i64(batch).i64(hidden);
    }

    /** {@code jt_amp_unscale_<T>(TensorChunks chunks, float* found_inf, float inv_scale)}. */
    public static KernelArgs ampUnscale(Arena arena, MemorySegment chunks, long foundInf, float invScale) {
        return new KernelArgs(arena).struct(chunks).pointer(foundInf).f32(invScale);
    }

    /**
     * {@code jt::TensorChunks} bytes for launch {@code l}: {@code lists[k][slot]} = {@code addresses[k][l.tensors()[slot]]}
     * (a missing list, or {@code addresses[k] == null}, stays zero), {@code numel[slot]}, and the block table; unused
     * entries zero.
     */
    public static MemorySegment packTensorChunks(Arena arena, MultiTensorPlan.Launch l, long[][] addresses, long[] numels) {
        if (addresses.length > KernelStructs.MT_LISTS) {
            throw new IllegalArgumentException("jt::TensorChunks holds at most " + KernelStructs.MT_LISTS + " lists, got " + addresses.length);
        }
        MemorySegment m = arena.allocate(KernelStructs.TENSOR_CHUNKS);
        m.fill((byte) 0);
        long numelOff = KernelStructs.TENSOR_CHUNKS.byteOffset(java.lang.foreign.MemoryLayout.PathElement.groupElement("numel"));
        long tensorOff = KernelStructs.TENSOR_CHUNKS.byteOffset(java.lang.foreign.MemoryLayout.PathElement.groupElement("block_tensor"));
        long chunkOff = KernelStructs.TENSOR_CHUNKS.byteOffset(java.lang.foreign.MemoryLayout.PathElement.groupElement("block_chunk"));
        int[] tensors = l.tensors();
        for (int k = 0; k < addresses.length; k++) {
            if (addresses[k] == null) continue;
            for (int slot = 0; slot < tensors.length; slot++) {
                m.set(JAVA_LONG, 8L * (k * KernelStructs.MT_TENSORS + slot), addresses[k][tensors[slot]]);
            }
        }
        for (int slot = 0; slot < tensors.length; slot++) m.set(JAVA_LONG, numelOff + 8L * slot, numels[tensors[slot]]);
        for (int b = 0; b < l.blocks(); b++) {
            m.set(JAVA_INT, tensorOff + 4L * b, l.blockTensor()[b]);
            m.set(JAVA_INT, chunkOff + 4L * b, l.blockChunk()[b]);
        }
        return m;
    }

    /** The byte size of each parameter value, in order. */
    public long[] sizes() {
        long[] r = new long[values.size()];
        for (int i = 0; i < r.length; i++) r[i] = values.get(i).byteSize();
        return r;
    }

    /** Parameter {@code i}'s value bytes. */
    public MemorySegment value(int i) {
        return values.get(i);
    }

    public KernelArgs(Arena arena) {
        this.arena = arena;
    }

    /** A device pointer ({@code T*} / {@code char*}). */
    public KernelArgs pointer(long address) {
        values.add(arena.allocateFrom(JAVA_LONG, address));
        return this;
    }

    public KernelArgs i64(long v) {
        values.add(arena.allocateFrom(JAVA_LONG, v));
        return this;
    }

    public KernelArgs i32(int v) {
        values.add(arena.allocateFrom(JAVA_INT, v));
        return this;
    }

    public KernelArgs f64(double v) {
        values.add(arena.allocateFrom(JAVA_DOUBLE, v));
        return this;
    }

    public KernelArgs f32(float v) {
        values.add(arena.allocateFrom(JAVA_FLOAT, v));
        return this;
    }

    /** A struct passed by value (its bytes, e.g. {@link #packTensorChunks}). */
    public KernelArgs struct(MemorySegment bytes) {
        values.add(bytes);
        return this;
    }

    public KernelArgs strided(ElementwisePlan.Strided s) {
        values.add(packStrided(arena, s));
        return this;
    }

    /** The pointer array to pass as {@code kernelParams}. */
    public MemorySegment build() {
        MemorySegment params = arena.allocate(ADDRESS, Math.max(1, values.size()));
        for (int i = 0; i < values.size(); i++) params.setAtIndex(ADDRESS, i, values.get(i));
        return params;
    }

    public int count() {
        return values.size();
    }

    /** {@code jt::Strided} bytes: ndim, dtype[3], size[8], stride[3][8]; unused entries zero. */
    public static MemorySegment packStrided(Arena arena, ElementwisePlan.Strided s) {
        MemorySegment m = arena.allocate(KernelStructs.STRIDED);
        m.fill((byte) 0);
        long dtypeOff = KernelStructs.STRIDED.byteOffset(java.lang.foreign.MemoryLayout.PathElement.groupElement("dtype"));
        long sizeOff = KernelStructs.STRIDED.byteOffset(java.lang.foreign.MemoryLayout.PathElement.groupElement("size"));
        long strideOff = KernelStructs.STRIDED.byteOffset(java.lang.foreign.MemoryLayout.PathElement.groupElement("stride"));
        m.set(JAVA_INT, 0, s.ndim());
        for (int o = 0; o < s.dtypes().length; o++) m.set(JAVA_INT, dtypeOff + 4L * o, s.dtypes()[o]);
        for (int d = 0; d < s.ndim(); d++) m.set(JAVA_LONG, sizeOff + 8L * d, s.sizes()[d]);
        for (int o = 0; o < s.strides().length; o++) {
            for (int d = 0; d < s.ndim(); d++) {
                m.set(JAVA_LONG, strideOff + 8L * (o * KernelStructs.MAX_DIMS + d), s.strides()[o][d]);
            }
        }
        return m;
    }
}
