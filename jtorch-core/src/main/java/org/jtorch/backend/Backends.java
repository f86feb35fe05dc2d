package org.jtorch.backend;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import org.jtorch.memory.Storage;
import org.jtorch.op.StridedView;
import org.jtorch.types.Device;

/**
 * Finds the backend for a device. Every backend is found with {@link ServiceLoader} through {@link BackendProvider}:
 * the CPU backend (jtorch-core's own provider, looked up when this class loads, so that this package names none of its
 * implementations) and, on first use of another device or {@link #all()}, the others (CUDA). {@link #of} hands out backends whose kernel calls
 * hold their operands' storages for the call ({@link HoldingBackend}): the way every kernel is invoked.
 */
public final class Backends {
    private static final Backend CPU_BACKEND = findCpuBackend();
    private static final Backend CPU = new HoldingBackend(CPU_BACKEND);
    private static volatile Map<Device.Type, Backend> discovered;
    private static volatile Map<Device.Type, Backend> holding;

    static {
        registerOpKernels(CPU);
    }

    /** Registers the structured ops' kernels that {@code backend} provides through its kernel interfaces. */
    private static void registerOpKernels(Backend backend) {
        LinalgOpKernels.register(backend);
        ConvolutionOpKernels.register(backend);
        PoolingOpKernels.register(backend);
        NormalizationOpKernels.register(backend);
        JoiningOpKernels.register(backend);
        IndexingOpKernels.register(backend);
        SelectingReductionOpKernels.register(backend);
        SortingOpKernels.register(backend);
        CopyOpKernels.register(backend);
        RecurrentOpKernels.register(backend);
        RandomOpKernels.register(backend);
        ValueCheckKernels.register(backend);
        AttentionOpKernels.register(backend);
        ViewBackwardOpKernels.register(backend);
    }

    private Backends() {}

    /** The CPU backend, from the provider that says it serves the CPU (jtorch-core's {@code META-INF/services}). */
    private static Backend findCpuBackend() {
        for (BackendProvider p : ServiceLoader.load(BackendProvider.class, Backends.class.getClassLoader())) {
            if (p.providesCpu()) return p.create();
        }
        throw new IllegalStateException("Backends: no CPU backend on the class path (jtorch-core's META-INF/services/"
                + BackendProvider.class.getName() + " names it)");
    }

    /** The backend serving {@code device}; throws with the backend's reason when it is unavailable. */
    public static Backend of(Device device) {
        return of(null, device);
    }

    /** {@link #of(Device)} for the op that first touches {@code device}: an unavailable device's error names {@code op}. */
    public static Backend of(String op, Device device) {
        if (device.isCpu()) return KernelProfiler.wrapIfActive(CPU);
        all();
        Backend b = holding.get(device.type());
        String prefix = op == null ? "" : op + ": ";
        if (b == null) {
            throw new IllegalStateException(prefix + "device " + device + " is not available: no " + device.type().name().toLowerCase()
                    + " backend on the class path (add the jtorch-cuda module)");
        }
        if (!b.isAvailable()) {
            throw new IllegalStateException(prefix + "device " + device + " is not available: " + b.unavailableReason());
        }
        int count = b.deviceCount();
        if (device.index() >= count) {
            throw new IllegalArgumentException(prefix + "device " + device + " does not exist: " + count + " "
                    + device.type().name().toLowerCase() + " device(s)");
        }
        return KernelProfiler.wrapIfActive(b);
    }

    /**
     * Holds the storages of a kernel's operands (null allowed) for the duration of a kernel call that does not go
     * through a {@link Backend} (the dispatcher's registered kernels), as {@link HoldingBackend} does for the others.
     */
    public static void hold(String op, StridedView a, StridedView b, StridedView c) {
        HoldingBackend.hold(op, a, b, c);
    }

    public static void drop(StridedView a, StridedView b, StridedView c) {
        HoldingBackend.drop(a, b, c);
    }

    /** {@link #hold(String, StridedView, StridedView, StridedView)} for any number of operands (a multi-tensor kernel's lists). */
    public static void hold(String op, StridedView... operands) {
        HoldingBackend.hold(op, operands);
    }

    public static void drop(StridedView... operands) {
        HoldingBackend.drop(operands);
    }

    /** Every backend found, available or not, as discovered: for inspection; kernels are called through {@link #of}. */
    public static Map<Device.Type, Backend> all() {
        Map<Device.Type, Backend> m = discovered;
        if (m == null) {
            synchronized (Backends.class) {
                if (discovered == null) {
                    Map<Device.Type, Backend> found = new EnumMap<>(Device.Type.class);
                    Map<Device.Type, Backend> held = new EnumMap<>(Device.Type.class);
                    found.put(Device.Type.CPU, CPU_BACKEND);
                    held.put(Device.Type.CPU, CPU);
                    for (BackendProvider p : ServiceLoader.load(BackendProvider.class)) {
                        if (p.providesCpu()) continue;
                        Backend b = p.create();
                        if (found.putIfAbsent(b.deviceType(), b) == null) {
                            Backend h = new HoldingBackend(b);
                            held.put(b.deviceType(), h);
                            registerOpKernels(h);
                        }
                    }
                    holding = held;
                    discovered = found;
                }
                m = discovered;
            }
        }
        return m;
    }

    /**
     * A new CPU storage of {@code bytes} bytes in page-locked host memory, from the first available accelerator backend
     * that has pinned memory ({@link Backend#allocatePinnedHost}): pinned memory belongs to the backends, not to the
     * data loader that uses it most.
     *
     * @throws IllegalStateException naming {@code op} and why no backend can pin (unavailable, with its reason, or none)
     */
    public static Storage allocatePinnedHost(String op, long bytes) {
        List<String> reasons = new ArrayList<>();
        for (Backend b : all().values()) {
            if (b.deviceType() == Device.Type.CPU) continue;
            String name = b.deviceType().name();
            if (!b.isAvailable()) {
                reasons.add(name + ": " + b.unavailableReason());
                continue;
            }
            Storage s = b.allocatePinnedHost(bytes);
            if (s != null) return s;
            reasons.add(name + " has no pinned memory");
        }
        throw new IllegalStateException(op + ": no accelerator with pinned host memory is available ("
                + (reasons.isEmpty() ? "no accelerator backend on the class path" : String.join("; ", reasons)) + ")");
    }

    /**
     * Descriptions of every backend, for {@code jtorch info}: {@link Backend#describe()}'s lines; for an
     * unavailable backend its reason first, then the detail lines of its description (e.g. libraries searched).
     */
    public static List<String> describeAll() {
        List<String> lines = new ArrayList<>();
        for (Backend b : all().values()) {
            List<String> described = List.of(b.describe().split("\n"));
            if (b.isAvailable()) {
                lines.addAll(described);
            } else {
                lines.add(b.deviceType().name().toLowerCase() + ": unavailable (" + b.unavailableReason() + ")");
                lines.addAll(described.subList(1, described.size()));
            }
        }
        return lines;
    }
}
