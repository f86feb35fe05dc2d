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
import org.jtorch.vision.transforms.Transform;

/**
 * The UCI "Optical Recognition of Handwritten Digits" set as scikit-learn's {@code load_digits}: 1,797
 * images of 8x8 pixels with values 0..16 and their digit class. Bundled with jtorch-vision (CC BY 4.0,
 * E. Alpaydin and C. Kaynak; see {@code README.md} beside the data), so it needs no download.
 *
 * <p>Sample {@code i} is the image as a float32 HWC tensor {@code [8, 8, 1]} with values
 * {@code pixel / 16} in [0, 1] (so {@link org.jtorch.vision.transforms.ToTensor} turns it into
 * {@code [1, 8, 8]} without rescaling, as torchvision's ToTensor does for float arrays) and its class
 * as a 0-d int64 tensor. The set has no official train/test split.
 */
public final class Digits extends VisionDataset {
    public static final int SIZE = 1797;
    private static final String RESOURCE = "digits.csv.gz";

    private final float[] pixels;
    private final long[] labels;

    public Digits() {
        this(null, null);
    }

    public Digits(Transform transform, Transform targetTransform) {
        super(transform, targetTransform);
        pixels = new float[SIZE * 64];
        labels = new long[SIZE];
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
        return SIZE;
    }

    @Override
    public Sample get(int index) {
        checkIndex(index);
        float[] px = new float[64];
        System.arraycopy(pixels, index * 64, px, 0, 64);
        return sample(Torch.tensor(px, 8, 8, 1), Torch.scalar(labels[index]));
    }

    /** All images as a new float32 tensor {@code [1797, 8, 8]} in [0, 1]; the caller owns it. */
    public Tensor data() {
        return Torch.tensor(pixels.clone(), SIZE, 8, 8);
    }

    /** All labels as a new int64 tensor {@code [1797]}; the caller owns it. */
    public Tensor targets() {
        return Torch.tensor(labels.clone());
    }
}
