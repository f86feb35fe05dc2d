package org.jtorch.vision.datasets;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Where downloaded datasets live: {@code $JTORCH_DATA}, else {@code .data} in the working directory
 * or its parent, else {@code $JTORCH_HOME/.data} (the repository's {@code .data/}, where
 * {@code scripts/fetch-data} writes; the {@code jtorch} launcher sets {@code JTORCH_HOME}, so
 * {@code jtorch train} finds the data from any working directory).
 */
public final class DataRoot {
    private DataRoot() {}

    /** The directories searched for {@code <base>/<name>}, in order. */
    public static List<Path> candidates() {
        return candidates(System.getenv());
    }

    /** {@link #candidates()} for the environment {@code env}. */
    static List<Path> candidates(Map<String, String> env) {
        List<Path> bases = new ArrayList<>();
        String data = env.get("JTORCH_DATA");
        if (data != null && !data.isBlank()) bases.add(Path.of(data));
        bases.add(Path.of(".data"));
        bases.add(Path.of("..", ".data"));
        String home = env.get("JTORCH_HOME");
        if (home != null && !home.isBlank()) bases.add(Path.of(home, ".data"));
        return bases;
    }

    /** {@code <base>/<name>} for the first candidate base where it exists; else null. */
    public static Path find(String name) {
        for (Path base : candidates()) {
            Path dir = base.resolve(name);
            if (Files.isDirectory(dir)) return dir;
        }
        return null;
    }

    /** {@code <base>/<name>} in the first candidate (for messages when nothing is found). */
    public static Path defaultDir(String name) {
        return candidates().get(0).resolve(name).toAbsolutePath().normalize();
    }
}
