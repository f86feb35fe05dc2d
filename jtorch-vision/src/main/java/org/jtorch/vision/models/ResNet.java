package org.jtorch.vision.models;

import org.jtorch.Tensor;
import org.jtorch.nn.AdaptiveAvgPool2d;
import org.jtorch.nn.BatchNorm2d;
import org.jtorch.nn.Conv2d;
import org.jtorch.nn.Init;
import org.jtorch.nn.Linear;
import org.jtorch.nn.MaxPool2d;
import org.jtorch.nn.Module;
import org.jtorch.nn.ReLU;
import org.jtorch.nn.Sequential;

/**
 * torchvision's ImageNet ResNets ({@code torchvision.models.resnet18/34/50}, He et al. 2015, with the
 * stride on the 3x3 convolution of bottlenecks, "ResNet v1.5"), with torchvision's module tree and
 * state-dict keys, registered in torchvision's order: {@code conv1} (7x7, stride 2), {@code bn1},
 * {@code relu}, {@code maxpool}, {@code layer1..layer4} of {@link BasicBlock}s or {@link Bottleneck}s
 * ({@code layerK.i.conv1}, {@code .bn1}, ..., and {@code .downsample.0} (1x1 convolution) /
 * {@code .downsample.1} (batch norm) where the shape changes), {@code avgpool} (adaptive) and
 * {@code fc}. {@code numClasses} and the input channels are configurable. Initialised as torchvision: convolutions {@code kaiming_normal_(fan_out, relu)},
 * batch norms weight 1 and bias 0, {@code fc} PyTorch's Linear default.
 * Parameter counts: resnet18 11,689,512; resnet34 21,797,672; resnet50 25,557,032 (1,000 classes).
 */
public class ResNet extends Module {
    // Children are not final: deepCopy points a copy's fields at its own children (Module#deepCopy).
    private Conv2d conv1;
    private BatchNorm2d bn1;
    private ReLU relu;
    private MaxPool2d maxpool;
    private Sequential[] layers = new Sequential[4];
    private AdaptiveAvgPool2d avgpool;
    private Linear fc;
    private int inPlanes = 64;

    public static ResNet resnet18() {
        return resnet18(1000, 3);
    }

    public static ResNet resnet18(int numClasses, int inChannels) {
        return new ResNet(false, new int[] {2, 2, 2, 2}, numClasses, inChannels);
    }

    public static ResNet resnet34() {
        return resnet34(1000, 3);
    }

    public static ResNet resnet34(int numClasses, int inChannels) {
        return new ResNet(false, new int[] {3, 4, 6, 3}, numClasses, inChannels);
    }

    public static ResNet resnet50() {
        return resnet50(1000, 3);
    }

    public static ResNet resnet50(int numClasses, int inChannels) {
        return new ResNet(true, new int[] {3, 4, 6, 3}, numClasses, inChannels);
    }

    /**
     * @param bottleneck {@link Bottleneck} blocks (expansion 4) instead of {@link BasicBlock}s
     * @param blocks the number of blocks in each of the four stages
     */
    public ResNet(boolean bottleneck, int[] blocks, int numClasses, int inChannels) {
        if (blocks.length != 4) throw new IllegalArgumentException("ResNet: expected 4 stage sizes, got " + blocks.length);
        conv1 = registerModule("conv1", new Conv2d(inChannels, 64, 7, Conv2d.options().stride(2).padding(3).bias(false)));
        bn1 = registerModule("bn1", new BatchNorm2d(64));
        relu = registerModule("relu", new ReLU());
        maxpool = registerModule("maxpool", new MaxPool2d(3, 2, 1));
        int[] planes = {64, 128, 256, 512};
        for (int s = 0; s < 4; s++) layers[s] = registerModule("layer" + (s + 1), makeLayer(bottleneck, planes[s], blocks[s], s == 0 ? 1 : 2));
        avgpool = registerModule("avgpool", new AdaptiveAvgPool2d(1, 1));
        int expansion = bottleneck ? Bottleneck.EXPANSION : 1;
        fc = registerModule("fc", new Linear(512L * expansion, numClasses));
        for (Module m : modules()) {
            if (m instanceof Conv2d c) Init.kaimingNormal_(c.weight(), 0, Init.FanMode.FAN_OUT, "relu");
        }
    }

    private Sequential makeLayer(boolean bottleneck, int planes, int blocks, int stride) {
        int expansion = bottleneck ? Bottleneck.EXPANSION : 1;
        Sequential downsample = null;
        if (stride != 1 || inPlanes != planes * expansion) {
            downsample = new Sequential(
                    new Conv2d(inPlanes, (long) planes * expansion, 1, Conv2d.options().stride(stride).bias(false)),
                    new BatchNorm2d((long) planes * expansion));
        }
        Sequential layer = new Sequential();
        layer.add(bottleneck ? new Bottleneck(inPlanes, planes, stride, downsample) : new BasicBlock(inPlanes, planes, stride, downsample));
        inPlanes = planes * expansion;
        for (int i = 1; i < blocks; i++) {
            layer.add(bottleneck ? new Bottleneck(inPlanes, planes, 1, null) : new BasicBlock(inPlanes, planes, 1, null));
        }
        return layer;
    }

    @Override
    public Tensor forward(Tensor x) {
        Tensor h = maxpool.forward(relu.forward(bn1.forward(conv1.forward(x))));
        for (Sequential layer : layers) h = layer.forward(h);
        return fc.forward(avgpool.forward(h).flatten(1, -1));
    }

    /** torchvision's {@code BasicBlock}: two 3x3 convolutions (the first with the stride), batch norm, shortcut. */
    public static class BasicBlock extends Module {
        private Conv2d conv1;
        private BatchNorm2d bn1;
        private Conv2d conv2;
        private BatchNorm2d bn2;
        private ReLU relu;
        private Sequential downsample;

        /** @param downsample the projection of the shortcut ({@code downsample.0} conv, {@code .1} batch norm), or null */
        public BasicBlock(int inPlanes, int planes, int stride, Sequential downsample) {
            conv1 = registerModule("conv1", new Conv2d(inPlanes, planes, 3, Conv2d.options().stride(stride).padding(1).bias(false)));
            bn1 = registerModule("bn1", new BatchNorm2d(planes));
            relu = registerModule("relu", new ReLU());
            conv2 = registerModule("conv2", new Conv2d(planes, planes, 3, Conv2d.options().padding(1).bias(false)));
            bn2 = registerModule("bn2", new BatchNorm2d(planes));
            this.downsample = downsample == null ? null : registerModule("downsample", downsample);
        }

        @Override
        public Tensor forward(Tensor x) {
            Tensor out = relu.forward(bn1.forward(conv1.forward(x)));
            out = bn2.forward(conv2.forward(out));
            Tensor identity = downsample == null ? x : downsample.forward(x);
            return relu.forward(out.add(identity));
        }
    }

    /** torchvision's {@code Bottleneck}: 1x1 reduce, 3x3 (with the stride), 1x1 expand by 4, shortcut. */
    public static class Bottleneck extends Module {
        public static final int EXPANSION = 4;
        private Conv2d conv1;
        private BatchNorm2d bn1;
        private Conv2d conv2;
        private BatchNorm2d bn2;
        private Conv2d conv3;
        private BatchNorm2d bn3;
        private ReLU relu;
        private Sequential downsample;

        public Bottleneck(int inPlanes, int planes, int stride, Sequential downsample) {
            conv1 = registerModule("conv1", new Conv2d(inPlanes, planes, 1, Conv2d.options().bias(false)));
            bn1 = registerModule("bn1", new BatchNorm2d(planes));
            conv2 = registerModule("conv2", new Conv2d(planes, planes, 3, Conv2d.options().stride(stride).padding(1).bias(false)));
            bn2 = registerModule("bn2", new BatchNorm2d(planes));
            conv3 = registerModule("conv3", new Conv2d(planes, (long) planes * EXPANSION, 1, Conv2d.options().bias(false)));
            bn3 = registerModule("bn3", new BatchNorm2d((long) planes * EXPANSION));
            relu = registerModule("relu", new ReLU());
            this.downsample = downsample == null ? null : registerModule("downsample", downsample);
        }

        @Override
        public Tensor forward(Tensor x) {
            Tensor out = relu.forward(bn1.forward(conv1.forward(x)));
            out = relu.forward(bn2.forward(conv2.forward(out)));
            out = bn3.forward(conv3.forward(out));
            Tensor identity = downsample == null ? x : downsample.forward(x);
            return relu.forward(out.add(identity));
        }
    }
}
