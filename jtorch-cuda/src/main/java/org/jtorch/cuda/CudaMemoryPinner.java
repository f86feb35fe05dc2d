package org.jtorch.cuda;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import org.jtorch.Tensor;
import org.jtorch.data.Collate;
import org.jtorch.data.MemoryPinner;
import org.jtorch.types.Device;

/**
 * The CUDA {@link MemoryPinner}, registered in {@code META-INF/services}: pins batches in
 * {@link PinnedMemory} (through {@link Tensor#pinMemory()}) and moves them to a device on a side stream.
 *
 * <p>{@link #toDevice}: the device tensors are allocated on the device's copy stream (one non-blocking
 * stream per device, created on first use and kept for the process), every pinned tensor is copied there
 * with {@code to(device, true)} (asynchronous; the pinned blocks stay unused until each copy's event
 * completes), then an event recorded on the copy stream is waited for by the calling thread's current
 * stream, and each new tensor is marked as used by that stream ({@link Cuda#recordStream}) so the
 * allocator does not hand its memory to the copy stream's next batch while compute still reads it. The
 * host never waits. Tensors that are not pinned are copied synchronously (still correct, not overlapped).
 */
public final class CudaMemoryPinner implements MemoryPinner {
    private static final ConcurrentHashMap<Integer, Stream> COPY_STREAMS = new ConcurrentHashMap<>();

    /** For {@link java.util.ServiceLoader}. */
    public CudaMemoryPinner() {}

    @Override
    public boolean isAvailable() {
        return Cuda.isAvailable();
    }

    @Override
    public String unavailableReason() {
        return Cuda.isAvailable() ? "" : "CUDA: " + Cuda.unavailableReason();
    }

    @Override
    public Object pin(Object batch) {
        return Collate.mapTensors(batch, t -> t.device().isCpu() && !t.isPinned() ? t.pinMemory() : t);
    }

    @Override
    public Object toDevice(Object batch, Device device) {
        if (!device.isCuda()) return MemoryPinner.super.toDevice(batch, device);
        Stream copyStream = COPY_STREAMS.computeIfAbsent(device.index(), i -> Stream.create(device));
        Stream compute = Cuda.currentStream(device);
        List<Tensor> moved = new ArrayList<>();
        Object result;
        try (Cuda.StreamScope s = Cuda.withStream(copyStream)) {
            result = Collate.mapTensors(batch, t -> {
                Tensor d = t.to(device, true);
                if (d != t && !d.device().equals(t.device())) moved.add(d);
                return d;
            });
        }
        try (Event copied = copyStream.recordEvent()) {
            compute.waitEvent(copied); // destroying an event that a stream waits on is allowed: the wait stays enqueued
        }
        for (Tensor d : moved) Cuda.recordStream(d, compute);
        return result;
    }

    @Override
    public String toString() {
        return "CUDA pinned memory";
    }
}
