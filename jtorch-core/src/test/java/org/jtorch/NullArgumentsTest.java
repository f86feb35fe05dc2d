package org.jtorch;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Parameter;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/**
 * Every public entry of the API rejects a null argument with a {@link NullPointerException} whose message
 * names the op and the parameter ({@code "randn: generator must not be null"}), before any other check,
 * unless the parameter is documented as optional ({@link #NULLABLE}). Found by reflection: every public
 * static method and constructor of the API's public classes, and every public method of {@link Tensor} and of the
 * stateful classes in {@link #RECEIVERS} (modules, optimizers, schedulers, the scaler, checkpoints, scopes);
 * each reference parameter in turn is null while the others hold plausible values.
 */
class NullArgumentsTest {
    /** The packages of the public API. */
    private static final List<String> PACKAGES = List.of("org.jtorch", "org.jtorch.types", "org.jtorch.nn", "org.jtorch.nn.utils", "org.jtorch.nn.parallel", "org.jtorch.optim",
            "org.jtorch.optim.lr", "org.jtorch.data", "org.jtorch.io", "org.jtorch.amp", "org.jtorch.autograd", "org.jtorch.memory");

    /** Public for jtorch's own packages (plumbing between the front end, autograd and backends), not user API. */
    private static final Set<String> INTERNAL = Set.of(
            "Tensor.fromStorage", "Tensor.setGradFn", "Tensor.setScope", "Tensor.checkOpen", "Tensor.checkWritable",
            "Tensor.checkNoInternalOverlap", "Tensor.checkNoPartialOverlap", "Tensor.checkNoOverlap",
            "Autocast.run", "AutocastPolicy", "Edge", "Node", "AccumulateGrad", "SavedTensor", "BackwardFunction", "Engine",
            "Gradients", "Storage", "MemoryBlock", "ElementCodec", "Allocator", "CpuCachingAllocator", "OutOfMemoryException", "StateReader",
            "Arguments",
            "Json", "StateCodec", "AtomicFile", "TensorFormatter", "Autograd.record", "Autograd.needsGrad", "Autograd.save",
            "Autograd.accumulatorFor", "Autograd.addPreHook", "AutogradMeta");

    /**
     * Parameters that are optional, as PyTorch's {@code None} defaults ({@code Class.method(parameter)}, or
     * {@code Class.*(parameter)} for every method of a class): null selects the default.
     */
    private static final Set<String> NULLABLE = Set.of(
            // reductions: all dimensions, the input's dtype; searchsorted without a sorter or a side
            "Torch.searchsorted(sorter)", "Torch.searchsorted(side)",
            "Tensor.*(dims)", "Torch.*(dims)", "Tensor.sum(dtype)", "Tensor.mean(dtype)", "Tensor.prod(dtype)", "Tensor.cumsum(dtype)",
            "Tensor.cumprod(dtype)", "Tensor.softmax(dtype)", "Tensor.logSoftmax(dtype)", "Torch.sum(dtype)", "Torch.mean(dtype)",
            "Torch.prod(dtype)", "F.softmax(dtype)", "F.logSoftmax(dtype)",
            // true division; an implicit gradient of ones; no gradient
            "Tensor.div(roundingMode)", "Tensor.backward(gradient)", "Tensor.setGrad(g)",
            // clamp's tensor bounds (None: no bound on that side; both None is refused)
            "Tensor.clamp(min)", "Tensor.clamp(max)", "Torch.clamp(min)", "Torch.clamp(max)",
            // optional weights, biases, statistics, masks
            "Torch.linear(bias)", "Torch.conv1d(bias)", "Torch.conv2d(bias)", "Torch.convTranspose2d(bias)",
            "F.linear(bias)", "F.bilinear(bias)", "F.conv1d(bias)", "F.conv2d(bias)", "F.convTranspose2d(bias)",
            "F.batchNorm(runningMean)", "F.batchNorm(runningVar)", "F.batchNorm(weight)", "F.batchNorm(bias)",
            "F.instanceNorm(runningMean)", "F.instanceNorm(runningVar)", "F.instanceNorm(weight)", "F.instanceNorm(bias)",
            "F.groupNorm(weight)", "F.groupNorm(bias)", "F.layerNorm(weight)", "F.layerNorm(bias)", "F.rmsNorm(weight)",
            "F.rmsNorm(eps)", "F.crossEntropy(weight)", "F.nllLoss(weight)", "F.binaryCrossEntropy(weight)",
            "F.binaryCrossEntropyWithLogits(weight)", "F.binaryCrossEntropyWithLogits(posWeight)", "F.embedding(paddingIdx)",
            "F.scaledDotProductAttention(attnMask)",
            // the default generator
            "F.dropout(gen)", "F.dropout1d(gen)", "F.dropout2d(gen)", "F.scaledDotProductAttention(gen)",
            // pooling: stride = kernel size, no padding, no dilation, the output size implied
            "F.maxPool2d(stride)", "F.maxPool2d(padding)", "F.maxPool2d(dilation)", "F.maxPool2dWithIndices(stride)",
            "F.maxPool2dWithIndices(padding)", "F.maxPool2dWithIndices(dilation)", "F.avgPool2d(stride)", "F.avgPool2d(padding)",
            "F.maxUnpool2d(stride)", "F.maxUnpool2d(padding)", "F.maxUnpool2d(outputSize)",
            "F.maxPool1d(stride)", "F.maxPool1dWithIndices(stride)", "F.avgPool1d(stride)", "MaxPool1d.<init>(stride)",
            "AvgPool1d.<init>(stride)",
            // interpolation: a size or a scale factor; align_corners=None
            "F.interpolate(size)", "F.interpolate(scaleFactor)", "F.interpolate(alignCorners)", "Upsample.size(alignCorners)",
            "Upsample.scale(alignCorners)",
            // modules' optional weights, biases, statistics, indices, bounds
            "BCELoss.<init>(weight)", "BCEWithLogitsLoss.<init>(weight)", "BCEWithLogitsLoss.<init>(posWeight)",
            "CrossEntropyLoss.<init>(weight)", "NLLLoss.<init>(weight)", "BatchNorm1d.<init>(momentum)", "BatchNorm2d.<init>(momentum)",
            "BatchNorm3d.<init>(momentum)", "SyncBatchNorm.<init>(momentum)", "SyncBatchNorm.<init>(group)",
            "SyncBatchNorm.convertSyncBatchnorm(group)", "SyncBatchNorm.syncBatchNorm(runningMean)", "SyncBatchNorm.syncBatchNorm(runningVar)",
            "SyncBatchNorm.syncBatchNorm(weight)", "SyncBatchNorm.syncBatchNorm(bias)", "RMSNorm.<init>(eps)", "Embedding.<init>(paddingIdx)", "MaxPool2d.<init>(stride)",
            "AvgPool2d.<init>(stride)", "Dropout.<init>(gen)", "Dropout1d.<init>(gen)", "Dropout2d.<init>(gen)",
            "MultiheadAttention.Output.<init>(weights)", "Init.calculateGain(param)", "TransformerEncoder.<init>(norm)", "Transformer.<init>(customEncoder)", "Transformer.<init>(customDecoder)",
            "TransformerDecoder.<init>(norm)",
            // recurrent layers: zero initial states, a batch given sorted, the longest length
            "LSTM.forward(state)", "RNN.forward(h0)", "LSTMCell.forward(state)", "RNNCell.forward(hx)", "GRUCell.forward(hx)",
            "PackedSequence.<init>(sortedIndices)", "PackedSequence.<init>(unsortedIndices)", "Rnn.padPackedSequence(totalLength)",
            // data: the default generator, all samples, unlabelled samples, batches of any structure (null leaves)
            "RandomSampler.<init>(generator)", "RandomSampler.<init>(numSamples)", "SubsetRandomSampler.<init>(generator)",
            "WeightedRandomSampler.<init>(generator)", "Datasets.randomSplit(generator)", "Sample.<init>(input)",
            "Sample.<init>(target)", "Collate.closeTensors(batch)", "Collate.forEachTensor(batch)", "Collate.mapTensors(batch)",
            // no metadata; the current autocast dtype; implicit gradients of ones
            "SafeTensors.save(metadata)", "SafeTensors.serialize(metadata)", "Autocast.scope(dtype)", "Autograd.backward(gradRoots)",
            "Autograd.grad(gradOutputs)",
            // Python's None is a value a .pt file may hold: torch.save(None, f); closing the tensors of a loaded None
            "PyTorchFile.save(obj)", "PyTorchFile.closeTensors(obj)",
            // a scope keeps null as null; PyTorch's None parameters, buffers, submodules and option values
            "MemoryScope.keep(t)", "Module.registerParameter(tensor)", "Module.registerBuffer(tensor)", "Module.registerModule(module)",
            "ParamGroup.set(value)",
            // keyword-option records (F's and Variance): None components
            "F.CrossEntropy.<init>(weight)", "F.NllLoss.<init>(weight)", "F.BinaryCrossEntropy.<init>(weight)",
            "F.BinaryCrossEntropyWithLogits.<init>(weight)", "F.BinaryCrossEntropyWithLogits.<init>(posWeight)", "F.BatchNorm.<init>(weight)",
            "F.BatchNorm.<init>(bias)", "F.Norm.<init>(weight)", "F.Norm.<init>(bias)", "F.Conv.<init>(bias)", "F.Conv.<init>(padding)",
            "F.Conv.<init>(paddingMode)", "F.ConvTranspose.<init>(bias)", "F.MaxPool.<init>(stride)", "F.AvgPool.<init>(stride)",
            "F.AvgPool.<init>(divisorOverride)", "F.Interpolate.<init>(size)", "F.Interpolate.<init>(scaleFactor)",
            "F.Interpolate.<init>(alignCorners)", "F.Embedding.<init>(paddingIdx)", "F.Embedding.<init>(maxNorm)", "F.Dropout.<init>(generator)",
            "F.ScaledDotProductAttention.<init>(attnMask)", "F.ScaledDotProductAttention.<init>(scale)",
            "F.ScaledDotProductAttention.<init>(generator)", "Variance.<init>(dim)",
            // several-value inputs: None masks and initial states; a structure that is None holds no tensor
            "AttentionEncoder.Input.<init>(mask)", "AttentionEncoder.Input.<init>(srcKeyPaddingMask)", "LSTM.Input.<init>(state)",
            "RNN.Input.<init>(h0)", "TensorTree.flatten(value)", "TensorTree.keep(value)", "MultiheadAttention.Input.<init>(attnMask)",
            "MultiheadAttention.Input.<init>(keyPaddingMask)", "AttentionDecoder.Input.<init>(tgtMask)",
            "AttentionDecoder.Input.<init>(memoryMask)", "AttentionDecoder.Input.<init>(tgtKeyPaddingMask)",
            "AttentionDecoder.Input.<init>(memoryKeyPaddingMask)", "Transformer.Input.<init>(srcMask)", "Transformer.Input.<init>(tgtMask)",
            "Transformer.Input.<init>(memoryMask)", "Transformer.Input.<init>(srcKeyPaddingMask)",
            "Transformer.Input.<init>(tgtKeyPaddingMask)", "Transformer.Input.<init>(memoryKeyPaddingMask)",
            // adaptive pooling's None output size
            "F.adaptiveAvgPool2d(outH)", "F.adaptiveAvgPool2d(outW)", "F.adaptiveMaxPool2d(outH)", "F.adaptiveMaxPool2d(outW)", "F.adaptiveMaxPool2dWithIndices(outH)",
            "F.adaptiveMaxPool2dWithIndices(outW)",
            "AdaptiveAvgPool2d.<init>(outH)", "AdaptiveAvgPool2d.<init>(outW)", "AdaptiveMaxPool2d.<init>(outH)", "AdaptiveMaxPool2d.<init>(outW)",
            // 3-d pooling: None output sizes; stride = kernel size, no padding, the output size implied
            "F.adaptiveAvgPool3d(outD)", "F.adaptiveAvgPool3d(outH)", "F.adaptiveAvgPool3d(outW)", "F.adaptiveMaxPool3dWithIndices(outD)",
            "F.adaptiveMaxPool3dWithIndices(outH)", "F.adaptiveMaxPool3dWithIndices(outW)", "AdaptiveAvgPool3d.<init>(outD)",
            "AdaptiveAvgPool3d.<init>(outH)", "AdaptiveAvgPool3d.<init>(outW)", "AdaptiveMaxPool3d.<init>(outD)",
            "AdaptiveMaxPool3d.<init>(outH)", "AdaptiveMaxPool3d.<init>(outW)", "F.maxUnpool3d(stride)", "F.maxUnpool3d(padding)",
            "F.maxUnpool3d(outputSize)", "MaxUnpool3d.<init>(stride)");

    /** Fresh receivers for the instance methods of the API's stateful classes (Tensor's are made inline). */
    private static final Map<Class<?>, Supplier<Object>> RECEIVERS = Map.ofEntries(
            Map.entry(org.jtorch.nn.Module.class, () -> new org.jtorch.nn.Linear(2, 2)),
            Map.entry(org.jtorch.nn.Sequential.class, () -> new org.jtorch.nn.Sequential(new org.jtorch.nn.Linear(2, 2))),
            Map.entry(org.jtorch.nn.ModuleList.class, () -> new org.jtorch.nn.ModuleList(new org.jtorch.nn.Linear(2, 2))),
            Map.entry(org.jtorch.nn.ModuleDict.class, () -> new org.jtorch.nn.ModuleDict()),
            Map.entry(org.jtorch.nn.LSTM.class, () -> new org.jtorch.nn.LSTM(2, 2)),
            Map.entry(org.jtorch.nn.RNN.class, () -> new org.jtorch.nn.RNN(2, 2)),
            Map.entry(org.jtorch.nn.LSTMCell.class, () -> new org.jtorch.nn.LSTMCell(2, 2)),
            Map.entry(org.jtorch.nn.RNNCell.class, () -> new org.jtorch.nn.RNNCell(2, 2)),
            Map.entry(org.jtorch.nn.GRUCell.class, () -> new org.jtorch.nn.GRUCell(2, 2)),
            Map.entry(org.jtorch.nn.utils.PackedSequence.class, NullArgumentsTest::packed),
            Map.entry(org.jtorch.optim.Optimizer.class, NullArgumentsTest::optimizer),
            Map.entry(org.jtorch.optim.ParamGroup.class, () -> optimizer().paramGroups().get(0)),
            Map.entry(org.jtorch.optim.lr.LRScheduler.class, () -> new org.jtorch.optim.lr.StepLR(optimizer(), 2)),
            Map.entry(org.jtorch.optim.lr.ReduceLROnPlateau.class, () -> new org.jtorch.optim.lr.ReduceLROnPlateau(optimizer())),
            Map.entry(org.jtorch.amp.GradScaler.class, () -> new org.jtorch.amp.GradScaler()),
            Map.entry(org.jtorch.io.Checkpoint.class, () -> new org.jtorch.io.Checkpoint()),
            Map.entry(org.jtorch.memory.MemoryScope.class, org.jtorch.memory.MemoryScope::new),
            Map.entry(Generator.class, () -> new Generator(0)));

    private static org.jtorch.nn.utils.PackedSequence packed() {
        return new org.jtorch.nn.utils.PackedSequence(Torch.ones(3, 2), new long[] {2, 1}, null, null);
    }

    private static org.jtorch.optim.Optimizer optimizer() {
        return new org.jtorch.optim.SGD(List.of(Torch.ones(2).requiresGrad_(true)), org.jtorch.optim.SGD.options().lr(0.1));
    }

    private static Object sample(Class<?> t) {
        if (t == Tensor.class) return Torch.ones(2, 2);
        if (t == Tensor[].class) return new Tensor[] {Torch.ones(2, 2)};
        if (t == DType.class) return DType.FLOAT32;
        if (t == Device.class) return Device.cpu();
        if (t == Generator.class) return new Generator(0);
        if (t == String.class) return "mean";
        if (t == long[].class) return new long[] {2, 2};
        if (t == int[].class) return new int[] {1};
        if (t == double[].class) return new double[] {1.0};
        if (t == float[].class) return new float[] {1f};
        if (t == boolean[].class) return new boolean[] {true};
        if (t == byte[].class) return new byte[] {1};
        if (t == short[].class) return new short[] {1};
        if (t == List.class || t == Iterable.class || t == Collection.class) return new ArrayList<>();
        if (t == Map.class) return new LinkedHashMap<>();
        if (t == Path.class) return Path.of("/nonexistent-jtorch-dir/x");
        if (t == Object.class || t == Number.class || t == Double.class) return 1.0;
        if (t == Long.class) return 1L;
        if (t == Integer.class) return 1;
        if (t == Boolean.class) return Boolean.TRUE;
        if (t == Function.class || t == UnaryOperator.class) return (UnaryOperator<Object>) x -> x;
        if (t == Supplier.class) return (Supplier<Object>) () -> null;
        if (t == Consumer.class) return (Consumer<Object>) x -> {};
        if (t == BiFunction.class) return (BiFunction<Object, Object, Object>) (x, y) -> x;
        if (t == java.util.function.IntToDoubleFunction.class) return (java.util.function.IntToDoubleFunction) i -> 1.0;
        if (t.isEnum()) return t.getEnumConstants()[0];
        if (t == org.jtorch.data.Dataset.class) return new org.jtorch.data.TensorDataset(Torch.ones(4, 2));
        if (t == org.jtorch.data.Sampler.class) return new org.jtorch.data.SequentialSampler(new org.jtorch.data.TensorDataset(Torch.ones(4)));
        if (t == org.jtorch.nn.Module.class || t == org.jtorch.io.TensorState.class) return new org.jtorch.nn.Linear(2, 2);
        if (t == org.jtorch.distributed.ProcessGroup.class) return new org.jtorch.distributed.WorldOfOne();
        if (t == org.jtorch.optim.Optimizer.class || t == org.jtorch.io.Stateful.class) return new org.jtorch.optim.SGD(List.of(Torch.ones(2).requiresGrad_(true)),
                org.jtorch.optim.SGD.options().lr(0.1));
        if (t == org.jtorch.nn.ConvOptions.class) return org.jtorch.nn.Conv2d.options();
        if (t == org.jtorch.nn.RNNOptions.class) return org.jtorch.nn.LSTM.options();
        if (t == org.jtorch.nn.utils.PackedSequence.class) return packed();
        if (t == org.jtorch.nn.LSTM.State.class) return new org.jtorch.nn.LSTM.State(Torch.zeros(1, 2), Torch.zeros(1, 2));
        // a keyword-options record made by its own options() (F.Embedding, F.Conv...)
        try {
            Method own = t.getMethod("options");
            if (Modifier.isStatic(own.getModifiers()) && own.getReturnType() == t) return own.invoke(null);
        } catch (ReflectiveOperationException | RuntimeException e) {
            // none: try the owner's
        }
        // an options class nested in its owner, made by the owner's options() (SGD.Options, OneCycleLR.Options...)
        if (t.getEnclosingClass() != null) {
            for (Method m : t.getEnclosingClass().getMethods()) {
                if (Modifier.isStatic(m.getModifiers()) && m.getReturnType() == t && m.getName().equals("options")) {
                    try {
                        Object[] args = new Object[m.getParameterCount()];
                        for (int i = 0; i < args.length; i++) args[i] = m.getParameterTypes()[i] == double[].class ? new double[] {0.1} : null;
                        if (m.getParameterTypes().length == 1 && m.getParameterTypes()[0] == int.class) args[0] = 10;
                        return m.invoke(null, args);
                    } catch (ReflectiveOperationException | RuntimeException e) {
                        return null;
                    }
                }
            }
        }
        return null;
    }

    private static Object primitive(Class<?> t) {
        if (t == int.class) return 1;
        if (t == long.class) return 1L;
        if (t == double.class) return 1.0;
        if (t == float.class) return 1f;
        if (t == boolean.class) return false;
        if (t == short.class) return (short) 1;
        if (t == byte.class) return (byte) 1;
        if (t == char.class) return 'a';
        throw new AssertionError(t);
    }

    /** The public classes of the API packages (top level and nested), from the class files beside Tensor. */
    private static List<Class<?>> apiClasses() throws IOException, URISyntaxException {
        Path root = Path.of(Tensor.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<Class<?>> out = new ArrayList<>();
        for (String pkg : PACKAGES) {
            Path dir = root.resolve(pkg.replace('.', '/'));
            try (Stream<Path> files = Files.list(dir)) {
                for (Path f : files.sorted().toList()) {
                    String name = f.getFileName().toString();
                    if (!name.endsWith(".class") || name.equals("package-info.class")) continue;
                    Class<?> c;
                    try {
                        c = Class.forName(pkg + "." + name.substring(0, name.length() - 6), false, Tensor.class.getClassLoader());
                    } catch (ClassNotFoundException | LinkageError e) {
                        continue;
                    }
                    if (c.isAnonymousClass() || c.isSynthetic() || !isPublic(c)) continue;
                    out.add(c);
                }
            }
        }
        return out;
    }

    private static boolean isPublic(Class<?> c) {
        for (Class<?> k = c; k != null; k = k.getEnclosingClass()) if (!Modifier.isPublic(k.getModifiers())) return false;
        return true;
    }

    private static String simpleName(Class<?> c) {
        return c.getEnclosingClass() == null ? c.getSimpleName() : simpleName(c.getEnclosingClass()) + "." + c.getSimpleName();
    }

    private static List<Executable> entries(Class<?> c) {
        List<Executable> out = new ArrayList<>();
        for (Method m : c.getDeclaredMethods()) {
            if (!Modifier.isPublic(m.getModifiers()) || m.isSynthetic() || m.isBridge()) continue;
            if (c.isEnum() && m.getName().equals("valueOf")) continue; // the JDK's own, "Name is null"
            if ((c == org.jtorch.nn.ModuleList.class || c == org.jtorch.nn.ModuleDict.class) && m.getName().equals("forward")) continue;
            if (Modifier.isStatic(m.getModifiers()) || c == Tensor.class || RECEIVERS.containsKey(c)) out.add(m);
        }
        if (!Modifier.isAbstract(c.getModifiers()) && !c.isEnum()) {
            for (Constructor<?> k : c.getDeclaredConstructors()) if (Modifier.isPublic(k.getModifiers())) out.add(k);
        }
        out.sort((a, b) -> a.toString().compareTo(b.toString()));
        return out;
    }

    @Test
    void everyPublicEntryRejectsNullNamingTheOpAndTheParameter() throws Exception {
        List<String> failures = new ArrayList<>();
        int[] checked = new int[1];
        Thread t = new Thread(() -> { // modes an entry may leave on (a scope) stay on this thread
            try {
                for (Class<?> c : apiClasses()) {
                    if (INTERNAL.contains(simpleName(c)) || Throwable.class.isAssignableFrom(c)) continue;
                    for (Executable e : entries(c)) check(c, e, failures, checked);
                }
            } catch (Exception ex) {
                failures.add("test error: " + ex);
            }
        });
        t.start();
        t.join();
        assertTrue(failures.isEmpty(), failures.size() + " of " + checked[0] + " null arguments not rejected as they should be:\n"
                + String.join("\n", new TreeSet<>(failures)));
        assertTrue(checked[0] > 500, "checked " + checked[0]);
    }

    private static void check(Class<?> c, Executable e, List<String> failures, int[] checked) {
        String name = simpleName(c) + "." + (e instanceof Constructor<?> ? "<init>" : e.getName());
        if (INTERNAL.contains(simpleName(c) + "." + e.getName())) return;
        Parameter[] params = e.getParameters();
        for (int i = 0; i < params.length; i++) {
            if (params[i].getType().isPrimitive()) continue;
            String param = params[i].getName();
            if (NULLABLE.contains(name + "(" + param + ")") || NULLABLE.contains(simpleName(c) + ".*(" + param + ")")) continue;
            Object[] args = new Object[params.length];
            for (int j = 0; j < params.length; j++) {
                Class<?> type = params[j].getType();
                args[j] = j == i ? null : type.isPrimitive() ? primitive(type) : sample(type);
            }
            checked[0]++;
            Throwable thrown = invoke(e, args);
            // A module's forward fails in the functional op it runs ("linear: x must not be null").
            String named = e.getName().equals("forward") ? "\\w+" : java.util.regex.Pattern.quote(param);
            String where = name + Arrays.stream(params).map(p -> p.getType().getSimpleName() + " " + p.getName()).toList()
                    .toString().replace('[', '(').replace(']', ')') + " with " + param + " = null: ";
            if (thrown == null) {
                failures.add(where + "accepted");
            } else if (!(thrown instanceof NullPointerException) || thrown.getMessage() == null
                    || !thrown.getMessage().matches("[A-Za-z0-9_.]+(\\([^)]*\\))?: " + named + "(\\[\\d+])? must not be null")) {
                failures.add(where + thrown);
            }
        }
    }

    private static Throwable invoke(Executable e, Object[] args) {
        Object receiver = null;
        if (e instanceof Method m && !Modifier.isStatic(m.getModifiers())) {
            receiver = m.getDeclaringClass() == Tensor.class ? Torch.ones(2, 2) : RECEIVERS.get(m.getDeclaringClass()).get();
        }
        try {
            Object result = e instanceof Method m ? m.invoke(receiver, args) : ((Constructor<?>) e).newInstance(args);
            if (result instanceof AutoCloseable closeable && result != receiver) closeable.close();
            return null;
        } catch (InvocationTargetException ex) {
            return ex.getCause();
        } catch (Exception ex) {
            return ex;
        } finally {
            if (receiver instanceof AutoCloseable closeable) {
                try {
                    closeable.close();
                } catch (Exception ignored) {
                    // a receiver the call left unusable
                }
            }
        }
    }
}
