package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jtorch.cuda.nvrtc.KernelCache;
import org.jtorch.cuda.nvrtc.Nvrtc;
import org.jtorch.cuda.nvrtc.NvrtcCompileException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * The NVRTC binding with a real NVRTC (Debian's 11.8, unpacked by {@code scripts/fetch-cuda-libs}),
 * without a GPU: every kernel source compiles for sm_90 exactly as the backend will compile it (the
 * shared header passed as a named header), errors carry the compiler's log, and the disk cache
 * serves the second request. Skipped when NVRTC was not fetched.
 */
class NvrtcTest {
    private static Nvrtc nvrtc;

    @BeforeAll
    static void load() {
        if (TestLibraries.nvrtcDir().isPresent()) {
            nvrtc = new Nvrtc(new CudaLibraries(List.of(TestLibraries.nvrtcDir().get())).load(CudaLibraries.Kind.NVRTC));
        }
    }

    @BeforeEach
    void onlyWithNvrtc() {
        assumeTrue(nvrtc != null, TestLibraries.SKIP); // each test reported skipped with the reason
    }

    @Test
    void versionIsTheLibrarysOwn() {
        int[] v = nvrtc.version(); // 11.8 for Debian bookworm's libnvrtc11.2
        assertTrue(v[0] >= 11 && v[1] >= 0, v[0] + "." + v[1]);
        assertEquals(v[0] + "." + v[1], new CudaLibraries(List.of(TestLibraries.nvrtcDir().get())).status(CudaLibraries.Kind.NVRTC).version());
    }

    private static final Pattern ENTRY = Pattern.compile("extern \"C\" __global__ void (\\w+)\\(");
    private static final Pattern MACRO_ENTRY = Pattern.compile("__global__ void (jt_\\w+?)##");

    @TestFactory
    List<DynamicTest> everyKernelSourceCompilesToPtxForSm90() {
        List<DynamicTest> tests = new ArrayList<>();
        for (String file : KernelSources.FILES) {
            tests.add(DynamicTest.dynamicTest(file, () -> {
                Nvrtc.Compiled c = nvrtc.compile(file, KernelSources.read(file), KernelSources.headers(),
                        KernelSources.options(9, 0, true), Nvrtc.Output.PTX);
                String ptx = new String(c.image(), StandardCharsets.US_ASCII);
                assertTrue(ptx.contains(".target sm_90"), "PTX for sm_90");
                assertEquals(0, c.image()[c.image().length - 1], "NUL-terminated for cuModuleLoadData");
                String source = KernelSources.read(file);
                Matcher m = ENTRY.matcher(source);
                while (m.find()) assertTrue(ptx.contains(".entry " + m.group(1) + "("), m.group(1) + " in the PTX");
                Matcher macro = MACRO_ENTRY.matcher(source);
                while (macro.find()) assertTrue(ptx.contains(".entry " + macro.group(1)), macro.group(1) + "* in the PTX");
            }));
        }
        return tests;
    }

    /**
     * What the backend loads on an sm_90 device when this NVRTC knows sm_90: a CUBIN (ELF) per file, holding the
     * file's entry points ({@code elementwise.cu} with one op selected, as the backend compiles it).
     */
    @TestFactory
    List<DynamicTest> everyKernelSourceCompilesToACubinForAnSm90Device() {
        KernelSources.Target target = KernelSources.target(9, 0, nvrtc.supportedArchs());
        assertEquals(Nvrtc.Output.CUBIN, target.output());
        List<DynamicTest> tests = new ArrayList<>();
        for (String file : KernelSources.FILES) {
            tests.add(DynamicTest.dynamicTest(file, () -> {
                Nvrtc.Compiled c = nvrtc.compile(file, KernelSources.read(file), KernelSources.headers(), target.options(), target.output());
                byte[] image = c.image();
                assertTrue(image.length > 4 && image[0] == 0x7f && image[1] == 'E' && image[2] == 'L' && image[3] == 'F', "an ELF image");
                String text = new String(image, StandardCharsets.ISO_8859_1);
                Matcher m = ENTRY.matcher(KernelSources.read(file));
                while (m.find()) assertTrue(text.contains(m.group(1)), m.group(1) + " in the CUBIN");
            }));
        }
        return tests;
    }

    /** {@code elementwise.cu} keeps {@code where} (the pointwise ops are generated from their formulas: FormulaKernelsTest). */
    @Test
    void jtSelectCompilesOnlyTheSelectedElementwiseEntry() {
        List<String> options = new ArrayList<>(KernelSources.options(9, 0, true));
        options.addAll(List.of("-DJT_SELECT", "-DJT_SELECT_where"));
        String ptx = new String(nvrtc.compile("elementwise.cu", KernelSources.read("elementwise.cu"), KernelSources.headers(),
                options, Nvrtc.Output.PTX).image(), StandardCharsets.US_ASCII);
        assertTrue(ptx.contains(".entry jt_where_strided("), ptx);
        List<String> other = new ArrayList<>(KernelSources.options(9, 0, true));
        other.addAll(List.of("-DJT_SELECT", "-DJT_SELECT_add"));
        String none = new String(nvrtc.compile("elementwise.cu", KernelSources.read("elementwise.cu"), KernelSources.headers(),
                other, Nvrtc.Output.PTX).image(), StandardCharsets.US_ASCII);
        assertTrue(!none.contains(".entry"), "only the selected op");
    }

    @Test
    void supportedArchitecturesIncludeHopperAndAreAscending() {
        int[] archs = nvrtc.supportedArchs();
        assertTrue(archs.length > 0, "NVRTC 11.2+ lists its architectures");
        assertTrue(java.util.Arrays.stream(archs).anyMatch(a -> a == 90), java.util.Arrays.toString(archs));
        for (int i = 1; i < archs.length; i++) assertTrue(archs[i - 1] < archs[i], java.util.Arrays.toString(archs));
        assertEquals(Nvrtc.Output.CUBIN, KernelSources.target(9, 0, archs).output());
    }

    @Test
    void cubinForARealArchitecture() {
        String src = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }";
        Nvrtc.Compiled c = nvrtc.compile("k.cu", src, Map.of(), List.of("--gpu-architecture=sm_90"), Nvrtc.Output.CUBIN);
        assertEquals(0x7f, c.image()[0] & 0xff); // an ELF file
        assertEquals('E', c.image()[1]);
    }

    @Test
    void aCompileErrorThrowsWithTheLogAndTheOptions() {
        NvrtcCompileException e = assertThrows(NvrtcCompileException.class, () -> nvrtc.compile("bad.cu",
                "extern \"C\" __global__ void k(float* x) { x[0] = undefined_name; }", Map.of(),
                List.of("--gpu-architecture=compute_90"), Nvrtc.Output.PTX));
        assertEquals("NVRTC_ERROR_COMPILATION", e.errorName());
        assertTrue(e.log().contains("bad.cu(1)") && e.log().contains("undefined_name"), e.log());
        assertTrue(e.getMessage().startsWith("nvrtcCompileProgram(bad.cu, [--gpu-architecture=compute_90]) failed: NVRTC_ERROR_COMPILATION"),
                e.getMessage());
    }

    @Test
    void theDiskCacheCompilesOnceAndServesTheSameImageAfterwards(@TempDir Path dir) {
        String version = nvrtc.version()[0] + "." + nvrtc.version()[1];
        KernelCache cache = new KernelCache(dir, version, nvrtc::compile);
        String src = KernelSources.read("copy.cu");
        byte[] first = cache.get("copy.cu", src, KernelSources.headers(), KernelSources.options(9, 0, true), Nvrtc.Output.PTX);
        KernelCache again = new KernelCache(dir, version, nvrtc::compile); // a new process, same folder
        byte[] second = again.get("copy.cu", src, KernelSources.headers(), KernelSources.options(9, 0, true), Nvrtc.Output.PTX);
        assertArrayEquals(first, second);
        assertEquals(1, cache.compiles());
        assertEquals(0, again.compiles());
        assertEquals(1, again.hits());
    }
}
