package org.jtorch.cuda;

import java.lang.foreign.MemorySegment;
import org.jtorch.cuda.driver.CuConstants;
import org.jtorch.cuda.driver.CudaDriver;

/**
 * Page-locked host memory from the driver for {@link PinnedHostAllocator}: {@code cuMemHostAlloc} with
 * {@code CU_MEMHOSTALLOC_PORTABLE} (pinned for every context, so batches can go to any device) and
 * {@code cuMemFreeHost}. Events are created in the context current at {@link #recordEvent} (the copy's
 * device, which the copy made current) and destroyed when released, since a pooled event could belong to
 * another device's context.
 */
final class DriverPinnedMemory implements DeviceMemory {
    private final CudaRuntime runtime;
    private final CudaDriver driver;

    DriverPinnedMemory(CudaRuntime runtime) {
        this.runtime = runtime;
        this.driver = runtime.driver();
    }

    @Override
    public long malloc(long bytes) {
        runtime.makeCurrent(0); // cuMemHostAlloc needs a current context; PORTABLE makes the memory every context's
        try {
            return driver.memHostAlloc(bytes, CuConstants.CU_MEMHOSTALLOC_PORTABLE).address();
        } catch (CudaException e) {
            if (e.code() == CuConstants.CUDA_ERROR_OUT_OF_MEMORY) return 0;
            throw e;
        }
    }

    @Override
    public void free(long address) {
        runtime.makeCurrent(0);
        driver.memFreeHost(MemorySegment.ofAddress(address));
    }

    @Override
    public long recordEvent(long stream) {
        long event = driver.eventCreate(CuConstants.CU_EVENT_DISABLE_TIMING);
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
    public void releaseEvent(long event) {
        driver.eventDestroy(event);
    }

    @Override
    public String name() {
        return "cuMemHostAlloc";
    }
}
