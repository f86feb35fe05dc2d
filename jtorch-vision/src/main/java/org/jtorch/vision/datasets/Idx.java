package org.jtorch.vision.datasets;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.GZIPInputStream;

/**
 * Reads IDX files, the format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/): a
 * big-endian magic {@code 0x00 0x00 type ndim}, {@code ndim} big-endian int32 sizes, then the values
 * row-major. Only unsigned bytes ({@code type 0x08}) are used by these datasets and supported here.
 * A file is read raw or, when {@code name} is absent and {@code name.gz} exists, gunzipped.
 */
public final class Idx {
    private Idx() {}

    /** An IDX array of unsigned bytes: its sizes and its row-major values. */
    public record UByteArray(int[] shape, byte[] data) {
        public int size(int dim) {
            return shape[dim];
        }

        @Override
        public String toString() {
            return "UByteArray" + Arrays.toString(shape);
        }
    }

    /** {@code file} if it exists, else {@code file.gz} if that exists, else null. */
    public static Path locate(Path file) {
        if (Files.isRegularFile(file)) return file;
        Path gz = file.resolveSibling(file.getFileName() + ".gz");
        return Files.isRegularFile(gz) ? gz : null;
    }

    /** Reads an unsigned-byte IDX file (raw, or gzipped when its name ends in .gz or only {@code file.gz} exists). */
    public static UByteArray read(Path file) throws IOException {
        Path f = locate(file);
        if (f == null) throw new NoSuchFileException(file + " (nor " + file.getFileName() + ".gz)");
        try (InputStream raw = Files.newInputStream(f);
             DataInputStream in = new DataInputStream(f.toString().endsWith(".gz")
                     ? new GZIPInputStream(raw, 1 << 16) : new BufferedInputStream(raw, 1 << 16))) {
            int magic = in.readInt();
            if ((magic >>> 16) != 0) throw new IOException(f + ": not an IDX file (magic 0x" + Integer.toHexString(magic) + ")");
            int type = (magic >>> 8) & 0xff;
            int ndim = magic & 0xff;
            if (type != 0x08) throw new IOException(f + ": IDX value type 0x" + Integer.toHexString(type) + " is not unsigned byte (0x08)");
            int[] shape = new int[ndim];
            long n = 1;
            for (int d = 0; d < ndim; d++) {
                shape[d] = in.readInt();
                if (shape[d] < 0) throw new IOException(f + ": negative size " + shape[d] + " in dimension " + d);
                n *= shape[d];
            }
            if (n > Integer.MAX_VALUE - 8) throw new IOException(f + ": " + n + " values are too many for one array");
            byte[] data = in.readNBytes((int) n);
            if (data.length != n) throw new IOException(f + ": truncated (" + data.length + " of " + n + " values)");
            return new UByteArray(shape, data);
        }
    }
}
