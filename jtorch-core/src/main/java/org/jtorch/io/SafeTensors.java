package org.jtorch.io;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.CharBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.memory.Storage;
import org.jtorch.op.Shapes;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * Reads and writes the <a href="https://github.com/huggingface/safetensors">safetensors</a> format:
 * an 8-byte little-endian header length {@code N}, {@code N} bytes of UTF-8 JSON
 * ({@code {"__metadata__": {...}, "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...}}),
 * then the raw little-endian tensor bytes, row-major, each tensor's range relative to the end of the
 * header.
 *
 * <p>Writing uses a canonical layout: {@code __metadata__} first (when given), then the tensors in
 * the map's iteration order, compact JSON, the header padded with spaces to a multiple of 8 bytes,
 * data in the same order with no gaps. (The Python {@code safetensors} package orders tensors by
 * dtype alignment and name instead; both are valid files.) Non-contiguous tensors are written
 * contiguously. A write goes to a temporary file in the target directory, is fsynced, then atomically
 * renamed over the target: a failure part-way leaves an existing file untouched.
 *
 * <p>Reading maps the file ({@link #load}) and returns tensors that view the mapped bytes without
 * copying, read-only and valid until the {@link Loaded} is closed; {@link #loadCopy} returns owned
 * tensors instead. Every header field is validated, and a corrupt file fails with a
 * {@link FormatException} naming the file and the problem.
 *
 * <p>Dtype codes: BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64.
 *
 * <p>Modules: {@link #saveStateDict(Path, TensorState)} and {@link #loadStateDict(Path, TensorState, boolean)}
 * close the tensors they create. By hand, {@code model.loadStateDict(SafeTensors.loadCopy(path))}
 * works too (then close the returned tensors), and
 * {@code try (var l = SafeTensors.load(path)) { model.loadStateDict(l.tensors()); }} copies straight
 * from the mapping into the parameters.
 */
public final class SafeTensors {
    /** Headers larger than this are rejected (the reference implementation's limit). */
    public static final long MAX_HEADER_BYTES = 100_000_000L;

    private static final String METADATA_KEY = "__metadata__";
    private static final long COPY_CHUNK = 1L << 26;

    private SafeTensors() {}

    /** A file that does not follow the safetensors format. */
    public static final class FormatException extends IOException {
        public FormatException(String message) {
            super(message);
        }
    }

    /** One header entry: a tensor's dtype, shape and byte range within the data section. */
    public record TensorInfo(DType dtype, long[] shape, long begin, long end) {
        public TensorInfo {
            Arguments.nonNull("TensorInfo", "dtype", dtype);
            shape = Arguments.nonNull("TensorInfo", "shape", shape).clone();
        }

        @Override
        public long[] shape() {
            return shape.clone();
        }
    }

    // ------------------------------------------------------------------ dtype codes

    /** The format's code for {@code dtype}, e.g. {@code F32} for float32. */
    public static String dtypeCode(DType dtype) {
        Arguments.nonNull("safetensors.dtypeCode", "dtype", dtype);
        return switch (dtype) {
            case BOOL -> "BOOL";
            case UINT8 -> "U8";
            case INT8 -> "I8";
            case INT16 -> "I16";
            case INT32 -> "I32";
            case INT64 -> "I64";
            case FLOAT16 -> "F16";
            case BFLOAT16 -> "BF16";
            case FLOAT32 -> "F32";
            case FLOAT64 -> "F64";
        };
    }

    /** The dtype of a format code, or null if jtorch has no such dtype. */
    private static DType dtypeOf(String code) {
        return switch (code) {
            case "BOOL" -> DType.BOOL;
            case "U8" -> DType.UINT8;
            case "I8" -> DType.INT8;
            case "I16" -> DType.INT16;
            case "I32" -> DType.INT32;
            case "I64" -> DType.INT64;
            case "F16" -> DType.FLOAT16;
            case "BF16" -> DType.BFLOAT16;
            case "F32" -> DType.FLOAT32;
            case "F64" -> DType.FLOAT64;
            default -> null;
        };
    }

    private static void checkByteOrder() {
        if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
            throw new UnsupportedOperationException("safetensors: big-endian platforms are not supported");
        }
    }

    // ------------------------------------------------------------------ writing

    /** Writes {@code tensors} (in iteration order) to {@code path}, atomically. */
    public static void save(Path path, Map<String, Tensor> tensors) throws IOException {
        save(path, tensors, null);
    }

    /**
     * Writes {@code tensors} (in iteration order) and optional string {@code metadata} (stored under
     * {@code __metadata__}; omitted when null) to {@code path}, atomically: a temporary file in the same
     * directory ({@code <name>.jtorch-tmp-<pid>-<random>}) is written, fsynced and renamed over {@code path}.
     * If anything fails (an I/O error, a tensor that was closed), the temporary file is deleted and an
     * existing {@code path} is untouched; an {@link IOException} names the file. Temporary files that a
     * killed process left for the same target are removed first. When {@code path} is a symbolic link,
     * the file it points to is replaced and the link kept.
     */
    public static void save(Path path, Map<String, Tensor> tensors, Map<String, String> metadata) throws IOException {
        Arguments.nonNull("safetensors.save", "path", path);
        Arguments.nonNull("safetensors.save", "tensors", tensors);
        checkByteOrder();
        byte[] header = header(tensors, metadata);
        AtomicFile.write("safetensors.save", path, ch -> {
            ByteBuffer len = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, header.length);
            writeFully(ch, len);
            writeFully(ch, ByteBuffer.wrap(header));
            for (Map.Entry<String, Tensor> e : tensors.entrySet()) writeData(ch, e.getKey(), e.getValue());
        });
    }

    /** The serialised file as bytes (the same bytes {@link #save} writes). */
    public static byte[] serialize(Map<String, Tensor> tensors, Map<String, String> metadata) {
        Arguments.nonNull("safetensors.serialize", "tensors", tensors);
        checkByteOrder();
        byte[] header = header(tensors, metadata);
        long total = 8 + header.length;
        for (Tensor t : tensors.values()) total += t.numel() * t.dtype().byteSize();
        if (total > Integer.MAX_VALUE - 8) throw new IllegalArgumentException("safetensors.serialize: " + total + " bytes do not fit in an array; use save");
        byte[] out = new byte[(int) total];
        MemorySegment dst = MemorySegment.ofArray(out);
        dst.set(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, header.length);
        MemorySegment.copy(MemorySegment.ofArray(header), 0, dst, 8, header.length);
        long pos = 8 + header.length;
        for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
            try (Tensor c = contiguousCpu(e.getKey(), e.getValue())) {
                long n = c.numel() * c.dtype().byteSize();
                MemorySegment.copy(c.storage().segment(), c.storageOffset() * c.dtype().byteSize(), dst, pos, n);
                pos += n;
            }
        }
        return out;
    }

    /** Builds the padded JSON header, validating names and tensors. */
    private static byte[] header(Map<String, Tensor> tensors, Map<String, String> metadata) {
        StringBuilder sb = new StringBuilder("{");
        if (metadata != null) {
            sb.append('"').append(METADATA_KEY).append("\":{");
            boolean first = true;
            for (Map.Entry<String, String> e : metadata.entrySet()) {
                if (e.getKey() == null || e.getValue() == null) {
                    throw new IllegalArgumentException("safetensors.save: metadata keys and values must not be null");
                }
                if (!first) sb.append(',');
                first = false;
                Json.writeString(sb, e.getKey());
                sb.append(':');
                Json.writeString(sb, e.getValue());
            }
            sb.append('}');
        }
        long offset = 0;
        boolean first = metadata == null;
        for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
            String name = e.getKey();
            Tensor t = e.getValue();
            if (name == null) throw new IllegalArgumentException("safetensors.save: tensor names must not be null");
            if (name.equals(METADATA_KEY)) {
                throw new IllegalArgumentException("safetensors.save: '" + METADATA_KEY + "' is reserved and cannot name a tensor");
            }
            if (t == null) throw new IllegalArgumentException("safetensors.save: tensor '" + name + "' is null");
            long bytes = Math.multiplyExact(t.numel(), (long) t.dtype().byteSize());
            if (!first) sb.append(',');
            first = false;
            Json.writeString(sb, name);
            sb.append(":{\"dtype\":\"").append(dtypeCode(t.dtype())).append("\",\"shape\":[");
            long[] shape = t.shape();
            for (int i = 0; i < shape.length; i++) {
                if (i > 0) sb.append(',');
                sb.append(shape[i]);
            }
            sb.append("],\"data_offsets\":[").append(offset).append(',').append(offset + bytes).append("]}");
            offset += bytes;
        }
        sb.append('}');
        byte[] json;
        try {
            ByteBuffer bb = StandardCharsets.UTF_8.newEncoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .encode(CharBuffer.wrap(sb));
            json = new byte[bb.remaining()];
            bb.get(json);
        } catch (CharacterCodingException ex) {
            throw new IllegalArgumentException("safetensors.save: a tensor name or metadata string is not valid Unicode (unpaired surrogate)", ex);
        }
        int padded = (json.length + 7) / 8 * 8;
        byte[] out = new byte[padded];
        System.arraycopy(json, 0, out, 0, json.length);
        for (int i = json.length; i < padded; i++) out[i] = ' ';
        return out;
    }

    /** A contiguous CPU tensor with {@code t}'s elements (a new reference when {@code t} already is one). */
    private static Tensor contiguousCpu(String name, Tensor t) {
        t.checkOpen("safetensors.save('" + name + "')");
        if (t.device().isCpu()) return t.contiguous();
        try (Tensor host = t.cpu()) {
            return host.contiguous();
        }
    }

    private static void writeData(FileChannel ch, String name, Tensor t) throws IOException {
        try (Tensor c = contiguousCpu(name, t)) {
            long n = c.numel() * c.dtype().byteSize();
            MemorySegment src = c.storage().segment().asSlice(c.storageOffset() * c.dtype().byteSize(), n);
            for (long off = 0; off < n; off += COPY_CHUNK) {
                writeFully(ch, src.asSlice(off, Math.min(COPY_CHUNK, n - off)).asByteBuffer());
            }
        }
    }

    private static void writeFully(FileChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) ch.write(b);
    }

    /** Saves {@code module}'s state dict (parameters and persistent buffers, in its order), atomically. */
    public static void saveStateDict(Path path, TensorState<?> module) throws IOException {
        Arguments.nonNull("safetensors.saveStateDict", "path", path);
        Arguments.nonNull("safetensors.saveStateDict", "module", module);
        Map<String, Tensor> state = module.stateDict();
        try {
            save(path, state);
        } finally {
            for (Tensor t : state.values()) t.close();
        }
    }

    /**
     * Copies the tensors of {@code path} into {@code module} ({@code Module.loadStateDict(Map, boolean)}
     * semantics) straight from the mapped file; returns what that returns ({@code Module.LoadResult}).
     */
    public static <R> R loadStateDict(Path path, TensorState<R> module, boolean strict) throws IOException {
        Arguments.nonNull("safetensors.loadStateDict", "path", path);
        Arguments.nonNull("safetensors.loadStateDict", "module", module);
        try (Loaded l = load(path)) {
            return module.loadStateDict(l.tensors(), strict);
        }
    }

    // ------------------------------------------------------------------ reading

    /**
     * Maps {@code path} and returns its tensors as read-only views of the mapping (no copy). Writing
     * to them throws {@link IllegalArgumentException} (clone them for writable copies); using them after
     * {@link Loaded#close()}, or after another program truncated the file, throws
     * {@link IllegalStateException} naming the file. Temporary files that a killed {@link #save} of the
     * same file left are removed.
     */
    public static Loaded load(Path path) throws IOException {
        Arguments.nonNull("safetensors.load", "path", path);
        checkByteOrder();
        AtomicFile.removeStaleTemporaries(path);
        FileChannel ch = FileChannel.open(path, StandardOpenOption.READ);
        try {
            long size = ch.size();
            Header h = readHeader(path, ch, size);
            Arena arena = Arena.ofShared();
            try {
                MemorySegment file = ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
                return new Loaded(path.toAbsolutePath(), ch, size, arena, file, h);
            } catch (Throwable ex) {
                arena.close();
                throw ex;
            }
        } catch (Throwable ex) {
            ch.close();
            throw ex;
        }
    }

    /** Reads {@code path} into owned CPU tensors (in file order), which the caller closes. */
    public static Map<String, Tensor> loadCopy(Path path) throws IOException {
        Arguments.nonNull("safetensors.loadCopy", "path", path);
        try (Loaded l = load(path)) {
            Map<String, Tensor> out = new LinkedHashMap<>();
            try {
                for (Map.Entry<String, Tensor> e : l.tensors().entrySet()) {
                    Tensor src = e.getValue();
                    Tensor dst = Tensor.empty(src.shape(), src.dtype(), Device.cpu());
                    out.put(e.getKey(), dst);
                    MemorySegment.copy(src.storage().segment(), 0, dst.storage().segment(), 0, src.storage().byteSize());
                }
            } catch (RuntimeException ex) {
                for (Tensor t : out.values()) t.close();
                throw ex;
            } catch (InternalError ex) { // the JVM's report of a fault reading the mapping: the file shrank meanwhile
                for (Tensor t : out.values()) t.close();
                throw new IOException("safetensors.loadCopy: " + path + " could not be read: it shrank while it was being read", ex);
            }
            return out;
        }
    }

    /** Reads and validates only the header of {@code path}: the tensor entries in header order. */
    public static Map<String, TensorInfo> readInfo(Path path) throws IOException {
        Arguments.nonNull("safetensors.readInfo", "path", path);
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            return readHeader(path, ch, ch.size()).infos;
        }
    }

    private record Header(Map<String, TensorInfo> infos, Map<String, String> metadata, long dataStart) {}

    private static FormatException bad(Path path, String message) {
        return new FormatException("safetensors: " + path + ": " + message);
    }

    private static Header readHeader(Path path, FileChannel ch, long size) throws IOException {
        if (size < 8) throw bad(path, "file is " + size + " bytes, too small for the 8-byte header length");
        ByteBuffer lenBuf = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
        readFully(path, ch, lenBuf, 0);
        long n = lenBuf.getLong(0);
        if (n < 0 || n > MAX_HEADER_BYTES) {
            throw bad(path, "header length " + Long.toUnsignedString(n) + " exceeds the limit of " + MAX_HEADER_BYTES + " bytes");
        }
        if (n > size - 8) throw bad(path, "header length " + n + " exceeds the file size " + size + " minus 8");
        ByteBuffer hb = ByteBuffer.allocate((int) n);
        readFully(path, ch, hb, 8);
        hb.flip();
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(hb).toString();
        } catch (CharacterCodingException ex) {
            throw bad(path, "header is not valid UTF-8");
        }
        if (!text.startsWith("{")) throw bad(path, "header is not a JSON object (it must start with '{')");
        Object root;
        try {
            root = Json.parse(text);
        } catch (IllegalArgumentException ex) {
            throw bad(path, "header is not valid JSON: " + ex.getMessage());
        }
        if (!(root instanceof Map<?, ?> rootMap)) throw bad(path, "header is not a JSON object");
        long dataSize = size - 8 - n;
        Map<String, String> metadata = Map.of();
        Map<String, TensorInfo> infos = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : rootMap.entrySet()) {
            String name = (String) e.getKey();
            if (name.equals(METADATA_KEY)) {
                metadata = parseMetadata(path, e.getValue());
            } else {
                infos.put(name, parseInfo(path, name, e.getValue()));
            }
        }
        // The byte ranges, in offset order, must tile the data section exactly: no gap, no overlap.
        List<Map.Entry<String, TensorInfo>> byOffset = new ArrayList<>(infos.entrySet());
        byOffset.sort(Comparator.comparingLong((Map.Entry<String, TensorInfo> e) -> e.getValue().begin())
                .thenComparingLong(e -> e.getValue().end()));
        long expected = 0;
        for (Map.Entry<String, TensorInfo> e : byOffset) {
            TensorInfo info = e.getValue();
            if (info.begin() < expected) {
                throw bad(path, "tensor '" + e.getKey() + "' data_offsets [" + info.begin() + ", " + info.end()
                        + "] overlap the previous tensor's data (which ends at " + expected + ")");
            }
            if (info.begin() > expected) {
                throw bad(path, "tensor '" + e.getKey() + "' data_offsets [" + info.begin() + ", " + info.end()
                        + "] leave a gap after byte " + expected + " (the data must be contiguous)");
            }
            expected = info.end();
        }
        if (expected != dataSize) {
            throw bad(path, "the tensors cover " + expected + " bytes of data but the file holds " + dataSize
                    + " bytes after the header" + (expected > dataSize ? " (offsets out of bounds; file truncated?)" : ""));
        }
        return new Header(Collections.unmodifiableMap(infos), metadata, 8 + n);
    }

    private static void readFully(Path path, FileChannel ch, ByteBuffer b, long position) throws IOException {
        long pos = position;
        while (b.hasRemaining()) {
            int r = ch.read(b, pos);
            if (r < 0) throw bad(path, "unexpected end of file");
            pos += r;
        }
    }

    private static Map<String, String> parseMetadata(Path path, Object value) throws FormatException {
        if (!(value instanceof Map<?, ?> m)) throw bad(path, "'" + METADATA_KEY + "' must be a JSON object of strings");
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : m.entrySet()) {
            if (!(e.getValue() instanceof String v)) {
                throw bad(path, "'" + METADATA_KEY + "' value for key '" + e.getKey() + "' is not a string");
            }
            out.put((String) e.getKey(), v);
        }
        return Collections.unmodifiableMap(out);
    }

    private static TensorInfo parseInfo(Path path, String name, Object value) throws FormatException {
        String what = "tensor '" + name + "'";
        if (!(value instanceof Map<?, ?> m)) throw bad(path, what + ": entry is not a JSON object");
        for (Object k : m.keySet()) {
            if (!k.equals("dtype") && !k.equals("shape") && !k.equals("data_offsets")) {
                throw bad(path, what + ": unknown field '" + k + "'");
            }
        }
        if (!(m.get("dtype") instanceof String code)) throw bad(path, what + ": missing or non-string 'dtype'");
        DType dtype = dtypeOf(code);
        if (dtype == null) {
            throw bad(path, what + ": unknown or unsupported dtype '" + code
                    + "' (supported: BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64)");
        }
        if (!(m.get("shape") instanceof List<?> shapeList)) throw bad(path, what + ": missing or non-array 'shape'");
        long[] shape = new long[shapeList.size()];
        long numel = 1;
        for (int i = 0; i < shape.length; i++) {
            if (!(shapeList.get(i) instanceof Long d) || d < 0) {
                throw bad(path, what + ": shape " + shapeList + " must hold non-negative integers");
            }
            shape[i] = d;
            try {
                numel = Math.multiplyExact(numel, d);
            } catch (ArithmeticException ex) {
                throw bad(path, what + ": shape " + shapeList + " has too many elements");
            }
        }
        if (!(m.get("data_offsets") instanceof List<?> offs) || offs.size() != 2
                || !(offs.get(0) instanceof Long begin) || !(offs.get(1) instanceof Long end)) {
            throw bad(path, what + ": 'data_offsets' must be an array of two integers [begin, end]");
        }
        if (begin < 0 || end < begin) throw bad(path, what + ": invalid data_offsets [" + begin + ", " + end + "]");
        long bytes;
        try {
            bytes = Math.multiplyExact(numel, (long) dtype.byteSize());
        } catch (ArithmeticException ex) {
            throw bad(path, what + ": shape " + shapeList + " has too many bytes");
        }
        if (end - begin != bytes) {
            throw bad(path, what + ": shape " + Shapes.format(shape) + " of " + code + " needs " + bytes
                    + " bytes but data_offsets [" + begin + ", " + end + "] span " + (end - begin));
        }
        return new TensorInfo(dtype, shape, begin, end);
    }

    /**
     * A mapped safetensors file. It owns the mapping and the tensors that view it; {@link #close()}
     * closes both, after which using one of those tensors (or a view of one) throws
     * {@link IllegalStateException} naming the file. The tensors are read-only: in-place writes throw
     * {@link IllegalArgumentException} ({@code clone()} gives a writable copy). Do not close them
     * individually. If another program truncates the file while it is mapped, ops on its tensors throw
     * {@link IllegalStateException} naming the file (checked at each op's start: a truncation during a
     * kernel is reported by the JVM as an {@link InternalError}). Thread-safe for reading.
     */
    public static final class Loaded implements AutoCloseable {
        private final Path path;
        private final FileChannel channel;
        private final long size;
        private final Arena arena;
        private final Map<String, TensorInfo> infos;
        private final Map<String, String> metadata;
        private final Map<String, Tensor> tensors;

        /** What the tensors' storages report to ops that read or write them. */
        private final Storage.External mapping = new Storage.External() {
            @Override
            public String unreadableReason() {
                if (!arena.scope().isAlive()) return closed();
                long now;
                try {
                    now = channel.size();
                } catch (IOException ex) { // closed meanwhile, or the file system failed
                    return arena.scope().isAlive() ? "is a view of the memory-mapped file " + path + ", whose size cannot be read ("
                            + ex + ")" : closed();
                }
                if (now < size) {
                    return "is a view of the memory-mapped file " + path + ", which shrank from " + size + " to " + now
                            + " bytes after it was loaded (another program truncated or rewrote it in place); load it again";
                }
                return null;
            }

            private String closed() {
                return "is a view of the memory-mapped file " + path + ", which was closed (SafeTensors.Loaded.close()); clone() the"
                        + " tensors to keep before closing it";
            }

            @Override
            public String unwritableReason() {
                return "is a read-only view of the memory-mapped file " + path + "; clone() it for a writable copy (or read the"
                        + " file with SafeTensors.loadCopy)";
            }
        };

        private Loaded(Path path, FileChannel channel, long size, Arena arena, MemorySegment file, Header h) {
            this.path = path;
            this.channel = channel;
            this.size = size;
            this.arena = arena;
            this.infos = h.infos;
            this.metadata = h.metadata;
            Map<String, Tensor> ts = new LinkedHashMap<>();
            for (Map.Entry<String, TensorInfo> e : h.infos.entrySet()) {
                TensorInfo info = e.getValue();
                MemorySegment slice = file.asSlice(h.dataStart + info.begin(), info.end() - info.begin());
                long[] shape = info.shape();
                Tensor t = Tensor.fromStorage(Storage.wrapExternal(slice, mapping), info.dtype(), shape, Shapes.contiguousStrides(shape), 0);
                ts.put(e.getKey(), t.untrack());
            }
            this.tensors = Collections.unmodifiableMap(ts);
        }

        /** The tensors in header order, as read-only views of the mapping (owned by this object). */
        public Map<String, Tensor> tensors() {
            return tensors;
        }

        /** The tensor {@code name} (owned by this object). */
        public Tensor get(String name) {
            Tensor t = tensors.get(name);
            if (t == null) throw new IllegalArgumentException("safetensors: no tensor named '" + name + "' (have " + tensors.keySet() + ")");
            return t;
        }

        /** Header entries in header order. */
        public Map<String, TensorInfo> infos() {
            return infos;
        }

        /** The {@code __metadata__} strings (empty if absent). */
        public Map<String, String> metadata() {
            return metadata;
        }

        /** The mapped file. */
        public Path path() {
            return path;
        }

        /** Closes the tensors and unmaps the file. Idempotent. */
        @Override
        public synchronized void close() {
            if (!arena.scope().isAlive()) return;
            for (Tensor t : tensors.values()) t.close();
            arena.close();
            try {
                channel.close();
            } catch (IOException ignored) {
                // read-only: nothing to flush
            }
        }
    }
}
