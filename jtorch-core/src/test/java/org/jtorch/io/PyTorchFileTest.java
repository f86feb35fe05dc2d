package org.jtorch.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.math.BigInteger;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.BatchNorm2d;
import org.jtorch.nn.Conv2d;
import org.jtorch.nn.Flatten;
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
 * PyTorch's .pt files: files written by {@code torch.save} of PyTorch 1.13
 * ({@code tools/fixtures/gen_pt_files.py}, the saved objects described in {@code pt_files.json}) are
 * read value for value, views stay views, state dicts load into jtorch models that then compute
 * PyTorch's outputs, disallowed globals and big-endian data are refused, corrupt files fail with a
 * {@link PyTorchFile.FormatException}, and jtorch's own files read back as written.
 */
class PyTorchFileTest {
    @TempDir
    Path dir;

    static Path fixture(String name) {
        try {
            return Path.of(PyTorchFileTest.class.getResource("/fixtures/pt/" + name + ".pt").toURI());
        } catch (URISyntaxException | NullPointerException ex) {
            throw new IllegalStateException("missing fixture " + name + ".pt; run tools/fixtures/gen_pt_files.py", ex);
        }
    }

    private static Stream<Case> cases(String op) {
        return Fixtures.load("pt_files").stream().filter(c -> c.op().equals(op));
    }

    // ------------------------------------------------------------------ files from PyTorch

    @TestFactory
    Stream<DynamicTest> readsWhatTorchSaveWrote() {
        return cases("file").map(c -> DynamicTest.dynamicTest(c.name(), () -> {
            Object loaded = PyTorchFile.load(fixture(c.name()));
            try {
                assertValue(c.args().getAsJsonObject("object"), loaded, c.name());
                for (JsonElement pair : c.args().getAsJsonArray("shares")) {
                    Tensor a = (Tensor) at(loaded, pair.getAsJsonArray().get(0).getAsJsonArray());
                    Tensor b = (Tensor) at(loaded, pair.getAsJsonArray().get(1).getAsJsonArray());
                    assertSame(a.storage(), b.storage(), c.name() + ": " + pair + " share one storage in PyTorch");
                }
            } finally {
                PyTorchFile.closeTensors(loaded);
            }
        }));
    }

    /** Compares a loaded value with gen_pt_files.py's description of the saved Python value. */
    static void assertValue(JsonObject expected, Object actual, String where) {
        String type = expected.get("type").getAsString();
        switch (type) {
            case "tensor" -> {
                Tensor t = assertInstanceOf(Tensor.class, actual, where);
                JsonObject enc = expected.getAsJsonObject("value");
                Fixtures.assertMatches(enc, t, 0, 0, where);
                if (enc.has("strides")) {
                    assertArrayEquals(longs(enc.getAsJsonArray("strides")), t.strides(), where + ": strides");
                    assertEquals(enc.get("offset").getAsLong(), t.storageOffset(), where + ": storage offset");
                }
                assertEquals(expected.get("requires_grad").getAsBoolean(), t.requiresGrad(), where + ": requires_grad");
            }
            case "dict" -> {
                Map<?, ?> m = assertInstanceOf(Map.class, actual, where);
                JsonArray items = expected.getAsJsonArray("items");
                assertEquals(items.size(), m.size(), where + ": size");
                Iterator<? extends Map.Entry<?, ?>> it = m.entrySet().iterator();
                for (JsonElement item : items) {
                    Map.Entry<?, ?> e = it.next(); // in order, as Python's dicts
                    assertValue(item.getAsJsonArray().get(0).getAsJsonObject(), e.getKey(), where + " key");
                    assertValue(item.getAsJsonArray().get(1).getAsJsonObject(), e.getValue(), where + "[" + e.getKey() + "]");
                }
            }
            case "list", "tuple" -> {
                List<?> l = assertInstanceOf(List.class, actual, where);
                if (type.equals("list")) assertInstanceOf(ArrayList.class, l, where + ": a list is an ArrayList");
                else assertThrows(UnsupportedOperationException.class, () -> l.add(null), where + ": a tuple is unmodifiable");
                JsonArray items = expected.getAsJsonArray("items");
                assertEquals(items.size(), l.size(), where + ": length");
                for (int i = 0; i < items.size(); i++) assertValue(items.get(i).getAsJsonObject(), l.get(i), where + "[" + i + "]");
            }
            case "none" -> assertNull(actual, where);
            case "bool" -> assertEquals(expected.get("value").getAsBoolean(), actual, where);
            case "int" -> {
                BigInteger v = new BigInteger(expected.get("value").getAsString());
                assertEquals(v.bitLength() < 64 ? (Object) v.longValue() : v, actual, where);
            }
            case "float" -> assertEquals(Double.parseDouble(expected.get("value").getAsString()), actual, where);
            case "str" -> assertEquals(expected.get("value").getAsString(), actual, where);
            default -> fail("unknown type " + type);
        }
    }

    private static Object at(Object root, JsonArray path) {
        Object v = root;
        for (JsonElement k : path) v = ((Map<?, ?>) v).get(k.getAsString());
        return v;
    }

    private static long[] longs(JsonArray a) {
        long[] out = new long[a.size()];
        for (int i = 0; i < out.length; i++) out[i] = a.get(i).getAsLong();
        return out;
    }

    private static Module model(String name) {
        return switch (name) {
            case "mlp_state_dict" -> new Sequential(new Linear(4, 8), new ReLU(), new Linear(8, 3));
            case "cnn_state_dict" -> new Sequential(new Conv2d(1, 2, 3), new BatchNorm2d(2), new ReLU(), new Flatten(), new Linear(2 * 4 * 4, 3));
            default -> throw new IllegalArgumentException(name);
        };
    }

    @TestFactory
    Stream<DynamicTest> stateDictsSavedByPyTorchGiveItsOutputs() {
        return cases("model").map(c -> DynamicTest.dynamicTest(c.name(), () -> {
            Module m = model(c.name());
            Module.LoadResult r = PyTorchFile.loadStateDict(fixture(c.name()), m, true);
            assertTrue(r.missingKeys().isEmpty() && r.unexpectedKeys().isEmpty(), r.toString());
            m.eval();
            try (Tensor x = Fixtures.decode(c.inputs().get(0).getAsJsonObject()); Tensor y = m.forward(x)) {
                Fixtures.assertMatches(c.expected().getAsJsonObject(), y, 1e-5, 1e-6, c.name());
            }
        }));
    }

    @Test
    void stateDictOfBatchNormKeepsItsInt64Counter() throws IOException {
        Map<String, Tensor> sd = PyTorchFile.loadStateDict(fixture("cnn_state_dict"));
        try {
            assertEquals(List.of("0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var", "1.num_batches_tracked",
                    "4.weight", "4.bias"), new ArrayList<>(sd.keySet()));
            Tensor n = sd.get("1.num_batches_tracked");
            assertEquals(DType.INT64, n.dtype());
            assertEquals(3L, (long) n.item(), "three training steps in gen_pt_files.py");
        } finally {
            PyTorchFile.closeTensors(sd);
        }
    }

    @Test
    void tensorsSavedOnAGpuLoadOntoTheCpu() throws IOException {
        Map<String, Tensor> sd = PyTorchFile.loadStateDict(fixture("saved_on_gpu")); // storage records with location "cuda:0"
        try {
            for (Tensor t : sd.values()) assertTrue(t.device().isCpu(), t.device().toString());
        } finally {
            PyTorchFile.closeTensors(sd);
        }
    }

    @Test
    void legacyFormatOfPyTorchBefore16IsRead() throws IOException {
        Object loaded = PyTorchFile.load(fixture("legacy_format")); // torch.save(torch.ones(2), _use_new_zipfile_serialization=False)
        try (Tensor t = assertInstanceOf(Tensor.class, loaded)) {
            assertEquals(DType.FLOAT32, t.dtype());
            assertArrayEquals(new double[] {1, 1}, t.toDoubleArray());
        }
    }

    // ------------------------------------------------------------------ refusals

    @Test
    void aGlobalOffTheAllowListIsRefusedByName() {
        // {"payload": obj} where obj.__reduce__ returns (os.system, ("echo ...",)): unpickling would run it.
        var ex = assertThrows(PyTorchFile.FormatException.class, () -> PyTorchFile.load(fixture("calls_system")));
        assertTrue(ex.getMessage().contains("posix.system") && ex.getMessage().contains("allow-list"), ex.getMessage());
    }

    @Test
    void tensorKindsJtorchLacksAreRefusedByKind() {
        var ex = assertThrows(PyTorchFile.FormatException.class, () -> PyTorchFile.load(fixture("sparse_tensor"))); // eye(3).to_sparse()
        assertTrue(ex.getMessage().contains("_rebuild_sparse_tensor") && ex.getMessage().contains("sparse"), ex.getMessage());
    }

    @Test
    void bigEndianDataIsRefused() {
        var ex = assertThrows(PyTorchFile.FormatException.class, () -> PyTorchFile.load(fixture("big_endian")));
        assertTrue(ex.getMessage().contains("big-endian"), ex.getMessage());
    }

    @Test
    void aStateDictLoaderRefusesOtherObjects() {
        var ex = assertThrows(PyTorchFile.FormatException.class, () -> PyTorchFile.loadStateDict(fixture("nested")));
        assertTrue(ex.getMessage().contains("not a state dict") && ex.getMessage().contains("'weights'"), ex.getMessage());
    }

    @Test
    void filesThatAreNotPyTorchFilesAreNamed() throws IOException {
        Path text = dir.resolve("notes.pt");
        Files.writeString(text, "hello");
        var ex = assertThrows(PyTorchFile.FormatException.class, () -> PyTorchFile.load(text));
        assertTrue(ex.getMessage().contains(text.toString()) && ex.getMessage().contains("not a PyTorch file"), ex.getMessage());
    }

    @Test
    void truncatedFilesFailWithAFormatException() throws IOException {
        byte[] whole = Files.readAllBytes(fixture("mlp_state_dict"));
        for (int cut : new int[] {10, 100, whole.length / 2, whole.length - 30}) {
            Path p = dir.resolve("cut" + cut + ".pt");
            Files.write(p, java.util.Arrays.copyOf(whole, cut));
            assertThrows(IOException.class, () -> PyTorchFile.load(p), "cut at " + cut);
        }
    }

    /**
     * Random byte changes inside data.pkl (the zip rewritten around it) give a value or an IOException,
     * never another exception: every length and index of the pickle is checked.
     */
    @Test
    void corruptedPicklesFailCleanly() throws IOException {
        byte[] pickle;
        try (var z = new java.util.zip.ZipFile(fixture("nested").toFile())) {
            pickle = z.getInputStream(z.getEntry("nested/data.pkl")).readAllBytes();
        }
        Random rnd = new Random(7);
        for (int trial = 0; trial < 600; trial++) {
            byte[] bad = pickle.clone();
            for (int k = 0; k < 1 + rnd.nextInt(3); k++) bad[rnd.nextInt(bad.length)] = (byte) rnd.nextInt(256);
            Path p = dir.resolve("fuzz.pt");
            try (var z = new java.util.zip.ZipFile(fixture("nested").toFile());
                 var out = new java.util.zip.ZipOutputStream(Files.newOutputStream(p))) {
                for (var en = z.entries(); en.hasMoreElements(); ) {
                    var e = en.nextElement();
                    out.putNextEntry(new java.util.zip.ZipEntry(e.getName()));
                    out.write(e.getName().endsWith("data.pkl") ? bad : z.getInputStream(e).readAllBytes());
                    out.closeEntry();
                }
            }
            try {
                PyTorchFile.closeTensors(PyTorchFile.load(p));
            } catch (IOException expected) {
                // the corruption was detected
            } catch (RuntimeException ex) {
                throw new AssertionError("trial " + trial + ": " + ex, ex);
            }
        }
    }

    @Test
    void aListThatContainsItselfLoadsAndCloses() throws IOException {
        // As Python's l = [torch.ones(1)]; l.append(l): the list is memoised before its items, which fetch it back.
        Path p = dir.resolve("cyclic.pt");
        Map<String, Object> holder = new LinkedHashMap<>();
        try (Tensor one = Torch.ones(1)) {
            List<Object> l = new ArrayList<>();
            l.add(one);
            l.add(l);
            holder.put("l", l);
            PyTorchFile.save(p, holder);
        }
        Object back = PyTorchFile.load(p);
        List<?> l = (List<?>) ((Map<?, ?>) back).get("l");
        assertSame(l, l.get(1));
        PyTorchFile.closeTensors(back);
        assertTrue(((Tensor) l.get(0)).isClosed());
    }

    // ------------------------------------------------------------------ writing

    @Test
    void roundTripKeepsValuesViewsAndStructure() throws IOException {
        try (Tensor base = Torch.arange(12).to(DType.FLOAT32).reshape(3, 4);
             Tensor row = base.select(0, 1);
             Tensor t = base.t();
             Tensor half = Torch.randn(2, 3).to(DType.BFLOAT16);
             Tensor flags = Torch.tensor(new long[] {1, 0, 1}).to(DType.BOOL)) {
            Map<String, Object> obj = new LinkedHashMap<>();
            obj.put("base", base);
            obj.put("row", row);
            obj.put("t", t);
            obj.put("half", half);
            obj.put("nested", List.of(flags, 3L, 2.5, "s", new Object[] {true, BigInteger.TWO.pow(70)}));
            Map<Object, Object> ints = new LinkedHashMap<>();
            ints.put(1L, null);
            obj.put("ints", ints);
            Path p = dir.resolve("round.pt");
            PyTorchFile.save(p, obj);
            Object back = PyTorchFile.load(p);
            try {
                Map<?, ?> m = (Map<?, ?>) back;
                assertEquals(List.of("base", "row", "t", "half", "nested", "ints"), new ArrayList<>(m.keySet()));
                Tensor b = (Tensor) m.get("base");
                Tensor r = (Tensor) m.get("row");
                Tensor tt = (Tensor) m.get("t");
                assertSame(b.storage(), r.storage());
                assertSame(b.storage(), tt.storage());
                assertEquals(4, r.storageOffset());
                assertArrayEquals(new long[] {1, 4}, tt.strides());
                assertArrayEquals(t.toDoubleArray(), tt.toDoubleArray());
                assertArrayEquals(half.toDoubleArray(), ((Tensor) m.get("half")).toDoubleArray());
                List<?> nested = (List<?>) m.get("nested");
                assertArrayEquals(flags.toLongArray(), ((Tensor) nested.get(0)).toLongArray());
                assertEquals(List.of(3L, 2.5, "s"), nested.subList(1, 4));
                assertEquals(List.of(true, BigInteger.TWO.pow(70)), nested.get(4));
                assertEquals(ints, m.get("ints"));
            } finally {
                PyTorchFile.closeTensors(back);
            }
        }
    }

    @Test
    void noneIsAValueToSave() throws IOException {
        Path p = dir.resolve("none.pt");
        PyTorchFile.save(p, null); // torch.save(None, f)
        assertNull(PyTorchFile.load(p));
    }

    @Test
    void aModelSavedAndLoadedComputesTheSame() throws IOException {
        Torch.manualSeed(3);
        Module a = model("cnn_state_dict");
        Module b = model("cnn_state_dict");
        Path p = dir.resolve("model.pth");
        PyTorchFile.saveStateDict(p, a);
        PyTorchFile.loadStateDict(p, b, true);
        a.eval();
        b.eval();
        try (Tensor x = Torch.randn(2, 1, 6, 6); Tensor ya = a.forward(x); Tensor yb = b.forward(x)) {
            assertArrayEquals(ya.toDoubleArray(), yb.toDoubleArray());
        }
    }

    @Test
    void writesTheLayoutOfTorchSave() throws IOException {
        Path p = dir.resolve("layout.pt");
        try (Tensor x = Torch.ones(3)) {
            PyTorchFile.save(p, Map.of("x", x));
        }
        try (var z = new java.util.zip.ZipFile(p.toFile())) {
            List<String> names = z.stream().map(java.util.zip.ZipEntry::getName).toList();
            assertEquals(List.of("layout/data.pkl", "layout/byteorder", "layout/data/0", "layout/version"), names);
            for (var e : z.stream().toList()) assertEquals(java.util.zip.ZipEntry.STORED, e.getMethod(), e.getName());
            assertEquals("3\n", new String(z.getInputStream(z.getEntry("layout/version")).readAllBytes()));
        }
        // Each record's data starts at a multiple of 64 bytes (PyTorch aligns them for mmap).
        byte[] file = Files.readAllBytes(p);
        int at = 0;
        while (at + 30 <= file.length && file[at] == 'P' && file[at + 1] == 'K' && file[at + 2] == 3 && file[at + 3] == 4) {
            int nameLength = (file[at + 26] & 0xff) | (file[at + 27] & 0xff) << 8;
            int extraLength = (file[at + 28] & 0xff) | (file[at + 29] & 0xff) << 8;
            int size = (file[at + 18] & 0xff) | (file[at + 19] & 0xff) << 8 | (file[at + 20] & 0xff) << 16 | (file[at + 21] & 0xff) << 24;
            int data = at + 30 + nameLength + extraLength;
            assertEquals(0, data % 64, "data offset of entry at " + at);
            at = data + size;
        }
        assertTrue(at > 0);
    }

    @Test
    void anUnsupportedValueFailsAndKeepsTheOldFile() throws IOException {
        Path p = dir.resolve("keep.pt");
        try (Tensor x = Torch.ones(2)) {
            PyTorchFile.save(p, x);
        }
        byte[] before = Files.readAllBytes(p);
        var ex = assertThrows(IllegalArgumentException.class, () -> PyTorchFile.save(p, Map.of("k", new StringBuilder())));
        assertTrue(ex.getMessage().contains("StringBuilder"), ex.getMessage());
        assertArrayEquals(before, Files.readAllBytes(p));
        assertFalse(Files.list(dir).anyMatch(f -> f.getFileName().toString().contains(AtomicFile.MARKER)));
    }
}
