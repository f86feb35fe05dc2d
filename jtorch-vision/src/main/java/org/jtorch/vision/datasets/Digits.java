package org.jtorch.vision.datasets;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.zip.GZIPInputStream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.data.Sample;
import org.jtorch.vision.transforms.Normalize;
import org.jtorch.vision.transforms.Transform;

/**
 * The UCI "Optical Recognition of Handwritten Digits" set as scikit-learn's {@code load_digits}: 1,797
 * images of 8x8 pixels with values 0..16 and their digit class. Bundled with jtorch-vision (CC BY 4.0,
 * E. Alpaydin and C. Kaynak; see {@code README.md} beside the data), so it needs no download.
 *
 * <p>Sample {@code i} is the image as a float32 HWC tensor {@code [8, 8, 1]} with values
 * {@code pixel / 16} in [0, 1] (so {@link org.jtorch.vision.transforms.ToTensor} turns it into
 * {@code [1, 8, 8]} without rescaling, as torchvision's ToTensor does for float arrays) and its class
 * as a 0-d int64 tensor.
 *
 * <p>The set has no official train/test split; {@link #Digits(boolean, Transform, Transform)} offers a
 * fixed one: every fifth image (file rows 4, 9, 14, ...) is a test image (359), the others train
 * (1,438), so both parts mix all writers and classes.
 */
public final class Digits extends VisionDataset {
    /** The number of images in the whole set. */
    public static final int SIZE = 1797;
    private static final String RESOURCE = "digits.csv.gz";

    private final float[] pixels;   // the selected rows, 64 values each
    private final long[] labels;

    /** A {@code Normalize} by the mean and standard deviation of all pixels in [0, 1]. */
    public static Normalize normalize() {
        return new Normalize(new double[] {0.3053}, new double[] {0.3760});
    }

    /** All 1,797 images, without transforms. */
    public Digits() {
        this(null, null);
    }

    /** All 1,797 images. */
    public Digits(Transform transform, Transform targetTransform) {
        super(transform, targetTransform);
        float[] px = new float[SIZE * 64];
        long[] y = new long[SIZE];
        read(px, y);
        pixels = px;
        labels = y;
    }

    /** The fixed training part (1,438 images, rows {@code i % 5 != 4}) or test part (359, rows {@code i % 5 == 4}). */
    public Digits(boolean train, Transform transform, Transform targetTransform) {
        super(transform, targetTransform);
        float[] px = new float[SIZE * 64];
        long[] y = new long[SIZE];
        read(px, y);
        int n = 0;
        for (int i = 0; i < SIZE; i++) if ((i % 5 == 4) != train) n++;
        pixels = new float[n * 64];
        labels = new long[n];
        int k = 0;
        for (int i = 0; i < SIZE; i++) {
            if ((i % 5 == 4) == train) continue;
            System.arraycopy(px, i * 64, pixels, k * 64, 64);
            labels[k++] = y[i];
        }
    }

    private static void read(float[] pixels, long[] labels) {
        int n = 0;
        try (InputStream in = Digits.class.getResourceAsStream(RESOURCE)) {
            if (in == null) throw new IOException("resource " + RESOURCE + " is missing from the class path");
            BufferedReader r = new BufferedReader(new InputStreamReader(new GZIPInputStream(in), StandardCharsets.US_ASCII));
            String line;
            while ((line = r.readLine()) != null) {
                if (line.isBlank()) continue;
                if (n == SIZE) throw new IOException(RESOURCE + ": more than " + SIZE + " rows");
                String[] f = line.split(",");
                if (f.length != 65) throw new IOException(RESOURCE + ": row " + n + " has " + f.length + " fields, expected 65");
                for (int i = 0; i < 64; i++) pixels[n * 64 + i] = (float) (Double.parseDouble(f[i]) / 16);
                labels[n] = (long) Double.parseDouble(f[64]);
                n++;
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Digits: cannot read the bundled data: " + e.getMessage(), e);
        }
        if (n != SIZE) throw new UncheckedIOException(new IOException("Digits: " + RESOURCE + " has " + n + " rows, expected " + SIZE));
    }

    @Override
    public int size() {
        return labels.length;
    }

    @Override
    public Sample get(int index) {
        checkIndex(index);
        float[] px = new float[64];
        System.arraycopy(pixels, index * 64, px, 0, 64);
        return sample(Torch.tensor(px, 8, 8, 1), Torch.scalar(labels[index]));
    }

    /** The images as a new float32 tensor {@code [n, 8, 8]} in [0, 1]; the caller owns it. */
    public Tensor data() {
        return Torch.tensor(pixels.clone(), labels.length, 8, 8);
    }

    /** The labels as a new int64 tensor {@code [n]}; the caller owns it. */
    public Tensor targets() {
        return Torch.tensor(labels.clone());
    }
}
