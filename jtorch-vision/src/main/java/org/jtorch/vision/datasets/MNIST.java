package org.jtorch.vision.datasets;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.data.Sample;
import org.jtorch.vision.Images;
import org.jtorch.vision.transforms.Normalize;
import org.jtorch.vision.transforms.Transform;

/**
 * The MNIST handwritten digits (60,000 training and 10,000 test images of 28x28 grey pixels), as
 * {@code torchvision.datasets.MNIST}: sample {@code i} is the image as a uint8 HWC tensor
 * {@code [28, 28, 1]} (apply {@link org.jtorch.vision.transforms.ToTensor} for float {@code [1, 28, 28]}
 * in [0, 1]) and its class as a 0-d int64 tensor, each through the optional transforms.
 *
 * <p>The four IDX files ({@code train-images-idx3-ubyte}, {@code train-labels-idx1-ubyte},
 * {@code t10k-images-idx3-ubyte}, {@code t10k-labels-idx1-ubyte}, raw or {@code .gz}) are looked for in
 * {@code root}, {@code root/mnist} and torchvision's {@code root/MNIST/raw}; without a root, in
 * {@code $JTORCH_DATA/mnist} or {@code .data/mnist}, where {@code scripts/fetch-data mnist} puts them.
 * All images are read into memory once; {@link #get} is thread-safe.
 */
public class MNIST extends VisionDataset {
    public static final List<String> CLASSES = List.of(
            "0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven", "8 - eight", "9 - nine");
    /** A {@code Normalize} by the mean and standard deviation of the training pixels in [0, 1]. */
    public static Normalize normalize() {
        return new Normalize(new double[] {0.1307}, new double[] {0.3081});
    }

    private final boolean train;
    private final byte[] pixels;
    private final byte[] labels;
    private final int count;
    private final int rows;
    private final int cols;

    /** The split {@code train} (else test) from the default data directory, without transforms. */
    public MNIST(boolean train) {
        this(null, train, null, null);
    }

    /** The split {@code train} (else test) from the default data directory. */
    public MNIST(boolean train, Transform transform) {
        this(null, train, transform, null);
    }

    /**
     * @param root the directory holding the IDX files (or its parent), or null for the default data directory
     * @param transform applied to each uint8 HWC image, or null
     * @param targetTransform applied to each 0-d int64 label, or null
     */
    public MNIST(Path root, boolean train, Transform transform, Transform targetTransform) {
        this(root, train, transform, targetTransform, "mnist", "MNIST");
    }

    protected MNIST(Path root, boolean train, Transform transform, Transform targetTransform, String dirName, String torchvisionName) {
        super(transform, targetTransform);
        this.train = train;
        String prefix = train ? "train" : "t10k";
        Path dir = locate(root, dirName, torchvisionName, prefix + "-images-idx3-ubyte");
        try {
            Idx.UByteArray images = Idx.read(dir.resolve(prefix + "-images-idx3-ubyte"));
            Idx.UByteArray targets = Idx.read(dir.resolve(prefix + "-labels-idx1-ubyte"));
            if (images.shape().length != 3) throw new IOException(dir + ": " + prefix + "-images-idx3-ubyte has " + images.shape().length + " dimensions, expected 3");
            if (targets.shape().length != 1) throw new IOException(dir + ": " + prefix + "-labels-idx1-ubyte has " + targets.shape().length + " dimensions, expected 1");
            if (images.size(0) != targets.size(0)) {
                throw new IOException(dir + ": " + images.size(0) + " images but " + targets.size(0) + " labels");
            }
            this.pixels = images.data();
            this.labels = targets.data();
            this.count = images.size(0);
            this.rows = images.size(1);
            this.cols = images.size(2);
        } catch (IOException e) {
            throw new UncheckedIOException(getClass().getSimpleName() + ": cannot read " + dir + ": " + e.getMessage(), e);
        }
    }

    private Path locate(Path root, String dirName, String torchvisionName, String probe) {
        List<Path> tried = new ArrayList<>();
        if (root != null) {
            for (Path d : new Path[] {root, root.resolve(dirName), root.resolve(torchvisionName).resolve("raw")}) {
                if (Idx.locate(d.resolve(probe)) != null) return d;
                tried.add(d.toAbsolutePath().normalize());
            }
        } else {
            for (Path base : DataRoot.candidates()) {
                Path d = base.resolve(dirName);
                if (Idx.locate(d.resolve(probe)) != null) return d;
                tried.add(d.toAbsolutePath().normalize());
            }
        }
        String message = getClass().getSimpleName() + ": " + probe + " (or .gz) not found; looked in " + tried
                + ". Get the data with scripts/fetch-data " + dirName + " (it writes .data/" + dirName + "; set JTORCH_DATA to use another directory)";
        throw new UncheckedIOException(message, new NoSuchFileException(probe));
    }

    public boolean isTrain() {
        return train;
    }

    @Override
    public int size() {
        return count;
    }

    public List<String> classes() {
        return CLASSES;
    }

    @Override
    public Sample get(int index) {
        checkIndex(index);
        int n = rows * cols;
        return sample(Images.uint8(pixels, index * n, rows, cols, 1), Torch.scalar((long) (labels[index] & 0xff)));
    }

    /** All images as a new uint8 tensor {@code [n, rows, cols]} (torchvision's {@code .data}); the caller owns it. */
    public Tensor data() {
        return Images.uint8(pixels, 0, count, rows, cols);
    }

    /** All labels as a new int64 tensor {@code [n]} (torchvision's {@code .targets}); the caller owns it. */
    public Tensor targets() {
        long[] y = new long[count];
        for (int i = 0; i < count; i++) y[i] = labels[i] & 0xff;
        return Torch.tensor(y);
    }
}
