package org.jtorch.backend.cpu;

import static org.jtorch.backend.cpu.SeparateConversionBits.assertSameBits;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import jdk.incubator.vector.FloatVector;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.backend.ConvolutionKernels.Geometry;
import org.jtorch.nn.F;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * bfloat16 convolutions (as autocast runs them) whose kernels read the bfloat16 input or gradOut themselves, widening
 * while they pad each image channels-last or transpose gy ({@link ConvF32#padChannelsLast}: Winograd's forward and input
 * gradient, the direct weight gradient),
 * against the separate-conversion path: the same operands widened to float32, the float32 convolution and its
 * backward, and the results rounded to bfloat16 once. Bit for bit: the float32 kernels run on the same floats (widening
 * is exact). Odd map sizes (pixel blocks that cross image rows, channel blocks with a pixel tail), paddings 0-2, single
 * images, both Winograd tile sizes, and strided shapes that keep the float32 copy.
 */
class ConvolutionBf16OperandsTest {
    private static final Generator GEN = new Generator(24);
    private static final CpuConvolutionKernels KERNELS = new CpuConvolutionKernels();
    private String winogradBefore;

    @BeforeEach
    void needs512BitVectors() {
        assumeTrue(FloatVector.SPECIES_PREFERRED.length() == 16, "the Winograd path needs 16 float lanes");
        winogradBefore = System.getProperty("jtorch.conv.winograd");
    }

    @AfterEach
    void restoreTheSwitch() {
        if (winogradBefore == null) System.clearProperty("jtorch.conv.winograd");
        else System.setProperty("jtorch.conv.winograd", winogradBefore);
    }

    private static Geometry geometry(int n, int cin, int h, int w, int cout, int stride, int pad) {
        return new Geometry(n, cin, h, w, cout, 3, 3, stride, stride, pad, pad, 1, 1, 1,
                (h + 2 * pad - 3) / stride + 1, (w + 2 * pad - 3) / stride + 1);
    }

    /** Forward, input, weight and bias gradients of a 3x3 convolution with bfloat16 operands, against the separate conversion. */
    private static void check(int n, int cin, int h, int w, int cout, int stride, int pad) {
        String name = "[" + n + ", " + cin + ", " + h + ", " + w + "] -> " + cout + " stride " + stride + " pad " + pad;
        Geometry g = geometry(n, cin, h, w, cout, stride, pad);
        Tensor x = Torch.randn(new long[] {n, cin, h, w}, DType.FLOAT32, Device.cpu(), GEN).to(DType.BFLOAT16);
        Tensor wt = Torch.randn(new long[] {cout, cin, 3, 3}, DType.FLOAT32, Device.cpu(), GEN).mul(0.2f).to(DType.BFLOAT16);
        Tensor b = Torch.randn(new long[] {cout}, DType.FLOAT32, Device.cpu(), GEN).to(DType.BFLOAT16);
        Tensor gy = Torch.randn(new long[] {n, cout, g.oh(), g.ow()}, DType.FLOAT32, Device.cpu(), GEN).to(DType.BFLOAT16);
        Tensor[] separate = run(x.to(DType.FLOAT32), wt.to(DType.FLOAT32), b.to(DType.FLOAT32), gy.to(DType.FLOAT32), stride, pad);
        Tensor[] inKernels = run(x, wt, b, gy, stride, pad);
        String[] names = {"output", "grad input", "grad weight", "grad bias"};
        for (int i = 0; i < names.length; i++) assertSameBits(separate[i].to(DType.BFLOAT16), inKernels[i], name + " " + names[i]);
    }

    private static Tensor[] run(Tensor x, Tensor w, Tensor b, Tensor gy, int stride, int pad) {
        Tensor xr = x.clone().requiresGrad_(true), wr = w.clone().requiresGrad_(true), br = b.clone().requiresGrad_(true);
        Tensor y = F.conv2d(xr, wr, br, stride, pad);
        Tensor[] grads = Autograd.grad(new Tensor[] {y}, new Tensor[] {xr, wr, br}, new Tensor[] {gy}, false, false, false);
        return new Tensor[] {y.detach(), grads[0], grads[1], grads[2]};
    }

    @Test
    void winogradReadingBf16EqualsSeparateConversionBitForBit() {
        // The default setting: ResNet-20's 32 channels at 16 px and 64 at 8 px (forward on F(4x4, 3x3), input gradient
        // on F(2x2, 3x3)), its 16 at 32 px (input gradient on F(4x4, 3x3)); odd maps and a single image.
        System.clearProperty("jtorch.conv.winograd");
        assertTrue(KERNELS.convReadsBf16Input(geometry(4, 32, 16, 16, 32, 1, 1)));
        assertTrue(KERNELS.inputGradReadsBf16GradOut(geometry(4, 32, 16, 16, 32, 1, 1)));
        assertTrue(KERNELS.inputGradReadsBf16GradOut(geometry(2, 16, 32, 32, 16, 1, 1)));
        check(4, 32, 16, 16, 32, 1, 1);
        check(5, 64, 8, 8, 64, 1, 1);
        check(2, 16, 32, 32, 16, 1, 1);
        check(3, 32, 13, 11, 48, 1, 1);
        check(1, 48, 9, 15, 32, 1, 2);
        check(2, 32, 18, 7, 32, 1, 0);
        check(1, 16, 35, 33, 16, 1, 1);
        // Fully on: every fitting shape, both on F(4x4, 3x3).
        System.setProperty("jtorch.conv.winograd", "true");
        assertTrue(KERNELS.convReadsBf16Input(geometry(2, 16, 7, 9, 32, 1, 2)));
        check(2, 16, 7, 9, 32, 1, 2);
        check(3, 32, 5, 21, 16, 1, 0);
        check(1, 16, 17, 3, 16, 1, 1);
    }

    @Test
    void directWeightGradReadingBf16EqualsSeparateConversionBitForBit() {
        System.clearProperty("jtorch.conv.winograd");
        // ResNet-20's 3x3 layers, its stride-2 transition, and odd shapes: pixel passes with tails, channels under a
        // vector (element by element), output channels of one 8-row tile, several images a pass.
        assertTrue(KERNELS.weightGradReadsBf16(geometry(2, 16, 32, 32, 16, 1, 1)));
        assertTrue(KERNELS.weightGradReadsBf16(geometry(4, 16, 32, 32, 32, 2, 1)));
        assertTrue(KERNELS.weightGradReadsBf16(geometry(3, 64, 8, 8, 64, 1, 1)));
        assertTrue(KERNELS.weightGradReadsBf16(geometry(2, 21, 9, 7, 8, 1, 2)));
        check(2, 16, 32, 32, 16, 1, 1);
        check(4, 16, 32, 32, 32, 2, 1);
        check(3, 64, 8, 8, 64, 1, 1);
        check(2, 21, 9, 7, 8, 1, 2);
        check(5, 32, 6, 5, 24, 1, 0);
        check(1, 48, 19, 13, 16, 2, 1);
    }

    @Test
    void pathsThatDoNotReadBf16KeepTheFloat32Copy() {
        System.clearProperty("jtorch.conv.winograd");
        assertFalse(KERNELS.convReadsBf16Input(geometry(4, 16, 16, 16, 32, 2, 1)));
        assertFalse(KERNELS.inputGradReadsBf16GradOut(geometry(4, 16, 16, 16, 32, 2, 1)));
        assertFalse(KERNELS.convReadsBf16Input(geometry(2, 3, 32, 32, 16, 1, 1)));
        assertFalse(KERNELS.weightGradReadsBf16(geometry(2, 3, 32, 32, 16, 1, 1)));
        check(4, 16, 16, 16, 32, 2, 1);
        check(2, 3, 32, 32, 16, 1, 1);
        check(3, 16, 11, 9, 16, 1, 1);
    }
}
