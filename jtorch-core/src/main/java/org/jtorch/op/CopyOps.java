package org.jtorch.op;

import static org.jtorch.op.Expr.GRAD;

import java.util.Arrays;
import org.jtorch.DType;

/**
 * The copies of a tensor on its own device, as structured ops ({@link OpDef.Kind#STRUCTURED}): {@code clone} and
 * {@code _to_copy} (a dtype conversion). Each writes a contiguous result through the backend's strided copy, so the
 * trace sees them as ops and the JIT replays them. Their derivative is the gradient itself: autograd brings each
 * input's gradient to that input's dtype, which is {@code _to_copy}'s backward, and nothing is saved.
 */
public final class CopyOps {
    private CopyOps() {}

    /** {@code self.clone()}: a contiguous copy of the same dtype. */
    public static final OpDef CLONE = OpDef.structured("clone").rule(DTypeRule.SAME).signature(Param.tensor("self"))
            .meta((in, g) -> new Meta.Output(in[0].shape().clone(), in[0].dtype()))
            .derivatives(() -> Arrays.asList(GRAD)).node("CloneBackward0")
            .doc("a contiguous copy").build();

    /**
     * {@code self.to(dtype)}: a contiguous copy converted to {@code dtype} (its ordinal in {@link DType}), as PyTorch's
     * casts. A result of an integer or boolean dtype gets no gradient.
     */
    public static final OpDef TO_COPY = OpDef.structured("_to_copy").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.scalar("dtype", "ScalarType?", "None"))
            .meta((in, g) -> new Meta.Output(in[0].shape().clone(), Double.isNaN(g[0]) ? in[0].dtype() : DType.values()[(int) g[0]]))
            .derivatives(() -> Arrays.asList(GRAD)).node("ToCopyBackward0")
            .doc("a contiguous copy converted to dtype").build();
}
