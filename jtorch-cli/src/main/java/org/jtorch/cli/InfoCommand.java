package org.jtorch.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import org.jtorch.Torch;
import org.jtorch.backend.Backends;
import org.jtorch.types.Device;

/** {@code jtorch info}: what this machine and runtime give jtorch. */
final class InfoCommand {
    private static final List<String> INTERESTING_FLAGS = List.of("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f",
            "avx512bw", "avx512vl", "avx512dq", "avx512_bf16", "avx512_fp16", "avx512_vnni", "amx_tile", "amx_bf16");

    private InfoCommand() {}

    static int run(String[] args) {
        if (args.length > 0 && (args[0].equals("--help") || args[0].equals("-h"))) {
            System.out.println("usage: jtorch info\n\nPrints the Java version, the Vector API species in use, CPU features,"
                    + " the intra-op thread count, memory statistics and which backends were found.");
            return 0;
        }
        System.out.println("jtorch " + version());
        System.out.println("java:         " + System.getProperty("java.vm.name") + " " + Runtime.version()
                + " (" + System.getProperty("java.vendor") + ")");
        System.out.println("os:           " + System.getProperty("os.name") + " " + System.getProperty("os.arch")
                + ", " + Runtime.getRuntime().availableProcessors() + " processors");
        System.out.println("cpu:          " + cpuModel());
        System.out.println("cpu features: " + String.join(" ", cpuFlags()));
        System.out.println("vector api:   float " + FloatVector.SPECIES_PREFERRED + ", double " + DoubleVector.SPECIES_PREFERRED);
        System.out.println("threads:      " + Torch.getNumThreads() + " intra-op (JTORCH_NUM_THREADS or OMP_NUM_THREADS to change)");
        System.out.println("default dtype: " + Torch.defaultDtype());
        System.out.println("backends:");
        for (String line : Backends.describeAll()) System.out.println("  " + line);
        if (!Backends.all().containsKey(Device.Type.CUDA)) {
            System.out.println("  cuda: not found (the jtorch-cuda module is not on the class path)");
        }
        System.out.println("cpu memory:   " + Torch.memoryStats(Device.cpu()));
        return 0;
    }

    private static String version() {
        String v = InfoCommand.class.getPackage().getImplementationVersion();
        return v == null ? "(development build)" : v;
    }

    /**
     * The model name with the vendor, family and model numbers: a VM's model name can be as vague as "Intel(R) Xeon(R)
     * Processor", and the numbers tell which generation the kernels and the figures ran on.
     */
    private static String cpuModel() {
        String name = field("model name"), vendor = field("vendor_id"), family = field("cpu family"), model = field("model");
        if (name == null) return System.getProperty("os.arch");
        return name + (vendor == null || family == null || model == null ? "" : " (" + vendor + " family " + family + " model " + model + ")");
    }

    /** The first value of a {@code /proc/cpuinfo} field, or null. */
    private static String field(String key) {
        for (String line : cpuinfo()) {
            int colon = line.indexOf(':');
            if (colon > 0 && line.substring(0, colon).trim().equals(key)) return line.substring(colon + 1).trim();
        }
        return null;
    }

    private static List<String> cpuFlags() {
        for (String line : cpuinfo()) {
            if (line.startsWith("flags")) {
                Set<String> flags = new TreeSet<>(List.of(line.substring(line.indexOf(':') + 1).trim().split("\\s+")));
                List<String> out = new ArrayList<>();
                for (String f : INTERESTING_FLAGS) if (flags.contains(f)) out.add(f);
                return out;
            }
        }
        return List.of("(unknown: /proc/cpuinfo not readable)");
    }

    private static List<String> cpuinfo() {
        try {
            return Files.readAllLines(Path.of("/proc/cpuinfo"));
        } catch (IOException e) {
            return List.of();
        }
    }
}
