package org.jtorch.op;

import static org.jtorch.op.DTypeRule.SAME;
import static org.jtorch.op.DTypeRule.SAME_NO_BOOL;

import org.jtorch.Device;

/**
 * Ops whose front ends are still written by hand ({@link OpDef.Kind#FRONT_END}): the views of {@code Tensor}, and
 * matmul and linear of {@code ops.Linalg}. Declared so that the registry lists them with PyTorch's signatures and
 * autocast policies, and so that the trace sees each as one op (the JIT replays it through its front end). Their
 * meta functions, kernels on strided views and derivatives written with ops are the next step of the registry.
 * Integer arguments reach the trace and {@code Dispatcher.call} as the call's scalars, in signature order.
 */
public final class FrontEndOps {
    private FrontEndOps() {}

    private static final Param SELF = Param.tensor("self");

    public static final OpDef VIEW = view("view", new Param("size", "SymInt[]", null));
    public static final OpDef RESHAPE = view("reshape", new Param("shape", "SymInt[]", null));
    public static final OpDef PERMUTE = view("permute", new Param("dims", "int[]", null));
    public static final OpDef TRANSPOSE = view("transpose", new Param("dim0", "int", null), new Param("dim1", "int", null));
    public static final OpDef SQUEEZE = view("squeeze");
    public static final OpDef SQUEEZE_DIM = OpDef.frontEnd("squeeze_dim", true).py("squeeze").rule(SAME)
            .signature(SELF, new Param("dim", "int", null)).doc("a view").build();
    public static final OpDef UNSQUEEZE = view("unsqueeze", new Param("dim", "int", null));
    public static final OpDef EXPAND = view("expand", new Param("size", "SymInt[]", null));
    /** A contiguous tensor: the tensor itself (an alias) or a copy. */
    public static final OpDef CONTIGUOUS = OpDef.frontEnd("contiguous", true).rule(SAME).signature(SELF)
            .doc("an alias or a copy").build();
    public static final OpDef MATMUL = OpDef.frontEnd("matmul", true).rule(SAME_NO_BOOL).signature(SELF, Param.tensor("other"))
            .autocast(Device.Type.CPU, CastPolicy.LOWER_PRECISION).autocast(Device.Type.CUDA, CastPolicy.LOWER_PRECISION)
            .doc("`ops.Linalg.matmul` (packed GEMM on the CPU, cuBLASLt on CUDA)").build();
    public static final OpDef LINEAR = OpDef.frontEnd("linear", true).rule(SAME_NO_BOOL)
            .signature(Param.tensor("input"), Param.tensor("weight"), new Param("bias", "Tensor?", "None"))
            .autocast(Device.Type.CPU, CastPolicy.LOWER_PRECISION).autocast(Device.Type.CUDA, CastPolicy.LOWER_PRECISION)
            .doc("`ops.Linalg.linear`").build();

    private static OpDef view(String name, Param... params) {
        Param[] all = new Param[params.length + 1];
        all[0] = SELF;
        System.arraycopy(params, 0, all, 1, params.length);
        return OpDef.frontEnd(name, true).rule(SAME).signature(all).doc("a view").build();
    }
}
