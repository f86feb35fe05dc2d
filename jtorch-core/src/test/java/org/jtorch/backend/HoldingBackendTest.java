package org.jtorch.backend;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.backend.cpu.CpuBackend;
import org.jtorch.memory.Storage;
import org.jtorch.memory.StorageCleaner;
import org.jtorch.op.ReduceOp;
import org.jtorch.op.StridedView;
import org.jtorch.ops.Dispatcher;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;

/**
 * The lifetime contract of a kernel call (issue 19, defect 1): a kernel holds a reference on its operands'
 * storages for its whole duration, so a tensor closed meanwhile keeps its memory until the kernel returns,
 * and a kernel that starts on released memory fails with the closed-tensor error.
 */
class HoldingBackendTest {
    /** The CPU backend whose {@code fill} kernel signals that it started, then waits for a go-ahead. */
    private static Backend blockingFill(CountDownLatch started, CountDownLatch proceed) {
        Backend cpu = CpuBackend.get();
        return (Backend) Proxy.newProxyInstance(Backend.class.getClassLoader(), new Class<?>[] {Backend.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("fill")) {
                        started.countDown();
                        assertTrue(proceed.await(30, TimeUnit.SECONDS));
                    }
                    try {
                        return method.invoke(cpu, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    private static long allocatedBytes() {
        return Torch.memoryStats(Device.cpu()).allocatedBytes();
    }

    @Test
    void aTensorClosedWhileAKernelRunsKeepsItsMemoryUntilTheKernelReturns() throws InterruptedException {
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        Backend backend = new HoldingBackend(blockingFill(started, proceed));
        // Earlier tests' unreachable tensors are returned first, so that no collection frees them mid-count.
        StorageCleaner.collect();
        long before = allocatedBytes();
        Tensor t = Torch.zeros(256, 256);
        Storage storage = t.storage();
        long allocated = allocatedBytes();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread kernel = new Thread(() -> {
            try {
                backend.fill(Dispatcher.view(t), 3.0, 3);
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        kernel.start();
        assertTrue(started.await(30, TimeUnit.SECONDS));

        t.close();
        assertTrue(t.isClosed());
        assertThrows(IllegalStateException.class, () -> t.sum(), "a use after close() raises at once");
        assertFalse(storage.isReleased(), "the running kernel still holds the storage");
        assertEquals(allocated, allocatedBytes(), "the block is not freed while the kernel runs");

        proceed.countDown();
        kernel.join(30_000);
        assertEquals(null, failure.get());
        assertTrue(storage.isReleased(), "the kernel's return drops the last reference");
        assertEquals(before, allocatedBytes(), "and the block goes back to the allocator");
    }

    @Test
    void aKernelOnAReleasedStorageFailsWithTheClosedTensorErrorNamingTheOp() {
        Tensor x = Torch.ones(4, 4);
        Tensor out = Torch.zeros(1, 1);
        Tensor outView = out.expand(4, 4);
        // The views are taken first: the tensor is closed (by another thread, say) between that and the kernel call.
        StridedView in = Dispatcher.view(x);
        StridedView outKernelView = Dispatcher.view(outView);
        x.close();
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> Backends.of(Device.cpu()).reductions().reduce(ReduceOp.SUM, in, outKernelView, 0));
        assertEquals("sum: tensor of shape [4, 4] and dtype torch.float32 was used after close()", e.getMessage());
        assertEquals(2, out.storage().refCount(), "the operands held before the failure are dropped again");
        outView.close();
        out.close();
    }

    @Test
    void everyOperandIsDroppedWhenALaterOneWasReleased() {
        Tensor cond = Torch.ones(3).gt(0.0);
        Tensor a = Torch.ones(3);
        Tensor b = Torch.ones(3);
        Tensor out = Torch.empty(3);
        // The views are taken first: b is closed between that and the kernel call.
        StridedView[] views = {Dispatcher.view(cond), Dispatcher.view(a), Dispatcher.view(b), Dispatcher.view(out)};
        b.close();
        assertThrows(IllegalStateException.class, () -> Backends.of(Device.cpu()).where(views[0], views[1], views[2], views[3]));
        assertEquals(1, cond.storage().refCount());
        assertEquals(1, a.storage().refCount());
        assertEquals(1, out.storage().refCount());
        cond.close();
        a.close();
        out.close();
    }

    @Test
    void opsLeaveTheirOperandsWithTheReferencesTheyHadBefore() {
        Tensor a = Torch.ones(3);
        Tensor b = Torch.full(new long[] {3}, 2.0, DType.FLOAT32, Device.cpu());
        Tensor mask = a.gt(0.0);
        List<Tensor> results = List.of(a.add(b), a.mul(2.0), a.sum(), Torch.where(mask, a, b), a.exp(),
                a.indexSelect(0, Torch.tensor(new long[] {2, 0})), a.cumsum(0), a.softmax(0));
        a.add_(b);
        a.mul_(a);
        Torch.where(mask, a, b).close();
        assertArrayEquals(new float[] {9, 9, 9}, a.toFloatArray());
        for (Tensor t : List.of(a, b, mask)) assertEquals(1, t.storage().refCount());
        for (Tensor r : results) {
            assertEquals(1, r.storage().refCount());
            r.close();
        }
        a.close();
        b.close();
        mask.close();
    }
}
