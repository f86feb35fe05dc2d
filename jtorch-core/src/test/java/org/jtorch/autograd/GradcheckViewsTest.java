package org.jtorch.autograd;

import static org.jtorch.autograd.GradcheckSupport.on;
import static org.jtorch.autograd.GradcheckSupport.assertNode;
import static org.jtorch.autograd.GradcheckSupport.gradcheck;
import static org.jtorch.autograd.GradcheckSupport.input;
import static org.jtorch.autograd.GradcheckSupport.other;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.memory.MemoryScope;
import org.jtorch.Torch;
import org.jtorch.testing.Fixtures;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * Backward formulas of the view ops and copies checked against central finite differences in
 * float64 ({@link Gradcheck}, PyTorch's tolerances). Views whose elements overlap ({@code expand},
 * {@code unfold} with step < size, {@code asStrided} with repeated positions) must sum the gradient
 * of every place an input element appears.
 */
class GradcheckViewsTest {

    /** The view itself is the output; a view result is closed by gradcheck, which leaves the input open. */
    @Test
    void viewAndReshape() {
        try (Tensor x = input(2, 3, 4)) {
            gradcheck(a -> a[0].view(6, 4), x);
            gradcheck(a -> a[0].view(-1), x);
            gradcheck(a -> a[0].reshape(4, -1), x);
            assertNode("ViewBackward0", a -> a[0].view(6, 4), x);
        }
    }

    @Test
    void reshapeOfANonViewableTensorCopies() {
        try (Tensor x = input(3, 4)) {
            gradcheck(a -> {
                try (Tensor t = a[0].t()) {
                    return t.reshape(12);
                }
            }, x);
            gradcheck(a -> {
                try (Tensor t = a[0].t()) {
                    return t.flatten();
                }
            }, x);
        }
    }

    @Test
    void permuteTransposeAndMatrixTransposes() {
        try (Tensor x = input(2, 3, 4); Tensor m = input(3, 4)) {
            gradcheck(a -> a[0].permute(2, 0, 1), x);
            gradcheck(a -> a[0].transpose(0, -1), x);
            gradcheck(a -> a[0].mT(), x);
            gradcheck(a -> a[0].t(), m);
            assertNode("PermuteBackward0", a -> a[0].permute(1, 0), m);
            assertNode("TransposeBackward0", a -> a[0].transpose(0, 1), m);
        }
    }

    @Test
    void squeezeUnsqueezeFlattenUnflatten() {
        try (Tensor x = input(2, 1, 3, 1)) {
            gradcheck(a -> a[0].squeeze(), x);
            gradcheck(a -> a[0].squeeze(1), x);
            gradcheck(a -> a[0].unsqueeze(0), x);
            gradcheck(a -> a[0].unsqueeze(-1), x);
            gradcheck(a -> a[0].flatten(1, 2), x);
            gradcheck(a -> a[0].unflatten(2, 3, 1), x);
        }
    }

    @Test
    void expandSumsOverTheBroadcastDimensions() {
        try (Tensor x = input(3, 1); Tensor s = input()) {
            gradcheck(a -> a[0].expand(2, 3, 4), x);
            gradcheck(a -> a[0].expand(3, -1), x);
            gradcheck(a -> a[0].expand(2, 2), s);
            assertNode("ExpandBackward0", a -> a[0].expand(3, 4), x);
        }
    }

    @Test
    void narrowSelectAndSliceWithStep() {
        try (Tensor x = input(5, 4)) {
            gradcheck(a -> a[0].narrow(0, 1, 3), x);
            gradcheck(a -> a[0].narrow(1, -2, 2), x);
            gradcheck(a -> a[0].select(0, 2), x);
            gradcheck(a -> a[0].select(-1, -1), x);
            gradcheck(a -> a[0].slice(0, 0, 5, 2), x);
            gradcheck(a -> a[0].slice(1, 1, 100, 3), x);
            assertNode("SliceBackward0", a -> a[0].slice(0, 0, 5, 2), x);
            assertNode("SelectBackward0", a -> a[0].select(0, 2), x);
        }
    }

    @Test
    void unfoldWithOverlappingAndDisjointWindows() {
        try (Tensor x = input(7); Tensor m = input(3, 6)) {
            gradcheck(a -> a[0].unfold(0, 3, 1), x);
            gradcheck(a -> a[0].unfold(0, 2, 3), x);
            gradcheck(a -> a[0].unfold(1, 4, 2), m);
            gradcheck(a -> a[0].unfold(0, 2, 1), m);
        }
    }

    @Test
    void asStridedIncludingOverlappingPositions() {
        try (Tensor x = input(6)) {
            gradcheck(a -> a[0].asStrided(new long[] {2, 3}, new long[] {3, 1}, 0), x);
            gradcheck(a -> a[0].asStrided(new long[] {3, 3}, new long[] {1, 1}, 1), x);
            gradcheck(a -> a[0].asStrided(new long[] {4}, new long[] {0}, 2), x);
        }
    }

    @Test
    void asStridedOfAView() {
        try (Tensor x = input(4, 3)) {
            gradcheck(a -> {
                try (Tensor t = a[0].t()) {
                    return t.asStrided(new long[] {2, 2}, new long[] {1, 3}, 1);
                }
            }, x);
        }
    }

    @Test
    void chainsOfViews() {
        try (Tensor x = input(4, 6)) {
            gradcheck(a -> {
                try (Tensor t = a[0].t(); Tensor s = t.slice(0, 1, 6, 2); Tensor u = s.unsqueeze(1)) {
                    return u.expand(3, 2, 4);
                }
            }, x);
        }
    }

    @Test
    void cloneAndContiguous() {
        try (Tensor x = input(3, 4)) {
            gradcheck(a -> a[0].clone(), x);
            gradcheck(a -> {
                try (Tensor t = a[0].t()) {
                    return t.contiguous();
                }
            }, x);
            assertNode("CloneBackward0", a -> a[0].clone(), x);
        }
    }

    @Test
    void conversionToFloat64AndBackGivesAFloat32Gradient() {
        try (Tensor f = on(Torch.tensor(new float[] {1, 2, 3}, 3)).requiresGrad_();
             Tensor d = f.to(DType.FLOAT64); Tensor sq = d.mul(d); Tensor back = sq.to(DType.FLOAT32);
             Tensor ones = Torch.onesLike(back)) {
            assertEquals("ToCopyBackward0", d.gradFn().name());
            back.backward(ones);
            assertEquals(DType.FLOAT32, f.grad().dtype());
            assertArrayEquals(new float[] {2, 4, 6}, f.grad().toFloatArray());
        }
        try (Tensor x = input(3)) {
            // float32 rounding in the middle: a larger finite-difference step
            assertTrue(Gradcheck.check(a -> {
                try (Tensor t = a[0].to(DType.FLOAT32)) {
                    return t.to(DType.FLOAT64);
                }
            }, new Tensor[] {x}, 1e-3, 1e-4, 1e-3));
        }
    }

    @Test
    void copyIntoANonLeafRoutesTheGradientToTheSource() {
        try (Tensor x = input(3, 4); Tensor src = other(3, 4); Tensor row = other(4)) {
            gradcheck(a -> a[0].mul(2.0).copy_(a[1]), x, src);
            gradcheck(a -> a[0].mul(2.0).copy_(a[1]), x, row);
            assertNode("CopyBackwards", a -> a[0].mul(2.0).copy_(a[1]), x, src);
        }
    }

    @Test
    void copyFromFloat32SourceIntoFloat64Destination() {
        try (Tensor dst = Torch.zeros(new long[] {2}, DType.FLOAT64, Fixtures.device());
             Tensor src = on(Torch.tensor(new float[] {1, 2}, 2)).requiresGrad_()) {
            dst.copy_(src);
            try (Tensor y = dst.mul(3.0); Tensor ones = Torch.onesLike(y)) {
                y.backward(ones);
            }
            assertEquals(DType.FLOAT32, src.grad().dtype());
            assertArrayEquals(new float[] {3, 3}, src.grad().toFloatArray());
        }
    }

    @Test
    void secondDerivativesFlowThroughCopySlices() {
        // The gradient of sum(y^2), y = x^2 with rows 0-1 scaled by w in place, differentiated again (create_graph).
        try (MemoryScope scope = new MemoryScope(); Tensor x = input(3, 2); Tensor w = input(2)) {
            gradcheck(a -> {
                Tensor y = a[0].mul(a[0]);
                y.narrow(0, 0, 2).mul_(a[1]);
                Tensor loss = y.mul(y).sum();
                return Autograd.grad(new Tensor[] {loss}, new Tensor[] {a[0]}, null, true, true, false)[0];
            }, x, w);
        }
    }

    @Test
    void inPlaceOnAViewOfALeafThatRequiresGradIsRefused() {
        try (Tensor x = input(3, 4); Tensor row = x.select(0, 1)) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> row.mul_(2.0));
            assertTrue(e.getMessage().contains("mul_: a view of a leaf tensor that requires grad"), e.getMessage());
        }
    }

    @Test
    void inPlaceOnAViewOfAGraphTensorPassesGradcheck() {
        // y = 2x with row 1 then scaled by 3 through a view: d(sum y)/dx is 2 everywhere but 6 on row 1 (CopySlices).
        try (MemoryScope scope = new MemoryScope(); Tensor x = input(3, 4); Tensor w = input(4)) {
            gradcheck(a -> {
                Tensor y = a[0].mul(2.0);
                y.select(0, 1).mul_(a[1]);
                return y;
            }, x, w);
            Tensor y = x.mul(2.0);
            y.select(0, 1).mul_(w);
            assertEquals("CopySlices", y.gradFn().name());
        }
    }
}
