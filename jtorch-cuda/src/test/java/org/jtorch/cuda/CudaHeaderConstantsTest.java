package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jtorch.cuda.driver.CuConstants;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The driver binding against the CUDA toolkit's {@code cuda.h} (text parsed, no compiler): every
 * constant in {@link CuConstants} has the header's value, and every C function the binding calls
 * is bound under the symbol the header maps its API name to ({@code cuMemAlloc} is
 * {@code cuMemAlloc_v2}). Skipped when no {@code cuda.h} is installed.
 */
class CudaHeaderConstantsTest {
    private static String header;
    private static final Map<String, Long> values = new HashMap<>();
    private static final Map<String, String> defines = new HashMap<>();

    @BeforeAll
    static void parse() throws IOException {
        Path h = null;
        for (String dir : new String[] {System.getenv("CUDA_HOME"), "/usr/local/cuda", "/usr"}) {
            if (dir != null && Files.isRegularFile(Path.of(dir, "include", "cuda.h"))) {
                h = Path.of(dir, "include", "cuda.h");
                break;
            }
        }
        assumeTrue(h != null, "no cuda.h in $CUDA_HOME/include, /usr/local/cuda/include or /usr/include");
        header = Files.readString(h);
        Matcher m = Pattern.compile("(?m)^\\s*(?:#define\\s+)?(CU[A-Z0-9_]+)\\s*(?:=\\s*)?(0x[0-9a-fA-F]+|[0-9]+)\\b").matcher(header);
        while (m.find()) {
            String v = m.group(2);
            values.putIfAbsent(m.group(1), v.startsWith("0x") ? Long.parseLong(v.substring(2), 16) : Long.parseLong(v));
        }
        Matcher d = Pattern.compile("(?m)^\\s*#define\\s+(cu[A-Za-z0-9_]+)\\s+(?:__CUDA_API_PTSZ\\(|__CUDA_API_PTDS\\()?(cu[A-Za-z0-9_]+)\\)?").matcher(header);
        while (d.find()) defines.putIfAbsent(d.group(1), d.group(2));
    }

    @Test
    void everyConstantHasTheHeadersValue() throws IllegalAccessException {
        for (Field f : CuConstants.class.getFields()) {
            Long expected = values.get(f.getName());
            assertNotNull(expected, f.getName() + " is not defined in cuda.h");
            assertEquals(expected.longValue(), f.getInt(null), f.getName());
        }
    }

    /** The string literals passed to {@code downcall} in the binding's source, first choice of each call. */
    private static Set<String> boundSymbols() throws IOException {
        Path src = Path.of("src/main/java/org/jtorch/cuda/driver/CudaDriver.java");
        assumeTrue(Files.isRegularFile(src), "binding source not found from " + Path.of("").toAbsolutePath());
        String text = Files.readString(src);
        Set<String> symbols = new LinkedHashSet<>();
        Matcher call = Pattern.compile("downcall\\((.*?)\\);", Pattern.DOTALL).matcher(text);
        while (call.find()) {
            Matcher lit = Pattern.compile("\"(cu[A-Za-z0-9_]+)\"").matcher(call.group(1));
            if (lit.find()) symbols.add(lit.group(1));
        }
        return symbols;
    }

    @Test
    void everyBoundSymbolIsDeclaredAndIsTheOneTheHeaderMapsTo() throws IOException {
        Set<String> symbols = boundSymbols();
        assertTrue(symbols.size() >= 38, "found only " + symbols);
        for (String s : symbols) {
            // Declared under its own name, or under an API name that cuda.h #defines to it.
            boolean declared = declared(s) || defines.entrySet().stream().anyMatch(e -> e.getValue().equals(s) && declared(e.getKey()));
            assertTrue(declared, s + " is not declared in cuda.h");
            String target = defines.get(s);
            assertTrue(target == null || target.equals(s), s + " is mapped by cuda.h to " + target + ": bind that symbol");
        }
    }

    private static boolean declared(String name) {
        return Pattern.compile("CUDAAPI\\s+" + name + "\\s*\\(").matcher(header).find();
    }

    @Test
    void everyDriverCallOfTheBindingListIsBound() throws IOException {
        List<String> api = List.of("cuInit", "cuDriverGetVersion", "cuDeviceGet", "cuDeviceGetCount", "cuDeviceGetName",
                "cuDeviceGetAttribute", "cuDeviceTotalMem", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease",
                "cuCtxSetCurrent", "cuCtxSynchronize", "cuMemGetInfo", "cuMemAlloc", "cuMemFree", "cuMemAllocHost", "cuMemHostAlloc",
                "cuMemFreeHost", "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync", "cuMemcpyDtoDAsync", "cuMemsetD8Async",
                "cuMemsetD32Async", "cuStreamCreate", "cuStreamDestroy", "cuStreamSynchronize", "cuStreamWaitEvent",
                "cuEventCreate", "cuEventRecord", "cuEventSynchronize", "cuEventElapsedTime", "cuEventQuery", "cuEventDestroy",
                "cuModuleLoadData", "cuModuleGetFunction", "cuModuleUnload", "cuLaunchKernel", "cuGetErrorName", "cuGetErrorString");
        Set<String> symbols = boundSymbols();
        for (String name : api) {
            String symbol = defines.getOrDefault(name, name);
            assertTrue(symbols.contains(symbol), name + " (symbol " + symbol + ") is not bound");
        }
    }
}
