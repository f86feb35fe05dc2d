package org.jtorch.examples;

import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import org.jtorch.data.Dataset;
import org.jtorch.data.Sample;
import org.jtorch.data.Subset;
import org.jtorch.vision.datasets.Digits;
import org.jtorch.vision.datasets.FashionMNIST;
import org.jtorch.vision.datasets.MNIST;
import org.jtorch.vision.transforms.Compose;
import org.jtorch.vision.transforms.Resize;
import org.jtorch.vision.transforms.ToTensor;
import org.jtorch.vision.transforms.Transform;

/**
 * The image data of the MNIST-shaped examples: MNIST or Fashion-MNIST from {@code .data} (see
 * {@code scripts/fetch-data}), or the bundled 8x8 digits upsampled to the examples' size, which needs no
 * download (CI and machines without the data). A missing MNIST falls back to the digits with a note.
 */
public final class ImageData {
    public static final List<String> DATASETS = List.of("mnist", "fashion-mnist", "digits");

    /** The two splits, and the name of the data actually used. */
    public record Split(Dataset<Sample> train, Dataset<Sample> test, String name) {}

    private ImageData() {}

    /**
     * Loads {@code dataset} as float {@code [1, size, size]} images (ToTensor, then {@code normalize} if
     * not null), keeping the first {@code limitTrain}/{@code limitTest} samples when those are positive.
     */
    public static Split load(String dataset, int size, Transform normalize, int limitTrain, int limitTest, PrintStream out) {
        if (!DATASETS.contains(dataset)) throw new IllegalArgumentException("unknown dataset '" + dataset + "'; expected one of " + DATASETS);
        Split split;
        if (!dataset.equals("digits")) {
            try {
                Compose transform = transforms(size == 28 ? null : new Resize(size), null, normalize);
                split = dataset.equals("fashion-mnist")
                        ? new Split(new FashionMNIST(null, true, transform, null), new FashionMNIST(null, false, transform, null), "Fashion-MNIST")
                        : new Split(new MNIST(null, true, transform, null), new MNIST(null, false, transform, null), "MNIST");
                return new Split(limit(split.train(), limitTrain), limit(split.test(), limitTest), split.name());
            } catch (UncheckedIOException e) {
                out.println("note: " + e.getMessage());
                out.println("note: using the bundled digits (1,797 8x8 images, upsampled to " + size + "x" + size + ") instead");
            }
        }
        // The digits are float HWC images, which Resize takes only after ToTensor (bilinear on the tensor).
        Compose transform = transforms(null, new Resize(size), normalize);
        split = new Split(new Digits(true, transform, null), new Digits(false, transform, null), "digits");
        return new Split(limit(split.train(), limitTrain), limit(split.test(), limitTest), split.name());
    }

    private static Compose transforms(Transform beforeToTensor, Transform afterToTensor, Transform normalize) {
        List<Transform> ts = new ArrayList<>();
        if (beforeToTensor != null) ts.add(beforeToTensor);
        ts.add(new ToTensor());
        if (afterToTensor != null) ts.add(afterToTensor);
        if (normalize != null) ts.add(normalize);
        return new Compose(ts);
    }

    private static Dataset<Sample> limit(Dataset<Sample> d, int n) {
        if (n <= 0 || n >= d.size()) return d;
        int[] idx = new int[n];
        for (int i = 0; i < n; i++) idx[i] = i;
        return new Subset<>(d, idx);
    }
}
