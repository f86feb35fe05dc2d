package org.jtorch.backend.cpu;

import static java.lang.constant.ConstantDescs.CD_Object;
import static java.lang.constant.ConstantDescs.CD_double;
import static java.lang.constant.ConstantDescs.CD_float;
import static java.lang.constant.ConstantDescs.CD_int;
import static java.lang.constant.ConstantDescs.CD_long;
import static java.lang.constant.ConstantDescs.CD_void;
import static java.lang.constant.ConstantDescs.INIT_NAME;
import static java.lang.constant.ConstantDescs.MTD_void;

import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassHierarchyResolver;
import java.lang.classfile.CodeBuilder;
import java.lang.classfile.Label;
import java.lang.classfile.TypeKind;
import java.lang.constant.ClassDesc;
import java.lang.constant.MethodTypeDesc;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jtorch.op.Expr;
import org.jtorch.op.Fn;

/**
 * Generates the Vector API loop of a pointwise formula as JVM bytecode (the Class-File API), loaded as a hidden
 * class: one straight loop over a row, each input loaded once per step (or broadcast once per row), the formula
 * evaluated in registers by calls of {@link VectorMath}'s (float lanes) or {@link VectorMathF64}'s (double lanes)
 * small static methods (C2 inlines them, so no vector is boxed), common subexpressions computed once, the tail
 * done with masked loads and stores. A fused chain of ops thus reads its inputs and writes its output once, with
 * no intermediate in memory. Float lanes also serve bfloat16 and float16 rows (widened on load, rounded on store)
 * and bool outputs; integer rows compute in lanes of their own width ({@link VectorMathInt}).
 *
 * <p>Generated classes are cached per formula, storage layout and pattern of broadcast inputs, for the life of the JVM.
 */
final class PointwiseCodegen {
    private PointwiseCodegen() {}

    /**
     * One row of a generated kernel: {@code segs[0]}/{@code offs[0]} is the output row (float32, contiguous),
     * {@code segs[k + 1]}/{@code offs[k + 1]} input k, contiguous or (for a broadcast input) one value; offsets in
     * bytes, {@code len} elements.
     */
    interface RowKernel {
        void row(MemorySegment[] segs, long[] offs, long len, double[] params);
    }

    /**
     * How a row operand is stored: the suffix of its load and store methods (in {@link VectorMath} for float lanes,
     * {@link VectorMathF64} for double lanes) and its element size.
     */
    enum Storage {
        F32("", 4), F64("", 8), BF16("Bf16", 2), F16("F16", 2), BOOL("Bool", 1),
        I64("I64", 8), I32("I32", 4), I16("I16", 2), I8("I8", 1), U8("I8", 1);

        final String suffix;
        final int bytes;

        Storage(String suffix, int bytes) {
            this.suffix = suffix;
            this.bytes = bytes;
        }
    }

    /**
     * The lanes a row computes in: float (also for half rows), double, or integers of the dtype's width (uint8 in
     * byte lanes with unsigned comparisons); {@code storage} is a row of the compute dtype itself.
     */
    enum Compute {
        F32(Storage.F32, Long.MIN_VALUE, Long.MAX_VALUE), F64(Storage.F64, Long.MIN_VALUE, Long.MAX_VALUE),
        I64(Storage.I64, Long.MIN_VALUE, Long.MAX_VALUE), I32(Storage.I32, Integer.MIN_VALUE, Integer.MAX_VALUE),
        I16(Storage.I16, Short.MIN_VALUE, Short.MAX_VALUE), I8(Storage.I8, Byte.MIN_VALUE, Byte.MAX_VALUE), U8(Storage.U8, 0, 255);

        final Storage storage;
        /** The values integer lanes hold exactly: constants and parameters must lie within. */
        final long min;
        final long max;

        Compute(Storage storage, long min, long max) {
            this.storage = storage;
            this.min = min;
            this.max = max;
        }

        boolean integral() {
            return this != F32 && this != F64;
        }

        /** Whether the lanes have the reference's 64 bits: every integer function computes exactly as the reference. */
        boolean wide() {
            return this == I64;
        }
    }

    /** The lanes a row computes in and each operand's storage, the output first. */
    record Layout(Compute compute, List<Storage> operands) {
        Layout(boolean f64, List<Storage> operands) {
            this(f64 ? Compute.F64 : Compute.F32, operands);
        }

        static Layout f32(int inputs) {
            return new Layout(Compute.F32, java.util.Collections.nCopies(inputs + 1, Storage.F32));
        }
    }

    private record Key(Expr formula, int broadcastMask, Layout layout) {}

    private static final Map<Key, RowKernel> CACHE = new ConcurrentHashMap<>();

    /** Whether {@link #kernel} can generate {@code formula} in float lanes: every function has a vector form. */
    static boolean supports(Expr formula) {
        return supports(formula, false);
    }

    /** Whether {@link #kernel} can generate {@code formula} in float ({@code f64} false) or double lanes. */
    static boolean supports(Expr formula, boolean f64) {
        return switch (formula) {
            case Expr.In i -> true;
            case Expr.Scalar s -> true;
            case Expr.Const c -> true;
            case Expr.Math m -> (f64 ? VectorMathF64.supports(m.fn()) : VectorMath.supports(m.fn()))
                    && m.args().stream().allMatch(a -> supports(a, f64));
            default -> false;
        };
    }

    /** How a formula's value in integer lanes relates to the reference's (which computes in long and narrows on store). */
    enum IntegerForm {
        /** Equal to the reference's value modulo 2^width: the stored value is the reference's. */
        WRAPPED,
        /** Equal to the reference's value: it may also be compared, or stored as a bool. */
        EXACT
    }

    /**
     * The form of {@code formula} in {@code compute}'s integer lanes, or null where the generator declines it: a
     * function without an integer vector form, a constant outside the lanes' range, or a function that depends on
     * the value, not only on its residue (comparisons, min/max, clamp, abs, relu, sign, a where's condition), applied
     * to a value that may have wrapped around in narrow lanes where the reference's long did not. Scalar parameters
     * count as exact: the caller checks at each call that they fit the lanes ({@link Compute#min}, {@link Compute#max}).
     */
    static IntegerForm integerForm(Expr formula, Compute compute) {
        return switch (formula) {
            case Expr.In i -> IntegerForm.EXACT;
            case Expr.Scalar s -> IntegerForm.EXACT;
            case Expr.Const c -> {
                long v = (long) c.value();
                yield v >= compute.min && v <= compute.max ? IntegerForm.EXACT : null;
            }
            case Expr.Math m -> {
                if (!VectorMathInt.supports(m.fn())) yield null;
                IntegerForm[] args = new IntegerForm[m.args().size()];
                for (int k = 0; k < args.length; k++) {
                    args[k] = integerForm(m.args().get(k), compute);
                    if (args[k] == null) yield null;
                }
                yield compute.wide() ? IntegerForm.EXACT : narrowForm(m.fn(), args, compute == Compute.U8);
            }
            default -> null;
        };
    }

    private static IntegerForm narrowForm(Fn fn, IntegerForm[] args, boolean unsigned) {
        IntegerForm exact = IntegerForm.EXACT;
        return switch (fn) {
            // Ring operations: the residue of the result depends only on the residues of the arguments.
            case ADD, SUB, MUL, NEG, BITWISE_NOT, BITWISE_AND, BITWISE_OR, BITWISE_XOR -> IntegerForm.WRAPPED;
            case FLOOR, CEIL, RINT, TRUNC -> args[0];
            case ISINF, ISFINITE -> exact;
            // abs(MIN) wraps in signed lanes (the long reference gives -MIN); unsigned values are their own abs.
            case ABS -> args[0] == exact ? (unsigned ? exact : IntegerForm.WRAPPED) : null;
            case THRESHOLD -> args[1] == exact ? args[0] : null;
            case SELECT -> args[0] != exact ? null : args[1] == exact && args[2] == exact ? exact : IntegerForm.WRAPPED;
            default -> java.util.Arrays.stream(args).allMatch(a -> a == exact) ? exact : null;
        };
    }

    /**
     * The float32 kernel of {@code formula} (which {@link #supports}) over {@code inputs} inputs, input k broadcast
     * when bit k of {@code broadcastMask} is set.
     */
    static RowKernel kernel(Expr formula, int inputs, int broadcastMask) {
        return kernel(formula, inputs, broadcastMask, Layout.f32(inputs));
    }

    /** The kernel of {@code formula} for rows stored as {@code layout} says. */
    static RowKernel kernel(Expr formula, int inputs, int broadcastMask, Layout layout) {
        return CACHE.computeIfAbsent(new Key(formula, broadcastMask, layout), k -> define(generate(formula, inputs, broadcastMask, layout, ROW_PIECE)));
    }

    // ---------------------------------------------------------------- descriptors

    private static final ClassDesc CD_SEGMENT = ClassDesc.of(MemorySegment.class.getName());
    private static final ClassDesc CD_MASK = ClassDesc.of("jdk.incubator.vector.VectorMask");
    private static final ClassDesc CD_VECTOR = ClassDesc.of("jdk.incubator.vector.Vector");
    private static final ClassDesc CD_OPERATORS = ClassDesc.of("jdk.incubator.vector.VectorOperators");
    private static final ClassDesc CD_COMPARISON = ClassDesc.of("jdk.incubator.vector.VectorOperators$Comparison");
    private static final ClassDesc CD_ROW = ClassDesc.of(RowKernel.class.getName());
    private static final ClassDesc CD_KERNEL = ClassDesc.of(PointwiseCodegen.class.getPackageName(), "GeneratedPointwiseKernel");
    private static final MethodTypeDesc MTD_ROW =
            MethodTypeDesc.of(CD_void, CD_SEGMENT.arrayType(), CD_long.arrayType(), CD_long, CD_double.arrayType());
    private static final MethodTypeDesc MTD_UPPER = MethodTypeDesc.of(CD_long, CD_long);
    private static final ClassDesc CD_ORDER = ClassDesc.of("java.nio.ByteOrder");
    private static final ClassDesc CD_SPECIES = ClassDesc.of("jdk.incubator.vector.VectorSpecies");
    private static final MethodTypeDesc MTD_MASK = MethodTypeDesc.of(CD_MASK, CD_long, CD_long);

    /**
     * The descriptors of one lane type's vector class and math methods: the loop helpers ({@code upper}, {@code mask},
     * {@code param}, {@code constant}) are named with {@code helpers} appended; {@code unsigned} lanes call the
     * {@code U} form of the sign-sensitive functions.
     */
    private record Lanes(ClassDesc math, ClassDesc vector, long width, String helpers, boolean unsigned) {
        static final Lanes FLOAT = new Lanes(ClassDesc.of(VectorMath.class.getName()), ClassDesc.of("jdk.incubator.vector.FloatVector"),
                VectorMath.LANES, "", false);
        static final Lanes DOUBLE = new Lanes(ClassDesc.of(VectorMathF64.class.getName()),
                ClassDesc.of("jdk.incubator.vector.DoubleVector"), VectorMathF64.LANES, "", false);
        private static final ClassDesc INT_MATH = ClassDesc.of(VectorMathInt.class.getName());

        static Lanes of(Compute c) {
            return switch (c) {
                case F32 -> FLOAT;
                case F64 -> DOUBLE;
                case I64 -> new Lanes(INT_MATH, ClassDesc.of("jdk.incubator.vector.LongVector"), VectorMathInt.LS.length(), "I64", false);
                case I32 -> new Lanes(INT_MATH, ClassDesc.of("jdk.incubator.vector.IntVector"), VectorMathInt.IS.length(), "I32", false);
                case I16 -> new Lanes(INT_MATH, ClassDesc.of("jdk.incubator.vector.ShortVector"), VectorMathInt.SS.length(), "I16", false);
                case I8 -> new Lanes(INT_MATH, ClassDesc.of("jdk.incubator.vector.ByteVector"), VectorMathInt.BS.length(), "I8", false);
                case U8 -> new Lanes(INT_MATH, ClassDesc.of("jdk.incubator.vector.ByteVector"), VectorMathInt.BS.length(), "I8", true);
            };
        }

        String function(Fn fn) {
            return VectorMath.method(fn) + (unsigned && VectorMathInt.signSensitive(fn) ? "U" : "");
        }

        MethodTypeDesc load() { return MethodTypeDesc.of(vector, CD_SEGMENT, CD_long, CD_long); }
        MethodTypeDesc loadMasked() { return MethodTypeDesc.of(vector, CD_SEGMENT, CD_long, CD_long, CD_MASK); }
        MethodTypeDesc store() { return MethodTypeDesc.of(CD_void, vector, CD_SEGMENT, CD_long, CD_long); }
        MethodTypeDesc storeMasked() { return MethodTypeDesc.of(CD_void, vector, CD_SEGMENT, CD_long, CD_long, CD_MASK); }
        MethodTypeDesc splatAt() { return MethodTypeDesc.of(vector, CD_SEGMENT, CD_long); }
        MethodTypeDesc param() { return MethodTypeDesc.of(vector, CD_double.arrayType(), CD_int, CD_double); }
        MethodTypeDesc constant() { return MethodTypeDesc.of(vector, CD_double); }

        /** {@code FloatVector.fromMemorySegment(species, segment, offset, order)} (and DoubleVector's). */
        MethodTypeDesc loadDirect() { return MethodTypeDesc.of(vector, CD_SPECIES, CD_SEGMENT, CD_long, CD_ORDER); }
        /** {@code vector.intoMemorySegment(segment, offset, order)}. */
        MethodTypeDesc storeDirect() { return MethodTypeDesc.of(CD_void, CD_SEGMENT, CD_long, CD_ORDER); }

        /** Whether rows of {@code s} load and store straight through the vector class (the lanes' own storage). */
        boolean direct(Storage s) {
            return this == FLOAT && s == Storage.F32 || this == DOUBLE && s == Storage.F64;
        }

        /**
         * Whether {@code fn} is one of the vector class's own arithmetic methods in these lanes, called directly:
         * they are {@code @ForceInline}, so C2 inlines them however large the compile has grown, where a helper past
         * its node-count cutoff would be called with boxed vectors ({@link C2NodeBudget}).
         */
        boolean direct(Fn fn) {
            return (this == FLOAT || this == DOUBLE) && C2NodeBudget.isVectorMethod(fn);
        }

        /**
         * Whether {@code fn} is a select emitted as the vector class's own compare and blend ({@link Row#selectDirect},
         * {@link C2NodeBudget#isDirectSelect}): under {@code -Djtorch.cpu.deterministicMath=true} softplus's exp and
         * log1p put its loop past C2's node-count cutoff before the select, whose helper was then refused and boxed
         * every step's vectors (3.5x). The JDK's forms leave room for the helper, and their kernels stay as they were.
         */
        boolean directSelect(Fn fn) {
            return (this == FLOAT || this == DOUBLE) && C2NodeBudget.isDirectSelect(fn);
        }

        /** The vector class's own method of {@code fn} ({@link #direct(Fn)}): no argument (neg, abs) or one vector. */
        MethodTypeDesc vectorMethod(Fn fn) {
            return fn.arity() == 1 ? MethodTypeDesc.of(vector) : MethodTypeDesc.of(vector, CD_VECTOR);
        }

        MethodTypeDesc function(int arity) {
            ClassDesc[] args = new ClassDesc[arity];
            Arrays.fill(args, vector);
            return MethodTypeDesc.of(vector, args);
        }
    }

    // ---------------------------------------------------------------- generation

    /**
     * The most elements one call of a kernel's loop method covers; {@code row} drives longer rows through it a piece at
     * a time (0: one loop over the whole row). A long first row (a model's first step) otherwise makes C2 compile the
     * loop on stack (OSR) before the method, and those OSR compilations trap on their profiled loop predicates and
     * recompile, several times a class, when -XX:-UseProfiledLoopPredicate is absent. Short calls let the method
     * reach C2's invocation threshold first. A multiple of every lane count (64 bytes in 512-bit vectors), so each
     * element goes through the same vector step, or the same masked tail, as in one loop over the row.
     */
    static final long ROW_PIECE = rowPiece(Long.getLong("jtorch.pointwise.rowPiece", 1024));

    private static long rowPiece(long requested) {
        if (requested <= 0) return 0;
        return Math.max(64, requested - requested % 64);
    }

    // The row method's parameters: this, segs, offs, len (two slots), params.
    private static final int SEGS = 1;
    private static final int OFFS = 2;
    private static final int LEN = 3;
    private static final int PARAMS = 5;
    // The static piece method's parameters: segs, offs, from (two slots), to (two slots), params.
    private static final int PIECE_SEGS = 0;
    private static final int PIECE_OFFS = 1;
    private static final int PIECE_FROM = 2;
    private static final int PIECE_TO = 4;
    private static final int PIECE_PARAMS = 6;
    private static final MethodTypeDesc MTD_PIECE =
            MethodTypeDesc.of(CD_void, CD_SEGMENT.arrayType(), CD_long.arrayType(), CD_long, CD_long, CD_double.arrayType());
    private static final ClassDesc CD_MATH = ClassDesc.of(Math.class.getName());
    private static final MethodTypeDesc MTD_MIN = MethodTypeDesc.of(CD_long, CD_long, CD_long);

    /** The class file of a kernel whose row runs in pieces of {@code piece} elements (a multiple of 64), or in one loop (0). */
    static byte[] generate(Expr formula, int inputs, int broadcastMask, Layout layout, long piece) {
        Compute compute = layout.compute();
        IntegerForm form = compute.integral() ? integerForm(formula, compute) : null;
        boolean supported = compute.integral() ? form != null && (layout.operands().get(0) != Storage.BOOL || form == IntegerForm.EXACT)
                : supports(formula, compute == Compute.F64);
        if (!supported) throw new IllegalArgumentException("no vector form for " + formula + " in " + compute + " lanes");
        if (layout.operands().size() != inputs + 1) throw new IllegalArgumentException(layout + " does not lay out " + inputs + " inputs");
        ClassFile cf = ClassFile.of(ClassFile.ClassHierarchyResolverOption.of(ClassHierarchyResolver.defaultResolver()
                .orElse(ClassHierarchyResolver.ofClassLoading(PointwiseCodegen.class.getClassLoader()))));
        return cf.build(CD_KERNEL, cb -> {
            cb.withFlags(ClassFile.ACC_FINAL | ClassFile.ACC_SUPER);
            cb.withInterfaceSymbols(CD_ROW);
            cb.withMethodBody(INIT_NAME, MTD_void, ClassFile.ACC_PUBLIC,
                    code -> code.aload(0).invokespecial(CD_Object, INIT_NAME, MTD_void).return_());
            if (piece == 0) {
                cb.withMethodBody("row", MTD_ROW, ClassFile.ACC_PUBLIC,
                        code -> new Row(code, formula, inputs, broadcastMask, layout, SEGS, OFFS, -1, LEN, PARAMS).emitLoop());
            } else {
                cb.withMethodBody("row", MTD_ROW, ClassFile.ACC_PUBLIC, code -> emitPieces(code, piece));
                cb.withMethodBody("piece", MTD_PIECE, ClassFile.ACC_PRIVATE | ClassFile.ACC_STATIC,
                        code -> new Row(code, formula, inputs, broadcastMask, layout, PIECE_SEGS, PIECE_OFFS, PIECE_FROM, PIECE_TO, PIECE_PARAMS).emitLoop());
            }
            cb.withMethodBody("tail", MTD_PIECE, ClassFile.ACC_PRIVATE | ClassFile.ACC_STATIC,
                    code -> new Row(code, formula, inputs, broadcastMask, layout, PIECE_SEGS, PIECE_OFFS, PIECE_FROM, PIECE_TO, PIECE_PARAMS).emitTail());
        });
    }

    /** {@code row}: {@code for (from = 0; from < len; from += piece) piece(segs, offs, from, min(len, from + piece), params)}. */
    private static void emitPieces(CodeBuilder code, long piece) {
        if (piece % 64 != 0) throw new IllegalArgumentException("a row piece of " + piece + " elements is not a multiple of 64");
        int from = code.allocateLocal(TypeKind.LONG);
        Label body = code.newLabel();
        Label test = code.newLabel();
        code.lconst_0().lstore(from);
        code.goto_(test);
        code.labelBinding(body);
        code.aload(SEGS).aload(OFFS).lload(from);
        code.lload(LEN).lload(from).loadConstant(piece).ladd().invokestatic(CD_MATH, "min", MTD_MIN);
        code.aload(PARAMS).invokestatic(CD_KERNEL, "piece", MTD_PIECE);
        code.lload(from).loadConstant(piece).ladd().lstore(from);
        code.labelBinding(test);
        code.lload(from).lload(LEN).lcmp().iflt(body);
        code.return_();
    }

    /**
     * The bytecode of one loop over a row's elements {@code from} (a parameter's slot, or 0 where {@code fromSlot} is
     * negative) to {@code to}, the other parameters in the given slots.
     */
    private static final class Row {
        private final CodeBuilder code;
        private final int segsSlot;
        private final int offsSlot;
        private final int fromSlot;
        private final int toSlot;
        private final int paramsSlot;
        private final Expr formula;
        private final int inputs;
        private final int broadcastMask;
        private final Lanes lanes;
        private final List<Storage> storage;
        private final int[] segment;
        private final int[] offset;
        private final int[] broadcastVector;
        /** Scalar parameters and constants, each broadcast once before the loop. */
        private final Map<Expr, Integer> hoisted = new LinkedHashMap<>();
        /** Inputs and subtrees the formula reads more than once: loaded or computed once per step. */
        private final Map<Expr, Integer> uses = new HashMap<>();
        private Map<Expr, Integer> computed;
        private int i;
        private int mask = -1;
        /** The native byte order, in a local, for the direct loads and stores (-1 when no operand has them). */
        private int order = -1;

        Row(CodeBuilder code, Expr formula, int inputs, int broadcastMask, Layout layout, int segsSlot, int offsSlot, int fromSlot,
                int toSlot, int paramsSlot) {
            this.code = code;
            this.segsSlot = segsSlot;
            this.offsSlot = offsSlot;
            this.fromSlot = fromSlot;
            this.toSlot = toSlot;
            this.paramsSlot = paramsSlot;
            this.formula = formula;
            this.inputs = inputs;
            this.broadcastMask = broadcastMask;
            this.lanes = Lanes.of(layout.compute());
            this.storage = layout.operands();
            segment = new int[inputs + 1];
            offset = new int[inputs + 1];
            broadcastVector = new int[inputs];
            count(formula);
        }

        private void count(Expr e) {
            if (e instanceof Expr.In) {
                uses.merge(e, 1, Integer::sum);
            } else if (e instanceof Expr.Math m) {
                if (uses.merge(e, 1, Integer::sum) > 1) return;
                for (Expr a : m.args()) count(a);
            }
        }

        /** Keeps the value on the stack in a local when the formula reads it again in this step. */
        private void remember(Expr e) {
            if (uses.getOrDefault(e, 1) > 1) {
                int slot = code.allocateLocal(TypeKind.REFERENCE);
                code.dup().astore(slot);
                computed.put(e, slot);
            }
        }

        /** The locals every step reads: the operands' segments and offsets, broadcast inputs, scalars and constants. */
        private void prologue() {
            // Row operands: the output is operand 0, input k operand k + 1.
            for (int k = 0; k <= inputs; k++) {
                segment[k] = code.allocateLocal(TypeKind.REFERENCE);
                code.aload(segsSlot).loadConstant(k).aaload().astore(segment[k]);
                offset[k] = code.allocateLocal(TypeKind.LONG);
                code.aload(offsSlot).loadConstant(k).laload().lstore(offset[k]);
            }
            for (int k = 0; k < inputs; k++) {
                if ((broadcastMask & (1 << k)) == 0) continue;
                broadcastVector[k] = code.allocateLocal(TypeKind.REFERENCE);
                code.aload(segment[k + 1]).lload(offset[k + 1]).invokestatic(lanes.math(), "splatAt" + storage.get(k + 1).suffix, lanes.splatAt())
                        .astore(broadcastVector[k]);
            }
            hoist(formula);
        }

        /**
         * The vector loop over the row's full steps, then a call of {@code tail} for the masked last step. The tail
         * is a method of its own so that the formula is parsed once per C2 compile of the loop, not twice: a large
         * formula (an exact GELU and its neighbours fused by the JIT) otherwise put the loop's compile past C2's
         * node-count cutoff (18,000 parse nodes), which then refused to inline helpers inside the loop, and every
         * step boxed its vectors (a fused five-op chain ran 2.3x slower than its ops one by one).
         */
        void emitLoop() {
            prologue();
            if (storage.stream().anyMatch(lanes::direct)) {
                order = code.allocateLocal(TypeKind.REFERENCE);
                code.invokestatic(CD_ORDER, "nativeOrder", MethodTypeDesc.of(CD_ORDER)).astore(order);
            }
            i = code.allocateLocal(TypeKind.LONG);
            int upper = code.allocateLocal(TypeKind.LONG);
            if (fromSlot < 0) {
                code.lconst_0().lstore(i);
                code.lload(toSlot).invokestatic(lanes.math(), "upper" + lanes.helpers(), MTD_UPPER).lstore(upper);
            } else {
                // upper = from + upper(to - from): the same vector steps as one loop, since from is a multiple of the lanes.
                code.lload(fromSlot).lstore(i);
                code.lload(fromSlot).lload(toSlot).lload(fromSlot).lsub().invokestatic(lanes.math(), "upper" + lanes.helpers(), MTD_UPPER)
                        .ladd().lstore(upper);
            }
            Label body = code.newLabel();
            Label test = code.newLabel();
            Label end = code.newLabel();
            code.goto_(test);
            code.labelBinding(body);
            computed = new HashMap<>();
            eval(formula);
            String store = "store" + storage.get(0).suffix;
            if (lanes.direct(storage.get(0))) {
                // The vector class's own store, not VectorMath's helper: it is @ForceInline, so C2 still inlines it
                // (late) after a large formula has put the compile past its node-count cutoff, where a helper call
                // failed (NodeCountInliningCutoff) and boxed every step's result (GELU's backward ran at twice its
                // loop's cost).
                code.aload(segment[0]);
                byteOffset(0);
                code.aload(order).invokevirtual(lanes.vector(), "intoMemorySegment", lanes.storeDirect());
            } else {
                code.aload(segment[0]).lload(offset[0]).lload(i).invokestatic(lanes.math(), store, lanes.store());
            }
            code.lload(i).loadConstant(lanes.width()).ladd().lstore(i);
            code.labelBinding(test);
            code.lload(i).lload(upper).lcmp().iflt(body);
            code.lload(i).lload(toSlot).lcmp().ifge(end);
            code.aload(segsSlot).aload(offsSlot).lload(i).lload(toSlot).aload(paramsSlot).invokestatic(CD_KERNEL, "tail", MTD_PIECE);
            code.labelBinding(end);
            code.return_();
        }

        /** {@code tail}: one masked step over elements {@code from} to {@code to} (fewer than a vector's lanes). */
        void emitTail() {
            prologue();
            i = fromSlot;
            mask = code.allocateLocal(TypeKind.REFERENCE);
            code.lload(i).lload(toSlot).invokestatic(lanes.math(), "mask" + lanes.helpers(), MTD_MASK).astore(mask);
            computed = new HashMap<>();
            eval(formula);
            code.aload(segment[0]).lload(offset[0]).lload(i).aload(mask)
                    .invokestatic(lanes.math(), "store" + storage.get(0).suffix + "Masked", lanes.storeMasked());
            code.return_();
        }

        /** Pushes operand {@code k}'s byte offset at step {@code i}. */
        private void byteOffset(int k) {
            code.lload(offset[k]).lload(i).loadConstant((long) storage.get(k).bytes).lmul().ladd();
        }

        private void hoist(Expr e) {
            switch (e) {
                case Expr.Scalar s -> {
                    if (hoisted.containsKey(s)) return;
                    int slot = code.allocateLocal(TypeKind.REFERENCE);
                    code.aload(paramsSlot).loadConstant(s.index()).loadConstant(s.ifNone()).invokestatic(lanes.math(), "param" + lanes.helpers(), lanes.param())
                            .astore(slot);
                    hoisted.put(s, slot);
                }
                case Expr.Const c -> {
                    if (hoisted.containsKey(c)) return;
                    int slot = code.allocateLocal(TypeKind.REFERENCE);
                    code.loadConstant(c.value()).invokestatic(lanes.math(), "constant" + lanes.helpers(), lanes.constant()).astore(slot);
                    hoisted.put(c, slot);
                }
                case Expr.Math m -> m.args().forEach(this::hoist);
                default -> { }
            }
        }

        /** Pushes the value of {@code e} at step {@code i} (masked in the tail). */
        private void eval(Expr e) {
            switch (e) {
                case Expr.In in -> {
                    int k = in.index();
                    Integer loaded = computed.get(in);
                    if ((broadcastMask & (1 << k)) != 0) {
                        code.aload(broadcastVector[k]);
                    } else if (loaded != null) {
                        code.aload(loaded);
                    } else {
                        String load = "load" + storage.get(k + 1).suffix;
                        if (mask < 0 && lanes.direct(storage.get(k + 1))) {
                            // as the store: the vector class's @ForceInline load, inlined past the node-count cutoff
                            code.getstatic(lanes.vector(), "SPECIES_PREFERRED", CD_SPECIES);
                            code.aload(segment[k + 1]);
                            byteOffset(k + 1);
                            code.aload(order).invokestatic(lanes.vector(), "fromMemorySegment", lanes.loadDirect());
                        } else {
                            code.aload(segment[k + 1]).lload(offset[k + 1]).lload(i);
                            if (mask < 0) code.invokestatic(lanes.math(), load, lanes.load());
                            else code.aload(mask).invokestatic(lanes.math(), load + "Masked", lanes.loadMasked());
                        }
                        remember(in);
                    }
                }
                case Expr.Scalar s -> code.aload(hoisted.get(s));
                case Expr.Const c -> code.aload(hoisted.get(c));
                case Expr.Math m -> {
                    Integer done = computed.get(m);
                    if (done != null) {
                        code.aload(done);
                        return;
                    }
                    if (fusesLog1pExp(m)) {
                        // Under the deterministic switch log1p(exp(v)) as one helper (softplus, mish): VectorLog.log1pExp.
                        eval(((Expr.Math) m.args().get(0)).args().get(0));
                        code.invokestatic(lanes.math(), "log1pExp", lanes.function(1));
                        remember(m);
                        return;
                    }
                    for (Expr a : m.args()) eval(a);
                    if (lanes.directSelect(m.fn())) selectDirect();
                    else if (lanes.direct(m.fn())) code.invokevirtual(lanes.vector(), lanes.function(m.fn()), lanes.vectorMethod(m.fn()));
                    else code.invokestatic(lanes.math(), lanes.function(m.fn()), lanes.function(m.fn().arity()));
                    remember(m);
                }
                default -> throw new IllegalStateException(e + " is not a pointwise formula");
            }
        }

        /**
         * Whether {@code m} is {@code log1p(exp(v))} in float or double lanes under {@code -Djtorch.cpu.deterministicMath=true},
         * its exp not computed already: then one call of {@code log1pExp}, whose log1p needs no range checks (its
         * argument is in [0, 1]): softplus level with the JDK's exp and log1p (docs/BENCHMARKS.md, issue 20, nineteenth session).
         */
        private boolean fusesLog1pExp(Expr.Math m) {
            return VectorExp.DETERMINISTIC && (lanes == Lanes.FLOAT || lanes == Lanes.DOUBLE) && m.fn() == Fn.LOG1P
                    && m.args().get(0) instanceof Expr.Math inner && inner.fn() == Fn.EXP && !computed.containsKey(inner);
        }

        /**
         * With the condition, the value where it holds and the value where not on the stack, pushes
         * {@code otherwise.blend(then, cond.compare(NE, 0))}: {@link VectorMath#select}'s steps through the vector
         * class's own {@code @ForceInline} methods ({@link Lanes#directSelect}).
         */
        private void selectDirect() {
            int otherwise = code.allocateLocal(TypeKind.REFERENCE), then = code.allocateLocal(TypeKind.REFERENCE);
            code.astore(otherwise).astore(then).getstatic(CD_OPERATORS, "NE", CD_COMPARISON);
            if (lanes == Lanes.FLOAT) code.loadConstant(0f).invokevirtual(lanes.vector(), "compare", MethodTypeDesc.of(CD_MASK, CD_COMPARISON, CD_float));
            else code.loadConstant(0d).invokevirtual(lanes.vector(), "compare", MethodTypeDesc.of(CD_MASK, CD_COMPARISON, CD_double));
            int holds = code.allocateLocal(TypeKind.REFERENCE);
            code.astore(holds).aload(otherwise).aload(then).aload(holds)
                    .invokevirtual(lanes.vector(), "blend", MethodTypeDesc.of(lanes.vector(), CD_VECTOR, CD_MASK));
        }
    }

    static RowKernel define(byte[] bytes) {
        try {
            MethodHandles.Lookup hidden = MethodHandles.lookup().defineHiddenClass(bytes, true);
            return (RowKernel) hidden.findConstructor(hidden.lookupClass(), MethodType.methodType(void.class)).invoke();
        } catch (Throwable t) {
            throw new IllegalStateException("pointwise codegen: the generated kernel failed to load", t);
        }
    }
}
