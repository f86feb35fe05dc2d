package org.jtorch.vision.datasets;

import java.nio.file.Path;
import java.util.List;
import org.jtorch.vision.transforms.Normalize;
import org.jtorch.vision.transforms.Transform;

/**
 * Zalando's Fashion-MNIST (Xiao, Rasul and Vollgraf, 2017): 28x28 grey images of 10 kinds of clothing
 * in MNIST's IDX format, as {@code torchvision.datasets.FashionMNIST}. Files are looked for as in
 * {@link MNIST}, under {@code fashion-mnist} ({@code scripts/fetch-data fashion-mnist}) or torchvision's
 * {@code FashionMNIST/raw}.
 */
public class FashionMNIST extends MNIST {
    public static final List<String> CLASSES = List.of(
            "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot");
    /** A {@code Normalize} by the mean and standard deviation of the training pixels in [0, 1]. */
    public static Normalize normalize() {
        return new Normalize(new double[] {0.2860}, new double[] {0.3530});
    }

    public FashionMNIST(boolean train) {
        this(null, train, null, null);
    }

    public FashionMNIST(boolean train, Transform transform) {
        this(null, train, transform, null);
    }

    public FashionMNIST(Path root, boolean train, Transform transform, Transform targetTransform) {
        super(root, train, transform, targetTransform, "fashion-mnist", "FashionMNIST");
    }

    @Override
    public List<String> classes() {
        return CLASSES;
    }
}
