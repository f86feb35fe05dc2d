package org.jtorch.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.Autocast;
import org.jtorch.cuda.Cuda;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.nn.Module;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.jtorch.vision.models.CifarResNet;
import org.junit.jupiter.api.Test;

/**
 * Whole training on cuda:0: skipped without CUDA, run by {@code scripts/cuda-sim test} on the simulated device
 * and by {@code scripts/gpu-check device} on a GPU.
 */
class CudaTrainingTest {
    private static final Device CUDA = Device.cuda(0);

    @Test
    void theDigitsMlpTrainsOnCudaThroughAPinningLoader() {
        assumeTrue(Cuda.isAvailable(), () -> "CUDA is not available: " + Cuda.unavailableReason());
        Map<String, String> r = GpuBench.smoke(CUDA);
        System.out.println("GpuBench smoke on cuda:0: " + r);
        assertTrue(r.get("smoke_loss").startsWith("PASS"), r.toString());
        assertTrue(r.get("smoke_accuracy").startsWith("PASS"), r.toString());
    }

    /**
     * One ResNet-20 training step (batch 32) from the same weights and batch: in float32 on the CPU (the
     * reference), and with bf16 autocast on the CPU and on cuda:0. Both bf16 steps differ from the reference
     * by bf16 rounding (done in other orders on each device); the cuda:0 gradients must be as close to the
     * reference as the CPU's are, parameter by parameter (a wrong kernel gives unrelated gradients).
     */
    @Test
    void aResNet20StepWithBf16AutocastIsAsAccurateAsTheCpus() {
        assumeTrue(Cuda.isAvailable(), () -> "CUDA is not available: " + Cuda.unavailableReason());
        Module reference = resnet20(Device.cpu()), onCpu = resnet20(Device.cpu()), onCuda = resnet20(CUDA);
        try (Tensor x = Torch.randn(new long[] {32, 3, 32, 32}, DType.FLOAT32, Device.cpu(), new Generator(1));
             Tensor y = Torch.randint(0, 10, new long[] {32}, DType.INT64, Device.cpu(), new Generator(2));
             Tensor xCuda = x.to(CUDA); Tensor yCuda = y.to(CUDA)) {
            double referenceLoss = step(reference, x, y, Device.cpu(), false);
            double cpuLoss = step(onCpu, x, y, Device.cpu(), true);
            double cudaLoss = step(onCuda, xCuda, yCuda, CUDA, true);
            System.out.printf(Locale.ROOT, "ResNet-20 step loss: f32 %.6f, bf16 cpu %.6f, bf16 cuda:0 %.6f%n", referenceLoss, cpuLoss, cudaLoss);
            double cpuLossError = Math.abs(cpuLoss - referenceLoss);
            assertTrue(Math.abs(cudaLoss - referenceLoss) <= 2 * cpuLossError + 2e-3 * Math.abs(referenceLoss),
                    "bf16 loss on cuda:0 " + cudaLoss + " against f32 " + referenceLoss + " (the CPU's bf16: " + cpuLoss + ")");
            List<Tensor> r = reference.parameters(), a = onCpu.parameters(), b = onCuda.parameters();
            assertEquals(r.size(), b.size());
            for (int i = 0; i < r.size(); i++) {
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor exact = r.get(i).grad().to(DType.FLOAT64);
                    double norm = exact.norm().item();
                    double cpuError = relativeError(exact, a.get(i).grad(), norm), cudaError = relativeError(exact, b.get(i).grad(), norm);
                    String what = String.format(Locale.ROOT, "parameter %d %s: bf16 gradient error relative to f32 %.4f on cuda:0, %.4f on the cpu",
                            i, java.util.Arrays.toString(exact.shape()), cudaError, cpuError);
                    assertTrue(cudaError <= 2 * cpuError + 0.01, what);
                }
            }
        } finally {
            reference.close();
            onCpu.close();
            onCuda.close();
        }
    }

    private static Module resnet20(Device device) {
        Torch.manualSeed(0);
        return CifarResNet.resnet20(10).to(device);
    }

    /** ||g - exact|| / ||exact||, on the host in float64. */
    private static double relativeError(Tensor exact, Tensor g, double norm) {
        Tensor wide = g.cpu().to(DType.FLOAT64);
        double error = exact.sub(wide).norm().item();
        return norm == 0 ? error : error / norm;
    }

    /** Forward (under bf16 autocast when {@code amp}) and backward; returns the loss. */
    private static double step(Module model, Tensor x, Tensor y, Device device, boolean amp) {
        model.train();
        try (MemoryScope scope = new MemoryScope()) {
            Tensor loss;
            try (Autocast ac = Autocast.scope(device, DType.BFLOAT16, amp, true)) {
                loss = F.crossEntropy(model.forward(x), y);
            }
            loss.backward();
            return loss.item();
        }
    }
}
