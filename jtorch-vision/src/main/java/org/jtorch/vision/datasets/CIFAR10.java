package org.jtorch.vision.datasets;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
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
 * CIFAR-10 (Krizhevsky, 2009): 32x32 colour images of 10 classes, 50,000 for training and 10,000 for
 * testing, read from the binary version ({@code cifar-10-binary.tar.gz} from
 * https://www.cs.toronto.edu/~kriz/cifar.html): {@code data_batch_1.bin} .. {@code data_batch_5.bin}
 * and {@code test_batch.bin}, each a sequence of records of 1 label byte and 3,072 pixel bytes (the red,
 * green and blue 32x32 planes). Files are looked for in {@code root} and {@code root/cifar-10-batches-bin}
 * (without a root: {@code $JTORCH_DATA/cifar10} or {@code .data/cifar10}).
 *
 * <p>Sample {@code i} is the image as a uint8 HWC tensor {@code [32, 32, 3]} (as torchvision, which
 * transposes the planes to HWC) and its class as a 0-d int64 tensor, through the optional
 * transforms. Everything is read into memory once; {@link #get} is thread-safe.
 */
public final class CIFAR10 extends VisionDataset {
    public static final List<String> CLASSES = List.of(
            "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck");
    /** A {@code Normalize} by the per-channel mean and standard deviation of the training pixels in [0, 1]. */
    public static Normalize normalize() {
        return new Normalize(new double[] {0.4914, 0.4822, 0.4465}, new double[] {0.2470, 0.2435, 0.2616});
    }

    private static final int PIXELS = 32 * 32 * 3;
    private static final int RECORD = 1 + PIXELS;

    private final boolean train;
    private final byte[] pixels;   // HWC, image after image
    private final byte[] labels;
    private final int count;

    public CIFAR10(boolean train) {
        this(null, train, null, null);
    }

    public CIFAR10(Path root, boolean train, Transform transform, Transform targetTransform) {
        super(transform, targetTransform);
        this.train = train;
        List<String> files = new ArrayList<>();
        if (train) for (int b = 1; b <= 5; b++) files.add("data_batch_" + b + ".bin");
        else files.add("test_batch.bin");
        Path dir = locate(root, files.get(0));
        try {
            List<byte[]> blobs = new ArrayList<>();
            long total = 0;
            for (String f : files) {
                Path p = dir.resolve(f);
                if (!Files.isRegularFile(p)) throw new NoSuchFileException(p.toString());
                byte[] b = Files.readAllBytes(p);
                if (b.length % RECORD != 0) {
                    throw new IOException(p + ": " + b.length + " bytes is not a whole number of " + RECORD + "-byte records");
                }
                blobs.add(b);
                total += b.length / RECORD;
            }
            count = Math.toIntExact(total);
            pixels = new byte[count * PIXELS];
            labels = new byte[count];
            int i = 0;
            for (byte[] b : blobs) {
                for (int r = 0; r < b.length / RECORD; r++, i++) {
                    int src = r * RECORD;
                    labels[i] = b[src];
                    if ((b[src] & 0xff) > 9) throw new IOException(dir + ": record " + i + " has label " + (b[src] & 0xff) + " (expected 0..9)");
                    int dst = i * PIXELS;
                    for (int p = 0; p < 1024; p++) {   // CHW planes -> HWC
                        pixels[dst + 3 * p] = b[src + 1 + p];
                        pixels[dst + 3 * p + 1] = b[src + 1 + 1024 + p];
                        pixels[dst + 3 * p + 2] = b[src + 1 + 2048 + p];
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("CIFAR10: cannot read " + dir + ": " + e.getMessage(), e);
        }
    }

    private static Path locate(Path root, String probe) {
        List<Path> dirs = new ArrayList<>();
        if (root != null) {
            dirs.add(root);
            dirs.add(root.resolve("cifar-10-batches-bin"));
        } else {
            for (Path base : DataRoot.candidates()) {
                dirs.add(base.resolve("cifar10"));
                dirs.add(base.resolve("cifar10").resolve("cifar-10-batches-bin"));
            }
        }
        List<Path> tried = new ArrayList<>();
        for (Path d : dirs) {
            if (Files.isRegularFile(d.resolve(probe))) return d;
            tried.add(d.toAbsolutePath().normalize());
        }
        throw new UncheckedIOException("CIFAR10: " + probe + " not found; looked in " + tried
                + ". Download the binary version (cifar-10-binary.tar.gz) from https://www.cs.toronto.edu/~kriz/cifar.html"
                + " and extract it into .data/cifar10 (or pass its directory as root)", new NoSuchFileException(probe));
    }

    public boolean isTrain() {
        return train;
    }

    public List<String> classes() {
        return CLASSES;
    }

    @Override
    public int size() {
        return count;
    }

    @Override
    public Sample get(int index) {
        checkIndex(index);
        return sample(Images.uint8(pixels, index * PIXELS, 32, 32, 3), Torch.scalar((long) (labels[index] & 0xff)));
    }

    /** All images as a new uint8 tensor {@code [n, 32, 32, 3]} (torchvision's {@code .data}); the caller owns it. */
    public Tensor data() {
        return Images.uint8(pixels, 0, count, 32, 32, 3);
    }

    /** All labels as a new int64 tensor {@code [n]}; the caller owns it. */
    public Tensor targets() {
        long[] y = new long[count];
        for (int i = 0; i < count; i++) y[i] = labels[i] & 0xff;
        return Torch.tensor(y);
    }
}
