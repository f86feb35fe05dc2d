package org.jtorch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.spi.ToolProvider;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The layering of issue 15 that holds so far, read from the sources: the op registry ({@code op}) and the backends
 * ({@code backend}) sit below the front end and never name {@code Tensor} or the packages above them, and {@code Tensor}
 * names none of the front-end packages above it ({@code data}, {@code nn}, ...: pinned memory comes from the backends);
 * {@code memory} (storages, allocators, scopes) names only the value types ({@code DType}, {@code Device}): a scope tracks
 * any {@code memory.Scoped}; {@code distributed} (process groups) names nothing of {@code nn}, whose modules use it
 * ({@code SyncBatchNorm}, {@code nn.parallel.DistributedDataParallel}). From the compiled classes (the JDK's jdeps), the
 * package graph's cycles: only the front end ({@code Tensor}, {@code ops}, {@code autograd}) may import each other in a
 * circle ({@link #ALLOWED_CYCLES}).
 */
class PackageDependenciesTest {
    private static final Pattern REFERENCE = Pattern.compile("\\borg\\.jtorch\\.(Tensor\\b|[a-z]+\\b)");

    private static Path sources() {
        for (String p : new String[] {"src/main/java/org/jtorch", "jtorch-core/src/main/java/org/jtorch"}) {
            if (Files.isDirectory(Path.of(p))) return Path.of(p);
        }
        throw new IllegalStateException("jtorch-core's sources are not under the working directory " + Path.of("").toAbsolutePath());
    }

    /** A source file without its comments: comments may name anything, only code counts. */
    private static String code(Path f) throws IOException {
        return Files.readString(f).replaceAll("(?s)/\\*.*?\\*/", "").replaceAll("//[^\\n]*", "");
    }

    /** The files of {@code pkg} (and its subpackages) that refer to any of {@code forbidden}, with what they refer to. */
    private static List<String> references(String pkg, List<String> forbidden) throws IOException {
        List<String> found = new ArrayList<>();
        try (Stream<Path> files = Files.walk(pkg.isEmpty() ? sources() : sources().resolve(pkg))) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                Matcher m = REFERENCE.matcher(code(f));
                while (m.find()) {
                    if (forbidden.contains(m.group(1))) found.add(sources().relativize(f) + " -> " + m.group(1));
                }
            }
        }
        return found.stream().distinct().toList();
    }

    @Test
    void theOpRegistryNamesNothingAboveIt() throws IOException {
        assertEquals(List.of(), references("op", List.of("Tensor", "ops", "backend", "amp", "autograd", "data", "jit", "nn", "optim")));
    }

    @Test
    void theBackendsNameNeitherTensorNorTheFrontEnd() throws IOException {
        assertEquals(List.of(), references("backend", List.of("Tensor", "ops", "amp", "autograd", "data", "jit", "nn", "optim")));
    }

    @Test
    void memoryNamesNeitherTensorNorAnythingAboveIt() throws IOException {
        assertEquals(List.of(), references("memory", List.of("Tensor", "Torch", "op", "ops", "backend", "amp", "autograd", "data", "jit",
                "nn", "optim")));
    }

    @Test
    void distributedNamesNothingOfNn() throws IOException {
        // as torch.distributed: DDP is a module, so it lives in nn.parallel (torch.nn.parallel), above the process groups
        assertEquals(List.of(), references("distributed", List.of("nn")));
    }

    /** What {@code file} (directly in package {@code org.jtorch}) refers to among {@code forbidden}. */
    private static List<String> referencesOf(String file, List<String> forbidden) throws IOException {
        return references("", forbidden).stream().filter(r -> r.startsWith(file + " -> ")).toList();
    }

    @Test
    void tensorNamesNoFrontEndPackageAboveIt() throws IOException {
        assertEquals(List.of(), referencesOf("Tensor.java", List.of("data", "nn", "optim", "jit", "io", "distributed", "vision",
                "backend", "amp")));
    }

    @Test
    void theFrontEndNamesOnlyTheCpuBackendsThreadPool() throws IOException {
        // element reads and writes go through memory.ElementCodec; the CPU backend's kernels are reached through the
        // dispatcher. Its thread pool is the one CPU setting the front end owns (Torch.setNumThreads, DataLoader workers).
        Pattern cpuBackend = Pattern.compile("\\borg\\.jtorch\\.backend\\.cpu\\.(\\w+)");
        List<String> found = new ArrayList<>();
        try (Stream<Path> files = Files.walk(sources())) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java") && !sources().relativize(p).startsWith("backend")).toList()) {
                Matcher m = cpuBackend.matcher(code(f));
                while (m.find()) {
                    if (!m.group(1).equals("Parallel")) found.add(sources().relativize(f) + " -> backend.cpu." + m.group(1));
                }
            }
        }
        assertEquals(List.of(), found);
    }

    /**
     * The packages that may import each other in a circle. The front end: {@code Tensor}/{@code Torch}, the op front
     * ends with the dispatcher ({@code ops}) and autograd call each other on every op (issue 15: "reduced to Tensor ->
     * dispatcher"; autocast is a layer the dispatcher calls through {@code ops.AutocastLayer}). Every other package of
     * jtorch-core must be outside any cycle.
     */
    static final List<Set<String>> ALLOWED_CYCLES = List.of(Set.of("org.jtorch", "org.jtorch.ops", "org.jtorch.autograd"));

    /**
     * Classes counted in the package {@code scripts/dev/move-value-types} moves them to: the value types every layer
     * names. After the script has run these are the classes' own packages and the map changes nothing.
     */
    static final Map<String, String> VALUE_TYPES = Map.of("org.jtorch.types.DType", "org.jtorch.types", "org.jtorch.types.Device",
            "org.jtorch.types", "org.jtorch.types.Generator", "org.jtorch.types", "org.jtorch.types.Arguments", "org.jtorch.types");

    private static final Pattern JDEPS_EDGE = Pattern.compile("^\\s+(org\\.jtorch\\.\\S+)\\s+->\\s+(org\\.jtorch\\.\\S+)", Pattern.MULTILINE);

    /** jtorch-core's compiled classes: the folder (or jar) {@code Tensor} was loaded from. */
    private static Path compiledClasses() throws URISyntaxException {
        return Path.of(Tensor.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    /** Package to package, with the class edges behind each ({@code a.B -> c.D}), from the JDK's jdeps. */
    static Map<String, Map<String, List<String>>> packageGraph(Path classes) {
        ToolProvider jdeps = ToolProvider.findFirst("jdeps").orElseThrow(() -> new IllegalStateException("this JDK has no jdeps"));
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int rc = jdeps.run(new PrintWriter(out), new PrintWriter(err), "-verbose:class", "-filter:none", "--multi-release",
                String.valueOf(Runtime.version().feature()), classes.toString());
        if (rc != 0) throw new IllegalStateException("jdeps " + classes + " failed (" + rc + "): " + err);
        Map<String, Map<String, List<String>>> graph = new TreeMap<>();
        Matcher m = JDEPS_EDGE.matcher(out.toString());
        while (m.find()) {
            String from = topLevel(m.group(1));
            String to = topLevel(m.group(2));
            String fromPackage = packageOf(from);
            String toPackage = packageOf(to);
            graph.computeIfAbsent(toPackage, p -> new TreeMap<>());
            Map<String, List<String>> targets = graph.computeIfAbsent(fromPackage, p -> new TreeMap<>());
            if (!fromPackage.equals(toPackage)) {
                List<String> classEdges = targets.computeIfAbsent(toPackage, p -> new ArrayList<>());
                if (!classEdges.contains(from + " -> " + to)) classEdges.add(from + " -> " + to);
            }
        }
        return graph;
    }

    private static String topLevel(String className) {
        int nested = className.indexOf('$');
        return nested < 0 ? className : className.substring(0, nested);
    }

    private static String packageOf(String className) {
        String moved = VALUE_TYPES.get(className);
        return moved != null ? moved : className.substring(0, className.lastIndexOf('.'));
    }

    /** The strongly connected components of more than one node (Tarjan's algorithm, iterative). */
    static List<Set<String>> cycles(Map<String, Map<String, List<String>>> graph) {
        Map<String, Integer> index = new HashMap<>();
        Map<String, Integer> low = new HashMap<>();
        Deque<String> stack = new ArrayDeque<>();
        Set<String> onStack = new HashSet<>();
        List<Set<String>> components = new ArrayList<>();
        for (String root : graph.keySet()) {
            if (index.containsKey(root)) continue;
            // each frame: a node and the iterator position over its successors
            Deque<Map.Entry<String, Iterator<String>>> frames = new ArrayDeque<>();
            index.put(root, index.size());
            low.put(root, index.get(root));
            stack.push(root);
            onStack.add(root);
            frames.push(Map.entry(root, graph.get(root).keySet().iterator()));
            while (!frames.isEmpty()) {
                String v = frames.peek().getKey();
                Iterator<String> next = frames.peek().getValue();
                if (next.hasNext()) {
                    String w = next.next();
                    if (!index.containsKey(w)) {
                        index.put(w, index.size());
                        low.put(w, index.get(w));
                        stack.push(w);
                        onStack.add(w);
                        frames.push(Map.entry(w, graph.get(w).keySet().iterator()));
                    } else if (onStack.contains(w)) {
                        low.put(v, Math.min(low.get(v), index.get(w)));
                    }
                    continue;
                }
                frames.pop();
                if (!frames.isEmpty()) {
                    String parent = frames.peek().getKey();
                    low.put(parent, Math.min(low.get(parent), low.get(v)));
                }
                if (low.get(v).equals(index.get(v))) {
                    Set<String> component = new TreeSet<>();
                    String w;
                    do {
                        w = stack.pop();
                        onStack.remove(w);
                        component.add(w);
                    } while (!w.equals(v));
                    if (component.size() > 1) components.add(component);
                }
            }
        }
        return components;
    }

    /**
     * The edges inside {@code component} that start outside {@code allowed}, each with its first class edges: where to
     * look for the import that closed the cycle.
     */
    private static List<String> edgesOutOfAllowed(Map<String, Map<String, List<String>>> graph, Set<String> component,
            Set<String> allowed) {
        List<String> found = new ArrayList<>();
        for (String from : component) {
            if (allowed.contains(from)) continue;
            for (Map.Entry<String, List<String>> e : graph.get(from).entrySet()) {
                List<String> classEdges = e.getValue();
                if (component.contains(e.getKey())) {
                    found.add(from + " -> " + e.getKey() + " (" + classEdges.size() + " class edges: "
                            + String.join(", ", classEdges.subList(0, Math.min(3, classEdges.size()))) + ")");
                }
            }
        }
        return found;
    }

    @Test
    void onlyTheFrontEndPackagesImportEachOtherInACircle() throws URISyntaxException {
        Map<String, Map<String, List<String>>> graph = packageGraph(compiledClasses());
        List<String> problems = new ArrayList<>();
        for (Set<String> component : cycles(graph)) {
            Set<String> allowed = ALLOWED_CYCLES.stream().filter(a -> a.containsAll(component)).findFirst()
                    .orElse(ALLOWED_CYCLES.stream().filter(a -> a.stream().anyMatch(component::contains)).findFirst().orElse(Set.of()));
            if (!allowed.containsAll(component)) {
                problems.add("packages in one import cycle: " + component + "; their edges inside it: "
                        + edgesOutOfAllowed(graph, component, allowed));
            }
        }
        assertEquals(List.of(), problems);
    }

    @Test
    void theCycleCheckFindsACycle() {
        // the check itself: a -> b -> c -> a is one component, d (reached, not reaching back) is not in it
        Map<String, Map<String, List<String>>> graph = new TreeMap<>();
        for (String p : List.of("a", "b", "c", "d")) graph.put(p, new TreeMap<>());
        graph.get("a").put("b", List.of());
        graph.get("b").put("c", List.of());
        graph.get("c").put("a", List.of());
        graph.get("c").put("d", List.of());
        assertEquals(List.of(Set.of("a", "b", "c")), cycles(graph));
    }

    @Test
    void theCheckSeesAReference() throws IOException {
        // the check itself: Tensor.java does refer to the front end's ops
        assertTrue(references("", List.of("ops")).stream().anyMatch(r -> r.startsWith("Tensor.java")));
    }
}
