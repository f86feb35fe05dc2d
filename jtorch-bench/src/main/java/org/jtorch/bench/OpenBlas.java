package org.jtorch.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * FFM binding to the system's OpenBLAS (Debian {@code libopenblas0-pthread}), for benchmarks only:
 * jtorch itself never calls native BLAS. Reads like {@code cblas.h}.
 */
public final class OpenBlas {
    public static final int CBLAS_ROW_MAJOR = 101;
    public static final int CBLAS_NO_TRANS = 111;
    public static final int CBLAS_TRANS = 112;

    private static final String[] CANDIDATES = {
        "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0",
        "/usr/lib/x86_64-linux-gnu/libopenblas.so.0",
    };

    private static final SymbolLookup LIB = load();
    private static final Linker LINKER = Linker.nativeLinker();

    // void cblas_sgemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)
    private static final MethodHandle SGEMM = LINKER.downcallHandle(LIB.findOrThrow("cblas_sgemm"),
            FunctionDescriptor.ofVoid(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT,
                    JAVA_FLOAT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, JAVA_FLOAT, ADDRESS, JAVA_INT),
            Linker.Option.critical(false));
    // void openblas_set_num_threads(int)
    private static final MethodHandle SET_NUM_THREADS = LINKER.downcallHandle(
            LIB.findOrThrow("openblas_set_num_threads"), FunctionDescriptor.ofVoid(JAVA_INT));
    // char* openblas_get_corename(void)
    private static final MethodHandle GET_CORENAME = LINKER.downcallHandle(
            LIB.findOrThrow("openblas_get_corename"), FunctionDescriptor.of(ADDRESS));

    private OpenBlas() {}

    private static SymbolLookup load() {
        for (String p : CANDIDATES) {
            if (Files.exists(Path.of(p))) return SymbolLookup.libraryLookup(Path.of(p), Arena.global());
        }
        throw new IllegalStateException("OpenBLAS not found; looked in " + String.join(", ", CANDIDATES)
                + " (apt-get install libopenblas0-pthread)");
    }

    public static void sgemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
                             MemorySegment a, int lda, MemorySegment b, int ldb, float beta, MemorySegment c, int ldc) {
        try {
            SGEMM.invokeExact(CBLAS_ROW_MAJOR, transA ? CBLAS_TRANS : CBLAS_NO_TRANS, transB ? CBLAS_TRANS : CBLAS_NO_TRANS,
                    m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        } catch (Throwable t) {
            throw new RuntimeException("cblas_sgemm failed", t);
        }
    }

    public static void setNumThreads(int n) {
        try {
            SET_NUM_THREADS.invokeExact(n);
        } catch (Throwable t) {
            throw new RuntimeException("openblas_set_num_threads failed", t);
        }
    }

    /** The kernel family OpenBLAS picked at load (e.g. "Haswell", "SkylakeX"). */
    public static String coreName() {
        try {
            MemorySegment s = (MemorySegment) GET_CORENAME.invokeExact();
            return s.reinterpret(64).getString(0);
        } catch (Throwable t) {
            throw new RuntimeException("openblas_get_corename failed", t);
        }
    }
}
