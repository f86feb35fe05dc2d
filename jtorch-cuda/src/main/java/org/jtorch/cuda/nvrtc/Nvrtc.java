package org.jtorch.cuda.nvrtc;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jtorch.cuda.CudaException;
import org.jtorch.cuda.NativeLibrary;

/**
 * FFM bindings to NVRTC ({@code libnvrtc.so}): compiles CUDA C++ source to PTX or CUBIN in-process, for
 * the exact architecture of the device, without a CUDA toolkit. Every {@code nvrtcResult} is checked;
 * a failed compilation throws {@link NvrtcCompileException} carrying the compiler's log.
 * Thread-safe: each call works on its own program object.
 */
public final class Nvrtc {
    /** What to produce: PTX (for {@code compute_XY}, JIT-compiled by the driver) or CUBIN (for {@code sm_XY}). */
    public enum Output { PTX, CUBIN }

    /** The compiled image (NUL-terminated for PTX, as {@code cuModuleLoadData} wants) and the compiler log. */
    public record Compiled(Output output, byte[] image, String log) {}

    private static final int NVRTC_SUCCESS = 0;

    private final NativeLibrary library;
    private final MethodHandle nvrtcVersion, nvrtcGetErrorString, nvrtcCreateProgram, nvrtcDestroyProgram, nvrtcCompileProgram;
    private final MethodHandle nvrtcGetProgramLogSize, nvrtcGetProgramLog, nvrtcGetPTXSize, nvrtcGetPTX;
    private final Optional<MethodHandle> nvrtcGetCUBINSize, nvrtcGetCUBIN;
    private final Optional<MethodHandle> nvrtcGetNumSupportedArchs, nvrtcGetSupportedArchs;

    public Nvrtc(NativeLibrary library) {
        this.library = library;
        nvrtcVersion = library.downcall(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), "nvrtcVersion");
        nvrtcGetErrorString = library.downcall(FunctionDescriptor.of(ADDRESS, JAVA_INT), "nvrtcGetErrorString");
        nvrtcCreateProgram = library.downcall(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS),
                "nvrtcCreateProgram");
        nvrtcDestroyProgram = library.downcall(FunctionDescriptor.of(JAVA_INT, ADDRESS), "nvrtcDestroyProgram");
        nvrtcCompileProgram = library.downcall(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS), "nvrtcCompileProgram");
        FunctionDescriptor sizeQuery = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS);
        nvrtcGetProgramLogSize = library.downcall(sizeQuery, "nvrtcGetProgramLogSize");
        nvrtcGetProgramLog = library.downcall(sizeQuery, "nvrtcGetProgramLog");
        nvrtcGetPTXSize = library.downcall(sizeQuery, "nvrtcGetPTXSize");
        nvrtcGetPTX = library.downcall(sizeQuery, "nvrtcGetPTX");
        nvrtcGetCUBINSize = library.optionalDowncall(sizeQuery, "nvrtcGetCUBINSize"); // NVRTC 11.1+
        nvrtcGetCUBIN = library.optionalDowncall(sizeQuery, "nvrtcGetCUBIN");
        FunctionDescriptor intsQuery = FunctionDescriptor.of(JAVA_INT, ADDRESS);
        nvrtcGetNumSupportedArchs = library.optionalDowncall(intsQuery, "nvrtcGetNumSupportedArchs"); // NVRTC 11.2+
        nvrtcGetSupportedArchs = library.optionalDowncall(intsQuery, "nvrtcGetSupportedArchs");
    }

    public NativeLibrary library() {
        return library;
    }

    /** {major, minor} of this NVRTC. */
    public int[] version() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment major = arena.allocate(JAVA_INT), minor = arena.allocate(JAVA_INT);
            check("nvrtcVersion", (int) nvrtcVersion.invokeExact(major, minor));
            return new int[] {major.get(JAVA_INT, 0), minor.get(JAVA_INT, 0)};
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * The real architectures this NVRTC can compile CUBIN for, as compute capabilities times ten (e.g. 90 for
     * sm_90), ascending; empty for an NVRTC before 11.2, which cannot say.
     */
    public int[] supportedArchs() {
        if (nvrtcGetNumSupportedArchs.isEmpty() || nvrtcGetSupportedArchs.isEmpty()) return new int[0];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(JAVA_INT);
            check("nvrtcGetNumSupportedArchs", (int) nvrtcGetNumSupportedArchs.get().invokeExact(count));
            MemorySegment archs = arena.allocate(JAVA_INT, Math.max(1, count.get(JAVA_INT, 0)));
            check("nvrtcGetSupportedArchs", (int) nvrtcGetSupportedArchs.get().invokeExact(archs));
            return archs.asSlice(0, 4L * count.get(JAVA_INT, 0)).toArray(JAVA_INT);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code nvrtcGetErrorString}: e.g. {@code NVRTC_ERROR_COMPILATION} for 6. */
    public String errorName(int code) {
        try {
            MemorySegment s = (MemorySegment) nvrtcGetErrorString.invokeExact(code);
            return s.address() == 0 ? "nvrtcResult " + code : s.reinterpret(4096).getString(0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private void check(String call, int rc) {
        if (rc != NVRTC_SUCCESS) throw new CudaException(call, rc, errorName(rc), "");
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new IllegalStateException(t);
    }

    /**
     * Compiles {@code source} (file name {@code name}, for messages) with {@code headers} (include name to
     * content) and {@code options} (e.g. {@code --gpu-architecture=compute_90}, {@code -std=c++17}).
     */
    public Compiled compile(String name, String source, Map<String, String> headers, List<String> options, Output output) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment program = arena.allocate(ADDRESS);
            int n = headers.size();
            MemorySegment headerSources = arena.allocate(ADDRESS, Math.max(1, n));
            MemorySegment headerNames = arena.allocate(ADDRESS, Math.max(1, n));
            int i = 0;
            for (Map.Entry<String, String> h : headers.entrySet()) {
                headerNames.setAtIndex(ADDRESS, i, arena.allocateFrom(h.getKey()));
                headerSources.setAtIndex(ADDRESS, i, arena.allocateFrom(h.getValue()));
                i++;
            }
            MemorySegment sources = n == 0 ? MemorySegment.NULL : headerSources;
            MemorySegment includeNames = n == 0 ? MemorySegment.NULL : headerNames;
            check("nvrtcCreateProgram", (int) nvrtcCreateProgram.invokeExact(program, arena.allocateFrom(source), arena.allocateFrom(name), n,
                    sources, includeNames));
            MemorySegment prog = program.get(ADDRESS, 0);
            try {
                MemorySegment opts = arena.allocate(ADDRESS, Math.max(1, options.size()));
                for (int k = 0; k < options.size(); k++) opts.setAtIndex(ADDRESS, k, arena.allocateFrom(options.get(k)));
                int rc = (int) nvrtcCompileProgram.invokeExact(prog, options.size(), opts);
                String log = readText(arena, prog, nvrtcGetProgramLogSize, nvrtcGetProgramLog, "nvrtcGetProgramLog");
                if (rc != NVRTC_SUCCESS) throw new NvrtcCompileException(name, rc, errorName(rc), options, log);
                byte[] image = output == Output.PTX
                        ? readBytes(arena, prog, nvrtcGetPTXSize, nvrtcGetPTX, "nvrtcGetPTX")
                        : readBytes(arena, prog, nvrtcGetCUBINSize.orElseThrow(() -> new CudaException(
                                library.path() + " cannot produce CUBIN (NVRTC before 11.1)", null)),
                                nvrtcGetCUBIN.orElseThrow(), "nvrtcGetCUBIN");
                return new Compiled(output, image, log);
            } finally {
                int rc = (int) nvrtcDestroyProgram.invokeExact(program);
                check("nvrtcDestroyProgram", rc);
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private String readText(Arena arena, MemorySegment prog, MethodHandle size, MethodHandle get, String call) throws Throwable {
        byte[] b = readBytes(arena, prog, size, get, call);
        int len = b.length;
        while (len > 0 && b[len - 1] == 0) len--;
        return new String(b, 0, len, java.nio.charset.StandardCharsets.UTF_8).strip();
    }

    private byte[] readBytes(Arena arena, MemorySegment prog, MethodHandle size, MethodHandle get, String call) throws Throwable {
        MemorySegment sz = arena.allocate(JAVA_LONG);
        check(call + "Size", (int) size.invokeExact(prog, sz));
        long n = sz.get(JAVA_LONG, 0);
        MemorySegment buf = arena.allocate(Math.max(1, n));
        check(call, (int) get.invokeExact(prog, buf));
        return buf.asSlice(0, n).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
    }
}
