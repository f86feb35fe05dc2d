package org.jtorch.testing;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * Reads the PyTorch reference fixtures written by {@code tools/fixtures/gen_*.py} (see
 * {@code tools/fixtures/common.py} for the format) and compares jtorch results with them.
 */
public final class Fixtures {
    private Fixtures() {}

    /** One reference case: an op, its inputs and arguments, and PyTorch's result or error. */
    public record Case(String family, String op, String name, JsonArray inputs, JsonObject args, JsonElement expected) {
        /** Input {@code i} on {@link #device()}, with the fixture's strides. */
        public Tensor input(int i) {
            return decode(inputs.get(i).getAsJsonObject(), device());
        }

        public List<Tensor> inputTensors() {
            List<Tensor> list = new ArrayList<>();
            for (int i = 0; i < inputs.size(); i++) list.add(input(i));
            return list;
        }

        public boolean expectsError() {
            return expected.isJsonObject() && expected.getAsJsonObject().has("error");
        }

        public JsonObject expectedTensor() {
            return expected.getAsJsonObject();
        }

        public JsonObject expectedTensor(int i) {
            return expected.getAsJsonArray().get(i).getAsJsonObject();
        }

        public double doubleArg(String key, double fallback) {
            JsonElement e = args.get(key);
            return e == null || e.isJsonNull() ? fallback : parseDouble(e);
        }

        public long longArg(String key, long fallback) {
            JsonElement e = args.get(key);
            return e == null || e.isJsonNull() ? fallback : e.getAsLong();
        }

        public String stringArg(String key, String fallback) {
            JsonElement e = args.get(key);
            return e == null || e.isJsonNull() ? fallback : e.getAsString();
        }

        public boolean boolArg(String key, boolean fallback) {
            JsonElement e = args.get(key);
            return e == null || e.isJsonNull() ? fallback : e.getAsBoolean();
        }

        public long[] longsArg(String key) {
            JsonElement e = args.get(key);
            if (e == null || e.isJsonNull()) return null;
            if (e.isJsonPrimitive()) return new long[] {e.getAsLong()};
            return toLongs(e.getAsJsonArray());
        }

        /** A list of dims ({@link #longsArg} as ints), or null. */
        public int[] intsArg(String key) {
            long[] l = longsArg(key);
            if (l == null) return null;
            int[] r = new int[l.length];
            for (int i = 0; i < l.length; i++) r[i] = Math.toIntExact(l[i]);
            return r;
        }

        @Override
        public String toString() {
            return family + "/" + op + "/" + name;
        }
    }

    /** PyTorch's snake_case name in jtorch's camelCase: {@code max_pool2d} -> {@code maxPool2d}. */
    public static String javaName(String snake) {
        StringBuilder b = new StringBuilder();
        boolean up = false;
        for (char ch : snake.toCharArray()) {
            if (ch == '_') {
                up = true;
            } else {
                b.append(up ? Character.toUpperCase(ch) : ch);
                up = false;
            }
        }
        return b.toString();
    }

    /** All cases of a family ({@code fixtures/<family>.json} on the test class path). */
    public static List<Case> load(String family) {
        String path = "/fixtures/" + family + ".json";
        try (InputStream in = Fixtures.class.getResourceAsStream(path)) {
            if (in == null) throw new IllegalStateException("missing fixture " + path + "; run tools/fixtures/generate");
            JsonObject root = JsonParser.parseReader(new InputStreamReader(in, StandardCharsets.UTF_8)).getAsJsonObject();
            List<Case> cases = new ArrayList<>();
            for (JsonElement e : root.getAsJsonArray("cases")) {
                JsonObject c = e.getAsJsonObject();
                cases.add(new Case(family, c.get("op").getAsString(), c.get("name").getAsString(), c.getAsJsonArray("inputs"),
                        c.has("args") ? c.getAsJsonObject("args") : new JsonObject(), c.get("expected")));
            }
            return cases;
        } catch (IOException ex) {
            throw new IllegalStateException("cannot read " + path, ex);
        }
    }

    /**
     * The device the conformance suites run their ops on: the system property {@code jtorch.test.device}
     * ({@code cpu} by default; {@code scripts/gpu-check} runs the PyTorch-fixture suites again with
     * {@code cuda:0}). Inputs go there; expected values stay on the host.
     */
    public static Device device() {
        return Device.parse(System.getProperty("jtorch.test.device", "cpu"));
    }

    /** Builds a CPU tensor from its encoding (contiguous data, or a strided view over a storage). */
    public static Tensor decode(JsonObject t) {
        return decode(t, Device.cpu());
    }

    /** Builds a tensor on {@code device} from its encoding; a strided encoding stays a view with the same strides. */
    public static Tensor decode(JsonObject t, Device device) {
        DType dtype = DType.parse(t.get("dtype").getAsString());
        long[] shape = toLongs(t.getAsJsonArray("shape"));
        if (t.has("data")) {
            double[] values = toDoubles(t.getAsJsonArray("data"));
            long[] longValues = toLongsLenient(t.getAsJsonArray("data"));
            // Converted on the host, then moved: the conversion is not what a device case tests.
            try (Tensor d = dtype.isFloatingPoint() ? Torch.tensor(values, shape) : Torch.tensor(longValues, shape);
                 Tensor typed = d.to(dtype)) {
                return typed.to(device);
            }
        }
        JsonArray storage = t.getAsJsonArray("storage");
        double[] values = toDoubles(storage);
        long[] longValues = toLongsLenient(storage);
        try (Tensor flat = dtype.isFloatingPoint() ? Torch.tensor(values) : Torch.tensor(longValues);
             Tensor typed = flat.to(dtype);
             Tensor placed = typed.to(device)) {
            return placed.asStrided(shape, toLongs(t.getAsJsonArray("strides")), t.get("offset").getAsLong());
        }
    }

    /** Asserts shape, dtype and values; floating values within {@code rtol*|expected| + atol}, NaN matching NaN. */
    public static void assertMatches(JsonObject expected, Tensor actual, double rtol, double atol, String what) {
        DType dtype = DType.parse(expected.get("dtype").getAsString());
        long[] shape = toLongs(expected.getAsJsonArray("shape"));
        assertArrayEquals(shape, actual.shape(), what + ": shape");
        assertEquals(dtype, actual.dtype(), what + ": dtype");
        Tensor exp = decode(expected);
        try (exp) {
            assertClose(exp, actual, rtol, atol, what);
        }
    }

    /** Default tolerances by dtype: exact for integers and bool, ~ulp-scale for floats. */
    public static void assertMatches(JsonObject expected, Tensor actual, String what) {
        DType dtype = DType.parse(expected.get("dtype").getAsString());
        double rtol = switch (dtype) {
            case FLOAT64 -> 1e-12;
            case FLOAT32 -> 2e-6;
            case FLOAT16 -> 2e-3;
            case BFLOAT16 -> 1.6e-2;
            default -> 0;
        };
        double atol = switch (dtype) {
            case FLOAT64 -> 1e-12;
            case FLOAT32 -> 1e-6;
            case FLOAT16 -> 1e-3;
            case BFLOAT16 -> 1e-2;
            default -> 0;
        };
        assertMatches(expected, actual, rtol, atol, what);
    }

    /** Elementwise closeness of two tensors of the same shape. */
    public static void assertClose(Tensor expected, Tensor actual, double rtol, double atol, String what) {
        assertArrayEquals(expected.shape(), actual.shape(), what + ": shape");
        if (!expected.dtype().isFloatingPoint() && !actual.dtype().isFloatingPoint()) {
            assertArrayEquals(expected.toLongArray(), actual.toLongArray(), what + ": values");
            return;
        }
        double[] e = expected.toDoubleArray();
        double[] a = actual.toDoubleArray();
        for (int i = 0; i < e.length; i++) {
            if (Double.isNaN(e[i]) && Double.isNaN(a[i])) continue;
            if (e[i] == a[i]) continue;
            double tol = atol + rtol * Math.abs(e[i]);
            if (!(Math.abs(e[i] - a[i]) <= tol)) {
                fail(what + ": element " + i + " expected " + e[i] + " but was " + a[i] + " (tolerance " + tol + ")");
            }
        }
    }

    private static double parseDouble(JsonElement e) {
        if (e.isJsonPrimitive() && e.getAsJsonPrimitive().isString()) {
            return switch (e.getAsString()) {
                case "nan" -> Double.NaN;
                case "inf" -> Double.POSITIVE_INFINITY;
                case "-inf" -> Double.NEGATIVE_INFINITY;
                default -> Double.parseDouble(e.getAsString());
            };
        }
        if (e.isJsonPrimitive() && e.getAsJsonPrimitive().isBoolean()) return e.getAsBoolean() ? 1 : 0;
        return e.getAsDouble();
    }

    private static double[] toDoubles(JsonArray a) {
        double[] r = new double[a.size()];
        for (int i = 0; i < r.length; i++) r[i] = parseDouble(a.get(i));
        return r;
    }

    private static long[] toLongsLenient(JsonArray a) {
        long[] r = new long[a.size()];
        for (int i = 0; i < r.length; i++) {
            JsonElement e = a.get(i);
            if (e.isJsonPrimitive() && e.getAsJsonPrimitive().isBoolean()) r[i] = e.getAsBoolean() ? 1 : 0;
            else if (e.isJsonPrimitive() && e.getAsJsonPrimitive().isNumber()) r[i] = e.getAsJsonPrimitive().getAsNumber().longValue();
            else r[i] = 0;
        }
        return r;
    }

    static long[] toLongs(JsonArray a) {
        long[] r = new long[a.size()];
        for (int i = 0; i < r.length; i++) r[i] = a.get(i).getAsLong();
        return r;
    }
}
