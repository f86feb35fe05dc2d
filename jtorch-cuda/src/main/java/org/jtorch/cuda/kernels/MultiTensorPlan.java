package org.jtorch.cuda.kernels;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jtorch.cuda.KernelStructs;
import org.jtorch.types.DType;

/**
 * How a list of tensors is split into multi-tensor launches of {@code optim.cu} (as apex's and PyTorch's
 * {@code multi_tensor_apply}), with no GPU involved: each tensor is cut into chunks of
 * {@value KernelStructs#MT_CHUNK} elements, one block a chunk; a launch holds at most
 * {@value KernelStructs#MT_TENSORS} tensors and {@value KernelStructs#MT_BLOCKS} blocks. When a launch fills
 * up in the middle of a tensor, the next launch lists that tensor again and continues at its next
 * chunk (chunk numbers are absolute within the tensor). Empty tensors are skipped.
 */
public final class MultiTensorPlan {
    private MultiTensorPlan() {}

    /** The gradient dtypes {@code jt_amp_unscale_<dtype>} exists for (float16 gradients GradScaler refuses before). */
    public static boolean unscaleSupports(DType dtype) {
        return dtype == DType.FLOAT32 || dtype == DType.FLOAT64 || dtype == DType.BFLOAT16;
    }

    /**
     * The {@code optim.cu} entry unscaling gradients of {@code dtype} ({@code jt_amp_unscale_<dtype>});
     * {@link IllegalArgumentException} naming the op and dtype for others.
     */
    public static String unscaleEntry(DType dtype) {
        if (!unscaleSupports(dtype)) {
            throw new IllegalArgumentException("_amp_foreach_non_finite_check_and_unscale_: no CUDA kernel for " + dtype
                    + " gradients (float32, float64, bfloat16)");
        }
        return "jt_amp_unscale_" + ElementwisePlan.suffix(dtype);
    }

    /**
     * One launch: {@code tensors[slot]} is the index (in the caller's lists) of the tensor in slot
     * {@code slot}; block {@code b} updates chunk {@code blockChunk[b]} of slot {@code blockTensor[b]}.
     */
    public record Launch(int[] tensors, int[] blockTensor, int[] blockChunk) {
        public int blocks() {
            return blockTensor.length;
        }

        @Override
        public String toString() {
            return "Launch[tensors=" + Arrays.toString(tensors) + ", blockTensor=" + Arrays.toString(blockTensor)
                    + ", blockChunk=" + Arrays.toString(blockChunk) + "]";
        }
    }

    /** The launches updating tensors of {@code numels} elements, in order. */
    public static List<Launch> plan(long[] numels) {
        List<Launch> launches = new ArrayList<>();
        List<Integer> slots = new ArrayList<>();
        int[] blockTensor = new int[KernelStructs.MT_BLOCKS];
        int[] blockChunk = new int[KernelStructs.MT_BLOCKS];
        int blocks = 0;
        for (int t = 0; t < numels.length; t++) {
            long n = numels[t];
            if (n < 0) throw new IllegalArgumentException("multi-tensor launch: tensor " + t + " has " + n + " elements");
            if (n == 0) continue;
            long chunks = (n + KernelStructs.MT_CHUNK - 1) / KernelStructs.MT_CHUNK;
            if (chunks > Integer.MAX_VALUE) throw new IllegalArgumentException("multi-tensor launch: tensor " + t + " is too large (" + n + " elements)");
            if (slots.size() == KernelStructs.MT_TENSORS) {
                launches.add(launch(slots, blockTensor, blockChunk, blocks));
                slots.clear();
                blocks = 0;
            }
            slots.add(t);
            for (int c = 0; c < chunks; c++) {
                if (blocks == KernelStructs.MT_BLOCKS) {
                    launches.add(launch(slots, blockTensor, blockChunk, blocks));
                    slots.clear();
                    slots.add(t);
                    blocks = 0;
                }
                blockTensor[blocks] = slots.size() - 1;
                blockChunk[blocks] = c;
                blocks++;
            }
        }
        if (blocks > 0) launches.add(launch(slots, blockTensor, blockChunk, blocks));
        return launches;
    }

    private static Launch launch(List<Integer> slots, int[] blockTensor, int[] blockChunk, int blocks) {
        int[] tensors = new int[slots.size()];
        for (int i = 0; i < tensors.length; i++) tensors[i] = slots.get(i);
        return new Launch(tensors, Arrays.copyOf(blockTensor, blocks), Arrays.copyOf(blockChunk, blocks));
    }
}
