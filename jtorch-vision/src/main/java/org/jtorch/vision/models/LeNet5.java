package org.jtorch.vision.models;

import org.jtorch.Tensor;
import org.jtorch.nn.Conv2d;
import org.jtorch.nn.F;
import org.jtorch.nn.Linear;
import org.jtorch.nn.MaxPool2d;
import org.jtorch.nn.Module;

/**
 * LeNet-5 (LeCun et al. 1998) in the form commonly trained on MNIST: for {@code [N, C, 28, 28]} inputs
 * the first convolution pads by 2, so the classic 32x32 geometry follows:
 * <pre>
 * conv1  C -> 6, 5x5, padding 2   [6, 28, 28]   ReLU, max pool 2   [6, 14, 14]
 * conv2  6 -> 16, 5x5             [16, 10, 10]  ReLU, max pool 2   [16, 5, 5]
 * fc1    400 -> 120, ReLU;  fc2  120 -> 84, ReLU;  fc3  84 -> numClasses
 * </pre>
 * ReLU and max pooling replace the original's scaled tanh and trainable subsampling, as in most
 * modern implementations. State-dict keys: {@code conv1.*, conv2.*, fc1.*, fc2.*, fc3.*} (weight and
 * bias each); parameters keep PyTorch's default initialisation. 61,706 parameters for 10 classes.
 */
public class LeNet5 extends Module {
    // Children are not final: deepCopy points a copy's fields at its own children (Module#deepCopy).
    private Conv2d conv1;
    private Conv2d conv2;
    private MaxPool2d pool = new MaxPool2d(2);
    private Linear fc1;
    private Linear fc2;
    private Linear fc3;

    /** Ten classes, one input channel (MNIST). */
    public LeNet5() {
        this(10, 1);
    }

    public LeNet5(int numClasses, int inChannels) {
        conv1 = registerModule("conv1", new Conv2d(inChannels, 6, 5, Conv2d.options().padding(2)));
        conv2 = registerModule("conv2", new Conv2d(6, 16, 5));
        fc1 = registerModule("fc1", new Linear(16 * 5 * 5, 120));
        fc2 = registerModule("fc2", new Linear(120, 84));
        fc3 = registerModule("fc3", new Linear(84, numClasses));
    }

    @Override
    public Tensor forward(Tensor x) {
        Tensor h = pool.forward(F.relu(conv1.forward(x)));
        h = pool.forward(F.relu(conv2.forward(h)));
        h = h.flatten(1, -1);
        h = F.relu(fc1.forward(h));
        h = F.relu(fc2.forward(h));
        return fc3.forward(h);
    }
}
