package org.jtorch.amp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicReference;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.op.CastPolicy;
import org.jtorch.autograd.Grad;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;

/** Autocast scopes: state, nesting, threads, the weight-cast cache, and the CUDA table's entries (PyTorch 1.13's lists). */
class AutocastTest {

    @Test
    void scopeSetsAndRestoresStatePerDeviceType() {
        assertFalse(Autocast.isEnabled(Device.Type.CPU));
        assertEquals(DType.BFLOAT16, Autocast.dtype(Device.Type.CPU));
        assertEquals(DType.FLOAT16, Autocast.dtype(Device.Type.CUDA));
        try (Autocast ac = Autocast.enable(Device.cuda(), DType.BFLOAT16)) {
            assertTrue(Autocast.isEnabled(Device.Type.CUDA));
            assertFalse(Autocast.isEnabled(Device.Type.CPU));
            assertEquals(DType.BFLOAT16, Autocast.dtype(Device.Type.CUDA));
        }
        assertFalse(Autocast.isEnabled(Device.Type.CUDA));
        assertEquals(DType.FLOAT16, Autocast.dtype(Device.Type.CUDA));
    }

    @Test
    void disabledInnerScopeTurnsAutocastOffUntilClosed() {
        try (MemoryScope s = new MemoryScope()) {
            Tensor a = Torch.randn(3, 4);
            Tensor b = Torch.randn(4, 2);
            try (Autocast outer = Autocast.enable(Device.cpu())) {
                assertEquals(DType.BFLOAT16, a.mm(b).dtype());
                try (Autocast inner = Autocast.disable(Device.cpu())) {
                    assertFalse(Autocast.isEnabled(Device.cpu()));
                    assertEquals(DType.FLOAT32, a.mm(b).dtype());
                }
                assertTrue(Autocast.isEnabled(Device.cpu()));
                assertEquals(DType.BFLOAT16, a.mm(b).dtype());
            }
            assertEquals(DType.FLOAT32, a.mm(b).dtype());
        }
    }

    @Test
    void cudaAutocastLeavesCpuTensorsAlone() {
        try (MemoryScope s = new MemoryScope(); Autocast ac = Autocast.enable(Device.cuda())) {
            assertEquals(DType.FLOAT32, Torch.randn(3, 4).mm(Torch.randn(4, 2)).dtype());
        }
    }

    @Test
    void unsupportedDtypesAreRefused() {
        var cpu = assertThrows(IllegalArgumentException.class, () -> Autocast.enable(Device.cpu(), DType.FLOAT16));
        assertTrue(cpu.getMessage().contains("bfloat16"), cpu.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Autocast.enable(Device.cuda(), DType.FLOAT32));
        assertFalse(Autocast.isEnabled(Device.Type.CPU));
    }

    @Test
    void stateIsThreadScoped() throws Exception {
        try (MemoryScope s = new MemoryScope(); Autocast ac = Autocast.enable(Device.cpu())) {
            AtomicReference<DType> other = new AtomicReference<>();
            AtomicReference<Boolean> enabled = new AtomicReference<>();
            Thread t = new Thread(() -> {
                enabled.set(Autocast.isEnabled(Device.Type.CPU));
                try (Tensor a = Torch.randn(2, 2); Tensor r = a.mm(a)) {
                    other.set(r.dtype());
                }
            });
            t.start();
            t.join();
            assertFalse(enabled.get());
            assertEquals(DType.FLOAT32, other.get());
        }
    }

    @Test
    void scopeMustBeClosedOnItsThread() throws Exception {
        Autocast ac = Autocast.enable(Device.cpu());
        AtomicReference<Throwable> error = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                ac.close();
            } catch (Throwable e) {
                error.set(e);
            }
        });
        t.start();
        t.join();
        ac.close();
        assertTrue(error.get() instanceof IllegalStateException);
        assertFalse(Autocast.isEnabled(Device.Type.CPU));
    }

    @Test
    void parameterCastsAreCachedUntilTheOutermostScopeCloses() {
        try (MemoryScope s = new MemoryScope()) {
            Tensor w = Torch.randn(3, 4).requiresGrad_(true);
            Tensor x = Torch.randn(2, 4);
            try (Autocast outer = Autocast.enable(Device.cpu())) {
                Tensor y1 = F.linear(x, w, null);
                try (Autocast inner = Autocast.enable(Device.cpu())) {
                    Tensor y2 = F.linear(x, w, null);
                    assertArrayEquals(y1.toFloatArray(), y2.toFloatArray());
                }
                assertEquals(1, Autocast.cacheSize(), "one cached copy of w, kept past the inner scope");
            }
            assertEquals(0, Autocast.cacheSize());
        }
    }

    @Test
    void onlyGradRequiringFloat32LeavesAreCached() {
        try (MemoryScope s = new MemoryScope(); Autocast ac = Autocast.enable(Device.cpu())) {
            Tensor plain = Torch.randn(3, 4);
            Tensor leaf = Torch.randn(3, 4).requiresGrad_(true);
            Tensor nonLeaf = leaf.mul(2.0);
            Tensor x = Torch.randn(2, 4);
            F.linear(x, plain, null);
            F.linear(x, nonLeaf, null);
            assertEquals(0, Autocast.cacheSize());
            try (Grad.Mode g = Grad.noGrad()) {
                F.linear(x, leaf, null);
            }
            assertEquals(0, Autocast.cacheSize(), "casts made without grad mode are not cached");
            F.linear(x, leaf, null);
            assertEquals(1, Autocast.cacheSize());
        }
        try (MemoryScope s = new MemoryScope(); Autocast ac = Autocast.scope(Device.cpu(), DType.BFLOAT16, true, false)) {
            F.linear(Torch.randn(2, 4), Torch.randn(3, 4).requiresGrad_(true), null);
            assertEquals(0, Autocast.cacheSize(), "cacheEnabled = false");
        }
    }

    @Test
    void cachedCastOutlivesTheMemoryScopeItWasMadeIn() {
        try (MemoryScope s = new MemoryScope()) {
            Tensor w = Torch.randn(3, 4).requiresGrad_(true);
            Tensor x = Torch.randn(2, 4);
            try (Autocast ac = Autocast.enable(Device.cpu())) {
                MemoryScope.run(() -> F.linear(x, w, null));
                Tensor y = F.linear(x, w, null);
                y.sum().backward();
                assertEquals(DType.FLOAT32, w.grad().dtype());
            }
        }
    }

    @Test
    void inPlaceUpdateOfACachedParameterIsSeen() {
        try (MemoryScope s = new MemoryScope(); Autocast ac = Autocast.enable(Device.cpu())) {
            Tensor w = Torch.ones(new long[] {1, 2}).requiresGrad_(true);
            Tensor x = Torch.ones(new long[] {1, 2});
            assertEquals(2.0, F.linear(x, w, null).item());
            try (Grad.Mode g = Grad.noGrad()) {
                w.mul_(2.0);
            }
            assertEquals(4.0, F.linear(x, w, null).item());
        }
    }

    @Test
    void gradientsArriveInEachParametersDtype() {
        try (MemoryScope s = new MemoryScope()) {
            Tensor w32 = Torch.randn(3, 4).requiresGrad_(true);
            Tensor w64 = Torch.randn(3, 3).to(DType.FLOAT64).requiresGrad_(true);
            Tensor x = Torch.randn(2, 4);
            Tensor loss;
            try (Autocast ac = Autocast.enable(Device.cpu())) {
                Tensor h = F.linear(x, w32, null);
                assertEquals(DType.BFLOAT16, h.dtype());
                Tensor h64 = h.to(DType.FLOAT64).mm(w64); // float64 is never cast
                assertEquals(DType.FLOAT64, h64.dtype());
                loss = F.crossEntropy(h64, Torch.tensor(new long[] {0, 2}));
            }
            loss.backward();
            assertEquals(DType.FLOAT32, w32.grad().dtype());
            assertEquals(DType.FLOAT64, w64.grad().dtype());
        }
    }

    /** PyTorch 2.x lists scaled_dot_product_attention as lower precision; a float mask is cast with q, k, v. */
    @Test
    void attentionRunsInBf16WithFloatAndCausalMasks() {
        try (MemoryScope s = new MemoryScope(); Autocast ac = Autocast.enable(Device.cpu())) {
            Tensor q = Torch.randn(2, 3, 4);
            Tensor k = Torch.randn(2, 5, 4);
            Tensor v = Torch.randn(2, 5, 6);
            Tensor mask = Torch.randn(3, 5);
            Tensor out = F.scaledDotProductAttention(q, k, v, mask, 0, false);
            assertEquals(DType.BFLOAT16, out.dtype());
            assertArrayEquals(new long[] {2, 3, 6}, out.shape());
            assertEquals(DType.BFLOAT16, F.scaledDotProductAttention(q, k.narrow(1, 0, 3), v.narrow(1, 0, 3), null, 0, true).dtype());
        }
    }

    @Test
    void cudaTableFollowsPyTorch113() {
        Device.Type cuda = Device.Type.CUDA;
        assertEquals(CastPolicy.LOWER_PRECISION, AutocastPolicy.of("mm", cuda));
        assertEquals(CastPolicy.LOWER_PRECISION, AutocastPolicy.of("conv2d", cuda));
        assertEquals(CastPolicy.LOWER_PRECISION, AutocastPolicy.of("prelu", cuda));
        assertEquals(CastPolicy.FP32, AutocastPolicy.of("exp", cuda));
        assertEquals(CastPolicy.FP32, AutocastPolicy.of("layer_norm", cuda));
        assertEquals(CastPolicy.FP32, AutocastPolicy.of("mse_loss", cuda));
        assertEquals(CastPolicy.FP32_SET_OPT_DTYPE, AutocastPolicy.of("softmax", cuda));
        assertEquals(CastPolicy.FP32_SET_OPT_DTYPE, AutocastPolicy.of("sum", cuda));
        assertEquals(CastPolicy.PROMOTE, AutocastPolicy.of("addcmul", cuda));
        assertEquals(CastPolicy.PROMOTE, AutocastPolicy.of("index_put", cuda));
        assertEquals(CastPolicy.BANNED, AutocastPolicy.of("binary_cross_entropy", cuda));
        assertNull(AutocastPolicy.of("cat", cuda), "cat relies on type promotion on CUDA");
        assertNull(AutocastPolicy.of("cross_entropy_loss", cuda), "decomposes into log_softmax and nll_loss on CUDA");
        assertNull(AutocastPolicy.of("relu", cuda));
    }

    @Test
    void cpuTableDiffersFromCuda() {
        Device.Type cpu = Device.Type.CPU;
        assertNull(AutocastPolicy.of("softmax", cpu));
        assertNull(AutocastPolicy.of("exp", cpu));
        assertEquals(CastPolicy.FP32, AutocastPolicy.of("conv_transpose2d", cpu));
        assertEquals(CastPolicy.FP32, AutocastPolicy.of("cross_entropy_loss", cpu));
        assertEquals(CastPolicy.PROMOTE, AutocastPolicy.of("cat", cpu));
        assertEquals(CastPolicy.FP32, AutocastPolicy.of("binary_cross_entropy", cpu), "allowed on CPU");
    }

    @Test
    void reductionWithAnExplicitDtypeIsNotAutocast() {
        // CPU's prod is FP32 (not FP32_SET_OPT_DTYPE): its input is cast even with a dtype given.
        try (MemoryScope s = new MemoryScope(); Autocast ac = Autocast.enable(Device.cpu())) {
            Tensor x = Torch.randn(2, 3).to(DType.BFLOAT16);
            assertEquals(DType.FLOAT32, x.prod().dtype());
            assertEquals(DType.FLOAT64, x.prod(new int[] {0}, false, DType.FLOAT64).dtype());
            assertEquals(DType.BFLOAT16, x.sum().dtype(), "sum is untouched on CPU");
        }
    }
}
