package org.jtorch.nn.parallel;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Edge;
import org.jtorch.autograd.Grad;
import org.jtorch.autograd.Node;
import org.jtorch.distributed.DistributedException;
import org.jtorch.distributed.ProcessGroup;
import org.jtorch.distributed.ReduceOp;
import org.jtorch.distributed.Work;
import org.jtorch.nn.Module;
import org.jtorch.nn.TensorTree;
import org.jtorch.nn.TupleModule;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * Data-parallel training, as {@code torch.nn.parallel.DistributedDataParallel}: each rank runs the wrapped
 * module on its share of the batch, and backward leaves every rank the gradient averaged over all ranks, so
 * that identical optimizer steps keep the replicas identical.
 *
 * <ul>
 *   <li>At construction, rank 0's parameters and buffers are broadcast to every rank, and the ranks compare their
 *       bucket layouts (each parameter's dtype and shape, in bucket order): replicas that differ fail there, naming the
 *       first parameter that differs. Buckets are then all-reduced without the process group's per-call comparison
 *       ({@link ProcessGroup#allReduceUnchecked}): every rank launches the same buckets in the same order.</li>
 *   <li>Gradients are gathered into buckets (one dtype each; the first about {@link Options#firstBucketCapBytes},
 *       the others about {@link Options#bucketCapBytes}), filled in reverse parameter order, which is about the
 *       order backward produces them. A post-accumulate-grad hook on each parameter copies its gradient into its
 *       bucket; a full bucket is all-reduced (averaged) at once, asynchronously, so communication overlaps the
 *       rest of backward. After the first iteration the buckets are rebuilt once in the order the gradients
 *       actually arrived on rank 0.</li>
 *   <li>At the end of backward ({@link Autograd#queueCallback}) the all-reduces are waited on and the averaged
 *       gradients copied into {@code .grad}: when {@code backward()} returns, the optimizer may step.</li>
 *   <li>In training mode, buffers (batch-norm statistics) are broadcast from rank 0 before each forward
 *       ({@link Options#broadcastBuffers}).</li>
 *   <li>{@link #noSync()} skips the reduction, so gradients accumulate locally until the next synchronised
 *       backward (gradient accumulation).</li>
 *   <li>A parameter that gets no gradient in a backward is an error at the end of that backward, naming every
 *       such parameter, unless {@link Options#findUnusedParameters}: then forward finds them by walking the
 *       autograd graph, and they take part in the reduction with a zero contribution (a parameter no rank used
 *       keeps its {@code .grad}).</li>
 * </ul>
 *
 * <p>State dict: {@link #stateDict()} and {@link #loadStateDict} are the wrapped module's, with its own keys
 * ({@code fc.weight}, not PyTorch's {@code module.fc.weight}), so a checkpoint saved from a DDP model loads into
 * the plain model and back; {@link #loadStateDict} also accepts keys that all carry PyTorch DDP's {@code module.}
 * prefix. {@link #namedParameters()} does show the {@code module.} prefix, as PyTorch's.
 *
 * <p>Thread safety: none; forward and backward run on one thread.
 */
public final class DistributedDataParallel extends Module {
    private final Module module;
    private final ProcessGroup group;
    private final Options options;
    private final List<Tensor> params;
    private final List<String> names;
    private final List<Tensor> buffers;
    /** Where the gradient buckets live: the parameters' device. */
    private final Device device;
    private final Map<Tensor, Integer> indexOf = new IdentityHashMap<>();
    private List<Bucket> buckets;
    /** For each parameter: its bucket and its offset (in elements) in the bucket. */
    private int[] bucketOf;
    private long[] offsetIn;
    /** With {@link Options#gradientAsBucketView}: each parameter's slot in its bucket, shaped as the parameter. */
    private Tensor[] bucketViews;

    // Per-iteration state.
    private boolean expectingBackward;
    private boolean[] ready;
    private boolean[] usedLocally;
    private boolean callbackQueued;
    private int nextToLaunch;
    private final List<Integer> arrival = new ArrayList<>();
    private boolean rebuilt;
    private int syncDisabled;

    /** One flat gradient buffer, all-reduced as a whole. */
    private static final class Bucket {
        final DType dtype;
        final List<Integer> params = new ArrayList<>();
        long numel;
        Tensor flat;
        int pending;
        Work work;

        Bucket(DType dtype) {
            this.dtype = dtype;
        }
    }

    /**
     * Options, with PyTorch's defaults: 25 MiB buckets, the first 1 MiB, buffers broadcast, unused parameters an error,
     * gradients copied out of the buckets.
     *
     * <p>{@code gradientAsBucketView} (PyTorch's {@code gradient_as_bucket_view}): each parameter's {@code .grad} becomes a
     * view of its slot in the gradient bucket, so gradients are not stored twice (a model's worth of memory saved) and
     * the copy out of the bucket after the all-reduce is skipped. With {@code zeroGrad(false)} (zeroing in place) the
     * backward accumulates straight into the bucket and the copy in is skipped too; with {@code zeroGrad()} (set to
     * none) each backward's fresh gradient is copied in and released. As in PyTorch, {@code .grad} must not be replaced
     * by another tensor's storage behind DDP's back ({@code setGrad} of a new tensor works: it is copied in at the next
     * backward).
     */
    public record Options(long bucketCapBytes, long firstBucketCapBytes, boolean findUnusedParameters, boolean broadcastBuffers,
                          boolean gradientAsBucketView) {
        public Options {
            if (bucketCapBytes <= 0 || firstBucketCapBytes <= 0) {
                throw new IllegalArgumentException("DistributedDataParallel.Options: bucket caps must be positive, got " + bucketCapBytes
                        + " and " + firstBucketCapBytes);
            }
        }

        public Options bucketCapMb(double mib) {
            return new Options((long) (mib * (1 << 20)), firstBucketCapBytes, findUnusedParameters, broadcastBuffers, gradientAsBucketView);
        }

        public Options firstBucketCapMb(double mib) {
            return new Options(bucketCapBytes, (long) (mib * (1 << 20)), findUnusedParameters, broadcastBuffers, gradientAsBucketView);
        }

        public Options findUnusedParameters(boolean find) {
            return new Options(bucketCapBytes, firstBucketCapBytes, find, broadcastBuffers, gradientAsBucketView);
        }

        public Options broadcastBuffers(boolean broadcast) {
            return new Options(bucketCapBytes, firstBucketCapBytes, findUnusedParameters, broadcast, gradientAsBucketView);
        }

        public Options gradientAsBucketView(boolean asView) {
            return new Options(bucketCapBytes, firstBucketCapBytes, findUnusedParameters, broadcastBuffers, asView);
        }
    }

    public static Options options() {
        return new Options(25L << 20, 1L << 20, false, true, false);
    }

    public DistributedDataParallel(Module module, ProcessGroup group) {
        this(module, group, options());
    }

    /** Wraps {@code module} (which stays owned by the caller's code through this wrapper: closing one closes the other's tensors). */
    public DistributedDataParallel(Module module, ProcessGroup group, Options options) {
        this.module = Arguments.nonNull("DistributedDataParallel", "module", module);
        this.group = Arguments.nonNull("DistributedDataParallel", "group", group);
        this.options = Arguments.nonNull("DistributedDataParallel", "options", options);
        registerModule("module", module);
        Map<String, Tensor> named = new LinkedHashMap<>();
        for (Map.Entry<String, Tensor> e : module.namedParameters().entrySet()) {
            if (e.getValue().requiresGrad()) named.put(e.getKey(), e.getValue());
        }
        this.params = List.copyOf(named.values());
        this.names = List.copyOf(named.keySet());
        this.buffers = module.buffers();
        this.device = params.isEmpty() ? Device.cpu() : params.get(0).device();
        for (int i = 0; i < params.size(); i++) {
            Tensor p = params.get(i);
            if (!p.device().isCpu() && group.backend().equals("mpi")) {
                throw new IllegalArgumentException("DistributedDataParallel: parameter " + names.get(i) + " is on " + p.device()
                        + " but the mpi backend takes CPU tensors");
            }
            if (!p.device().equals(device)) {
                throw new IllegalArgumentException("DistributedDataParallel: parameter " + names.get(i) + " is on " + p.device() + " but "
                        + names.get(0) + " is on " + device + "; one replica per process, on one device");
            }
            indexOf.put(p, i);
        }
        broadcastFromRankZero(module.parameters());
        broadcastFromRankZero(buffers);
        List<Integer> reverse = new ArrayList<>();
        for (int i = params.size() - 1; i >= 0; i--) reverse.add(i);
        assignBuckets(reverse);
        checkLayoutAgrees();
        for (Tensor p : params) p.registerPostAccumulateGradHook(this::gradientReady);
    }

    /** The wrapped module. */
    public Module module() {
        return module;
    }

    public ProcessGroup processGroup() {
        return group;
    }

    /** How many buckets the gradients currently go into (for tests and diagnostics), and their parameters' names. */
    public List<List<String>> bucketParameterNames() {
        List<List<String>> out = new ArrayList<>();
        for (Bucket b : buckets) out.add(b.params.stream().map(names::get).toList());
        return out;
    }

    @Override
    public Tensor forward(Tensor input) {
        return synchronised(() -> module.forward(input));
    }

    /**
     * The {@link TupleModule} form of the wrapped module, with the same synchronisation as {@link #forward(Tensor)}: for
     * a module that takes or returns several values, {@code ddp.typed(lstm).forward(new LSTM.Input(x, state))}. With
     * {@link Options#findUnusedParameters}, every tensor of the output ({@link TensorTree#flatten}) counts as used.
     *
     * @param wrapped the module this DDP wraps ({@link #module()}), seen as a {@code TupleModule<I, O>}
     */
    public <I, O> TupleModule<I, O> typed(TupleModule<I, O> wrapped) {
        Arguments.nonNull("DistributedDataParallel.typed", "wrapped", wrapped);
        if (wrapped != module) {
            throw new IllegalArgumentException("DistributedDataParallel.typed: expected the wrapped module (" + module.getClass().getSimpleName()
                    + "), got another " + wrapped.getClass().getSimpleName());
        }
        return input -> synchronised(() -> wrapped.forward(input));
    }

    private <O> O synchronised(Supplier<O> forward) {
        if (isTraining() && options.broadcastBuffers && group.size() > 1) broadcastFromRankZero(buffers);
        // As PyTorch, whether this iteration synchronises is decided at forward time.
        boolean sync = isTraining() && Grad.isEnabled() && syncDisabled == 0;
        if (sync) {
            prepareForBackward();
        } else {
            expectingBackward = false;
        }
        O out = forward.get();
        if (sync && options.findUnusedParameters) markUnusedReady(TensorTree.flatten(out));
        return out;
    }

    /** A copy of DDP's replica state would be meaningless: copy {@link #module()} and wrap the copy. */
    @Override
    public Module deepCopy() {
        throw new UnsupportedOperationException("DistributedDataParallel.deepCopy: copy module() and wrap the copy in a new "
                + "DistributedDataParallel (a process group and gradient buckets are not copied)");
    }

    /**
     * Until closed, backward accumulates gradients locally without reducing them (PyTorch's {@code no_sync()}); the
     * first backward after it reduces everything accumulated. Use: {@code try (var s = ddp.noSync()) { ... }}.
     */
    public NoSync noSync() {
        syncDisabled++;
        return new NoSync();
    }

    /** The scope of {@link #noSync()}. */
    public final class NoSync implements AutoCloseable {
        private boolean closed;

        private NoSync() {}

        @Override
        public void close() {
            if (closed) return;
            closed = true;
            syncDisabled--;
        }
    }

    /** The wrapped module's state dict, with its own keys (no {@code module.} prefix). */
    @Override
    public Map<String, Tensor> stateDict() {
        return module.stateDict();
    }

    /** Loads into the wrapped module; keys that all start with PyTorch DDP's {@code module.} have it removed first. */
    @Override
    public LoadResult loadStateDict(Map<String, Tensor> state, boolean strict) {
        if (state != null && !state.isEmpty() && state.keySet().stream().allMatch(k -> k.startsWith("module."))) {
            Map<String, Tensor> stripped = new LinkedHashMap<>();
            for (Map.Entry<String, Tensor> e : state.entrySet()) stripped.put(e.getKey().substring("module.".length()), e.getValue());
            return module.loadStateDict(stripped, strict);
        }
        return module.loadStateDict(state, strict);
    }

    /** Closes the wrapped module's tensors and the gradient buckets. */
    @Override
    public void close() {
        super.close();
        if (bucketViews != null) for (Tensor v : bucketViews) v.close();
        for (Bucket b : buckets) b.flat.close();
    }

    @Override
    protected String extraRepr() {
        return "world_size=" + group.size() + ", buckets=" + buckets.size();
    }

    // ------------------------------------------------------------------ buckets

    private void assignBuckets(List<Integer> order) {
        Tensor[] oldViews = bucketViews;
        List<Bucket> oldBuckets = buckets;
        buckets = new ArrayList<>();
        bucketOf = new int[params.size()];
        offsetIn = new long[params.size()];
        Map<DType, Bucket> open = new LinkedHashMap<>();
        List<Bucket> created = new ArrayList<>();
        for (int i : order) {
            Tensor p = params.get(i);
            Bucket b = open.computeIfAbsent(p.dtype(), d -> {
                Bucket nb = new Bucket(d);
                created.add(nb);
                return nb;
            });
            b.params.add(i);
            b.numel += p.numel();
            long cap = created.get(0) == b ? options.firstBucketCapBytes : options.bucketCapBytes;
            if (b.numel * b.dtype.byteSize() >= cap) open.remove(p.dtype());
        }
        for (Bucket b : created) {
            long offset = 0;
            for (int i : b.params) {
                bucketOf[i] = buckets.size();
                offsetIn[i] = offset;
                offset += params.get(i).numel();
            }
            b.flat = Tensor.empty(new long[] {b.numel}, b.dtype, device);
            buckets.add(b);
        }
        if (options.gradientAsBucketView) {
            bucketViews = new Tensor[params.size()];
            try (Grad.Mode g = Grad.noGrad()) {
                for (int i = 0; i < params.size(); i++) {
                    Tensor p = params.get(i);
                    try (Tensor slice = buckets.get(bucketOf[i]).flat.narrow(0, offsetIn[i], p.numel())) {
                        bucketViews[i] = slice.view(p.shape());
                    }
                    // Rebuilt buckets: gradients that were views of the old ones move into the new slots.
                    Tensor old = p.grad();
                    if (oldViews != null && old != null && sameSlot(old, oldViews[i])) {
                        bucketViews[i].copy_(old);
                        p.setGrad(bucketViews[i].alias());
                        old.close();
                    }
                }
            }
        }
        if (oldViews != null) for (Tensor v : oldViews) v.close();
        if (oldBuckets != null) for (Bucket b : oldBuckets) b.flat.close();
    }

    private void prepareForBackward() {
        for (Bucket b : buckets) {
            if (b.work != null && !b.work.isCompleted()) {
                throw new DistributedException("DistributedDataParallel: a new forward started while the previous backward's gradient "
                        + "reduction is still running (did that backward fail?); every rank must finish backward before the next forward");
            }
            b.work = null;
            b.pending = b.params.size();
        }
        ready = new boolean[params.size()];
        usedLocally = new boolean[params.size()];
        nextToLaunch = 0;
        callbackQueued = false;
        arrival.clear();
        expectingBackward = true;
    }

    /** Parameters the output does not depend on get no gradient this iteration: they count as ready with zeros. */
    private void markUnusedReady(List<Tensor> outputs) {
        Set<Node> reachable = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
        ArrayDeque<Node> stack = new ArrayDeque<>();
        for (Tensor out : outputs) {
            if (out.gradFn() != null) {
                if (reachable.add(out.gradFn())) stack.push(out.gradFn());
            } else if (out.requiresGrad()) {
                reachable.add(out.gradAccumulator());
            }
        }
        while (!stack.isEmpty()) {
            for (Edge e : stack.pop().nextFunctions()) {
                if (e != null && reachable.add(e.node())) stack.push(e.node());
            }
        }
        for (int i = 0; i < params.size(); i++) {
            if (!reachable.contains(params.get(i).gradAccumulator())) markReady(i, null);
        }
    }

    private void gradientReady(Tensor param) {
        if (!expectingBackward) return;
        int i = indexOf.get(param);
        if (ready[i]) {
            throw new DistributedException("DistributedDataParallel: parameter " + names.get(i) + " got a gradient twice in one backward "
                    + "(it is used by two forwards, or by a reentrant backward, before one synchronised backward); call backward once per "
                    + "forward, or use noSync() for all but the last");
        }
        usedLocally[i] = true;
        markReady(i, param.grad());
    }

    private void markReady(int i, Tensor grad) {
        ready[i] = true;
        arrival.add(i);
        Bucket b = buckets.get(bucketOf[i]);
        Tensor p = params.get(i);
        if (bucketViews != null) {
            Tensor view = bucketViews[i];
            try (Grad.Mode g = Grad.noGrad()) {
                if (grad == null) {
                    view.zero_();
                } else if (!isSlot(grad, i)) {
                    // A fresh gradient (the last one was set to none) or one the user set: into the bucket, then .grad is the slot.
                    view.copy_(grad);
                    p.setGrad(view.alias());
                    grad.close();
                }
            }
        } else {
            try (Grad.Mode g = Grad.noGrad(); Tensor slice = b.flat.narrow(0, offsetIn[i], p.numel())) {
                if (grad == null) {
                    slice.zero_();
                } else {
                    try (Tensor view = slice.view(p.shape())) {
                        view.copy_(grad);
                    }
                }
            }
        }
        if (!callbackQueued && grad != null) {
            callbackQueued = true;
            Autograd.queueCallback(this::finishBackward);
        }
        if (--b.pending == 0) launchReadyBuckets();
    }

    /** Launches full buckets in index order, so that every rank issues the same all-reduces in the same order. */
    private void launchReadyBuckets() {
        while (nextToLaunch < buckets.size() && buckets.get(nextToLaunch).pending == 0) {
            Bucket b = buckets.get(nextToLaunch++);
            b.work = group.allReduceUnchecked(b.flat, ReduceOp.AVG); // the layout was compared when the buckets were built
        }
    }

    /** End of backward: every gradient must have arrived; wait for the reductions and write the averages into {@code .grad}. */
    private void finishBackward() {
        expectingBackward = false;
        List<String> missing = new ArrayList<>();
        for (int i = 0; i < params.size(); i++) if (!ready[i]) missing.add(names.get(i));
        for (Bucket b : buckets) {
            if (b.work == null) continue;
            b.work.waitFor(); // on a device backend: the current stream now waits for the reduction
            b.work = null;
        }
        if (!missing.isEmpty()) {
            throw new DistributedException("DistributedDataParallel: rank " + group.rank() + ": " + missing.size() + " of " + params.size()
                    + " parameters got no gradient in this backward: " + String.join(", ", missing) + ". They were not used to compute "
                    + "the loss (a layer skipped in forward, a branch not taken, or a frozen part that still requires grad). "
                    + "Use them, set requiresGrad(false) on them, or wrap with findUnusedParameters(true). Gradients were not synchronised.");
        }
        boolean[] usedAnywhere = options.findUnusedParameters ? usedOnAnyRank() : null;
        try (Grad.Mode g = Grad.noGrad()) {
            for (int i = 0; i < params.size(); i++) {
                Tensor p = params.get(i);
                if (usedAnywhere != null && !usedAnywhere[i]) continue;
                if (bucketViews != null) {
                    Tensor current = p.grad();
                    if (current == null || !isSlot(current, i)) { // an unused parameter: its slot was zeroed before the all-reduce
                        p.setGrad(bucketViews[i].alias());
                        if (current != null) current.close();
                    }
                    continue;
                }
                Bucket b = buckets.get(bucketOf[i]);
                try (Tensor slice = b.flat.narrow(0, offsetIn[i], p.numel()); Tensor view = slice.view(p.shape())) {
                    if (p.grad() == null) {
                        p.setGrad(view.clone());
                    } else {
                        p.grad().copy_(view);
                    }
                }
            }
        }
        if (!rebuilt) {
            rebuilt = true;
            rebuildBucketsInArrivalOrder();
        }
    }

    private boolean[] usedOnAnyRank() {
        boolean[] out = new boolean[params.size()];
        try (Tensor local = Torch.tensor(usedLocally); Tensor used = local.to(device)) {
            group.allReduce(used, ReduceOp.MAX).waitFor();
            long[] v = used.toLongArray();
            for (int i = 0; i < out.length; i++) out[i] = v[i] != 0;
        }
        return out;
    }

    /** After the first iteration: buckets in the order gradients arrived on rank 0 (broadcast, so every rank agrees). */
    private void rebuildBucketsInArrivalOrder() {
        long[] mine = new long[params.size()];
        for (int k = 0; k < arrival.size(); k++) mine[k] = arrival.get(k);
        try (Tensor local = Torch.tensor(mine); Tensor order = local.to(device)) {
            group.broadcast(order, 0).waitFor();
            long[] got = order.toLongArray();
            List<Integer> newOrder = new ArrayList<>();
            for (long v : got) newOrder.add((int) v);
            List<Integer> current = new ArrayList<>();
            for (Bucket b : buckets) current.addAll(b.params);
            if (!newOrder.equals(current) && isPermutation(newOrder)) {
                assignBuckets(newOrder);
                checkLayoutAgrees();
            }
        }
    }

    /**
     * Whether {@code grad} is parameter {@code i}'s bucket slot. {@code .grad} holds an alias of the slot, never the slot
     * itself, so that {@code zeroGrad()} closing it leaves the bucket's own view open.
     */
    private boolean isSlot(Tensor grad, int i) {
        return sameSlot(grad, bucketViews[i]);
    }

    private static boolean sameSlot(Tensor a, Tensor slot) {
        return !a.isClosed() && a.storage() == slot.storage() && a.storageOffset() == slot.storageOffset()
                && java.util.Arrays.equals(a.strides(), slot.strides());
    }

    /** Longs per parameter in {@link #layout()}: bucket, dtype, element count, rank of the shape, its first four sizes. */
    private static final int LAYOUT_LONGS = 8;

    /**
     * Compares every rank's bucket layout (each parameter's bucket, dtype and shape, in bucket order) with rank 0's, so
     * that the buckets' all-reduces can skip the per-call comparison ({@link ProcessGroup#allReduceUnchecked}): with the
     * layout equal and buckets launched in index order, every rank issues the same all-reduces. Replicas that differ fail
     * here on every rank, naming the first parameter that differs (the broadcast at construction only compares each
     * dtype's total element count).
     */
    private void checkLayoutAgrees() {
        if (group.size() == 1) return;
        int n = group.size();
        long[] counts = gathered(new long[] {params.size(), buckets.size()});
        for (int r = 1; r < n; r++) {
            if (counts[2 * r] != counts[0] || counts[2 * r + 1] != counts[1]) {
                throw new DistributedException("DistributedDataParallel: the ranks' replicas differ: rank 0 has " + counts[0]
                        + " parameters requiring grad in " + counts[1] + " gradient buckets, rank " + r + " has " + counts[2 * r] + " in "
                        + counts[2 * r + 1] + " (every rank must wrap the same model with the same bucket options)");
            }
        }
        long[] mine = layout();
        long[] all = gathered(mine);
        for (int r = 1; r < n; r++) {
            for (int k = 0; k < params.size(); k++) {
                int at = r * mine.length + k * LAYOUT_LONGS;
                if (!java.util.Arrays.equals(all, at, at + LAYOUT_LONGS, all, k * LAYOUT_LONGS, (k + 1) * LAYOUT_LONGS)) {
                    int i = buckets.stream().flatMap(b -> b.params.stream()).toList().get(k);
                    throw new DistributedException("DistributedDataParallel: the ranks' replicas differ: in gradient bucket order, parameter "
                            + k + " (" + names.get(i) + " here) is " + describeLayout(all, k * LAYOUT_LONGS) + " on rank 0 but "
                            + describeLayout(all, at) + " on rank " + r + " (every rank must wrap the same model)");
                }
            }
        }
    }

    private long[] layout() {
        long[] out = new long[params.size() * LAYOUT_LONGS];
        int k = 0;
        for (int bi = 0; bi < buckets.size(); bi++) {
            for (int i : buckets.get(bi).params) {
                Tensor p = params.get(i);
                long[] shape = p.shape();
                int at = k++ * LAYOUT_LONGS;
                out[at] = bi;
                out[at + 1] = p.dtype().ordinal();
                out[at + 2] = p.numel();
                out[at + 3] = shape.length;
                for (int d = 0; d < 4; d++) out[at + 4 + d] = d < shape.length ? shape[d] : -1;
            }
        }
        return out;
    }

    private static String describeLayout(long[] all, int at) {
        StringBuilder shape = new StringBuilder("[");
        int ndim = (int) all[at + 3];
        for (int d = 0; d < Math.min(ndim, 4); d++) shape.append(d > 0 ? ", " : "").append(all[at + 4 + d]);
        if (ndim > 4) shape.append(", ...");
        shape.append(']');
        return DType.values()[(int) all[at + 1]].pyName() + " " + shape + " (" + all[at + 2] + " elements) in bucket " + all[at];
    }

    /** Every rank's {@code values}, rank r's at {@code r * values.length}. */
    private long[] gathered(long[] values) {
        try (Tensor local = Torch.tensor(values); Tensor mine = local.to(device);
             Tensor all = Tensor.empty(new long[] {(long) values.length * group.size()}, DType.INT64, device)) {
            group.allGatherIntoTensor(all, mine).waitFor();
            return all.toLongArray();
        }
    }

    private boolean isPermutation(List<Integer> order) {
        boolean[] seen = new boolean[params.size()];
        for (int i : order) {
            if (i < 0 || i >= seen.length || seen[i]) return false;
            seen[i] = true;
        }
        return order.size() == seen.length;
    }

    /**
     * Rank 0's values of {@code tensors}, one broadcast per dtype (a flat copy of all of them): batch-norm layers have
     * three small buffers each, and one collective per buffer would cost more than the data.
     */
    private void broadcastFromRankZero(List<Tensor> tensors) {
        if (group.size() == 1 || tensors.isEmpty()) return;
        Map<DType, List<Tensor>> byType = new LinkedHashMap<>();
        for (Tensor t : tensors) byType.computeIfAbsent(t.dtype(), d -> new ArrayList<>()).add(t);
        try (Grad.Mode g = Grad.noGrad()) {
            for (List<Tensor> same : byType.values()) {
                List<Tensor> flat = new ArrayList<>();
                for (Tensor t : same) flat.add(t.reshape(-1));
                try (Tensor all = Torch.cat(flat, 0)) {
                    for (Tensor f : flat) f.close();
                    group.broadcast(all, 0).waitFor();
                    long offset = 0;
                    for (Tensor t : same) {
                        try (Tensor slice = all.narrow(0, offset, t.numel()); Tensor view = slice.view(t.shape())) {
                            t.copy_(view);
                        }
                        offset += t.numel();
                    }
                }
            }
        }
    }
}
