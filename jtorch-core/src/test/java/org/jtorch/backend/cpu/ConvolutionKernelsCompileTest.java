package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import jdk.incubator.vector.FloatVector;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.F;
import org.jtorch.testing.ChildJvm;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;

/**
 * Every float32 convolution kernel (and the GEMM blocks they and short matrix products use) compiles in C1 (tier 3). A vector kernel C1 cannot compile may be left in
 * tier-2 code for good when C2 is busy as it first grows hot, where the Vector API runs as heap objects: the
 * one-input-channel weight gradient of the MNIST example ran 113-175 ms instead of 2-6 ms that way, or not,
 * depending on what the JVM had run before (issue 20). A child JVM compiles the convolution kernels at first
 * call with C1 only (the Winograd path switched on), and its compilation log must report no kernel skipped.
 */
class ConvolutionKernelsCompileTest {
    @Test
    void everyConvolutionKernelCompilesInC1() throws IOException, InterruptedException {
        assumeTrue(FloatVector.SPECIES_PREFERRED.length() == 16, "the direct tiles need 16 float lanes");
        Process p = ChildJvm.command(null, List.of("-Xcomp", "-XX:TieredStopAtLevel=3", "-XX:+PrintCompilation", "-Djtorch.conv.winograd=true",
                "-XX:CompileCommand=quiet", "-XX:CompileCommand=compileonly,org.jtorch.backend.cpu.*::*"), Workload.class)
                .redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "child JVM timed out");
        String log = new String(out, StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), log);
        assertTrue(log.contains("ConvDirectF32::weightTileNarrow"), "the workload reaches the narrow weight tile:\n" + log);
        assertTrue(log.contains("WinogradF32::outputTile"), "the workload reaches the Winograd path:\n" + log);
        assertTrue(log.contains("ConvGemmF32::forward"), "the workload reaches the small-image GEMM path:\n" + log);
        assertTrue(log.contains("ConvRasterTileF32::tile"), "the workload reaches the raster-order tile:\n" + log);
        assertTrue(log.contains("ConvDirectF32::spreadRows"), "the workload reaches the spread tile stores:\n" + log);
        assertTrue(log.contains("ConvLaneWeightGradF32::tile"), "the workload reaches the pixel-lane weight gradient:\n" + log);
        assertTrue(log.contains("ConvFewChannelWeightGradF32::tile"), "the workload reaches the few-channel weight gradient:\n" + log);
        assertTrue(log.contains("ConvRasterImageF32::tile"), "the workload reaches the raster tiles over whole images:\n" + log);
        assertTrue(log.contains("ConvOneChannelF32::fourChannelsTwoSegments"), "the workload reaches the one-channel forward:\n" + log);
        assertTrue(log.contains("ConvRasterTileF32::stride2InputGrad"), "the workload reaches the phased input gradient:\n" + log);
        assertTrue(log.contains("ConvWideWeightGradF32::weightTile"), "the workload reaches the 6x64 weight gradient tile:\n" + log);
        assertTrue(log.contains("Gemm::fourRowsChunk"), "the workload reaches the short-m GEMM blocks:\n" + log);
        assertTrue(log.contains("GemmDot::pairByFour") && log.contains("GemmDot::oneByFour"), "the workload reaches the dot products:\n" + log);
        assertTrue(log.contains("GemmDotF64::pairByFour") && log.contains("GemmDotF64::oneByFour"), "the workload reaches the float64 dot products:\n" + log);
        assertTrue(log.contains("Gemm::kernelD "), "the workload reaches float64 products against rows of B:\n" + log);
        assertTrue(log.contains("GemmNarrowF64::threeVectors") && log.contains("GemmNarrowF64::oneVector"),
                "the workload reaches the float64 narrow-C products:\n" + log);
        assertTrue(log.contains("TransposeCopy::longTile"), "the workload reaches the 8-byte transpose tile:\n" + log);
        assertTrue(log.contains("ReverseCopy::row"), "the workload reaches the reversed rows:\n" + log);
        // "concurrent class loading" is a transient bail-out (a class loaded while the method compiled; the JIT retries),
        // not a kernel C1 cannot compile.
        List<String> skipped = log.lines().filter(l -> l.contains("COMPILE SKIPPED") && l.contains("org.jtorch")
                && !l.contains("concurrent class loading")).toList();
        assertEquals(List.of(), skipped);
    }

    /** Forward, input and weight gradients of shapes that reach each float32 convolution kernel. */
    public static final class Workload {
        public static void main(String[] args) {
            long[][] shapes = {
                // {x: n, cin, h, w}, {w: cout, cin, kh, kw}, {stride, padding}
                {2, 1, 12, 12}, {32, 1, 3, 3}, {1, 0},     // one input channel: pixel-lane forward, few-channel weight gradient
                {2, 5, 20, 20}, {32, 5, 3, 3}, {1, 1},     // 45 taps on 20-pixel rows: narrow weight tile
                {2, 3, 16, 16}, {16, 3, 3, 3}, {1, 1},     // 16x16 forward tile
                {2, 16, 8, 8}, {32, 16, 3, 3}, {1, 1},     // 8x32 tile, 48-tap weight tile
                {2, 64, 8, 8}, {16, 64, 3, 3}, {1, 1},     // 96-tap weight tile
                {2, 16, 16, 16}, {32, 16, 3, 3}, {2, 1},   // stride-2 input gradient, phases combined
                {2, 32, 16, 16}, {64, 32, 3, 3}, {2, 1},   // strided input gradient by phase
                {2, 8, 6, 32}, {16, 8, 3, 3}, {1, 1},      // row tiles over 32-pixel rows
                {2, 5, 13, 11}, {11, 5, 3, 3}, {1, 1},     // implicit GEMM, ragged tiles
                {4, 32, 4, 4}, {48, 32, 3, 3}, {1, 1},     // small images: one GEMM over the batch
                {2, 32, 8, 8}, {32, 32, 4, 4}, {2, 1},     // raster-order tiles, the 4x4 stride-2 input gradient by phases
                {2, 16, 4, 4}, {8, 16, 4, 4}, {1, 0},      // a whole-image kernel: matrix products
                {1, 3, 96, 96}, {32, 3, 7, 7}, {2, 3},     // 48-pixel rows of 8x32 tiles, their stores spread
                {2, 5, 14, 14}, {12, 5, 3, 3}, {1, 1},     // weight gradient with pixels in the lanes, gy staged
                {2, 16, 26, 26}, {32, 16, 3, 3}, {2, 1},   // 13-pixel rows: 8x32 tiles in raster order over the image
                {2, 64, 16, 16}, {64, 64, 4, 4}, {2, 1},   // DCGAN's 4x4 stride-2 weight gradient on 6x64 tiles
            };
            // Short-m products (four-row blocks, the masked column tail).
            try (Tensor a = Torch.randn(8, 64); Tensor b = Torch.randn(64, 200); Tensor c = a.matmul(b)) {
                c.sum().close();
            }
            // Linear layers at batch 3 (dot products of two rows, then one), depth with a tail.
            try (Tensor x = Torch.randn(3, 70); Tensor w = Torch.randn(9, 70); Tensor y = F.linear(x, w, null)) {
                y.sum().close();
            }
            // The same in float64, a float64 transposed copy, a flip (rows reversed as vectors), and two float64
            // convolutions: 64 output pixels (a narrow C, B's rows read in place) and 144 (the packed path).
            try (Tensor x = Torch.randn(3, 70).to(DType.FLOAT64); Tensor w = Torch.randn(9, 70).to(DType.FLOAT64);
                 Tensor y = F.linear(x, w, null); Tensor m = Torch.randn(20, 40).to(DType.FLOAT64);
                 Tensor t = m.t().contiguous(); Tensor f = x.flip(1);
                 Tensor img = Torch.randn(1, 3, 8, 8).to(DType.FLOAT64); Tensor cw = Torch.randn(4, 3, 3, 3).to(DType.FLOAT64);
                 Tensor conv = F.conv2d(img, cw, null, 1, 1); Tensor wide = Torch.randn(1, 3, 12, 12).to(DType.FLOAT64);
                 Tensor wideConv = F.conv2d(wide, cw, null, 1, 1)) {
                y.sum().close();
            }
            for (int i = 0; i < shapes.length; i += 3) {
                try (Tensor x = Torch.randn(shapes[i], DType.FLOAT32, Device.cpu(), Torch.manualSeed(1));
                     Tensor w = Torch.randn(shapes[i + 1], DType.FLOAT32, Device.cpu(), Torch.manualSeed(2))) {
                    x.requiresGrad_(true);
                    w.requiresGrad_(true);
                    int[] stride = {(int) shapes[i + 2][0]}, padding = {(int) shapes[i + 2][1]};
                    try (Tensor y = F.conv2d(x, w, null, stride, padding, new int[] {1}, 1); Tensor g = Torch.onesLike(y)) {
                        y.backward(g);
                    }
                }
            }
        }
    }
}
