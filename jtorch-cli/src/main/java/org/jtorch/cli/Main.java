package org.jtorch.cli;

import java.util.Arrays;

/** The {@code jtorch} command: dispatches to its subcommands. */
public final class Main {
    private Main() {}

    public static void main(String[] args) {
        int status = run(args);
        if (status != 0) System.exit(status);
    }

    static int run(String[] args) {
        if (args.length == 0 || args[0].equals("--help") || args[0].equals("-h") || args[0].equals("help")) {
            printUsage();
            return args.length == 0 ? 1 : 0;
        }
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        return switch (args[0]) {
            case "info" -> InfoCommand.run(rest);
            case "train" -> TrainCommand.run(rest);
            case "launch" -> LaunchCommand.run(rest);
            case "example" -> ExampleCommand.run(rest);
            default -> {
                System.err.println("jtorch: unknown command '" + args[0] + "'");
                printUsage();
                yield 2;
            }
        };
    }

    static void printUsage() {
        System.out.println("""
                usage: jtorch <command> [options]

                commands:
                  info     the Java runtime, Vector API species, CPU features, threads and backends found
                  train    trains an image classifier (LeNet-5 on MNIST by default) with progress, summary and plots
                  bench    benchmarks side by side with PyTorch (see jtorch bench --help)
                  example  runs a ported pytorch/examples program: jtorch example mnist --quick (jtorch example lists them)
                  launch   starts data-parallel workers, as torchrun: jtorch launch --nproc-per-node 2 -- train ...

                'jtorch <command> --help' describes a command's options.""");
    }
}
