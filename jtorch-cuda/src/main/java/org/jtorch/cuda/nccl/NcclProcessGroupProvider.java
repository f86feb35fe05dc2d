package org.jtorch.cuda.nccl;

import java.time.Duration;
import org.jtorch.distributed.LaunchEnvironment;
import org.jtorch.distributed.ProcessGroup;
import org.jtorch.distributed.ProcessGroupProvider;

/** Makes {@code Distributed.initProcessGroup("nccl")} find {@link NcclProcessGroup} (a {@link java.util.ServiceLoader} service). */
public final class NcclProcessGroupProvider implements ProcessGroupProvider {
    @Override
    public String backend() {
        return "nccl";
    }

    @Override
    public ProcessGroup init(LaunchEnvironment env, Duration timeout) {
        return NcclProcessGroup.init(env, timeout);
    }
}
