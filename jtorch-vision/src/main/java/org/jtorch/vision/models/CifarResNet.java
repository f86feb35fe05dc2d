package org.jtorch.vision.models;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.BatchNorm2d;
import org.jtorch.nn.Conv2d;
import org.jtorch.nn.F;
import org.jtorch.nn.Init;
import org.jtorch.nn.Linear;
import org.jtorch.nn.Module;
import org.jtorch.nn.Sequential;

/**
 * The CIFAR-10 ResNets of He et al. 2015 ("Deep Residual Learning for Image Recognition", section
 * 4.2): depth {@code 6n + 2} (ResNet-20, 32, 56 for n = 3, 5, 9) on 32x32 inputs: a 3x3 convolution to
 * 16 channels, then three stages of n basic blocks with 16, 32 and 64 channels (the second and third
 * halve the resolution), global average pooling and a linear classifier.
 *
 * <p>Shortcuts are the paper's option A: identity, and where a block halves the resolution and doubles
 * the channels, the input subsampled by 2 ({@code x[:, :, ::2, ::2]}) and zero-padded with
 * {@code planes / 4} channels on each side, so the model has no projection parameters (0.27M for
 * ResNet-20). State-dict keys follow torchvision's ResNet: {@code conv1.weight}, {@code bn1.*},
 * {@code layer1.0.conv1.weight}, {@code layer1.0.bn1.*}, ..., {@code fc.weight}, {@code fc.bias}.
 * Convolutions and the classifier are initialised with {@code kaiming_normal_} (fan in), as the widely
 * used reference implementation (Y. Idelbayev, pytorch_resnet_cifar10).
 */
public class CifarResNet extends Module {
    // Children are not final: deepCopy points a copy's fields at its own children (Module#deepCopy).
    private Conv2d conv1;
    private BatchNorm2d bn1;
    private Sequential[] layers = new Sequential[3];
    private Linear fc;

    public static CifarResNet resnet20(int numClasses) {
        return new CifarResNet(20, numClasses, 3);
    }

    public static CifarResNet resnet32(int numClasses) {
        return new CifarResNet(32, numClasses, 3);
    }

    public static CifarResNet resnet56(int numClasses) {
        return new CifarResNet(56, numClasses, 3);
    }

    /** @param depth 6n + 2 (20, 32, 44, 56, 110, ...) */
    public CifarResNet(int depth, int numClasses, int inChannels) {
        if (depth < 8 || (depth - 2) % 6 != 0) throw new IllegalArgumentException("CifarResNet: depth must be 6n + 2 (20, 32, 56, ...), got " + depth);
        int n = (depth - 2) / 6;
        conv1 = registerModule("conv1", new Conv2d(inChannels, 16, 3, Conv2d.options().padding(1).bias(false)));
        bn1 = registerModule("bn1", new BatchNorm2d(16));
        int inPlanes = 16;
        int[] planes = {16, 32, 64};
        for (int s = 0; s < 3; s++) {
            Sequential stage = new Sequential();
            for (int b = 0; b < n; b++) {
                int stride = s > 0 && b == 0 ? 2 : 1;
                stage.add(new BasicBlock(inPlanes, planes[s], stride));
                inPlanes = planes[s];
            }
            layers[s] = registerModule("layer" + (s + 1), stage);
        }
        fc = registerModule("fc", new Linear(64, numClasses));
        for (Module m : modules()) {
            if (m instanceof Conv2d c) Init.kaimingNormal_(c.weight(), 0, Init.FanMode.FAN_IN, "relu");
        }
        Init.kaimingNormal_(fc.weight(), 0, Init.FanMode.FAN_IN, "relu");
    }

    @Override
    public Tensor forward(Tensor x) {
        Tensor h = F.relu(bn1.forward(conv1.forward(x)));
        for (Sequential stage : layers) h = stage.forward(h);
        return fc.forward(h.mean(new int[] {2, 3}, false));
    }

    /** Two 3x3 convolutions with batch norm and an option-A shortcut. */
    public static class BasicBlock extends Module {
        private Conv2d conv1;
        private BatchNorm2d bn1;
        private Conv2d conv2;
        private BatchNorm2d bn2;
        private final int padChannels;   // 0: identity shortcut

        public BasicBlock(int inPlanes, int planes, int stride) {
            conv1 = registerModule("conv1", new Conv2d(inPlanes, planes, 3, Conv2d.options().stride(stride).padding(1).bias(false)));
            bn1 = registerModule("bn1", new BatchNorm2d(planes));
            conv2 = registerModule("conv2", new Conv2d(planes, planes, 3, Conv2d.options().padding(1).bias(false)));
            bn2 = registerModule("bn2", new BatchNorm2d(planes));
            if (stride != 1 || inPlanes != planes) {
                if (stride != 2 || planes != inPlanes + 2 * (planes / 4)) {
                    throw new IllegalArgumentException("CifarResNet.BasicBlock: option A shortcut needs stride 2 and planes = 2 * inPlanes, got "
                            + inPlanes + " -> " + planes + " with stride " + stride);
                }
                padChannels = planes / 4;
            } else {
                padChannels = 0;
            }
        }

        @Override
        public Tensor forward(Tensor x) {
            Tensor out = F.relu(bn1.forward(conv1.forward(x)));
            out = bn2.forward(conv2.forward(out));
            return F.relu(out.add(shortcut(x)));
        }

        private Tensor shortcut(Tensor x) {
            if (padChannels == 0) return x;
            Tensor sub = x.slice(2, 0, x.size(2), 2).slice(3, 0, x.size(3), 2);
            long[] padShape = sub.shape().clone();
            padShape[1] = padChannels;
            Tensor zeros = Torch.zeros(padShape, x.dtype(), x.device());
            return Torch.cat(new Tensor[] {zeros, sub, zeros}, 1);
        }
    }
}
