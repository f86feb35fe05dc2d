package org.jtorch.examples;

import java.io.IOException;
import java.io.PrintStream;

/**
 * One program ported from pytorch/examples (or nanoGPT), run by {@code jtorch example NAME}. A port keeps
 * its original's structure, hyper-parameters and printed lines; its training step is a public unit of its
 * own (a {@code Training} class) so that tests and benchmarks can drive it without the program around it.
 */
public interface Example {
    /** The name on the command line, as the pytorch/examples folder (e.g. {@code mnist}). */
    String name();

    /** One line for {@code jtorch example --help}. */
    String summary();

    /** Runs the program with {@code options}, printing what its original prints to {@code out}. */
    void run(ExampleOptions options, PrintStream out) throws IOException;
}
