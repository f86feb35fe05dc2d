package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jtorch.op.Expr;
import org.jtorch.op.Fn;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CUDA C of the JIT's fused groups compiles with nvcc ({@code -arch=sm_90}, every warning an error) for every
 * formula function and for a group of many inputs and constants (infinities and NaN among them), with one entry,
 * {@code jt_fused}, whose parameters are what {@code CudaKernels.fused} packs: the output, one pointer per input,
 * the element count and the index struct; and the formula fused into a sum of rows, into a layer norm, and into a
 * softmax with its backward. Values are checked on the simulator by core's JitTest, JitLayerNormFusionTest,
 * JitSoftmaxFusionTest and JitSoftmaxTrainingTest on cuda:0, and by FusedSoftmaxDeviceTest.
 */
class FusedKernelsTest {
    private static long[] parameterSizes(int inputs) {
        long[] sizes = new long[inputs + 3];
        java.util.Arrays.fill(sizes, 8);
        sizes[inputs + 2] = 8L * (1 + KernelStructs.MAX_DIMS * (1 + Math.max(inputs, 1)));
        return sizes;
    }

    private static Map<String, long[]> compile(Path nvcc, Path dir, String file, String source) throws Exception {
        Files.writeString(dir.resolve(file), source);
        for (Map.Entry<String, String> h : KernelSources.headers().entrySet()) Files.writeString(dir.resolve(h.getKey()), h.getValue());
        return KernelEntryPointsTest.entries((f, options) -> {
            Path ptx = dir.resolve(f + ".ptx");
            List<String> cmd = List.of(nvcc.toString(), "-arch=sm_90", "--ptx", "-std=c++17", "-Werror", "all-warnings", "-o",
                    ptx.toString(), dir.resolve(f).toString());
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(0, p.waitFor(), "nvcc " + cmd + ":\n" + log + "\nsource:\n" + source);
            return Files.readString(ptx);
        }, file, List.of());
    }

    @Test
    void everyFunctionAndAManyInputGroupCompile(@TempDir Path dir) throws Exception {
        Optional<Path> nvcc = KernelSourcesTest.nvcc();
        assumeTrue(nvcc.isPresent(), "nvcc not found on PATH or in /usr/local/cuda/bin");
        // Every function in one kernel per arity, so that nvcc runs a few times rather than once per function.
        List<Expr> terms = new ArrayList<>();
        for (Fn fn : Fn.values()) {
            if (fn.integerOnly()) continue;  // the JIT fuses float32 formulas; the bitwise ops compute in integers only
            List<Expr> args = new ArrayList<>();
            for (int k = 0; k < fn.arity(); k++) args.add(new Expr.In(k, "x" + k));
            terms.add(new Expr.Math(fn, args));
        }
        Expr sum = terms.get(0);
        for (int i = 1; i < terms.size(); i++) sum = new Expr.Math(Fn.ADD, List.of(sum, terms.get(i)));
        Map<String, long[]> entries = compile(nvcc.get(), dir, "every_fn.cu", FusedKernels.source(sum, 3));
        assertArrayEquals(parameterSizes(3), entries.get(FusedKernels.ENTRY), entries.keySet().toString());
        Expr wide = new Expr.In(0, "x0");
        for (int k = 1; k < 7; k++) {
            wide = new Expr.Math(Fn.SELECT, List.of(new Expr.Math(Fn.GT, List.of(new Expr.In(k, "x" + k), new Expr.Const(Double.NaN))),
                    new Expr.Const(Double.POSITIVE_INFINITY), new Expr.Math(Fn.MUL, List.of(wide, new Expr.Const(0.5)))));
        }
        entries = compile(nvcc.get(), dir, "wide.cu", FusedKernels.source(wide, 7));
        assertArrayEquals(parameterSizes(7), entries.get(FusedKernels.ENTRY));
        // The formula fused into a sum of rows: out, the inputs, rows, row length and the index struct.
        entries = compile(nvcc.get(), dir, "every_fn_sum.cu", FusedKernels.sumSource(sum, 3));
        long[] sumSizes = new long[3 + 4];
        java.util.Arrays.fill(sumSizes, 8);
        sumSizes[6] = 8L * (1 + KernelStructs.MAX_DIMS * (1 + 3));
        assertArrayEquals(sumSizes, entries.get(FusedKernels.SUM_ENTRY), entries.keySet().toString());
        // The formula fused into a layer norm: out, the inputs, weight, bias, mean, rstd, rows, cols, eps and the row index
        // (the leading sizes, each input's strides along them and along the row), as CudaKernels.fusedLayerNorm packs them.
        entries = compile(nvcc.get(), dir, "every_fn_layer_norm.cu", FusedKernels.layerNormSource(sum, 3));
        long[] lnSizes = new long[1 + 3 + 7 + 1];
        java.util.Arrays.fill(lnSizes, 8);
        lnSizes[lnSizes.length - 1] = rowIndexSize(3);
        assertArrayEquals(lnSizes, entries.get(FusedKernels.LAYER_NORM_ENTRY), entries.keySet().toString());
        // Into a softmax: out, the inputs, rows, cols, log_softmax (an int) and the row index, as CudaKernels.fusedSoftmax packs them.
        entries = compile(nvcc.get(), dir, "every_fn_softmax.cu", FusedKernels.softmaxSource(sum, 3));
        assertArrayEquals(new long[] {8, 8, 8, 8, 8, 8, 4, rowIndexSize(3)}, entries.get(FusedKernels.SOFTMAX_ENTRY), entries.keySet().toString());
        // Its backward with two gradient formulas of the inputs and the gradient (input 3): y, g, the inputs, the two
        // gradients' outputs, rows, cols, log_softmax and the row index of the inputs and g.
        Expr gradient = new Expr.In(3, "grad");
        List<Expr> gradients = List.of(new Expr.Math(Fn.MUL, List.of(gradient, sum)), new Expr.Math(Fn.SUB, List.of(gradient, new Expr.In(1, "x1"))));
        entries = compile(nvcc.get(), dir, "every_fn_softmax_backward.cu", FusedKernels.softmaxBackwardSource(sum, 3, gradients));
        assertArrayEquals(new long[] {8, 8, 8, 8, 8, 8, 8, 8, 8, 4, rowIndexSize(4)}, entries.get(FusedKernels.SOFTMAX_BACKWARD_ENTRY),
                entries.keySet().toString());
    }

    /** The size of a row-indexed kernel's {@code RowIndex} over {@code views} views. */
    private static long rowIndexSize(int views) {
        return 8L * (1 + KernelStructs.MAX_DIMS * (1 + views) + views);
    }

    /** A float64 kernel whose formula reads scalar parameters takes them as doubles after the inputs (a random fill's). */
    @Test
    void float64KernelsTakeScalarParametersAfterTheInputs(@TempDir Path dir) throws Exception {
        Optional<Path> nvcc = KernelSourcesTest.nvcc();
        assumeTrue(nvcc.isPresent(), "nvcc not found on PATH or in /usr/local/cuda/bin");
        Expr withParameters = new Expr.Math(Fn.ADD, List.of(new Expr.Math(Fn.MUL, List.of(new Expr.In(0, "x0"), new Expr.Scalar(1, "p1", Double.NaN))),
                new Expr.Scalar(0, "p0", 2.0)));
        assertEquals(2, FusedKernels.scalarParameters(withParameters));
        String source = FusedKernels.source(withParameters, 1, org.jtorch.types.DType.FLOAT64);
        assertTrue(source.contains("double* __restrict__ out") && source.contains("typedef double A"), source);
        Map<String, long[]> entries = compile(nvcc.get(), dir, "parameters.cu", source);
        long[] sizes = {8, 8, 8, 8, 8, 8L * (1 + KernelStructs.MAX_DIMS * 2)};
        assertArrayEquals(sizes, entries.get(FusedKernels.ENTRY), entries.keySet().toString());
        assertThrows(IllegalArgumentException.class, () -> FusedKernels.source(withParameters, 1, org.jtorch.types.DType.FLOAT16));
    }
}
