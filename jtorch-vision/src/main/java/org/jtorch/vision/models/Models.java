package org.jtorch.vision.models;

import java.util.List;
import java.util.Locale;
import org.jtorch.nn.Module;

/** The model zoo by name, for command lines and configuration files. */
public final class Models {
    private Models() {}

    /** The names {@link #create} accepts. */
    public static final List<String> NAMES = List.of("lenet5", "resnet20", "resnet32", "resnet56", "resnet18", "resnet34", "resnet50");

    /** A freshly initialised model; CIFAR ResNets expect 32x32 inputs, LeNet5 28x28. */
    public static Module create(String name, int numClasses, int inChannels) {
        return switch (name.toLowerCase(Locale.ROOT)) {
            case "lenet5", "lenet" -> new LeNet5(numClasses, inChannels);
            case "resnet20" -> new CifarResNet(20, numClasses, inChannels);
            case "resnet32" -> new CifarResNet(32, numClasses, inChannels);
            case "resnet56" -> new CifarResNet(56, numClasses, inChannels);
            case "resnet18" -> ResNet.resnet18(numClasses, inChannels);
            case "resnet34" -> ResNet.resnet34(numClasses, inChannels);
            case "resnet50" -> ResNet.resnet50(numClasses, inChannels);
            default -> throw new IllegalArgumentException("Models: unknown model '" + name + "' (known: " + String.join(", ", NAMES) + ")");
        };
    }
}
