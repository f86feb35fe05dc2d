package org.jtorch.io;

import java.io.BufferedOutputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipException;
import java.util.zip.ZipFile;
import java.util.zip.ZipOutputStream;
import org.jtorch.Tensor;
import org.jtorch.memory.Storage;
import org.jtorch.op.Shapes;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * Reads and writes PyTorch's {@code .pt}/{@code .pth} files ({@code torch.save}/{@code torch.load}),
 * with no Python.
 *
 * <p><b>Format.</b> A zip archive (stored, not compressed) whose entries share one folder name:
 * {@code <folder>/data.pkl}, a pickle of the saved object in which each tensor is a call of
 * {@code torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)} and each
 * storage a persistent id {@code ('storage', torch.FloatStorage, key, location, numel)};
 * {@code <folder>/data/<key>}, the raw little-endian bytes of each storage; {@code <folder>/version};
 * and, from PyTorch 2.1, {@code <folder>/byteorder}. Files of PyTorch before 1.6 (the legacy format,
 * consecutive pickles followed by the raw storages) are read too.
 *
 * <p><b>Safety.</b> Loading never runs code from the file. The pickle is read by a virtual machine that
 * knows an allow-list of globals, as {@code torch.load(weights_only=True)}: the tensor and parameter
 * rebuilders, the storage types of jtorch's dtypes, {@code collections.OrderedDict}, {@code torch.Size},
 * {@code torch.device}, the dtypes ({@code torch.float32}, ...), {@code set}, {@code frozenset} and
 * {@code _codecs.encode} (bytes). Any other global (a pickled class, {@code os.system}) fails with a
 * {@link FormatException} naming it. Files with big-endian data ({@code byteorder} "big"), complex or
 * quantized storages and sparse tensors are refused with a message saying so.
 *
 * <p><b>Values.</b> Tensors load onto the CPU (as {@code map_location="cpu"}), sharing storage where
 * the saved tensors did (a tensor and its views stay views of one storage); a saved
 * {@code requires_grad} is restored. Python values become Java ones: dicts (and OrderedDicts)
 * LinkedHashMaps, lists ArrayLists, tuples unmodifiable Lists, ints Long (BigInteger beyond 64 bits),
 * floats Double, str String, bytes byte[], None null. Instance attributes of a dict (a state dict's
 * {@code _metadata}) are dropped. The caller owns the loaded tensors ({@link #closeTensors}).
 *
 * <p><b>Writing</b> ({@link #save}) produces what {@code torch.save} of PyTorch 1.13 writes: pickle
 * protocol 2, one storage record per distinct storage (views stay views), data records aligned to 64
 * bytes; PyTorch 1.13 loads it with {@code torch.load}, also with {@code weights_only=True}. Maps are
 * written as dicts, Lists as lists, {@code Object[]} as tuples. Tensors on other devices are copied to
 * the CPU and saved with location "cpu". The file is replaced atomically as {@link SafeTensors#save}.
 */
public final class PyTorchFile {
    private static final int ALIGNMENT = 64;
    private static final long COPY_CHUNK = 1L << 24;
    /** The legacy format's first pickle: this number, as a Python int. */
    private static final BigInteger LEGACY_MAGIC = new BigInteger("1950a86a20f9469cfc6c", 16);

    private PyTorchFile() {}

    /** A file that is not a readable PyTorch file, or holds something jtorch refuses to load. */
    public static final class FormatException extends IOException {
        public FormatException(String message) {
            super(message);
        }
    }

    // ------------------------------------------------------------------ reading

    /**
     * The object saved in {@code path} ({@code torch.load(path, map_location="cpu", weights_only=True)}):
     * a Tensor, or a Map/List/... holding tensors and plain values. The caller owns the tensors.
     */
    public static Object load(Path path) throws IOException {
        Arguments.nonNull("PyTorchFile.load", "path", path);
        if (!Files.isRegularFile(path)) throw new java.nio.file.NoSuchFileException(path.toString());
        byte[] head = new byte[4];
        try (InputStream s = Files.newInputStream(path)) {
            int n = s.readNBytes(head, 0, 4);
            if (n == 4 && head[0] == 'P' && head[1] == 'K') return new ZipReader(path).read();
            if (n >= 2 && (head[0] & 0xff) == 0x80) {
                if (Files.size(path) > Integer.MAX_VALUE - 8) throw bad(path, "a legacy-format file over 2 GiB, which jtorch does not read; save it again with PyTorch 1.6 or later");
                return new LegacyReader(path, Files.readAllBytes(path)).read();
            }
        }
        throw bad(path, "not a PyTorch file: it is neither a zip archive (torch.save since PyTorch 1.6) nor a legacy pickle"
                + " file (first bytes " + java.util.HexFormat.of().formatHex(head) + ")");
    }

    /**
     * The state dict saved in {@code path} ({@code torch.save(model.state_dict(), path)}): its tensors by
     * name, in file order. Fails naming the file if it holds something else (a whole checkpoint dict:
     * use {@link #load} and take its state dict entry). The caller closes the tensors.
     */
    public static Map<String, Tensor> loadStateDict(Path path) throws IOException {
        Object obj = load(path);
        if (!(obj instanceof Map<?, ?> map)) {
            closeTensors(obj);
            throw bad(path, "holds " + kind(obj) + ", not a state dict (a dict of tensors)");
        }
        Map<String, Tensor> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : map.entrySet()) {
            if (!(e.getKey() instanceof String k) || !(e.getValue() instanceof Tensor t)) {
                closeTensors(obj);
                throw bad(path, "is not a state dict: its entry " + (e.getKey() instanceof String s ? "'" + s + "'" : kind(e.getKey()))
                        + " holds " + kind(e.getValue()) + "; a state dict maps names to tensors (for a checkpoint dict use"
                        + " PyTorchFile.load and take its state dict entry)");
            }
            out.put(k, t);
        }
        return out;
    }

    /**
     * Copies the state dict saved in {@code path} into {@code module}
     * ({@code Module.loadStateDict(Map, boolean)} semantics) and closes the loaded tensors; returns what that returns
     * ({@code Module.LoadResult}).
     */
    public static <R> R loadStateDict(Path path, TensorState<R> module, boolean strict) throws IOException {
        Arguments.nonNull("PyTorchFile.loadStateDict", "module", module);
        Map<String, Tensor> state = loadStateDict(path);
        try {
            return module.loadStateDict(state, strict);
        } finally {
            closeTensors(state);
        }
    }

    /** Closes every tensor in a loaded object (maps, lists, sets and tuples are searched). */
    public static void closeTensors(Object obj) {
        // Iterative with a visited set: a pickle may hold a list that contains itself.
        java.util.ArrayDeque<Object> todo = new java.util.ArrayDeque<>();
        java.util.Set<Object> seen = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
        if (obj != null) todo.push(obj);
        while (!todo.isEmpty()) {
            Object v = todo.pop();
            if (!seen.add(v)) continue;
            if (v instanceof Tensor t) {
                t.close();
            } else if (v instanceof Map<?, ?> m) {
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    if (e.getKey() != null) todo.push(e.getKey());
                    if (e.getValue() != null) todo.push(e.getValue());
                }
            } else if (v instanceof Collection<?> c) {
                for (Object x : c) if (x != null) todo.push(x);
            } else if (v instanceof Object[] a) {
                for (Object x : a) if (x != null) todo.push(x);
            }
        }
    }

    private static String kind(Object v) {
        if (v == null) return "None";
        if (v instanceof Tensor t) return "a tensor of shape " + Shapes.format(t.shape());
        if (v instanceof Map<?, ?>) return "a dict";
        if (v instanceof List<?>) return "a list";
        return "a " + v.getClass().getSimpleName();
    }

    private static FormatException bad(Path path, String message) {
        return new FormatException("PyTorchFile: " + path + ": " + message);
    }

    /** A Python function the pickle may call, named for error messages. */
    private record Function(String name, Unpickler.Callable body) implements Unpickler.Callable {
        @Override
        public Object call(List<Object> args) {
            return body.call(args);
        }

        @Override
        public String toString() {
            return name;
        }
    }

    /** A storage type global ({@code torch.FloatStorage}): the dtype of the storage it names. */
    private record StorageType(String name, DType dtype) {}

    /** The storage class of each dtype, as PyTorch names it in the storage records. */
    private static String storageName(DType dtype) {
        return switch (dtype) {
            case BOOL -> "BoolStorage";
            case UINT8 -> "ByteStorage";
            case INT8 -> "CharStorage";
            case INT16 -> "ShortStorage";
            case INT32 -> "IntStorage";
            case INT64 -> "LongStorage";
            case FLOAT16 -> "HalfStorage";
            case BFLOAT16 -> "BFloat16Storage";
            case FLOAT32 -> "FloatStorage";
            case FLOAT64 -> "DoubleStorage";
        };
    }

    /**
     * The unpickling shared by both formats: the allow-listed globals, tensor rebuilding over storages
     * shared by key, and clean-up of what was built when the file turns out bad.
     */
    private abstract static class Reader implements Unpickler.Resolver {
        final Path path;
        private final Map<String, Storage> storages = new HashMap<>();
        private final Map<String, DType> storageDtypes = new HashMap<>();
        private final List<Tensor> built = new ArrayList<>();

        Reader(Path path) {
            this.path = path;
        }

        /** A new CPU storage holding the bytes of storage {@code key} ({@code bytes} long). */
        abstract Storage readStorage(String key, long bytes) throws IOException;

        /** The object's pickle, as error messages name it. */
        abstract String pickleName();

        /** Runs {@code body}; on failure closes the tensors built so far. Always drops the loader's storage references. */
        final Object guarded(IOBody body) throws IOException {
            boolean ok = false;
            try {
                Object result = body.run();
                ok = true;
                return result;
            } catch (Unpickler.Failure ex) {
                throw bad(path, pickleName() + ": " + ex.getMessage());
            } catch (StorageReadFailure ex) {
                throw ex.getCause();
            } catch (StackOverflowError ex) { // hashing a cyclic or absurdly deep key
                throw bad(path, pickleName() + ": a value is cyclic or nested too deeply to be a dict key");
            } finally {
                if (!ok) for (Tensor t : built) t.close();
                for (Storage s : storages.values()) s.release();
            }
        }

        @FunctionalInterface
        interface IOBody {
            Object run() throws IOException;
        }

        @Override
        public Object global(String module, String name) {
            String qualified = module + "." + name;
            Unpickler.Callable allowed = switch (qualified) {
                case "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor" -> this::rebuildTensor;
                case "torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state" -> a -> rebuildParameter(qualified, a);
                case "collections.OrderedDict" -> this::orderedDict;
                case "torch.Size" -> a -> a.isEmpty() ? List.of() : a.get(0);
                case "torch.device" -> a -> a.size() == 2 ? a.get(0) + ":" + a.get(1) : a.isEmpty() ? null : a.get(0);
                case "builtins.set", "__builtin__.set" -> a -> setOf(qualified, a);
                case "builtins.frozenset", "__builtin__.frozenset" -> a -> java.util.Collections.unmodifiableSet(setOf(qualified, a));
                case "_codecs.encode" -> PyTorchFile::encode;
                default -> null;
            };
            if (allowed != null) return new Function(qualified, allowed);
            if (module.equals("torch._utils") && name.startsWith("_rebuild_")) {
                throw new Unpickler.Failure("the file holds a tensor that " + qualified + " rebuilds (a sparse, quantized, meta or"
                        + " subclassed tensor), a kind jtorch does not have; jtorch reads dense tensors (_rebuild_tensor_v2)");
            }
            if (module.equals("torch")) {
                for (DType d : DType.values()) {
                    if (name.equals(storageName(d))) return new StorageType(qualified, d);
                    if (name.equals(d.pyName())) return d;
                }
                if (name.endsWith("Storage")) {
                    throw new Unpickler.Failure("the file holds a " + qualified + ", a storage of a dtype jtorch does not have"
                            + " (jtorch has bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)");
                }
            }
            throw new Unpickler.Failure("the pickle names the global " + qualified + ", which is not on jtorch's allow-list"
                    + " (tensors, storages, OrderedDict, torch.Size, torch.device, dtypes, set, bytes); jtorch never runs code"
                    + " from a file. Save plain state (state_dict(), tensors, numbers, strings, lists, dicts) instead");
        }

        /** {@code ('storage', storage_type, key, location, numel[, view_metadata])}: the storage, read once per key. */
        @Override
        public Object persistentLoad(Object pid) {
            if (!(pid instanceof List<?> t) || t.size() < 5 || !"storage".equals(t.get(0))) {
                throw new Unpickler.Failure("persistent id " + Unpickler.describe(pid) + " is not a storage record");
            }
            if (!(t.get(1) instanceof StorageType type)) throw new Unpickler.Failure("storage record with type " + Unpickler.describe(t.get(1)));
            if (!(t.get(2) instanceof String key) || !(t.get(4) instanceof Long numel) || numel < 0) {
                throw new Unpickler.Failure("malformed storage record " + t);
            }
            if (t.size() > 5 && t.get(5) != null) {
                throw new Unpickler.Failure("storage " + key + " is a view of another storage (a format of PyTorch before 0.4), which jtorch does not read");
            }
            DType known = storageDtypes.putIfAbsent(key, type.dtype());
            if (known != null && known != type.dtype()) {
                throw new Unpickler.Failure("storage " + key + " is used as both " + known + " and " + type.dtype());
            }
            Storage s = storages.get(key);
            if (s == null) {
                try {
                    s = readStorage(key, Math.multiplyExact(numel, (long) type.dtype().byteSize()));
                } catch (IOException ex) {
                    throw new StorageReadFailure(ex);
                } catch (ArithmeticException ex) {
                    throw new Unpickler.Failure("storage " + key + " of " + numel + " elements is too large");
                }
                storages.put(key, s);
            }
            return new StorageRef(s, type.dtype(), numel, key);
        }

        private record StorageRef(Storage storage, DType dtype, long numel, String key) {}

        /** {@code _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])}. */
        private Object rebuildTensor(List<Object> a) {
            if (a.size() < 4 || !(a.get(0) instanceof StorageRef ref)) {
                throw new Unpickler.Failure("_rebuild_tensor_v2 expects (storage, offset, size, stride, ...), got " + a.size() + " arguments");
            }
            long offset = longArg(a.get(1), "storage_offset");
            long[] size = longs(a.get(2), "size");
            long[] stride = longs(a.get(3), "stride");
            if (size.length != stride.length) {
                throw new Unpickler.Failure("tensor of size " + Shapes.format(size) + " has " + stride.length + " strides");
            }
            long last = offset;
            boolean empty = false;
            for (int i = 0; i < size.length; i++) {
                if (size[i] < 0 || stride[i] < 0) throw new Unpickler.Failure("negative size or stride in " + Shapes.format(size) + " / " + Shapes.format(stride));
                if (size[i] == 0) empty = true;
                else last += (size[i] - 1) * stride[i];
            }
            if (offset < 0 || !empty && last >= ref.numel()) {
                throw new Unpickler.Failure("tensor of size " + Shapes.format(size) + ", stride " + Shapes.format(stride) + " and offset "
                        + offset + " reaches beyond its storage " + ref.key() + " of " + ref.numel() + " elements");
            }
            ref.storage().retain();
            Tensor t = Tensor.fromStorage(ref.storage(), ref.dtype(), size, stride, offset);
            built.add(t);
            if (a.size() > 4 && Boolean.TRUE.equals(a.get(4))) requireGrad(t, "_rebuild_tensor_v2");
            return t;
        }

        /** {@code _rebuild_parameter(data, requires_grad, backward_hooks)}: the tensor, with its requires_grad. */
        private Object rebuildParameter(String name, List<Object> a) {
            if (a.size() < 2 || !(a.get(0) instanceof Tensor t) || !(a.get(1) instanceof Boolean rg)) {
                throw new Unpickler.Failure(name + " expects (tensor, requires_grad, ...)");
            }
            if (rg) requireGrad(t, name);
            return t;
        }

        private static void requireGrad(Tensor t, String op) {
            if (!t.dtype().isFloatingPoint()) throw new Unpickler.Failure(op + ": a " + t.dtype() + " tensor cannot require gradients");
            t.requiresGrad_(true);
        }

        private Object orderedDict(List<Object> a) {
            LinkedHashMap<Object, Object> m = new LinkedHashMap<>();
            if (a.isEmpty()) return m;
            if (!(a.get(0) instanceof Collection<?> pairs)) throw new Unpickler.Failure("OrderedDict expects a list of pairs");
            for (Object p : pairs) {
                if (!(p instanceof List<?> kv) || kv.size() != 2) throw new Unpickler.Failure("OrderedDict expects a list of pairs");
                m.put(kv.get(0), kv.get(1));
            }
            return m;
        }
    }

    private static LinkedHashSet<Object> setOf(String name, List<Object> a) {
        if (a.isEmpty()) return new LinkedHashSet<>();
        if (!(a.get(0) instanceof Collection<?> items)) throw new Unpickler.Failure(name + " expects a list, got " + Unpickler.describe(a.get(0)));
        return new LinkedHashSet<>(items);
    }

    private static long longArg(Object v, String what) {
        if (v instanceof Long l) return l;
        throw new Unpickler.Failure(what + " must be an int, got " + Unpickler.describe(v));
    }

    private static long[] longs(Object v, String what) {
        if (!(v instanceof List<?> l)) throw new Unpickler.Failure(what + " must be a tuple of ints, got " + Unpickler.describe(v));
        long[] out = new long[l.size()];
        for (int i = 0; i < out.length; i++) out[i] = longArg(l.get(i), what);
        return out;
    }

    /** {@code _codecs.encode(text, encoding)}, protocol 2's spelling of bytes. */
    private static Object encode(List<Object> a) {
        if (a.size() != 2 || !(a.get(0) instanceof String s) || !(a.get(1) instanceof String enc)) {
            throw new Unpickler.Failure("_codecs.encode expects (str, encoding)");
        }
        return switch (enc) {
            case "latin1", "latin-1", "iso-8859-1" -> s.getBytes(StandardCharsets.ISO_8859_1);
            case "utf-8", "utf8", "ascii" -> s.getBytes(StandardCharsets.UTF_8);
            default -> throw new Unpickler.Failure("_codecs.encode with encoding " + enc + " is not supported");
        };
    }

    /** An IOException from reading a storage, carried through the unpickler's callbacks. */
    private static final class StorageReadFailure extends RuntimeException {
        StorageReadFailure(IOException cause) {
            super(cause);
        }

        @Override
        public synchronized IOException getCause() {
            return (IOException) super.getCause();
        }
    }

    /** The zip format (PyTorch 1.6 and later). */
    private static final class ZipReader extends Reader {
        private ZipFile zip;
        private String prefix;

        ZipReader(Path path) {
            super(path);
        }

        Object read() throws IOException {
            try (ZipFile z = new ZipFile(path.toFile())) {
                zip = z;
                prefix = findPrefix();
                String order = text("byteorder", 16);
                if (order != null && !order.strip().equals("little")) {
                    throw bad(path, "its data is " + order.strip() + "-endian (the byteorder record); jtorch reads little-endian files only."
                            + " Load and save it again with PyTorch on a little-endian machine");
                }
                ZipEntry pkl = zip.getEntry(prefix + "data.pkl");
                byte[] pickle;
                try (InputStream s = zip.getInputStream(pkl)) {
                    pickle = s.readAllBytes();
                }
                return guarded(() -> Unpickler.load(pickle, this));
            } catch (ZipException ex) {
                throw bad(path, "not a readable zip archive (" + ex.getMessage() + ")");
            }
        }

        /** The folder that holds data.pkl, with its slash. */
        private String findPrefix() throws FormatException {
            String found = null;
            for (Enumeration<? extends ZipEntry> en = zip.entries(); en.hasMoreElements(); ) {
                String name = en.nextElement().getName();
                if (name.endsWith("data.pkl") && name.indexOf('/') == name.length() - "data.pkl".length() - 1) {
                    if (found != null) throw bad(path, "the archive holds two pickles, " + found + "data.pkl and " + name);
                    found = name.substring(0, name.length() - "data.pkl".length());
                }
            }
            if (found == null) {
                throw bad(path, "a zip archive without <folder>/data.pkl: not a torch.save file (a TorchScript archive or another zip?)");
            }
            return found;
        }

        private String text(String record, int max) throws IOException {
            ZipEntry e = zip.getEntry(prefix + record);
            if (e == null) return null;
            try (InputStream s = zip.getInputStream(e)) {
                return new String(s.readNBytes(max), StandardCharsets.UTF_8);
            }
        }

        @Override
        String pickleName() {
            return prefix + "data.pkl";
        }

        @Override
        Storage readStorage(String key, long bytes) throws IOException {
            ZipEntry e = zip.getEntry(prefix + "data/" + key);
            if (e == null) throw bad(path, "the pickle refers to storage " + key + " but the archive has no record " + prefix + "data/" + key);
            if (e.getSize() >= 0 && e.getSize() < bytes) {
                throw bad(path, "storage record " + prefix + "data/" + key + " holds " + e.getSize() + " bytes, fewer than the " + bytes + " its tensors need");
            }
            if (e.getMethod() == ZipEntry.STORED && e.getSize() > Files.size(path)) { // before allocating what a corrupt size claims
                throw bad(path, "storage record " + prefix + "data/" + key + " claims " + e.getSize() + " bytes, more than the file holds");
            }
            Storage s = Storage.allocateCpu(bytes);
            try (InputStream in = zip.getInputStream(e)) {
                fill(in, s.segment(), bytes, key);
            } catch (IOException | RuntimeException ex) {
                s.release();
                throw ex;
            }
            return s;
        }

        private void fill(InputStream in, MemorySegment dst, long bytes, String key) throws IOException {
            byte[] buf = new byte[(int) Math.min(COPY_CHUNK, Math.max(bytes, 1))];
            long done = 0;
            while (done < bytes) {
                int n = in.read(buf, 0, (int) Math.min(buf.length, bytes - done));
                if (n < 0) throw bad(path, "storage record data/" + key + " ends after " + done + " of " + bytes + " bytes");
                MemorySegment.copy(MemorySegment.ofArray(buf), 0, dst, done, n);
                done += n;
            }
        }
    }

    /**
     * The format of PyTorch before 1.6 ({@code _use_new_zipfile_serialization=False}): pickles of the magic
     * number, the protocol version (1001) and the system info, the object's pickle, the pickle of the
     * storage keys, then each storage in that order as an 8-byte little-endian element count and its bytes.
     */
    private static final class LegacyReader extends Reader {
        private final byte[] file;
        private final Map<String, long[]> ranges = new HashMap<>(); // key -> {byte offset, byte length}

        LegacyReader(Path path, byte[] file) {
            super(path);
            this.file = file;
        }

        Object read() throws IOException {
            int[] end = new int[1];
            Unpickler.Resolver plain = new Unpickler.Resolver() {
                @Override
                public Object global(String module, String name) {
                    throw new Unpickler.Failure("unexpected global " + module + "." + name + " in the legacy header");
                }

                @Override
                public Object persistentLoad(Object pid) {
                    throw new Unpickler.Failure("unexpected persistent id in the legacy header");
                }
            };
            Object magic;
            try {
                magic = Unpickler.load(file, 0, plain, end);
            } catch (Unpickler.Failure ex) {
                throw bad(path, "not a PyTorch file (" + ex.getMessage() + ")");
            }
            if (!LEGACY_MAGIC.equals(magic instanceof Long l ? BigInteger.valueOf(l) : magic)) {
                throw bad(path, "a pickle, but not a torch.save file (no PyTorch magic number): jtorch reads only torch.save files");
            }
            try {
                Object version = Unpickler.load(file, end[0], plain, end);
                if (!Long.valueOf(1001).equals(version)) throw bad(path, "legacy format version " + version + ", expected 1001");
                Object info = Unpickler.load(file, end[0], plain, end);
                if (info instanceof Map<?, ?> m && Boolean.FALSE.equals(m.get("little_endian"))) {
                    throw bad(path, "it was saved on a big-endian machine; jtorch reads little-endian files only");
                }
                int objectStart = end[0];
                // A first pass over the object's pickle builds nothing; it finds where the pickle ends (the
                // storages follow it) and the dtype of each storage key, which sizes the storages' bytes.
                Map<String, DType> dtypes = new HashMap<>();
                Unpickler.load(file, objectStart, new KeyScanner(dtypes), end);
                Object keys = Unpickler.load(file, end[0], plain, end);
                if (!(keys instanceof List<?> list)) throw bad(path, "the legacy storage key list is " + Unpickler.describe(keys));
                locateStorages(list, dtypes, end[0]);
                return guarded(() -> Unpickler.load(file, objectStart, this, null));
            } catch (Unpickler.Failure ex) {
                throw bad(path, "legacy pickle: " + ex.getMessage());
            }
        }

        /** Resolves every global to an inert function and records the dtype of each storage key. */
        private static final class KeyScanner implements Unpickler.Resolver {
            private final Map<String, DType> dtypes;

            KeyScanner(Map<String, DType> dtypes) {
                this.dtypes = dtypes;
            }

            @Override
            public Object global(String module, String name) {
                if (module.equals("torch")) {
                    for (DType d : DType.values()) if (name.equals(storageName(d))) return d;
                }
                boolean dict = module.equals("collections") && name.equals("OrderedDict");
                return new Function(module + "." + name, a -> dict ? new LinkedHashMap<>() : null);
            }

            @Override
            public Object persistentLoad(Object pid) {
                if (pid instanceof List<?> t && t.size() >= 3 && t.get(1) instanceof DType d) dtypes.put(String.valueOf(t.get(2)), d);
                return null;
            }
        }

        /** The byte range of each storage, using the element sizes the object's pickle gives each key. */
        private void locateStorages(List<?> keys, Map<String, DType> dtypes, int start) throws FormatException {
            long at = start;
            for (Object k : keys) {
                String key = String.valueOf(k);
                DType dtype = dtypes.get(key);
                if (dtype == null) throw bad(path, "storage " + key + " is listed but no tensor uses it");
                if (at + 8 > file.length) throw bad(path, "the file ends inside the header of storage " + key);
                long numel = ByteBuffer.wrap(file, (int) at, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
                long bytes = numel > file.length ? Long.MAX_VALUE : numel * dtype.byteSize();
                if (numel < 0 || bytes > file.length - at - 8) throw bad(path, "storage " + key + " of " + numel + " elements runs past the end of the file");
                ranges.put(key, new long[] {at + 8, bytes});
                at += 8 + bytes;
            }
        }

        @Override
        String pickleName() {
            return "the legacy pickle";
        }

        @Override
        Storage readStorage(String key, long bytes) throws IOException {
            long[] r = ranges.get(key);
            if (r == null) throw bad(path, "the pickle refers to storage " + key + ", which the file does not hold");
            if (r[1] < bytes) throw bad(path, "storage " + key + " holds " + r[1] + " bytes, fewer than the " + bytes + " its tensors need");
            Storage s = Storage.allocateCpu(bytes);
            MemorySegment.copy(MemorySegment.ofArray(file), r[0], s.segment(), 0, bytes);
            return s;
        }
    }

    // ------------------------------------------------------------------ writing

    /**
     * Writes {@code obj} (a tensor, or maps, lists, {@code Object[]} tuples, numbers, strings, booleans and
     * null holding tensors) to {@code path} as {@code torch.save} does, atomically.
     */
    public static void save(Path path, Object obj) throws IOException {
        Arguments.nonNull("PyTorchFile.save", "path", path);
        Writer w = new Writer();
        byte[] pickle;
        try {
            pickle = w.pickle(obj);
        } catch (IllegalArgumentException ex) {
            w.closeCopies();
            throw new IllegalArgumentException("PyTorchFile.save: " + ex.getMessage(), ex);
        } catch (RuntimeException ex) { // a closed tensor, a failed device copy
            w.closeCopies();
            throw ex;
        }
        String folder = archiveName(path);
        try {
            AtomicFile.write("PyTorchFile.save", path, ch -> {
                CountingStream counted = new CountingStream(new BufferedOutputStream(Channels.newOutputStream(ch), 1 << 16));
                try (ZipOutputStream zip = new ZipOutputStream(counted)) {
                    putStored(zip, counted, folder + "/data.pkl", MemorySegment.ofArray(pickle));
                    putStored(zip, counted, folder + "/byteorder", MemorySegment.ofArray("little".getBytes(StandardCharsets.US_ASCII)));
                    for (Writer.Record r : w.records) putStored(zip, counted, folder + "/data/" + r.key(), r.bytes());
                    putStored(zip, counted, folder + "/version", MemorySegment.ofArray("3\n".getBytes(StandardCharsets.US_ASCII)));
                }
            });
        } finally {
            w.closeCopies();
        }
    }

    /** Saves {@code module}'s state dict ({@code torch.save(model.state_dict(), path)}), atomically. */
    public static void saveStateDict(Path path, TensorState<?> module) throws IOException {
        Arguments.nonNull("PyTorchFile.saveStateDict", "module", module);
        Map<String, Tensor> state = module.stateDict();
        try {
            save(path, state);
        } finally {
            closeTensors(state);
        }
    }

    /** As PyTorch's writer: the file's name without its last extension, or "archive". */
    private static String archiveName(Path path) {
        Path f = path.getFileName();
        String name = f == null ? "" : f.toString();
        int dot = name.lastIndexOf('.');
        if (dot >= 0) name = name.substring(0, dot);
        return name.isEmpty() || !name.chars().allMatch(c -> c > 0x20 && c < 0x7f && c != '/' && c != '\\') ? "archive" : name;
    }

    /** A stored (uncompressed) zip entry whose data starts at a multiple of 64 bytes, as PyTorch's writer. */
    private static void putStored(ZipOutputStream zip, CountingStream counted, String name, MemorySegment data) throws IOException {
        long n = data.byteSize();
        CRC32 crc = new CRC32();
        for (long off = 0; off < n; off += COPY_CHUNK) crc.update(data.asSlice(off, Math.min(COPY_CHUNK, n - off)).asByteBuffer());
        ZipEntry e = new ZipEntry(name);
        e.setMethod(ZipEntry.STORED);
        e.setSize(n);
        e.setCompressedSize(n);
        e.setCrc(crc.getValue());
        e.setTime(315532800000L + 12 * 3600_000L); // a fixed DOS time (1980-01-01), for reproducible files
        int nameLength = name.getBytes(StandardCharsets.UTF_8).length;
        long dataStart = counted.count + 30 + nameLength + 4;
        int pad = (int) ((ALIGNMENT - dataStart % ALIGNMENT) % ALIGNMENT);
        byte[] extra = new byte[4 + pad];
        extra[0] = 'F';
        extra[1] = 'B';
        extra[2] = (byte) pad;
        extra[3] = (byte) (pad >>> 8);
        java.util.Arrays.fill(extra, 4, extra.length, (byte) 'Z');
        e.setExtra(extra);
        zip.putNextEntry(e);
        byte[] buf = new byte[(int) Math.min(COPY_CHUNK, Math.max(n, 1))];
        for (long off = 0; off < n; off += buf.length) {
            int len = (int) Math.min(buf.length, n - off);
            MemorySegment.copy(data, off, MemorySegment.ofArray(buf), 0, len);
            zip.write(buf, 0, len);
        }
        zip.closeEntry();
    }

    /** Counts the bytes the zip writer emits, to place each entry's data; closing flushes (the channel is AtomicFile's). */
    private static final class CountingStream extends FilterOutputStream {
        long count;

        CountingStream(OutputStream out) {
            super(out);
        }

        @Override
        public void write(int b) throws IOException {
            out.write(b);
            count++;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
            count += len;
        }

        @Override
        public void close() throws IOException {
            out.flush();
        }
    }

    /** Pickles an object, giving each distinct storage a key and a record. */
    private static final class Writer {
        record Record(String key, MemorySegment bytes) {}

        private record Key(String key, DType dtype) {}

        final List<Record> records = new ArrayList<>();
        private final IdentityHashMap<Storage, Key> keys = new IdentityHashMap<>();
        private final List<Tensor> copies = new ArrayList<>();

        byte[] pickle(Object obj) {
            return new Pickler(this::writeTensor).finish(obj);
        }

        void closeCopies() {
            for (Tensor t : copies) t.close();
        }

        /** {@code _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, OrderedDict())}. */
        private boolean writeTensor(Pickler p, Object value) {
            if (!(value instanceof Tensor t)) return false;
            t.checkOpen("PyTorchFile.save");
            Tensor src = t;
            if (!t.device().isCpu()) { // a host copy of its own: the storage sharing of device tensors is not kept
                src = t.cpu();
                copies.add(src);
            }
            Key key = keys.get(src.storage());
            if (key != null && key.dtype() != src.dtype()) { // a storage viewed as another dtype: saved as its own copy
                src = src.contiguous() == src ? src.clone() : src.contiguous();
                copies.add(src);
                key = null;
            }
            if (key == null) {
                key = new Key(Integer.toString(records.size()), src.dtype());
                keys.put(src.storage(), key);
                long numel = src.storage().byteSize() / src.dtype().byteSize();
                records.add(new Record(key.key(), src.storage().segment().asSlice(0, numel * src.dtype().byteSize())));
            }
            long numel = src.storage().byteSize() / src.dtype().byteSize();
            p.global("torch._utils", "_rebuild_tensor_v2");
            Tensor s = src;
            String k = key.key();
            p.tuple(List.of(0, 1, 2, 3, 4, 5), i -> {
                switch (i) {
                    case 0 -> {
                        p.tuple(List.of(0, 1, 2, 3, 4), j -> {
                            switch (j) {
                                case 0 -> p.write("storage");
                                case 1 -> p.global("torch", storageName(s.dtype()));
                                case 2 -> p.write(k);
                                case 3 -> p.write("cpu");
                                default -> p.write(numel);
                            }
                        });
                        p.persistentId();
                    }
                    case 1 -> p.write(s.storageOffset());
                    case 2 -> p.longTuple(s.shape());
                    case 3 -> p.longTuple(s.strides());
                    case 4 -> p.write(t.requiresGrad() && t.isLeaf());
                    default -> p.emptyOrderedDict();
                }
            });
            p.reduce();
            return true;
        }
    }
}
