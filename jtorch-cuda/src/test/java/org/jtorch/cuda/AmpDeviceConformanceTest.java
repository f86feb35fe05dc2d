package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.Autocast;
import org.jtorch.amp.AutocastPolicy;
import org.jtorch.amp.GradScaler;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.nn.Linear;
import org.jtorch.nn.ReLU;
import org.jtorch.nn.Sequential;
import org.jtorch.op.CastPolicy;
import org.jtorch.optim.SGD;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Mixed precision on every device: bfloat16 autocast on {@code cpu} (PyTorch's CPU autocast), float16 and
 * bfloat16 on {@code cuda:0} (skipped with CUDA's unavailability reason where there is no GPU, never passed).
 *
 * <p>Checked: each op's result dtype under autocast is what {@link AutocastPolicy}'s table for that device
 * type says (the tables themselves are checked against PyTorch 1.13's registrations in jtorch-core), its
 * values are those of the float32 op within the lower precision's rounding, gradients come back in the
 * float32 parameters' dtype on the device, and the issue's loop (autocast forward, GradScaler
 * backward/step/update) trains a classifier there; an injected inf skips the step and halves the scale.
 */
class AmpDeviceConformanceTest {
    private record Config(Device device, DType low) {
        @Override
        public String toString() {
            return device + "/" + low;
        }
    }

    private static List<Config> configs() {
        List<Config> cs = new ArrayList<>();
        for (Device d : DeviceCases.DEVICES) {
            if (d.isCpu()) {
                cs.add(new Config(d, DType.BFLOAT16));
            } else {
                cs.add(new Config(d, DType.FLOAT16));
                cs.add(new Config(d, DType.BFLOAT16));
            }
        }
        return cs;
    }

    private interface Body {
        void run(Config c);
    }

    private static List<DynamicTest> each(String name, Body body) {
        List<DynamicTest> tests = new ArrayList<>();
        for (Config c : configs()) {
            tests.add(DynamicTest.dynamicTest(c + "/" + name, () -> {
                DeviceCases.assumeAvailable(c.device);
                body.run(c);
            }));
        }
        return tests;
    }

    private static Tensor values(long[] shape, int salt, Device d) {
        long n = 1;
        for (long s : shape) n *= s;
        double[] v = new double[Math.toIntExact(n)];
        for (int i = 0; i < v.length; i++) v[i] = ((i * 0.6180339887498949 + 0.291 * salt) % 1.0) * 2 - 1;
        try (Tensor h = Torch.tensor(v, DType.FLOAT32, shape)) {
            return h.to(d);
        }
    }

    /** The dtype {@code op} gives under autocast to {@code low} on {@code d} for an input of dtype {@code in}, per the table. */
    private static DType expectedDtype(String op, Device d, DType low, DType in) {
        CastPolicy p = AutocastPolicy.of(op, d.type());
        if (p == null || p == CastPolicy.AS_IS) return in;
        return switch (p) {
            case LOWER_PRECISION -> low;
            case FP32, FP32_SET_OPT_DTYPE -> DType.FLOAT32;
            case PROMOTE -> in;
            case BANNED -> throw new AssertionError(op + " is banned under autocast on " + d);
            case AS_IS -> in;
        };
    }

    /** Relative tolerance of a result computed from inputs rounded to {@code low}: a few of its ulps. */
    private static double tolerance(DType low) {
        return low == DType.BFLOAT16 ? 3e-2 : 4e-3;
    }

    private static void assertCloseToFloat32(Tensor expected, Tensor actual, DType low, String what) {
        double[] e = expected.toDoubleArray();
        double[] a = actual.toDoubleArray();
        assertEquals(e.length, a.length, what);
        double scale = 0;
        for (double x : e) scale = Math.max(scale, Math.abs(x));
        for (int i = 0; i < e.length; i++) {
            assertEquals(e[i], a[i], tolerance(low) * Math.max(scale, 1e-3), what + ": element " + i);
        }
    }

    /** An op under test: its name in the policy tables, and the call on float32 inputs of the device. */
    private record OpCase(String policyName, long[][] shapes, Function<Tensor[], Tensor> call, boolean inputFromLowerOp) {}

    private static List<OpCase> opCases() {
        return List.of(
                new OpCase("linear", new long[][] {{8, 16}, {4, 16}, {4}}, x -> F.linear(x[0], x[1], x[2]), false),
                new OpCase("matmul", new long[][] {{3, 8, 16}, {16, 5}}, x -> x[0].matmul(x[1]), false),
                new OpCase("conv2d", new long[][] {{2, 3, 6, 6}, {4, 3, 3, 3}, {4}}, x -> F.conv2d(x[0], x[1], x[2], 1, 1), false),
                // The rest take a lower-precision activation (a linear's output), as in a network.
                new OpCase("softmax", new long[][] {{6, 16}, {10, 16}}, x -> F.linear(x[0], x[1], null).softmax(1), true),
                new OpCase("log_softmax", new long[][] {{6, 16}, {10, 16}}, x -> F.linear(x[0], x[1], null).logSoftmax(1), true),
                new OpCase("exp", new long[][] {{6, 16}, {10, 16}}, x -> F.linear(x[0], x[1], null).mul(0.1).exp(), true),
                new OpCase("mse_loss", new long[][] {{6, 16}, {10, 16}, {6, 10}},
                        x -> F.mseLoss(F.linear(x[0], x[1], null), x[2]), true),
                new OpCase("layer_norm", new long[][] {{6, 16}, {10, 16}},
                        x -> F.layerNorm(F.linear(x[0], x[1], null), new long[] {10}, null, null, 1e-5), true),
                new OpCase("sum", new long[][] {{6, 16}, {10, 16}}, x -> F.linear(x[0], x[1], null).sum(), true));
    }

    @TestFactory
    List<DynamicTest> resultDtypesFollowTheDevicesTableAndValuesTheFloat32Op() {
        List<DynamicTest> tests = new ArrayList<>();
        for (OpCase op : opCases()) {
            tests.addAll(each(op.policyName, c -> {
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor[] x = new Tensor[op.shapes.length];
                    for (int i = 0; i < x.length; i++) x[i] = values(op.shapes[i], i + 1, c.device);
                    Tensor reference = op.call.apply(x);
                    Tensor out;
                    try (Autocast ac = Autocast.enable(c.device, c.low)) {
                        out = op.call.apply(x);
                    }
                    assertEquals(c.device, out.device(), op.policyName + ": device");
                    DType in = op.inputFromLowerOp ? c.low : DType.FLOAT32;
                    assertEquals(expectedDtype(op.policyName, c.device, c.low, in), out.dtype(), op.policyName + " on " + c + ": dtype");
                    assertCloseToFloat32(reference, out, c.low, op.policyName + " on " + c);
                }
            }));
        }
        return tests;
    }

    @TestFactory
    List<DynamicTest> gradientsComeBackInTheParametersDtype() {
        return each("gradients", c -> {
            Linear layer = new Linear(16, 4, true, DType.FLOAT32, c.device, Torch.manualSeed(3));
            try (MemoryScope scope = new MemoryScope()) {
                Tensor x = values(new long[] {8, 16}, 1, c.device);
                Tensor loss;
                try (Autocast ac = Autocast.enable(c.device, c.low)) {
                    Tensor y = layer.forward(x);
                    assertEquals(c.low, y.dtype());
                    loss = y.to(DType.FLOAT32).pow(2).mean();
                }
                loss.backward();
                for (Tensor p : layer.parameters()) {
                    assertEquals(DType.FLOAT32, p.grad().dtype(), "gradient dtype");
                    assertEquals(c.device, p.grad().device(), "gradient device");
                }
            }
        });
    }

    /** Four Gaussian blobs in 8 dimensions, labels 0..3, on {@code d}. */
    private static Tensor[] blobs(int n, long seed, Device d) {
        Generator g = Torch.manualSeed(seed);
        try (Tensor labels = Torch.randint(0, 4, new long[] {n}, DType.INT64, Device.cpu(), g);
             Tensor noise = Torch.randn(new long[] {n, 8}, DType.FLOAT32, Device.cpu(), g);
             Tensor centres = Torch.randn(new long[] {4, 8}, DType.FLOAT32, Device.cpu(), Torch.manualSeed(99)).mul(2.0);
             Tensor x = centres.indexSelect(0, labels).add(noise)) {
            return new Tensor[] {x.to(d), labels.to(d)};
        }
    }

    @TestFactory
    List<DynamicTest> theIssuesLoopTrainsAClassifier() {
        return each("autocast + GradScaler loop", c -> {
            Tensor[] train = blobs(512, 1, c.device);
            Tensor[] test = blobs(256, 2, c.device);
            Generator init = Torch.manualSeed(7);
            Sequential model = new Sequential(new Linear(8, 32, true, DType.FLOAT32, c.device, init), new ReLU(),
                    new Linear(32, 4, true, DType.FLOAT32, c.device, init));
            SGD optimizer = new SGD(model.parameters(), SGD.options().lr(0.05).momentum(0.9));
            GradScaler scaler = new GradScaler();
            int skipped = 0;
            for (int epoch = 0; epoch < 10; epoch++) {
                for (long start = 0; start < 512; start += 64) {
                    try (MemoryScope scope = new MemoryScope()) {
                        optimizer.zeroGrad();
                        Tensor loss;
                        try (Autocast ac = Autocast.enable(c.device, c.low)) {
                            loss = F.crossEntropy(model.forward(train[0].narrow(0, start, 64)), train[1].narrow(0, start, 64));
                        }
                        scaler.scale(loss).backward();
                        if (!scaler.step(optimizer)) skipped++;
                        scaler.update();
                    }
                }
            }
            try (MemoryScope scope = new MemoryScope()) {
                model.eval();
                double correct = model.forward(test[0]).argmax(1, false).eq(test[1]).sum().item();
                assertTrue(correct / 256 >= 0.9, c + ": test accuracy " + correct / 256);
            }
            assertTrue(skipped <= 2, c + ": " + skipped + " of 80 steps skipped");
            assertTrue(Double.isFinite(scaler.getScale()) && scaler.getScale() > 0, "scale " + scaler.getScale());
        });
    }

    @TestFactory
    List<DynamicTest> anInfGradientSkipsTheStepAndHalvesTheScale() {
        return each("inf gradient", c -> {
            Linear layer = new Linear(4, 2, true, DType.FLOAT32, c.device, Torch.manualSeed(5));
            SGD optimizer = new SGD(layer.parameters(), SGD.options().lr(0.1));
            GradScaler scaler = new GradScaler();
            try (MemoryScope scope = new MemoryScope()) {
                double[] before = layer.weight().toDoubleArray();
                Tensor loss;
                try (Autocast ac = Autocast.enable(c.device, c.low)) {
                    loss = layer.forward(values(new long[] {3, 4}, 1, c.device)).to(DType.FLOAT32).sum();
                }
                scaler.scale(loss).backward();
                layer.weight().grad().narrow(0, 1, 1).fill_(Double.POSITIVE_INFINITY);
                assertFalse(scaler.step(optimizer), "the step must be skipped");
                scaler.update();
                assertArrayEquals(before, layer.weight().toDoubleArray(), "weights unchanged");
                assertEquals(65536.0 * 0.5, scaler.getScale(), "scale after one overflow");
            }
        });
    }
}
