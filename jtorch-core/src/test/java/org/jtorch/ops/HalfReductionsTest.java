package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * bfloat16 and float16 reductions against the same reduction in float64 of the same (exactly representable) values,
 * rounded once to the half type: sums and norms accumulate in float32 or wider (as PyTorch's CPU path), so they may
 * differ from the correctly rounded result by at most one unit in the last place; maxima and minima are exact. The
 * layouts cover every path: contiguous rows, full reductions over several parallel chunks, column sums (a bias
 * gradient), and strided inputs that take the generic path.
 */
class HalfReductionsTest {

    static List<Arguments> cases() {
        List<Function<Tensor, Tensor>> ops = List.of(
                t -> t.sum(), t -> t.sum(1), t -> t.sum(0), t -> t.amax(1), t -> t.amin(0), t -> t.norm(2),
                t -> t.sum(new int[] {0, 1}, false, null), t -> t.transpose(0, 1).sum(1), t -> t.mean(1));
        List<String> names = List.of("sum", "sum(1)", "sum(0)", "amax(1)", "amin(0)", "norm", "sum(0,1)", "t().sum(1)", "mean(1)");
        List<long[]> shapes = List.of(new long[] {128, 512}, new long[] {3, 70_001}, new long[] {300, 37}, new long[] {1, 5000});
        List<Arguments> out = new java.util.ArrayList<>();
        for (DType dt : new DType[] {DType.BFLOAT16, DType.FLOAT16}) {
            for (long[] shape : shapes) {
                for (int i = 0; i < ops.size(); i++) out.add(Arguments.of(dt, shape, names.get(i), ops.get(i)));
            }
        }
        return out;
    }

    @ParameterizedTest(name = "{0} {2} of {1}")
    @MethodSource("cases")
    void matchesTheFloat64ReductionRoundedOnce(DType dt, long[] shape, String name, Function<Tensor, Tensor> op) {
        Torch.manualSeed(7);
        try (Tensor r = Torch.randn(shape); Tensor x = r.to(dt); Tensor x64 = x.to(DType.FLOAT64);
             Tensor got = op.apply(x); Tensor want64 = op.apply(x64); Tensor want = want64.to(dt);
             Tensor g = got.to(DType.FLOAT64); Tensor w = want.to(DType.FLOAT64)) {
            assertEquals(dt, got.dtype(), name);
            assertEquals(java.util.Arrays.toString(want.shape()), java.util.Arrays.toString(got.shape()), name);
            double[] gv = g.flatten().toDoubleArray();
            double[] wv = w.flatten().toDoubleArray();
            boolean exact = name.startsWith("amax") || name.startsWith("amin");
            int mantissa = dt == DType.BFLOAT16 ? 8 : 11;
            for (int i = 0; i < gv.length; i++) {
                double ulp = Math.scalb(1.0, Math.getExponent(wv[i]) - (mantissa - 1));
                assertEquals(wv[i], gv[i], exact ? 0 : ulp, name + " element " + i);
            }
        }
    }
}
