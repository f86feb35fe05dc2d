package org.jtorch.vision.datasets;

import org.jtorch.Tensor;
import org.jtorch.data.Dataset;
import org.jtorch.data.Sample;
import org.jtorch.vision.Images;
import org.jtorch.vision.transforms.Transform;

/**
 * The common part of image datasets, as {@code torchvision.datasets.VisionDataset}: an optional
 * {@code transform} applied to each image and {@code targetTransform} to each target. Each
 * {@link #get} builds new tensors that the caller owns, so concurrent calls are safe as long as the
 * transforms are (those in {@link org.jtorch.vision.transforms} are).
 */
public abstract class VisionDataset implements Dataset<Sample> {
    private final Transform transform;
    private final Transform targetTransform;

    protected VisionDataset(Transform transform, Transform targetTransform) {
        this.transform = transform;
        this.targetTransform = targetTransform;
    }

    /** The image transform, or null. */
    public Transform transform() {
        return transform;
    }

    /** The target transform, or null. */
    public Transform targetTransform() {
        return targetTransform;
    }

    /**
     * Applies the transforms to a freshly built image and target (which this method owns and closes when
     * replaced). The image, HWC, is marked as such ({@link Images#asHwcImage}) so that the transforms treat it
     * as torchvision treats a PIL image.
     */
    protected final Sample sample(Tensor image, Tensor target) {
        if (image.dim() == 3) Images.asHwcImage(image);
        return new Sample(apply(transform, image), apply(targetTransform, target));
    }

    /** Checks {@code 0 <= index < size()} with a message naming the dataset. */
    protected final void checkIndex(int index) {
        if (index < 0 || index >= size()) {
            throw new IndexOutOfBoundsException(getClass().getSimpleName() + ": index " + index + " is out of range for " + size() + " samples");
        }
    }

    private static Tensor apply(Transform t, Tensor x) {
        if (t == null) return x;
        Tensor y = t.apply(x);
        if (y != x) x.close();   // a view returned by the transform keeps the storage alive
        return y;
    }
}
