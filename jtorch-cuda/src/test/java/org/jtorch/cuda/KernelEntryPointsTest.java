package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jtorch.cuda.kernels.ElementwisePlan;
import org.jtorch.cuda.kernels.ElementwisePlan.Launch;
import org.jtorch.cuda.kernels.ElementwisePlan.Operand;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.cuda.nvrtc.Nvrtc;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the backend launches from the shipped files exists with the signature it packs: where ({@code elementwise.cu},
 * compiled as {@link CudaKernels} compiles it, {@code -DJT_SELECT -DJT_SELECT_where}), fill and copy, and the rest,
 * here with {@code nvcc -arch=sm_90 --ptx} and with NVRTC and the launcher's own options: every entry point
 * {@link ElementwisePlan} can choose, and each entry's PTX parameter sizes equal the sizes {@link KernelArgs}
 * packs (the pointwise ops' generated sources: {@code FormulaKernelsTest}). Each compiler's cases are skipped,
 * saying so, where it is missing.
 */
class KernelEntryPointsTest {
    private static final Pattern ENTRY = Pattern.compile("\\.entry (\\w+)\\(([^)]*)\\)");
    private static final Pattern PARAM = Pattern.compile("\\.param (?:\\.align \\d+ )?\\.(u64|f64|u32|f32|b8) \\w+?(?:\\[(\\d+)\\])?\\s*(?:,|$)");

    /** Compiles kernel file {@code file} with the extra {@code options} to PTX text. */
    interface Compiler {
        String ptx(String file, List<String> options) throws Exception;
    }

    static Compiler nvcc(Path nvcc, Path out) {
        return (file, options) -> {
            Path dir = Path.of(KernelSources.class.getResource("kernels/" + file).toURI()).getParent();
            Path ptx = out.resolve(file + String.join("", options) + ".ptx");
            List<String> cmd = new ArrayList<>(List.of(nvcc.toString(), "-arch=sm_90", "--ptx", "-std=c++17", "-o", ptx.toString()));
            cmd.addAll(options);
            cmd.add(dir.resolve(file).toString());
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(0, p.waitFor(), "nvcc " + cmd + ":\n" + log);
            return Files.readString(ptx);
        };
    }

    /** NVRTC with exactly the launcher's options for an sm_90 device ({@code KernelSources.options} + the op's select options). */
    static Compiler nvrtc(Nvrtc nvrtc) {
        return (file, options) -> {
            List<String> all = new ArrayList<>(KernelSources.options(9, 0, true));
            all.addAll(options);
            Nvrtc.Compiled c = nvrtc.compile(file, KernelSources.read(file), KernelSources.headers(), all, Nvrtc.Output.PTX);
            return new String(c.image(), 0, c.image().length - 1, StandardCharsets.US_ASCII);
        };
    }

    /** Entry name -> parameter byte sizes, from PTX text. */
    static Map<String, long[]> entries(Compiler compiler, String file, List<String> options) throws Exception {
        Map<String, long[]> r = new HashMap<>();
        Matcher m = ENTRY.matcher(compiler.ptx(file, options));
        while (m.find()) {
            List<Long> sizes = new ArrayList<>();
            Matcher pm = PARAM.matcher(m.group(2).trim());
            while (pm.find()) {
                sizes.add(switch (pm.group(1)) {
                    case "u64", "f64" -> 8L;
                    case "u32", "f32" -> 4L;
                    default -> Long.parseLong(pm.group(2));
                });
            }
            r.put(m.group(1), sizes.stream().mapToLong(Long::longValue).toArray());
        }
        return r;
    }

    private static void assertEntry(Map<String, long[]> entries, Launch l, KernelArgs args) {
        long[] params = entries.get(l.entry());
        assertNotNull(params, l.entry() + " missing; entries: " + entries.keySet());
        assertEquals(Arrays.toString(params), Arrays.toString(args.sizes()), "parameter sizes of " + l.entry());
    }

    private static final long[] SHAPE = {4, 5};
    private static final long[] TRANSPOSED = {1, 4};

    private static Operand c(DType t) {
        return new Operand(t, new long[] {5, 1}, true);
    }

    private static Operand t(DType t) {
        return new Operand(t, TRANSPOSED, false);
    }

    /** Checks the entry points of one kernel file: entry name to its PTX parameter sizes. */
    interface EntryCheck {
        void check(String file, Map<String, long[]> entries) throws Exception;
    }

    /**
     * One test per file and compiler: {@code file} compiled whole, as the launcher compiles it, with {@code nvcc
     * -arch=sm_90 --ptx} and with Debian's NVRTC 11.8 and the launcher's options; each skipped, saying so, where
     * that compiler is missing.
     */
    static List<DynamicTest> wholeFiles(List<String> files, Path out, EntryCheck check) {
        Optional<Path> nvcc = KernelSourcesTest.nvcc();
        Optional<Path> nvrtcDir = TestLibraries.nvrtcDir();
        List<DynamicTest> tests = new ArrayList<>();
        for (String file : files) {
            tests.add(DynamicTest.dynamicTest(file + " with nvcc", () -> {
                assumeTrue(nvcc.isPresent(), "nvcc not found on PATH or in /usr/local/cuda/bin");
                check.check(file, entries(nvcc(nvcc.get(), out), file, CudaKernels.selectOptions(null)));
            }));
            tests.add(DynamicTest.dynamicTest(file + " with NVRTC", () -> {
                assumeTrue(nvrtcDir.isPresent(), TestLibraries.SKIP);
                Nvrtc nvrtc = new Nvrtc(new CudaLibraries(List.of(nvrtcDir.get())).load(CudaLibraries.Kind.NVRTC));
                check.check(file, entries(nvrtc(nvrtc), file, CudaKernels.selectOptions(null)));
            }));
        }
        return tests;
    }

    /** Asserts that {@code entry} exists with the PTX parameter sizes {@code args} packs, and records it in {@code seen}. */
    static void expect(Map<String, long[]> entries, java.util.Set<String> seen, String entry, KernelArgs args) {
        long[] params = entries.get(entry);
        assertNotNull(params, entry + " missing; entries: " + entries.keySet());
        assertEquals(Arrays.toString(params), Arrays.toString(args.sizes()), "parameter sizes of " + entry);
        seen.add(entry);
    }

    @TestFactory
    List<DynamicTest> withNvcc(@TempDir Path out) {
        Optional<Path> nvcc = KernelSourcesTest.nvcc();
        return cases(nvcc.isPresent(), "nvcc not found on PATH or in /usr/local/cuda/bin",
                () -> nvcc(nvcc.get(), out));
    }

    /** The same with Debian's NVRTC 11.8 ({@code scripts/fetch-cuda-libs}), compiled as the launcher compiles. */
    @TestFactory
    List<DynamicTest> withNvrtc() {
        Optional<Path> dir = TestLibraries.nvrtcDir();
        return cases(dir.isPresent(), TestLibraries.SKIP,
                () -> nvrtc(new Nvrtc(new CudaLibraries(List.of(dir.get())).load(CudaLibraries.Kind.NVRTC))));
    }

    private interface CompilerSource {
        Compiler get();
    }

    private static List<DynamicTest> cases(boolean present, String skipReason, CompilerSource source) {
        Compiler[] compiler = new Compiler[1];
        CompilerSource lazy = () -> {
            if (compiler[0] == null) compiler[0] = source.get();
            return compiler[0];
        };
        List<DynamicTest> tests = new ArrayList<>();
        tests.add(DynamicTest.dynamicTest("where", () -> {
            assumeTrue(present, skipReason);
            Map<String, long[]> e = entries(lazy.get(), "elementwise.cu", CudaKernels.selectOptions("where"));
            assertEquals(1, e.size(), e.keySet().toString());
            try (Arena arena = Arena.ofConfined()) {
                Launch w = ElementwisePlan.where(SHAPE, t(DType.BOOL), c(DType.FLOAT32), c(DType.FLOAT32));
                assertEntry(e, w, KernelArgs.where(arena, w, 1, 2, 3, 4, DType.FLOAT32.ordinal()));
            }
        }));
        tests.add(DynamicTest.dynamicTest("copy.cu (fill, copy)", () -> {
            assumeTrue(present, skipReason);
            Map<String, long[]> e = entries(lazy.get(), "copy.cu", CudaKernels.selectOptions(null));
            try (Arena arena = Arena.ofConfined()) {
                for (DType t : DType.values()) {
                    assertEntry(e, new Launch(ElementwisePlan.fillEntry(t), true, 20, null), KernelArgs.fill(arena, 1, 20, 0, 0));
                }
                Launch cp = ElementwisePlan.copy(SHAPE, c(DType.FLOAT16), t(DType.INT64));
                assertEntry(e, cp, KernelArgs.copy(arena, cp, 1, 2));
            }
        }));
        return tests;
    }
}
