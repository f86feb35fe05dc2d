package org.jtorch.vision.datasets;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Where downloaded datasets live: {@code $JTORCH_DATA}, else {@code .data} in the working directory
 * or its parent (the repository's {@code .data/}, where {@code scripts/fetch-data} writes).
 */
public final class DataRoot {
    private DataRoot() {}

    /** The directories searched for {@code <base>/<name>}, in order. */
    public static List<Path> candidates() {
        List<Path> bases = new ArrayList<>();
        String env = System.getenv("JTORCH_DATA");
        if (env != null && !env.isBlank()) bases.add(Path.of(env));
        bases.add(Path.of(".data"));
        bases.add(Path.of("..", ".data"));
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
