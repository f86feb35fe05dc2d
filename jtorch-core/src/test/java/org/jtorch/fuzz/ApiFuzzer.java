package org.jtorch.fuzz;

import java.io.PrintStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Parameter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.OutOfMemoryException;
import org.jtorch.nn.F;
import org.jtorch.nn.Module;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The API fuzzer's child process: makes {@code calls} random calls across the public API (Tensor methods, Torch
 * factories and ops, F functionals, nn modules' constructors and forward, optimizers, and conv/pool calls with
 * generated geometry) and judges each with {@link Oracle}. Every call draws its arguments from its own
 * {@code Random(seed, index)}, so one call is replayed alone. It prints {@code CALL i} before each call (the last
 * one names the call that crashed or hung), a {@code FINDING} line for each wrong exception or meaningless result,
 * and a {@code SUMMARY} line at the end.
 *
 * <p>{@code ApiFuzzer single SEED CALLS} runs calls 0..CALLS-1; {@code ApiFuzzer single SEED CALLS I} replays call I
 * alone and prints its arguments and stack trace; {@code ApiFuzzer threads SEED CALLS} runs CALLS calls on each of
 * four threads over a shared pool of tensors that the threads also close, replace and free the cache under.
 */
public final class ApiFuzzer {
    /** Public for jtorch's own plumbing, global state, or not an op: not fuzzed. */
    private static final Set<String> EXCLUDED = Set.of("Tensor.fromStorage", "Tensor.setGradFn", "Tensor.setScope",
            "Tensor.checkOpen", "Tensor.checkWritable", "Tensor.checkNoInternalOverlap", "Tensor.checkNoPartialOverlap",
            "Tensor.checkNoOverlap", "Tensor.bumpVersion", "Tensor.markWrappedNumber", "Tensor.storage", "Tensor.gradHooks",
            "Tensor.pinMemory", "Torch.setNumThreads", "Torch.setDefaultDtype", "Torch.manualSeed", "Torch.emptyCache",
            "Tensor.wait", "Tensor.notify", "Tensor.notifyAll");

    /**
     * {@code -Djtorch.fuzz.printErrors=true}: print every right-kind error too, and every mixed-device call that returned,
     * to audit them against PyTorch.
     */
    private static final boolean PRINT_ERRORS = Boolean.getBoolean("jtorch.fuzz.printErrors");

    /** One generated call: what it is, how to run it, and what PyTorch does with it. */
    record Call(String op, String description, Callable<Object> body, String expectedError, long[] expectedShape,
                boolean mixedDevices) {
        Call(String op, String description, Callable<Object> body, String expectedError, long[] expectedShape) {
            this(op, description, body, expectedError, expectedShape, false);
        }
    }

    /** A way to make calls: a reflected public method or constructor, or a hand-written generator. */
    interface Entry {
        Call make(ArgumentGenerator g);
    }

    private final List<Entry> entries = new ArrayList<>();
    private final PrintStream out;
    private final LongAdder calls = new LongAdder();
    private final Map<String, LongAdder> counts = new java.util.concurrent.ConcurrentHashMap<>();
    private final long seed;
    /** In threads mode, the tensors all threads use. */
    private AtomicReferenceArray<Tensor> shared;

    /** Mixed-device mode: the device that about half of the generated tensors are on, the others on the CPU; or null. */
    private final Device other;

    ApiFuzzer(long seed, PrintStream out) {
        this(seed, out, null);
    }

    ApiFuzzer(long seed, PrintStream out, Device other) {
        this.seed = seed;
        this.out = out;
        this.other = other;
        for (Class<?> c : List.of(Tensor.class, Torch.class, F.class)) {
            List<Method> methods = new ArrayList<>(List.of(c.getDeclaredMethods()));
            methods.sort(Comparator.comparing(Method::toString)); // a stable order: a seed means the same calls
            for (Method m : methods) {
                if (!Modifier.isPublic(m.getModifiers()) || m.isSynthetic() || EXCLUDED.contains(c.getSimpleName() + "." + m.getName())) continue;
                if (c != Tensor.class && !Modifier.isStatic(m.getModifiers())) continue;
                if (supported(m)) entries.add(g -> reflected(g, c.getSimpleName() + "." + m.getName(), m));
            }
        }
        for (Class<? extends Module> c : moduleClasses()) {
            List<Constructor<?>> constructors = new ArrayList<>(List.of(c.getConstructors()));
            constructors.sort(Comparator.comparing(Constructor::toString));
            for (Constructor<?> k : constructors) if (supported(k)) entries.add(g -> module(g, c, k));
        }
        int reflected = entries.size();
        // conv/pool geometry and optimizers: an eighth and a thirtieth of the reflected entries' draws
        for (int i = 0; i < reflected / 8; i++) entries.add(Geometry::call);
        for (int i = 0; i < reflected / 30; i++) entries.add(Optimizers::call);
    }

    private static boolean supported(Executable e) {
        ArgumentGenerator probe = new ArgumentGenerator(new Random(0));
        for (Parameter p : e.getParameters()) {
            if (p.getType().isPrimitive() || p.getType().isEnum()) continue;
            for (int i = 0; i < 5; i++) {
                if (probe.argument(p, "", null) == ArgumentGenerator.Unsupported.VALUE) return false;
            }
        }
        probe.created.forEach(Tensor::close);
        return true;
    }

    @SuppressWarnings("unchecked")
    private static List<Class<? extends Module>> moduleClasses() {
        List<Class<? extends Module>> out = new ArrayList<>();
        for (String name : List.of("AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "AvgPool1d", "AvgPool2d", "BatchNorm1d",
                "BatchNorm2d", "BatchNorm3d", "Bilinear", "ConstantPad1d", "ConstantPad2d", "Conv1d", "Conv2d", "ConvTranspose2d", "Dropout",
                "Dropout1d", "Dropout2d", "ELU", "Embedding", "Flatten", "Fold", "GELU", "GroupNorm", "Hardswish", "InstanceNorm1d",
                "InstanceNorm2d", "LayerNorm", "LeakyReLU", "Linear", "LocalResponseNorm", "LogSoftmax", "MaxPool1d", "MaxPool2d",
                "MultiheadAttention", "PixelShuffle", "PixelUnshuffle", "RMSNorm", "ReLU", "ReflectionPad1d", "ReflectionPad2d",
                "ReplicationPad1d", "ReplicationPad2d", "SiLU", "Sigmoid", "Softmax", "Tanh", "Unflatten", "Unfold", "Upsample",
                "ZeroPad2d", "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss",
                "BCEWithLogitsLoss", "KLDivLoss")) {
            try {
                out.add((Class<? extends Module>) Class.forName("org.jtorch.nn." + name));
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException("fuzzer's module list: " + name, e);
            }
        }
        return out;
    }

    // ---- making calls ----

    private Call reflected(ArgumentGenerator g, String op, Method m) {
        Tensor receiver = Modifier.isStatic(m.getModifiers()) ? null : pick(g, null);
        Parameter[] params = m.getParameters();
        Object[] args = new Object[params.length];
        Tensor subject = receiver;
        Map<String, Object> named = new LinkedHashMap<>();
        for (int i = 0; i < params.length; i++) {
            args[i] = params[i].getType() == Tensor.class && !params[i].getName().contains("ndex") ? pickOr(g, subject, params[i], op)
                    : g.argument(params[i], m.getName(), subject);
            if (subject == null && args[i] instanceof Tensor t) subject = t;
            if (subject == null && args[i] instanceof Tensor[] ts && ts.length > 0) subject = ts[0];
            if (subject == null && args[i] instanceof List<?> l && !l.isEmpty() && l.get(0) instanceof Tensor t) subject = t;
            named.put(params[i].getName(), args[i]);
        }
        StringBuilder d = new StringBuilder(receiver == null ? op : g.describe(receiver) + "." + m.getName()).append('(');
        for (int i = 0; i < args.length; i++) d.append(i == 0 ? "" : ", ").append(params[i].getName()).append('=').append(g.describe(args[i]));
        d.append(')');
        String expected = Oracle.expectedError(op, named, subject);
        // In threads mode another thread may close a shared receiver mid-call: its verdict is not PyTorch's.
        long[] shape = shared == null ? Oracle.expectedShape(op, named, receiver) : null;
        boolean mixed = Oracle.devices(receiver, named).size() > 1;
        if (mixed) {
            if (expected == null) expected = Oracle.mixedDeviceError(op, named, receiver);
            // the shape rules above ignore devices: only the mixed-device rule judges such a call's success
            shape = expected == null ? Oracle.mixedDeviceShape(op, named, receiver) : null;
        }
        return new Call(op, d.toString(), () -> invoke(m, receiver, args), expected, shape, mixed);
    }

    private Object pickOr(ArgumentGenerator g, Tensor subject, Parameter p, String op) {
        Object a = g.argument(p, op, subject);
        if (shared != null && a instanceof Tensor && g.random().nextBoolean()) return pick(g, subject);
        return a;
    }

    /** A receiver: from the shared pool in threads mode, else fresh. */
    private Tensor pick(ArgumentGenerator g, Tensor like) {
        if (shared != null && g.random().nextInt(3) != 0) {
            Tensor t = shared.get(g.random().nextInt(shared.length()));
            g.label(t, "shared " + t.dtype() + java.util.Arrays.toString(t.shape()));
            return t;
        }
        return g.tensor(like);
    }

    private Call module(ArgumentGenerator g, Class<? extends Module> c, Constructor<?> k) {
        Parameter[] params = k.getParameters();
        Object[] args = new Object[params.length];
        Map<String, Object> named = new LinkedHashMap<>();
        for (int i = 0; i < params.length; i++) {
            args[i] = g.argument(params[i], c.getSimpleName(), null);
            named.put(params[i].getName(), args[i]);
        }
        String op = c.getSimpleName() + ".<init>";
        StringBuilder d = new StringBuilder("new ").append(c.getSimpleName()).append('(');
        for (int i = 0; i < args.length; i++) d.append(i == 0 ? "" : ", ").append(params[i].getName()).append('=').append(g.describe(args[i]));
        d.append(')');
        Tensor input = g.tensor(null);
        Tensor target = g.random().nextBoolean() ? g.tensor(input) : g.indexTensor(input);
        d.append(".forward(").append(g.describe(input)).append(", ").append(g.describe(target)).append(')');
        String expected = Oracle.expectedError(op, named, null);
        return new Call(op, d.toString(), () -> {
            Module module = (Module) unwrap(() -> k.newInstance(args));
            try (module) {
                // PyTorch checks some arguments in the constructor and some in forward: either must raise.
                Object result = null;
                for (Method m : c.getMethods()) {
                    if (m.getName().equals("forward") && m.getParameterCount() == 2 && m.getParameterTypes()[0] == Tensor.class
                            && m.getParameterTypes()[1] == Tensor.class) {
                        result = invoke(m, module, new Object[] {input, target});
                    }
                }
                if (result == null) result = module.forward(input);
                if (expected != null) {
                    closeAll(result);
                    return new Meaningless(expected);
                }
                return new Forward(result);
            }
        }, null, null);
    }

    /** A module's forward result: its construction was right, and its forward is judged by its result only. */
    record Forward(Object result) {}

    /** A module built where PyTorch's constructor raises. */
    record Meaningless(String why) {}

    static Object invoke(Method m, Object receiver, Object[] args) throws Exception {
        return unwrap(() -> m.invoke(receiver, args));
    }

    private static Object unwrap(Callable<Object> c) throws Exception {
        try {
            return c.call();
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof Exception ex) throw ex;
            if (e.getCause() instanceof Error err) throw err;
            throw e;
        }
    }

    // ---- running and judging ----

    /** Runs call {@code index} and reports a finding; returns what it found (null when nothing). */
    String run(int thread, long index, boolean verbose) {
        Random random = new Random(seed * 1_000_003L + index * 7919L + thread);
        ArgumentGenerator g = new ArgumentGenerator(random, other);
        Entry entry = entries.get(random.nextInt(entries.size()));
        Call call;
        try {
            call = entry.make(g);
        } catch (RuntimeException e) {
            // the generator's own setup (e.g. closing a view twice) is not the API under test
            g.created.forEach(Tensor::close);
            return null;
        }
        if (verbose) out.println("call " + index + ": " + call.description() + (call.expectedError() == null ? "" : "  [PyTorch raises: "
                + call.expectedError() + "]"));
        calls.increment();
        if (call.expectedShape() != null) count("pytorch-returns");
        if (call.mixedDevices()) count("mixed-devices");
        String finding = null;
        Object result = null;
        try {
            result = call.body().call();
            Object judged = result instanceof Forward f ? f.result() : result;
            String invalid = Oracle.invalidResult(judged);
            if (result instanceof Meaningless m) finding = "meaningless: built the module and ran forward where PyTorch raises (" + m.why() + ")";
            else if (call.expectedError() != null && !(result instanceof Forward)) {
                finding = "meaningless: returned " + g.describe(judged) + " where PyTorch raises (" + call.expectedError() + ")";
            } else if (invalid != null) finding = "meaningless: " + invalid;
            else if (call.expectedShape() != null && judged instanceof Tensor t && !java.util.Arrays.equals(t.shape(), call.expectedShape())) {
                finding = "meaningless: shape " + java.util.Arrays.toString(t.shape()) + ", PyTorch gives "
                        + java.util.Arrays.toString(call.expectedShape());
            }
            if (finding == null && judged instanceof Tensor t && t.requiresGrad() && !t.isClosed() && random.nextInt(3) == 0) {
                finding = backward(t, verbose);
            }
            count(finding == null ? "ok" : finding.substring(0, finding.indexOf(':')));
            if (PRINT_ERRORS && finding == null && call.mixedDevices()) out.println("MIXED " + call.description() + " -> " + g.describe(judged));
        } catch (Throwable e) {
            String kind = Oracle.wrongKind(e, call.op());
            if (kind == null && call.mixedDevices()) kind = Oracle.deviceErrorKind(e, other);
            boolean outOfMemory = e instanceof OutOfMemoryException || e instanceof OutOfMemoryError;
            // PyTorch returns a result of a known shape for these arguments: refusing them is a finding too
            boolean refused = kind == null && !outOfMemory && call.expectedShape() != null;
            count(kind != null ? kind : refused ? "refused" : outOfMemory ? "out-of-memory" : "errors");
            if (PRINT_ERRORS && kind == null && !refused) out.println("ERROR " + call.description() + " -> " + e);
            if (kind != null) finding = kind + ": " + e;
            else if (refused) finding = "refused: " + e + " where PyTorch gives shape " + java.util.Arrays.toString(call.expectedShape());
            if (verbose) e.printStackTrace(out);
            if (e instanceof VirtualMachineError && !(e instanceof OutOfMemoryError)) throw (VirtualMachineError) e;
        } finally {
            closeAll(result);
            for (Tensor t : g.created) t.close();
        }
        if (finding != null) {
            out.println("FINDING " + finding.substring(0, finding.indexOf(':')) + " seed=" + seed + " call=" + index
                    + (shared == null ? "" : " thread=" + thread) + " " + call.description() + " -> " + finding.substring(finding.indexOf(':') + 2));
        }
        return finding;
    }

    /** Backward through a call's result: the graph the op recorded must run, or fail with a right-kind error. */
    private String backward(Tensor result, boolean verbose) {
        try (Tensor loss = result.sum()) {
            loss.backward();
            return null;
        } catch (Throwable e) {
            String kind = Oracle.wrongKind(e, "Tensor.backward");
            if (verbose) e.printStackTrace(out);
            if (e instanceof VirtualMachineError && !(e instanceof OutOfMemoryError)) throw (VirtualMachineError) e;
            return kind == null ? null : kind + ": in backward: " + e;
        }
    }

    private void count(String key) {
        counts.computeIfAbsent(key, k -> new LongAdder()).increment();
    }

    private static void closeAll(Object result) {
        switch (result) {
            case Tensor t -> t.close();
            case Forward f -> closeAll(f.result());
            case Iterable<?> items -> items.forEach(ApiFuzzer::closeAll);
            case Object[] items -> List.of(items).forEach(ApiFuzzer::closeAll);
            case AutoCloseable c -> {
                try {
                    c.close();
                } catch (Exception ignored) {
                    // results are closed to bound memory; a failure here is not the call's
                }
            }
            case null, default -> {}
        }
    }

    String summary() {
        StringBuilder s = new StringBuilder("SUMMARY calls=" + calls.sum());
        for (String k : List.of("ok", "errors", "out-of-memory", "jdk-internal", "no-op-name", "meaningless", "refused",
                "devices-unnamed", "pytorch-returns", "mixed-devices")) {
            s.append(' ').append(k).append('=').append(counts.getOrDefault(k, new LongAdder()).sum());
        }
        return s.toString();
    }

    void runSingle(long count) {
        for (long i = 0; i < count; i++) {
            out.println("CALL " + i);
            run(0, i, false);
        }
    }

    /** Four threads over a shared pool of tensors, closing and replacing them and freeing the allocator's cache. */
    void runThreads(long count) throws InterruptedException {
        Random poolRandom = new Random(seed);
        shared = new AtomicReferenceArray<>(6);
        for (int i = 0; i < shared.length(); i++) shared.set(i, poolTensor(poolRandom, i));
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            int thread = t;
            threads.add(Thread.ofPlatform().name("fuzz-" + t).start(() -> {
                Random r = new Random(seed + thread);
                for (long i = 0; i < count; i++) {
                    int action = r.nextInt(40);
                    if (action == 0) {
                        int slot = r.nextInt(shared.length());
                        Tensor old = shared.getAndSet(slot, poolTensor(r, slot));
                        old.close();
                    } else if (action == 1) {
                        Torch.emptyCache(Device.cpu());
                    } else {
                        run(thread, i, false);
                    }
                }
            }));
        }
        for (Thread t : threads) t.join();
        for (int i = 0; i < shared.length(); i++) shared.get(i).close();
    }

    /** Big enough that kernels run while another thread closes them. */
    private static Tensor poolTensor(Random r, int slot) {
        Tensor t = switch (slot % 3) {
            case 0 -> Torch.randn(256, 256);
            case 1 -> Torch.randn(64, 32).to(DType.FLOAT64).transpose(0, 1);
            default -> Torch.randint(-5, 5, 4096);
        };
        return r.nextInt(4) == 0 ? t.unsqueeze(0) : t;
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        long seed = Long.parseLong(args[1]);
        long count = Long.parseLong(args[2]);
        ApiFuzzer fuzzer = new ApiFuzzer(seed, System.out, mode.equals("mixed") ? Device.cuda(0) : null);
        if (args.length > 3) {
            String finding = fuzzer.run(0, Long.parseLong(args[3]), true);
            System.out.println(finding == null ? "no finding" : "FINDING " + finding);
        } else if (mode.equals("threads")) {
            fuzzer.runThreads(count);
        } else {
            fuzzer.runSingle(count);
        }
        System.out.println(fuzzer.summary());
        System.out.flush();
    }
}
