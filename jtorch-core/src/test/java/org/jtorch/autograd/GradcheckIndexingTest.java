package org.jtorch.autograd;

import static org.jtorch.autograd.GradcheckSupport.on;
import static org.jtorch.autograd.GradcheckSupport.assertNode;
import static org.jtorch.autograd.GradcheckSupport.gradcheck;
import static org.jtorch.autograd.GradcheckSupport.input;
import static org.jtorch.autograd.GradcheckSupport.longs;
import static org.jtorch.autograd.GradcheckSupport.mask;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * Backward formulas of the indexing and joining ops (PyTorch's {@code derivatives.yaml}) checked
 * against central finite differences in float64 ({@link Gradcheck}, PyTorch's tolerances). Indices
 * repeat where the op accumulates, so that the formulas' summing is exercised; node names are
 * PyTorch 1.13's {@code grad_fn} names.
 */
class GradcheckIndexingTest {

    // ---------------------------------------------------------------- index_select / gather

    @Test
    void indexSelectWithRepeatedIndices() {
        try (Tensor x = input(3, 4); Tensor i = longs(new long[] {2, 0, 2}, 3)) {
            gradcheck(a -> a[0].indexSelect(1, i), x);
            gradcheck(a -> a[0].indexSelect(0, i), x);
            assertNode("IndexSelectBackward0", a -> a[0].indexSelect(1, i), x);
        }
    }

    @Test
    void indexSelectWithInt32IndexAnd0dInput() {
        try (Tensor x = input(3, 4); Tensor i = on(Torch.tensor(new int[] {1, 1, 3}, 3)); Tensor s = input();
             Tensor zero = longs(new long[] {0}, 1)) {
            gradcheck(a -> a[0].indexSelect(-1, i), x);
            gradcheck(a -> a[0].indexSelect(0, zero), s);
        }
    }

    @Test
    void gatherWithRepeatedIndices() {
        try (Tensor x = input(3, 4); Tensor i = longs(new long[] {0, 0, 3, 1, 2, 2}, 3, 2);
             Tensor i0 = longs(new long[] {2, 2, 0, 1}, 1, 4)) {
            gradcheck(a -> a[0].gather(1, i), x);
            gradcheck(a -> a[0].gather(0, i0), x);
            assertNode("GatherBackward0", a -> a[0].gather(1, i), x);
        }
    }

    // ---------------------------------------------------------------- scatter family

    @Test
    void scatterSelfAndSource() {
        // Distinct targets per column (scatter with duplicate targets is nondeterministic in PyTorch).
        try (Tensor x = input(3, 5); Tensor src = input(2, 5); Tensor i = longs(new long[] {0, 1, 2, 0, 1, 2, 0, 1, 1, 0}, 2, 5)) {
            gradcheck(a -> a[0].scatter(0, i, a[1]), x, src);
            assertNode("ScatterBackward0", a -> a[0].scatter(0, i, a[1]), x, src);
        }
    }

    @Test
    void scatterReadsOnlyTheIndexShapedCornerOfALargerSource() {
        try (Tensor x = input(3, 5); Tensor src = input(3, 6); Tensor i = longs(new long[] {4, 0, 2, 1}, 2, 2)) {
            gradcheck(a -> a[0].scatter(1, i, a[1]), x, src);
            try (Tensor y = x.scatter(1, i, src); Tensor ones = Torch.onesLike(y)) {
                y.backward(ones);
            }
            // Only src[0:2, 0:2] was read.
            assertArrayEquals(new double[] {1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
                    src.grad().toDoubleArray());
        }
    }

    @Test
    void scatterOfAValueHasAGradientForSelfOnly() {
        try (Tensor x = input(3, 4); Tensor i = longs(new long[] {1, 3, 0, 0}, 2, 2)) {
            gradcheck(a -> a[0].scatter(1, i, 2.5), x);
            assertNode("ScatterBackward1", a -> a[0].scatter(1, i, 2.5), x);
        }
    }

    @Test
    void scatterAddWithRepeatedTargets() {
        try (Tensor x = input(3, 4); Tensor src = input(2, 4); Tensor i = longs(new long[] {0, 0, 2, 2, 0, 1, 2, 2}, 2, 4)) {
            gradcheck(a -> a[0].scatterAdd(0, i, a[1]), x, src);
            assertNode("ScatterAddBackward0", a -> a[0].scatterAdd(0, i, a[1]), x, src);
        }
    }

    @Test
    void inPlaceScatterOnANonLeaf() {
        try (Tensor x = input(3, 4); Tensor src = input(1, 4); Tensor i = longs(new long[] {2, 0, 1, 2}, 1, 4)) {
            gradcheck(a -> {
                Tensor y = a[0].mul(2.0);
                y.scatter_(0, i, a[1]);
                return y;
            }, x, src);
            gradcheck(a -> a[0].mul(2.0).scatterAdd_(0, i, a[1]), x, src);
            gradcheck(a -> a[0].mul(2.0).scatter_(0, i, -1.0), x);
        }
    }

    // ---------------------------------------------------------------- index_add / index_copy / index_fill

    @Test
    void indexAddWithAlphaAndRepeatedIndices() {
        try (Tensor x = input(4, 3); Tensor src = input(3, 3); Tensor i = longs(new long[] {3, 0, 3}, 3)) {
            gradcheck(a -> a[0].indexAdd(0, i, a[1], 2.5), x, src);
            gradcheck(a -> a[0].mul(1.0).indexAdd_(0, i, a[1]), x, src);
            assertNode("IndexAddBackward0", a -> a[0].indexAdd(0, i, a[1]), x, src);
        }
    }

    @Test
    void indexCopy() {
        try (Tensor x = input(3, 5); Tensor src = input(3, 2); Tensor i = longs(new long[] {4, 1}, 2)) {
            gradcheck(a -> a[0].indexCopy(1, i, a[1]), x, src);
            gradcheck(a -> a[0].mul(1.0).indexCopy_(1, i, a[1]), x, src);
            assertNode("IndexCopyBackward0", a -> a[0].indexCopy(1, i, a[1]), x, src);
        }
    }

    @Test
    void indexFillWithNegativeIndex() {
        try (Tensor x = input(3, 4); Tensor i = longs(new long[] {-1, 0}, 2)) {
            gradcheck(a -> a[0].indexFill(1, i, 7.0), x);
            gradcheck(a -> a[0].mul(1.0).indexFill_(0, i, 7.0), x);
            assertNode("IndexFillBackward0", a -> a[0].indexFill(1, i, 7.0), x);
        }
    }

    // ---------------------------------------------------------------- masks

    @Test
    void maskedFillBroadcastingSelfAgainstTheMask() {
        try (Tensor x = input(3, 1); Tensor y = input(3, 4);
             Tensor m = mask(new boolean[] {true, false, false, true, false, true, true, false, false, false, true, false}, 3, 4)) {
            gradcheck(a -> a[0].maskedFill(m, 0.5), x);
            gradcheck(a -> a[0].maskedFill(m, 0.5), y);
            gradcheck(a -> a[0].mul(1.0).maskedFill_(m, 0.5), y);
            assertNode("MaskedFillBackward0", a -> a[0].maskedFill(m, 0.5), y);
        }
    }

    @Test
    void maskedSelectBroadcastingSelfAgainstTheMask() {
        try (Tensor x = input(1, 4); Tensor y = input(3, 4);
             Tensor m = mask(new boolean[] {true, false, false, true, false, true, true, false, false, false, true, false}, 3, 4)) {
            gradcheck(a -> a[0].maskedSelect(m), x);
            gradcheck(a -> a[0].maskedSelect(m), y);
            assertNode("MaskedSelectBackward0", a -> a[0].maskedSelect(m), y);
        }
    }

    // ---------------------------------------------------------------- advanced indexing

    @Test
    void advancedIndexWithRepeatedLongIndices() {
        try (Tensor x = input(4, 3); Tensor i = longs(new long[] {3, -1, 0, 3}, 4); Tensor j = longs(new long[] {2, 0, 0, 1}, 4)) {
            gradcheck(a -> a[0].index(i), x);
            gradcheck(a -> a[0].index(i, j), x);
            gradcheck(a -> a[0].index(null, j), x);
            assertNode("IndexBackward0", a -> a[0].index(i), x);
        }
    }

    @Test
    void advancedIndexWithAMaskAndNonAdjacentIndices() {
        try (Tensor x = input(2, 3, 4); Tensor m = mask(new boolean[] {true, false, true}, 3);
             Tensor i = longs(new long[] {1, 0}, 2); Tensor k = longs(new long[] {3, 3}, 2)) {
            gradcheck(a -> a[0].index(null, m), x);
            gradcheck(a -> a[0].index(i, null, k), x);
        }
    }

    @Test
    void indexPutOverwritingAndAccumulating() {
        try (Tensor x = input(3, 4); Tensor v = input(4); Tensor vs = input(2, 4); Tensor i = longs(new long[] {2, 0}, 2);
             Tensor dup = longs(new long[] {1, 1}, 2)) {
            gradcheck(a -> a[0].indexPut(new Tensor[] {i}, a[1], false), x, v);
            gradcheck(a -> a[0].indexPut(new Tensor[] {i}, a[1], false), x, vs);
            gradcheck(a -> a[0].indexPut(new Tensor[] {dup}, a[1], true), x, vs);
            gradcheck(a -> a[0].mul(1.0).indexPut_(new Tensor[] {null, i}, a[1], true), x, input(3, 2));
            assertNode("IndexPutBackward0", a -> a[0].indexPut(new Tensor[] {i}, a[1], false), x, v);
        }
    }

    @Test
    void indexPutWithAMask() {
        try (Tensor x = input(3, 4); Tensor v = input(1);
             Tensor m = mask(new boolean[] {true, false, false, true, false, true, true, false, false, false, true, false}, 3, 4)) {
            gradcheck(a -> a[0].indexPut(new Tensor[] {m}, a[1], false), x, v);
        }
    }

    // ---------------------------------------------------------------- joining and splitting

    @Test
    void catHandsEachInputItsSlice() {
        try (Tensor a0 = input(2, 3); Tensor b0 = input(2, 1); Tensor c0 = input(2, 2)) {
            gradcheck(a -> Torch.cat(new Tensor[] {a[0], a[1], a[2]}, 1), a0, b0, c0);
            gradcheck(a -> Torch.cat(new Tensor[] {a[0], a[0]}, 0), a0);
            assertNode("CatBackward0", a -> Torch.cat(new Tensor[] {a[0], a[1]}, -1), a0, b0);
        }
    }

    @Test
    void catSkipsLegacyEmptyInputsAndConvertsPromotedGradients() {
        try (Tensor a0 = input(2, 3); Tensor empty = Torch.zeros(new long[] {0}, DType.FLOAT64, a0.device()).requiresGrad_();
             Tensor f = Torch.ones(new long[] {2, 2}, DType.FLOAT32, a0.device()).requiresGrad_()) {
            gradcheck(a -> Torch.cat(new Tensor[] {a[1], a[0]}, 1), a0, empty);
            try (Tensor y = Torch.cat(new Tensor[] {f, a0}, 1); Tensor ones = Torch.onesLike(y)) {
                y.backward(ones);
            }
            assertTrue(f.grad().dtype() == DType.FLOAT32);
            assertArrayEquals(new float[] {1, 1, 1, 1}, f.grad().toFloatArray());
            assertArrayEquals(new long[] {0}, empty.grad() == null ? new long[] {0} : empty.grad().shape());
        }
    }

    @Test
    void stackSelectsEachInputsGradient() {
        try (Tensor a0 = input(2, 3); Tensor b0 = input(2, 3)) {
            gradcheck(a -> Torch.stack(new Tensor[] {a[0], a[1]}, 1), a0, b0);
            gradcheck(a -> Torch.stack(new Tensor[] {a[0], a[1], a[0]}, -1), a0, b0);
            assertNode("StackBackward0", a -> Torch.stack(new Tensor[] {a[0], a[1]}, 0), a0, b0);
        }
    }

    /** Scales the i-th part by i + 1 and joins the parts again, so each part's gradient is distinct. */
    private static Tensor scaleParts(List<Tensor> parts, int dim, boolean stack) {
        List<Tensor> scaled = new ArrayList<>();
        try {
            for (int i = 0; i < parts.size(); i++) scaled.add(parts.get(i).mul((double) (i + 1)));
            return stack ? Torch.stack(scaled, dim) : Torch.cat(scaled, dim);
        } finally {
            scaled.forEach(Tensor::close);
            parts.forEach(Tensor::close);
        }
    }

    @Test
    void gradientsFlowThroughSplitChunkAndUnbind() {
        try (Tensor x = input(5, 3)) {
            gradcheck(a -> scaleParts(a[0].split(2, 0), 0, false), x);
            gradcheck(a -> scaleParts(a[0].split(new long[] {1, 2}, 1), 1, false), x);
            gradcheck(a -> scaleParts(a[0].chunk(3, 0), 0, false), x);
            gradcheck(a -> scaleParts(a[0].unbind(1), 1, true), x);
            // Only the parts used contribute: the unused part's slice of the gradient is zero.
            List<Tensor> parts = x.split(2, 0);
            try (Tensor ones = Torch.onesLike(parts.get(1))) {
                parts.get(1).backward(ones);
            } finally {
                parts.forEach(Tensor::close);
            }
            assertArrayEquals(new double[] {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0}, x.grad().toDoubleArray());
        }
    }

    @Test
    void nonzeroIsNotDifferentiable() {
        try (Tensor x = input(3, 4); Tensor nz = x.nonzero()) {
            assertFalse(nz.requiresGrad());
            assertNull(nz.gradFn());
        }
    }

    @Test
    void inPlaceIndexingOfALeafThatRequiresGradIsRefused() {
        try (Tensor x = input(3, 4); Tensor i = longs(new long[] {0}, 1); Tensor src = input(1, 4)) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> x.indexFill_(0, i, 1.0));
            assertTrue(e.getMessage().contains("index_fill_"), e.getMessage());
            assertThrows(IllegalStateException.class, () -> x.scatter_(0, i.view(1, 1), src));
            assertThrows(IllegalStateException.class, () -> x.indexPut_(new Tensor[] {i}, src, false));
        }
    }

    @Test
    void doubleBackwardThroughGather() {
        // d/dx sum(gather(x^2)) = 2 x at the gathered places (counted with multiplicity); its gradient is 2 there.
        try (Tensor x = input(4); Tensor i = longs(new long[] {1, 1, 3}, 3)) {
            Tensor g;
            try (Tensor sq = x.mul(x); Tensor y = sq.gather(0, i); Tensor ones = Torch.onesLike(y)) {
                g = Autograd.grad(new Tensor[] {y}, new Tensor[] {x}, new Tensor[] {ones}, false, true, false)[0];
            }
            double[] xv = x.toDoubleArray();
            assertArrayEquals(new double[] {0, 4 * xv[1], 0, 2 * xv[3]}, g.toDoubleArray(), 1e-12);
            try (g; Tensor ones = Torch.onesLike(g)) {
                g.backward(ones);
            }
            assertArrayEquals(new double[] {0, 4, 0, 2}, x.grad().toDoubleArray(), 1e-12);
        }
    }
}
