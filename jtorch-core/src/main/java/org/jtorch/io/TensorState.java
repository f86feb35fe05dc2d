package org.jtorch.io;

import java.util.Map;
import org.jtorch.Tensor;

/**
 * An object whose state is a map of named tensors that files save and load: {@code nn.Module}'s parameters and
 * buffers. {@link SafeTensors}, {@link PyTorchFile} and {@link Checkpoint} take this rather than the module, so that
 * io names nothing of nn.
 *
 * @param <R> what loading reports ({@code Module.LoadResult}: the missing and unexpected keys)
 */
public interface TensorState<R> {
    /** The tensors by name, as views the caller closes. */
    Map<String, Tensor> stateDict();

    /** Copies {@code state} into this object's tensors; {@code strict}: every key must match. */
    R loadStateDict(Map<String, Tensor> state, boolean strict);
}
