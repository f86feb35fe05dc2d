package org.jtorch.autograd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.junit.jupiter.api.Test;

/**
 * A tensor's autograd state ({@link AutogradMeta}, as PyTorch's) exists only once the tensor needs it: a tensor that never
 * meets autograd holds none, and reading its autograd properties or clearing them does not make one.
 */
class AutogradMetaTest {

    @Test
    void tensorsThatNeverMeetAutogradHoldNoState() {
        Tensor a = Torch.ones(2, 3);
        Tensor sum = a.add(a);
        Tensor detached = a.detach();
        a.requiresGrad_(false);
        a.setGrad(null);
        a.detach_();
        a.retainGrad();
        assertFalse(a.requiresGrad());
        assertNull(a.gradFn());
        assertNull(a.grad());
        assertTrue(a.isLeaf());
        assertEquals(0, a.outputNr());
        assertTrue(a.gradHooks().isEmpty());
        assertTrue(a.postAccumulateGradHooks().isEmpty());
        assertNull(a.viewBase());
        for (Tensor t : new Tensor[] {a, sum, detached}) assertNull(t.autogradMeta());
    }

    @Test
    void opsOnLeavesWithGradModeOffRecordNoState() {
        Tensor w = Torch.ones(3).requiresGrad_();
        Tensor y;
        try (Grad.Mode m = Grad.noGrad()) {
            y = w.mul(2.0);
        }
        assertNull(y.autogradMeta());
        assertNotNull(w.autogradMeta());
    }

    @Test
    void stateIsMadeForAnOpsOutputInAGraph() {
        Tensor w = Torch.ones(3).requiresGrad_();
        Tensor y = w.mul(2.0);
        assertNotNull(y.autogradMeta());
        assertEquals("MulBackward0", y.gradFn().name());
    }

    /** As PyTorch: {@code x = zeros(3); v = x[:2]; v.copy_(w * 2)} gives x the history {@code CopySlices}. */
    @Test
    void aViewOfATensorThatNeedsNoGradStillFollowsItsBase() {
        Tensor x = Torch.zeros(3);
        Tensor v = x.narrow(0, 0, 2);
        assertSame(x, v.viewBase());
        Tensor w = Torch.ones(2).requiresGrad_();
        v.copy_(w.mul(2.0));
        assertTrue(x.requiresGrad());
        assertEquals("CopySlices", x.gradFn().name());
        assertEquals("AsStridedBackward0", v.gradFn().name());
        x.sum().backward();
        assertArrayEquals(new float[] {2f, 2f}, w.grad().toFloatArray());
    }
}
