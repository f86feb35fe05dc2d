package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/** The matmul family against PyTorch 1.13 reference values ({@code tools/fixtures/gen_linalg.py}). */
class LinalgConformanceTest {

    @TestFactory
    Stream<DynamicTest> matchesPyTorch() {
        return Fixtures.load("linalg").stream().map(c -> DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> check(c)));
    }

    private static void check(Case c) {
        List<Tensor> in = c.inputTensors();
        if (c.expectsError()) {
            RuntimeException e = assertThrows(RuntimeException.class, () -> run(c, in));
            assertTrue(e.getMessage().contains(c.op()), "error message should name the op: " + e.getMessage());
            return;
        }
        if (Fixtures.device().isCuda() && in.stream().noneMatch(t -> t.dtype().isFloatingPoint())) {
            // cuBLASLt multiplies floating matrices only; PyTorch's CUDA build refuses integer matmuls too
            // ("addmm_cuda" not implemented for 'Long'). jtorch says so, naming the dtype and device.
            RuntimeException e = assertThrows(UnsupportedOperationException.class, () -> run(c, in).close(), c.toString());
            assertTrue(e.getMessage().contains(in.get(0).dtype().pyName()) && e.getMessage().contains("cuda"), e.getMessage());
            in.forEach(Tensor::close);
            return;
        }
        try (Tensor out = run(c, in)) {
            DType d = out.dtype();
            // Sums of k products: allow k ulps of accumulation-order difference.
            double rtol = switch (d) {
                case FLOAT64 -> 1e-12;
                case FLOAT32 -> 1e-5;
                case BFLOAT16 -> 2e-2;
                case FLOAT16 -> 2e-3;
                default -> 0;
            };
            Fixtures.assertMatches(c.expectedTensor(), out, rtol, rtol, c.toString());
        } finally {
            in.forEach(Tensor::close);
        }
    }

    private static Tensor run(Case c, List<Tensor> in) {
        return switch (c.op()) {
            case "mm" -> in.get(0).mm(in.get(1));
            case "bmm" -> in.get(0).bmm(in.get(1));
            case "mv" -> in.get(0).mv(in.get(1));
            case "dot" -> in.get(0).dot(in.get(1));
            case "matmul" -> in.get(0).matmul(in.get(1));
            case "outer" -> in.get(0).outer(in.get(1));
            case "addmm" -> Torch.addmm(in.get(0), in.get(1), in.get(2), c.doubleArg("beta", 1), c.doubleArg("alpha", 1));
            case "baddbmm" -> Torch.baddbmm(in.get(0), in.get(1), in.get(2), c.doubleArg("beta", 1), c.doubleArg("alpha", 1));
            case "einsum" -> Torch.einsum(c.stringArg("equation", ""), in.toArray(new Tensor[0]));
            case "linear" -> Torch.linear(in.get(0), in.get(1), in.size() > 2 ? in.get(2) : null);
            default -> throw new IllegalArgumentException("unknown op " + c.op());
        };
    }
}
