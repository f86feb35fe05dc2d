package org.jtorch.distributed;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * {@link Launcher} as a process, for the tests that need a launcher to be its own process (signals, network
 * namespaces): {@code NPROC NNODES NODE_RANK MASTER_ADDR MASTER_PORT [HEARTBEAT_SECONDS] -- COMMAND...}; exits with the job's status.
 */
public final class LauncherMain {
    public static void main(String[] args) {
        List<String> command = Arrays.asList(args).subList(Arrays.asList(args).indexOf("--") + 1, args.length);
        int dash = Arrays.asList(args).indexOf("--");
        Duration heartbeat = dash > 5 ? Duration.ofSeconds(Integer.parseInt(args[5])) : Launcher.Options.DEFAULT_HEARTBEAT_TIMEOUT;
        Launcher.Options options = new Launcher.Options(Integer.parseInt(args[0]), Integer.parseInt(args[1]), Integer.parseInt(args[2]), args[3],
                Integer.parseInt(args[4]), Duration.ofSeconds(60), Duration.ofSeconds(5), heartbeat);
        System.exit(Launcher.run(options, command, Map.of(), System.out, System.err).exitCode());
    }
}
