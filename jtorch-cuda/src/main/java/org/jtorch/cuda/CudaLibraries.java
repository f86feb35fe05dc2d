package org.jtorch.cuda;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Finds and loads the CUDA libraries of this machine, lazily and once each.
 *
 * <p>Search order (first directory holding the library wins; within it the highest soname version):
 * <ol>
 *   <li>{@code JTORCH_CUDA_PATH} (colon-separated; each entry, and its {@code lib64} and {@code lib})</li>
 *   <li>{@code LD_LIBRARY_PATH}</li>
 *   <li>{@code /usr/local/cuda/lib64}, then {@code /usr/local/cuda-X.Y/lib64}, newest version first</li>
 *   <li>{@code /usr/lib/x86_64-linux-gnu}</li>
 *   <li>the {@code nvidia/*}{@code /lib} folders of Python wheels in site-packages ({@code VIRTUAL_ENV},
 *       {@code CONDA_PREFIX}, {@code ~/.local}, {@code /usr/local}, {@code /usr})</li>
 * </ol>
 * Each library is reported found (path and version, where the library has a version call) or not
 * found (with the directories searched), for {@code jtorch info} and for the reason the backend gives
 * when it is unavailable. Thread-safe.
 */
public final class CudaLibraries {
    /** The libraries the CUDA backend uses. */
    public enum Kind {
        DRIVER("CUDA driver", "libcuda\\.so(\\.[0-9]+)*"),
        NVRTC("NVRTC", "libnvrtc\\.so(\\.[0-9]+)*"),
        CUBLASLT("cuBLASLt", "libcublasLt\\.so(\\.[0-9]+)*"),
        CUBLAS("cuBLAS", "libcublas\\.so(\\.[0-9]+)*"),
        CUDNN("cuDNN", "libcudnn\\.so(\\.[0-9]+)*"),
        NCCL("NCCL", "libnccl\\.so(\\.[0-9]+)*");

        private final String displayName;
        private final Pattern fileName;

        Kind(String displayName, String fileNameRegex) {
            this.displayName = displayName;
            this.fileName = Pattern.compile(fileNameRegex);
        }

        public String displayName() {
            return displayName;
        }

        /** The file names looked for, as a glob ({@code libcuda.so*}). */
        public String fileGlob() {
            return fileName.pattern().substring(0, fileName.pattern().indexOf("\\.so")).replace("\\", "") + ".so*";
        }

        /** Whether {@code name} is a file name of this library ({@code libcuda.so.1}, not {@code libcudart.so}). */
        public boolean matches(String name) {
            return fileName.matcher(name).matches();
        }
    }

    /**
     * What the search found for one library.
     *
     * @param path the file loaded, or null when not found or not loadable
     * @param version the library's own version ("13.0"), "unknown" when it has no version call
     * @param searched the directories looked in, in order
     * @param problem empty when loaded; otherwise why not ("not found: ..." or "not loadable: ...")
     */
    public record Status(Kind kind, Path path, String version, List<Path> searched, String problem) {
        public boolean found() {
            return problem.isEmpty();
        }

        /** One line for {@code jtorch info}. */
        public String describe() {
            String name = String.format("%-9s", kind.displayName());
            if (found()) return name + " " + version + "  " + path;
            return name + " " + problem;
        }
    }

    private static volatile CudaLibraries system;

    private final List<Path> searchDirectories;
    private final Map<Kind, Status> statuses = new EnumMap<>(Kind.class);
    private final Map<Kind, NativeLibrary> loaded = new EnumMap<>(Kind.class);

    public CudaLibraries(List<Path> searchDirectories) {
        this.searchDirectories = List.copyOf(searchDirectories);
    }

    /** The libraries of this process, searched for with the environment's variables. */
    public static CudaLibraries system() {
        CudaLibraries s = system;
        if (s == null) {
            synchronized (CudaLibraries.class) {
                if (system == null) {
                    system = new CudaLibraries(searchDirectories(System.getenv(), Path.of("/"),
                            Path.of(System.getProperty("user.home", "/root"))));
                }
                s = system;
            }
        }
        return s;
    }

    public List<Path> searchDirectories() {
        return searchDirectories;
    }

    /**
     * The directories to search, in order, for the environment {@code env}, with absolute system
     * paths resolved under {@code fsRoot} (tests use a temporary tree) and {@code home} for {@code ~}.
     * Only existing directories are listed; duplicates keep their first position.
     */
    public static List<Path> searchDirectories(Map<String, String> env, Path fsRoot, Path home) {
        Set<Path> dirs = new LinkedHashSet<>();
        for (String entry : split(env.get("JTORCH_CUDA_PATH"))) {
            Path p = Path.of(entry);
            addIfDirectory(dirs, p);
            addIfDirectory(dirs, p.resolve("lib64"));
            addIfDirectory(dirs, p.resolve("lib"));
        }
        for (String entry : split(env.get("LD_LIBRARY_PATH"))) addIfDirectory(dirs, Path.of(entry));
        Path usrLocal = fsRoot.resolve("usr/local");
        addIfDirectory(dirs, usrLocal.resolve("cuda/lib64"));
        for (Path cuda : listSorted(usrLocal, "cuda-[0-9.]+", true)) addIfDirectory(dirs, cuda.resolve("lib64"));
        addIfDirectory(dirs, fsRoot.resolve("usr/lib/x86_64-linux-gnu"));
        List<Path> prefixes = new ArrayList<>();
        if (env.get("VIRTUAL_ENV") != null) prefixes.add(Path.of(env.get("VIRTUAL_ENV")));
        if (env.get("CONDA_PREFIX") != null) prefixes.add(Path.of(env.get("CONDA_PREFIX")));
        prefixes.add(home.resolve(".local"));
        prefixes.add(usrLocal);
        prefixes.add(fsRoot.resolve("usr"));
        for (Path prefix : prefixes) {
            for (Path python : listSorted(prefix.resolve("lib"), "python3(\\.[0-9]+)?", true)) {
                for (String packages : List.of("site-packages", "dist-packages")) {
                    for (Path pkg : listSorted(python.resolve(packages).resolve("nvidia"), "[^.].*", false)) {
                        addIfDirectory(dirs, pkg.resolve("lib"));
                    }
                }
            }
        }
        return List.copyOf(dirs);
    }

    private static List<String> split(String pathList) {
        if (pathList == null || pathList.isBlank()) return List.of();
        List<String> out = new ArrayList<>();
        for (String s : pathList.split(":")) if (!s.isBlank()) out.add(s);
        return out;
    }

    private static void addIfDirectory(Set<Path> dirs, Path p) {
        if (Files.isDirectory(p)) dirs.add(p.toAbsolutePath().normalize());
    }

    /** Entries of {@code dir} whose names match {@code regex}, by version-aware name order. */
    private static List<Path> listSorted(Path dir, String regex, boolean newestFirst) {
        if (!Files.isDirectory(dir)) return List.of();
        Pattern p = Pattern.compile(regex);
        try (Stream<Path> entries = Files.list(dir)) {
            Comparator<Path> order = Comparator.comparing(e -> versionKey(e.getFileName().toString()), CudaLibraries::compareVersions);
            order = order.thenComparing(e -> e.getFileName().toString());
            if (newestFirst) order = order.reversed();
            return entries.filter(e -> p.matcher(e.getFileName().toString()).matches()).sorted(order).toList();
        } catch (IOException e) {
            return List.of();
        }
    }

    private static final Pattern NUMBERS = Pattern.compile("[0-9]+");

    private static int[] versionKey(String name) {
        Matcher m = NUMBERS.matcher(name);
        List<Integer> parts = new ArrayList<>();
        while (m.find()) parts.add(Integer.parseInt(m.group().length() > 9 ? m.group().substring(0, 9) : m.group()));
        return parts.stream().mapToInt(Integer::intValue).toArray();
    }

    private static int compareVersions(int[] a, int[] b) {
        for (int i = 0; i < Math.min(a.length, b.length); i++) {
            if (a[i] != b[i]) return Integer.compare(a[i], b[i]);
        }
        return Integer.compare(a.length, b.length);
    }

    /** The file for {@code kind}: the first directory holding one, and there the highest soname version. */
    public Optional<Path> locate(Kind kind) {
        for (Path dir : searchDirectories) {
            try (Stream<Path> entries = Files.list(dir)) {
                Optional<Path> best = entries.filter(e -> kind.matches(e.getFileName().toString()))
                        .filter(Files::exists)
                        .max(Comparator.comparing(e -> versionKey(e.getFileName().toString()), CudaLibraries::compareVersions));
                if (best.isPresent()) return best;
            } catch (IOException e) {
                // An unreadable directory is skipped like a missing one.
            }
        }
        return Optional.empty();
    }

    /** The search result for {@code kind}, loading the library (once) to read its version. */
    public synchronized Status status(Kind kind) {
        Status s = statuses.get(kind);
        if (s == null) {
            s = probe(kind);
            statuses.put(kind, s);
        }
        return s;
    }

    /** Every library's status, in {@link Kind} order. */
    public List<Status> statusAll() {
        List<Status> out = new ArrayList<>();
        for (Kind k : Kind.values()) out.add(status(k));
        return out;
    }

    /** The loaded library; throws {@link CudaException} naming where it was looked for when it is missing. */
    public synchronized NativeLibrary load(Kind kind) {
        Status s = status(kind);
        if (!s.found()) throw new CudaException(kind.displayName() + " library not available: " + s.problem(), null);
        return loaded.get(kind);
    }

    private Status probe(Kind kind) {
        Optional<Path> path = locate(kind);
        if (path.isEmpty()) {
            return new Status(kind, null, "", searchDirectories,
                    "not found: no " + kind.fileGlob() + " in "
                            + (searchDirectories.isEmpty() ? "(no search directory exists)" : searchDirectories));
        }
        NativeLibrary lib;
        try {
            if (kind == Kind.NVRTC) preloadNvrtcBuiltins(path.get());
            lib = NativeLibrary.open(path.get());
        } catch (CudaException e) {
            return new Status(kind, null, "", searchDirectories, "not loadable: " + e.getMessage());
        }
        loaded.put(kind, lib);
        return new Status(kind, path.get(), readVersion(kind, lib), searchDirectories, "");
    }

    /**
     * NVRTC opens {@code libnvrtc-builtins.so.X.Y} by name at its first compile; loading the one beside
     * it first lets that name resolve without {@code LD_LIBRARY_PATH} (the loader matches sonames of
     * libraries already loaded).
     */
    private static void preloadNvrtcBuiltins(Path nvrtc) {
        Path dir = nvrtc.getParent();
        try (Stream<Path> entries = Files.list(dir)) {
            for (Path b : entries.filter(e -> e.getFileName().toString().matches("libnvrtc-builtins\\.so(\\.[0-9]+)+")).toList()) {
                try {
                    NativeLibrary.open(b);
                } catch (CudaException ignored) {
                    // NVRTC reports a missing builtins library itself, with its own message, at compile time.
                }
            }
        } catch (IOException ignored) {
            // Same as above.
        }
    }

    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;

    /** The version the library reports about itself ("unknown" where it has no version call). */
    static String readVersion(Kind kind, NativeLibrary lib) {
        try (Arena arena = Arena.ofConfined()) {
            switch (kind) {
                case DRIVER -> {
                    MethodHandle h = lib.downcall(FunctionDescriptor.of(INT, ValueLayout.ADDRESS), "cuDriverGetVersion");
                    MemorySegment v = arena.allocate(INT);
                    int rc = (int) h.invokeExact(v);
                    if (rc != 0) return "unknown (cuDriverGetVersion returned " + rc + ")";
                    int n = v.get(INT, 0);
                    return n / 1000 + "." + (n % 1000) / 10;
                }
                case NVRTC -> {
                    MethodHandle h = lib.downcall(FunctionDescriptor.of(INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS), "nvrtcVersion");
                    MemorySegment major = arena.allocate(INT);
                    MemorySegment minor = arena.allocate(INT);
                    int rc = (int) h.invokeExact(major, minor);
                    if (rc != 0) return "unknown (nvrtcVersion returned " + rc + ")";
                    return major.get(INT, 0) + "." + minor.get(INT, 0);
                }
                case CUBLASLT, CUDNN -> {
                    String symbol = kind == Kind.CUBLASLT ? "cublasLtGetVersion" : "cudnnGetVersion";
                    MethodHandle h = lib.downcall(FunctionDescriptor.of(ValueLayout.JAVA_LONG), symbol);
                    long v = (long) h.invokeExact();
                    // cuDNN 8 encodes major*1000+minor*100+patch; cuDNN 9 and cuBLASLt major*10000+minor*100+patch.
                    if (kind == Kind.CUDNN && v < 10000) return v / 1000 + "." + (v % 1000) / 100 + "." + v % 100;
                    return v / 10000 + "." + (v / 100) % 100 + "." + v % 100;
                }
                case CUBLAS -> {
                    MethodHandle h = lib.downcall(FunctionDescriptor.of(INT, INT, ValueLayout.ADDRESS), "cublasGetProperty");
                    int[] parts = new int[3];
                    for (int i = 0; i < 3; i++) { // MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL of libraryPropertyType
                        MemorySegment v = arena.allocate(INT);
                        int rc = (int) h.invokeExact(i, v);
                        if (rc != 0) return "unknown (cublasGetProperty returned " + rc + ")";
                        parts[i] = v.get(INT, 0);
                    }
                    return parts[0] + "." + parts[1] + "." + parts[2];
                }
                case NCCL -> {
                    MethodHandle h = lib.downcall(FunctionDescriptor.of(INT, ValueLayout.ADDRESS), "ncclGetVersion");
                    MemorySegment v = arena.allocate(INT);
                    int rc = (int) h.invokeExact(v);
                    if (rc != 0) return "unknown (ncclGetVersion returned " + rc + ")";
                    int n = v.get(INT, 0); // X * 10000 + Y * 100 + Z from NCCL 2.9 on
                    return n / 10000 + "." + (n / 100) % 100 + "." + n % 100;
                }
                default -> {
                    return "unknown";
                }
            }
        } catch (CudaException e) {
            return "unknown (" + e.getMessage() + ")";
        } catch (Throwable t) {
            return "unknown (" + t + ")";
        }
    }

    /** One line per library, for {@code jtorch info}. */
    public List<String> describe() {
        List<String> lines = new ArrayList<>();
        for (Status s : statusAll()) lines.add(s.describe());
        return lines;
    }
}
