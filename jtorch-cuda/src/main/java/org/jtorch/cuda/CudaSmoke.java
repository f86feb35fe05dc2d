package org.jtorch.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.jtorch.cuda.driver.CudaDriver;
import org.jtorch.cuda.nvrtc.KernelCache;
import org.jtorch.cuda.nvrtc.Nvrtc;
import org.jtorch.memory.MemoryBlock;
import org.jtorch.memory.MemoryStats;
import org.jtorch.op.PointwiseOps;
import org.jtorch.types.Device;

/**
 * The GPU smoke test run by {@code scripts/gpu-check} on a machine with a device: initialises CUDA,
 * allocates through the caching allocator, copies host to device on a stream, compiles the {@code add}
 * kernels generated for {@code add} with NVRTC for the device's architecture, launches
 * {@code jt_binary_add_f32}, copies back, checks every element against the host formula, and times
 * the kernel and a device-to-device copy with events. Prints a table; exits 1 on any failed check,
 * 2 when CUDA is unavailable.
 */
public final class CudaSmoke {
    private final List<String[]> rows = new ArrayList<>();
    private boolean failed;

    private void row(String check, boolean ok, String detail) {
        rows.add(new String[] {check, ok ? "ok" : "FAILED", detail});
        failed |= !ok;
    }

    public static void main(String[] args) {
        System.exit(new CudaSmoke().run(args.length > 0 ? Integer.parseInt(args[0]) : 1 << 26));
    }

    int run(int n) {
        CudaRuntime rt = CudaRuntime.system();
        System.out.println("libraries:");
        for (String line : rt.libraries().describe()) System.out.println("  " + line);
        if (!rt.available()) {
            System.out.println("CUDA unavailable: " + rt.reason());
            return 2;
        }
        try {
            checks(rt, n);
        } catch (RuntimeException e) {
            row("exception", false, e.toString());
            e.printStackTrace(System.out);
        }
        System.out.printf("%n%-28s %-7s %s%n", "check", "result", "detail");
        for (String[] r : rows) System.out.printf("%-28s %-7s %s%n", r[0], r[1], r[2]);
        return failed ? 1 : 0;
    }

    private void checks(CudaRuntime rt, int n) {
        CudaRuntime.DeviceInfo info = rt.devices().get(0);
        row("devices", true, rt.devices().size() + ": " + info);
        CudaDriver d = rt.driver();
        Device dev = Device.cuda(0);
        rt.makeCurrent(0);
        long bytes = 4L * n;

        CudaCachingAllocator allocator = Cuda.allocator(dev);
        try (Stream stream = Stream.create(dev); Arena arena = Arena.ofConfined()) {
            long s = stream.handle();
            MemoryBlock a = allocator.allocate(bytes, s), b = allocator.allocate(bytes, s), out = allocator.allocate(bytes, s);
            MemoryBlock probe = allocator.allocate(1000, s);
            allocator.free(probe);
            MemoryBlock again = allocator.allocate(1000, s);
            row("allocator reuse", again.address() == probe.address(), "freed block handed out again on the same stream");
            allocator.free(again);

            // One pinned buffer per copy: an asynchronous copy reads its source after the call returns, so refilling
            // one buffer for the second copy raced the first (the second GPU run saw 15,950 wrong sums).
            MemorySegment host = d.memAllocHost(bytes), hostB = d.memAllocHost(bytes);
            for (int i = 0; i < n; i++) host.setAtIndex(JAVA_FLOAT, i, i % 1000 * 0.5f);
            d.memcpyHtoDAsync(a.address(), host, bytes, s);
            for (int i = 0; i < n; i++) hostB.setAtIndex(JAVA_FLOAT, i, (i % 7) - 3f);
            d.memcpyHtoDAsync(b.address(), hostB, bytes, s);
            d.memsetD32Async(out.address(), 0x7fc00000, n, s); // NaN: an unwritten element cannot pass
            stream.synchronize();
            row("host to device copies", true, MemoryStats.formatBytes(bytes) + " x2 from pinned memory");

            Nvrtc nvrtc = new Nvrtc(rt.libraries().load(CudaLibraries.Kind.NVRTC));
            int[] v = nvrtc.version();
            KernelCache cache = new KernelCache(KernelCache.defaultDirectory(System.getenv(), Path.of(System.getProperty("user.home"))),
                    v[0] + "." + v[1], nvrtc::compile);
            KernelSources.Target target = KernelSources.target(info.major(), info.minor(), nvrtc.supportedArchs());
            List<String> options = new ArrayList<>(target.options());
            long t0 = System.nanoTime();
            byte[] compiled = cache.get(FormulaKernels.fileName(PointwiseOps.ADD), FormulaKernels.source(PointwiseOps.ADD), KernelSources.headers(),
                    options, target.output());
            double compileMs = (System.nanoTime() - t0) / 1e6;
            row("NVRTC compile", true, String.format("add's generated kernels for sm_%d%d as %s for %s: %.0f ms (%s), NVRTC %d.%d",
                    info.major(), info.minor(), target.output(), options.get(0), compileMs, cache.hits() > 0 ? "disk cache" : "compiled",
                    v[0], v[1]));
            MemorySegment image = arena.allocate(compiled.length + 1);
            image.copyFrom(MemorySegment.ofArray(compiled));
            long module = d.moduleLoadData(image);
            long function = d.moduleGetFunction(module, "jt_binary_add_f32");

            MemorySegment params = arena.allocate(ADDRESS, 5);
            MemorySegment pa = arena.allocateFrom(JAVA_LONG, a.address()), pb = arena.allocateFrom(JAVA_LONG, b.address());
            MemorySegment po = arena.allocateFrom(JAVA_LONG, out.address()), pn = arena.allocateFrom(JAVA_LONG, n);
            MemorySegment alpha = arena.allocateFrom(JAVA_DOUBLE, 2.0);
            params.setAtIndex(ADDRESS, 0, pa);
            params.setAtIndex(ADDRESS, 1, pb);
            params.setAtIndex(ADDRESS, 2, po);
            params.setAtIndex(ADDRESS, 3, pn);
            params.setAtIndex(ADDRESS, 4, alpha);
            int threads = 256;
            int blocks = (int) Math.min((n / 4 + threads - 1) / threads, (long) info.multiprocessors() * 8);
            d.launchKernel(function, Math.max(1, blocks), 1, 1, threads, 1, 1, 0, s, params);
            d.memcpyDtoHAsync(host, out.address(), bytes, s);
            stream.synchronize();
            int bad = 0;
            for (int i = 0; i < n; i++) {
                float expect = i % 1000 * 0.5f + 2.0f * ((i % 7) - 3f);
                if (host.getAtIndex(JAVA_FLOAT, i) != expect) bad++;
            }
            row("jt_binary_add_f32", bad == 0, n + " elements, out = a + 2 b, " + bad + " wrong");

            try (Event start = Event.create(dev, true); Event end = Event.create(dev, true)) {
                int reps = 10;
                start.record(stream);
                for (int r = 0; r < reps; r++) d.launchKernel(function, Math.max(1, blocks), 1, 1, threads, 1, 1, 0, s, params);
                end.record(stream);
                end.synchronize();
                double addGbs = 3.0 * bytes * reps / (start.elapsedMillis(end) * 1e6);
                start.record(stream);
                for (int r = 0; r < reps; r++) d.memcpyDtoDAsync(out.address(), a.address(), bytes, s);
                end.record(stream);
                end.synchronize();
                double copyGbs = 2.0 * bytes * reps / (start.elapsedMillis(end) * 1e6);
                row("add bandwidth", true, String.format("%.0f GB/s = %.0f%% of device-to-device copy (%.0f GB/s)",
                        addGbs, 100 * addGbs / copyGbs, copyGbs));
            }
            d.moduleUnload(module);
            d.memFreeHost(host);
            d.memFreeHost(hostB);
            allocator.free(a);
            allocator.free(b);
            allocator.free(out);
            allocator.emptyCache();
            row("emptyCache", allocator.stats().reservedBytes() == 0, "reserved after: " + allocator.stats().reservedBytes() + " B");
        }
        System.out.println(allocator.memorySummary());
    }

}
