package org.jtorch.backend.cpu;

import java.util.HashSet;
import java.util.Set;
import org.jtorch.op.Expr;
import org.jtorch.op.Fn;

/**
 * Whether C2 can compile a generated pointwise loop ({@link PointwiseCodegen}) with every helper inlined.
 *
 * <p>C2 inlines an ordinary call only while its compile has created fewer than 18,000 nodes (NodeCountInliningCutoff,
 * fixed in product JVMs); the Vector API's own {@code @ForceInline} methods are exempt, jtorch's helpers are not. A
 * helper refused inside the loop is called every step with its vectors boxed, and the loop runs several times slower:
 * a JIT-fused chain {@code tanh(gelu(1.5 x + b) sigmoid(x) + softplus(x))} ran 2.3x slower than its eight ops one by
 * one, since everything after the exact GELU (about 20,000 parse nodes by itself) was refused. The JIT asks
 * {@link #fits} before it fuses ops into one kernel and splits a group that does not.
 *
 * <p>The loop evaluates the formula depth first, each subtree once; each helper's inlining is decided when the
 * parse reaches it. So a formula fits where, at every function with a helper, the nodes created before it plus those
 * its helper creates before its own last ordinary call stay under the cutoff. Arithmetic is exempt: the loop calls
 * the vector class's own methods for it ({@link #isVectorMethod}). The per-function counts are C2's, read with
 * {@code -XX:+LogCompilation} ({@code parse_done}) from the C2 compiles of single-op kernels in float and double
 * lanes, with and without the deterministic transcendentals (JDK 25, AVX-512; docs/BENCHMARKS.md, issue 16,
 * seventeenth session); float64 erf and GELU are estimates (their compiles there called the helper out of line). The
 * counts move with the JDK and the vector width; {@code KernelInliningTest} checks the whole on fused chains.
 */
final class C2NodeBudget {
    private C2NodeBudget() {}

    /** C2's NodeCountInliningCutoff. */
    private static final int CUTOFF = 18_000;
    /** The loop's own nodes before the formula (bounds, offsets, the loop) and a margin for the estimate's error. */
    private static final int LOOP = 600;
    private static final int MARGIN = 1_500;
    /**
     * The most nodes a loop may reach in all: past C2's MaxNodeLimit (80,000) the compile fails and the loop stays in
     * C1's code; direct arithmetic, which the cutoff does not stop, could otherwise grow that far.
     */
    private static final int MAX_NODES = 60_000;
    /** An operand's load in the loop (the vector class's own load, inlined). */
    private static final int LOAD = 300;
    /** A scalar or constant, broadcast once before the loop. */
    private static final int HOISTED = 100;

    /** {@code -Djtorch.cpu.c2NodeBudget=false}: every formula fits (the JIT fuses as before, however large). */
    static final boolean ENABLED = !"false".equals(System.getProperty("jtorch.cpu.c2NodeBudget"));

    /** Whether the loop of {@code formula}, in double lanes ({@code f64}) or float lanes, compiles with every helper inlined. */
    static boolean fits(Expr formula, boolean f64) {
        if (!ENABLED) return true;
        Walk w = walk(formula, f64);
        return w.peak <= CUTOFF - MARGIN && w.nodes <= MAX_NODES;
    }

    /** The estimated parse nodes of {@code formula}'s loop body, for choosing where to split a formula that does not fit. */
    static int nodes(Expr formula, boolean f64) {
        return walk(formula, f64).nodes;
    }

    private static Walk walk(Expr formula, boolean f64) {
        Walk w = new Walk(f64);
        w.visit(formula);
        return w;
    }

    private static final class Walk {
        private final boolean f64;
        private final Set<Expr> seen = new HashSet<>();
        private int nodes = LOOP;
        /** The most nodes created before a helper call is decided, over the formula's calls. */
        private int peak;

        Walk(boolean f64) {
            this.f64 = f64;
        }

        void visit(Expr e) {
            if (!seen.add(e)) return;
            switch (e) {
                case Expr.In in -> nodes += LOAD;
                case Expr.Scalar s -> nodes += HOISTED;
                case Expr.Const c -> nodes += HOISTED;
                case Expr.Math m -> {
                    for (Expr a : m.args()) visit(a);
                    if (!isVectorMethod(m.fn()) && !isDirectSelect(m.fn())) peak = Math.max(peak, nodes + beforeLastCall(m.fn(), f64));
                    nodes += parseNodes(m.fn(), f64);
                }
                default -> { }
            }
        }
    }

    /**
     * Whether the generated loop computes {@code fn} in float or double lanes with the vector class's own
     * {@code @ForceInline} method, which the cutoff does not refuse, rather than a helper.
     */
    static boolean isVectorMethod(Fn fn) {
        return switch (fn) {
            case NEG, ABS, ADD, SUB, MUL, DIV -> true;
            default -> false;
        };
    }

    /**
     * Whether the generated loop computes {@code fn}, a select, with the vector class's own compare and blend rather
     * than {@link VectorMath#select}: under the deterministic switch, whose exp and log1p otherwise put softplus's loop
     * past the cutoff before its select.
     */
    static boolean isDirectSelect(Fn fn) {
        return fn == Fn.SELECT && VectorExp.DETERMINISTIC;
    }

    /**
     * The nodes a function's helper adds to the compile, inlined with all it calls. The exponentials and logarithms
     * are the JDK's (one intrinsic each) unless {@code -Djtorch.cpu.deterministicMath=true} selects jtorch's own
     * polynomials ({@link VectorExp}, {@link VectorLog}, {@link VectorTrig}), which are 20 to 50 times larger in nodes
     * (float lanes, with detlevel's fast paths; float64 taken as the same but for exp, sin and cos, measured in single-op
     * kernels in the eighteenth session: docs/BENCHMARKS.md, issue 20, branch detlevel2).
     */
    static int parseNodes(Fn fn, boolean f64) {
        if (VectorExp.DETERMINISTIC) {
            switch (fn) {
                case EXP -> { return f64 ? 9_600 : 6_800; }
                case SIN, COS -> { return f64 ? 15_800 : 13_400; }
                case SIGMOID -> { return 8_500; }
                case EXPM1 -> { return 9_700; }
                case LOG -> { return 11_000; }
                case TANH -> { return 12_400; }
                case LOG1P -> { return 14_000; }
                default -> { }
            }
        }
        return switch (fn) {
            case GELU -> f64 ? 16_000 : 20_000;
            case GELU_BACKWARD -> f64 ? 29_900 : 20_800;
            case ERF -> f64 ? 15_000 : 11_500;
            case TANH -> f64 ? 13_800 : 300;
            case POW, POW_SCALAR -> 3_700;
            case CLAMP -> 2_800;
            case SIGMOID -> 1_900;
            case DIV_TRUNC, DIV_FLOOR -> 1_500;
            case GT, GE, LT, LE, EQ, NE -> 1_000;
            case SELECT, DIV -> 800;
            case EXP, LOG, LOG1P, EXPM1, SIN, COS -> 300;
            default -> 500;
        };
    }

    /**
     * The nodes a function's helper creates before its last ordinary call (the exact GELU's second polynomial, erf's
     * far tail), which the cutoff can still refuse after the helper itself was inlined; 0 where the helper's calls
     * come first.
     */
    static int beforeLastCall(Fn fn, boolean f64) {
        if (f64) return fn == Fn.ERF || fn == Fn.GELU || fn == Fn.GELU_BACKWARD ? 2_000 : 0;
        return switch (fn) {
            case GELU -> 10_800;
            case GELU_BACKWARD -> 11_400;
            case ERF -> 9_000;
            default -> 0;
        };
    }
}
