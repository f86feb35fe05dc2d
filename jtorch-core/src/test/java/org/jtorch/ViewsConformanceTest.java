package org.jtorch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.stream.Stream;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Views, reshapes and copies against PyTorch 1.13 ({@code tools/fixtures/gen_views.py}): the result's
 * values, shape, strides and storage offset equal PyTorch's, and it shares the input's storage exactly
 * when PyTorch's does (reshape of a non-viewable input copies). {@code copy_} converts between every
 * dtype pair and broadcasts into the destination.
 */
class ViewsConformanceTest {
    @TestFactory
    Stream<DynamicTest> viewsMatchPyTorch() {
        return Fixtures.load("views").stream().map(c -> DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> check(c)));
    }

    private static void check(Case c) {
        List<Tensor> in = c.inputTensors();
        try {
            if (c.expectsError()) {
                RuntimeException e = assertThrows(RuntimeException.class, () -> run(c, in).close(), c + ": PyTorch raises");
                assertTrue(e instanceof IllegalArgumentException || e instanceof IndexOutOfBoundsException, c + ": " + e);
                String op = c.op().equals("as_strided") ? "asStrided" : c.op();
                assertTrue(e.getMessage().contains(op), c + ": message should name " + op + ": " + e.getMessage());
                return;
            }
            try (Tensor r = run(c, in)) {
                Fixtures.assertMatches(c.expectedTensor(), r, c.toString());
                if (c.op().equals("copy_")) {
                    assertSame(in.get(0), r, c + ": copy_ returns its destination");
                    return;
                }
                assertArrayEquals(c.longsArg("result_strides"), r.strides(), c + ": strides");
                assertEquals(c.longArg("result_offset", -1), r.storageOffset(), c + ": storage offset");
                assertEquals(c.boolArg("is_view", false), r.storage() == in.get(0).storage(), c + ": shares storage");
            }
        } finally {
            in.forEach(Tensor::close);
        }
    }

    static Tensor run(Case c, List<Tensor> in) {
        Tensor x = in.get(0);
        return switch (c.op()) {
            case "view" -> x.view(c.longsArg("shape") == null ? new long[0] : c.longsArg("shape"));
            case "reshape" -> x.reshape(c.longsArg("shape"));
            case "permute" -> x.permute(c.intsArg("dims"));
            case "transpose" -> x.transpose((int) c.longArg("dim0", 0), (int) c.longArg("dim1", 1));
            case "t" -> x.t();
            case "squeeze" -> c.args().has("dim") ? x.squeeze((int) c.longArg("dim", 0)) : x.squeeze();
            case "unsqueeze" -> x.unsqueeze((int) c.longArg("dim", 0));
            case "expand" -> x.expand(c.longsArg("sizes"));
            case "narrow" -> x.narrow((int) c.longArg("dim", 0), c.longArg("start", 0), c.longArg("length", 0));
            case "select" -> x.select((int) c.longArg("dim", 0), c.longArg("index", 0));
            case "slice" -> x.slice((int) c.longArg("dim", 0), c.longArg("start", 0), c.longArg("end", 0), c.longArg("step", 1));
            case "flatten" -> c.args().has("start_dim")
                    ? x.flatten((int) c.longArg("start_dim", 0), (int) c.longArg("end_dim", -1)) : x.flatten();
            case "unflatten" -> x.unflatten((int) c.longArg("dim", 0), c.longsArg("sizes"));
            case "unfold" -> x.unfold((int) c.longArg("dim", 0), c.longArg("size", 1), c.longArg("step", 1));
            case "as_strided" -> c.args().has("offset")
                    ? x.asStrided(c.longsArg("size"), c.longsArg("stride"), c.longArg("offset", 0))
                    : x.asStrided(c.longsArg("size"), c.longsArg("stride"));
            case "contiguous" -> x.contiguous();
            case "copy_" -> x.copy_(in.get(1));
            default -> throw new AssertionError("no mapping for " + c);
        };
    }
}
