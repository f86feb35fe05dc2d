package org.jtorch.testing;

import java.io.File;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Starts a {@code main} class of the tests in a child JVM, for tests whose subject is a process: one that
 * is killed, crashes or runs under operating-system limits. The child runs with jtorch's JVM flags and
 * the class path of the test and main classes.
 */
public final class ChildJvm {
    private ChildJvm() {}

    /**
     * The command that runs {@code main} with {@code args}; {@code shellPrefix}, when not null, is a shell
     * command run before it in the same {@code sh} (e.g. {@code ulimit -f 4096}) .
     */
    public static ProcessBuilder command(String shellPrefix, Class<?> main, String... args) {
        List<String> java = new ArrayList<>();
        java.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        java.add("--add-modules=jdk.incubator.vector");
        java.add("--enable-native-access=ALL-UNNAMED");
        java.add("-XX:TieredStopAtLevel=1"); // these children run briefly: start fast
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

    /** Where the classes are loaded from (surefire's own class path may not name them). */
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
