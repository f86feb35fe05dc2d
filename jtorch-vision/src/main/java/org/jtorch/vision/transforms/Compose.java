package org.jtorch.vision.transforms;

import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.vision.Images;

/**
 * {@code torchvision.transforms.Compose}: applies the transforms in order. Intermediate results are
 * closed; the input is not.
 */
public final class Compose implements Transform {
    private final List<Transform> transforms;

    public Compose(Transform... transforms) {
        this(List.of(transforms));
    }

    public Compose(List<Transform> transforms) {
        this.transforms = List.copyOf(transforms);
    }

    public List<Transform> transforms() {
        return transforms;
    }

    @Override
    public Tensor apply(Tensor img) {
        Tensor x = img;
        for (Transform t : transforms) {
            Tensor y = t.apply(x);
            if (x != img && y != x) x.close();
            x = y;
        }
        if (x != img) return x;
        return Images.isHwcImage(img) ? Images.asHwcImage(img.alias()) : img.alias();
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("Compose(");
        for (Transform t : transforms) sb.append("\n    ").append(t);
        return sb.append("\n)").toString();
    }
}
