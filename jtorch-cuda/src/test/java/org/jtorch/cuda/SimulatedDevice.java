package org.jtorch.cuda;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * An in-process stand-in for a GPU's memory API, for testing {@link CudaCachingAllocator}'s algorithm:
 * a capacity limit, distinct addresses, and events whose completion the test controls per stream
 * (as if the stream's kernels finished). It checks what a driver would reject: freeing an unknown
 * address, querying a released event.
 */
final class SimulatedDevice implements DeviceMemory {
    private final long capacity;
    private long used;
    private long nextAddress = 0x7f00_0000_0000L;
    final Map<Long, Long> live = new HashMap<>();
    final List<Long> mallocSizes = new ArrayList<>();
    private long nextEvent = 1;
    private final Map<Long, Long> eventStream = new HashMap<>();
    private final Set<Long> completed = new HashSet<>();
    private final Set<Long> released = new HashSet<>();
    int eventsRecorded;
    int eventsSynchronized;
    /** Set by a test while a stream capture is under way: the calls the driver refuses then fail the test. */
    boolean capturing;
    int mallocsDuringCapture;

    SimulatedDevice(long capacity) {
        this.capacity = capacity;
    }

    @Override
    public long malloc(long bytes) {
        refusedDuringCapture("cuMemAlloc outside relaxed capture mode");
        return allocate(bytes);
    }

    @Override
    public long mallocDuringCapture(long bytes) {
        mallocsDuringCapture++;
        return allocate(bytes);
    }

    private void refusedDuringCapture(String call) {
        if (capturing) throw new AssertionError(call + " during a capture (the driver refuses it)");
    }

    private long allocate(long bytes) {
        if (used + bytes > capacity) return 0;
        long address = nextAddress;
        nextAddress += (bytes + (1 << 21)) & ~((1L << 21) - 1); // leave a gap: segments are never adjacent
        live.put(address, bytes);
        used += bytes;
        mallocSizes.add(bytes);
        return address;
    }

    @Override
    public void free(long address) {
        refusedDuringCapture("cuMemFree");
        Long size = live.remove(address);
        if (size == null) throw new AssertionError("free of unknown address 0x" + Long.toHexString(address));
        used -= size;
    }

    @Override
    public long recordEvent(long stream) {
        refusedDuringCapture("an allocator's event record");
        long e = nextEvent++;
        eventStream.put(e, stream);
        eventsRecorded++;
        return e;
    }

    @Override
    public boolean eventCompleted(long event) {
        refusedDuringCapture("cuEventQuery");
        if (released.contains(event)) throw new AssertionError("query of released event " + event);
        return completed.contains(event);
    }

    @Override
    public void synchronizeEvent(long event) {
        refusedDuringCapture("cuEventSynchronize");
        eventsSynchronized++;
        completed.add(event);
    }

    @Override
    public void releaseEvent(long event) {
        if (!released.add(event)) throw new AssertionError("event " + event + " released twice");
    }

    @Override
    public String name() {
        return "cuda-sim";
    }

    /** The stream's enqueued work finished: every event recorded on it so far completes. */
    void finishStream(long stream) {
        for (Map.Entry<Long, Long> e : eventStream.entrySet()) if (e.getValue() == stream) completed.add(e.getKey());
    }

    long used() {
        return used;
    }
}
