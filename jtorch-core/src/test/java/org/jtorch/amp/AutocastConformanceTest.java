package org.jtorch.amp;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.op.CastPolicy;
import org.jtorch.ops.Convolution;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Autocast against PyTorch 1.13 ({@code tools/fixtures/gen_amp.py}): each op's result (dtype and values)
 * under {@code torch.autocast("cpu", dtype=torch.bfloat16)}, gradients through autocast, and the set of
 * ops PyTorch registers an autocast kernel for on each device type.
 */
class AutocastConformanceTest {
    private static final List<Case> CASES = Fixtures.load("amp");

    @TestFactory
    Stream<DynamicTest> opResultsUnderCpuBf16AutocastMatchPyTorch() {
        return CASES.stream().filter(c -> c.op().startsWith("policy:"))
                .map(c -> DynamicTest.dynamicTest(c.op().substring(7) + "/" + c.name(), () -> checkPolicy(c)));
    }

    private static void checkPolicy(Case c) {
        String op = c.op().substring(7);
        try (MemoryScope scope = new MemoryScope()) {
            List<Tensor> in = c.inputTensors();
            Tensor out;
            try (Autocast ac = Autocast.enable(Device.cpu(), DType.BFLOAT16)) {
                out = run(op, c, in.toArray(new Tensor[0]));
            }
            // bf16 results round once from f32: allow a couple of bf16 ulps where a sum lands near a rounding boundary.
            DType dt = DType.parse(c.expectedTensor().get("dtype").getAsString());
            // A float32 result of inner bf16 products (bilinear: PyTorch's _trilinear and jtorch's matmul group them differently).
            double tol = dt == DType.BFLOAT16 || c.name().contains("inner_bf16") ? 3e-2 : dt == DType.FLOAT32 ? 1e-5 : 1e-12;
            // The 3-d convolutions sum their depth taps in float32 and round once, as a native kernel: one bf16 ulp.
            if (op.equals("conv3d") && dt == DType.BFLOAT16) tol = 8e-3;
            Fixtures.assertMatches(c.expectedTensor(), out, tol, tol, op + "/" + c.name());
        }
    }

    private static Tensor run(String op, Case c, Tensor[] x) {
        return switch (op) {
            case "mm" -> Torch.mm(x[0], x[1]);
            case "bmm" -> Torch.bmm(x[0], x[1]);
            case "matmul" -> Torch.matmul(x[0], x[1]);
            case "addmm" -> Torch.addmm(x[0], x[1], x[2], c.doubleArg("beta", 1), c.doubleArg("alpha", 1));
            case "baddbmm" -> Torch.baddbmm(x[0], x[1], x[2], c.doubleArg("beta", 1), c.doubleArg("alpha", 1));
            case "linear" -> F.linear(x[0], x[1], x.length > 2 ? x[2] : null);
            case "mv" -> x[0].mv(x[1]);
            case "dot" -> x[0].dot(x[1]);
            case "einsum" -> Torch.einsum(c.stringArg("equation", null), x[0], x[1]);
            case "softmax" -> x[0].softmax(1);
            case "log_softmax" -> x[0].logSoftmax(1);
            case "sum" -> x[0].sum();
            case "cumsum" -> x[0].cumsum(1);
            case "exp" -> x[0].exp();
            case "log" -> x[0].abs().add(0.5).log();
            case "pow" -> x[0].pow(2.0);
            case "relu" -> x[0].relu();
            case "layer_norm" -> F.layerNorm(x[0], new long[] {5}, x[1], x[2], 1e-5);
            case "bilinear" -> F.bilinear(x[0], x[1], x[2], x[3]);
            case "addcmul" -> x[0].addcmul(x[1], x[2], c.doubleArg("value", 1));
            case "norm" -> x[0].norm();
            case "logsumexp" -> x[0].logsumexp(1);
            case "prod" -> x[0].prod();
            case "cross_entropy" -> F.crossEntropy(x[0], x[1]);
            case "nll_loss" -> F.nllLoss(x[0], x[1]);
            case "mse_loss" -> F.mseLoss(x[0], x[1]);
            case "l1_loss" -> F.l1Loss(x[0], x[1]);
            case "smooth_l1_loss" -> F.smoothL1Loss(x[0], x[1]);
            case "huber_loss" -> F.huberLoss(x[0], x[1]);
            case "kl_div" -> F.klDiv(x[0], x[1], F.Reduction.BATCHMEAN, false);
            case "binary_cross_entropy" -> F.binaryCrossEntropy(x[0], x[1]);
            case "binary_cross_entropy_with_logits" -> F.binaryCrossEntropyWithLogits(x[0], x[1]);
            case "cat" -> Torch.cat(List.of(x[0], x[1]), 0);
            case "stack" -> Torch.stack(List.of(x[0], x[1]), 0);
            case "index_copy" -> x[0].indexCopy(0, Torch.tensor(new long[] {2, 0}), x[1]);
            case "conv2d" -> Convolution.conv2d(x[0], x[1], x[2], new int[] {1}, new int[] {1}, new int[] {1}, 1);
            case "conv1d" -> Convolution.conv1d(x[0], x[1], x[2], 1, 0, 1, 1);
            case "conv_transpose2d" -> Convolution.convTranspose2d(x[0], x[1], x[2], new int[] {2}, new int[] {0}, new int[] {0}, 1,
                    new int[] {1});
            case "conv_batch_norm" -> F.batchNorm(Convolution.conv2d(x[0], x[1], x[2], new int[] {1}, new int[] {0}, new int[] {1}, 1),
                    x[5], x[6], x[3], x[4], true, 0.1, 1e-5);
            case "group_norm" -> F.groupNorm(x[0], 2);
            case "max_unpool2d" -> F.maxUnpool2d(x[0], x[1], new int[] {2}, null, new int[] {0}, null);
            case "max_pool3d" -> org.jtorch.ops.Pooling3d.maxPool3d(x[0], new int[] {2}, null, new int[] {0}, new int[] {1}, false);
            case "adaptive_avg_pool3d" -> org.jtorch.ops.Pooling3d.adaptiveAvgPool3d(x[0], 2);
            case "conv3d" -> c.name().equals("f32") ? F.conv3d(x[0], x[1], F.Conv.options().bias(x[2]).padding(1))
                    : F.conv3d(x[0], x[1], F.Conv.options().padding("same").groups(2));
            case "conv_transpose3d" -> F.convTranspose3d(x[0], x[1], F.ConvTranspose.options().bias(x[2]).stride(2));
            case "conv_transpose1d" -> F.convTranspose1d(x[0], x[1], F.ConvTranspose.options().bias(x[2]).stride(2).padding(1));
            case "reflection_pad1d", "reflection_pad2d", "reflection_pad3d" -> F.pad(x[0], c.longsArg("pad"), "reflect");
            case "replication_pad1d", "replication_pad2d", "replication_pad3d" -> F.pad(x[0], c.longsArg("pad"), "replicate");
            case "_pad_circular" -> F.pad(x[0], c.longsArg("pad"), "circular");
            case "avg_pool3d" -> F.avgPool3d(x[0], 2, F.AvgPool.options().stride(1).padding(1).countIncludePad(false));
            case "max_unpool3d" -> F.maxUnpool3d(x[0], x[1], new int[] {2}, null, new int[] {0}, null);
            case "adaptive_max_pool3d" -> F.adaptiveMaxPool3d(x[0], c.longsArg("output_size"));
            case "pixel_shuffle" -> F.pixelShuffle(x[0], (int) c.longArg("factor", 0));
            case "pixel_unshuffle" -> F.pixelUnshuffle(x[0], (int) c.longArg("factor", 0));
            default -> throw new IllegalArgumentException("no runner for " + op);
        };
    }

    /** Gradients flow back through the casts into each leaf's own dtype (float32), with PyTorch's values. */
    @TestFactory
    Stream<DynamicTest> gradientsThroughAutocastMatchPyTorch() {
        return CASES.stream().filter(c -> c.op().equals("backward")).map(c -> DynamicTest.dynamicTest("backward/" + c.name(), () -> {
            try (MemoryScope scope = new MemoryScope()) {
                Tensor x = c.input(0).requiresGrad_(true);
                Tensor w = c.input(1).requiresGrad_(true);
                Tensor b = c.input(2).requiresGrad_(true);
                Tensor loss;
                try (Autocast ac = Autocast.enable(Device.cpu(), DType.BFLOAT16)) {
                    loss = F.crossEntropy(F.linear(x, w, b), c.input(3));
                }
                loss.backward();
                JsonArray e = c.expected().getAsJsonArray();
                Fixtures.assertMatches(e.get(0).getAsJsonObject(), loss, 1e-2, 1e-2, "loss");
                Fixtures.assertMatches(e.get(1).getAsJsonObject(), w.grad(), 2e-2, 1e-2, "grad weight");
                Fixtures.assertMatches(e.get(2).getAsJsonObject(), b.grad(), 2e-2, 1e-2, "grad bias");
                Fixtures.assertMatches(e.get(3).getAsJsonObject(), x.grad(), 2e-2, 1e-2, "grad input");
            }
        }));
    }

    /**
     * Each table lists exactly the ops PyTorch 1.13 registers an autocast kernel for on that device type
     * (besides entries marked as PyTorch 2.x's, and jtorch's {@code AS_IS} entries for its own composites).
     */
    @TestFactory
    Stream<DynamicTest> tablesCoverPyTorchsRegisteredOps() {
        return CASES.stream().filter(c -> c.op().equals("registrations")).map(c -> DynamicTest.dynamicTest("registrations/" + c.name(), () -> {
            Device.Type type = c.name().equals("cpu") ? Device.Type.CPU : Device.Type.CUDA;
            Set<String> expected = new TreeSet<>();
            for (JsonElement e : c.args().getAsJsonArray("ops")) expected.add(e.getAsString());
            Set<String> ours = AutocastPolicy.table(type).entrySet().stream()
                    .filter(e -> e.getValue() != CastPolicy.AS_IS)
                    .map(java.util.Map.Entry::getKey)
                    .filter(name -> !name.equals("scaled_dot_product_attention"))
                    .collect(Collectors.toCollection(TreeSet::new));
            assertEquals(expected, ours);
        }));
    }
}
