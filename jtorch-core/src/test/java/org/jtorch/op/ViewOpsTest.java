package org.jtorch.op;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The views' meta functions: geometry from geometry, as PyTorch's (sizes, strides and offsets printed by PyTorch 1.13). */
class ViewOpsTest {
    private static final long[] S234 = {2, 3, 4};
    private static final long[] C234 = {12, 4, 1};

    private static void assertGeometry(long[] shape, long[] strides, long offset, ViewOps.Geometry g) {
        assertArrayEquals(shape, g.shape(), "shape");
        assertArrayEquals(strides, g.strides(), "strides");
        assertEquals(offset, g.offset(), "offset");
    }

    @Test
    void reorderingViews() {
        assertGeometry(new long[] {4, 2, 3}, new long[] {1, 12, 4}, 5, ViewOps.permute(S234, C234, 5, new int[] {2, 0, -2}));
        assertArrayEquals(new int[] {1, 2, 0}, ViewOps.inversePermutation(new int[] {2, 0, 1}));
        assertGeometry(new long[] {4, 3, 2}, new long[] {1, 4, 12}, 0, ViewOps.transpose(S234, C234, 0, 0, -1));
        assertNull(ViewOps.transpose(new long[0], new long[0], 0, 0, -1), "a 0-d transpose is the tensor itself");
        assertGeometry(new long[] {6, 4}, new long[] {4, 1}, 0, ViewOps.view(S234, C234, 0, new long[] {-1, 4}));
        assertNull(ViewOps.reshapeView(new long[] {4, 3}, new long[] {1, 4}, 0, new long[] {12}), "a transposed matrix flattens by a copy");
    }

    @Test
    void sizeOneDimensions() {
        long[] s = {2, 1, 3, 1};
        long[] st = {3, 3, 1, 1};
        assertGeometry(new long[] {2, 3}, new long[] {3, 1}, 0, ViewOps.squeeze(s, st, 0));
        assertGeometry(new long[] {2, 3, 1}, new long[] {3, 1, 1}, 0, ViewOps.squeezeDim(s, st, 0, 1));
        assertNull(ViewOps.squeezeDim(s, st, 0, 0), "a size other than 1 is not removed");
        assertGeometry(new long[] {2, 3, 1, 4}, new long[] {12, 4, 4, 1}, 0, ViewOps.unsqueeze(S234, C234, 0, 2));
        assertGeometry(new long[] {2, 3, 4, 1}, new long[] {12, 4, 1, 1}, 0, ViewOps.unsqueeze(S234, C234, 0, -1));
        assertGeometry(new long[] {5, 2, 3, 4}, new long[] {0, 12, 4, 1}, 0, ViewOps.expand(S234, C234, 0, new long[] {5, -1, 3, 4}));
        assertGeometry(new long[] {2, 3, 7}, new long[] {3, 1, 0}, 0,
                ViewOps.expand(new long[] {2, 3, 1}, new long[] {3, 1, 1}, 0, new long[] {2, 3, 7}));
    }

    @Test
    void narrowingViews() {
        // x[:, 1:, -3::2] of a [2, 3, 4] tensor: PyTorch gives size (2, 2, 2), stride (12, 4, 2), offset 5.
        ViewOps.Geometry rows = ViewOps.slice(S234, C234, 0, 1, 1, Long.MAX_VALUE, 1);
        assertGeometry(new long[] {2, 2, 2}, new long[] {12, 4, 2}, 5, ViewOps.slice(rows.shape(), rows.strides(), rows.offset(), 2, -3,
                Long.MAX_VALUE, 2));
        assertGeometry(new long[] {2, 0, 4}, new long[] {12, 4, 1}, 12, ViewOps.slice(S234, C234, 0, 1, 5, 9, 1));
        assertGeometry(new long[] {2, 2, 4}, new long[] {12, 4, 1}, 4, ViewOps.narrow(S234, C234, 0, 1, -2, 2));
        assertGeometry(new long[] {2, 4}, new long[] {12, 1}, 8, ViewOps.select(S234, C234, 0, 1, -1));
        // torch.arange(7).unfold(0, 3, 2): size (3, 3), stride (2, 1).
        assertGeometry(new long[] {3, 3}, new long[] {2, 1}, 0, ViewOps.unfold(new long[] {7}, new long[] {1}, 0, 0, 3, 2));
        // torch.zeros(3, 4).diagonal(1): size (3,), stride (5,), offset 1; diagonal(-2): size (1,), offset 8.
        assertGeometry(new long[] {3}, new long[] {5}, 1, ViewOps.diagonal(new long[] {3, 4}, new long[] {4, 1}, 0, 1, 0, 1));
        assertGeometry(new long[] {1}, new long[] {5}, 8, ViewOps.diagonal(new long[] {3, 4}, new long[] {4, 1}, 0, -2, 0, 1));
        assertGeometry(new long[] {2, 3}, new long[] {12, 5}, 0, ViewOps.diagonal(S234, C234, 0, 0, 1, 2));
        assertGeometry(new long[] {2, 2}, new long[] {1, 2}, 1, ViewOps.asStrided(new long[] {2, 2}, new long[] {1, 2}, 1, 6));
    }

    @Test
    void badArgumentsAreNamed() {
        List<Runnable> bad = List.of(
                () -> ViewOps.view(new long[] {4, 3}, new long[] {1, 4}, 0, new long[] {12}),
                () -> ViewOps.permute(S234, C234, 0, new int[] {0, 0, 1}),
                () -> ViewOps.expand(S234, C234, 0, new long[] {2, 5, 4}),
                () -> ViewOps.narrow(S234, C234, 0, 2, 3, 2),
                () -> ViewOps.slice(S234, C234, 0, 0, 0, 2, 0),
                () -> ViewOps.select(S234, C234, 0, 1, 3),
                () -> ViewOps.unfold(S234, C234, 0, 2, 5, 1),
                () -> ViewOps.diagonal(S234, C234, 0, 0, 1, -2),
                () -> ViewOps.asStrided(new long[] {2, 2}, new long[] {1, 2}, 3, 6));
        String[] names = {"view", "permute", "expand", "narrow", "slice", "select", "unfold", "diagonal", "asStrided"};
        for (int i = 0; i < bad.size(); i++) {
            RuntimeException e = assertThrows(RuntimeException.class, bad.get(i)::run);
            assertTrue(e.getMessage().startsWith(names[i] + ": "), e.getMessage());
        }
    }

    @Test
    void everyViewIsInTheRegistry() {
        for (OpDef op : List.of(ViewOps.VIEW, ViewOps.PERMUTE, ViewOps.TRANSPOSE, ViewOps.SQUEEZE, ViewOps.SQUEEZE_DIM, ViewOps.UNSQUEEZE,
                ViewOps.EXPAND, ViewOps.SLICE, ViewOps.NARROW, ViewOps.SELECT, ViewOps.UNFOLD, ViewOps.DIAGONAL)) {
            assertEquals(op, OpRegistry.get(op.name()));
            assertEquals(OpDef.Kind.FRONT_END, op.kind());
            assertEquals("self", op.signature().params().get(0).name());
        }
    }
}
