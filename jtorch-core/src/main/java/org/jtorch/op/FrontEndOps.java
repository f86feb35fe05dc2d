package org.jtorch.op;

import static org.jtorch.op.DTypeRule.SAME;
import static org.jtorch.op.DTypeRule.SAME_NO_BOOL;

import org.jtorch.types.Device;

/**
 * Ops whose front ends are still written by hand ({@link OpDef.Kind#FRONT_END}): matmul
 * (by rank, from the declared products of {@link LinalgOps}, as PyTorch's composite), conv1d/2d/3d and their transposes, batch norm and max pooling (front ends over declared structured ops, the 3-d convolutions composed of the 2-d ones), max (with or without indices), average, adaptive average and adaptive max pooling and max unpooling in 3-d, {@code F.pad}'s non-constant modes, pixel (un)shuffle, {@code F.interpolate}'s modes ({@code upsample_*}), the 1-d pools, {@code embedding_renorm_}, and the factories (zeros, full, arange, empty). Declared so that the registry lists them with PyTorch's signatures and
 * autocast policies, and so that the trace sees each as one op (the JIT replays it through its front end). Their
 * meta functions, kernels on strided views and derivatives written with ops are the next step of the registry.
 * Integer arguments reach the trace and {@code Dispatcher.call} as the call's scalars, in signature order (a list
 * of unknown length behind its length, a missing one as length -1; see {@code ops.FrontEnds}).
 */
public final class FrontEndOps {
    private FrontEndOps() {}

    private static final Param SELF = Param.tensor("self");

    /** A max pool's signature over {@code rank} dimensions: {@code self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False}. */
    private static Param[] maxPool(int rank) {
        String list = "int[" + rank + "]";
        return new Param[] {SELF, new Param("kernel_size", list, null), new Param("stride", list, "[]"), new Param("padding", list, "0"),
                new Param("dilation", list, "1"), new Param("ceil_mode", "bool", "False")};
    }

    /**
     * {@code embedding_renorm_(self, indices, max_norm, norm_type)}: the distinct rows of {@code self} that {@code indices}
     * name, scaled in place by {@code max_norm / (norm + 1e-7)} where their {@code norm_type}-norm exceeds {@code max_norm}
     * ({@code F.embedding} with {@code max_norm}). Not differentiable: it runs under no-grad, as PyTorch's functional calls
     * it. The trace sees the gathers and the index copy inside. No autocast policy, as PyTorch 1.13's lists.
     */
    public static final OpDef EMBEDDING_RENORM_ = OpDef.frontEnd("embedding_renorm_", false).rule(DTypeRule.FLOATING_ONLY)
            .signature(new Param("self", "Tensor(a!)", null), Param.tensor("indices"), new Param("max_norm", "float", null),
                    new Param("norm_type", "float", null))
            .returns("Tensor(a!)").doc("`ops.Indexing.embeddingRenorm_` (the named rows' norms, a scaled `index_copy_`)").build();

    /** A contiguous tensor: the tensor itself (an alias) or a copy. */
    public static final OpDef CONTIGUOUS = OpDef.frontEnd("contiguous", true).rule(SAME).signature(SELF)
            .doc("an alias or a copy").build();
    public static final OpDef MATMUL = OpDef.frontEnd("matmul", true).rule(SAME_NO_BOOL).signature(SELF, Param.tensor("other"))
            .autocast(Device.Type.CPU, CastPolicy.LOWER_PRECISION).autocast(Device.Type.CUDA, CastPolicy.LOWER_PRECISION)
            .doc("`ops.Linalg.matmul` (packed GEMM on the CPU, cuBLASLt on CUDA)").build();
    /**
     * {@code self.reshape(-1, self.size(-1))} with the row count spelled out (it cannot be inferred when the last
     * dimension is empty), a 1-D tensor as one row: the matrix a linear layer multiplies (its weight's gradient).
     */
    public static final OpDef ROWS = OpDef.frontEnd("rows", true).rule(SAME).signature(SELF)
            .doc("a view, or a copy where strides cannot express it").build();

    /** A tensor of zeros of a given shape, dtype and device (a constant of the graph, made anew at each call). */
    public static final OpDef ZEROS = OpDef.frontEnd("zeros", false).rule(SAME).signature(new Param("size", "SymInt[]", null),
            new Param("dtype", "ScalarType?", "None"), new Param("device", "Device?", "None")).doc("`Torch.zeros`").build();
    /**
     * Uninitialised memory of a given shape, dtype and device ({@code Torch.empty}; PyTorch's {@code empty.memory_format}):
     * made anew at each call, and never merged with another ({@link #uninitialised}). Traced scalars as {@link #ZEROS}'.
     */
    public static final OpDef EMPTY = OpDef.frontEnd("empty", false).rule(SAME).signature(new Param("size", "SymInt[]", null),
            new Param("dtype", "ScalarType?", "None"), new Param("device", "Device?", "None")).doc("`Torch.empty` (values undefined)").build();
    /** {@code Torch.emptyLike}: uninitialised memory of {@code self}'s shape, dtype and device (contiguous). */
    public static final OpDef EMPTY_LIKE = OpDef.frontEnd("empty_like", false).rule(SAME).signature(SELF)
            .doc("`Torch.emptyLike` (values undefined; laid out contiguously)").build();
    /**
     * {@code Torch.emptyStrided}: uninitialised memory seen with the given sizes and strides (storage offset 0), as much
     * as they reach. Traced scalars: dtype, device type and index, the rank, the sizes, the strides.
     */
    public static final OpDef EMPTY_STRIDED = OpDef.frontEnd("empty_strided", false).rule(SAME).signature(new Param("size", "SymInt[]", null),
            new Param("stride", "SymInt[]", null), new Param("dtype", "ScalarType?", "None"), new Param("device", "Device?", "None"))
            .doc("`Torch.emptyStrided` (values undefined)").build();

    /**
     * Whether {@code op} makes a tensor whose values are undefined ({@code empty} and its forms): two calls are two buffers
     * even where nothing writes them, so the JIT never merges them as common subexpressions.
     */
    public static boolean uninitialised(OpDef op) {
        return op == EMPTY || op == EMPTY_LIKE || op == EMPTY_STRIDED;
    }

    /**
     * A tensor filled with one value, of a given shape, dtype and device (a constant of the graph, made anew at each call).
     * Its scalars are the fill's ({@code CopyOps.FILL}: the value, then an int64 value's exact halves), then dtype and device.
     */
    public static final OpDef FULL = OpDef.frontEnd("full", false).rule(SAME).signature(new Param("size", "SymInt[]", null),
            new Param("fill_value", "Scalar", null), new Param("dtype", "ScalarType?", "None"), new Param("device", "Device?", "None"))
            .doc("`Torch.full`, `Torch.ones`").build();
    /**
     * {@code Torch.arange}: a constant of the graph made anew at each call (its bounds are Java numbers, fixed at trace
     * time); the trace's arguments are start, end, step, the dtype's and the device's ordinals and the device index.
     */
    public static final OpDef ARANGE = OpDef.frontEnd("arange", false).rule(SAME).signature(new Param("start", "Scalar", "0"),
            new Param("end", "Scalar", null), new Param("step", "Scalar", "1"), new Param("dtype", "ScalarType?", "None"),
            new Param("device", "Device?", "None")).doc("`Torch.arange`").build();
    /** Another handle to the same tensor ({@code Tensor.alias}: dropout in evaluation or with p = 0, a module returning its input). */
    public static final OpDef ALIAS = OpDef.frontEnd("alias", true).rule(SAME).signature(SELF).doc("a view of the whole tensor").build();
    public static final OpDef CONV2D = OpDef.frontEnd("conv2d", true).rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("input"), Param.tensor("weight"), new Param("bias", "Tensor?", "None"),
                    new Param("stride", "int[2]", "1"), new Param("padding", "int[2]", "0"), new Param("dilation", "int[2]", "1"),
                    new Param("groups", "int", "1"))
            .autocast(Device.Type.CPU, CastPolicy.LOWER_PRECISION).autocast(Device.Type.CUDA, CastPolicy.LOWER_PRECISION)
            .doc("`ops.Convolution.conv2d` (numeric padding; `padding='same'` is not traced yet)").build();
    public static final OpDef CONV1D = OpDef.frontEnd("conv1d", true).rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("input"), Param.tensor("weight"), new Param("bias", "Tensor?", "None"),
                    new Param("stride", "int[1]", "1"), new Param("padding", "int[1]", "0"), new Param("dilation", "int[1]", "1"),
                    new Param("groups", "int", "1"))
            .autocast(Device.Type.CPU, CastPolicy.LOWER_PRECISION).autocast(Device.Type.CUDA, CastPolicy.LOWER_PRECISION)
            .doc("`ops.Convolution.conv1d` (a 2-d convolution of height 1; `padding='same'` is not traced yet)").build();
    /** float32 under CPU autocast, as PyTorch's CPU list; lower precision on CUDA. */
    public static final OpDef CONV_TRANSPOSE2D = OpDef.frontEnd("conv_transpose2d", true).rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("input"), Param.tensor("weight"), new Param("bias", "Tensor?", "None"),
                    new Param("stride", "int[2]", "1"), new Param("padding", "int[2]", "0"), new Param("output_padding", "int[2]", "0"),
                    new Param("groups", "int", "1"), new Param("dilation", "int[2]", "1"))
            .autocast(Device.Type.CPU, CastPolicy.FP32).autocast(Device.Type.CUDA, CastPolicy.LOWER_PRECISION)
            .doc("`ops.Convolution.convTranspose2d` (the convolution's input gradient, plus the bias)").build();
    public static final OpDef CONV3D = OpDef.frontEnd("conv3d", true).rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("input"), Param.tensor("weight"), new Param("bias", "Tensor?", "None"),
                    new Param("stride", "int[3]", "1"), new Param("padding", "int[3]", "0"), new Param("dilation", "int[3]", "1"),
                    new Param("groups", "int", "1"))
            .autocast(Device.Type.CPU, CastPolicy.LOWER_PRECISION).autocast(Device.Type.CUDA, CastPolicy.LOWER_PRECISION)
            .doc("`ops.Convolution3d.conv3d` (one batched conv2d a depth tap, summed; `padding='same'` is traced as its parts)").build();
    /** float32 under CPU autocast, as PyTorch's CPU list; lower precision on CUDA. */
    public static final OpDef CONV_TRANSPOSE3D = OpDef.frontEnd("conv_transpose3d", true).rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("input"), Param.tensor("weight"), new Param("bias", "Tensor?", "None"),
                    new Param("stride", "int[3]", "1"), new Param("padding", "int[3]", "0"), new Param("output_padding", "int[3]", "0"),
                    new Param("groups", "int", "1"), new Param("dilation", "int[3]", "1"))
            .autocast(Device.Type.CPU, CastPolicy.FP32).autocast(Device.Type.CUDA, CastPolicy.LOWER_PRECISION)
            .doc("`ops.Convolution3d.convTranspose3d` (one batched conv_transpose2d a depth tap, placed and summed)").build();
    /** float32 under CPU autocast, as PyTorch's CPU list; lower precision on CUDA. */
    public static final OpDef CONV_TRANSPOSE1D = OpDef.frontEnd("conv_transpose1d", true).rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("input"), Param.tensor("weight"), new Param("bias", "Tensor?", "None"),
                    new Param("stride", "int[1]", "1"), new Param("padding", "int[1]", "0"), new Param("output_padding", "int[1]", "0"),
                    new Param("groups", "int", "1"), new Param("dilation", "int[1]", "1"))
            .autocast(Device.Type.CPU, CastPolicy.FP32).autocast(Device.Type.CUDA, CastPolicy.LOWER_PRECISION)
            .doc("`ops.Convolution.convTranspose1d` (a conv_transpose2d of height 1)").build();
    /**
     * {@code y[..., o] = x1[..., :] @ weight[o] @ x2[..., :] + bias[o]}, as {@code torch.nn.functional.bilinear}. PyTorch
     * composes it from {@code _trilinear}, an op with its own kernel and derivative; here a declared composition (one GEMM
     * against the weight's {@code [in1, out * in2]} view, a product with {@code x2} and a sum): the GEMM is already the
     * backend's fastest kernel and its gradients those of the parts, so a fused kernel per backend would add code, not
     * speed. The trace records it as one node. On CUDA autocast promotes its operands to the widest floating type, as
     * PyTorch 1.13's list; untouched on the CPU.
     */
    public static final OpDef BILINEAR = OpDef.frontEnd("bilinear", true).rule(SAME_NO_BOOL)
            .signature(Param.tensor("input1"), Param.tensor("input2"), Param.tensor("weight"), new Param("bias", "Tensor?", "None"))
            .autocast(Device.Type.CUDA, CastPolicy.PROMOTE)
            .doc("`ops.Linalg.bilinear` (one GEMM against the weight, a product and a sum)").build();
    /** Not traced as one op (its equation is a string): the trace sees the permutes, reshapes and products inside. */
    public static final OpDef EINSUM = OpDef.frontEnd("einsum", true).rule(SAME_NO_BOOL)
            .signature(new Param("equation", "str", null), new Param("tensors", "Tensor[]", null))
            .autocast(Device.Type.CUDA, CastPolicy.LOWER_PRECISION)
            .doc("`ops.Einsum.einsum` (permutes, reshapes and one batched product per contraction)").build();
    /** float32 under CPU autocast, as PyTorch's CPU list; untouched on CUDA. */
    public static final OpDef MAX_UNPOOL2D = OpDef.frontEnd("max_unpool2d", true).rule(SAME_NO_BOOL)
            .signature(SELF, Param.tensor("indices"), new Param("output_size", "SymInt[2]", null))
            .autocast(Device.Type.CPU, CastPolicy.FP32)
            .doc("`ops.Pooling.maxUnpool2d` (a scatter of the values to their recorded positions)").build();
    public static final OpDef BATCH_NORM = OpDef.frontEnd("batch_norm", true).rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("input"), new Param("running_mean", "Tensor?", null), new Param("running_var", "Tensor?", null),
                    new Param("weight", "Tensor?", null), new Param("bias", "Tensor?", null), new Param("training", "bool", null),
                    new Param("momentum", "float", null), new Param("eps", "float", null))
            .doc("`ops.Normalization.batchNorm` (in training, updates the running statistics in place)").build();
    /**
     * Batch norm of each (sample, channel) plane, run as {@link #BATCH_NORM} over a {@code [1, N*C, *]} view: declared for its
     * signature (the device layer's argument names); the trace sees the batch norm it runs, not this op.
     */
    public static final OpDef INSTANCE_NORM = OpDef.frontEnd("instance_norm", true).rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("input"), new Param("running_mean", "Tensor?", null), new Param("running_var", "Tensor?", null),
                    new Param("weight", "Tensor?", null), new Param("bias", "Tensor?", null), new Param("use_input_stats", "bool", null),
                    new Param("momentum", "float", null), new Param("eps", "float", null))
            .doc("`ops.Normalization.instanceNorm` (with `use_input_stats`, updates the running statistics in place)").build();
    public static final OpDef MAX_POOL2D = OpDef.frontEnd("max_pool2d", true).rule(SAME_NO_BOOL).signature(maxPool(2))
            .doc("`ops.Pooling.maxPool2d`").build();

    /**
     * The 1-d pools, PyTorch's signatures: the declared 2-d kernels over a height-1 plane ({@code ops.Pooling}), traced and
     * replayed as one op each. Lists are traced as {@link #MAX_POOL2D}'s (a missing stride as length -1). No autocast
     * policy, as PyTorch 1.13's lists.
     */
    public static final OpDef MAX_POOL1D = OpDef.frontEnd("max_pool1d", true).rule(SAME_NO_BOOL).signature(maxPool(1))
            .doc("`ops.Pooling.maxPool1d` (max_pool2d_with_indices over a height-1 plane)").build();
    public static final OpDef AVG_POOL1D = OpDef.frontEnd("avg_pool1d", true).rule(SAME_NO_BOOL)
            .signature(SELF, new Param("kernel_size", "int[1]", null), new Param("stride", "int[1]", "[]"),
                    new Param("padding", "int[1]", "0"), new Param("ceil_mode", "bool", "False"), new Param("count_include_pad", "bool", "True"))
            .doc("`ops.Pooling.avgPool1d` (avg_pool2d over a height-1 plane)").build();
    /** {@link #MAX_POOL1D} with its indices into the last dimension: two outputs, traced and replayed as one op. */
    public static final OpDef MAX_POOL1D_WITH_INDICES = OpDef.frontEnd("max_pool1d_with_indices", true).rule(SAME_NO_BOOL).signature(maxPool(1))
            .returns("(Tensor, Tensor)").doc("`ops.Pooling.maxPool1dWithIndices` (max_pool2d_with_indices over a height-1 plane)").build();
    public static final OpDef ADAPTIVE_MAX_POOL1D = OpDef.frontEnd("adaptive_max_pool1d", true).rule(DTypeRule.FLOATING_ONLY)
            .signature(SELF, new Param("output_size", "int[1]", null)).returns("(Tensor, Tensor)")
            .doc("`ops.Pooling.adaptiveMaxPool1d` (adaptive_max_pool2d over a height-1 plane)").build();
    public static final OpDef ADAPTIVE_AVG_POOL1D = OpDef.frontEnd("adaptive_avg_pool1d", true).rule(DTypeRule.FLOATING_ONLY)
            .signature(SELF, new Param("output_size", "int[1]", null))
            .doc("`ops.Pooling.adaptiveAvgPool1d` (adaptive_avg_pool2d over a height-1 plane)").build();

    /** A composite of two 2-d max pools (see {@code ops.Pooling3d}), traced and replayed as one op. */
    public static final OpDef MAX_POOL3D = OpDef.frontEnd("max_pool3d", true).rule(DTypeRule.FLOATING_ONLY).signature(maxPool(3))
            .autocast(Device.Type.CPU, CastPolicy.FP32)
            .doc("`ops.Pooling3d.maxPool3d` (separable: two passes of the 2-d kernels)").build();
    /**
     * Separable, as {@link #MAX_POOL3D}: two passes of the declared 2-d average pool ({@code ops.Pooling3d}), each dividing by
     * its dimensions' share of the window (with {@code divisor_override}, sums divided once). A missing divisor is traced as 0.
     */
    public static final OpDef AVG_POOL3D = OpDef.frontEnd("avg_pool3d", true).rule(SAME_NO_BOOL)
            .signature(SELF, new Param("kernel_size", "int[3]", null), new Param("stride", "int[3]", "[]"),
                    new Param("padding", "int[3]", "0"), new Param("ceil_mode", "bool", "False"), new Param("count_include_pad", "bool", "True"),
                    new Param("divisor_override", "int?", "None"))
            .autocast(Device.Type.CPU, CastPolicy.FP32)
            .doc("`ops.Pooling3d.avgPool3d` (separable: two passes of the 2-d kernels)").build();
    /**
     * PyTorch's signature: the output volume resolved ({@code F.max_unpool3d}'s kernel size and default output size are
     * the functional's), stride and padding as given. A scatter of the values into zero volumes.
     */
    public static final OpDef MAX_UNPOOL3D = OpDef.frontEnd("max_unpool3d", true).rule(SAME_NO_BOOL)
            .signature(SELF, Param.tensor("indices"), new Param("output_size", "SymInt[3]", null), new Param("stride", "int[3]", null),
                    new Param("padding", "int[3]", null))
            .autocast(Device.Type.CPU, CastPolicy.FP32)
            .doc("`ops.Pooling3d.maxUnpool3d` (a scatter of the values to their recorded positions)").build();
    /** {@link #MAX_POOL3D} with its indices (flat {@code d * H * W + h * W + w}): two outputs, traced and replayed as one op. */
    public static final OpDef MAX_POOL3D_WITH_INDICES = OpDef.frontEnd("max_pool3d_with_indices", true).rule(DTypeRule.FLOATING_ONLY).signature(maxPool(3))
            .returns("(Tensor, Tensor)").doc("`ops.Pooling3d.maxPool3dWithIndices` (separable: two passes of the 2-d kernels)").build();
    /** Values and indices, the output size resolved; float32 under CPU autocast, as PyTorch 1.13's list. */
    public static final OpDef ADAPTIVE_MAX_POOL3D = OpDef.frontEnd("adaptive_max_pool3d", true).rule(DTypeRule.FLOATING_ONLY)
            .signature(SELF, new Param("output_size", "SymInt[3]", null)).returns("(Tensor, Tensor)")
            .autocast(Device.Type.CPU, CastPolicy.FP32)
            .doc("`ops.Pooling3d.adaptiveMaxPool3d` (separable: two passes of the 2-d kernels)").build();
    public static final OpDef ADAPTIVE_AVG_POOL3D = OpDef.frontEnd("adaptive_avg_pool3d", true).rule(DTypeRule.FLOATING_ONLY)
            .signature(SELF, new Param("output_size", "SymInt[3]", null))
            .autocast(Device.Type.CPU, CastPolicy.FP32)
            .doc("`ops.Pooling3d.adaptiveAvgPool3d` (separable: two passes of the 2-d kernels)").build();

    /**
     * {@code F.pad}'s non-constant modes, one op per mode and padded rank as PyTorch's ({@code padding}: PyTorch's pairs
     * from the last dimension backwards; a negative pad crops). Each is a gather along each padded dimension ({@code
     * ops.Padding}), so its gradient is the gather's index-add. float32 under CPU autocast where PyTorch 1.13's CPU list
     * has the op (reflection 1-d and 2-d, replication 1-d to 3-d).
     */
    public static final OpDef REFLECTION_PAD1D = pad("reflection_pad1d", 2, true);
    public static final OpDef REFLECTION_PAD2D = pad("reflection_pad2d", 4, true);
    public static final OpDef REFLECTION_PAD3D = pad("reflection_pad3d", 6, false);
    public static final OpDef REPLICATION_PAD1D = pad("replication_pad1d", 2, true);
    public static final OpDef REPLICATION_PAD2D = pad("replication_pad2d", 4, true);
    public static final OpDef REPLICATION_PAD3D = pad("replication_pad3d", 6, true);
    /** {@code F.pad(mode="circular")}: crops first, then wraps around the cropped extent (PyTorch's {@code _pad_circular}). */
    public static final OpDef PAD_CIRCULAR = OpDef.frontEnd("_pad_circular", true).rule(SAME).signature(SELF, new Param("pad", "SymInt[]", null))
            .doc("`ops.Padding.pad` (a gather along each padded dimension)").build();

    private static OpDef pad(String name, int pads, boolean fp32OnCpu) {
        OpDef.Builder b = OpDef.frontEnd(name, true).rule(SAME).signature(SELF, new Param("padding", "SymInt[" + pads + "]", null))
                .doc("`ops.Padding.pad` (a gather along each padded dimension)");
        return (fp32OnCpu ? b.autocast(Device.Type.CPU, CastPolicy.FP32) : b).build();
    }

    /** {@code (*, C r^2, H, W) -> (*, C, H r, W r)}: a reshape, a permute and a reshape (a copy), so the gradient is theirs. */
    public static final OpDef PIXEL_SHUFFLE = OpDef.frontEnd("pixel_shuffle", true).rule(SAME)
            .signature(SELF, new Param("upscale_factor", "int", null)).doc("`ops.Resampling.pixelShuffle` (reshape, permute, reshape)").build();
    /** {@code (*, C, H r, W r) -> (*, C r^2, H, W)}, {@link #PIXEL_SHUFFLE}'s inverse. */
    public static final OpDef PIXEL_UNSHUFFLE = OpDef.frontEnd("pixel_unshuffle", true).rule(SAME)
            .signature(SELF, new Param("downscale_factor", "int", null)).doc("`ops.Resampling.pixelUnshuffle` (reshape, permute, reshape)").build();

    /**
     * {@code F.interpolate}'s modes, one op per mode and spatial rank as PyTorch's: the output size resolved, then
     * (interpolating modes) {@code align_corners}, then one scale per spatial dimension, None where the source index uses
     * {@code in / out} (a size given, or {@code recompute_scale_factor}), traced as 0. Separable gathers and weighted sums
     * ({@code ops.Resampling}), so the gradient is theirs. No autocast policy: PyTorch 1.13's lists have none of them.
     */
    public static final OpDef UPSAMPLE_NEAREST1D = upsample("upsample_nearest1d", 1, false);
    public static final OpDef UPSAMPLE_NEAREST2D = upsample("upsample_nearest2d", 2, false);
    public static final OpDef UPSAMPLE_NEAREST3D = upsample("upsample_nearest3d", 3, false);
    public static final OpDef UPSAMPLE_NEAREST_EXACT1D = upsample("_upsample_nearest_exact1d", 1, false);
    public static final OpDef UPSAMPLE_NEAREST_EXACT2D = upsample("_upsample_nearest_exact2d", 2, false);
    public static final OpDef UPSAMPLE_NEAREST_EXACT3D = upsample("_upsample_nearest_exact3d", 3, false);
    public static final OpDef UPSAMPLE_LINEAR1D = upsample("upsample_linear1d", 1, true);
    public static final OpDef UPSAMPLE_BILINEAR2D = upsample("upsample_bilinear2d", 2, true);
    public static final OpDef UPSAMPLE_BICUBIC2D = upsample("upsample_bicubic2d", 2, true);
    public static final OpDef UPSAMPLE_TRILINEAR3D = upsample("upsample_trilinear3d", 3, true);
    /** {@code F.interpolate(antialias=True)}: a downscaling dimension low-pass filtered as it is resampled. */
    public static final OpDef UPSAMPLE_BILINEAR2D_AA = upsample("_upsample_bilinear2d_aa", 2, true);
    public static final OpDef UPSAMPLE_BICUBIC2D_AA = upsample("_upsample_bicubic2d_aa", 2, true);

    private static OpDef upsample(String name, int spatial, boolean interpolating) {
        java.util.List<Param> params = new java.util.ArrayList<>(java.util.List.of(SELF, new Param("output_size", "SymInt[" + spatial + "]", null)));
        if (interpolating) params.add(new Param("align_corners", "bool", null));
        String[] scales = spatial == 1 ? new String[] {"scales"} : spatial == 2 ? new String[] {"scales_h", "scales_w"}
                : new String[] {"scales_d", "scales_h", "scales_w"};
        for (String s : scales) params.add(new Param(s, "float?", "None"));
        return OpDef.frontEnd(name, true).rule(interpolating ? DTypeRule.FLOATING_ONLY : SAME).signature(params.toArray(new Param[0]))
                .doc("`ops.Resampling.interpolate` (separable: " + (interpolating ? "gathers and weighted sums" : "one gather") + " per dimension)")
                .build();
    }

}
