package org.jtorch.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.reflect.Method;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.backend.cpu.CpuBackend;
import org.junit.jupiter.api.Test;

/**
 * Backends take views (issue 15): no kernel family, nor the CPU classes implementing them, has a method that
 * takes or returns a front-end {@link Tensor} (also inside a generic type such as {@code List<Tensor>}).
 */
class KernelSignaturesTest {
    private static List<String> tensorSignatures(Class<?> c, boolean declared) {
        List<String> found = new ArrayList<>();
        for (Method m : declared ? c.getDeclaredMethods() : c.getMethods()) {
            List<Type> types = new ArrayList<>(List.of(m.getGenericParameterTypes()));
            types.add(m.getGenericReturnType());
            for (Type t : types) {
                if (t.getTypeName().contains(Tensor.class.getName() + ">") || t.getTypeName().equals(Tensor.class.getName())
                        || t.getTypeName().equals(Tensor.class.getName() + "[]")) {
                    found.add(c.getSimpleName() + "." + m.getName() + ": " + t.getTypeName());
                }
            }
        }
        return found;
    }

    @Test
    void noKernelFamilyTakesOrReturnsATensor() {
        List<String> found = new ArrayList<>();
        for (Class<?> family : List.of(Backend.class, ReductionKernels.class, IndexKernels.class, LinalgKernels.class,
                RandomKernels.class, ConvolutionKernels.class, SpatialKernels.class, NormalizationKernels.class,
                RecurrentKernels.class)) {
            found.addAll(tensorSignatures(family, false));
        }
        assertEquals(List.of(), found);
    }

    @Test
    void noCpuKernelClassTakesOrReturnsATensor() {
        Backend cpu = CpuBackend.get();
        List<String> found = new ArrayList<>(tensorSignatures(cpu.getClass(), true));
        found.addAll(tensorSignatures(org.jtorch.backend.cpu.CpuOptimizerKernels.class, true));
        for (Object family : List.of(cpu.reductions(), cpu.indexing(), cpu.linalg(), cpu.random(), cpu.convolution(),
                cpu.spatial(),
                cpu.normalization(), cpu.recurrent())) {
            found.addAll(tensorSignatures(family.getClass(), true));
        }
        assertEquals(List.of(), found);
    }
}
