package org.jtorch;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.AutogradMeta;
import org.jtorch.autograd.Grad;
import org.jtorch.autograd.Gradients;
import org.jtorch.autograd.Node;
import org.jtorch.memory.MemoryScope;
import org.jtorch.memory.OutOfMemoryException;
import org.jtorch.memory.Scoped;
import org.jtorch.memory.Storage;
import org.jtorch.ops.BinaryOp;
import org.jtorch.ops.Conversions;
import org.jtorch.ops.Dispatcher;
import org.jtorch.ops.Elementwise;
import org.jtorch.op.PointwiseOps;
import org.jtorch.op.RandomOps;
import org.jtorch.ops.Indexing;
import org.jtorch.ops.Joining;
import org.jtorch.ops.Linalg;
import org.jtorch.ops.Pointwise;
import org.jtorch.ops.Rearranging;
import org.jtorch.ops.Reductions;
import org.jtorch.ops.Sorting;
import org.jtorch.op.CopyOps;
import org.jtorch.op.Shapes;
import org.jtorch.op.ViewOps;
import org.jtorch.ops.UnaryOp;
import org.jtorch.ops.Views;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * A strided n-dimensional array on one device, with PyTorch's semantics: views share storage,
 * operations broadcast and promote dtypes, in-place operations end in {@code _}.
 *
 * <p>Ownership: a tensor holds one reference to its {@link Storage}. {@link #close()} releases it;
 * the memory goes back to the allocator when the last tensor viewing it is closed. Tensors created
 * inside a {@link MemoryScope} are closed with it. A tensor never closed is released by the garbage
 * collector and counted as a leak. Using a closed tensor throws {@link IllegalStateException}.
 *
 * <p>Thread safety: a tensor may be read from several threads; writes (in-place ops) need external
 * synchronisation, as in PyTorch. Closing a tensor while another thread computes on it is safe: a running
 * kernel holds its own reference to the storage, so the memory stays valid until it returns (and the op
 * completes with the right values), while ops started after the close throw the closed-tensor error.
 */
public final class Tensor implements Scoped {
    private static final VarHandle CLOSED;

    static {
        try {
            CLOSED = MethodHandles.lookup().findVarHandle(Tensor.class, "closed", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final Storage storage;
    private final DType dtype;
    private final long[] shape;
    private final long[] strides;
    private final long offset;
    private final boolean borrowed;
    /** Created under {@link Grad#inferenceMode()}: may never join an autograd graph. */
    private final boolean inference;
    private volatile boolean closed;
    private boolean wrappedNumber;
    private MemoryScope scope;
    /** How this tensor was closed, for the use-after-close error: by which scope, and where (when tracked). */
    private MemoryScope closedByScope;
    private String closedAt;
    /** Autograd state (requires grad, history, gradient, hooks, view base): null until this tensor first needs it. */
    private AutogradMeta autograd;

    private Tensor(Storage storage, DType dtype, long[] shape, long[] strides, long offset) {
        this(storage, dtype, shape, strides, offset, false);
    }

    /** {@code borrowed} tensors hold no storage reference and are never tracked or released (kernel arguments). */
    private Tensor(Storage storage, DType dtype, long[] shape, long[] strides, long offset, boolean borrowed) {
        this.storage = storage;
        this.dtype = dtype;
        this.shape = shape;
        this.strides = strides;
        this.offset = offset;
        this.borrowed = borrowed;
        this.inference = Grad.isInferenceMode();
        if (!borrowed) {
            MemoryScope s = MemoryScope.current();
            if (s != null) s.track(this);
            if (Dispatcher.tracing()) Dispatcher.traceCreated(this);
        }
    }

    /**
     * Low-level constructor over an existing storage, taking ownership of one reference to it (the
     * caller either created the storage or called {@link Storage#retain()}). Arrays are not copied.
     */
    public static Tensor fromStorage(Storage storage, DType dtype, long[] shape, long[] strides, long offset) {
        return new Tensor(storage, dtype, shape, strides, offset);
    }

    /** A new contiguous tensor with uninitialised contents. */
    public static Tensor empty(long[] shape, DType dtype, Device device) {
        return empty("empty", shape, dtype, device);
    }

    /**
     * {@link #empty(long[], DType, Device)} for the factory {@code op}: a negative size, or a size whose
     * element or byte count overflows 64 bits, is an {@link IllegalArgumentException} naming it, and running out
     * of memory names it too.
     */
    static Tensor empty(String op, long[] shape, DType dtype, Device device) {
        Arguments.nonNull(op, "shape", shape);
        Arguments.nonNull(op, "dtype", dtype);
        Arguments.nonNull(op, "device", device);
        return new Tensor(allocate(op, Shapes.checkedNumel(op, shape), shape, dtype, device), dtype, shape.clone(),
                Shapes.contiguousStrides(shape), 0);
    }

    /** Memory for {@code numel} elements of {@code dtype} (a tensor of {@code shape}) on {@code device}, for the factory {@code op}. */
    private static Storage allocate(String op, long numel, long[] shape, DType dtype, Device device) {
        int elementSize = dtype.byteSize();
        if (numel > Long.MAX_VALUE / elementSize) {
            throw new IllegalArgumentException(op + ": a tensor of shape " + Shapes.format(shape) + " and dtype " + dtype
                    + " needs more than 2^63-1 bytes");
        }
        try {
            return Dispatcher.allocateStorage(op, device, numel * elementSize);
        } catch (OutOfMemoryException e) {
            throw op.equals("empty") ? e : e.whileRunning(op);
        }
    }

    /**
     * A tensor of {@code shape} seen with {@code strides} (elements, offset 0) over new memory, as much as the strides reach
     * (uninitialised), for the factory {@code op}: sizes and strides non-negative and of one length.
     */
    static Tensor emptyStrided(String op, long[] shape, long[] strides, DType dtype, Device device) {
        if (shape.length != strides.length) {
            throw new IllegalArgumentException(op + ": mismatch in length of strides and shape (" + shape.length + " vs " + strides.length + ")");
        }
        for (long s : strides) {
            if (s < 0) throw new IllegalArgumentException(op + ": negative strides are not supported, got strides " + Shapes.format(strides));
        }
        long extent = 0;
        if (Shapes.checkedNumel(op, shape) > 0) {
            try {
                extent = 1;
                for (int d = 0; d < shape.length; d++) extent = Math.addExact(extent, Math.multiplyExact(shape[d] - 1, strides[d]));
            } catch (ArithmeticException e) {
                throw new IllegalArgumentException(op + ": size " + Shapes.format(shape) + " with strides " + Shapes.format(strides)
                        + " reaches beyond 2^63-1 elements");
            }
        }
        return new Tensor(allocate(op, extent, shape, dtype, device), dtype, shape.clone(), strides.clone(), 0);
    }

    private Tensor view(ViewOps.Geometry v) {
        return view(v.shape(), v.strides(), v.offset());
    }

    private Tensor view(long[] newShape, long[] newStrides, long newOffset) {
        // Callers checked that this tensor is open; another thread may have closed it since.
        if (!storage.tryRetain()) throw closedError("view");
        return new Tensor(storage, dtype, newShape, newStrides, newOffset);
    }

    // ------------------------------------------------------------------ metadata

    public DType dtype() {
        return dtype;
    }

    public Device device() {
        return storage.device();
    }

    /** The shape (a copy). */
    public long[] shape() {
        return shape.clone();
    }

    /** Size of dimension {@code dim} (negative counts from the end). */
    public long size(int dim) {
        return shape[Shapes.existingDim("size", dim, shape.length)];
    }

    /** Strides in elements (a copy). */
    public long[] strides() {
        return strides.clone();
    }

    /** The shape array itself, not a copy, for the dispatcher's kernel views: callers must not modify it. */
    public long[] shapeArray() {
        return shape;
    }

    /** The strides array itself, not a copy, for the dispatcher's kernel views: callers must not modify it. */
    public long[] stridesArray() {
        return strides;
    }

    public long stride(int dim) {
        return strides[Shapes.existingDim("stride", dim, shape.length)];
    }

    /** Offset of the first element in the storage, in elements. */
    public long storageOffset() {
        return offset;
    }

    public int dim() {
        return shape.length;
    }

    public long numel() {
        return Shapes.numel(shape);
    }

    public Storage storage() {
        return storage;
    }

    public boolean isContiguous() {
        return Shapes.isContiguous(shape, strides);
    }

    /** Counter bumped by every in-place write to this tensor or a view of it. */
    public int version() {
        return storage.version();
    }

    /** Records an in-place write (called by in-place ops). */
    public void bumpVersion() {
        storage.bumpVersion();
        if (Dispatcher.tracing()) Dispatcher.traceMutation(this);
    }

    /** True for the zero-dimensional tensors that wrap Java scalars in mixed ops (lowest promotion priority). */
    public boolean isWrappedNumber() {
        return wrappedNumber;
    }

    /** Marks a zero-dimensional tensor as a wrapped Java scalar for type promotion. */
    public void markWrappedNumber() {
        if (shape.length != 0) throw new IllegalStateException("only 0-d tensors can wrap numbers");
        wrappedNumber = true;
    }

    // ------------------------------------------------------------------ lifetime

    /** Releases this tensor's reference to its storage. Idempotent, also when several threads close at once. */
    @Override
    public void close() {
        if (borrowed || closed || !CLOSED.compareAndSet(this, false, true)) return;
        if (scope != null && scope.isClosed()) closedByScope = scope;
        if (MemoryScope.isCloseTracking()) closedAt = MemoryScope.callSite();
        storage.release();
        AutogradMeta.release(this);
    }

    public boolean isClosed() {
        return closed;
    }

    /** The scope this tensor belongs to, or null (for {@link MemoryScope}). */
    @Override
    public MemoryScope scope() {
        return scope;
    }

    /**
     * Takes this tensor out of its {@link MemoryScope}: whoever stores it (a module, an optimizer, a
     * tensor's {@code .grad}, the autograd graph) now closes it. Returns this tensor.
     */
    public Tensor untrack() {
        scope = null;
        return this;
    }

    /** Moves the tensor to a scope (for {@link MemoryScope}). */
    @Override
    public void setScope(MemoryScope scope) {
        this.scope = scope;
    }

    /**
     * Throws a clear exception if this tensor was closed, or its memory can no longer be read (a view of a
     * memory-mapped file that was closed or truncated); {@code op} names the operation attempted.
     */
    public void checkOpen(String op) {
        String unreadable = storage.unreadableReason();
        if (unreadable != null) {
            throw new IllegalStateException(op + ": tensor of shape " + Shapes.format(shape) + " and dtype " + dtype + " " + unreadable);
        }
        if (closed || storage.isReleased()) throw closedError(op);
    }

    private IllegalStateException closedError(String op) {
        StringBuilder sb = new StringBuilder(op).append(": tensor of shape ").append(Shapes.format(shape)).append(" and dtype ")
                .append(dtype).append(" was used after close()");
        if (closedByScope != null) {
            sb.append(" by the MemoryScope that created it");
            if (closedByScope.openedAt() != null) sb.append(" (opened at ").append(closedByScope.openedAt()).append(')');
        }
        if (closedAt != null) sb.append(", closed at ").append(closedAt);
        if (closedByScope != null) {
            sb.append("; to keep a tensor past its scope, use scope.keep(t) (to the enclosing scope) or t.untrack()");
            if (closedAt == null) sb.append(", and set JTORCH_DEBUG_CLOSE=1 to record where scopes open and close");
        }
        return new IllegalStateException(sb.toString());
    }

    /**
     * Refuses a write into this tensor when several of its elements share one memory location (a
     * dimension of size above 1 with stride 0, as {@link #expand} makes): the result would depend on the
     * order in which a kernel writes them. This is PyTorch's {@code assert_no_internal_overlap}; like it,
     * layouts whose overlap is too hard to tell cheaply (some {@link #asStrided} views) are let through.
     * Costs a loop over the dimensions, no allocation. {@code op} names the in-place operation.
     *
     * @throws IllegalArgumentException naming {@code op}, the shape and the strides
     */
    public void checkNoInternalOverlap(String op) {
        for (int i = 0; i < shape.length; i++) {
            if (strides[i] == 0 && shape[i] > 1) {
                throw new IllegalArgumentException(op + ": unsupported operation: more than one element of the written-to"
                        + " tensor (shape " + Shapes.format(shape) + ", strides " + Shapes.format(strides)
                        + ") refers to a single memory location. Please clone() the tensor before performing the operation.");
            }
        }
    }

    /**
     * Refuses a write into this tensor that reads {@code input} when the two share some but not all of
     * their memory (a shifted or transposed view of the destination): the result would depend on the order
     * of reads and writes. This is PyTorch's {@code assert_no_partial_overlap}: the same memory in the same
     * layout ({@code x.add_(x)}) is fine, and layouts whose overlap is too hard to tell (either tensor not
     * dense) pass. Tensors on different storages cost one comparison.
     *
     * @throws IllegalArgumentException naming {@code op}
     */
    public void checkNoPartialOverlap(String op, Tensor input) {
        if (input.storage != storage) return;
        if (overlapWith(input) == Overlap.PARTIAL) throw sharedWithInput(op, input);
    }

    /**
     * {@link #checkNoPartialOverlap}, refusing the full overlap too: for ops (index_add_, scatter_, ...)
     * whose input is read in another order than the destination is written. PyTorch's {@code assert_no_overlap}.
     */
    public void checkNoOverlap(String op, Tensor input) {
        if (input.storage != storage) return;
        Overlap o = overlapWith(input);
        if (o == Overlap.PARTIAL || o == Overlap.FULL) throw sharedWithInput(op, input);
    }

    private enum Overlap { NONE, FULL, PARTIAL, TOO_HARD }

    /** PyTorch's {@code get_overlap_status}, for two tensors on the same storage. */
    private Overlap overlapWith(Tensor other) {
        if (other == this) return Overlap.FULL;
        long n = numel();
        long m = other.numel();
        if (n == 0 || m == 0) return Overlap.NONE;
        if (!Shapes.isNonOverlappingAndDense(shape, strides) || !Shapes.isNonOverlappingAndDense(other.shape, other.strides)) {
            return Overlap.TOO_HARD;
        }
        long begin = offset * dtype.byteSize();
        long end = begin + n * dtype.byteSize();
        long otherBegin = other.offset * other.dtype.byteSize();
        long otherEnd = otherBegin + m * other.dtype.byteSize();
        if (begin == otherBegin && end == otherEnd) return Arrays.equals(strides, other.strides) ? Overlap.FULL : Overlap.PARTIAL;
        return begin < otherEnd && otherBegin < end ? Overlap.PARTIAL : Overlap.NONE;
    }

    private IllegalArgumentException sharedWithInput(String op, Tensor input) {
        return new IllegalArgumentException(op + ": unsupported operation: some elements of the input tensor (shape "
                + Shapes.format(input.shape) + ", strides " + Shapes.format(input.strides) + ", offset " + input.offset
                + ") and the written-to tensor (shape " + Shapes.format(shape) + ", strides " + Shapes.format(strides) + ", offset "
                + offset + ") refer to a single memory location. Please clone() the tensor before performing the operation.");
    }

    /**
     * {@link #checkOpen}, and throws {@link IllegalArgumentException} if this tensor may not be written (a
     * read-only view of a memory-mapped file); in-place ops call it on the tensor they write.
     */
    public void checkWritable(String op) {
        checkOpen(op);
        String unwritable = storage.unwritableReason();
        if (unwritable != null) {
            throw new IllegalArgumentException(op + ": tensor of shape " + Shapes.format(shape) + " and dtype " + dtype + " " + unwritable);
        }
        // Checked here, not where ops record: PyTorch refuses the write even when nothing in it requires grad.
        if (AutogradMeta.isNoGradViewOfGraph(this) && Grad.isEnabled()) Elementwise.checkInPlaceAllowed(op, this);
    }

    // ------------------------------------------------------------------ views (org.jtorch.ops.Views)

    /** A view with a new shape (one dimension may be -1); fails if the strides do not allow it, as PyTorch's {@code view}. */
    public Tensor view(long... newShape) { return Views.view(this, newShape); }

    /** A view when possible, otherwise a contiguous copy with the new shape. */
    public Tensor reshape(long... newShape) { return Views.reshape(this, newShape); }

    /** Reorders dimensions: {@code dims} is a permutation of {@code 0..dim()-1} (negative allowed). */
    public Tensor permute(int... dims) { return Views.permute(this, dims); }

    public Tensor transpose(int dim0, int dim1) { return Views.transpose(this, dim0, dim1); }

    /** Transpose of a matrix; 0-d and 1-d tensors are returned as views unchanged, as PyTorch's {@code t()}. */
    public Tensor t() { return Views.t(this); }

    /** Transposes the last two dimensions ({@code mT}). */
    public Tensor mT() { return Views.mT(this); }

    /** Removes every dimension of size 1. */
    public Tensor squeeze() { return Views.squeeze(this); }

    /** Removes dimension {@code dim} if its size is 1 (otherwise returns a view unchanged). */
    public Tensor squeeze(int dim) { return Views.squeeze(this, dim); }

    /** Inserts a dimension of size 1 at {@code dim} (in {@code [-dim()-1, dim()]}). */
    public Tensor unsqueeze(int dim) { return Views.unsqueeze(this, dim); }

    /** Broadcasts size-1 dimensions to larger sizes without copying (-1 keeps a size). */
    public Tensor expand(long... sizes) { return Views.expand(this, sizes); }

    public Tensor expandAs(Tensor other) { return expand(Arguments.nonNull("expandAs", "other", other).shape); }

    /**
     * A broadcast view with {@code target}'s shape, for kernels. Returns {@code this} when the shape
     * already matches; callers must not close the result in that case unless it differs from {@code this}.
     */
    public Tensor broadcastTo(long[] target) {
        Arguments.nonNull("broadcastTo", "target", target);
        if (Arrays.equals(shape, target)) return this;
        // A borrowed view: no storage reference, only valid while this tensor is open.
        return new Tensor(storage, dtype, target, Shapes.broadcastStrides("broadcastTo", shape, strides, target), offset, true);
    }

    /** Elements {@code [start, start+length)} of dimension {@code dim}, as a view. */
    public Tensor narrow(int dim, long start, long length) { return Views.narrow(this, dim, start, length); }

    /** Python-style slice {@code [start:end:step]} of dimension {@code dim}; bounds are clamped, negative values count from the end. */
    public Tensor slice(int dim, long start, long end, long step) { return Views.slice(this, dim, start, end, step); }

    /** Removes dimension {@code dim} by taking index {@code index} (negative counts from the end). */
    public Tensor select(int dim, long index) { return Views.select(this, dim, index); }

    public Tensor flatten() { return flatten(0, -1); }

    /** Merges dimensions {@code startDim..-1} into one. */
    public Tensor flatten(int startDim) { return flatten(startDim, -1); }

    /** Merges dimensions {@code startDim..endDim} into one (a view when the strides allow it). */
    public Tensor flatten(int startDim, int endDim) { return Views.flatten(this, startDim, endDim); }

    /** Splits dimension {@code dim} into {@code sizes} (one may be -1). */
    public Tensor unflatten(int dim, long... sizes) { return Views.unflatten(this, dim, sizes); }

    /** All windows of {@code size} elements taken every {@code step} along {@code dim}, as a new last dimension (a view). */
    public Tensor unfold(int dim, long size, long step) { return Views.unfold(this, dim, size, step); }

    /** A view with explicit sizes, strides and storage offset (in elements), as {@code torch.as_strided}. */
    public Tensor asStrided(long[] size, long[] stride, long storageOffset) { return Views.asStrided(this, size, stride, storageOffset); }

    public Tensor asStrided(long[] size, long[] stride) { return asStrided(size, stride, offset); }

    /** This tensor if it is contiguous (a new reference), else a contiguous copy. */
    public Tensor contiguous() { return Views.contiguous(this); }

    /** A contiguous copy with the same dtype and device. */
    public Tensor clone() { return Dispatcher.call(CopyOps.CLONE, new Tensor[] {this}); }

    /** A new view of the same data that holds its own storage reference (closing it leaves this tensor open). */
    public Tensor alias() { return Views.alias(this); }

    // ------------------------------------------------------------------ copies and conversions (org.jtorch.ops.Conversions)

    /** Copies {@code src} into this tensor, broadcasting it and converting its dtype. */
    public Tensor copy_(Tensor src) { return copy_(src, false); }

    /**
     * Copies {@code src} into this tensor, broadcasting it and converting its dtype. With {@code nonBlocking},
     * a host-to-device copy from pinned memory ({@link #isPinned()}) of a contiguous source of this tensor's
     * dtype may return before the data has arrived: it is ordered on the device's current stream, so work
     * enqueued there afterwards sees it, and the pinned block is not reused before the copy completes. Other
     * copies are synchronous, as {@code copy_(src)}.
     */
    public Tensor copy_(Tensor src, boolean nonBlocking) {
        return Dispatcher.callInPlace(CopyOps.COPY, new Tensor[] {this, Arguments.nonNull("copy_", "src", src)}, nonBlocking ? 1 : 0);
    }

    /** This tensor converted to {@code dtype}: a new reference to the same data when the dtype already matches. */
    public Tensor to(DType target) { return Conversions.to(this, target); }

    /** This tensor moved to {@code target}: a new reference when it is already there. */
    public Tensor to(Device target) { return to(target, false); }

    /**
     * This tensor moved to {@code target}; with {@code nonBlocking} a copy from pinned host memory to a
     * device may still be in flight on the device's current stream when this returns (see
     * {@link #copy_(Tensor, boolean)}). A new reference when it is already there.
     */
    public Tensor to(Device target, boolean nonBlocking) { return Conversions.to(this, target, nonBlocking); }

    /** This tensor moved to {@code target} and converted to {@code targetType} in one copy: a new reference when neither changes. */
    public Tensor to(Device target, DType targetType) { return Conversions.to(this, target, targetType); }

    public Tensor cpu() { return to(Device.cpu()); }

    /** This tensor on the default CUDA device, {@code cuda:0} (PyTorch's {@code tensor.cuda()}). */
    public Tensor cuda() { return to(Device.cuda()); }

    /** This tensor on {@code cuda:index}. */
    public Tensor cuda(int index) { return to(Device.cuda(index)); }

    /** Whether this tensor's memory is page-locked host memory (made by {@link #pinMemory()} or a pinning DataLoader). */
    public boolean isPinned() { return storage.isPinned(); }

    /**
     * This CPU tensor copied into page-locked host memory (contiguous), from which copies to an accelerator
     * can be asynchronous ({@code to(device, true)}); this tensor itself (a new reference) when it is pinned
     * already. Pinned memory comes from an accelerator backend ({@link Dispatcher#allocatePinnedHost}).
     *
     * @throws IllegalStateException when no accelerator with pinned memory is available, naming why
     * @throws IllegalArgumentException for a tensor that is not on the CPU
     */
    public Tensor pinMemory() { return Conversions.pinMemory(this); }

    /**
     * Sets every element to {@code value}. An in-place op for autograd: refused on a leaf that requires grad (as
     * PyTorch's), and recorded on a graph tensor, whose earlier values then get a zero gradient ({@code FillBackward0}).
     */
    public Tensor fill_(double value) { return Dispatcher.callInPlace(CopyOps.FILL, new Tensor[] {this}, CopyOps.fillScalars(value, (long) value)); }

    /** Sets every element to {@code value}; exact for 64-bit integers. */
    public Tensor fill_(long value) { return Dispatcher.callInPlace(CopyOps.FILL, new Tensor[] {this}, CopyOps.fillScalars(value, value)); }

    public Tensor zero_() { return Dispatcher.callInPlace(CopyOps.ZERO, new Tensor[] {this}); }

    /** The value of a one-element tensor, as a double. */
    public double item() { return Conversions.item(this); }

    /** The value of a one-element tensor, as a long (exact for int64). */
    public long itemLong() { return Conversions.itemLong(this); }

    public float[] toFloatArray() { return Conversions.toFloatArray(this); }

    public double[] toDoubleArray() { return Conversions.toDoubleArray(this); }

    public long[] toLongArray() { return Conversions.toLongArray(this); }

    public int[] toIntArray() { return Conversions.toIntArray(this); }

    public boolean[] toBooleanArray() { return Conversions.toBooleanArray(this); }

    // ------------------------------------------------------------------ autograd (org.jtorch.autograd.AutogradMeta)

    /** For org.jtorch.autograd: this tensor's autograd state, or null while it has needed none. */
    public AutogradMeta autogradMeta() {
        return autograd;
    }

    /** For org.jtorch.autograd: this tensor's autograd state, made empty if it had none. */
    public AutogradMeta autogradMetaForWrite() {
        if (autograd == null) autograd = new AutogradMeta();
        return autograd;
    }

    /** Whether gradients flow to this tensor: a leaf that asked for them, or the result of an op on such tensors. */
    public boolean requiresGrad() { return AutogradMeta.requiresGrad(this); }

    /** Whether this tensor was created in {@link Grad#inferenceMode()} (it can never require grad or be saved for backward). */
    public boolean isInference() {
        return inference;
    }

    /** Marks a leaf tensor as requiring gradients (floating dtypes only), as {@code requires_grad_()}. */
    public Tensor requiresGrad_(boolean value) {
        AutogradMeta.setRequiresGrad(this, value);
        return this;
    }

    public Tensor requiresGrad_() {
        return requiresGrad_(true);
    }

    /** The accumulated gradient of a leaf, or null. Owned by this tensor (closed with it). */
    public Tensor grad() { return AutogradMeta.grad(this); }

    /**
     * Replaces the gradient (the previous one is not closed: the caller owns it now). Null clears it.
     * The new gradient belongs to this tensor from now on: it leaves any {@link MemoryScope}.
     */
    public void setGrad(Tensor g) { AutogradMeta.setGrad(this, g); }

    /** The node that produced this tensor, or null for a leaf. */
    public Node gradFn() { return AutogradMeta.gradFn(this); }

    /** Which output of {@link #gradFn()} this tensor is. */
    public int outputNr() { return AutogradMeta.outputNr(this); }

    /** Leaves are tensors not produced by a recorded op. */
    public boolean isLeaf() {
        return gradFn() == null;
    }

    /** Records that an op produced this tensor (for op implementations). */
    public void setGradFn(Node node, int outputNr) { AutogradMeta.setGradFn(this, node, outputNr, !borrowed && !closed); }

    /**
     * {@link #setGradFn} for the graph's own copy of a saved output (for autograd): the node's reference to
     * itself through its saved tensor does not count as an owner, else the node would keep itself alive.
     */
    public void setGradFnOfSavedOutput(Node node, int outputNr) { AutogradMeta.setGradFnOfSavedOutput(this, node, outputNr); }

    /** The node that accumulates this leaf's gradient (created once, for op implementations). */
    public Node gradAccumulator() { return AutogradMeta.gradAccumulator(this); }

    /**
     * Registers a hook called with this tensor's gradient during backward; it may return a replacement
     * gradient or null to keep it, as {@code register_hook}.
     */
    public void registerHook(UnaryOperator<Tensor> hook) { AutogradMeta.registerHook(this, hook); }

    /** Registers a hook called after a leaf's gradient has been accumulated (DDP starts all-reduces from it). */
    public void registerPostAccumulateGradHook(Consumer<Tensor> hook) { AutogradMeta.registerPostAccumulateGradHook(this, hook); }

    /** Makes a non-leaf tensor keep its gradient in {@link #grad()} after backward. */
    public void retainGrad() { AutogradMeta.retainGrad(this); }

    public List<UnaryOperator<Tensor>> gradHooks() { return AutogradMeta.gradHooks(this); }

    public List<Consumer<Tensor>> postAccumulateGradHooks() { return AutogradMeta.postAccumulateGradHooks(this); }

    /** Backpropagates from this scalar, accumulating into the leaves' {@code .grad}. */
    public void backward() {
        Autograd.backward(new Tensor[] {this}, null, false, false);
    }

    /** Backpropagates with {@code gradient} as d(loss)/d(this) (required for non-scalars). */
    public void backward(Tensor gradient) {
        backward(gradient, false, false);
    }

    public void backward(Tensor gradient, boolean retainGraph, boolean createGraph) {
        Autograd.backward(new Tensor[] {this}, gradient == null ? null : new Tensor[] {gradient}, retainGraph, createGraph);
    }

    /** A view of the same data outside the graph (shares storage and version counter). */
    public Tensor detach() {
        checkOpen("detach");
        return view(shape, strides, offset);
    }

    /** Detaches this tensor from the graph in place. */
    public Tensor detach_() {
        AutogradMeta.detachInPlace(this);
        return this;
    }

    // ------------------------------------------------------------------ linear algebra (ops/Linalg.java)

    /** {@code torch.matmul}: dot, matrix-vector, matrix or batched product with broadcast batch dims. */
    public Tensor matmul(Tensor other) {
        Arguments.nonNull("matmul", "other", other);
        return Linalg.matmul(this, other);
    }

    public Tensor mm(Tensor other) {
        Arguments.nonNull("mm", "other", other);
        return Linalg.mm(this, other);
    }

    public Tensor bmm(Tensor other) {
        Arguments.nonNull("bmm", "other", other);
        return Linalg.bmm(this, other);
    }

    public Tensor mv(Tensor vector) {
        Arguments.nonNull("mv", "vector", vector);
        return Linalg.mv(this, vector);
    }

    public Tensor dot(Tensor other) {
        Arguments.nonNull("dot", "other", other);
        return Linalg.dot(this, other);
    }

    public Tensor outer(Tensor other) {
        Arguments.nonNull("outer", "other", other);
        return Linalg.outer(this, other);
    }

    // ------------------------------------------------------------------ elementwise: arithmetic

    public Tensor add(Tensor other) {
        Arguments.nonNull("add", "other", other);
        return Elementwise.binary(BinaryOp.ADD, this, other, 1);
    }

    /** {@code this + alpha * other} */
    public Tensor add(Tensor other, double alpha) {
        Arguments.nonNull("add", "other", other);
        return Elementwise.binary(BinaryOp.ADD, this, other, alpha);
    }

    public Tensor add(double value) {
        return Elementwise.binaryScalar(BinaryOp.ADD, this, value, (long) value, DType.FLOAT64, false, 1);
    }

    public Tensor add(long value) {
        return Elementwise.binaryScalar(BinaryOp.ADD, this, value, value, DType.INT64, false, 1);
    }

    public Tensor add_(Tensor other) {
        Arguments.nonNull("add_", "other", other);
        return Elementwise.binaryInPlace(BinaryOp.ADD, this, other, 1);
    }

    public Tensor add_(Tensor other, double alpha) {
        Arguments.nonNull("add_", "other", other);
        return Elementwise.binaryInPlace(BinaryOp.ADD, this, other, alpha);
    }

    public Tensor add_(double value) {
        return Elementwise.binaryScalarInPlace(BinaryOp.ADD, this, value, (long) value, DType.FLOAT64, 1);
    }

    public Tensor add_(long value) {
        return Elementwise.binaryScalarInPlace(BinaryOp.ADD, this, value, value, DType.INT64, 1);
    }

    public Tensor sub(Tensor other) {
        Arguments.nonNull("sub", "other", other);
        return Elementwise.binary(BinaryOp.SUB, this, other, 1);
    }

    /** {@code this - alpha * other} */
    public Tensor sub(Tensor other, double alpha) {
        Arguments.nonNull("sub", "other", other);
        return Elementwise.binary(BinaryOp.SUB, this, other, alpha);
    }

    public Tensor sub(double value) {
        return Elementwise.binaryScalar(BinaryOp.SUB, this, value, (long) value, DType.FLOAT64, false, 1);
    }

    public Tensor sub(long value) {
        return Elementwise.binaryScalar(BinaryOp.SUB, this, value, value, DType.INT64, false, 1);
    }

    /** {@code value - this} ({@code torch.rsub}). */
    public Tensor rsub(double value) {
        return Elementwise.binaryScalar(BinaryOp.SUB, this, value, (long) value, DType.FLOAT64, true, 1);
    }

    public Tensor sub_(Tensor other) {
        Arguments.nonNull("sub_", "other", other);
        return Elementwise.binaryInPlace(BinaryOp.SUB, this, other, 1);
    }

    public Tensor sub_(Tensor other, double alpha) {
        Arguments.nonNull("sub_", "other", other);
        return Elementwise.binaryInPlace(BinaryOp.SUB, this, other, alpha);
    }

    public Tensor sub_(double value) {
        return Elementwise.binaryScalarInPlace(BinaryOp.SUB, this, value, (long) value, DType.FLOAT64, 1);
    }

    public Tensor mul(Tensor other) {
        Arguments.nonNull("mul", "other", other);
        return Elementwise.binary(BinaryOp.MUL, this, other, 1);
    }

    public Tensor mul(double value) {
        return Elementwise.binaryScalar(BinaryOp.MUL, this, value, (long) value, DType.FLOAT64, false, 1);
    }

    public Tensor mul(long value) {
        return Elementwise.binaryScalar(BinaryOp.MUL, this, value, value, DType.INT64, false, 1);
    }

    public Tensor mul_(Tensor other) {
        Arguments.nonNull("mul_", "other", other);
        return Elementwise.binaryInPlace(BinaryOp.MUL, this, other, 1);
    }

    public Tensor mul_(double value) {
        return Elementwise.binaryScalarInPlace(BinaryOp.MUL, this, value, (long) value, DType.FLOAT64, 1);
    }

    /** True division: integer inputs give a floating result. */
    public Tensor div(Tensor other) {
        Arguments.nonNull("div", "other", other);
        return Elementwise.binary(BinaryOp.DIV, this, other, 1);
    }

    public Tensor div(double value) {
        return Elementwise.binaryScalar(BinaryOp.DIV, this, value, (long) value, DType.FLOAT64, false, 1);
    }

    /** Division with a rounding mode: {@code "trunc"}, {@code "floor"}, or null for true division. */
    public Tensor div(Tensor other, String roundingMode) {
        Arguments.nonNull("div", "other", other);
        return Elementwise.binary(roundingOp(roundingMode), this, other, 1);
    }

    public Tensor div(double value, String roundingMode) {
        return Elementwise.binaryScalar(roundingOp(roundingMode), this, value, (long) value, DType.FLOAT64, false, 1);
    }

    public Tensor div(long value, String roundingMode) {
        return Elementwise.binaryScalar(roundingOp(roundingMode), this, value, value, DType.INT64, false, 1);
    }

    private static BinaryOp roundingOp(String mode) {
        if (mode == null) return BinaryOp.DIV;
        return switch (mode) {
            case "trunc" -> BinaryOp.DIV_TRUNC;
            case "floor" -> BinaryOp.DIV_FLOOR;
            default -> throw new IllegalArgumentException("div: expected rounding_mode to be one of null, 'trunc', or 'floor' but found '"
                    + mode + "'");
        };
    }

    public Tensor div_(Tensor other) {
        Arguments.nonNull("div_", "other", other);
        return Elementwise.binaryInPlace(BinaryOp.DIV, this, other, 1);
    }

    public Tensor div_(double value) {
        return Elementwise.binaryScalarInPlace(BinaryOp.DIV, this, value, (long) value, DType.FLOAT64, 1);
    }

    /** Python's modulus: the result has the divisor's sign. */
    public Tensor remainder(Tensor other) {
        Arguments.nonNull("remainder", "other", other);
        return Elementwise.binary(BinaryOp.REMAINDER, this, other, 1);
    }

    public Tensor remainder(double value) {
        return Elementwise.binaryScalar(BinaryOp.REMAINDER, this, value, (long) value, DType.FLOAT64, false, 1);
    }

    public Tensor remainder(long value) {
        return Elementwise.binaryScalar(BinaryOp.REMAINDER, this, value, value, DType.INT64, false, 1);
    }

    public Tensor pow(Tensor exponent) {
        Arguments.nonNull("pow", "exponent", exponent);
        return Elementwise.binary(BinaryOp.POW, this, exponent, 1);
    }

    public Tensor pow(double exponent) {
        DType out = new org.jtorch.ops.TypePromotion.State().add(this).addScalar(DType.FLOAT64).result();
        if (out == dtype) return Elementwise.unary(UnaryOp.POW_SCALAR, this, exponent, 0);
        try (Tensor converted = to(out)) {
            return Elementwise.unary(UnaryOp.POW_SCALAR, converted, exponent, 0);
        }
    }

    public Tensor pow(long exponent) {
        if (!dtype.isFloatingPoint() && exponent < 0) {
            throw new IllegalArgumentException("pow: integers to negative integer powers are not allowed (tensor dtype "
                    + dtype + ", exponent " + exponent + ")");
        }
        if (dtype == DType.BOOL) {
            // An integer scalar lifts bool to int64, as PyTorch's type promotion.
            try (Tensor converted = to(DType.INT64)) {
                return Elementwise.unary(UnaryOp.POW_SCALAR, converted, exponent, 0);
            }
        }
        return Elementwise.unary(UnaryOp.POW_SCALAR, this, exponent, 0);
    }

    public Tensor pow_(double exponent) {
        return Elementwise.unaryInPlace(UnaryOp.POW_SCALAR, this, exponent, 0);
    }

    public Tensor maximum(Tensor other) {
        Arguments.nonNull("maximum", "other", other);
        return Elementwise.binary(BinaryOp.MAXIMUM, this, other, 1);
    }

    public Tensor minimum(Tensor other) {
        Arguments.nonNull("minimum", "other", other);
        return Elementwise.binary(BinaryOp.MINIMUM, this, other, 1);
    }

    // ------------------------------------------------------------------ elementwise: comparisons and logic

    public Tensor eq(Tensor other) {
        Arguments.nonNull("eq", "other", other);
        return Elementwise.binary(BinaryOp.EQ, this, other, 1);
    }

    public Tensor eq(double value) {
        return Elementwise.binaryScalar(BinaryOp.EQ, this, value, (long) value, DType.FLOAT64, false, 1);
    }

    public Tensor ne(Tensor other) {
        Arguments.nonNull("ne", "other", other);
        return Elementwise.binary(BinaryOp.NE, this, other, 1);
    }

    public Tensor ne(double value) {
        return Elementwise.binaryScalar(BinaryOp.NE, this, value, (long) value, DType.FLOAT64, false, 1);
    }

    public Tensor lt(Tensor other) {
        Arguments.nonNull("lt", "other", other);
        return Elementwise.binary(BinaryOp.LT, this, other, 1);
    }

    public Tensor lt(double value) {
        return Elementwise.binaryScalar(BinaryOp.LT, this, value, (long) value, DType.FLOAT64, false, 1);
    }

    public Tensor le(Tensor other) {
        Arguments.nonNull("le", "other", other);
        return Elementwise.binary(BinaryOp.LE, this, other, 1);
    }

    public Tensor le(double value) {
        return Elementwise.binaryScalar(BinaryOp.LE, this, value, (long) value, DType.FLOAT64, false, 1);
    }

    public Tensor gt(Tensor other) {
        Arguments.nonNull("gt", "other", other);
        return Elementwise.binary(BinaryOp.GT, this, other, 1);
    }

    public Tensor gt(double value) {
        return Elementwise.binaryScalar(BinaryOp.GT, this, value, (long) value, DType.FLOAT64, false, 1);
    }

    public Tensor ge(Tensor other) {
        Arguments.nonNull("ge", "other", other);
        return Elementwise.binary(BinaryOp.GE, this, other, 1);
    }

    public Tensor ge(double value) {
        return Elementwise.binaryScalar(BinaryOp.GE, this, value, (long) value, DType.FLOAT64, false, 1);
    }

    public Tensor logicalAnd(Tensor other) {
        Arguments.nonNull("logicalAnd", "other", other);
        return Elementwise.binary(BinaryOp.LOGICAL_AND, this, other, 1);
    }

    public Tensor logicalOr(Tensor other) {
        Arguments.nonNull("logicalOr", "other", other);
        return Elementwise.binary(BinaryOp.LOGICAL_OR, this, other, 1);
    }

    public Tensor logicalXor(Tensor other) {
        Arguments.nonNull("logicalXor", "other", other);
        return Elementwise.binary(BinaryOp.LOGICAL_XOR, this, other, 1);
    }

    public Tensor logicalNot() {
        return Elementwise.unary(UnaryOp.LOGICAL_NOT, this, 0, 0);
    }

    public Tensor bitwiseAnd(Tensor other) {
        Arguments.nonNull("bitwiseAnd", "other", other);
        return Elementwise.binary(BinaryOp.BITWISE_AND, this, other, 1);
    }

    public Tensor bitwiseOr(Tensor other) {
        Arguments.nonNull("bitwiseOr", "other", other);
        return Elementwise.binary(BinaryOp.BITWISE_OR, this, other, 1);
    }

    public Tensor bitwiseXor(Tensor other) {
        Arguments.nonNull("bitwiseXor", "other", other);
        return Elementwise.binary(BinaryOp.BITWISE_XOR, this, other, 1);
    }

    public Tensor bitwiseNot() {
        return Elementwise.unary(UnaryOp.BITWISE_NOT, this, 0, 0);
    }

    public Tensor bitwiseLeftShift(Tensor other) {
        Arguments.nonNull("bitwiseLeftShift", "other", other);
        return Elementwise.binary(BinaryOp.BITWISE_LEFT_SHIFT, this, other, 1);
    }

    public Tensor bitwiseRightShift(Tensor other) {
        Arguments.nonNull("bitwiseRightShift", "other", other);
        return Elementwise.binary(BinaryOp.BITWISE_RIGHT_SHIFT, this, other, 1);
    }

    public Tensor isnan() {
        return Elementwise.unary(UnaryOp.ISNAN, this, 0, 0);
    }

    public Tensor isinf() {
        return Elementwise.unary(UnaryOp.ISINF, this, 0, 0);
    }

    public Tensor isfinite() {
        return Elementwise.unary(UnaryOp.ISFINITE, this, 0, 0);
    }

    /** {@code where(condition, this, other)} */
    public Tensor where(Tensor condition, Tensor other) {
        Arguments.nonNull("where", "condition", condition);
        Arguments.nonNull("where", "other", other);
        return Elementwise.where(condition, this, other);
    }

    // ------------------------------------------------------------------ elementwise: unary math

    public Tensor neg() { return Elementwise.unary(UnaryOp.NEG, this, 0, 0); }
    public Tensor neg_() { return Elementwise.unaryInPlace(UnaryOp.NEG, this, 0, 0); }
    public Tensor abs() { return Elementwise.unary(UnaryOp.ABS, this, 0, 0); }
    public Tensor abs_() { return Elementwise.unaryInPlace(UnaryOp.ABS, this, 0, 0); }
    public Tensor sign() { return Elementwise.unary(UnaryOp.SIGN, this, 0, 0); }
    public Tensor exp() { return Elementwise.unary(UnaryOp.EXP, this, 0, 0); }
    public Tensor exp_() { return Elementwise.unaryInPlace(UnaryOp.EXP, this, 0, 0); }
    public Tensor log() { return Elementwise.unary(UnaryOp.LOG, this, 0, 0); }
    public Tensor log_() { return Elementwise.unaryInPlace(UnaryOp.LOG, this, 0, 0); }
    public Tensor log1p() { return Elementwise.unary(UnaryOp.LOG1P, this, 0, 0); }
    public Tensor expm1() { return Elementwise.unary(UnaryOp.EXPM1, this, 0, 0); }
    public Tensor sqrt() { return Elementwise.unary(UnaryOp.SQRT, this, 0, 0); }
    public Tensor sqrt_() { return Elementwise.unaryInPlace(UnaryOp.SQRT, this, 0, 0); }
    public Tensor rsqrt() { return Elementwise.unary(UnaryOp.RSQRT, this, 0, 0); }
    public Tensor reciprocal() { return Elementwise.unary(UnaryOp.RECIPROCAL, this, 0, 0); }
    public Tensor sin() { return Elementwise.unary(UnaryOp.SIN, this, 0, 0); }
    public Tensor cos() { return Elementwise.unary(UnaryOp.COS, this, 0, 0); }
    public Tensor tanh() { return Elementwise.unary(UnaryOp.TANH, this, 0, 0); }
    public Tensor tanh_() { return Elementwise.unaryInPlace(UnaryOp.TANH, this, 0, 0); }
    public Tensor sigmoid() { return Elementwise.unary(UnaryOp.SIGMOID, this, 0, 0); }
    public Tensor sigmoid_() { return Elementwise.unaryInPlace(UnaryOp.SIGMOID, this, 0, 0); }
    public Tensor relu() { return Elementwise.unary(UnaryOp.RELU, this, 0, 0); }
    public Tensor relu_() { return Elementwise.unaryInPlace(UnaryOp.RELU, this, 0, 0); }
    public Tensor silu() { return Elementwise.unary(UnaryOp.SILU, this, 0, 0); }
    public Tensor erf() { return Elementwise.unary(UnaryOp.ERF, this, 0, 0); }
    public Tensor floor() { return Elementwise.unary(UnaryOp.FLOOR, this, 0, 0); }
    public Tensor ceil() { return Elementwise.unary(UnaryOp.CEIL, this, 0, 0); }
    /** Rounds half to even, as {@code torch.round}. */
    public Tensor round() { return Elementwise.unary(UnaryOp.ROUND, this, 0, 0); }
    public Tensor trunc() { return Elementwise.unary(UnaryOp.TRUNC, this, 0, 0); }

    /** GELU with the exact normal CDF ({@code approximate='none'}). */
    public Tensor gelu() {
        return gelu("none");
    }

    /** GELU; {@code approximate} is {@code "none"} or {@code "tanh"}. */
    public Tensor gelu(String approximate) {
        Arguments.nonNull("gelu", "approximate", approximate);
        UnaryOp op = switch (approximate) {
            case "none" -> UnaryOp.GELU;
            case "tanh" -> UnaryOp.GELU_TANH;
            default -> throw new IllegalArgumentException("gelu: approximate must be 'none' or 'tanh', got '" + approximate + "'");
        };
        return Elementwise.unary(op, this, 0, 0);
    }

    /** {@code torch.logit(self)}: {@code log(x / (1 - x))}. */
    public Tensor logit() { return Dispatcher.unary(PointwiseOps.LOGIT, this, Double.NaN, 0); }

    /** {@code torch.logit(self, eps)}: the input clamped to {@code [eps, 1 - eps]} first. */
    public Tensor logit(double eps) { return Dispatcher.unary(PointwiseOps.LOGIT, this, eps, 0); }

    /** {@code F.logsigmoid}: {@code log(sigmoid(x))}, computed without overflow. */
    public Tensor logSigmoid() { return Dispatcher.unary(PointwiseOps.LOGSIGMOID, this, 0, 0); }

    /** {@code F.hardtanh(self, min_val, max_val)} */
    public Tensor hardtanh(double minVal, double maxVal) { return Dispatcher.unary(PointwiseOps.HARDTANH, this, minVal, maxVal); }

    /** {@code F.relu6}: {@code min(max(x, 0), 6)}. */
    public Tensor relu6() { return Dispatcher.unary(PointwiseOps.RELU6, this, 0, 0); }

    /** {@code F.mish}: {@code x * tanh(softplus(x))}. */
    public Tensor mish() { return Dispatcher.unary(PointwiseOps.MISH, this, 0, 0); }

    /** {@code torch.fmod}: the remainder of truncating division (the dividend's sign). */
    public Tensor fmod(Tensor other) {
        Arguments.nonNull("fmod", "other", other);
        return Dispatcher.binary(PointwiseOps.FMOD, this, other, 1);
    }

    public Tensor fmod(double other) { return withScalar(PointwiseOps.FMOD, other); }

    public Tensor fmod(long other) { return withScalar(PointwiseOps.FMOD, other); }

    /** {@code torch.floor_divide}: rounds the quotient towards minus infinity (PyTorch 1.13). */
    public Tensor floorDivide(Tensor other) {
        Arguments.nonNull("floor_divide", "other", other);
        return Dispatcher.binary(PointwiseOps.FLOOR_DIVIDE, this, other, 1);
    }

    public Tensor floorDivide(double other) { return withScalar(PointwiseOps.FLOOR_DIVIDE, other); }

    public Tensor floorDivide(long other) { return withScalar(PointwiseOps.FLOOR_DIVIDE, other); }

    /** A declared binary op with a Java number as PyTorch's wrapped-number second operand. */
    private Tensor withScalar(org.jtorch.op.OpDef op, double other) {
        return Dispatcher.binary(op, this, Elementwise.scalarOperand(this, other, (long) other, DType.FLOAT64), 1);
    }

    private Tensor withScalar(org.jtorch.op.OpDef op, long other) {
        return Dispatcher.binary(op, this, Elementwise.scalarOperand(this, other, other, DType.INT64), 1);
    }

    /** {@code torch.clamp(self, min, max)} with tensor bounds (broadcast); either may be null (None), not both. */
    public Tensor clamp(Tensor min, Tensor max) {
        if (min == null && max == null) {
            throw new IllegalArgumentException("clamp: at least one of 'min' or 'max' must not be None");
        }
        return Dispatcher.call(PointwiseOps.CLAMP_TENSOR, new Tensor[] {this, min, max});
    }

    public Tensor leakyRelu(double negativeSlope) {
        return Elementwise.unary(UnaryOp.LEAKY_RELU, this, negativeSlope, 0);
    }

    /** {@code softplus(x) = log(1 + exp(beta x)) / beta}, linear where {@code beta x > threshold}. */
    public Tensor softplus(double beta, double threshold) {
        return Elementwise.unary(UnaryOp.SOFTPLUS, this, beta, threshold);
    }

    public Tensor softplus() {
        return softplus(1, 20);
    }

    /**
     * Clamps into {@code [min, max]}; pass {@code Double.NaN} for an absent bound. The bounds are
     * Python scalars for type promotion: integer and bool tensors stay integral (bool becomes int64)
     * unless a bound has a fractional part, which gives the default float dtype.
     */
    public Tensor clamp(double min, double max) {
        if (min == min && max == max && min > max) {
            // PyTorch sets everything to max in this case; keep that semantics.
            min = max;
        }
        DType out = clampType(min, max);
        if (out == dtype) return Elementwise.unary(UnaryOp.CLAMP, this, boundOrInf(min, -1), boundOrInf(max, 1));
        try (Tensor converted = to(out)) {
            return Elementwise.unary(UnaryOp.CLAMP, converted, boundOrInf(min, -1), boundOrInf(max, 1));
        }
    }

    public Tensor clamp_(double min, double max) {
        DType out = clampType(min, max);
        if (!org.jtorch.ops.TypePromotion.canCast(out, dtype)) {
            throw new IllegalArgumentException("clamp_: result type " + out + " can't be cast to the desired output type "
                    + dtype);
        }
        return Elementwise.unaryInPlace(UnaryOp.CLAMP, this, boundOrInf(min, -1), boundOrInf(max, 1));
    }

    private DType clampType(double min, double max) {
        boolean fractional = min == min && min != Math.rint(min) || max == max && max != Math.rint(max);
        return new org.jtorch.ops.TypePromotion.State().add(this).addScalar(fractional ? DType.FLOAT64 : DType.INT64)
                .result();
    }

    /** An absent (NaN) bound as an infinity, which integer kernels read as Long.MIN_VALUE/MAX_VALUE rather than 0. */
    private static double boundOrInf(double bound, int sign) {
        return bound == bound ? bound : sign * Double.POSITIVE_INFINITY;
    }

    public Tensor clampMin(double min) {
        return clamp(min, Double.NaN);
    }

    public Tensor clampMax(double max) {
        return clamp(Double.NaN, max);
    }

    // ------------------------------------------------------------------ indexing and joining (ops.Indexing, ops.Joining)

    /** {@code index_select}: the slices {@code index} (int32/int64 vector; no negative values) picks along {@code dim}. */
    public Tensor indexSelect(int dim, Tensor index) {
        Arguments.nonNull("indexSelect", "index", index);
        return Indexing.indexSelect(this, dim, index);
    }

    /** {@code gather}: {@code out[i][j] = this[i][index[i][j]]} for {@code dim == 1}; {@code index} is int64 with this tensor's rank. */
    public Tensor gather(int dim, Tensor index) {
        Arguments.nonNull("gather", "index", index);
        return Indexing.gather(this, dim, index);
    }

    /** {@code scatter}: a copy with {@code out[i][index[i][j]] = src[i][j]} for {@code dim == 1}. */
    public Tensor scatter(int dim, Tensor index, Tensor src) {
        Arguments.nonNull("scatter", "index", index);
        Arguments.nonNull("scatter", "src", src);
        return Indexing.scatter(this, dim, index, src, false);
    }

    /** {@code scatter} of a scalar (converted to this tensor's dtype). */
    public Tensor scatter(int dim, Tensor index, double value) {
        Arguments.nonNull("scatter", "index", index);
        return Indexing.scatterValue(this, dim, index, value);
    }

    public Tensor scatter_(int dim, Tensor index, Tensor src) {
        Arguments.nonNull("scatter_", "index", index);
        Arguments.nonNull("scatter_", "src", src);
        return Indexing.scatterInPlace(this, dim, index, src, false);
    }

    public Tensor scatter_(int dim, Tensor index, double value) {
        Arguments.nonNull("scatter_", "index", index);
        return Indexing.scatterValueInPlace(this, dim, index, value);
    }

    /** {@code scatter_add}: a copy with {@code out[i][index[i][j]] += src[i][j]} for {@code dim == 1}; duplicates sum. */
    public Tensor scatterAdd(int dim, Tensor index, Tensor src) {
        Arguments.nonNull("scatterAdd", "index", index);
        Arguments.nonNull("scatterAdd", "src", src);
        return Indexing.scatter(this, dim, index, src, true);
    }

    public Tensor scatterAdd_(int dim, Tensor index, Tensor src) {
        Arguments.nonNull("scatterAdd_", "index", index);
        Arguments.nonNull("scatterAdd_", "src", src);
        return Indexing.scatterInPlace(this, dim, index, src, true);
    }

    /** {@code index_add}: a copy with {@code out.select(dim, index[i]) += alpha * source.select(dim, i)}. */
    public Tensor indexAdd(int dim, Tensor index, Tensor source, double alpha) {
        Arguments.nonNull("indexAdd", "index", index);
        Arguments.nonNull("indexAdd", "source", source);
        return Indexing.indexAdd(this, dim, index, source, alpha);
    }

    public Tensor indexAdd(int dim, Tensor index, Tensor source) {
        return indexAdd(dim, index, source, 1);
    }

    public Tensor indexAdd_(int dim, Tensor index, Tensor source, double alpha) {
        Arguments.nonNull("indexAdd_", "index", index);
        Arguments.nonNull("indexAdd_", "source", source);
        return Indexing.indexAddInPlace(this, dim, index, source, alpha);
    }

    public Tensor indexAdd_(int dim, Tensor index, Tensor source) {
        Arguments.nonNull("indexAdd_", "index", index);
        Arguments.nonNull("indexAdd_", "source", source);
        return Indexing.indexAddInPlace(this, dim, index, source, 1);
    }

    /** {@code index_copy}: a copy with {@code out.select(dim, index[i]) = source.select(dim, i)}; {@code index} is int64. */
    public Tensor indexCopy(int dim, Tensor index, Tensor source) {
        Arguments.nonNull("indexCopy", "index", index);
        Arguments.nonNull("indexCopy", "source", source);
        return Indexing.indexCopy(this, dim, index, source);
    }

    public Tensor indexCopy_(int dim, Tensor index, Tensor source) {
        Arguments.nonNull("indexCopy_", "index", index);
        Arguments.nonNull("indexCopy_", "source", source);
        return Indexing.indexCopyInPlace(this, dim, index, source);
    }

    /** {@code index_fill}: a copy with the slices {@code index} (int64; negative values wrap) picks along {@code dim} set to {@code value}. */
    public Tensor indexFill(int dim, Tensor index, double value) {
        Arguments.nonNull("indexFill", "index", index);
        return Indexing.indexFill(this, dim, index, value);
    }

    public Tensor indexFill_(int dim, Tensor index, double value) {
        Arguments.nonNull("indexFill_", "index", index);
        return Indexing.indexFillInPlace(this, dim, index, value);
    }

    /** {@code masked_fill}: {@code value} where the bool {@code mask} is true; shape broadcast with the mask, this dtype. */
    public Tensor maskedFill(Tensor mask, double value) {
        Arguments.nonNull("maskedFill", "mask", mask);
        return Indexing.maskedFill(this, mask, value);
    }

    public Tensor maskedFill_(Tensor mask, double value) {
        Arguments.nonNull("maskedFill_", "mask", mask);
        return Indexing.maskedFillInPlace(this, mask, value);
    }

    /** {@code masked_select}: the elements where the broadcast bool {@code mask} is true, as a 1-d tensor. */
    public Tensor maskedSelect(Tensor mask) {
        Arguments.nonNull("maskedSelect", "mask", mask);
        return Indexing.maskedSelect(this, mask);
    }

    /** {@code nonzero}: int64 {@code [n, dim()]} coordinates of the nonzero elements, in row-major order. */
    public Tensor nonzero() {
        return Indexing.nonzero(this);
    }

    /** {@code nonzero(as_tuple=True)}: one int64 vector of coordinates per dimension. */
    public List<Tensor> nonzeroTuple() {
        return Indexing.nonzeroTuple(this);
    }

    /**
     * Advanced indexing {@code this[i0, i1, ...]}: int64 index tensors (broadcast together; negative
     * values count from the end), bool masks (covering as many dimensions as they have), and
     * {@code null} for a full slice {@code :}, over the leading dimensions. Returns a new tensor.
     */
    public Tensor index(Tensor... indices) {
        Arguments.nonNull("index", "indices", indices);
        return Indexing.index(this, indices);
    }

    /** {@code index_put_}: {@code this[indices] = values} (broadcast), or {@code +=} when {@code accumulate}. */
    public Tensor indexPut_(Tensor[] indices, Tensor values, boolean accumulate) {
        Arguments.nonNull("indexPut_", "indices", indices);
        Arguments.nonNull("indexPut_", "values", values);
        return Indexing.indexPutInPlace(this, indices, values, accumulate);
    }

    public Tensor indexPut(Tensor[] indices, Tensor values, boolean accumulate) {
        Arguments.nonNull("indexPut", "indices", indices);
        Arguments.nonNull("indexPut", "values", values);
        return Indexing.indexPut(this, indices, values, accumulate);
    }

    /** Views of {@code splitSize} elements along {@code dim} (the last may be smaller). */
    public List<Tensor> split(long splitSize, int dim) {
        return Joining.split(this, splitSize, dim);
    }

    /** Views of the given sizes along {@code dim} ({@code split_with_sizes}). */
    public List<Tensor> split(long[] sizes, int dim) {
        Arguments.nonNull("split", "sizes", sizes);
        return Joining.split(this, sizes, dim);
    }

    /** At most {@code chunks} views of {@code ceil(size(dim) / chunks)} elements along {@code dim}. */
    public List<Tensor> chunk(int chunks, int dim) {
        return Joining.chunk(this, chunks, dim);
    }

    /** The slices along {@code dim}, each a view without that dimension. */
    public List<Tensor> unbind(int dim) {
        return Joining.unbind(this, dim);
    }

    // ------------------------------------------------------------------ reductions (org.jtorch.ops.Reductions)
    // dims: none = all dimensions; negative dims count from the end. See Reductions for dtype and empty-tensor rules.

    /** Sum over {@code dims} (all when none), as {@code torch.sum}; bool and integer tensors sum to int64. */
    public Tensor sum(int... dims) {
        return Reductions.sum(this, dims, false, null);
    }
    public Tensor sum(int dim, boolean keepdim) { return Reductions.sum(this, new int[] {dim}, keepdim, null); }
    public Tensor sum(int[] dims, boolean keepdim) {
        return Reductions.sum(this, dims, keepdim, null);
    }
    /** Sum with the input converted to {@code dtype} first (PyTorch's {@code dtype=} argument). */
    public Tensor sum(int[] dims, boolean keepdim, DType dtype) {
        return Reductions.sum(this, dims, keepdim, dtype);
    }
    public Tensor sum(DType dtype) {
        return Reductions.sum(this, new int[0], false, dtype);
    }

    /** Mean over {@code dims} (all when none); floating tensors only, NaN when empty. */
    public Tensor mean(int... dims) {
        return Reductions.mean(this, dims, false, null);
    }
    public Tensor mean(int dim, boolean keepdim) { return Reductions.mean(this, new int[] {dim}, keepdim, null); }
    public Tensor mean(int[] dims, boolean keepdim) {
        return Reductions.mean(this, dims, keepdim, null);
    }
    public Tensor mean(int[] dims, boolean keepdim, DType dtype) {
        return Reductions.mean(this, dims, keepdim, dtype);
    }

    /** Product over {@code dims} (all when none); bool and integer tensors give int64. */
    public Tensor prod(int... dims) {
        return Reductions.prod(this, dims, false, null);
    }
    public Tensor prod(int dim, boolean keepdim) { return Reductions.prod(this, new int[] {dim}, keepdim, null); }
    public Tensor prod(int[] dims, boolean keepdim, DType dtype) {
        return Reductions.prod(this, dims, keepdim, dtype);
    }

    /** The maximum element (0-d); NaN propagates; throws for an empty tensor. */
    public Tensor max() { return Reductions.max(this); }
    public Tensor min() { return Reductions.min(this); }
    /** Maxima along {@code dim} with the index of their first occurrence, as {@code torch.max(x, dim)}. */
    public Reductions.ValuesIndices max(int dim) { return Reductions.max(this, dim, false); }
    public Reductions.ValuesIndices max(int dim, boolean keepdim) { return Reductions.max(this, dim, keepdim); }
    public Reductions.ValuesIndices min(int dim) { return Reductions.min(this, dim, false); }
    public Reductions.ValuesIndices min(int dim, boolean keepdim) { return Reductions.min(this, dim, keepdim); }

    /** Maximum over {@code dims} (all when none) without indices; NaN propagates. */
    public Tensor amax(int... dims) {
        return Reductions.amax(this, dims, false);
    }
    public Tensor amax(int[] dims, boolean keepdim) {
        return Reductions.amax(this, dims, keepdim);
    }
    public Tensor amin(int... dims) {
        return Reductions.amin(this, dims, false);
    }
    public Tensor amin(int[] dims, boolean keepdim) {
        return Reductions.amin(this, dims, keepdim);
    }

    /** Index of the maximum of the flattened tensor (0-d int64); the first on ties, the first NaN if any. */
    public Tensor argmax() { return Reductions.argmax(this); }
    public Tensor argmax(int dim) { return Reductions.argmax(this, dim, false); }
    public Tensor argmax(int dim, boolean keepdim) { return Reductions.argmax(this, dim, keepdim); }
    public Tensor argmin() { return Reductions.argmin(this); }
    public Tensor argmin(int dim) { return Reductions.argmin(this, dim, false); }
    public Tensor argmin(int dim, boolean keepdim) { return Reductions.argmin(this, dim, keepdim); }

    /** Variance over {@code dims} (all when none) with Bessel's correction (correction = 1). */
    public Tensor var(int... dims) {
        return Reductions.var(this, dims, 1, false);
    }
    /** {@code sum (x - mean)^2 / max(0, N - correction)} over {@code dims}. */
    public Tensor var(int[] dims, double correction, boolean keepdim) {
        return Reductions.var(this, dims, correction, keepdim);
    }
    public Tensor std(int... dims) {
        return Reductions.std(this, dims, 1, false);
    }
    public Tensor std(int[] dims, double correction, boolean keepdim) {
        return Reductions.std(this, dims, correction, keepdim);
    }
    /** {@code torch.var(x, **options)}: {@code x.var(Variance.options().dim(1).unbiased(false))}. */
    public Tensor var(Variance options) {
        Arguments.nonNull("var", "options", options);
        return Reductions.var(this, options.dims(), options.correction(), options.keepdim());
    }
    /** {@code torch.std(x, **options)}; see {@link Variance}. */
    public Tensor std(Variance options) {
        Arguments.nonNull("std", "options", options);
        return Reductions.std(this, options.dims(), options.correction(), options.keepdim());
    }

    /** The 2-norm of all elements. */
    public Tensor norm() { return Reductions.norm(this, 2, new int[0], false); }
    /** The p-norm of all elements (p = 0, 1, 2, ±inf or any real). */
    public Tensor norm(double p) { return Reductions.norm(this, p, new int[0], false); }
    public Tensor norm(double p, int[] dims, boolean keepdim) {
        return Reductions.norm(this, p, dims, keepdim);
    }

    /** {@code log(sum(exp(x)))} over {@code dims} (all when none), computed stably. */
    public Tensor logsumexp(int... dims) {
        return Reductions.logsumexp(this, dims, false);
    }
    public Tensor logsumexp(int[] dims, boolean keepdim) {
        return Reductions.logsumexp(this, dims, keepdim);
    }

    /** Whether any element over {@code dims} (all when none) is nonzero; bool result (uint8 for uint8 input). */
    public Tensor any(int... dims) {
        return Reductions.any(this, dims, false);
    }
    public Tensor any(int[] dims, boolean keepdim) {
        return Reductions.any(this, dims, keepdim);
    }
    public Tensor all(int... dims) {
        return Reductions.all(this, dims, false);
    }
    public Tensor all(int[] dims, boolean keepdim) {
        return Reductions.all(this, dims, keepdim);
    }

    /** Cumulative sum along {@code dim}; bool and integer tensors give int64. */
    public Tensor cumsum(int dim) { return Reductions.cumsum(this, dim, null); }
    public Tensor cumsum(int dim, DType dtype) {
        return Reductions.cumsum(this, dim, dtype);
    }
    public Tensor cumprod(int dim) { return Reductions.cumprod(this, dim, null); }
    public Tensor cumprod(int dim, DType dtype) {
        return Reductions.cumprod(this, dim, dtype);
    }

    /** Softmax along {@code dim}; integer input computes in the default float dtype. */
    public Tensor softmax(int dim) { return Reductions.softmax(this, dim, null); }
    public Tensor softmax(int dim, DType dtype) {
        return Reductions.softmax(this, dim, dtype);
    }
    public Tensor logSoftmax(int dim) { return Reductions.logSoftmax(this, dim, null); }
    public Tensor logSoftmax(int dim, DType dtype) {
        return Reductions.logSoftmax(this, dim, dtype);
    }

    // ---------------------------------------------------------------- sorting and sampling (see Sorting)

    /** Sorted along the last dim, ascending, with the original positions; stable, NaN last. */
    public Reductions.ValuesIndices sort() { return Sorting.sort(this, -1, false, false); }
    public Reductions.ValuesIndices sort(int dim) { return Sorting.sort(this, dim, false, false); }
    public Reductions.ValuesIndices sort(int dim, boolean descending) { return Sorting.sort(this, dim, descending, false); }
    public Reductions.ValuesIndices sort(int dim, boolean descending, boolean stable) { return Sorting.sort(this, dim, descending, stable); }
    public Tensor argsort() { return Sorting.argsort(this, -1, false, false); }
    public Tensor argsort(int dim) { return Sorting.argsort(this, dim, false, false); }
    public Tensor argsort(int dim, boolean descending) { return Sorting.argsort(this, dim, descending, false); }
    public Tensor argsort(int dim, boolean descending, boolean stable) { return Sorting.argsort(this, dim, descending, stable); }
    public Tensor msort() { return Sorting.msort(this); }
    /** The k largest along the last dim, in descending order. */
    public Reductions.ValuesIndices topk(long k) { return Sorting.topk(this, k, -1, true, true); }
    public Reductions.ValuesIndices topk(long k, int dim) { return Sorting.topk(this, k, dim, true, true); }
    public Reductions.ValuesIndices topk(long k, int dim, boolean largest, boolean sorted) { return Sorting.topk(this, k, dim, largest, sorted); }
    /** The k-th smallest (1-based) along the last dim. */
    public Reductions.ValuesIndices kthvalue(long k) { return Sorting.kthvalue(this, k, -1, false); }
    public Reductions.ValuesIndices kthvalue(long k, int dim) { return Sorting.kthvalue(this, k, dim, false); }
    public Reductions.ValuesIndices kthvalue(long k, int dim, boolean keepdim) { return Sorting.kthvalue(this, k, dim, keepdim); }
    /** The lower median of all elements (0-d). */
    public Tensor median() { return Sorting.median(this); }
    public Reductions.ValuesIndices median(int dim) { return Sorting.median(this, dim, false); }
    public Reductions.ValuesIndices median(int dim, boolean keepdim) { return Sorting.median(this, dim, keepdim); }
    /** The most frequent value along the last dim (the smallest on ties). */
    public Reductions.ValuesIndices mode() { return Sorting.mode(this, -1, false); }
    public Reductions.ValuesIndices mode(int dim) { return Sorting.mode(this, dim, false); }
    public Reductions.ValuesIndices mode(int dim, boolean keepdim) { return Sorting.mode(this, dim, keepdim); }
    /** The sorted distinct values; see {@link Sorting#unique} for the inverse and counts. */
    public Tensor unique() {
        try (Sorting.Unique u = Sorting.unique(this, true, false, false)) {
            return u.values().alias();
        }
    }
    public Sorting.Unique unique(boolean sorted, boolean returnInverse, boolean returnCounts) {
        return Sorting.unique(this, sorted, returnInverse, returnCounts);
    }
    /** The distinct slices along {@code dim}, as {@code torch.unique(x, dim=dim)}. */
    public Sorting.Unique unique(int dim, boolean returnInverse, boolean returnCounts) {
        return Sorting.unique(this, dim, returnInverse, returnCounts);
    }
    /** This tensor's elements bucketed by the 1-D {@code boundaries}, as {@code torch.bucketize}. */
    public Tensor bucketize(Tensor boundaries) { return Sorting.bucketize(this, boundaries, false, false); }
    public Tensor bucketize(Tensor boundaries, boolean outInt32, boolean right) { return Sorting.bucketize(this, boundaries, outInt32, right); }
    /** Category indices drawn from this tensor's rows of weights, with the default generator. */
    public Tensor multinomial(long numSamples) { return Sorting.multinomial(this, numSamples, false, Generator.defaultGenerator()); }
    public Tensor multinomial(long numSamples, boolean replacement) {
        return Sorting.multinomial(this, numSamples, replacement, Generator.defaultGenerator());
    }
    public Tensor multinomial(long numSamples, boolean replacement, Generator generator) {
        return Sorting.multinomial(this, numSamples, replacement, generator);
    }
    /** 1 with this tensor's elementwise probability, else 0 (default generator). */
    public Tensor bernoulli() { return Sorting.bernoulli(this, Generator.defaultGenerator()); }
    public Tensor bernoulli(Generator generator) { return Sorting.bernoulli(this, generator); }
    /** A tensor of this one's shape and dtype holding 1 with probability p. */
    public Tensor bernoulli(double p) { return Sorting.bernoulli(this, p, Generator.defaultGenerator()); }
    public Tensor bernoulli(double p, Generator generator) { return Sorting.bernoulli(this, p, generator); }

    // ------------------------------------------------------------------ in-place random fills (op/RandomOps)

    /** Fills this tensor with 1 with probability p, else 0, in place. */
    public Tensor bernoulli_(double p) { return Sorting.bernoulli_(this, p, Generator.defaultGenerator()); }
    public Tensor bernoulli_(double p, Generator generator) { return Sorting.bernoulli_(this, p, generator); }
    /** Fills this tensor with 1 with the probabilities {@code p} (broadcast to this shape), else 0, in place. */
    public Tensor bernoulli_(Tensor p) { return Sorting.bernoulli_(this, p, Generator.defaultGenerator()); }
    public Tensor bernoulli_(Tensor p, Generator generator) { return Sorting.bernoulli_(this, p, generator); }
    /** Fills this tensor with uniform samples in {@code [from, to)}, in place. */
    public Tensor uniform_(double from, double to) { return uniform_(from, to, Generator.defaultGenerator()); }
    public Tensor uniform_(double from, double to, Generator generator) { return Sorting.fill("uniform_", RandomOps.UNIFORM, this, generator, from, to); }
    /** Fills this tensor with normal samples of {@code mean} and {@code std}, in place. */
    public Tensor normal_(double mean, double std) { return Sorting.fill("normal_", RandomOps.NORMAL, this, Generator.defaultGenerator(), mean, std); }
    public Tensor normal_(double mean, double std, Generator generator) { return Sorting.fill("normal_", RandomOps.NORMAL, this, generator, mean, std); }
    /** Fills this tensor with integers uniform in {@code [from, to)}, in place. */
    public Tensor random_(long from, long to) { return random_(from, to, Generator.defaultGenerator()); }
    public Tensor random_(long from, long to, Generator generator) {
        Arguments.nonNull("random_", "generator", generator);
        checkWritable("random_"); // a read-only tensor's error before the arguments'
        if (to <= from) {
            throw new IllegalArgumentException("random_ expects 'from' to be less than 'to', but got from=" + from + " >= to=" + to);
        }
        return Dispatcher.callInPlace(RandomOps.RANDOM, new Tensor[] {this}, RandomOps.randomScalars(from, to, generator.id()));
    }
    /** Fills this tensor with integers uniform in {@code [0, to)}, in place. */
    public Tensor random_(long to) { return random_(0, to, Generator.defaultGenerator()); }
    /** Fills this tensor with exponential samples of rate {@code lambd}, in place. */
    public Tensor exponential_(double lambd) { return exponential_(lambd, Generator.defaultGenerator()); }
    public Tensor exponential_(double lambd, Generator generator) { return Sorting.fill("exponential_", RandomOps.EXPONENTIAL, this, generator, lambd); }
    /** Fills this tensor with the trial counts to a first success of probability {@code p}, in place. */
    public Tensor geometric_(double p) { return geometric_(p, Generator.defaultGenerator()); }
    public Tensor geometric_(double p, Generator generator) { return Sorting.fill("geometric_", RandomOps.GEOMETRIC, this, generator, p); }
    /** Fills this tensor with log-normal samples: exp of normal samples of {@code mean} and {@code std}, in place. */
    public Tensor logNormal_(double mean, double std) { return logNormal_(mean, std, Generator.defaultGenerator()); }
    public Tensor logNormal_(double mean, double std, Generator generator) {
        return Sorting.fill("log_normal_", RandomOps.LOG_NORMAL, this, generator, mean, std);
    }
    /** Fills this tensor with Cauchy samples of {@code median} and {@code sigma}, in place. */
    public Tensor cauchy_(double median, double sigma) { return cauchy_(median, sigma, Generator.defaultGenerator()); }
    public Tensor cauchy_(double median, double sigma, Generator generator) {
        return Sorting.fill("cauchy_", RandomOps.CAUCHY, this, generator, median, sigma);
    }

    // ------------------------------------------------------------------ pointwise composites (ops/Pointwise.java)

    /** {@code this + value * tensor1 * tensor2} */
    public Tensor addcmul(Tensor tensor1, Tensor tensor2, double value) {
        Arguments.nonNull("addcmul", "tensor1", tensor1);
        Arguments.nonNull("addcmul", "tensor2", tensor2);
        return Pointwise.addcmul(this, tensor1, tensor2, value);
    }
    public Tensor addcmul_(Tensor tensor1, Tensor tensor2, double value) {
        Arguments.nonNull("addcmul_", "tensor1", tensor1);
        Arguments.nonNull("addcmul_", "tensor2", tensor2);
        return Pointwise.addcmul_(this, tensor1, tensor2, value);
    }
    /** {@code this + value * tensor1 / tensor2} (floating tensors) */
    public Tensor addcdiv(Tensor tensor1, Tensor tensor2, double value) {
        Arguments.nonNull("addcdiv", "tensor1", tensor1);
        Arguments.nonNull("addcdiv", "tensor2", tensor2);
        return Pointwise.addcdiv(this, tensor1, tensor2, value);
    }
    public Tensor addcdiv_(Tensor tensor1, Tensor tensor2, double value) {
        Arguments.nonNull("addcdiv_", "tensor1", tensor1);
        Arguments.nonNull("addcdiv_", "tensor2", tensor2);
        return Pointwise.addcdiv_(this, tensor1, tensor2, value);
    }
    /** {@code this += weight * (end - this)} */
    public Tensor lerp_(Tensor end, double weight) {
        Arguments.nonNull("lerp_", "end", end);
        return Pointwise.lerp_(this, end, weight);
    }

    // ------------------------------------------------------------------ rearranging (ops/Rearranging.java)

    /** {@code torch.flip}: a copy with the order of elements reversed along each of {@code dims}. */
    public Tensor flip(int... dims) { return Rearranging.flip(this, dims); }
    public Tensor fliplr() { return Rearranging.fliplr(this); }
    public Tensor flipud() { return Rearranging.flipud(this); }
    /** {@code torch.roll} along one dim, wrapping around. */
    public Tensor roll(long shift, int dim) { return Rearranging.roll(this, new long[] {shift}, new int[] {dim}); }
    /** {@code torch.roll}; with no dims, over the flattened tensor. */
    public Tensor roll(long[] shifts, int... dims) { return Rearranging.roll(this, shifts, dims); }
    /** {@code torch.rot90(k=1, dims=[0, 1])}. */
    public Tensor rot90() { return Rearranging.rot90(this, 1, new int[] {0, 1}); }
    public Tensor rot90(int k, int dim0, int dim1) { return Rearranging.rot90(this, k, new int[] {dim0, dim1}); }
    /** {@code x.repeat(sizes)}: tiled {@code sizes[i]} times along dim i (a copy). */
    public Tensor repeat(long... sizes) { return Rearranging.repeat(this, sizes); }
    public Tensor tile(long... dims) { return Rearranging.tile(this, dims); }
    /** {@code repeat_interleave} over the flattened tensor. */
    public Tensor repeatInterleave(long repeats) { return Rearranging.repeatInterleave(this, repeats, null); }
    public Tensor repeatInterleave(long repeats, int dim) { return Rearranging.repeatInterleave(this, repeats, dim); }
    public Tensor repeatInterleave(Tensor repeats) { return Rearranging.repeatInterleave(this, repeats, null); }
    public Tensor repeatInterleave(Tensor repeats, int dim) { return Rearranging.repeatInterleave(this, repeats, dim); }
    public Tensor tril() { return Rearranging.tril(this, 0); }
    public Tensor tril(long diagonal) { return Rearranging.tril(this, diagonal); }
    public Tensor triu() { return Rearranging.triu(this, 0); }
    public Tensor triu(long diagonal) { return Rearranging.triu(this, diagonal); }
    /** {@code torch.diag}: a vector's diagonal matrix, or a copy of a matrix's diagonal. */
    public Tensor diag() { return Rearranging.diag(this, 0); }
    public Tensor diag(long diagonal) { return Rearranging.diag(this, diagonal); }
    /** {@code torch.diagonal}: a view of the diagonal of dims 0 and 1. */
    public Tensor diagonal() { return diagonal(0, 0, 1); }
    public Tensor diagonal(long offset, int dim1, int dim2) { return Views.diagonal(this, offset, dim1, dim2); }
    public Tensor trace() { return Rearranging.trace(this); }
    /** {@code torch.cross} along the first dim of size 3 (PyTorch 1.13's default). */
    public Tensor cross(Tensor other) { return Linalg.cross(this, other, null); }
    public Tensor cross(Tensor other, int dim) { return Linalg.cross(this, other, dim); }

    // ------------------------------------------------------------------ like-this constructors

    /** {@code view_as}: a view with {@code other}'s shape. */
    public Tensor viewAs(Tensor other) {
        Arguments.nonNull("viewAs", "other", other);
        return view(other.shape);
    }

    /**
     * {@code type_as}: this tensor in {@code other}'s dtype and on its device (PyTorch's {@code self.type(other.type())}:
     * a type such as {@code torch.cuda.FloatTensor} names the device too).
     */
    public Tensor typeAs(Tensor other) {
        Arguments.nonNull("typeAs", "other", other);
        other.checkOpen("typeAs");
        return to(other.device(), other.dtype);
    }

    /** {@code new_zeros}: zeros of {@code shape} with this tensor's dtype and device. */
    public Tensor newZeros(long... shape) { return Torch.zeros(shape, dtype, device()); }
    public Tensor newOnes(long... shape) { return Torch.ones(shape, dtype, device()); }
    public Tensor newFull(long[] shape, double value) { return Torch.full(shape, value, dtype, device()); }
    /** {@code new_empty}: uninitialised memory of {@code shape} with this tensor's dtype and device. */
    public Tensor newEmpty(long... shape) { return Torch.empty(shape, dtype, device()); }

    // ------------------------------------------------------------------ printing

    @Override
    public String toString() {
        if (closed || storage.isReleased() || storage.unreadableReason() != null) return "tensor(<closed>, shape=" + Shapes.format(shape) + ", dtype=" + dtype + ")";
        return TensorFormatter.format(this);
    }

    // ------------------------------------------------------------------ view autograd (org.jtorch.autograd.AutogradMeta)

    /**
     * For the view front end ({@link Views}): a new tensor over this one's memory with geometry {@code v} (holding a storage
     * reference of its own), made by a view op's call. It remembers its base for in-place ops on it; made from a graph
     * tensor with grad mode off, it is marked instead, so that in-place ops on it are refused. Recording the call for
     * autograd is the caller's.
     */
    public Tensor trackedView(ViewOps.Geometry v) {
        Tensor r = view(Arguments.nonNull("trackedView", "v", v));
        AutogradMeta.trackView(this, r);
        return r;
    }

    /**
     * For the view front end ({@link Views#alias}): another handle to this tensor, with a storage reference of its own and
     * this tensor's place in the graph (a leaf's gradient still goes to this leaf) and view state.
     */
    public Tensor sameTensorView() {
        AutogradMeta.refreshViewHistoryOf(this);
        return AutogradMeta.copyToAlias(this, view(shape, strides, offset));
    }

    /**
     * The tensor this one is a differentiable view of, as PyTorch's {@code _base} (null for a tensor that owns its
     * layout): an in-place op on this view rewrites the base's history (for autograd).
     */
    public Tensor viewBase() { return AutogradMeta.viewBase(this); }

    /**
     * For op implementations: this view is output {@code index} of a call that returns several views ({@code split},
     * {@code chunk}, {@code unbind}; {@code node} is PyTorch's backward name, e.g. {@code SplitBackward0}). As in PyTorch,
     * in-place ops on it (or on views of it) are refused under autograd.
     */
    public void markMultiOutputView(String node, int index) { AutogradMeta.markMultiOutputView(this, node, index); }

    /** {@code "Output i of <Node>"} when this is (a view of) one of several views one call returned, else null. */
    public String multiOutputView() { return AutogradMeta.multiOutputView(this); }

    /** Whether this is a view of a tensor that requires grad made with grad mode off (in-place ops on it are refused under autograd). */
    public boolean isNoGradViewOfGraphTensor() { return AutogradMeta.isNoGradViewOfGraph(this); }
}
