package org.jtorch.io;

import java.util.Map;

/**
 * An object whose state is a state dict of tensors, numbers, lists and option maps: optimizers and learning-rate
 * schedulers. {@link Checkpoint} takes this rather than them, so that io names nothing of optim.
 */
public interface Stateful {
    /** The state as PyTorch's {@code state_dict()}; tensors in it are the caller's (see {@link #releaseStateDict}). */
    Map<String, Object> stateDict();

    /** Restores a state from {@link #stateDict()}. */
    void loadStateDict(Map<String, Object> stateDict);

    /** Releases what {@link #stateDict()} returned once it has been written (an optimizer's holds tensor copies). */
    default void releaseStateDict(Map<String, Object> stateDict) {}
}
