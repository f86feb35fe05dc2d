package org.jtorch.testing;

import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Runs a class's {@code main} in a fresh JVM with jtorch's JVM flags, for tests whose subject is a process: one
 * that may crash or hang ({@link #run}: the test JVM survives and reports it; a crash log, {@code hs_err}, goes
 * to a temporary folder and is appended to the output), or one that is killed or runs under operating-system
 * limits ({@link #command}).
 */
public final class ChildJvm {
    /** How the child ended: its exit code ({@code 134} after a SIGSEGV), or -1 if it was killed at the timeout. */
    public record Result(int exitCode, boolean timedOut, String output) {
        public boolean crashed() {
            return output.contains("A fatal error has been detected by the Java Runtime Environment");
        }
    }

    private ChildJvm() {}

    public static Result run(Class<?> main, Duration timeout, Map<String, String> env, String... args)
            throws IOException, InterruptedException {
        return run(main, timeout, env, 0, args);
    }

    /**
     * As {@link #run(Class, Duration, Map, String...)}, with the child's address space limited to
     * {@code maxVirtualKiB} ({@code ulimit -v}; 0 for no limit), for children that may ask for more memory than the
     * machine can spare: an allocation past the limit fails in the child instead of pushing others out.
     */
    public static Result run(Class<?> main, Duration timeout, Map<String, String> env, long maxVirtualKiB, String... args)
            throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory("jtorch-child-jvm");
        try {
            List<String> command = new ArrayList<>();
            command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            command.addAll(List.of("--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                    "-XX:-UseProfiledLoopPredicate", "-Xmx512m", "-XX:-CreateCoredumpOnCrash",
                    "-XX:ErrorFile=" + dir.resolve("hs_err_%p.log")));
            command.add("-cp");
            command.add(classPath(withBackends(main, ChildJvm.class, org.jtorch.Tensor.class)));
            command.add(main.getName());
            command.addAll(List.of(args));
            if (maxVirtualKiB > 0) {
                StringBuilder sh = new StringBuilder("ulimit -v ").append(maxVirtualKiB).append(" && exec");
                for (String a : command) sh.append(" '").append(a.replace("'", "'\\''")).append('\'');
                command = List.of("sh", "-c", sh.toString());
            }
            Path log = dir.resolve("output.txt");
            ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
            pb.environment().putAll(env);
            Process p = pb.start();
            boolean finished = p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
            if (!finished) {
                p.destroyForcibly();
                p.waitFor(30, TimeUnit.SECONDS);
            }
            StringBuilder output = new StringBuilder(Files.readString(log, StandardCharsets.UTF_8));
            try (Stream<Path> files = Files.list(dir)) {
                for (Path f : files.filter(f -> f.getFileName().toString().startsWith("hs_err")).toList()) {
                    output.append("\n--- ").append(f.getFileName()).append(" ---\n")
                            .append(Files.readString(f, StandardCharsets.ISO_8859_1).lines().limit(40)
                                    .reduce("", (a, b) -> a + b + "\n"));
                }
            }
            return new Result(finished ? p.exitValue() : -1, !finished, output.toString());
        } finally {
            try (Stream<Path> files = Files.walk(dir)) {
                for (Path f : files.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(f);
            }
        }
    }

    /**
     * The last line {@code main} prints (stdout and stderr together) in a child JVM with {@code jvmOptions}; an
     * {@link AssertionError} with the child's whole output if it exits with other than 0.
     */
    public static String lastLine(List<String> jvmOptions, Class<?> main, String... args) throws IOException, InterruptedException {
        Process child = command(null, jvmOptions, main, args).redirectErrorStream(true).start();
        String output = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        int exit = child.waitFor();
        if (exit != 0) throw new AssertionError(main.getName() + " exited with " + exit + ":\n" + output);
        return output.strip().lines().reduce((a, b) -> b).orElse("");
    }

    /**
     * The command that runs {@code main} with {@code args}; {@code shellPrefix}, when not null, is a shell
     * command run before it in the same {@code sh} (e.g. {@code ulimit -f 4096}) .
     */
    public static ProcessBuilder command(String shellPrefix, Class<?> main, String... args) {
        return command(shellPrefix, List.of("-XX:TieredStopAtLevel=1"), main, args); // these children run briefly: start fast
    }

    /** {@link #command(String, Class, String...)} with extra JVM options ({@code -Xmx256m}, {@code -Dname=value}). */
    public static ProcessBuilder command(String shellPrefix, List<String> jvmOptions, Class<?> main, String... args) {
        List<String> java = new ArrayList<>();
        java.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        java.add("--add-modules=jdk.incubator.vector");
        java.add("--enable-native-access=ALL-UNNAMED");
        java.addAll(jvmOptions);
        java.add("-Xshare:auto");
        java.add("-cp");
        java.add(classPath(main, org.jtorch.Tensor.class));
        java.add(main.getName());
        java.addAll(List.of(args));
        if (shellPrefix == null) return new ProcessBuilder(java);
        StringBuilder sh = new StringBuilder(shellPrefix).append(" && exec");
        for (String a : java) sh.append(" '").append(a.replace("'", "'\\''")).append('\'');
        return new ProcessBuilder("sh", "-c", sh.toString());
    }

    /** Where the classes are loaded from (surefire's own class path may be a manifest-only jar). */
    /** {@code classes} and the installed backends' providers: the child sees the devices the parent sees. */
    private static Class<?>[] withBackends(Class<?>... classes) {
        List<Class<?>> all = new ArrayList<>(List.of(classes));
        java.util.ServiceLoader.load(org.jtorch.backend.BackendProvider.class).stream().forEach(p -> all.add(p.type()));
        return all.toArray(Class<?>[]::new);
    }

    private static String classPath(Class<?>... classes) {
        List<String> entries = new ArrayList<>();
        for (Class<?> c : classes) {
            try {
                String entry = Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
                if (!entries.contains(entry)) entries.add(entry);
            } catch (URISyntaxException e) {
                throw new IllegalStateException(e);
            }
        }
        return String.join(File.pathSeparator, entries);
    }
}
