package org.jtorch.cuda;

import java.util.ArrayDeque;
import org.jtorch.cuda.driver.CuConstants;
import org.jtorch.cuda.driver.CudaDriver;

/** {@link DeviceMemory} on the CUDA driver: {@code cuMemAlloc}/{@code cuMemFree} and pooled timing-free events. */
final class DriverDeviceMemory implements DeviceMemory {
    private final CudaRuntime runtime;
    private final CudaDriver driver;
    private final int ordinal;
    private final ArrayDeque<Long> eventPool = new ArrayDeque<>();

    DriverDeviceMemory(CudaRuntime runtime, int ordinal) {
        this.runtime = runtime;
        this.driver = runtime.driver();
        this.ordinal = ordinal;
    }

    @Override
    public long malloc(long bytes) {
        runtime.makeCurrent(ordinal);
        return driver.memAllocOrZero(bytes);
    }

    @Override
    public long mallocDuringCapture(long bytes) {
        runtime.makeCurrent(ordinal);
        // Safe as long as the memory is not freed before the graph's replays: graph pools keep their segments.
        int previous = driver.threadExchangeStreamCaptureMode(CuConstants.CU_STREAM_CAPTURE_MODE_RELAXED);
        try {
            return driver.memAllocOrZero(bytes);
        } finally {
            driver.threadExchangeStreamCaptureMode(previous);
        }
    }

    @Override
    public void free(long address) {
        runtime.makeCurrent(ordinal);
        driver.memFree(address);
    }

    @Override
    public synchronized long recordEvent(long stream) {
        runtime.makeCurrent(ordinal);
        Long pooled = eventPool.pollLast();
        long event = pooled != null ? pooled : driver.eventCreate(CuConstants.CU_EVENT_DISABLE_TIMING);
        driver.eventRecord(event, stream);
        return event;
    }

    @Override
    public boolean eventCompleted(long event) {
        return driver.eventQuery(event);
    }

    @Override
    public void synchronizeEvent(long event) {
        driver.eventSynchronize(event);
    }

    @Override
    public synchronized void releaseEvent(long event) {
        eventPool.addLast(event);
    }

    @Override
    public String name() {
        return "cuda:" + ordinal;
    }
}
