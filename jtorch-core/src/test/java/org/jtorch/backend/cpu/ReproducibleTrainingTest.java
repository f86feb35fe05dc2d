package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.nn.LSTM;
import org.jtorch.nn.LSTMCell;
import org.jtorch.nn.Linear;
import org.jtorch.optim.SGD;
import org.jtorch.testing.ChildJvm;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A few training steps (an LSTM cell, tanh, sigmoid, SiLU, ELU, softplus, expm1, cross-entropy and SGD) give the same
 * parameter bits in an interpreted JVM ({@code -Xint}: the Vector API's per-lane fallback everywhere) as in a JVM
 * whose kernels C2 has compiled, with {@code -Djtorch.cpu.deterministicMath=true}. With the JDK's
 * {@code lanewise(EXP / TANH / EXPM1)} (the default) they need not: SVML's
 * bits differ from the fallback's in the last place (docs/BENCHMARKS.md, "CPU results depend on when C2 compiles a
 * kernel"), so a CPU training run was not reproducible run to run.
 */
class ReproducibleTrainingTest {
    private static final int STEPS = 3;

    /** A hash of the parameters' bits after {@link #STEPS} steps from seed 11, in {@code dtype}. */
    static long train(DType dtype) {
        try (MemoryScope scope = new MemoryScope()) {
            Generator gen = new Generator(11);
            // Widths of 24 to 40: whole vectors and a masked tail in the row kernels, at 8 and 16 lanes.
            LSTMCell cell = new LSTMCell(24, 40, true, dtype, Device.cpu(), gen);
            Linear hidden = new Linear(40, 36, true, dtype, Device.cpu(), gen);
            Linear out = new Linear(36, 5, true, dtype, Device.cpu(), gen);
            List<Tensor> params = new java.util.ArrayList<>(cell.parameters());
            params.addAll(hidden.parameters());
            params.addAll(out.parameters());
            SGD sgd = new SGD(params, SGD.options().lr(0.5));
            Tensor x = Torch.randn(new long[] {6, 24}, dtype, Device.cpu(), gen).mul(3);
            Tensor target = Torch.randint(0, 5, new long[] {6}, DType.INT64, Device.cpu(), gen);
            LSTM.State state = null;
            for (int step = 0; step < STEPS; step++) {
                sgd.zeroGrad();
                state = cell.forward(x, state == null ? null : new LSTM.State(state.h().detach(), state.c().detach()));
                Tensor y = hidden.forward(state.h()).tanh().mul(4);
                Tensor z = y.sigmoid().add(F.silu(y)).add(F.elu(y)).add(F.softplus(y)).add(y.mul(0.25).expm1());
                Tensor logits = out.forward(z);
                F.crossEntropy(logits, target).add(logits.exp().mean().mul(0.01)).backward();
                sgd.step();
            }
            long h = 1;
            for (Tensor p : params) {
                for (double v : p.detach().to(DType.FLOAT64).toDoubleArray()) h = 31 * h + Double.doubleToRawLongBits(v);
            }
            return h;
        }
    }

    /** The switch that makes the kernels' exp, expm1 and tanh exact ({@link VectorExp#DETERMINISTIC}). */
    private static final String SWITCH = "-Djtorch.cpu.deterministicMath=true";

    @ParameterizedTest
    @CsvSource({"FLOAT32, 1", "FLOAT64, 1", "FLOAT32, 2"})
    void theSameParameterBitsInterpretedAndCompiled(DType dtype, int threads) throws Exception {
        // Main's hash after 400 runs of the same steps (the kernels compiled by C2 by then), and interpreted.
        String compiled = ChildJvm.lastLine(List.of(SWITCH), Main.class, dtype.name(), Integer.toString(threads), "400");
        String interpreted = ChildJvm.lastLine(List.of("-Xint", SWITCH), Main.class, dtype.name(), Integer.toString(threads), "0");
        assertEquals(compiled, interpreted);
    }

    /** A child JVM's side: {@code main(dtype, threads, warmups)} prints the hash. */
    public static final class Main {
        public static void main(String[] args) {
            Torch.setNumThreads(Integer.parseInt(args[1]));
            DType dtype = DType.valueOf(args[0]);
            for (int i = 0, n = Integer.parseInt(args[2]); i < n; i++) train(dtype);
            System.out.println(train(dtype));
        }
    }
}
