package org.jtorch.op;

import java.util.List;
import java.util.stream.Collectors;

/** An op's signature with PyTorch's parameter names and defaults, printed as PyTorch's schema. */
public record Signature(String name, List<Param> params, String returns) {
    public Signature {
        params = List.copyOf(params);
    }

    public static Signature of(String name, Param... params) {
        return new Signature(name, List.of(params), "Tensor");
    }

    /** The tensor parameters, in order: the op's inputs. */
    public long tensorCount() {
        return params.stream().filter(p -> p.type().startsWith("Tensor")).count();
    }

    @Override
    public String toString() {
        return name + "(" + params.stream().map(Param::toString).collect(Collectors.joining(", ")) + ") -> " + returns;
    }
}
