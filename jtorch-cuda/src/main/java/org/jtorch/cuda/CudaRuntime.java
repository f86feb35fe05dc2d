package org.jtorch.cuda;

import static org.jtorch.cuda.driver.CuConstants.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR;
import static org.jtorch.cuda.driver.CuConstants.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR;
import static org.jtorch.cuda.driver.CuConstants.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;

import java.util.ArrayList;
import java.util.List;
import org.jtorch.cuda.driver.CudaDriver;

/**
 * Process-wide CUDA state: the driver binding, whether CUDA can run here and why not, the devices and
 * their primary contexts. Created once, lazily, on first use of anything CUDA; never throws from
 * {@link #system()}: an unusable machine gives {@link #available()} false and a {@link #reason()}.
 */
public final class CudaRuntime {
    /** One device: ordinal, name, compute capability, multiprocessors and memory. */
    public record DeviceInfo(int ordinal, String name, int major, int minor, int multiprocessors, long totalMemory) {
        @Override
        public String toString() {
            return "cuda:" + ordinal + " " + name + ", sm_" + major + minor + ", " + multiprocessors + " SMs, "
                    + org.jtorch.memory.MemoryStats.formatBytes(totalMemory);
        }
    }

    private static volatile CudaRuntime system;

    private final CudaLibraries libraries;
    private final CudaDriver driver;
    private final String reason;
    private final List<DeviceInfo> devices;
    private final long[] contexts;
    private final ThreadLocal<long[]> currentContext = ThreadLocal.withInitial(() -> new long[] {0});

    private CudaRuntime(CudaLibraries libraries, CudaDriver driver, String reason, List<DeviceInfo> devices) {
        this.libraries = libraries;
        this.driver = driver;
        this.reason = reason;
        this.devices = devices;
        this.contexts = new long[devices.size()];
    }

    public static CudaRuntime system() {
        CudaRuntime r = system;
        if (r == null) {
            synchronized (CudaRuntime.class) {
                if (system == null) system = probe(CudaLibraries.system());
                r = system;
            }
        }
        return r;
    }

    /** Loads the driver found by {@code libraries}, initialises it and lists the devices; failures become the reason. */
    public static CudaRuntime probe(CudaLibraries libraries) {
        CudaLibraries.Status status = libraries.status(CudaLibraries.Kind.DRIVER);
        if (!status.found()) return new CudaRuntime(libraries, null, "CUDA driver " + status.problem(), List.of());
        CudaDriver driver;
        try {
            driver = new CudaDriver(libraries.load(CudaLibraries.Kind.DRIVER));
        } catch (CudaException e) {
            return new CudaRuntime(libraries, null, "CUDA driver at " + status.path() + " unusable: " + e.getMessage(), List.of());
        }
        String where = " (driver " + status.path() + ", CUDA " + status.version() + ")";
        try {
            driver.init(0);
        } catch (CudaException e) {
            return new CudaRuntime(libraries, driver, e.getMessage() + where, List.of());
        }
        List<DeviceInfo> devices = new ArrayList<>();
        try {
            int count = driver.deviceGetCount();
            for (int i = 0; i < count; i++) {
                int dev = driver.deviceGet(i);
                devices.add(new DeviceInfo(i, driver.deviceGetName(dev),
                        driver.deviceGetAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
                        driver.deviceGetAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
                        driver.deviceGetAttribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
                        driver.deviceTotalMem(dev)));
            }
        } catch (CudaException e) {
            return new CudaRuntime(libraries, driver, e.getMessage() + where, List.of());
        }
        if (devices.isEmpty()) return new CudaRuntime(libraries, driver, "the CUDA driver reports no device" + where, List.of());
        return new CudaRuntime(libraries, driver, "", List.copyOf(devices));
    }

    public boolean available() {
        return reason.isEmpty();
    }

    /** Why CUDA cannot run here, naming the library and where it was looked for; empty when it can. */
    public String reason() {
        return reason;
    }

    public CudaLibraries libraries() {
        return libraries;
    }

    public List<DeviceInfo> devices() {
        return devices;
    }

    /** The driver binding; throws {@link IllegalStateException} with {@link #reason()} when CUDA is unavailable. */
    public CudaDriver driver() {
        requireAvailable();
        return driver;
    }

    public void requireAvailable() {
        if (!available()) throw new IllegalStateException("CUDA is not available: " + reason);
    }

    /** Makes device {@code ordinal}'s primary context current on the calling thread (retaining it on first use). */
    public void makeCurrent(int ordinal) {
        requireAvailable();
        if (ordinal < 0 || ordinal >= devices.size()) {
            throw new IllegalArgumentException("cuda:" + ordinal + " does not exist: " + devices.size() + " CUDA device(s)");
        }
        long ctx;
        synchronized (contexts) {
            if (contexts[ordinal] == 0) contexts[ordinal] = driver.devicePrimaryCtxRetain(driver.deviceGet(ordinal));
            ctx = contexts[ordinal];
        }
        long[] current = currentContext.get();
        if (current[0] != ctx) {
            driver.ctxSetCurrent(ctx);
            current[0] = ctx;
        }
    }
}
