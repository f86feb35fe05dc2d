package org.jtorch.backend;

/** Matrix products (mm, bmm and the GEMM behind matmul, linear, addmm, baddbmm). */
public interface LinalgKernels {
}
