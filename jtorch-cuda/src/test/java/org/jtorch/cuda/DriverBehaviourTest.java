package org.jtorch.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jtorch.cuda.driver.CuConstants;
import org.jtorch.cuda.driver.CudaDriver;
import org.jtorch.cuda.nvrtc.Nvrtc;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What the CUDA driver answers to misuse, as an H200 answered it (tools/cuda-driver-probe.c,
 * docs/cuda-driver-probe-h200.txt), through jtorch's own binding; and that work on a stream runs
 * asynchronously, so that host code must wait for it. Runs on whatever cuda:0 is: the CUDA simulator in CI
 * (which must answer as the GPU did), a GPU in {@code scripts/gpu-check device}; skipped without one.
 */
class DriverBehaviourTest {
    private static final int INVALID_VALUE = 1, INVALID_HANDLE = 400, NOT_FOUND = 500, ILLEGAL_ADDRESS = 700;
    private static final long MIB = 1 << 20;
    private static CudaDriver d;

    @BeforeAll
    static void device() {
        assumeTrue(Cuda.isAvailable(), () -> "CUDA is not available: " + Cuda.unavailableReason());
        CudaRuntime rt = CudaRuntime.system();
        rt.makeCurrent(0);
        d = rt.driver();
    }

    private static int code(Runnable call) {
        return assertThrows(CudaException.class, call::run).code();
    }

    @Test
    void copiesMemsetsAndFreesOutsideLiveAllocationsAreInvalidValues() {
        long p = d.memAlloc(MIB);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(64);
            d.memcpyHtoDAsync(p + 8, host, 16, 0);
            d.streamSynchronize(0);
            assertEquals(INVALID_VALUE, code(() -> d.memcpyHtoDAsync(p + MIB - 8, host, 16, 0)), "straddling the end");
            assertEquals(INVALID_VALUE, code(() -> d.memcpyHtoDAsync(p + MIB + 4096, host, 16, 0)), "past the end");
            assertEquals(INVALID_VALUE, code(() -> d.memcpyDtoHAsync(host, p + MIB - 8, 16, 0)), "reading past the end");
            assertEquals(INVALID_VALUE, code(() -> d.memsetD8Async(p + MIB - 8, (byte) 0, 16, 0)), "memset past the end");
            assertEquals(INVALID_VALUE, code(() -> d.memsetD32Async(p + 2, 0, 4, 0)), "misaligned 32-bit memset");
            assertEquals(INVALID_VALUE, code(() -> d.memcpyDtoDAsync(p, p + MIB - 8, 16, 0)), "device copy past the end");
            assertEquals(INVALID_VALUE, code(() -> d.memcpyHtoDAsync(0x1000, host, 16, 0)), "a wild address");
            assertEquals(INVALID_VALUE, code(() -> d.memFree(p + 8)), "freeing an interior pointer");
            assertEquals(INVALID_VALUE, code(() -> d.memFree(0x7f0012345000L)), "freeing a wild pointer");
            d.memFree(p);
            assertEquals(INVALID_VALUE, code(() -> d.memFree(p)), "freeing twice");
            assertEquals(INVALID_VALUE, code(() -> d.memcpyHtoDAsync(p, host, 16, 0)), "copying into freed memory");
        }
        d.memFree(0);  // a no-op, as cudaFree(nullptr)
    }

    @Test
    void eventsAnswerAsTheRealDriver() {
        long s = d.streamCreate(CuConstants.CU_STREAM_NON_BLOCKING);
        long a = d.eventCreate(0), b = d.eventCreate(0), noTiming = d.eventCreate(CuConstants.CU_EVENT_DISABLE_TIMING);
        try {
            assertTrue(d.eventQuery(a), "a never-recorded event is complete");
            d.eventSynchronize(a);
            assertEquals(INVALID_HANDLE, code(() -> d.eventElapsedTime(a, b)), "elapsed time of unrecorded events");
            d.eventRecord(a, s);
            d.eventRecord(b, s);
            d.eventSynchronize(b);
            assertTrue(d.eventElapsedTime(a, b) >= 0);
            d.eventRecord(noTiming, s);
            d.eventSynchronize(noTiming);
            assertEquals(INVALID_HANDLE, code(() -> d.eventElapsedTime(a, noTiming)), "an event without timing");
        } finally {
            d.eventDestroy(a);
            d.eventDestroy(b);
            d.eventDestroy(noTiming);
            d.streamDestroy(s);
        }
    }

    private static final String KERNELS = """
            extern "C" __global__ void store_thread(int* out) { out[blockIdx.x * blockDim.x + threadIdx.x] = threadIdx.x; }
            // Each block sums its threads' values through shared memory and a barrier, then a warp shuffle.
            extern "C" __global__ void block_sum(const float* in, float* out) {
                __shared__ float partial[32];
                float v = in[blockIdx.x * blockDim.x + threadIdx.x];
                for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
                if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
                __syncthreads();
                if (threadIdx.x == 0) {
                    float s = 0;
                    for (int w = 0; w < blockDim.x / 32; w++) s += partial[w];
                    out[blockIdx.x] = s;
                }
            }
            """;

    private static long module(Arena arena) {
        CudaRuntime rt = CudaRuntime.system();
        Nvrtc nvrtc = new Nvrtc(rt.libraries().load(CudaLibraries.Kind.NVRTC));
        CudaRuntime.DeviceInfo info = rt.devices().get(0);
        KernelSources.Target target = KernelSources.target(info.major(), info.minor(), nvrtc.supportedArchs());
        byte[] image = nvrtc.compile("driver_behaviour.cu", KERNELS, Map.of(), target.options(), target.output()).image();
        MemorySegment segment = arena.allocate(image.length + 1);
        segment.copyFrom(MemorySegment.ofArray(image));
        return d.moduleLoadData(segment);
    }

    @Test
    void launchesOutsideTheHardwareLimitsAreInvalidValuesAndMissingEntriesNotFound() {
        try (Arena arena = Arena.ofConfined()) {
            long module = module(arena);
            try {
                assertEquals(NOT_FOUND, code(() -> d.moduleGetFunction(module, "no_such_kernel")));
                long f = d.moduleGetFunction(module, "store_thread");
                long out = d.memAlloc(MIB);
                MemorySegment params = arena.allocate(ADDRESS, 1);
                params.setAtIndex(ADDRESS, 0, arena.allocateFrom(JAVA_LONG, out));
                assertEquals(INVALID_VALUE, code(() -> d.launchKernel(f, 1, 1, 1, 1025, 1, 1, 0, 0, params)), "1025 threads");
                assertEquals(INVALID_VALUE, code(() -> d.launchKernel(f, 1, 1, 1, 32, 32, 2, 0, 0, params)), "2048 threads");
                assertEquals(INVALID_VALUE, code(() -> d.launchKernel(f, 1, 1, 1, 1, 1, 65, 0, 0, params)), "block z 65");
                assertEquals(INVALID_VALUE, code(() -> d.launchKernel(f, 1, 65536, 1, 1, 1, 1, 0, 0, params)), "grid y 65536");
                assertEquals(INVALID_VALUE, code(() -> d.launchKernel(f, 0, 1, 1, 1, 1, 1, 0, 0, params)), "an empty grid");
                assertEquals(INVALID_VALUE, code(() -> d.launchKernel(f, 1, 1, 1, 32, 1, 1, 48 * 1024 + 4, 0, params)),
                        "dynamic shared memory over 48 KiB without opting in");
                d.launchKernel(f, 4, 1, 1, 256, 1, 1, 48 * 1024, 0, params);
                MemorySegment host = arena.allocate(JAVA_INT, 1024);
                d.memcpyDtoHAsync(host, out, 4096, 0);
                d.streamSynchronize(0);
                for (int i = 0; i < 1024; i++) assertEquals(i % 256, host.getAtIndex(JAVA_INT, i), "element " + i);
                d.memFree(out);
            } finally {
                d.moduleUnload(module);
            }
        }
    }

    @Test
    void barriersAndWarpShufflesCombineABlocksThreads() {
        try (Arena arena = Arena.ofConfined()) {
            long module = module(arena);
            int blocks = 3, threads = 256;
            long in = d.memAlloc(4L * blocks * threads), out = d.memAlloc(4L * blocks);
            try {
                MemorySegment host = arena.allocate(JAVA_FLOAT, blocks * threads);
                for (int i = 0; i < blocks * threads; i++) host.setAtIndex(JAVA_FLOAT, i, i % 7 + 0.25f);
                d.memcpyHtoDAsync(in, host, 4L * blocks * threads, 0);
                MemorySegment params = arena.allocate(ADDRESS, 2);
                params.setAtIndex(ADDRESS, 0, arena.allocateFrom(JAVA_LONG, in));
                params.setAtIndex(ADDRESS, 1, arena.allocateFrom(JAVA_LONG, out));
                d.launchKernel(d.moduleGetFunction(module, "block_sum"), blocks, 1, 1, threads, 1, 1, 0, 0, params);
                MemorySegment sums = arena.allocate(JAVA_FLOAT, blocks);
                d.memcpyDtoHAsync(sums, out, 4L * blocks, 0);
                d.streamSynchronize(0);
                for (int b = 0; b < blocks; b++) {
                    float expected = 0;
                    for (int t = 0; t < threads; t++) expected += (b * threads + t) % 7 + 0.25f;
                    assertEquals(expected, sums.getAtIndex(JAVA_FLOAT, b), 1e-3, "block " + b);
                }
            } finally {
                d.memFree(in);
                d.memFree(out);
                d.moduleUnload(module);
            }
        }
    }

    /**
     * A copy from pinned memory reads its source when it runs, not when it is issued: the stream is held
     * behind an event of another stream until the host has overwritten the buffer, then the device holds the
     * new contents. (The missing wait a GPU would punish, made certain.)
     */
    @Test
    void anAsynchronousCopyReadsPinnedMemoryWhenItRuns() {
        long gate = d.streamCreate(CuConstants.CU_STREAM_NON_BLOCKING), s = d.streamCreate(CuConstants.CU_STREAM_NON_BLOCKING);
        long ready = d.eventCreate(CuConstants.CU_EVENT_DISABLE_TIMING);
        MemorySegment pinned = d.memHostAlloc(4096, 0);
        long device = d.memAlloc(4096);
        try (Arena arena = Arena.ofConfined()) {
            // The gate: a device-to-device copy of 256 MiB, so the event completes well after the host's writes.
            long big = d.memAlloc(256 * MIB), other = d.memAlloc(256 * MIB);
            try {
                pinned.fill((byte) 1);
                d.memcpyDtoDAsync(other, big, 256 * MIB, gate);
                d.eventRecord(ready, gate);
                d.streamWaitEvent(s, ready, 0);
                d.memcpyHtoDAsync(device, pinned, 4096, s);
                pinned.fill((byte) 2);  // before the copy can have run: it waits behind the gate
                MemorySegment back = arena.allocate(4096);
                d.memcpyDtoHAsync(back, device, 4096, s);
                d.streamSynchronize(s);
                // The host's second fill came long before the 256 MiB gate copy ends (100 us on an H200).
                for (int i = 0; i < 4096; i++) assertEquals(2, back.get(JAVA_BYTE, i), "byte " + i);
            } finally {
                d.memFree(big);
                d.memFree(other);
            }
        } finally {
            d.memFree(device);
            d.memFreeHost(pinned);
            d.eventDestroy(ready);
            d.streamDestroy(s);
            d.streamDestroy(gate);
        }
    }

    /**
     * A kernel writing to an address no allocation holds: on a GPU, CUDA_ERROR_ILLEGAL_ADDRESS at the next
     * synchronisation, and the context is failed from then on; on the simulator the same, never a JVM crash.
     * In a child JVM, since the context stays failed.
     */
    @Test
    void aFaultingKernelIsAnIllegalAddressAndTheProcessGoesOn() throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("--add-modules=jdk.incubator.vector");
        command.add("--enable-native-access=ALL-UNNAMED");
        command.add("-cp");
        command.add(classPath(FaultingKernel.class, CudaRuntime.class, org.jtorch.Tensor.class));
        command.add(FaultingKernel.class.getName());
        Path log = Files.createTempFile("faulting-kernel", ".txt");
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            assertTrue(p.waitFor(300, TimeUnit.SECONDS), "the child JVM did not finish");
            String output = Files.readString(log, StandardCharsets.UTF_8);
            assertEquals(0, p.exitValue(), output);
            assertTrue(output.contains("synchronize: CUDA_ERROR_ILLEGAL_ADDRESS"), output);
            assertTrue(output.contains("then cuMemAlloc: CUDA_ERROR_ILLEGAL_ADDRESS"), output);
        } finally {
            Files.deleteIfExists(log);
        }
    }

    /** Where the classes are loaded from (a launcher's own class path may not name them). */
    private static String classPath(Class<?>... classes) {
        List<String> entries = new ArrayList<>();
        for (Class<?> c : classes) {
            try {
                String entry = Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
                if (!entries.contains(entry)) entries.add(entry);
            } catch (java.net.URISyntaxException e) {
                throw new IllegalStateException(e);
            }
        }
        return String.join(java.io.File.pathSeparator, entries);
    }

    /** The child JVM of {@link #aFaultingKernelIsAnIllegalAddressAndTheProcessGoesOn}. */
    static final class FaultingKernel {
        public static void main(String[] args) {
            CudaRuntime rt = CudaRuntime.system();
            rt.makeCurrent(0);
            d = rt.driver();
            try (Arena arena = Arena.ofConfined()) {
                long module = module(arena);
                long f = d.moduleGetFunction(module, "store_thread");
                MemorySegment params = arena.allocate(ADDRESS, 1);
                params.setAtIndex(ADDRESS, 0, arena.allocateFrom(JAVA_LONG, 0x10L));
                d.launchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, params);
                report("synchronize", () -> d.streamSynchronize(0));
                report("then cuMemAlloc", () -> d.memAlloc(4096));
            }
            System.out.println("the process goes on");
        }

        private static void report(String what, Runnable call) {
            try {
                call.run();
                System.out.println(what + ": no error");
            } catch (CudaException e) {
                System.out.println(what + ": " + e.errorName());
            }
        }
    }
}
