package org.jtorch.autograd;

import static org.jtorch.autograd.GradcheckSupport.gradOf;
import static org.jtorch.autograd.GradcheckSupport.gradcheck;
import static org.jtorch.autograd.GradcheckSupport.input;
import static org.jtorch.autograd.GradcheckSupport.on;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.ops.Reductions.ValuesIndices;
import org.junit.jupiter.api.Test;

/**
 * Gradients of the selections in float64 (gradcheck against central differences; inputs are distinct
 * random values, so a small perturbation keeps the order): the values of sort, msort, topk, kthvalue,
 * median and mode carry the incoming gradient to the positions they selected, as PyTorch 1.13's
 * SortBackward / TopkBackward / KthvalueBackward / MedianBackward / ModeBackward; the indices carry none.
 */
class GradcheckSortingTest {

    @Test
    void sortAndMsortValues() {
        try (Tensor x = input(3, 5)) {
            gradcheck(a -> a[0].sort(1).values(), x);
            gradcheck(a -> a[0].sort(0, true).values(), x);
            gradcheck(a -> a[0].msort(), x);
        }
    }

    @Test
    void topkAndKthvalueValues() {
        try (Tensor x = input(4, 6)) {
            gradcheck(a -> a[0].topk(3, 1).values(), x);
            gradcheck(a -> a[0].topk(2, 0, false, true).values(), x);
            gradcheck(a -> a[0].kthvalue(2, 1).values(), x);
            gradcheck(a -> a[0].kthvalue(3, 0, true).values(), x);
        }
    }

    @Test
    void medianAndModeValues() {
        try (Tensor x = input(4, 5); Tensor s = input()) {
            gradcheck(a -> a[0].median(1).values(), x);
            gradcheck(a -> a[0].median(0, true).values(), x);
            gradcheck(a -> a[0].median(), x);
            gradcheck(a -> a[0].mode(1).values(), x);
            gradcheck(a -> a[0].median(0).values(), s);
        }
    }

    @Test
    void tiedValuesSendTheGradientToTheReturnedIndexOnly() {
        // Like max(dim): the whole gradient goes to the one position the op returned, none to the equal others.
        try (Tensor x = on(Torch.tensor(new double[] {2, 1, 2, 2, 5, 2}, 1, 6)).requiresGrad_()) {
            try (ValuesIndices m = x.median(1)) {
                double[] expected = new double[6];
                expected[(int) m.indices().itemLong()] = 1;
                assertArrayEquals(expected, gradOf(x, t -> t.median(1).values()), 0);
            }
            try (ValuesIndices m = x.mode(1)) {
                double[] expected = new double[6];
                expected[(int) m.indices().itemLong()] = 1;
                assertArrayEquals(expected, gradOf(x, t -> t.mode(1).values()), 0);
            }
            assertArrayEquals(new double[] {1, 1, 1, 1, 1, 1}, gradOf(x, t -> t.sort(1).values()), 0);
        }
    }

    @Test
    void indicesAreNotDifferentiable() {
        try (Tensor x = input(2, 3); ValuesIndices s = x.sort(1)) {
            assertFalse(s.indices().requiresGrad());
        }
    }
}
