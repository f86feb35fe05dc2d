package org.jtorch.amp;

import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import org.jtorch.op.CastPolicy;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.types.Device;

/**
 * What autocast does to each op's floating-point inputs, per device type: the tables of PyTorch
 * 1.13's {@code aten/src/ATen/autocast_mode.cpp}, in one place. Ops are named as ATen names them
 * (overload names dropped), except the declared ops ({@link OpRegistry}: mm, bmm, addmm, baddbmm ...), which carry
 * their own policy; an op that is in no table runs untouched, and the ops it is composed of
 * are autocast one by one. A covered op casts its inputs once at entry and runs with autocast
 * suspended inside, so its composite parts are not cast again (as the {@code Autocast} dispatch
 * key's exclusion in ATen).
 *
 * <p>Eligible inputs are floating-point tensors on the autocast device other than float64 (float64
 * tensors and non-floating tensors pass through). The CPU and CUDA lists differ: on the CPU, 1.13
 * keeps {@code softmax}, {@code sum}, {@code exp}, {@code layer_norm} ... untouched and widens
 * {@code cat}/{@code stack}; on CUDA it runs those in float32 and leaves {@code cat} to type promotion.
 */
public final class AutocastPolicy {
    private AutocastPolicy() {}

    /**
     * PyTorch 1.13, {@code KERNEL_CUDA} entries. ({@code scaled_dot_product_attention}, PyTorch 2.0's entry, is declared:
     * {@code op.AttentionOps}.)
     */
    private static final Map<String, CastPolicy> CUDA = table(
            CastPolicy.LOWER_PRECISION, """
                    _convolution conv_tbc
                    convolution cudnn_convolution cudnn_convolution_transpose prelu addmv addr
                    addbmm chain_matmul linalg_multi_dot _thnn_fused_lstm_cell _thnn_fused_gru_cell
                    lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell""",
            CastPolicy.FP32, """
                    acos asin cosh erfinv log10 log2 sinh tan
                    layer_norm frobenius_norm nuclear_norm cosine_similarity
                    poisson_nll_loss cosine_embedding_loss nll_loss nll_loss2d hinge_embedding_loss
                    margin_ranking_loss multilabel_margin_loss soft_margin_loss
                    triplet_margin_loss multi_margin_loss dist pdist cdist renorm""",
            CastPolicy.PROMOTE, "atan2 cross grid_sampler tensordot");

    /**
     * PyTorch 1.13, {@code KERNEL_CPU} entries (bfloat16 only). ({@code scaled_dot_product_attention}, PyTorch 2.1's
     * entry, is declared: {@code op.AttentionOps}.)
     */
    private static final Map<String, CastPolicy> CPU = table(
            CastPolicy.LOWER_PRECISION, """
                    addbmm _convolution conv_tbc""",
            CastPolicy.FP32, """
                    grid_sampler polar
                    quantile nanquantile stft cdist trace view_as_complex cholesky cholesky_inverse cholesky_solve
                    inverse lu_solve orgqr ormqr pinverse
                    cosine_embedding_loss nll_loss nll_loss2d hinge_embedding_loss poisson_nll_loss
                    cross_entropy_loss margin_ranking_loss soft_margin_loss triplet_margin_loss
                    multi_margin_loss ctc_loss multilabel_margin_loss fft_fft
                    fft_ifft fft_fft2 fft_ifft2 fft_fftn fft_ifftn fft_rfft fft_irfft fft_rfft2 fft_irfft2 fft_rfftn
                    fft_irfftn fft_hfft fft_ihfft linalg_cond linalg_matrix_rank linalg_solve linalg_cholesky
                    linalg_svdvals linalg_eigvals linalg_eigvalsh linalg_inv linalg_householder_product
                    linalg_tensorinv linalg_tensorsolve fake_quantize_per_tensor_affine geqrf _lu_with_info qr svd
                    symeig triangular_solve fractional_max_pool2d fractional_max_pool3d
                    multilabel_margin_loss_forward linalg_qr linalg_cholesky_ex linalg_svd linalg_eig linalg_eigh
                    linalg_lstsq linalg_inv_ex linalg_matrix_norm grid_sampler_2d _grid_sampler_2d_cpu_fallback
                    grid_sampler_3d""");

    /**
     * The policy of {@code op} on {@code deviceType}, or null when autocast leaves the op untouched there. The
     * declared ops ({@link OpRegistry}: the pointwise family, sum, prod, ...) carry their own policy; the tables
     * above hold the ops not yet declared.
     */
    public static CastPolicy of(String op, Device.Type deviceType) {
        if (OpRegistry.declaresPyName(op)) {
            return OpRegistry.autocast(op, deviceType);
        }
        return (deviceType == Device.Type.CPU ? CPU : CUDA).get(op);
    }

    /** Every covered op of {@code deviceType} with its policy, the declared ops' included (unmodifiable). */
    public static Map<String, CastPolicy> table(Device.Type deviceType) {
        Map<String, CastPolicy> m = new HashMap<>(deviceType == Device.Type.CPU ? CPU : CUDA);
        for (OpDef op : OpRegistry.all()) {
            CastPolicy p = op.autocast(deviceType);
            if (p != null) m.put(op.pyName(), p);
        }
        return Collections.unmodifiableMap(m);
    }

    private static Map<String, CastPolicy> table(Object... policyThenNames) {
        Map<String, CastPolicy> m = new HashMap<>();
        for (int i = 0; i < policyThenNames.length; i += 2) {
            CastPolicy p = (CastPolicy) policyThenNames[i];
            for (String name : ((String) policyThenNames[i + 1]).trim().split("\\s+")) {
                if (m.put(name, p) != null) throw new IllegalStateException("autocast table lists " + name + " twice");
            }
        }
        return Collections.unmodifiableMap(m);
    }
}
