package org.jtorch.testing;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.GZIPInputStream;
import org.jtorch.Tensor;
import org.jtorch.Torch;

/**
 * Reads IDX files (MNIST's format: magic 0x0801 labels / 0x0803 images, big-endian sizes, then
 * unsigned bytes), raw or gzipped, and finds the datasets {@code scripts/fetch-data} downloads.
 */
public final class Idx {
    private Idx() {}

    /** {@code $JTORCH_DATA/<name>} or {@code <repo>/.data/<name>} when fetched completely, else null. */
    public static Path dataset(String name) {
        String env = System.getenv("JTORCH_DATA");
        for (Path base : new Path[] {env == null ? null : Path.of(env), Path.of(".data"), Path.of("..", ".data")}) {
            if (base != null && Files.exists(base.resolve(name).resolve(".complete"))) return base.resolve(name);
        }
        return null;
    }

    /** Images as float32 {@code [n, rows*cols]} scaled to [0, 1]. */
    public static Tensor images(Path file) throws IOException {
        try (DataInputStream in = open(file)) {
            int magic = in.readInt();
            if (magic != 0x0803) throw new IOException(file + ": not an IDX image file (magic " + Integer.toHexString(magic) + ")");
            int n = in.readInt();
            int rows = in.readInt();
            int cols = in.readInt();
            byte[] raw = in.readNBytes(n * rows * cols);
            if (raw.length != n * rows * cols) throw new IOException(file + ": truncated");
            float[] px = new float[raw.length];
            for (int i = 0; i < raw.length; i++) px[i] = (raw[i] & 0xff) / 255f;
            return Torch.tensor(px, n, (long) rows * cols);
        }
    }

    /** Labels as int64 {@code [n]}. */
    public static Tensor labels(Path file) throws IOException {
        try (DataInputStream in = open(file)) {
            int magic = in.readInt();
            if (magic != 0x0801) throw new IOException(file + ": not an IDX label file (magic " + Integer.toHexString(magic) + ")");
            int n = in.readInt();
            byte[] raw = in.readNBytes(n);
            long[] y = new long[n];
            for (int i = 0; i < n; i++) y[i] = raw[i] & 0xff;
            return Torch.tensor(y);
        }
    }

    private static DataInputStream open(Path file) throws IOException {
        Path f = Files.exists(file) ? file : Path.of(file + ".gz");
        InputStream raw = Files.newInputStream(f);
        return new DataInputStream(f.toString().endsWith(".gz") ? new GZIPInputStream(raw, 1 << 16) : new java.io.BufferedInputStream(raw, 1 << 16));
    }
}
