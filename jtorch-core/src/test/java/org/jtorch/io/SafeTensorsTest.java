package org.jtorch.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.Linear;
import org.jtorch.nn.Module;
import org.jtorch.nn.ReLU;
import org.jtorch.nn.Sequential;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * The safetensors format (https://github.com/huggingface/safetensors): reference files written by
 * {@code tools/fixtures/gen_safetensors.py} from PyTorch 1.13 tensors (the format written by hand with
 * struct/json, canonical layout), jtorch's own round trips, atomic writes, and rejection of corrupt
 * files with a {@link SafeTensors.FormatException} rather than a crash.
 */
class SafeTensorsTest {
    @TempDir
    Path dir;

    private static Path fixture(String file) {
        try {
            return Path.of(SafeTensorsTest.class.getResource("/fixtures/safetensors/" + file).toURI());
        } catch (URISyntaxException | NullPointerException ex) {
            throw new IllegalStateException("missing fixture " + file + "; run tools/fixtures/gen_safetensors.py", ex);
        }
    }

    private static List<Case> fileCases() {
        return Fixtures.load("safetensors").stream().filter(c -> c.op().equals("file")).toList();
    }

    private static List<String> names(Case c) {
        List<String> out = new ArrayList<>();
        for (JsonElement e : c.args().getAsJsonArray("names")) out.add(e.getAsString());
        return out;
    }

    private static Map<String, String> metadata(Case c) {
        JsonElement m = c.args().get("metadata");
        if (m == null || m.isJsonNull()) return null;
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<String, JsonElement> e : m.getAsJsonObject().entrySet()) out.put(e.getKey(), e.getValue().getAsString());
        return out;
    }

    private static void closeAll(Map<String, Tensor> m) {
        for (Tensor t : m.values()) t.close();
    }

    // ------------------------------------------------------------------ PyTorch reference files

    @TestFactory
    Stream<DynamicTest> readsReferenceFilesWithoutCopying() {
        return fileCases().stream().map(c -> DynamicTest.dynamicTest("load/" + c.name(), () -> {
            List<String> names = names(c);
            JsonArray expected = c.expected().getAsJsonArray();
            try (SafeTensors.Loaded l = SafeTensors.load(fixture(c.args().get("file").getAsString()))) {
                assertEquals(names, List.copyOf(l.tensors().keySet()), "tensor names in header order");
                Map<String, String> meta = metadata(c);
                assertEquals(meta == null ? Map.of() : meta, l.metadata());
                for (int i = 0; i < names.size(); i++) {
                    Tensor t = l.get(names.get(i));
                    assertTrue(t.storage().segment().isMapped(), names.get(i) + " views the mapping");
                    Fixtures.assertMatches(expected.get(i).getAsJsonObject(), t, 0, 0, c.name() + "/" + names.get(i));
                }
            }
        }));
    }

    @TestFactory
    Stream<DynamicTest> loadCopyMatchesReferenceFiles() {
        return fileCases().stream().map(c -> DynamicTest.dynamicTest("loadCopy/" + c.name(), () -> {
            List<String> names = names(c);
            JsonArray expected = c.expected().getAsJsonArray();
            Map<String, Tensor> m = SafeTensors.loadCopy(fixture(c.args().get("file").getAsString()));
            try {
                assertEquals(names, List.copyOf(m.keySet()));
                for (int i = 0; i < names.size(); i++) {
                    Tensor t = m.get(names.get(i));
                    assertFalse(t.storage().segment().isMapped(), "owned copy");
                    Fixtures.assertMatches(expected.get(i).getAsJsonObject(), t, 0, 0, c.name() + "/" + names.get(i));
                }
            } finally {
                closeAll(m);
            }
        }));
    }

    @TestFactory
    Stream<DynamicTest> writesFilesByteIdenticalToTheReferenceGenerator() {
        return fileCases().stream().map(c -> DynamicTest.dynamicTest("save/" + c.name(), () -> {
            List<String> names = names(c);
            Map<String, Tensor> tensors = new LinkedHashMap<>();
            for (int i = 0; i < names.size(); i++) tensors.put(names.get(i), c.input(i)); // strided views stay strided
            try {
                Path out = dir.resolve(c.name() + ".safetensors");
                SafeTensors.save(out, tensors, metadata(c));
                byte[] reference = Files.readAllBytes(fixture(c.args().get("file").getAsString()));
                assertArrayEquals(reference, Files.readAllBytes(out));
                assertArrayEquals(reference, SafeTensors.serialize(tensors, metadata(c)));
            } finally {
                closeAll(tensors);
            }
        }));
    }

    @Test
    void pytorchStateDictLoadsIntoAnEqualSequential() throws IOException {
        Case fwd = Fixtures.load("safetensors").stream().filter(c -> c.op().equals("forward")).findFirst().orElseThrow();
        try (Sequential model = new Sequential(new Linear(4, 3), new ReLU(), new Linear(3, 2))) {
            Map<String, Tensor> state = SafeTensors.loadCopy(fixture("mlp.safetensors"));
            try {
                Module.LoadResult r = model.loadStateDict(state);
                assertTrue(r.missingKeys().isEmpty() && r.unexpectedKeys().isEmpty());
            } finally {
                closeAll(state);
            }
            try (Tensor x = fwd.input(0); Tensor y = model.forward(x)) {
                Fixtures.assertMatches(fwd.expectedTensor(), y, 1e-5, 1e-6, "mlp forward");
            }
        }
    }

    // ------------------------------------------------------------------ round trips

    @Test
    void everyDtypeRoundTripsThroughMappedAndCopiedLoads() throws IOException {
        Map<String, Tensor> in = new LinkedHashMap<>();
        double[] values = {0, 1, -2, 3.5, 100, -7};
        for (DType d : DType.values()) {
            double[] v = values.clone();
            if (d == DType.BOOL) for (int i = 0; i < v.length; i++) v[i] = v[i] != 0 ? 1 : 0;
            if (d == DType.UINT8) for (int i = 0; i < v.length; i++) v[i] = Math.abs(Math.floor(v[i]));
            if (!d.isFloatingPoint()) for (int i = 0; i < v.length; i++) v[i] = Math.floor(v[i]);
            in.put(d.pyName(), Torch.tensor(v, d, 2, 3));
        }
        Path p = dir.resolve("all.safetensors");
        try {
            SafeTensors.save(p, in, Map.of("k", "v"));
            try (SafeTensors.Loaded l = SafeTensors.load(p)) {
                assertEquals(Map.of("k", "v"), l.metadata());
                for (DType d : DType.values()) {
                    Tensor t = l.get(d.pyName());
                    assertEquals(d, t.dtype());
                    assertArrayEquals(new long[] {2, 3}, t.shape());
                    assertArrayEquals(in.get(d.pyName()).toDoubleArray(), t.toDoubleArray(), d.pyName());
                    assertEquals(d, SafeTensors.readInfo(p).get(d.pyName()).dtype());
                }
            }
        } finally {
            closeAll(in);
        }
    }

    @Test
    void moduleStateDictRoundTrips() throws IOException {
        Path p = dir.resolve("model.safetensors");
        try (Sequential a = new Sequential(new Linear(5, 4), new ReLU(), new Linear(4, 3));
             Sequential b = new Sequential(new Linear(5, 4), new ReLU(), new Linear(4, 3))) {
            Map<String, Tensor> sa = a.stateDict();
            try {
                SafeTensors.save(p, sa);
                Map<String, Tensor> loaded = SafeTensors.loadCopy(p);
                try {
                    b.loadStateDict(loaded);
                } finally {
                    closeAll(loaded);
                }
                Map<String, Tensor> sb = b.stateDict();
                try {
                    assertEquals(List.copyOf(sa.keySet()), List.copyOf(sb.keySet()));
                    for (String k : sa.keySet()) assertArrayEquals(sa.get(k).toFloatArray(), sb.get(k).toFloatArray(), k);
                } finally {
                    closeAll(sb);
                }
                try (Tensor x = Torch.randn(2, 5); Tensor ya = a.forward(x); Tensor yb = b.forward(x)) {
                    assertArrayEquals(ya.toFloatArray(), yb.toFloatArray());
                }
            } finally {
                closeAll(sa);
            }
        }
    }

    @Test
    void moduleHelpersRoundTripWithoutLeaks() throws IOException {
        Path p = dir.resolve("helpers.safetensors");
        try (Sequential a = new Sequential(new Linear(3, 2), new ReLU(), new Linear(2, 1));
             Sequential b = new Sequential(new Linear(3, 2), new ReLU(), new Linear(2, 1));
             Sequential wider = new Sequential(new Linear(3, 4))) {
            SafeTensors.saveStateDict(p, a);
            Module.LoadResult r = SafeTensors.loadStateDict(p, b, true);
            assertTrue(r.missingKeys().isEmpty() && r.unexpectedKeys().isEmpty());
            try (Tensor x = Torch.randn(4, 3); Tensor ya = a.forward(x); Tensor yb = b.forward(x)) {
                assertArrayEquals(ya.toFloatArray(), yb.toFloatArray());
            }
            IllegalArgumentException ex = assertThrows(IllegalArgumentException.class, () -> SafeTensors.loadStateDict(p, wider, true));
            assertTrue(ex.getMessage().contains("size mismatch for 0.weight"), ex.getMessage());
        }
    }

    @Test
    void headerIsPaddedWithSpacesToAMultipleOfEight() {
        byte[] empty = SafeTensors.serialize(Map.of(), null);
        assertEquals(16, empty.length);
        assertEquals(8, ByteBuffer.wrap(empty).order(ByteOrder.LITTLE_ENDIAN).getLong(0));
        assertEquals("{}      ", new String(empty, 8, 8, StandardCharsets.UTF_8));
        try (Tensor t = Torch.tensor(new float[] {1, 2})) {
            byte[] b = SafeTensors.serialize(Map.of("a", t), null);
            long n = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
            assertEquals(0, n % 8);
            String header = new String(b, 8, (int) n, StandardCharsets.UTF_8);
            assertEquals("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", header.stripTrailing());
            assertEquals(8 + n + 8, b.length);
        }
    }

    @Test
    void mappedTensorsAreReadOnlyAndInvalidAfterClose() throws IOException {
        Path p = dir.resolve("ro.safetensors");
        try (Tensor t = Torch.tensor(new float[] {1, 2, 3})) {
            SafeTensors.save(p, Map.of("t", t));
        }
        byte[] before = Files.readAllBytes(p);
        Tensor view;
        Tensor alias;
        try (SafeTensors.Loaded l = SafeTensors.load(p)) {
            view = l.get("t");
            alias = view.alias(); // a user's own reference to the mapped storage
            assertThrows(IllegalArgumentException.class, () -> view.add_(1.0), "in-place write to a read-only mapping");
            assertThrows(IllegalArgumentException.class, () -> l.get("missing"));
            try (Tensor doubled = view.mul(2.0)) {
                assertArrayEquals(new float[] {2, 4, 6}, doubled.toFloatArray());
            }
        }
        assertArrayEquals(before, Files.readAllBytes(p), "file unchanged");
        assertThrows(IllegalStateException.class, view::toFloatArray, "use after the mapping was closed");
        assertThrows(IllegalStateException.class, alias::toFloatArray, "the unmapped memory is never read");
        alias.close();
    }

    // ------------------------------------------------------------------ atomic writes

    @Test
    void failedWriteLeavesTheExistingFileUntouched() throws IOException {
        Path p = dir.resolve("ckpt.safetensors");
        try (Tensor t = Torch.tensor(new float[] {1, 2, 3})) {
            SafeTensors.save(p, Map.of("t", t));
        }
        byte[] before = Files.readAllBytes(p);
        Tensor good = Torch.randn(64, 64);
        Tensor closed = Torch.randn(8);
        closed.close();
        Map<String, Tensor> m = new LinkedHashMap<>();
        m.put("good", good); // written to the temporary file before the failure
        m.put("closed", closed);
        try {
            IllegalStateException ex = assertThrows(IllegalStateException.class, () -> SafeTensors.save(p, m));
            assertTrue(ex.getMessage().contains("closed"), ex.getMessage());
        } finally {
            good.close();
        }
        assertArrayEquals(before, Files.readAllBytes(p));
        try (Stream<Path> files = Files.list(dir)) {
            assertEquals(List.of(p), files.toList(), "no temporary file left behind");
        }
    }

    @Test
    void newFilesAreWorldReadableAndReplacedFilesKeepTheirPermissions() throws IOException {
        org.junit.jupiter.api.Assumptions.assumeTrue(
                java.nio.file.FileSystems.getDefault().supportedFileAttributeViews().contains("posix"));
        Path p = dir.resolve("perm.safetensors");
        try (Tensor t = Torch.tensor(new float[] {1})) {
            SafeTensors.save(p, Map.of("t", t));
            assertEquals("rw-r--r--", java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(p)));
            Files.setPosixFilePermissions(p, java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw----"));
            SafeTensors.save(p, Map.of("t", t));
            assertEquals("rw-rw----", java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(p)));
        }
    }

    @Test
    void invalidNamesAreRejectedBeforeWriting() {
        try (Tensor t = Torch.tensor(new float[] {1})) {
            Path p = dir.resolve("x.safetensors");
            IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
                    () -> SafeTensors.save(p, Map.of("__metadata__", t)));
            assertTrue(ex.getMessage().contains("reserved"), ex.getMessage());
            assertThrows(IllegalArgumentException.class, () -> SafeTensors.save(p, Map.of("bad\uD800", t)));
            assertFalse(Files.exists(p));
        }
    }

    // ------------------------------------------------------------------ corrupt files

    /** A file with the given header text (length field exact, no padding) followed by {@code dataBytes} zero bytes. */
    private Path corrupt(String header, int dataBytes) throws IOException {
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        return write(h.length, h, dataBytes);
    }

    private Path write(long lengthField, byte[] header, int dataBytes) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(8 + header.length + dataBytes).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(lengthField).put(header);
        Path p = Files.createTempFile(dir, "corrupt", ".safetensors");
        Files.write(p, b.array());
        return p;
    }

    private static void assertRejected(Path p, String messagePart) {
        SafeTensors.FormatException ex = assertThrows(SafeTensors.FormatException.class, () -> SafeTensors.load(p).close());
        assertTrue(ex.getMessage().contains(messagePart), "message '" + ex.getMessage() + "' should contain '" + messagePart + "'");
        assertThrows(SafeTensors.FormatException.class, () -> closeAll(SafeTensors.loadCopy(p)));
    }

    private static String entry(String name, String dtype, String shape, long begin, long end) {
        return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" + begin + "," + end + "]}";
    }

    @Test
    void rejectsBadHeaderLengths() throws IOException {
        Path tiny = dir.resolve("tiny.safetensors");
        Files.write(tiny, new byte[] {1, 2, 3});
        assertRejected(tiny, "too small");
        assertRejected(write(1000, "{}".getBytes(StandardCharsets.UTF_8), 0), "exceeds the file size");
        assertRejected(write(-1, "{}".getBytes(StandardCharsets.UTF_8), 0), "exceeds the limit");
        assertRejected(write(SafeTensors.MAX_HEADER_BYTES + 1, new byte[0], 0), "exceeds the limit");
    }

    @Test
    void rejectsHeadersThatAreNotAJsonObject() throws IOException {
        assertRejected(corrupt("[1, 2]", 0), "not a JSON object");
        assertRejected(corrupt("{\"a\": ", 0), "not valid JSON");
        assertRejected(corrupt("{} x", 0), "not valid JSON");
        assertRejected(corrupt("{\"a\":1,}", 0), "not valid JSON");
        assertRejected(corrupt("{\"a\":" + "[".repeat(10_000) + "]".repeat(10_000) + "}", 0), "nesting");
        assertRejected(write(4, new byte[] {'{', '"', (byte) 0xC3, '"'}, 0), "UTF-8");
        assertRejected(corrupt("{\"a\":[1,2]}", 0), "entry is not a JSON object");
        assertRejected(corrupt("{\"__metadata__\":{\"k\":1}}", 0), "is not a string");
    }

    @Test
    void rejectsUnknownDtypesAndBadEntries() throws IOException {
        assertRejected(corrupt("{" + entry("a", "F8_E4M3", "[2]", 0, 2) + "}", 2), "unsupported dtype 'F8_E4M3'");
        assertRejected(corrupt("{" + entry("a", "f32", "[2]", 0, 8) + "}", 8), "unsupported dtype 'f32'");
        assertRejected(corrupt("{" + entry("a", "F32", "[-2]", 0, 8) + "}", 8), "non-negative integers");
        assertRejected(corrupt("{" + entry("a", "F32", "[2.0]", 0, 8) + "}", 8), "non-negative integers");
        assertRejected(corrupt("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8), "data_offsets");
        assertRejected(corrupt("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}}", 8), "unknown field 'x'");
        assertRejected(corrupt("{" + entry("a", "F32", "[4611686018427387904,4]", 0, 8) + "}", 8), "too many");
    }

    @Test
    void rejectsShapesThatDoNotMatchTheirOffsets() throws IOException {
        assertRejected(corrupt("{" + entry("a", "F32", "[3]", 0, 8) + "}", 8), "needs 12 bytes but data_offsets [0, 8] span 8");
        assertRejected(corrupt("{" + entry("a", "F32", "[2]", 8, 0) + "}", 8), "invalid data_offsets");
    }

    @Test
    void rejectsOffsetsOutOfBoundsOverlappingOrNotCoveringTheData() throws IOException {
        assertRejected(corrupt("{" + entry("a", "F32", "[2]", 0, 8) + "}", 4), "out of bounds");
        assertRejected(corrupt("{" + entry("a", "F32", "[2]", 0, 8) + "}", 12), "cover 8 bytes of data but the file holds 12");
        assertRejected(corrupt("{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[1]", 4, 8) + "}", 8), "overlap");
        assertRejected(corrupt("{" + entry("a", "F32", "[1]", 0, 4) + "," + entry("b", "F32", "[1]", 8, 12) + "}", 12), "gap");
        assertRejected(corrupt("{" + entry("a", "F32", "[1]", 4, 8) + "}", 8), "gap");
    }

    @Test
    void rejectsDuplicateNames() throws IOException {
        assertRejected(corrupt("{" + entry("a", "F32", "[1]", 0, 4) + "," + entry("a", "F32", "[1]", 4, 8) + "}", 8),
                "duplicate key \"a\"");
    }

    @Test
    void emptyTensorsMayShareAnOffset() throws IOException {
        Path p = corrupt("{" + entry("e1", "F32", "[0]", 4, 4) + "," + entry("a", "F32", "[1]", 0, 4) + ","
                + entry("e2", "I64", "[2,0]", 4, 4) + "}", 4);
        try (SafeTensors.Loaded l = SafeTensors.load(p)) {
            assertEquals(List.of("e1", "a", "e2"), List.copyOf(l.tensors().keySet()));
            assertArrayEquals(new long[] {2, 0}, l.get("e2").shape());
            assertEquals(0L, l.get("e2").numel());
        }
    }

    /** Random byte flips and truncations of a valid file load cleanly or fail with a FormatException, never otherwise. */
    @Test
    void fuzzedCorruptionsFailCleanly() throws IOException {
        byte[] valid = Files.readAllBytes(fixture("dtypes.safetensors"));
        long n = ByteBuffer.wrap(valid).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
        Random rnd = new Random(1234);
        Path p = dir.resolve("fuzz.safetensors");
        int rejected = 0;
        for (int iter = 0; iter < 300; iter++) {
            byte[] b;
            if (iter % 5 == 0) {
                b = java.util.Arrays.copyOf(valid, rnd.nextInt(valid.length));
            } else {
                b = valid.clone();
                int flips = 1 + rnd.nextInt(3);
                for (int k = 0; k < flips; k++) {
                    int at = rnd.nextInt((int) (8 + n)); // length field and header: the parts that are validated
                    b[at] = (byte) (rnd.nextBoolean() ? rnd.nextInt(256) : b[at] ^ (1 << rnd.nextInt(8)));
                }
            }
            Files.write(p, b);
            try (SafeTensors.Loaded l = SafeTensors.load(p)) {
                for (Tensor t : l.tensors().values()) t.toDoubleArray(); // every element readable
            } catch (SafeTensors.FormatException expected) {
                rejected++;
            } catch (Throwable other) {
                fail("iteration " + iter + ": unexpected " + other, other);
            }
        }
        assertTrue(rejected > 200, "most corruptions are detected (" + rejected + " of 300)");
    }

    // ------------------------------------------------------------------ the header's JSON

    @Test
    void jsonReaderIsStrict() {
        assertEquals(Map.of("a", List.of(1L, -2L, 2.5, true, Json.NULL), "b", "x\"\n\u00e9\uD83D\uDE00"),
                Json.parse(" {\"a\": [1, -2, 2.5, true, null], \"b\": \"x\\\"\\n\\u00e9\\ud83d\\ude00\"} "));
        for (String bad : new String[] {"", "01", "[1,]", "{\"a\" 1}", "'a'", "\"\t\"", "\"\\x\"", "tru", "1.", "-", "[1] [2]",
                "99999999999999999999", "{\"a\":1,\"a\":2}", "NaN"}) {
            assertThrows(IllegalArgumentException.class, () -> Json.parse(bad), bad);
        }
    }

    @Test
    void jsonWriterEscapesAsSerdeJson() {
        StringBuilder sb = new StringBuilder();
        Json.writeString(sb, "q\"b\\\b\f\n\r\t\u0001é/");
        assertEquals("\"q\\\"b\\\\\\b\\f\\n\\r\\t\\u0001é/\"", sb.toString());
        assertEquals("q\"b\\\b\f\n\r\t\u0001é/", Json.parse(sb.toString()));
    }

    @Test
    void headerOnlyInfoReportsDtypeShapeAndOffsets() throws IOException {
        Map<String, SafeTensors.TensorInfo> info = SafeTensors.readInfo(fixture("noncontig.safetensors"));
        SafeTensors.TensorInfo t = info.get("transposed");
        assertEquals(DType.FLOAT32, t.dtype());
        assertArrayEquals(new long[] {6, 4}, t.shape());
        assertEquals(0, t.begin());
        assertEquals(96, t.end());
    }
}
