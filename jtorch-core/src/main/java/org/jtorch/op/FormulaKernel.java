package org.jtorch.op;

import org.jtorch.DType;

/**
 * A backend's kernel for a pointwise formula over any number of inputs: a declared op's formula, or a group of
 * pointwise ops the JIT fused into one formula. {@code out = formula(inputs)} elementwise; every view is of
 * {@code out}'s shape (inputs broadcast with zero strides) and on the backend's device {@code deviceIndex};
 * {@code compute} is the dtype the formula evaluates in; {@code params} are its scalar parameters.
 */
@FunctionalInterface
public interface FormulaKernel {
    void run(int deviceIndex, DType compute, StridedView out, StridedView[] inputs, double[] params);

    /** Compiles formulas into kernels: one per backend ({@link KernelRegistry#formulaCompiler}). */
    @FunctionalInterface
    interface Compiler {
        /** The kernel of {@code formula} (an {@link Expr#isFormula} tree) over {@code inputs} tensor inputs. */
        FormulaKernel compile(Expr formula, int inputs);
    }
}
