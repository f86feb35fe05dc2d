package org.jtorch.nn.utils;

import java.util.ArrayList;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.Shapes;
import org.jtorch.types.Arguments;

/** Flattening of parameters into one vector and back, as {@code torch.nn.utils.parameters_to_vector} / {@code vector_to_parameters}. */
public final class ParameterVector {
    private ParameterVector() {}

    /** The parameters flattened and concatenated in order (a new tensor; differentiable through cat and reshape). */
    public static Tensor parametersToVector(Iterable<Tensor> parameters) {
        Arguments.nonNull("ParameterVector.parametersToVector", "parameters", parameters);
        return MemoryScope.run(() -> {
            List<Tensor> flat = new ArrayList<>();
            for (Tensor p : parameters) flat.add(p.reshape(-1));
            return Torch.cat(flat, 0);
        });
    }

    /** Copies consecutive slices of the 1-d {@code vector} into the parameters, in order (without recording gradients). */
    public static void vectorToParameters(Tensor vector, Iterable<Tensor> parameters) {
        Arguments.nonNull("ParameterVector.vectorToParameters", "vector", vector);
        Arguments.nonNull("ParameterVector.vectorToParameters", "parameters", parameters);
        if (vector.dim() != 1) {
            throw new IllegalArgumentException("vectorToParameters: expected a 1-d vector, got shape " + Shapes.format(vector.shape()));
        }
        long total = 0;
        for (Tensor p : parameters) total += p.numel();
        if (total != vector.numel()) {
            throw new IllegalArgumentException("vectorToParameters: the vector has " + vector.numel() + " elements but the parameters hold "
                    + total);
        }
        long offset = 0;
        try (Grad.Mode g = Grad.noGrad()) {
            for (Tensor p : parameters) {
                try (Tensor slice = vector.narrow(0, offset, p.numel()); Tensor shaped = slice.view(p.shape())) {
                    p.copy_(shaped);
                }
                offset += p.numel();
            }
        }
    }
}
