package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.BinaryOperator;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.ops.Linalg;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The matmul family on every device: {@code cpu} always and {@code cuda:0} (cuBLASLt through
 * {@code CudaLinalgKernels}); each cuda case is skipped with CUDA's unavailability reason where there is
 * no GPU (never passed). Ops: {@code mm}, {@code bmm}, {@code mv}, {@code dot}, {@code matmul} (1-D, 2-D, batch broadcast) and
 * {@code addmm} (alpha, beta); dtypes float32 (TF32 off, the default), float64, float16, bfloat16;
 * operands contiguous, transposed views, stride-2 slices (made contiguous before cuBLASLt) and views at a
 * storage offset.
 *
 * <p>Reference: the product's definition evaluated in double on the inputs' values, with NumPy's
 * broadcasting of batch dimensions. Tolerance per element: {@code (K + 2) * eps_acc * sum_p |a_ip b_pj|
 * + eps_out * |ref|}, with {@code eps_acc} the accumulator's epsilon (float64 for float64, float32 for
 * the others) and {@code eps_out} the result dtype's (one final rounding of half results). On cuda the
 * result must also agree with the CPU backend's for the same inputs (dtype, shape, values within twice
 * that bound).
 */
class MatmulDeviceConformanceTest {
    private static final Device CUDA = DeviceCases.CUDA;
    private static final List<DType> DTYPES = List.of(DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16);

    enum Layout { CONTIGUOUS, TRANSPOSED, SLICED, OFFSET }

    /** Values in (-1, 1) from a low-discrepancy sequence, rounded to {@code t} by the tensor. */
    private static double[] values(long n, int seed) {
        double[] v = new double[Math.toIntExact(n)];
        for (int i = 0; i < v.length; i++) v[i] = ((i + seed) * 0.6180339887498949 % 1.0) * 2 - 1;
        return v;
    }

    /** An operand of {@code shape} on {@code d} in {@code layout} (a view of a larger or permuted base there). */
    private static Tensor make(Device d, DType t, long[] shape, Layout layout, int seed) {
        int r = shape.length;
        long[] base = shape.clone();
        switch (layout) {
            case TRANSPOSED -> { if (r >= 2) { base[r - 1] = shape[r - 2]; base[r - 2] = shape[r - 1]; } }
            case SLICED -> base[r - 1] *= 2;
            case OFFSET -> base[0] += 1;
            default -> {}
        }
        long n = 1;
        for (long s : base) n *= s;
        Tensor b;
        try (Tensor host = Torch.tensor(values(n, seed), t, base)) {
            b = host.to(d);
        }
        try (b) {
            return switch (layout) {
                case CONTIGUOUS -> b.alias();
                case TRANSPOSED -> r >= 2 ? b.transpose(r - 2, r - 1) : b.alias();
                case SLICED -> b.slice(r - 1, 0, base[r - 1], 2);
                case OFFSET -> b.narrow(0, 1, shape[0]);
            };
        }
    }

    /** {@code matmul}'s definition in double (1-D promotion, broadcast batch), with per-element error bounds. */
    private record Ref(long[] shape, double[] values, double[] bounds) {}

    private static Ref reference(Tensor a, Tensor b, DType t) {
        double[] av = a.to(Device.cpu()).toDoubleArray();
        double[] bv = b.to(Device.cpu()).toDoubleArray();
        long[] as = a.dim() == 1 ? new long[] {1, a.size(0)} : a.shape();
        long[] bs = b.dim() == 1 ? new long[] {b.size(0), 1} : b.shape();
        long m = as[as.length - 2], k = as[as.length - 1], n = bs[bs.length - 1];
        long[] ab = Arrays.copyOf(as, as.length - 2), bb = Arrays.copyOf(bs, bs.length - 2);
        int rank = Math.max(ab.length, bb.length);
        long[] batch = new long[rank];
        for (int i = 0; i < rank; i++) {
            long x = i - (rank - ab.length) >= 0 ? ab[i - (rank - ab.length)] : 1;
            long y = i - (rank - bb.length) >= 0 ? bb[i - (rank - bb.length)] : 1;
            batch[i] = Math.max(x, y);
        }
        long total = 1;
        for (long s : batch) total *= s;
        double accEps = t == DType.FLOAT64 ? DeviceCases.epsilon(DType.FLOAT64) : DeviceCases.epsilon(DType.FLOAT32);
        double[] out = new double[Math.toIntExact(total * m * n)];
        double[] bound = new double[out.length];
        for (long bi = 0; bi < total; bi++) {
            long aOff = 0, bOff = 0, rest = bi, aMul = m * k, bMul = k * n;
            for (int i = rank - 1; i >= 0; i--) {
                long idx = rest % batch[i];
                rest /= batch[i];
                int ia = i - (rank - ab.length), ib = i - (rank - bb.length);
                if (ia >= 0) { if (ab[ia] > 1) aOff += idx * aMul; aMul *= ab[ia]; }
                if (ib >= 0) { if (bb[ib] > 1) bOff += idx * bMul; bMul *= bb[ib]; }
            }
            for (long i = 0; i < m; i++) {
                for (long j = 0; j < n; j++) {
                    double s = 0, mag = 0;
                    for (long p = 0; p < k; p++) {
                        double x = av[(int) (aOff + i * k + p)] * bv[(int) (bOff + p * n + j)];
                        s += x;
                        mag += Math.abs(x);
                    }
                    int o = (int) (bi * m * n + i * n + j);
                    out[o] = s;
                    bound[o] = (k + 2) * accEps * mag + DeviceCases.epsilon(t) * Math.abs(s) + 1e-300;
                }
            }
        }
        List<Long> shape = new ArrayList<>();
        for (long s : batch) shape.add(s);
        if (a.dim() > 1) shape.add(m);
        if (b.dim() > 1) shape.add(n);
        return new Ref(shape.stream().mapToLong(Long::longValue).toArray(), out, bound);
    }

    private static void check(Tensor result, Ref ref, DType t, Device d, double scale, String what) {
        assertEquals(d, result.device(), what + ": device");
        assertEquals(t, result.dtype(), what + ": dtype");
        assertArrayEquals(ref.shape(), result.shape(), what + ": shape");
        double[] got = result.to(Device.cpu()).toDoubleArray();
        for (int i = 0; i < got.length; i++) {
            double err = Math.abs(got[i] - ref.values()[i]);
            int at = i;
            assertTrue(err <= scale * ref.bounds()[i], () -> what + ": element " + at + " = " + got[at] + ", expected "
                    + ref.values()[at] + " within " + scale * ref.bounds()[at]);
        }
    }

    private static void add(List<DynamicTest> tests, String name, DType t, long[] aShape, Layout la, long[] bShape, Layout lb,
            BinaryOperator<Tensor> op) {
        for (Device d : DeviceCases.DEVICES) {
            tests.add(DynamicTest.dynamicTest(d + "/" + name + "/" + t.pyName() + "/a=" + la + "/b=" + lb, () -> {
                DeviceCases.assumeAvailable(d);
                try (Tensor a = make(d, t, aShape, la, 1); Tensor b = make(d, t, bShape, lb, 7); Tensor r = op.apply(a, b)) {
                    Ref ref = reference(a, b, t);
                    check(r, ref, t, d, 1, name + " vs the definition");
                    if (d.isCuda()) {
                        try (Tensor ac = a.to(Device.cpu()); Tensor bc = b.to(Device.cpu()); Tensor cpu = op.apply(ac, bc)) {
                            Ref cpuRef = new Ref(cpu.shape(), cpu.toDoubleArray(), ref.bounds());
                            check(r, cpuRef, t, d, 2, name + " vs the CPU backend");
                        }
                    }
                }
            }));
        }
    }

    @TestFactory
    List<DynamicTest> matmulFamily() {
        List<DynamicTest> tests = new ArrayList<>();
        for (DType t : DTYPES) {
            for (Layout la : Layout.values()) {
                for (Layout lb : Layout.values()) {
                    add(tests, "mm", t, new long[] {5, 7}, la, new long[] {7, 3}, lb, Tensor::mm);
                    add(tests, "bmm", t, new long[] {3, 4, 6}, la, new long[] {3, 6, 5}, lb, Tensor::bmm);
                }
            }
            add(tests, "matmul_broadcast", t, new long[] {2, 1, 3, 4}, Layout.CONTIGUOUS, new long[] {3, 4, 5}, Layout.CONTIGUOUS,
                    Tensor::matmul);
            add(tests, "matmul_broadcast", t, new long[] {2, 1, 3, 4}, Layout.TRANSPOSED, new long[] {4, 5}, Layout.TRANSPOSED,
                    Tensor::matmul);
            add(tests, "matmul_vec_mat", t, new long[] {6}, Layout.CONTIGUOUS, new long[] {2, 6, 4}, Layout.CONTIGUOUS,
                    Tensor::matmul);
            add(tests, "matmul_mat_vec", t, new long[] {3, 6}, Layout.TRANSPOSED, new long[] {6}, Layout.CONTIGUOUS,
                    Tensor::matmul);
            // mv and dot (declared ops: the GEMM of a vector seen as a row or a column) over strided and offset vectors
            for (Layout lv : new Layout[] {Layout.CONTIGUOUS, Layout.SLICED, Layout.OFFSET}) {
                add(tests, "mv", t, new long[] {5, 6}, Layout.TRANSPOSED, new long[] {6}, lv, Tensor::mv);
                add(tests, "mv", t, new long[] {5, 6}, Layout.SLICED, new long[] {6}, lv, Tensor::mv);
                add(tests, "dot", t, new long[] {9}, lv, new long[] {9}, Layout.SLICED, Tensor::dot);
            }
            add(tests, "mm_large", t, new long[] {67, 129}, Layout.CONTIGUOUS, new long[] {129, 33}, Layout.TRANSPOSED, Tensor::mm);
            add(tests, "mm_empty_inner", t, new long[] {3, 0}, Layout.CONTIGUOUS, new long[] {0, 4}, Layout.CONTIGUOUS, Tensor::mm);
        }
        return tests;
    }

    /** {@code addmm(input, m1, m2, beta, alpha)}: alpha and beta reach the kernel (cuBLASLt's host scalars). */
    @TestFactory
    List<DynamicTest> addmmScalesBothTerms() {
        List<DynamicTest> tests = new ArrayList<>();
        for (DType t : DTYPES) {
            for (Device d : DeviceCases.DEVICES) {
                tests.add(DynamicTest.dynamicTest(d + "/addmm/" + t.pyName(), () -> {
                    DeviceCases.assumeAvailable(d);
                    try (Tensor in = make(d, t, new long[] {4, 5}, Layout.CONTIGUOUS, 3);
                         Tensor m1 = make(d, t, new long[] {4, 6}, Layout.TRANSPOSED, 1);
                         Tensor m2 = make(d, t, new long[] {6, 5}, Layout.CONTIGUOUS, 7);
                         Tensor r = Linalg.addmm(in, m1, m2, 0.5, -2.0)) {
                        Ref prod = reference(m1, m2, t);
                        double[] inv = in.to(Device.cpu()).toDoubleArray();
                        double[] want = new double[inv.length];
                        double[] bound = new double[inv.length];
                        for (int i = 0; i < want.length; i++) {
                            want[i] = 0.5 * inv[i] - 2.0 * prod.values()[i];
                            bound[i] = 2.0 * prod.bounds()[i] + 2 * DeviceCases.epsilon(t) * (Math.abs(inv[i]) + Math.abs(want[i]));
                        }
                        check(r, new Ref(prod.shape(), want, bound), t, d, 1, "addmm vs the definition");
                    }
                }));
            }
        }
        return tests;
    }
}
