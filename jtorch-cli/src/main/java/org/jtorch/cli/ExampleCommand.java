package org.jtorch.cli;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import org.jtorch.examples.Example;
import org.jtorch.examples.ExampleOptions;
import org.jtorch.examples.Examples;
import org.jtorch.examples.ImageData;
import org.jtorch.examples.TextData;

/** {@code jtorch example NAME}: runs one of the ported pytorch/examples programs (module jtorch-examples). */
final class ExampleCommand {
    private ExampleCommand() {}

    static CommandLine commandLine(String name) {
        return new CommandLine("example " + name, "Runs the example '" + name + "'. Unset numbers take the original program's defaults.")
                .option("epochs", "N", null, "passes over the training data")
                .option("steps", "N", null, "stop after N optimizer steps in all")
                .option("batch-size", "N", null, "samples per step")
                .option("lr", "RATE", null, "learning rate")
                .flag("quick", "a run of seconds: less data, fewer steps (each example's help says how)")
                .option("seed", "N", "1", "random seed")
                .option("dataset", "NAME", null, "for the image examples: " + String.join(", ", ImageData.DATASETS)
                        + " (digits: the bundled 8x8 set upsampled; a missing MNIST falls back to it)")
                .option("model", "NAME", null, "a model variant: word_language_model takes LSTM (default) or Transformer")
                .option("text", "FILE", null, "for the language models: a UTF-8 text (default: " + TextData.DEFAULT + ")")
                .option("out", "DIR", ".", "where images and other outputs go");
    }

    static int run(String[] args) {
        if (args.length == 0 || args[0].equals("--help") || args[0].equals("-h")) {
            printList();
            return args.length == 0 ? 2 : 0;
        }
        Example example = Examples.find(args[0]);
        if (example == null) {
            System.err.println("jtorch example: unknown example '" + args[0] + "'");
            printList();
            return 2;
        }
        CommandLine cl = commandLine(example.name());
        ExampleOptions options;
        try {
            if (!cl.parse(Arrays.copyOfRange(args, 1, args.length))) {
                System.out.println("\n" + example.summary());
                return 0;
            }
            options = new ExampleOptions(positiveOrNull(cl, "epochs"), positiveOrNull(cl, "steps"), positiveOrNull(cl, "batch-size"),
                    cl.get("lr") == null ? null : cl.getDouble("lr"), cl.flag("quick"), cl.getLong("seed"),
                    cl.get("dataset") == null ? null : cl.choice("dataset", ImageData.DATASETS), cl.get("model"),
                    cl.get("text") == null ? null : Path.of(cl.get("text")), Path.of(cl.get("out")));
        } catch (CommandLine.UsageException e) {
            System.err.println("jtorch example " + example.name() + ": " + e.getMessage());
            System.err.println("(jtorch example " + example.name() + " --help lists the options)");
            return 2;
        }
        try {
            example.run(options, System.out);
        } catch (IOException | RuntimeException e) {
            System.err.println("jtorch example " + example.name() + ": " + e);
            return 1;
        }
        return 0;
    }

    private static Integer positiveOrNull(CommandLine cl, String name) {
        Integer v = cl.getIntOrNull(name);
        if (v != null && v <= 0) throw new CommandLine.UsageException("option '--" + name + "' must be positive, got " + v);
        return v;
    }

    private static void printList() {
        System.out.println("usage: jtorch example <name> [options]   ('jtorch example <name> --help' for the options)\n\nexamples:");
        for (Example e : Examples.all()) System.out.printf("  %-26s %s%n", e.name(), e.summary());
    }
}
