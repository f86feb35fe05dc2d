package org.jtorch.data;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.File;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.io.SafeTensors;
import org.jtorch.memory.MemoryScope;
import org.jtorch.types.Arguments;

/**
 * A {@link DataLoader} worker in a child JVM ({@link WorkerMode#PROCESS}): the parent's side (start, request,
 * read, kill) and the child's {@link #main}. The child builds the dataset from its class (public, with a public
 * no-arg constructor), then for each request of dataset indices reports each index before reading it and writes
 * the samples to a safetensors file in the loader's directory, which the parent loads and deletes.
 *
 * <p>Protocol: the parent writes {@code int n, int[n] indices} ({@code n = -1}, or the end of the stream: stop; the
 * loader kills the child instead, as it may be stuck); the child answers
 * {@code 'I' int index} before each {@code get}, then {@code 'B' UTF path} (the batch's samples) or
 * {@code 'E' int index UTF description} (the sample that failed; -1 when building the dataset failed). A sample is
 * a {@link Tensor} or a {@link Sample} of tensors.
 */
public final class WorkerProcess implements AutoCloseable {
    private final Process process;
    /** Where the child writes its batches: the parent's, removed when the child is killed. */
    private final Path dir;
    private final DataInputStream in;
    private final DataOutputStream out;

    private WorkerProcess(Process process, Path dir) {
        this.process = process;
        this.dir = dir;
        this.in = new DataInputStream(new BufferedInputStream(process.getInputStream()));
        this.out = new DataOutputStream(new BufferedOutputStream(process.getOutputStream()));
    }

    /** Checks, in the parent, that a child can build {@code dataset}: what {@link DataLoader.Builder#build} reports. */
    static void checkConstructible(Dataset<?> dataset) {
        Class<?> c = dataset.getClass();
        boolean ok = Modifier.isPublic(c.getModifiers()) && (c.getEnclosingClass() == null || Modifier.isStatic(c.getModifiers()));
        try {
            ok &= Modifier.isPublic(c.getConstructor().getModifiers());
        } catch (NoSuchMethodException e) {
            ok = false;
        }
        if (!ok) {
            throw new IllegalArgumentException("DataLoader: workerMode(PROCESS) builds the dataset in each worker process from its "
                    + "class, which must be a public (static, if nested) class with a public no-arg constructor; "
                    + c.getName() + " is not");
        }
    }

    /** Starts a child JVM building {@code datasetClass}; its class path is this JVM's plus jtorch's and the dataset's. */
    static WorkerProcess start(Class<?> datasetClass, int worker) throws IOException {
        List<String> cp = new ArrayList<>(List.of(System.getProperty("java.class.path").split(File.pathSeparator)));
        for (Class<?> c : List.of(WorkerProcess.class, datasetClass)) {
            try {
                String entry = Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
                if (!cp.contains(entry)) cp.add(entry);
            } catch (URISyntaxException | NullPointerException e) {
                // no code source (e.g. a generated class): the class path must already hold it
            }
        }
        Path dir = Files.createTempDirectory("jtorch-dataloader-worker");
        List<String> command = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1",
                "-Djtorch.jitWarmup=false", // no C2 here to warm up for
                "-Djtorch.dataloader.worker=" + worker, "-cp", String.join(File.pathSeparator, cp),
                WorkerProcess.class.getName(), datasetClass.getName(), dir.toString());
        Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        return new WorkerProcess(p, dir);
    }

    /** Asks for the samples at {@code indices}. */
    void request(int[] indices) throws IOException {
        out.writeInt(indices.length);
        for (int i : indices) out.writeInt(i);
        out.flush();
    }

    /** The next message's tag ({@code 'I'}, {@code 'B'} or {@code 'E'}); an {@link java.io.EOFException} once killed. */
    byte readTag() throws IOException {
        return in.readByte();
    }

    int readInt() throws IOException {
        return in.readInt();
    }

    String readUtf() throws IOException {
        return in.readUTF();
    }

    /** Kills the child at once (it may be stuck in code that never returns) and waits for it to be gone. */
    @Override
    public void close() {
        process.destroyForcibly();
        try {
            process.waitFor();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try (var files = Files.list(dir)) {
            for (Path f : files.toList()) Files.deleteIfExists(f);
            Files.deleteIfExists(dir);
        } catch (IOException e) {
            // a temporary directory left behind is not worth failing a close for
        }
    }

    boolean isAlive() {
        return process.isAlive();
    }

    long pid() {
        return process.pid();
    }

    // ------------------------------------------------------------------ samples through safetensors files

    /** Writes {@code samples} (tensors or samples of tensors) to {@code file}. */
    static void writeSamples(Path file, List<Object> samples) throws IOException {
        Map<String, Tensor> tensors = new LinkedHashMap<>();
        Map<String, String> kinds = new LinkedHashMap<>();
        for (int i = 0; i < samples.size(); i++) {
            switch (samples.get(i)) {
                case Tensor t -> {
                    tensors.put(i + "", t);
                    kinds.put("" + i, "tensor");
                }
                case Sample s -> {
                    if (s.input() != null) tensors.put(i + ".input", s.input());
                    if (s.target() != null) tensors.put(i + ".target", s.target());
                    kinds.put("" + i, "sample");
                }
                case null, default -> throw new IllegalArgumentException("workerMode(PROCESS) carries samples of tensors (a Tensor "
                        + "or a Sample); dataset index gave " + (samples.get(i) == null ? "null" : samples.get(i).getClass().getName()));
            }
        }
        kinds.put("count", "" + samples.size());
        SafeTensors.save(file, tensors, kinds);
    }

    /** The samples {@link #writeSamples} wrote, as new CPU tensors (in the current scope); deletes the file. */
    static List<Object> readSamples(Path file) throws IOException {
        try {
            Map<String, Tensor> tensors = SafeTensors.loadCopy(file);
            Map<String, String> kinds;
            try (SafeTensors.Loaded l = SafeTensors.load(file)) {
                kinds = l.metadata();
            }
            int n = Integer.parseInt(kinds.get("count"));
            List<Object> samples = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                samples.add(kinds.get("" + i).equals("tensor") ? tensors.get("" + i)
                        : new Sample(tensors.get(i + ".input"), tensors.get(i + ".target")));
            }
            return samples;
        } finally {
            Files.deleteIfExists(file);
        }
    }

    // ------------------------------------------------------------------ the child

    /** The child: {@code WorkerProcess DATASET_CLASS DIR}, with requests on stdin and answers on stdout. */
    public static void main(String[] args) throws Exception {
        Arguments.nonNull("WorkerProcess.main", "args", args);
        // The protocol owns stdout: what the dataset prints goes to stderr.
        DataOutputStream out = new DataOutputStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out)));
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true));
        DataInputStream in = new DataInputStream(new BufferedInputStream(System.in));
        Dataset<?> dataset = null;
        String buildError = null;
        try {
            Constructor<?> k = Class.forName(args[0]).getConstructor();
            dataset = (Dataset<?>) k.newInstance();
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            Throwable cause = e instanceof java.lang.reflect.InvocationTargetException ite ? ite.getCause() : e;
            buildError = "building " + args[0] + " failed: " + cause;
        }
        Path dir = Path.of(args[1]);
        long batches = 0;
        while (true) {
            int n;
            try {
                n = in.readInt();
            } catch (java.io.EOFException e) {
                return; // the parent is gone
            }
            if (n < 0) return;
            int[] indices = new int[n];
            for (int i = 0; i < n; i++) indices[i] = in.readInt();
            if (buildError != null) {
                out.writeByte('E');
                out.writeInt(-1);
                out.writeUTF(buildError);
                out.flush();
                continue;
            }
            try (MemoryScope scope = new MemoryScope()) {
                List<Object> samples = new ArrayList<>(n);
                int failed = -1;
                String error = null;
                for (int index : indices) {
                    out.writeByte('I');
                    out.writeInt(index);
                    out.flush();
                    try {
                        samples.add(dataset.get(index));
                    } catch (Throwable e) {
                        failed = index;
                        error = e.getClass().getName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
                        break;
                    }
                }
                if (error == null) {
                    Path file = dir.resolve("batch-" + batches++ + ".safetensors");
                    try {
                        writeSamples(file, samples);
                    } catch (RuntimeException e) {
                        error = e.getMessage();
                    }
                    if (error == null) {
                        out.writeByte('B');
                        out.writeUTF(file.toString());
                    }
                }
                if (error != null) {
                    out.writeByte('E');
                    out.writeInt(failed);
                    out.writeUTF(error);
                }
                out.flush();
            }
        }
    }
}
